//! Contract section 1: objects never cross organisations or modes (404 as if absent), and each
//! mode has its own ledger.

use std::time::Duration;

use serde_json::json;

use crate::harness::{problem_strict, raw_member, stk, Answer, Db, TestApp};

crate::on_both!(
    another_merchant_cannot_see_the_charge,
    another_merchant_cannot_act_on_the_charge,
    live_token_cannot_see_test_charges,
    test_token_cannot_see_live_charges,
    live_balance_is_a_separate_account,
    test_and_live_ledgers_are_separate,
);

async fn another_merchant_cannot_see_the_charge(db: Db) {
    let app = TestApp::shared(db);
    let (_, a) = app.merchant_token().await;
    let (_, b) = app.merchant_token().await;
    let mut body = stk("254700001009", json!(10));
    body["reference"] = json!("A-ORDER-1");
    let c = Answer::of(app.post(&a, "/partner/stk", &body, None).await).await;
    let r = c.json["charge_ref"].as_str().unwrap();
    problem_strict(app.get(&b, &format!("/partner/charges/{r}")).await, 404, "not_found").await;
    problem_strict(app.get(&b, &format!("/partner/status?charge_ref={r}")).await, 404, "not_found").await;
    problem_strict(app.get(&b, "/partner/status?reference=A-ORDER-1").await, 404, "not_found").await;
    assert_eq!(app.get_json(&b, "/partner/charges").await["data"], json!([]));
    assert_eq!(app.get_json(&b, "/partner/charges?state=pending").await["data"], json!([]));
    // The owner still sees it.
    assert_eq!(app.get_json(&a, "/partner/status?reference=A-ORDER-1").await["charge_ref"], r);
    // The 404 for another's charge is the same as for an absent one (apart from the request id).
    let theirs = Answer::of(app.get(&b, &format!("/partner/charges/{r}")).await).await;
    let absent = Answer::of(app.get(&b, "/partner/charges/ch_0000000000000000000000").await).await;
    let strip = |mut v: serde_json::Value| {
        v.as_object_mut().unwrap().remove("request_id");
        v
    };
    assert_eq!(strip(theirs.json), strip(absent.json));
}

async fn another_merchant_cannot_act_on_the_charge(db: Db) {
    let app = TestApp::shared(db);
    let (_, a) = app.merchant_token().await;
    let (_, b) = app.merchant_token().await;
    let r = app.charge_ref(&a, "254700001009", "10").await;
    for action in ["approve", "decline", "expire"] {
        problem_strict(app.simulate(&b, &r, action).await, 404, "not_found").await;
    }
    let v = app.get_json(&a, &format!("/partner/charges/{r}")).await;
    assert_eq!(v["state"], "pending", "untouched by the other merchant");
    let text = app.get(&b, "/partner/balance").await.text().await.unwrap();
    assert_eq!(raw_member(&text, "available"), "0.00");
}

async fn live_token_cannot_see_test_charges(db: Db) {
    let app = TestApp::shared(db);
    let (c, test) = app.merchant_token().await;
    let live = app.token(&app.live(&c.org_id).await).await;
    let mut body = stk("254700001009", json!(10));
    body["reference"] = json!("T-1");
    let t = Answer::of(app.post(&test, "/partner/stk", &body, None).await).await;
    let r = t.json["charge_ref"].as_str().unwrap();
    problem_strict(app.get(&live, &format!("/partner/charges/{r}")).await, 404, "not_found").await;
    problem_strict(app.get(&live, &format!("/partner/status?charge_ref={r}")).await, 404, "not_found").await;
    problem_strict(app.get(&live, "/partner/status?reference=T-1").await, 404, "not_found").await;
    assert_eq!(app.get_json(&live, "/partner/charges").await["data"], json!([]));
}

async fn test_token_cannot_see_live_charges(db: Db) {
    let app = TestApp::shared(db);
    let (c, test) = app.merchant_token().await;
    let live = app.token(&app.live(&c.org_id).await).await;
    let mut body = stk("254712345678", json!(10));
    body["reference"] = json!("L-1");
    let l = Answer::of(app.post(&live, "/partner/stk", &body, None).await).await;
    assert_eq!(l.status, 200, "{}", l.text);
    assert_eq!(l.json["mode"], "live");
    let r = l.json["charge_ref"].as_str().unwrap();
    problem_strict(app.get(&test, &format!("/partner/charges/{r}")).await, 404, "not_found").await;
    problem_strict(app.get(&test, "/partner/status?reference=L-1").await, 404, "not_found").await;
    problem_strict(app.simulate(&test, r, "approve").await, 404, "not_found").await;
    assert_eq!(app.get_json(&test, "/partner/charges").await["data"], json!([]));
    // In live mode there is no sandbox: a number without a wallet fails payer_not_found.
    let v = app.wait_for(&live, r, "failed", Duration::from_secs(10)).await;
    assert_eq!(v["failure_reason"], "payer_not_found");
}

async fn live_balance_is_a_separate_account(db: Db) {
    let app = TestApp::shared(db);
    let (c, test) = app.merchant_token().await;
    let live = app.token(&app.live(&c.org_id).await).await;
    let r = app.charge_ref(&test, "254712345678", "300").await;
    app.wait_for(&test, &r, "completed", Duration::from_secs(10)).await;
    let t = Answer::of(app.get(&test, "/partner/balance").await).await;
    let l = Answer::of(app.get(&live, "/partner/balance").await).await;
    assert_eq!(t.raw("available"), "298.00");
    assert_eq!(l.raw("available"), "0.00", "test money never shows in live");
    assert_eq!(l.json["account"], "collection");
    assert_ne!(t.json["account_id"], l.json["account_id"]);
    let live_accounts = app.get_json(&live, "/accounts").await;
    let test_accounts = app.get_json(&test, "/accounts").await;
    let ids = |v: &serde_json::Value| -> Vec<String> {
        v["data"].as_array().unwrap().iter().map(|a| a["account_id"].as_str().unwrap().to_owned()).collect()
    };
    assert_eq!(ids(&live_accounts).len(), 2);
    assert!(ids(&live_accounts).iter().all(|id| !ids(&test_accounts).contains(id)));
    assert!(live_accounts["data"].as_array().unwrap().iter().all(|a| a["mode"] == "live"));
    assert!(test_accounts["data"].as_array().unwrap().iter().all(|a| a["mode"] == "test"));
}

async fn test_and_live_ledgers_are_separate(db: Db) {
    let app = TestApp::shared(db);
    let (c, test) = app.merchant_token().await;
    let r = app.charge_ref(&test, "254712345678", "1000").await;
    app.wait_for(&test, &r, "completed", Duration::from_secs(10)).await;
    let p = app.platform.clone();
    let (test_ok, live_ok) = tokio::task::spawn_blocking(move || {
        (
            p.accounts().verify_ledger(Some(malipo_core::Mode::Test)).unwrap(),
            p.accounts().verify_ledger(Some(malipo_core::Mode::Live)).unwrap(),
        )
    })
    .await
    .unwrap();
    assert!(test_ok.is_empty() && live_ok.is_empty(), "{test_ok:?} {live_ok:?}");
    // The live ledger has no trace of the test charge: no account of the org moved.
    let live = app.token(&app.live(&c.org_id).await).await;
    let text = app.get(&live, "/accounts").await.text().await.unwrap();
    let top: std::collections::HashMap<String, Box<serde_json::value::RawValue>> = serde_json::from_str(&text).unwrap();
    let accounts: Vec<std::collections::HashMap<String, Box<serde_json::value::RawValue>>> =
        serde_json::from_str(top["data"].get()).unwrap();
    for a in &accounts {
        assert_eq!(a["balance"].get(), "0.00");
        assert_eq!(a["pending"].get(), "0.00");
    }
    // Each mode's ledger holds only its own journals and accounts.
    let test_tx = app.get_json(&test, &format!("/partner/charges/{r}")).await["transaction_id"].as_str().unwrap().to_owned();
    let p = app.platform.clone();
    let (test_ledger, live_ledger) = tokio::task::spawn_blocking(move || {
        let snap = |m| malipo_service::read(p.store(), |tx| Ok(tx.ledger_snapshot(Some(m))?)).unwrap();
        (snap(malipo_core::Mode::Test), snap(malipo_core::Mode::Live))
    })
    .await
    .unwrap();
    let has = |s: &malipo_ledger::LedgerSnapshot| s.journals.iter().any(|j| j.journal.id.to_string() == test_tx);
    assert!(has(&test_ledger), "the test ledger holds the charge's journal");
    assert!(!has(&live_ledger), "the live ledger does not");
    assert!(live_ledger.journals.iter().all(|j| j.journal.mode == malipo_core::Mode::Live));
    assert!(live_ledger.accounts.iter().all(|a| a.mode == malipo_core::Mode::Live));
    assert!(test_ledger.accounts.iter().all(|a| a.mode == malipo_core::Mode::Test));
    app.assert_ledger_ok().await;
}
