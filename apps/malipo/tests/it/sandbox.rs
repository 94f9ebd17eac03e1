//! Contract section 11, sandbox helpers: the magic numbers, simulate, test wallets.

use std::time::Duration;

use serde_json::{json, Value};

use crate::harness::{field_problem, msisdn, problem_strict, Answer, Db, Options, TestApp};

crate::on_both!(
    simulate_repeated_after_the_charge_moved_on_replays,
    magic_numbers_fail_or_decline_with_their_reason,
    number_ending_1002_expires_after_the_ttl,
    number_ending_1004_locks_the_wallet_then_fails_wallet_locked,
    number_ending_1009_stays_pending,
    other_numbers_are_approved_and_completed,
    simulate_approve_completes_with_a_transaction,
    simulate_approve_without_the_funds_fails_insufficient_funds,
    simulate_decline,
    simulate_wrong_pin_locks_on_the_third_attempt,
    simulate_expire,
    simulate_fail,
    simulate_on_a_final_charge_is_invalid_state,
    simulate_unknown_action_is_validation_failed,
    simulate_unknown_charge_is_not_found,
    simulate_needs_an_idempotency_key,
    simulate_replays_under_its_key,
    sandbox_refuses_live_tokens,
    sandbox_wallet_is_created_with_a_million,
    sandbox_wallet_balance_can_be_set,
    charge_above_the_wallet_balance_fails_insufficient_funds,
    sandbox_wallet_unknown_kyc_tier_is_refused,
    sandbox_wallet_validates_its_fields,
);

const WAIT: Duration = Duration::from_secs(10);

async fn expect_outcome(app: &TestApp, token: &str, msisdn: &str, state: &str, reason: &str) -> Value {
    let c = app.charge(token, msisdn, "100").await;
    assert_eq!(c["state"], "pending", "outcomes arrive later, never as a synchronous error");
    let v = app.wait_for(token, c["charge_ref"].as_str().unwrap(), state, WAIT).await;
    assert_eq!(v["failure_reason"], reason, "{msisdn}");
    assert_eq!(v["transaction_id"], Value::Null, "{msisdn}");
    assert_eq!(v["completed_at"], Value::Null, "{msisdn}");
    v
}

async fn magic_numbers_fail_or_decline_with_their_reason(db: Db) {
    let app = TestApp::shared(db);
    let (_, token) = app.merchant_token().await;
    let table = [
        ("254700001001", "declined", "declined_by_customer"),
        ("254700001003", "failed", "insufficient_funds"),
        ("254700001005", "failed", "wallet_locked"),
        ("254700001006", "failed", "limit_exceeded"),
        ("254700001007", "failed", "payer_not_found"),
    ];
    let mut pushed = vec![];
    for (msisdn, _, _) in table {
        let c = app.charge(&token, msisdn, "100").await;
        assert_eq!(c["state"], "pending", "outcomes arrive later, never as a synchronous error");
        pushed.push(c["charge_ref"].as_str().unwrap().to_owned());
    }
    for ((msisdn, state, reason), r) in table.iter().zip(&pushed) {
        let v = app.wait_for(&token, r, state, WAIT).await;
        assert_eq!(v["failure_reason"], *reason, "{msisdn}");
        assert_eq!(v["transaction_id"], Value::Null, "{msisdn}");
        assert_eq!(v["completed_at"], Value::Null, "{msisdn}");
    }
    // Nothing reached the merchant.
    let text = app.get(&token, "/partner/balance").await.text().await.unwrap();
    assert_eq!(crate::harness::raw_member(&text, "available"), "0.00");
    assert_eq!(crate::harness::raw_member(&text, "pending"), "0.00");
    app.assert_ledger_ok().await;
}

async fn number_ending_1002_expires_after_the_ttl(db: Db) {
    let app = TestApp::with(db, Options { charge_ttl_seconds: 1, ..Options::manual() }).await;
    let (_, token) = app.merchant_token().await;
    let c = app.charge(&token, "254700001002", "100").await;
    let r = c["charge_ref"].as_str().unwrap();
    let state = || async { app.get_json(&token, &format!("/partner/charges/{r}")).await["state"].clone() };
    // Before the sandbox delay (100 ms) the worker has nothing to do; after it, it looks and
    // nobody answers, so the charge stays pending until the TTL: not one microsecond less.
    assert_eq!(app.run_workers().await, 0);
    app.advance(Duration::from_millis(100));
    assert_eq!(app.run_workers().await, 1);
    assert_eq!(state().await, "pending", "nobody answers before the TTL");
    app.advance(Duration::from_micros(899_999));
    assert_eq!(app.run_workers().await, 0);
    assert_eq!(state().await, "pending");
    app.advance(Duration::from_micros(1));
    assert_eq!(app.run_workers().await, 1);
    let v = app.get_json(&token, &format!("/partner/charges/{r}")).await;
    assert_eq!(v["state"], "expired");
    assert_eq!(v["failure_reason"], "expired");
    let created = malipo_core::Timestamp::parse_rfc3339(v["created_at"].as_str().unwrap()).unwrap();
    let updated = malipo_core::Timestamp::parse_rfc3339(v["updated_at"].as_str().unwrap()).unwrap();
    assert_eq!(updated, created.plus_seconds(1), "expired exactly at the TTL");
    assert_eq!(v["expires_at"], crate::harness::json_str(&created.plus_seconds(1).to_rfc3339()));
    app.assert_ledger_ok().await;
    app.stop().await;
}

async fn number_ending_1004_locks_the_wallet_then_fails_wallet_locked(db: Db) {
    let app = TestApp::shared(db);
    let (_, token) = app.merchant_token().await;
    let payer = msisdn("1004");
    expect_outcome(app, &token, &payer, "declined", "pin_attempts_exceeded").await;
    // The wallet is now locked: the next charge to the same number fails.
    expect_outcome(app, &token, &payer, "failed", "wallet_locked").await;
    // Another merchant's charge to the number fails the same way (the wallet is the customer's).
    let (_, other) = app.merchant_token().await;
    expect_outcome(app, &other, &payer, "failed", "wallet_locked").await;
    app.assert_ledger_ok().await;
}

async fn number_ending_1009_stays_pending(db: Db) {
    let app = TestApp::with(db, Options::manual()).await;
    let (_, token) = app.merchant_token().await;
    let r = app.charge_ref(&token, &msisdn("1009"), "100").await;
    // Past the sandbox delay, the worker looks once and leaves it to the customer until the TTL.
    app.advance(Duration::from_millis(100));
    assert_eq!(app.run_workers().await, 1);
    app.advance(Duration::from_secs(89));
    assert_eq!(app.run_workers().await, 0);
    let v = app.get_json(&token, &format!("/partner/charges/{r}")).await;
    assert_eq!(v["state"], "pending");
    assert_eq!(v["failure_reason"], Value::Null);
    // Simulated, it moves at once.
    let a = crate::harness::Answer::of(app.simulate(&token, &r, "decline").await).await;
    assert_eq!(a.json["state"], "declined", "{}", a.text);
    app.stop().await;
}

async fn other_numbers_are_approved_and_completed(db: Db) {
    let app = TestApp::shared(db);
    let (_, token) = app.merchant_token().await;
    let mut refs = vec![];
    for msisdn in ["254700001008", "254700001000", "254712345678", "254799999999"] {
        refs.push(app.charge_ref(&token, msisdn, "100").await);
    }
    for r in &refs {
        let v = app.wait_for(&token, r, "completed", WAIT).await;
        assert_eq!(v["failure_reason"], Value::Null);
        assert!(v["transaction_id"].as_str().unwrap().starts_with("tx_"));
    }
    let text = app.get(&token, "/partner/balance").await.text().await.unwrap();
    assert_eq!(crate::harness::raw_member(&text, "available"), "400.00", "fee 0 up to 200");
    app.assert_ledger_ok().await;
}

async fn simulate_approve_completes_with_a_transaction(db: Db) {
    let app = TestApp::shared(db);
    let (_, token) = app.merchant_token().await;
    let r = app.charge_ref(&token, "254700001009", "250").await;
    let a = Answer::of(app.simulate(&token, &r, "approve").await).await;
    assert_eq!(a.status, 200, "{}", a.text);
    assert_eq!(a.json["charge_ref"], r.as_str());
    assert_eq!(a.json["state"], "completed");
    assert!(a.json["transaction_id"].as_str().unwrap().starts_with("tx_"));
    assert!(a.json["completed_at"].is_string());
    assert_eq!(a.raw("amount"), "250.00");
    assert_eq!(a.raw("fee"), "2.00");
    let stored = app.get_json(&token, &format!("/partner/charges/{r}")).await;
    assert_eq!(stored, a.json, "the simulate answer is the charge as stored");
    let text = app.get(&token, "/partner/balance").await.text().await.unwrap();
    assert_eq!(crate::harness::raw_member(&text, "available"), "248.00");
    app.assert_ledger_ok().await;
}

async fn simulate_approve_without_the_funds_fails_insufficient_funds(db: Db) {
    let app = TestApp::shared(db);
    let (_, token) = app.merchant_token().await;
    let payer = msisdn("1009");
    wallet(app, &token, json!({"msisdn": payer, "balance": "99.99"})).await;
    let r = app.charge_ref(&token, &payer, "100").await;
    let a = Answer::of(app.simulate(&token, &r, "approve").await).await;
    assert_eq!(a.status, 200, "{}", a.text);
    assert_eq!(a.json["state"], "failed");
    assert_eq!(a.json["failure_reason"], "insufficient_funds");
    assert_eq!(a.json["transaction_id"], Value::Null);
    // Nothing moved: the wallet keeps its balance, the merchant got nothing.
    let w = wallet(app, &token, json!({"msisdn": payer})).await;
    assert_eq!(w.raw("balance"), "99.99");
    assert_eq!(w.raw("available"), "99.99", "no reservation is left behind");
    let text = app.get(&token, "/partner/balance").await.text().await.unwrap();
    assert_eq!(crate::harness::raw_member(&text, "available"), "0.00");
    app.assert_ledger_ok().await;
}

async fn simulate_to(app: &TestApp, token: &str, action: &str, state: &str, reason: &str) {
    let r = app.charge_ref(token, "254700001009", "100").await;
    let a = Answer::of(app.simulate(token, &r, action).await).await;
    assert_eq!(a.status, 200, "{action}: {}", a.text);
    assert_eq!(a.json["state"], state, "{action}");
    assert_eq!(a.json["failure_reason"], reason, "{action}");
    assert_eq!(a.json["transaction_id"], Value::Null);
    let stored = app.get_json(token, &format!("/partner/charges/{r}")).await;
    assert_eq!(stored["state"], state);
    assert_eq!(stored["failure_reason"], reason);
}

async fn simulate_decline(db: Db) {
    let app = TestApp::shared(db);
    let (_, token) = app.merchant_token().await;
    simulate_to(app, &token, "decline", "declined", "declined_by_customer").await;
    app.assert_ledger_ok().await;
}

async fn simulate_wrong_pin_locks_on_the_third_attempt(db: Db) {
    let app = TestApp::shared(db);
    let (_, token) = app.merchant_token().await;
    let payer = msisdn("1009");
    let r = app.charge_ref(&token, &payer, "100").await;
    let other = app.charge_ref(&token, &payer, "50").await;
    for attempt in 1..=2 {
        let a = Answer::of(app.simulate(&token, &r, "wrong_pin").await).await;
        assert_eq!(a.status, 200, "{}", a.text);
        assert_eq!(a.json["state"], "pending", "attempt {attempt} leaves it pending");
        assert_eq!(a.json["failure_reason"], Value::Null);
    }
    let a = Answer::of(app.simulate(&token, &r, "wrong_pin").await).await;
    assert_eq!(a.status, 200, "{}", a.text);
    assert_eq!(a.json["state"], "declined");
    assert_eq!(a.json["failure_reason"], "pin_attempts_exceeded");
    // The lock declines the customer's other pending prompt too.
    let o = app.get_json(&token, &format!("/partner/charges/{other}")).await;
    assert_eq!(o["state"], "declined");
    assert_eq!(o["failure_reason"], "pin_attempts_exceeded");
    // A later approval on a new charge fails: the wallet is locked.
    let next = app.charge_ref(&token, &payer, "100").await;
    let a = Answer::of(app.simulate(&token, &next, "approve").await).await;
    assert_eq!(a.status, 200, "{}", a.text);
    assert_eq!(a.json["state"], "failed");
    assert_eq!(a.json["failure_reason"], "wallet_locked");
    app.assert_ledger_ok().await;
}

async fn simulate_expire(db: Db) {
    let app = TestApp::shared(db);
    let (_, token) = app.merchant_token().await;
    simulate_to(app, &token, "expire", "expired", "expired").await;
}

async fn simulate_fail(db: Db) {
    let app = TestApp::shared(db);
    let (_, token) = app.merchant_token().await;
    simulate_to(app, &token, "fail", "failed", "insufficient_funds").await;
    app.assert_ledger_ok().await;
}

async fn simulate_on_a_final_charge_is_invalid_state(db: Db) {
    let app = TestApp::shared(db);
    let (_, token) = app.merchant_token().await;
    let r = app.charge_ref(&token, "254700001009", "100").await;
    assert_eq!(app.simulate(&token, &r, "approve").await.status(), 200);
    for action in ["approve", "decline", "wrong_pin", "expire", "fail"] {
        problem_strict(app.simulate(&token, &r, action).await, 409, "invalid_state").await;
    }
    let d = app.charge_ref(&token, "254700001009", "100").await;
    assert_eq!(app.simulate(&token, &d, "decline").await.status(), 200);
    problem_strict(app.simulate(&token, &d, "approve").await, 409, "invalid_state").await;
    // The refused simulations changed nothing.
    let v = app.get_json(&token, &format!("/partner/charges/{r}")).await;
    assert_eq!(v["state"], "completed");
    let text = app.get(&token, "/partner/balance").await.text().await.unwrap();
    assert_eq!(crate::harness::raw_member(&text, "available"), "100.00", "paid exactly once");
    app.assert_ledger_ok().await;
}

async fn simulate_unknown_action_is_validation_failed(db: Db) {
    let app = TestApp::shared(db);
    let (_, token) = app.merchant_token().await;
    let r = app.charge_ref(&token, "254700001009", "100").await;
    field_problem(app.simulate(&token, &r, "dance").await, "action", "invalid_value").await;
    field_problem(app.simulate(&token, &r, "APPROVE").await, "action", "invalid_value").await;
    let path = format!("/sandbox/charges/{r}/simulate");
    field_problem(app.post(&token, &path, &json!({}), Some("k-missing")).await, "action", "missing_field").await;
    assert_eq!(app.get_json(&token, &format!("/partner/charges/{r}")).await["state"], "pending");
}

async fn simulate_unknown_charge_is_not_found(db: Db) {
    let app = TestApp::shared(db);
    let (_, token) = app.merchant_token().await;
    problem_strict(app.simulate(&token, "ch_0000000000000000000000", "approve").await, 404, "not_found").await;
    problem_strict(app.simulate(&token, "nonsense", "approve").await, 404, "not_found").await;
}

async fn simulate_needs_an_idempotency_key(db: Db) {
    let app = TestApp::shared(db);
    let (_, token) = app.merchant_token().await;
    let r = app.charge_ref(&token, "254700001009", "100").await;
    let path = format!("/sandbox/charges/{r}/simulate");
    problem_strict(app.post(&token, &path, &json!({"action": "approve"}), None).await, 400, "idempotency_key_missing").await;
    problem_strict(app.post(&token, "/sandbox/wallets", &json!({"msisdn": "254711110000"}), None).await, 400, "idempotency_key_missing")
        .await;
    assert_eq!(app.get_json(&token, &format!("/partner/charges/{r}")).await["state"], "pending");
}

async fn simulate_replays_under_its_key(db: Db) {
    let app = TestApp::shared(db);
    let (_, token) = app.merchant_token().await;
    let r = app.charge_ref(&token, "254700001009", "100").await;
    let path = format!("/sandbox/charges/{r}/simulate");
    let first = Answer::of(app.post(&token, &path, &json!({"action": "wrong_pin"}), Some("pin-1")).await).await;
    assert_eq!(first.status, 200);
    // The same key again is a replay, not a second wrong PIN.
    for _ in 0..3 {
        let again = Answer::of(app.post(&token, &path, &json!({"action": "wrong_pin"}), Some("pin-1")).await).await;
        assert_eq!(again.status, 200);
        assert_eq!(again.header("idempotent-replayed"), "true");
        assert_eq!(again.text, first.text);
    }
    assert_eq!(app.get_json(&token, &format!("/partner/charges/{r}")).await["state"], "pending");
    problem_strict(app.post(&token, &path, &json!({"action": "decline"}), Some("pin-1")).await, 422, "idempotency_key_reused").await;
}

async fn sandbox_refuses_live_tokens(db: Db) {
    let app = TestApp::shared(db);
    let (c, token) = app.merchant_token().await;
    let r = app.charge_ref(&token, "254700001009", "100").await;
    let live = app.live(&c.org_id).await;
    let live_token = app.token(&live).await;
    problem_strict(app.simulate(&live_token, &r, "approve").await, 403, "test_mode_only").await;
    problem_strict(app.sandbox_wallet(&live_token, &json!({"msisdn": "254711110000"})).await, 403, "test_mode_only").await;
    assert_eq!(app.get_json(&token, &format!("/partner/charges/{r}")).await["state"], "pending");
}

async fn wallet(app: &TestApp, token: &str, body: Value) -> Answer {
    let a = Answer::of(app.sandbox_wallet(token, &body).await).await;
    assert_eq!(a.status, 200, "{}", a.text);
    a
}

async fn sandbox_wallet_is_created_with_a_million(db: Db) {
    let app = TestApp::shared(db);
    let (_, token) = app.merchant_token().await;
    let n = msisdn("0000");
    let ug = format!("256{}", &msisdn("0000")[3..]);
    let a = wallet(app, &token, json!({"msisdn": n})).await;
    assert_eq!(a.json["msisdn"], n.as_str());
    assert_eq!(a.json["mode"], "test");
    assert_eq!(a.json["state"], "active");
    assert_eq!(a.json["currency"], "KES");
    assert_eq!(a.raw("balance"), "1000000.00");
    assert_eq!(a.raw("available"), "1000000.00");
    // A Ugandan number gets UGX.
    let u = wallet(app, &token, json!({"msisdn": ug})).await;
    assert_eq!(u.json["currency"], "UGX");
    assert_eq!(u.raw("balance"), "1000000.00");
    // Calling again does not top it up again.
    let again = wallet(app, &token, json!({"msisdn": n})).await;
    assert_eq!(again.raw("balance"), "1000000.00");
    app.assert_ledger_ok().await;
}

async fn sandbox_wallet_balance_can_be_set(db: Db) {
    let app = TestApp::shared(db);
    let (_, token) = app.merchant_token().await;
    let n = msisdn("0001");
    let a = wallet(app, &token, json!({"msisdn": n, "balance": "150.25"})).await;
    assert_eq!(a.raw("balance"), "150.25");
    let a = wallet(app, &token, json!({"msisdn": n, "balance": 2000000})).await;
    assert_eq!(a.raw("balance"), "2000000.00");
    let a = wallet(app, &token, json!({"msisdn": n, "balance": "0"})).await;
    assert_eq!(a.raw("balance"), "0.00", "zero empties the wallet");
    field_problem(app.sandbox_wallet(&token, &json!({"msisdn": n, "balance": "-1"})).await, "balance", "invalid_amount").await;
    field_problem(app.sandbox_wallet(&token, &json!({"msisdn": n, "balance": "1.001"})).await, "balance", "invalid_amount").await;
    app.assert_ledger_ok().await;
}

async fn charge_above_the_wallet_balance_fails_insufficient_funds(db: Db) {
    let app = TestApp::shared(db);
    let (_, token) = app.merchant_token().await;
    let n = msisdn("0002");
    wallet(app, &token, json!({"msisdn": n, "balance": "100"})).await;
    expect_outcome_amount(app, &token, &n, "100.01", "failed", Some("insufficient_funds")).await;
    // Exactly the balance goes through, and empties the wallet.
    expect_outcome_amount(app, &token, &n, "100", "completed", None).await;
    let w = wallet(app, &token, json!({"msisdn": n})).await;
    assert_eq!(w.raw("balance"), "0.00");
    app.assert_ledger_ok().await;
}

async fn expect_outcome_amount(app: &TestApp, token: &str, msisdn: &str, amount: &str, state: &str, reason: Option<&str>) {
    let r = app.charge_ref(token, msisdn, amount).await;
    let v = app.wait_for(token, &r, state, WAIT).await;
    assert_eq!(v["failure_reason"], reason.map_or(Value::Null, |r| json!(r)));
}

async fn sandbox_wallet_unknown_kyc_tier_is_refused(db: Db) {
    let app = TestApp::shared(db);
    let (_, token) = app.merchant_token().await;
    let n = msisdn("0003");
    field_problem(app.sandbox_wallet(&token, &json!({"msisdn": n, "kyc_tier": 9})).await, "kyc_tier", "invalid_value").await;
    let a = wallet(app, &token, json!({"msisdn": n, "kyc_tier": 0})).await;
    assert_eq!(a.json["kyc_tier"], 0);
    // A tier written with a zero fraction is that integer (JSON Schema's `integer` admits it).
    assert_eq!(wallet(app, &token, json!({"msisdn": n, "kyc_tier": 0.0})).await.json["kyc_tier"], 0);
    assert_eq!(a.json["limits"]["per_transaction"].as_f64(), Some(5000.0));
    assert!(a.text.contains("\"per_transaction\":5000.00"), "{}", a.text);
}

async fn sandbox_wallet_validates_its_fields(db: Db) {
    let app = TestApp::shared(db);
    let (_, token) = app.merchant_token().await;
    field_problem(app.sandbox_wallet(&token, &json!({"msisdn": "+254711110004"})).await, "msisdn", "invalid_msisdn").await;
    field_problem(app.sandbox_wallet(&token, &json!({"msisdn": "254711110004", "pin": "1234"})).await, "pin", "unknown_field").await;
    field_problem(app.sandbox_wallet(&token, &json!({})).await, "msisdn", "missing_field").await;
    problem_strict(app.sandbox_wallet(&token, &json!({"msisdn": "254711110004", "kyc_tier": "one"})).await, 400, "invalid_request").await;
    problem_strict(app.sandbox_wallet(&token, &json!({"msisdn": "254711110004", "kyc_tier": 1.5})).await, 400, "invalid_request").await;
}

/// A retry of a simulate call whose first answer was lost replays that answer, even though the
/// charge has moved on and a new request would be refused with 409.
async fn simulate_repeated_after_the_charge_moved_on_replays(db: Db) {
    let app = TestApp::spawn(db).await;
    let (_, token) = app.merchant_token().await;
    let charge = app.charge(&token, &msisdn("1009"), "100").await;
    let path = format!("/sandbox/charges/{}/simulate", charge["charge_ref"].as_str().unwrap());
    let body = serde_json::json!({"action": "approve"});
    let first = app.post(&token, &path, &body, Some("sim-once")).await;
    assert_eq!(first.status(), 200);
    let first = first.bytes().await.unwrap();
    let again = app.post(&token, &path, &body, Some("sim-once")).await;
    assert_eq!(again.status(), 200, "a replay, not 409 invalid_state");
    assert_eq!(again.headers()["idempotent-replayed"], "true");
    assert_eq!(again.bytes().await.unwrap(), first);
    let fresh = app.post(&token, &path, &body, Some("sim-twice")).await;
    assert_eq!(fresh.status(), 409, "a new key on a completed charge is refused");
    app.stop().await;
}
