//! The GSMA door's callbacks (`docs/gsma.md`, "Callbacks"): a request made with
//! `X-Callback-URL` has its outcome `PUT` there once final (the transaction object, or the error
//! object), signed with the Standard Webhooks headers under the organisation's callback secret
//! (read and rotated through `GET /api/v1/webhooks/callback-secret` and its `rotate`), retried
//! on the webhooks' schedule until a 2xx; every body is validated against the document's
//! callback request bodies.

use std::time::Duration;

use serde_json::{json, Value};

use crate::gsma::{correlation, merchantpay, Door};
use crate::harness::{msisdn, Db};
use malipo_service::CallbackState;

use crate::webhooks_delivery::{app_with, principal, status, verify, Receiver, Reply};

crate::on_both!(
    a_payment_with_a_callback_url_is_put_there_signed_and_retried_until_taken,
    a_declined_payment_puts_the_error_object,
    a_live_callback_to_an_internal_address_is_refused_and_makes_nothing,
    the_callback_secret_is_read_and_rotated_and_both_sign_for_a_day,
    a_disbursement_and_an_approved_batch_put_their_final_objects,
);

const WAIT: Duration = Duration::from_secs(20);

async fn secret(app: &crate::harness::TestApp, token: &str) -> Value {
    let r = app.get(token, "/api/v1/webhooks/callback-secret").await;
    assert_eq!(r.status(), 200);
    r.json().await.unwrap()
}

async fn pay_with_callback(door: &Door<'_>, payer: &str, url: &str, id: &str) -> crate::gsma::Reply {
    send_with_callback(door, &merchantpay(payer, "120"), url, id).await
}

async fn send_with_callback(door: &Door<'_>, body: &Value, url: &str, id: &str) -> crate::gsma::Reply {
    door.send(
        "post",
        "/transactions/type/{transactionType}",
        "/transactions/type/merchantpay",
        Some(body),
        &[("X-Callback-URL", url), ("X-CorrelationID", id)],
    )
    .await
}

async fn a_payment_with_a_callback_url_is_put_there_signed_and_retried_until_taken(db: Db) {
    let app = app_with(db, "0,1,1,1", 2000).await;
    // The first attempt is refused: the callback comes again, the same.
    let rx = Receiver::start(|n, _| if n == 0 { status(500) } else { Reply::Status(204, Vec::new()) }).await;
    let (_, token) = app.merchant_token().await;
    let door = Door::new(&app, &token);
    let id = correlation();
    let body = merchantpay(&msisdn("0000"), "120");
    let created = send_with_callback(&door, &body, &rx.url(), &id).await;
    assert_eq!(created.status, 202, "{}", created.text);
    assert_eq!(created.json["notificationMethod"], "callback", "{}", created.text);
    let reference = created.json["objectReference"].as_str().unwrap().to_owned();
    // A repeat is answered the same and asks for nothing more.
    let again = send_with_callback(&door, &body, &rx.url(), &id).await;
    assert_eq!(again.text, created.text);

    let hits = rx.wait("the callback taken on its second attempt", WAIT, |h| h.len() >= 2).await;
    let secret = secret(&app, &token).await;
    for hit in &hits[..2] {
        assert_eq!((hit.method.as_str(), hit.path.as_str()), ("PUT", "/hook"));
        verify(secret["secret"].as_str().unwrap(), hit);
        assert_eq!(hit.header("x-correlationid"), id);
        let body = hit.json();
        assert_eq!(
            (body["transactionReference"].as_str(), body["transactionStatus"].as_str()),
            (Some(reference.as_str()), Some("completed"))
        );
        assert_eq!(body["type"], "merchantpay");
        door.callback("updateTransaction", &hit.headers, body);
    }
    assert_eq!(hits[0].id(), hits[1].id(), "a retry is the same callback");
    assert!(hits[0].id().starts_with("cb_"), "{}", hits[0].id());
    let polled = door.request_state(created.json["serverCorrelationId"].as_str().unwrap()).await;
    assert_eq!((polled.json["status"].as_str(), polled.json["notificationMethod"].as_str()), (Some("completed"), Some("callback")));
    // Taken: settled, so never claimed again.
    let who = principal(&app, &token).await;
    let (p, r) = (app.platform.clone(), reference.clone());
    let kept = tokio::task::spawn_blocking(move || p.callbacks().of_object(&who, &r)).await.unwrap().unwrap();
    assert_eq!(kept.len(), 1, "one callback for the key: {kept:?}");
    assert_eq!((kept[0].state, kept[0].attempts, kept[0].last_status), (CallbackState::Succeeded, 2, Some(204)), "{kept:?}");
    assert_eq!(kept[0].next_attempt_at, None);
    door.validate().await;
}

async fn a_declined_payment_puts_the_error_object(db: Db) {
    let app = app_with(db, "0,1,1,1", 2000).await;
    let rx = Receiver::answering(200).await;
    let (_, token) = app.merchant_token().await;
    let door = Door::new(&app, &token);
    let created = pay_with_callback(&door, &msisdn("1001"), &rx.url(), &correlation()).await;
    assert_eq!(created.status, 202, "{}", created.text);
    let hits = rx.wait("the decline's callback", WAIT, |h| !h.is_empty()).await;
    let body = hits[0].json();
    assert_eq!((body["errorCategory"].as_str(), body["errorCode"].as_str()), (Some("businessRule"), Some("requestDeclined")), "{body}");
    verify(secret(&app, &token).await["secret"].as_str().unwrap(), &hits[0]);
    door.callback("updateError", &hits[0].headers, body);
    door.validate().await;
}

async fn a_live_callback_to_an_internal_address_is_refused_and_makes_nothing(db: Db) {
    let app = app_with(db, "0,1,1,1", 2000).await;
    let creds = app.merchant().await;
    let live = app.live(&creds.org_id).await;
    let token = app.token(&live).await;
    let door = Door::new(&app, &token);
    for url in ["http://127.0.0.1:9/hook", "https://10.0.0.1/hook", "https://169.254.169.254/latest", "not a url"] {
        let r = pay_with_callback(&door, &msisdn("0000"), url, &correlation()).await;
        assert_eq!((r.status, r.json["errorCategory"].as_str()), (400, Some("validation")), "{url}: {}", r.text);
        assert_eq!(r.json["errorParameters"][0]["key"], "X-Callback-URL", "{}", r.text);
    }
    let listed = crate::gsma::rest(&app, &token, "/partner/charges").await;
    assert_eq!(listed["data"].as_array().unwrap().len(), 0, "a refused callback makes no charge: {listed}");
    door.validate().await;
}

async fn the_callback_secret_is_read_and_rotated_and_both_sign_for_a_day(db: Db) {
    let app = app_with(db, "0,1,1,1", 2000).await;
    let rx = Receiver::answering(200).await;
    let (creds, token) = app.merchant_token().await;
    let first = secret(&app, &token).await;
    assert!(first["secret"].as_str().unwrap().starts_with("whsec_"), "{first}");
    assert_eq!(secret(&app, &token).await["secret"], first["secret"], "the same secret until rotated");
    // Another organisation's secret is its own; a live key's is live's.
    let (_, other) = app.merchant_token().await;
    assert_ne!(secret(&app, &other).await["secret"], first["secret"]);
    let live = app.token(&app.live(&creds.org_id).await).await;
    assert_ne!(secret(&app, &live).await["secret"], first["secret"]);
    // A token of a scope that makes nothing a callback reports may not read it.
    let wallets = app.token_scoped(&app.credential(&creds.org_id, malipo_core::Mode::Test, Some("wallets")).await, "wallets").await;
    assert_eq!(app.get(&wallets, "/api/v1/webhooks/callback-secret").await.status(), 403);

    let key = correlation();
    let rotated = app.post(&token, "/api/v1/webhooks/callback-secret/rotate", &json!({}), Some(&key)).await;
    assert_eq!(rotated.status(), 200);
    let rotated: Value = rotated.json().await.unwrap();
    assert_ne!(rotated["secret"], first["secret"]);
    assert!(rotated["previous_secret_expires_at"].is_string(), "{rotated}");
    let replay: Value = app.post(&token, "/api/v1/webhooks/callback-secret/rotate", &json!({}), Some(&key)).await.json().await.unwrap();
    assert_eq!(replay["secret"], rotated["secret"], "a repeat rotates once");
    assert_eq!(secret(&app, &token).await["secret"], rotated["secret"]);

    let door = Door::new(&app, &token);
    pay_with_callback(&door, &msisdn("0000"), &rx.url(), &correlation()).await;
    let hits = rx.wait("a callback after the rotation", WAIT, |h| !h.is_empty()).await;
    // Both secrets verify it while the old one is still valid.
    verify(rotated["secret"].as_str().unwrap(), &hits[0]);
    verify(first["secret"].as_str().unwrap(), &hits[0]);
}

async fn a_disbursement_and_an_approved_batch_put_their_final_objects(db: Db) {
    let app = app_with(db, "0,1,1,1", 2000).await;
    let rx = Receiver::answering(200).await;
    let corporate = app.org("corporate", "KE").await;
    app.fund(&corporate.org_id, malipo_core::Mode::Test, "1000").await;
    let maker = app.token(&corporate).await;
    let checker = app.token(&app.credential(&corporate.org_id, malipo_core::Mode::Test, Some("bulk:approve payouts")).await).await;
    let door = Door::new(&app, &maker);
    let url = rx.url();
    let with = |id: &str| vec![("X-Callback-URL", url.clone()), ("X-CorrelationID", id.to_owned())];

    let payout = json!({"amount": "100", "currency": "KES", "creditParty": [{"key": "msisdn", "value": msisdn("0000")}]});
    let sent = with(&correlation());
    let created =
        door.send("post", "/transactions/type/{transactionType}", "/transactions/type/disbursement", Some(&payout), &borrowed(&sent)).await;
    assert_eq!((created.status, created.json["notificationMethod"].as_str()), (202, Some("callback")), "{}", created.text);
    let payout_ref = created.json["objectReference"].as_str().unwrap().to_owned();

    let item = |payee: &str| json!({"type": "disbursement", "amount": "50", "currency": "KES", "creditParty": [{"key": "msisdn", "value": format!("+{payee}")}]});
    let batch = json!({"batchTitle": "PAYROLL-DEC", "transactions": [item(&msisdn("0000")), item(&msisdn("0001"))]});
    let made = door.send("post", "/batchtransactions", "/batchtransactions", Some(&batch), &borrowed(&with(&correlation()))).await;
    assert_eq!((made.status, made.json["notificationMethod"].as_str()), (202, Some("callback")), "{}", made.text);
    let batch_id = made.json["objectReference"].as_str().unwrap().to_owned();
    let approval = json!([{"op": "replace", "path": "/batchStatus", "value": "approved"}]);
    let approved = door
        .with_token(&checker)
        .send("patch", "/batchtransactions/{batchId}", &format!("/batchtransactions/{batch_id}"), Some(&approval), &[])
        .await;
    assert_eq!(approved.status, 202, "{}", approved.text);

    let hits = rx.wait("the payout's and the batch's callbacks", WAIT, |h| h.len() >= 2).await;
    let secret = secret(&app, &maker).await;
    let body_of =
        |reference: &str| hits.iter().map(|h| h.json()).find(|b| b["transactionReference"] == reference || b["batchId"] == reference);
    let paid = body_of(&payout_ref).expect("the payout's callback");
    assert_eq!((paid["type"].as_str(), paid["transactionStatus"].as_str()), (Some("disbursement"), Some("completed")), "{paid}");
    let done = body_of(&batch_id).expect("the batch's callback");
    assert_eq!((done["batchStatus"].as_str(), done["completedCount"].as_u64()), (Some("completed"), Some(2)), "{done}");
    for hit in &hits {
        verify(secret["secret"].as_str().unwrap(), hit);
        let body_of = if hit.json()["batchId"].is_string() { "updateBatchTransaction" } else { "updateTransaction" };
        door.callback(body_of, &hit.headers, hit.json());
    }
    assert_eq!(hits.len(), 2, "one callback each: the batch's items send none");
    door.validate().await;
}

fn borrowed<'a>(v: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    v.iter().map(|(n, v)| (*n, v.as_str())).collect()
}
