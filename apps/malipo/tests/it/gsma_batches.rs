//! The GSMA door's batch transactions (`docs/gsma.md`): Malipo's bulk payouts with
//! maker/checker, answered in the GSMA document's objects and validated against it.

use std::time::{Duration, Instant};

use malipo_core::Mode;
use serde_json::{json, Value};

use crate::gsma::{correlation, rest, Door, Reply, BASE};
use crate::harness::{key, msisdn, Db, TestApp};

crate::on_both!(
    a_batch_is_approved_by_a_checker_polled_to_completed_and_its_items_listed,
    the_makers_own_approval_is_refused_and_nothing_is_paid,
    an_invalid_item_rejects_the_whole_batch_under_its_key,
    a_batch_rejected_through_the_rest_api_reads_as_completed_with_every_item_rejected,
    a_replay_under_a_correlation_id_is_answered_the_same,
);

const WAIT: Duration = Duration::from_secs(30);
const NOT_YET: &str = "1970-01-01T00:00:00Z";
const BATCH: &str = "/batchtransactions/{batchId}";

/// A funded corporate organisation: its maker's token (`bulk:create`) and a checker's
/// (`bulk:approve`, another credential).
async fn maker_and_checker(app: &TestApp, funds: &str) -> (String, String) {
    let c = app.org("corporate", "KE").await;
    app.fund(&c.org_id, Mode::Test, funds).await;
    let maker = app.token(&c).await;
    let checker = app.token(&app.credential(&c.org_id, Mode::Test, Some("bulk:approve payouts")).await).await;
    (maker, checker)
}

fn disbursement(payee: &str, amount: &str, reference: Option<&str>) -> Value {
    let mut t = json!({
        "type": "disbursement",
        "amount": amount,
        "currency": "KES",
        "creditParty": [{"key": "msisdn", "value": format!("+{payee}")}],
        "descriptionText": "November salary",
    });
    if let Some(r) = reference {
        t["requestingOrganisationTransactionReference"] = json!(r);
    }
    t
}

fn batch(transactions: Vec<Value>) -> Value {
    json!({"batchTitle": "PAYROLL-NOV", "batchdescription": "November salaries", "transactions": transactions})
}

async fn create(door: &Door<'_>, body: &Value, correlation: Option<&str>) -> Reply {
    door.post("/batchtransactions", "/batchtransactions", body, correlation).await
}

async fn approve(door: &Door<'_>, id: &str, correlation: Option<&str>) -> Reply {
    let body = json!([{"op": "replace", "path": "/batchStatus", "value": "approved"}]);
    patch(door, id, &body, correlation).await
}

async fn patch(door: &Door<'_>, id: &str, body: &Value, correlation: Option<&str>) -> Reply {
    let headers: Vec<(&str, &str)> = correlation.map(|c| ("X-CorrelationID", c)).into_iter().collect();
    door.send("patch", BATCH, &format!("/batchtransactions/{id}"), Some(body), &headers).await
}

async fn read(door: &Door<'_>, id: &str) -> Value {
    let r = door.get(BATCH, &format!("/batchtransactions/{id}")).await;
    assert_eq!(r.status, 200, "{}", r.text);
    r.json
}

async fn listing(door: &Door<'_>, id: &str, which: &str, query: &str) -> Reply {
    let template =
        if which == "rejections" { "/batchtransactions/{batchId}/rejections" } else { "/batchtransactions/{batchId}/completions" };
    let r = door.get(template, &format!("/batchtransactions/{id}/{which}{query}")).await;
    assert_eq!(r.status, 200, "{}", r.text);
    r
}

fn header(r: &Reply, name: &str) -> String {
    r.headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or("").to_owned()
}

/// Polls the batch's request state until it is no longer pending.
async fn settled(door: &Door<'_>, server_correlation_id: &str) -> Value {
    let started = Instant::now();
    loop {
        let r = door.request_state(server_correlation_id).await;
        assert_eq!(r.status, 200, "{}", r.text);
        if r.json["status"] != "pending" {
            return r.json;
        }
        assert!(started.elapsed() < WAIT, "batch still pending after {WAIT:?}: {}", r.text);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn custom(object: &Value, key: &str) -> Option<String> {
    object["customData"].as_array()?.iter().find(|p| p["key"] == key).and_then(|p| p["value"].as_str()).map(str::to_owned)
}

async fn a_batch_is_approved_by_a_checker_polled_to_completed_and_its_items_listed(db: Db) {
    let app = TestApp::shared(db);
    let (maker_token, checker_token) = maker_and_checker(app, "10000").await;
    let maker = Door::new(app, &maker_token);
    let checker = maker.with_token(&checker_token);
    let id = correlation();
    let items = vec![
        disbursement(&msisdn("0000"), "100", Some("EMP-1")),
        disbursement(&msisdn("1007"), "200", Some("EMP-2")),
        disbursement(&msisdn("0000"), "300.5", None),
    ];
    let created = create(&maker, &batch(items), Some(&id)).await;
    assert_eq!(created.status, 202, "{}", created.text);
    assert_eq!((created.json["status"].as_str(), created.json["notificationMethod"].as_str()), (Some("pending"), Some("polling")));
    let batch_id = created.json["objectReference"].as_str().unwrap().to_owned();
    assert!(batch_id.starts_with("bp_"), "{batch_id}");
    let server_id = created.json["serverCorrelationId"].as_str().unwrap().to_owned();

    let waiting = read(&maker, &batch_id).await;
    assert_eq!((waiting["batchStatus"].as_str(), waiting["batchTitle"].as_str()), (Some("created"), Some("PAYROLL-NOV")), "{waiting}");
    assert_eq!((waiting["approvalDate"].as_str(), waiting["completionDate"].as_str()), (Some(NOT_YET), Some(NOT_YET)));
    assert_eq!((waiting["parsingSuccessCount"].as_u64(), waiting["completedCount"].as_u64()), (Some(3), Some(0)));
    assert_eq!(custom(&waiting, "state").as_deref(), Some("awaiting_approval"));
    // The same batch through the REST API.
    let same = rest(app, &maker_token, &format!("/bulk-payouts/{batch_id}")).await;
    assert_eq!(
        (same["state"].as_str(), same["item_count"].as_u64(), same["reference"].as_str()),
        (Some("awaiting_approval"), Some(3), Some("PAYROLL-NOV"))
    );
    let pending = maker.request_state(&server_id).await;
    assert_eq!((pending.json["status"].as_str(), pending.json["objectReference"].as_str()), (Some("pending"), Some(batch_id.as_str())));

    let approval = correlation();
    let approved = approve(&checker, &batch_id, Some(&approval)).await;
    assert_eq!((approved.status, approved.json["objectReference"].as_str()), (202, Some(batch_id.as_str())), "{}", approved.text);
    assert_eq!(approved.json["serverCorrelationId"], server_id.as_str());
    let done = settled(&maker, &server_id).await;
    assert_eq!(done["status"], "completed", "{done}");

    let b = read(&checker, &batch_id).await;
    assert_eq!(b["batchStatus"], "completed", "{b}");
    assert_eq!((b["completedCount"].as_u64(), b["rejectionCount"].as_u64()), (Some(2), Some(1)), "{b}");
    assert!(b["approvalDate"] != NOT_YET && b["completionDate"] != NOT_YET, "{b}");
    assert_eq!(b["processingFlag"], false);

    let completions = listing(&maker, &batch_id, "completions", "").await;
    let paid = completions.json.as_array().unwrap().clone();
    assert_eq!((paid.len(), header(&completions, "x-records-available-count")), (2, "2".to_owned()), "{}", completions.text);
    assert_eq!(paid[0]["requestingOrganisationTransactionReference"], "EMP-1");
    assert_eq!(paid[1]["requestingOrganisationTransactionReference"], format!("{id}-3"), "an item without a reference gets the batch's");
    let link = paid[0]["link"].as_str().unwrap();
    let reference = link.strip_prefix(&format!("{BASE}/transactions/")).unwrap();
    let t = maker.transaction(reference).await;
    assert_eq!((t.json["type"].as_str(), t.json["transactionStatus"].as_str()), (Some("disbursement"), Some("completed")), "{}", t.text);
    let second = listing(&maker, &batch_id, "completions", "?offset=1&limit=1").await;
    assert_eq!(second.json.as_array().map(Vec::len), Some(1));
    assert_eq!(second.json[0]["transactionReference"], paid[1]["transactionReference"]);
    assert_eq!((header(&second, "x-records-available-count"), header(&second, "x-records-returned-count")), ("2".into(), "1".into()));
    let later = listing(&maker, &batch_id, "completions", "?fromDateTime=2999-01-01T00:00:00Z").await;
    assert_eq!(later.json, json!([]), "the batch was created before");

    let rejections = listing(&maker, &batch_id, "rejections", "").await;
    assert_eq!(rejections.json.as_array().map(Vec::len), Some(1), "{}", rejections.text);
    assert_eq!(rejections.json[0]["requestingOrganisationTransactionReference"], "EMP-2");
    assert!(rejections.json[0]["rejectionReason"].as_str().unwrap().contains("no wallet"), "{}", rejections.text);
    let bad_limit =
        maker.get("/batchtransactions/{batchId}/rejections", &format!("/batchtransactions/{batch_id}/rejections?limit=0")).await;
    assert_eq!((bad_limit.status, bad_limit.json["errorParameters"][0]["key"].as_str()), (400, Some("limit")), "{}", bad_limit.text);

    let twice = approve(&checker, &batch_id, None).await;
    assert_eq!((twice.status, twice.json["errorCode"].as_str()), (400, Some("incorrectState")), "{}", twice.text);
    // The link back for a client that missed either answer.
    for sent in [&id, &approval] {
        let r = checker.get("/responses/{clientCorrelationId}", &format!("/responses/{sent}")).await;
        assert_eq!((r.status, r.json["link"].as_str()), (200, Some(format!("{BASE}/batchtransactions/{batch_id}").as_str())), "{}", r.text);
    }
    app.assert_ledger_ok().await;
    checker.hand_over(&maker);
    maker.validate().await;
}

async fn the_makers_own_approval_is_refused_and_nothing_is_paid(db: Db) {
    let app = TestApp::shared(db);
    let (maker_token, checker_token) = maker_and_checker(app, "1000").await;
    let maker = Door::new(app, &maker_token);
    let before = rest(app, &maker_token, "/partner/balance?account=payout").await;
    let created =
        create(&maker, &batch(vec![disbursement(&msisdn("0000"), "10", Some("A")), disbursement(&msisdn("0000"), "20", Some("B"))]), None)
            .await;
    assert_eq!(created.status, 202, "{}", created.text);
    let batch_id = created.json["objectReference"].as_str().unwrap().to_owned();

    let own = approve(&maker, &batch_id, Some(&correlation())).await;
    assert_eq!((own.status, own.json["errorCategory"].as_str()), (401, Some("authorisation")), "{}", own.text);
    let b = read(&maker, &batch_id).await;
    assert_eq!((b["batchStatus"].as_str(), b["approvalDate"].as_str()), (Some("created"), Some(NOT_YET)), "{b}");
    let same = rest(app, &maker_token, &format!("/bulk-payouts/{batch_id}")).await;
    assert_eq!((same["state"].as_str(), same["counts"]["pending"].as_u64()), (Some("awaiting_approval"), Some(2)), "{same}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let after = rest(app, &maker_token, "/partner/balance?account=payout").await;
    let money = |b: &Value| (b["available"].to_string(), b["pending"].to_string());
    assert_eq!(money(&before), money(&after), "nothing paid, nothing reserved: {after}");
    assert_eq!(listing(&maker, &batch_id, "completions", "").await.json, json!([]));

    // A checker's update other than an approval is refused in the document's error format.
    let checker = maker.with_token(&checker_token);
    let reject = json!([{"op": "replace", "path": "/batchStatus", "value": "completed"}]);
    let r = patch(&checker, &batch_id, &reject, None).await;
    assert_eq!((r.status, r.json["errorParameters"][0]["key"].as_str()), (400, Some("[0].value")), "{}", r.text);
    let object = patch(&checker, &batch_id, &json!({"batchStatus": "approved"}), None).await;
    assert_eq!((object.status, object.json["errorCategory"].as_str()), (400, Some("validation")), "{}", object.text);
    let unknown = approve(&checker, "bp_0193a1b2c3d47e8f9a0b1c2d3e4f5a6b", None).await;
    assert_eq!((unknown.status, unknown.json["errorCategory"].as_str()), (404, Some("identification")), "{}", unknown.text);
    let missing = checker.get(BATCH, "/batchtransactions/bp_0193a1b2c3d47e8f9a0b1c2d3e4f5a6b").await;
    assert_eq!(missing.status, 404, "{}", missing.text);
    checker.hand_over(&maker);
    maker.validate().await;
}

async fn an_invalid_item_rejects_the_whole_batch_under_its_key(db: Db) {
    let app = TestApp::shared(db);
    let (maker_token, _) = maker_and_checker(app, "100").await;
    let maker = Door::new(app, &maker_token);
    let mut other_currency = disbursement(&msisdn("0000"), "1", Some("D"));
    other_currency["currency"] = json!("UGX");
    let items = vec![
        disbursement(&msisdn("0000"), "1", Some("A")),
        disbursement(&msisdn("0000"), "1.001", Some("B")),
        disbursement("25471", "1", Some("C")),
        other_currency,
    ];
    let refused = create(&maker, &batch(items), Some(&correlation())).await;
    assert_eq!((refused.status, refused.json["errorCategory"].as_str()), (400, Some("validation")), "{}", refused.text);
    let keys: Vec<&str> = refused.json["errorParameters"].as_array().unwrap().iter().map(|p| p["key"].as_str().unwrap()).collect();
    assert_eq!(keys, ["transactions[1].amount", "transactions[2].creditParty", "transactions[3].currency"], "{}", refused.text);
    let listed = rest(app, &maker_token, "/bulk-payouts").await;
    assert_eq!(listed["data"].as_array().map(Vec::len), Some(0), "nothing stored: {listed}");

    let mut merchantpay = disbursement(&msisdn("0000"), "1", Some("E"));
    merchantpay["type"] = json!("merchantpay");
    let wrong = create(&maker, &batch(vec![disbursement(&msisdn("0000"), "1", Some("A")), merchantpay]), None).await;
    assert_eq!((wrong.status, wrong.json["errorCode"].as_str()), (400, Some("transactionTypeError")), "{}", wrong.text);
    assert_eq!(wrong.json["errorParameters"][0]["key"], "transactions[1].type");
    let none = create(&maker, &batch(Vec::new()), None).await;
    assert_eq!((none.status, none.json["errorParameters"][0]["key"].as_str()), (400, Some("transactions")), "{}", none.text);
    // Over 10,000 items (a body over actix's default 256 KiB, within the door's 5 MiB).
    let payee = msisdn("0000");
    let many: Vec<Value> = (0..10_001).map(|i| disbursement(&payee, "1", Some(&format!("R{i}")))).collect();
    let over = create(&maker, &batch(many), None).await;
    assert_eq!((over.status, over.json["errorParameters"][0]["key"].as_str()), (400, Some("transactions")), "{}", over.text);
    let missing = create(&maker, &json!({"batchTitle": "X"}), None).await;
    assert_eq!((missing.status, missing.json["errorCode"].as_str()), (400, Some("mandatoryValueNotSupplied")), "{}", missing.text);
    let listed = rest(app, &maker_token, "/bulk-payouts").await;
    assert_eq!(listed["data"].as_array().map(Vec::len), Some(0), "nothing stored: {listed}");
    maker.validate().await;
}

async fn a_batch_rejected_through_the_rest_api_reads_as_completed_with_every_item_rejected(db: Db) {
    let app = TestApp::shared(db);
    let (maker_token, checker_token) = maker_and_checker(app, "1000").await;
    let maker = Door::new(app, &maker_token);
    let items = vec![disbursement(&msisdn("0000"), "10", Some("A")), disbursement(&msisdn("0000"), "20", Some("B"))];
    let created = create(&maker, &batch(items), Some(&correlation())).await;
    let batch_id = created.json["objectReference"].as_str().unwrap().to_owned();
    let rejected =
        app.post(&checker_token, &format!("/bulk-payouts/{batch_id}/reject"), &json!({"reason": "wrong month"}), Some(&key())).await;
    assert_eq!(rejected.status(), 200);

    let b = read(&maker, &batch_id).await;
    assert_eq!(b["batchStatus"], "completed", "{b}");
    assert_eq!((b["completedCount"].as_u64(), b["rejectionCount"].as_u64()), (Some(0), Some(2)), "{b}");
    assert_eq!(b["approvalDate"], NOT_YET, "never approved: {b}");
    assert_ne!(b["completionDate"], NOT_YET, "decided: {b}");
    assert_eq!((custom(&b, "state").as_deref(), custom(&b, "rejectionReason").as_deref()), (Some("rejected"), Some("wrong month")));

    let rejections = listing(&maker, &batch_id, "rejections", "").await;
    let all = rejections.json.as_array().unwrap().clone();
    assert_eq!((all.len(), header(&rejections, "x-records-available-count")), (2, "2".to_owned()), "{}", rejections.text);
    assert!(all.iter().all(|r| r["rejectionReason"].as_str().unwrap().contains("wrong month")), "{}", rejections.text);
    let completions = listing(&maker, &batch_id, "completions", "").await;
    assert_eq!((completions.json.clone(), header(&completions, "x-records-available-count")), (json!([]), "0".to_owned()));
    let state = maker.request_state(created.json["serverCorrelationId"].as_str().unwrap()).await;
    assert_eq!(
        (state.json["status"].as_str(), state.json["error"]["errorCode"].as_str()),
        (Some("failed"), Some("requestDeclined")),
        "{}",
        state.text
    );

    let checker = maker.with_token(&checker_token);
    let late = approve(&checker, &batch_id, None).await;
    assert_eq!((late.status, late.json["errorCode"].as_str()), (400, Some("incorrectState")), "{}", late.text);
    app.assert_ledger_ok().await;
    checker.hand_over(&maker);
    maker.validate().await;
}

async fn a_replay_under_a_correlation_id_is_answered_the_same(db: Db) {
    let app = TestApp::shared(db);
    let (maker_token, checker_token) = maker_and_checker(app, "1000").await;
    let maker = Door::new(app, &maker_token);
    let id = correlation();
    let body = batch(vec![disbursement(&msisdn("0000"), "10", None)]);
    let first = create(&maker, &body, Some(&id)).await;
    assert_eq!(first.status, 202, "{}", first.text);
    let again = create(&maker, &body, Some(&id.to_ascii_uppercase())).await;
    assert_eq!((again.status, again.text.as_str()), (202, first.text.as_str()), "a repeat is answered the same");
    let listed = rest(app, &maker_token, "/bulk-payouts").await;
    assert_eq!(listed["data"].as_array().map(Vec::len), Some(1), "one batch for the id: {listed}");
    let mut other = body.clone();
    other["batchTitle"] = json!("ANOTHER");
    let reused = create(&maker, &other, Some(&id)).await;
    assert_eq!((reused.status, reused.json["errorCode"].as_str()), (400, Some("duplicateRequest")), "{}", reused.text);

    let batch_id = first.json["objectReference"].as_str().unwrap().to_owned();
    let checker = maker.with_token(&checker_token);
    let approval = correlation();
    let approved = approve(&checker, &batch_id, Some(&approval)).await;
    assert_eq!(approved.status, 202, "{}", approved.text);
    let replayed = approve(&checker, &batch_id, Some(&approval)).await;
    assert_eq!((replayed.status, replayed.text.as_str()), (202, approved.text.as_str()), "the approval's answer, not incorrectState");
    assert_eq!(settled(&maker, first.json["serverCorrelationId"].as_str().unwrap()).await["status"], "completed");
    checker.hand_over(&maker);
    maker.validate().await;
}
