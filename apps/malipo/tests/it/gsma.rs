//! The GSMA Mobile Money API v1.2 door (`docs/gsma.md`): the same use cases as the REST API
//! answered in the GSMA document's objects. Every answer a test receives is recorded with the
//! document's path of its operation and, at the test's end, validated against the GSMA
//! document's own schemas by `scripts/gsma_validate.py` (openapi-schema-validator).

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::harness::{msisdn, Cast, Db, Options, TestApp};

crate::on_both!(
    a_merchant_payment_is_polled_to_completed_and_is_a_charge_of_the_rest_api,
    a_declined_payment_fails_with_the_error_object,
    a_correlation_id_settles_once_and_refuses_another_body,
    a_missed_response_is_fetched_by_its_correlation_id,
    a_disbursement_and_a_transfer_move_the_balances,
    a_partial_reversal_gives_back_part_and_its_fee_share,
    an_account_name_is_for_callers_about_to_pay,
    an_agents_deposit_and_withdrawal_move_the_float,
    refusals_are_the_documents_error_object,
    while_catching_up_the_heartbeat_is_degraded_new_work_waits_and_replays_are_answered,
);

pub(crate) const BASE: &str = "/gsma/mm/v1.2";
const WAIT: Duration = Duration::from_secs(15);

/// One answer as the validator reads it.
struct Recorded {
    /// For a callback Malipo sent: the request body the document's callback names.
    callback: Option<&'static str>,
    method: &'static str,
    path: &'static str,
    status: u16,
    headers: serde_json::Map<String, Value>,
    body: Value,
}

/// A caller of the door that records every answer for validation.
pub(crate) struct Door<'a> {
    app: &'a TestApp,
    token: String,
    answers: std::cell::RefCell<Vec<Recorded>>,
}

/// An answer: status, `Retry-After` and the like, and the JSON body.
pub(crate) struct Reply {
    pub(crate) status: u16,
    pub(crate) headers: reqwest::header::HeaderMap,
    pub(crate) text: String,
    pub(crate) json: Value,
}

impl<'a> Door<'a> {
    pub(crate) fn new(app: &'a TestApp, token: &str) -> Self {
        Door { app, token: token.to_owned(), answers: std::cell::RefCell::new(Vec::new()) }
    }

    /// Another caller (token) on the same record.
    pub(crate) fn with_token(&self, token: &str) -> Door<'a> {
        Door { app: self.app, token: token.to_owned(), answers: std::cell::RefCell::new(Vec::new()) }
    }

    pub(crate) async fn send(
        &self,
        method: &'static str,
        template: &'static str,
        path: &str,
        body: Option<&Value>,
        headers: &[(&str, &str)],
    ) -> Reply {
        let url = format!("{}{BASE}{path}", self.app.base);
        let mut r = match method {
            "get" => self.app.http.get(url),
            "post" => self.app.http.post(url),
            _ => self.app.http.patch(url),
        };
        if !self.token.is_empty() {
            r = r.bearer_auth(&self.token);
        }
        if let Some(b) = body {
            r = r.header("content-type", "application/json").body(serde_json::to_vec(b).unwrap());
        }
        for (name, value) in headers {
            r = r.header(*name, *value);
        }
        let res = r.send().await.unwrap();
        let status = res.status().as_u16();
        let headers = res.headers().clone();
        let text = res.text().await.unwrap();
        let json: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        let recorded_headers = headers.iter().map(|(n, v)| (n.to_string(), Value::String(v.to_str().unwrap_or("").to_owned()))).collect();
        self.answers.borrow_mut().push(Recorded {
            callback: None,
            method,
            path: template,
            status,
            headers: recorded_headers,
            body: json.clone(),
        });
        Reply { status, headers, text, json }
    }

    pub(crate) async fn get(&self, template: &'static str, path: &str) -> Reply {
        self.send("get", template, path, None, &[]).await
    }

    pub(crate) async fn post(&self, template: &'static str, path: &str, body: &Value, correlation: Option<&str>) -> Reply {
        let headers: Vec<(&str, &str)> = correlation.map(|c| ("X-CorrelationID", c)).into_iter().collect();
        self.send("post", template, path, Some(body), &headers).await
    }

    /// `POST /transactions/type/{kind}`.
    pub(crate) async fn transact(&self, kind: &str, body: &Value, correlation: Option<&str>) -> Reply {
        self.post("/transactions/type/{transactionType}", &format!("/transactions/type/{kind}"), body, correlation).await
    }

    pub(crate) async fn transaction(&self, reference: &str) -> Reply {
        self.get("/transactions/{transactionReference}", &format!("/transactions/{reference}")).await
    }

    pub(crate) async fn request_state(&self, id: &str) -> Reply {
        self.get("/requeststates/{serverCorrelationId}", &format!("/requeststates/{id}")).await
    }

    /// Polls a request state until it is no longer pending.
    pub(crate) async fn settled(&self, id: &str) -> Value {
        let started = Instant::now();
        loop {
            let r = self.request_state(id).await;
            assert_eq!(r.status, 200, "{}", r.text);
            if r.json["status"] != "pending" {
                return r.json;
            }
            assert!(started.elapsed() < WAIT, "request {id} still pending after {WAIT:?}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Records a callback Malipo sent, to be validated as the document's callback `body_of`
    /// (`updateTransaction`, `updateError`).
    pub(crate) fn callback(&self, body_of: &'static str, headers: &[(String, String)], body: Value) {
        let headers = headers.iter().map(|(n, v)| (n.clone(), Value::String(v.clone()))).collect();
        self.answers.borrow_mut().push(Recorded { callback: Some(body_of), method: "put", path: "(callback)", status: 0, headers, body });
    }

    /// Moves this caller's answers onto `into`, for one validation.
    pub(crate) fn hand_over(self, into: &Door<'_>) {
        into.answers.borrow_mut().extend(self.answers.into_inner());
    }

    /// Validates every recorded answer against the GSMA document.
    pub(crate) async fn validate(self) {
        let answers: Vec<Value> = self
            .answers
            .into_inner()
            .into_iter()
            .map(|a| {
                let mut answer = json!({"method": a.method, "path": a.path, "status": a.status, "headers": a.headers, "body": a.body});
                if let Some(body_of) = a.callback {
                    answer["callback"] = json!(body_of);
                }
                answer
            })
            .collect();
        assert!(!answers.is_empty());
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(file.path(), serde_json::to_vec(&answers).unwrap()).unwrap();
        let path = file.path().to_owned();
        let out = tokio::task::spawn_blocking(move || std::process::Command::new(python()).arg(script()).arg(&path).output())
            .await
            .unwrap()
            .unwrap_or_else(|e| panic!("{} is required for this test: {e}", python()));
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(
            out.status.success(),
            "answers that break the GSMA document (run the tests with `bash scripts/test.sh`, which installs \
             scripts/requirements-test.txt):\n{text}"
        );
        assert!(text.contains(&format!("{n} of {n} answers keep to the GSMA document", n = answers.len())), "{text}");
    }
}

fn script() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/gsma_validate.py")
}

/// `MALIPO_TEST_PYTHON` (set by `scripts/test.sh`), else `python3`.
fn python() -> String {
    std::env::var("MALIPO_TEST_PYTHON").unwrap_or_else(|_| "python3".to_owned())
}

pub(crate) fn correlation() -> String {
    uuid::Uuid::new_v4().to_string()
}

pub(crate) fn merchantpay(payer: &str, amount: &str) -> Value {
    json!({
        "amount": amount,
        "currency": "KES",
        "debitParty": [{"key": "msisdn", "value": format!("+{payer}")}],
        "creditParty": [{"key": "accountid", "value": "ignored"}],
        "requestingOrganisationTransactionReference": format!("ORDER-{}", &correlation()[..8]),
        "descriptionText": "Two coffees",
    })
}

pub(crate) async fn rest(app: &TestApp, token: &str, path: &str) -> Value {
    let r = app.get(token, path).await;
    assert_eq!(r.status(), 200, "GET {path}");
    r.json().await.unwrap()
}

async fn a_merchant_payment_is_polled_to_completed_and_is_a_charge_of_the_rest_api(db: Db) {
    let app = TestApp::shared(db);
    let (_, token) = app.merchant_token().await;
    let door = Door::new(app, &token);
    let heartbeat = door.get("/heartbeat", "/heartbeat").await;
    assert_eq!((heartbeat.status, heartbeat.json["serviceStatus"].as_str()), (200, Some("available")));

    let created = door.transact("merchantpay", &merchantpay(&msisdn("0000"), "250.5"), Some(&correlation())).await;
    assert_eq!(created.status, 202, "{}", created.text);
    let state = &created.json;
    assert_eq!((state["status"].as_str(), state["notificationMethod"].as_str()), (Some("pending"), Some("polling")));
    let reference = state["objectReference"].as_str().unwrap().to_owned();
    assert!(reference.starts_with("ch_"), "{reference}");
    assert!(state["expiryTime"].is_string() && state["pollLimit"].as_u64().is_some_and(|n| n > 0), "{state}");

    let settled = door.settled(state["serverCorrelationId"].as_str().unwrap()).await;
    assert_eq!(settled["status"], "completed", "{settled}");
    assert_eq!(settled["objectReference"], reference.as_str());

    let t = door.transaction(&reference).await;
    assert_eq!(t.status, 200, "{}", t.text);
    assert_eq!((t.json["type"].as_str(), t.json["transactionStatus"].as_str()), (Some("merchantpay"), Some("completed")));
    assert_eq!((t.json["amount"].as_str(), t.json["currency"].as_str()), (Some("250.5"), Some("KES")));
    assert_eq!(t.json["fees"][0]["feeCurrency"], "KES", "{}", t.text);

    // The same object through the REST API: a charge, completed, with the same amount.
    let charge = rest(app, &token, &format!("/partner/charges/{reference}")).await;
    assert_eq!((charge["state"].as_str(), charge["description"].as_str()), (Some("completed"), Some("Two coffees")));
    assert_eq!(charge["amount"].to_string(), "250.50");
    let listed = rest(app, &token, "/partner/charges").await;
    assert!(listed["data"].as_array().unwrap().iter().any(|c| c["charge_ref"] == reference.as_str()));
    door.validate().await;
}

async fn a_declined_payment_fails_with_the_error_object(db: Db) {
    let app = TestApp::shared(db);
    let (_, token) = app.merchant_token().await;
    let door = Door::new(app, &token);
    for (last4, code) in [("1001", "requestDeclined"), ("1003", "insufficientFunds")] {
        let created = door.transact("merchantpay", &merchantpay(&msisdn(last4), "100"), None).await;
        assert_eq!(created.status, 202, "{}", created.text);
        let settled = door.settled(created.json["serverCorrelationId"].as_str().unwrap()).await;
        assert_eq!(settled["status"], "failed", "{settled}");
        assert_eq!(settled["error"]["errorCode"], code, "{settled}");
        assert_eq!(settled["error"]["errorCategory"], "businessRule", "{settled}");
        let t = door.transaction(created.json["objectReference"].as_str().unwrap()).await;
        assert_eq!(t.json["transactionStatus"].as_str(), Some(if last4 == "1001" { "declined" } else { "failed" }));
    }
    door.validate().await;
}

async fn a_correlation_id_settles_once_and_refuses_another_body(db: Db) {
    let app = TestApp::shared(db);
    let (_, token) = app.merchant_token().await;
    let door = Door::new(app, &token);
    let id = correlation();
    let body = merchantpay(&msisdn("1009"), "75");
    let first = door.transact("merchantpay", &body, Some(&id)).await;
    assert_eq!(first.status, 202, "{}", first.text);
    let again = door.transact("merchantpay", &body, Some(&id.to_ascii_uppercase())).await;
    assert_eq!((again.status, again.text.as_str()), (202, first.text.as_str()), "a repeat is answered the same");
    let listed = rest(app, &token, "/partner/charges").await;
    assert_eq!(listed["data"].as_array().unwrap().len(), 1, "one charge for the key: {listed}");

    let mut other = body.clone();
    other["amount"] = json!("76");
    let reused = door.transact("merchantpay", &other, Some(&id)).await;
    assert_eq!((reused.status, reused.json["errorCode"].as_str()), (400, Some("duplicateRequest")), "{}", reused.text);
    assert_eq!(reused.json["errorCategory"], "validation");

    let not_uuid = door.transact("merchantpay", &body, Some("order-42")).await;
    assert_eq!((not_uuid.status, not_uuid.json["errorCode"].as_str()), (400, Some("formatError")), "{}", not_uuid.text);
    assert_eq!(not_uuid.json["errorParameters"][0]["key"], "X-CorrelationID");
    // Without a correlation id every request is its own.
    let a = door.transact("merchantpay", &body, None).await;
    let b = door.transact("merchantpay", &body, None).await;
    assert_ne!(a.json["objectReference"], b.json["objectReference"]);
    door.validate().await;
}

async fn a_missed_response_is_fetched_by_its_correlation_id(db: Db) {
    let app = TestApp::shared(db);
    let (_, token) = app.merchant_token().await;
    let door = Door::new(app, &token);
    let id = correlation();
    let created = door.transact("merchantpay", &merchantpay(&msisdn("0000"), "20"), Some(&id)).await;
    assert_eq!(created.status, 202);
    let response = door.get("/responses/{clientCorrelationId}", &format!("/responses/{id}")).await;
    assert_eq!(response.status, 200, "{}", response.text);
    let link = response.json["link"].as_str().unwrap();
    assert_eq!(link, format!("{BASE}/transactions/{}", created.json["objectReference"].as_str().unwrap()));
    let followed = door.transaction(link.trim_start_matches(&format!("{BASE}/transactions/"))).await;
    assert_eq!(followed.status, 200);

    let unknown = door.get("/responses/{clientCorrelationId}", &format!("/responses/{}", correlation())).await;
    assert_eq!((unknown.status, unknown.json["errorCategory"].as_str()), (404, Some("identification")));
    // Another organisation's correlation id names nothing for this one.
    let (_, other_token) = app.merchant_token().await;
    let other = door.with_token(&other_token);
    let foreign = other.get("/responses/{clientCorrelationId}", &format!("/responses/{id}")).await;
    assert_eq!(foreign.status, 404, "{}", foreign.text);
    let foreign_state = other.request_state(created.json["serverCorrelationId"].as_str().unwrap()).await;
    assert_eq!(foreign_state.status, 404, "{}", foreign_state.text);
    other.hand_over(&door);
    door.validate().await;
}

/// The merchant's payout account id (REST `GET /accounts`).
pub(crate) async fn account_id(app: &TestApp, token: &str, kind: &str) -> String {
    let accounts = rest(app, token, "/accounts").await;
    let list = accounts["data"].as_array().or_else(|| accounts.as_array()).unwrap().clone();
    list.iter().find(|a| a["type"] == kind).unwrap()["account_id"].as_str().unwrap().to_owned()
}

async fn a_disbursement_and_a_transfer_move_the_balances(db: Db) {
    let app = TestApp::shared(db);
    let (creds, token) = app.merchant_token().await;
    app.fund(&creds.org_id, malipo_core::Mode::Test, "1000").await;
    let door = Door::new(app, &token);
    let payout_account = account_id(app, &token, "payout").await;
    let balance_path = format!("/accounts/accountid/{payout_account}/balance");
    let before = door.get("/accounts/{identifierType}/{identifier}/balance", &balance_path).await;
    assert_eq!(before.status, 200, "{}", before.text);
    assert_eq!(before.json["currentBalance"], "1000", "{}", before.text);

    let body = json!({"amount": "100", "currency": "KES", "creditParty": [{"key": "msisdn", "value": msisdn("0000")}]});
    let created = door.transact("disbursement", &body, Some(&correlation())).await;
    assert_eq!(created.status, 202, "{}", created.text);
    let settled = door.settled(created.json["serverCorrelationId"].as_str().unwrap()).await;
    assert_eq!(settled["status"], "completed", "{settled}");
    let t = door.transaction(created.json["objectReference"].as_str().unwrap()).await;
    assert_eq!(t.json["type"], "disbursement");
    let fee = t.json["fees"][0]["feeAmount"].as_str().unwrap_or("0").parse::<f64>().unwrap();
    let after = door.get("/accounts/{identifierType}/{identifier}/balance", &balance_path).await;
    let moved = 1000.0 - after.json["currentBalance"].as_str().unwrap().parse::<f64>().unwrap();
    assert!((moved - (100.0 + fee)).abs() < 1e-9, "moved {moved}, fee {fee}: {}", after.text);

    let payout = rest(app, &token, &format!("/payouts/{}", created.json["objectReference"].as_str().unwrap())).await;
    assert_eq!(payout["state"], "completed");

    // A transfer between the merchant's own accounts, named by accountid.
    let collection = account_id(app, &token, "collection").await;
    let transfer = json!({
        "amount": "50", "currency": "KES",
        "debitParty": [{"key": "accountid", "value": payout_account}],
        "creditParty": [{"key": "accountid", "value": collection}],
    });
    let moved = door.transact("transfer", &transfer, Some(&correlation())).await;
    assert_eq!((moved.status, moved.json["status"].as_str()), (202, Some("completed")), "{}", moved.text);
    let t = door.transaction(moved.json["objectReference"].as_str().unwrap()).await;
    assert_eq!((t.status, t.json["type"].as_str(), t.json["amount"].as_str()), (200, Some("transfer"), Some("50")), "{}", t.text);
    let collected = door.get("/accounts/{identifierType}/{identifier}/balance", &format!("/accounts/accountid/{collection}/balance")).await;
    assert_eq!(collected.json["currentBalance"], "50", "{}", collected.text);
    let foreign = json!({"amount": "1", "currency": "KES", "debitParty": [{"key": "accountid", "value": "acc_0000"}], "creditParty": [{"key": "accountid", "value": collection}]});
    let refused = door.transact("transfer", &foreign, None).await;
    assert_eq!((refused.status, refused.json["errorParameters"][0]["key"].as_str()), (400, Some("debitParty")), "{}", refused.text);
    let unknown = door.get("/accounts/{identifierType}/{identifier}/balance", "/accounts/accountid/acc_0000/balance").await;
    assert_eq!(unknown.status, 404);
    door.validate().await;
}

async fn a_partial_reversal_gives_back_part_and_its_fee_share(db: Db) {
    let app = TestApp::shared(db);
    let (_, token) = app.merchant_token().await;
    let door = Door::new(app, &token);
    let created = door.transact("merchantpay", &merchantpay(&msisdn("0000"), "250"), None).await;
    let reference = created.json["objectReference"].as_str().unwrap().to_owned();
    assert_eq!(door.settled(created.json["serverCorrelationId"].as_str().unwrap()).await["status"], "completed");
    let own = door.get("/accounts/balance", "/accounts/balance").await;
    let before = own.json["currentBalance"].as_str().unwrap().parse::<f64>().unwrap();

    let path = format!("/transactions/{reference}/reversals");
    let template = "/transactions/{transactionReference}/reversals";
    let body = json!({"type": "reversal", "amount": "100", "currency": "KES", "descriptionText": "one coffee returned"});
    let reversed = door.post(template, &path, &body, Some(&correlation())).await;
    assert_eq!((reversed.status, reversed.json["status"].as_str()), (202, Some("completed")), "{}", reversed.text);
    let rv = door.transaction(reversed.json["objectReference"].as_str().unwrap()).await;
    assert_eq!((rv.json["type"].as_str(), rv.json["amount"].as_str()), (Some("reversal"), Some("100")), "{}", rv.text);
    assert_eq!(rv.json["originalTransactionReference"], reference.as_str());
    assert_eq!(rv.json["creditParty"][0]["key"], "msisdn", "the payer gets it back: {}", rv.text);

    let charge = rest(app, &token, &format!("/partner/charges/{reference}")).await;
    assert_eq!(charge["amount_reversed"].to_string(), "100.00");
    let reversal = rest(app, &token, &format!("/reversals/{}", reversed.json["objectReference"].as_str().unwrap())).await;
    let fee_back = reversal["fee_reversed"].as_f64().unwrap();
    let after = door.get("/accounts/balance", "/accounts/balance").await.json["currentBalance"].as_str().unwrap().parse::<f64>().unwrap();
    assert!((before - after - (100.0 - fee_back)).abs() < 1e-9, "before {before}, after {after}, fee share {fee_back}");

    let too_much = door.post(template, &path, &json!({"type": "reversal", "amount": "200"}), None).await;
    assert_eq!((too_much.status, too_much.json["errorCategory"].as_str()), (400, Some("businessRule")), "{}", too_much.text);
    let adjustment = door.post(template, &path, &json!({"type": "adjustment"}), None).await;
    assert_eq!((adjustment.status, adjustment.json["errorCode"].as_str()), (400, Some("transactionTypeError")));
    door.validate().await;
}

async fn an_account_name_is_for_callers_about_to_pay(db: Db) {
    let app = TestApp::shared(db);
    let cast = Cast::new(app, malipo_core::Mode::Test, "0").await;
    let number = msisdn("0000");
    let opened = app
        .post(&cast.operator, "/wallets", &json!({"msisdn": number, "first_name": "Amina", "last_name": "Odhiambo"}), Some(&correlation()))
        .await;
    assert_eq!(opened.status(), 200);
    let door = Door::new(app, &cast.merchant_token);
    let path = format!("/accounts/msisdn/+{number}/accountname");
    let template = "/accounts/{identifierType}/{identifier}/accountname";
    let name = door.get(template, &path).await;
    assert_eq!(name.status, 200, "{}", name.text);
    assert_eq!(name.json["name"], json!({"firstName": "Amina", "lastName": "Odhiambo", "fullName": "Amina Odhiambo"}));
    // A token that only collects may not ask whose a number is.
    let collecting = app.token_scoped(&cast.merchant, "payments").await;
    let refused = door.with_token(&collecting);
    let r = refused.get(template, &path).await;
    assert_eq!((r.status, r.json["errorCategory"].as_str()), (401, Some("authorisation")), "{}", r.text);
    let unknown = door.get(template, &format!("/accounts/msisdn/{}/accountname", msisdn("0000"))).await;
    assert_eq!(unknown.status, 404);
    refused.hand_over(&door);
    door.validate().await;
}

async fn an_agents_deposit_and_withdrawal_move_the_float(db: Db) {
    let app = TestApp::shared(db);
    let cast = Cast::new(app, malipo_core::Mode::Test, "5000").await;
    let door = Door::new(app, &cast.agent_token);
    let float = |r: Reply| r.json["currentBalance"].as_str().unwrap().parse::<f64>().unwrap();
    let before = float(door.get("/accounts/balance", "/accounts/balance").await);
    let customer = msisdn("0000");
    let deposit = json!({"amount": "300", "currency": "KES", "creditParty": [{"key": "msisdn", "value": customer}]});
    let d = door.transact("deposit", &deposit, Some(&correlation())).await;
    assert_eq!((d.status, d.json["status"].as_str()), (202, Some("completed")), "{}", d.text);
    let receipt = door.transaction(d.json["objectReference"].as_str().unwrap()).await;
    assert_eq!((receipt.status, receipt.json["type"].as_str()), (200, Some("deposit")), "{}", receipt.text);
    let after_deposit = float(door.get("/accounts/balance", "/accounts/balance").await);
    assert!((before - after_deposit - 300.0).abs() < 1e-9, "{before} → {after_deposit}");

    let withdrawal = json!({"amount": "200", "currency": "KES", "debitParty": [{"key": "msisdn", "value": customer}]});
    let w = door.transact("withdrawal", &withdrawal, None).await;
    assert_eq!(w.status, 202, "{}", w.text);
    assert!(w.json["objectReference"].as_str().unwrap().starts_with("wd_"));
    assert_eq!(door.settled(w.json["serverCorrelationId"].as_str().unwrap()).await["status"], "completed");
    let after = float(door.get("/accounts/balance", "/accounts/balance").await);
    assert!(after - after_deposit >= 200.0, "the float receives the amount and its commission: {after_deposit} → {after}");
    let wrong = door
        .transact("deposit", &json!({"amount": "1", "currency": "UGX", "creditParty": [{"key": "msisdn", "value": customer}]}), None)
        .await;
    assert_eq!((wrong.status, wrong.json["errorCode"].as_str()), (400, Some("currencyNotSupported")), "{}", wrong.text);
    app.assert_ledger_ok().await;
    door.validate().await;
}

async fn refusals_are_the_documents_error_object(db: Db) {
    let app = TestApp::shared(db);
    let (_, token) = app.merchant_token().await;
    let door = Door::new(app, &token);
    let anonymous = door.with_token("");
    let r = anonymous.get("/accounts/balance", "/accounts/balance").await;
    assert_eq!((r.status, r.json["errorCode"].as_str()), (401, Some("clientAuthorisationError")), "{}", r.text);
    assert!(r.headers.get("www-authenticate").is_some());
    let forged = door.with_token("not-a-token");
    let r = forged.get("/accounts/balance", "/accounts/balance").await;
    assert_eq!((r.status, r.json["errorCategory"].as_str()), (401, Some("authorisation")));

    let missing =
        door.transact("merchantpay", &json!({"currency": "KES", "debitParty": [{"key": "msisdn", "value": "254700000000"}]}), None).await;
    assert_eq!((missing.status, missing.json["errorCode"].as_str()), (400, Some("mandatoryValueNotSupplied")), "{}", missing.text);
    let bad_number = door.transact("merchantpay", &merchantpay("12", "10"), None).await;
    assert_eq!(
        (bad_number.status, bad_number.json["errorParameters"][0]["key"].as_str()),
        (400, Some("debitParty")),
        "{}",
        bad_number.text
    );
    let billpay = door.transact("billpay", &merchantpay(&msisdn("0000"), "10"), None).await;
    assert_eq!((billpay.status, billpay.json["errorCode"].as_str()), (400, Some("transactionTypeError")));
    let unknown = door.transaction("ch_0193a1b2c3d47e8f9a0b1c2d3e4f5a6b").await;
    assert_eq!((unknown.status, unknown.json["errorCategory"].as_str()), (404, Some("identification")));

    // X-Content-Hash, when sent, must be the body's SHA-256; X-Date a date-time.
    let body = merchantpay(&msisdn("0000"), "10");
    let bytes = serde_json::to_vec(&body).unwrap();
    let right = hex::encode(Sha256::digest(&bytes));
    let tampered = door
        .send(
            "post",
            "/transactions/type/{transactionType}",
            "/transactions/type/merchantpay",
            Some(&body),
            &[("X-Content-Hash", &"0".repeat(64))],
        )
        .await;
    assert_eq!((tampered.status, tampered.json["errorParameters"][0]["key"].as_str()), (400, Some("X-Content-Hash")), "{}", tampered.text);
    let hashed = door
        .send(
            "post",
            "/transactions/type/{transactionType}",
            "/transactions/type/merchantpay",
            Some(&body),
            &[("X-Content-Hash", &right), ("X-Date", "2026-12-03T10:00:00Z")],
        )
        .await;
    assert_eq!(hashed.status, 202, "{}", hashed.text);
    let stale = door
        .send("post", "/transactions/type/{transactionType}", "/transactions/type/merchantpay", Some(&body), &[("X-Date", "yesterday")])
        .await;
    assert_eq!(stale.status, 400, "{}", stale.text);
    let patch = door
        .send(
            "patch",
            "/transactions/{transactionReference}",
            &format!("/transactions/{}", hashed.json["objectReference"].as_str().unwrap()),
            Some(&json!([{"op": "replace", "path": "/transactionStatus", "value": "completed"}])),
            &[],
        )
        .await;
    assert_eq!((patch.status, patch.json["errorCode"].as_str()), (400, Some("incorrectState")), "{}", patch.text);
    let huge = json!({"amount": "10", "currency": "KES", "descriptionText": "x".repeat(300 * 1024)});
    let too_big = door.transact("merchantpay", &huge, None).await;
    assert_eq!((too_big.status, too_big.json["errorCategory"].as_str()), (400, Some("validation")), "{}", too_big.text);
    anonymous.hand_over(&door);
    forged.hand_over(&door);
    door.validate().await;
}

/// Polls the heartbeat until it says `status` (it is read from the database at most once a
/// second, and the backlog is measured by the server's monitor).
async fn heartbeat_until(door: &Door<'_>, status: &str) -> Value {
    let started = Instant::now();
    loop {
        let beat = door.get("/heartbeat", "/heartbeat").await;
        if beat.json["serviceStatus"] == status {
            return beat.json;
        }
        assert!(started.elapsed() < WAIT, "the heartbeat still says {} after {WAIT:?}", beat.text);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn while_catching_up_the_heartbeat_is_degraded_new_work_waits_and_replays_are_answered(db: Db) {
    // A manual clock and no workers running: time passes and nobody advances the due charges.
    let app = TestApp::with(db, Options { max_backlog_seconds: Some(5), ..Options::manual() }).await;
    let (_, token) = app.merchant_token().await;
    let door = Door::new(&app, &token);
    let (answered, body) = (correlation(), merchantpay(&msisdn("0000"), "10"));
    let first = door.transact("merchantpay", &body, Some(&answered)).await;
    assert_eq!(first.status, 202, "{}", first.text);
    heartbeat_until(&door, "available").await;
    app.advance(Duration::from_secs(30));
    let degraded = heartbeat_until(&door, "degraded").await;
    assert!(degraded["delay"].as_u64().is_some_and(|ms| ms >= 1000), "{degraded}");

    let refused = door.transact("merchantpay", &body, Some(&correlation())).await;
    assert_eq!((refused.status, refused.json["errorCategory"].as_str()), (503, Some("serviceUnavailable")), "{}", refused.text);
    assert!(refused.headers.get("retry-after").is_some());
    let replay = door.transact("merchantpay", &body, Some(&answered)).await;
    assert_eq!((replay.status, replay.text.as_str()), (202, first.text.as_str()), "a replay is always answered");

    assert_eq!(app.run_workers().await, 1);
    heartbeat_until(&door, "available").await;
    door.validate().await;
    app.stop().await;
}
