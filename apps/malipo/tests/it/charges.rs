//! The seed's core flow and the charge endpoints.

use std::time::Duration;

use serde_json::{json, Value};

use crate::harness::{problem, raw_member, Db, TestApp};

crate::on_both!(sandbox_charge_completes_and_pays_the_merchant_net_of_fee, same_idem_replays_byte_for_byte);

async fn sandbox_charge_completes_and_pays_the_merchant_net_of_fee(db: Db) {
    let app = TestApp::spawn(db).await;
    let (_, token) = app.merchant_token().await;
    let (c, text) = app.charge_raw(&token, "254712345678", "250").await;
    assert_eq!(c["state"], "pending");
    assert_eq!(raw_member(&text, "amount"), "250.00", "amounts are written with two decimals");
    let done = app.wait_for(&token, c["charge_ref"].as_str().unwrap(), "completed", Duration::from_secs(10)).await;
    assert!(done["transaction_id"].as_str().unwrap().starts_with("tx_"));
    let fee = done["fee"].as_f64().unwrap();
    let text = app.get(&token, "/partner/balance").await.text().await.unwrap();
    let b: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(b["available"].as_f64().unwrap(), 250.0 - fee);
    assert_eq!(raw_member(&text, "pending"), "0.00");
    app.assert_ledger_ok().await;
    app.stop().await;
}

async fn same_idem_replays_byte_for_byte(db: Db) {
    let app = TestApp::spawn(db).await;
    let (_, token) = app.merchant_token().await;
    let body = json!({"payer_msisdn": "254700001009", "amount": 10, "reference": "R1", "idem": "k-1"});
    let first = app.post(&token, "/partner/stk", &body, None).await;
    assert_eq!(first.status(), 200);
    assert!(first.headers().get("idempotent-replayed").is_none());
    let first = first.bytes().await.unwrap();
    let again = app.post(&token, "/partner/stk", &body, None).await;
    assert_eq!(again.status(), 200);
    assert_eq!(again.headers()["idempotent-replayed"], "true");
    assert_eq!(again.bytes().await.unwrap(), first);
    let other = json!({"payer_msisdn": "254700001009", "amount": 11, "reference": "R1", "idem": "k-1"});
    problem(app.post(&token, "/partner/stk", &other, None).await, 422, "idempotency_key_reused").await;
    app.stop().await;
}
