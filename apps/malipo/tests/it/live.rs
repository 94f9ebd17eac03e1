//! Contract section 3 in live mode: real wallets, real PINs, real limits, no sandbox magic.
//! Payer-side outcomes arrive through the charge's state, never as a synchronous error.

use std::time::Duration;

use serde_json::{json, Value};

use crate::harness::{msisdn, ok, Cast, Db, Options, TestApp};

crate::on_both!(
    charge_to_a_number_without_wallet_fails_payer_not_found,
    charge_to_a_locked_wallet_fails_wallet_locked,
    charge_above_the_tier_limit_fails_at_once,
    approval_without_the_funds_fails_insufficient_funds,
    unanswered_charge_expires,
    approved_charge_is_authorised_then_completed,
    magic_numbers_do_not_apply_in_live_mode,
    daily_limit_counts_every_payment_of_the_day,
);

const WAIT: Duration = Duration::from_secs(10);
const PIN: &str = "4826";

/// Pushes a live charge and asserts it is accepted as pending.
async fn push(app: &TestApp, cast: &Cast, payer: &str, amount: &str) -> String {
    let c = app.charge(&cast.merchant_token, payer, amount).await;
    assert_eq!(c["state"], "pending", "outcomes arrive later, never as a synchronous error: {c}");
    assert_eq!(c["mode"], "live");
    c["charge_ref"].as_str().unwrap().to_owned()
}

/// The charge's state now (no waiting: for apps whose worker the test drives), with its
/// failure reason.
async fn expect_state(app: &TestApp, cast: &Cast, r: &str, state: &str, reason: Option<&str>) -> Value {
    let v = app.get_json(&cast.merchant_token, &format!("/partner/charges/{r}")).await;
    assert_eq!(v["state"], state, "{v}");
    assert_eq!(v["failure_reason"], reason.map_or(Value::Null, |r| json!(r)), "{v}");
    v
}

async fn expect_failure(app: &TestApp, cast: &Cast, r: &str, state: &str, reason: &str) -> Value {
    let v = app.wait_for(&cast.merchant_token, r, state, WAIT).await;
    assert_eq!(v["failure_reason"], reason, "{v}");
    assert_eq!(v["transaction_id"], Value::Null, "{v}");
    assert_eq!(v["completed_at"], Value::Null, "{v}");
    v
}

async fn charge_to_a_number_without_wallet_fails_payer_not_found(db: Db) {
    let app = TestApp::shared(db);
    let cast = Cast::live(app).await;
    let r = push(app, &cast, &msisdn("6000"), "250").await;
    expect_failure(app, &cast, &r, "failed", "payer_not_found").await;
    // A number with a test wallet only has no live wallet.
    let test = Cast::new(app, malipo_core::Mode::Test, "0").await;
    let n = msisdn("6001");
    test.open_wallet(app, &n, true).await;
    let r = push(app, &cast, &n, "250").await;
    expect_failure(app, &cast, &r, "failed", "payer_not_found").await;
    assert_eq!(cast.merchant_available(app).await, "0.00");
    app.assert_ledger_ok().await;
}

async fn charge_to_a_locked_wallet_fails_wallet_locked(db: Db) {
    let app = TestApp::shared(db);
    let cast = Cast::live(app).await;
    let n = cast.customer(app, "6002", PIN, "1000").await;
    // Pending when the wallet is locked: it fails.
    let before = push(app, &cast, &n, "250").await;
    ok(app.post_new(&cast.operator, &format!("/wallets/{n}/lock"), &json!({"reason": "fraud review"})).await, "lock");
    expect_failure(app, &cast, &before, "failed", "wallet_locked").await;
    // Pushed while it is locked: fails too.
    let after = push(app, &cast, &n, "250").await;
    expect_failure(app, &cast, &after, "failed", "wallet_locked").await;
    assert_eq!(cast.wallet(app, &n).await.raw("balance"), "1000.00");
    assert_eq!(cast.merchant_available(app).await, "0.00");
    app.assert_ledger_ok().await;
}

async fn charge_above_the_tier_limit_fails_at_once(db: Db) {
    let app = TestApp::with(db, Options::manual()).await;
    let cast = Cast::live(&app).await;
    // Tier 0: per-transaction limit 5,000.00.
    let n = msisdn("6003");
    cast.open_wallet(&app, &n, false).await;
    cast.set_pin(&app, &n, PIN).await;
    cast.cash_in(&app, &n, "5000").await;
    let r = push(&app, &cast, &n, "5000.01").await;
    // The worker's first look, with no time passing: decided at once, not at the end of the TTL.
    assert_eq!(app.run_workers().await, 1);
    expect_state(&app, &cast, &r, "failed", Some("limit_exceeded")).await;
    // Exactly the limit waits for the customer, who was never prompted for the first.
    let at_limit = push(&app, &cast, &n, "5000").await;
    assert_eq!(app.run_workers().await, 0, "its payer could pay it when it was created: it waits, nothing is due");
    expect_state(&app, &cast, &at_limit, "pending", None).await;
    let s = cast.dial(&app, &n, &["3"]).await;
    assert!(s[1].contains("1. ") && !s[1].contains("2. "), "only the charge within the limit is listed: {s:?}");
    assert!(s[1].contains("KES 5,000.00") && !s[1].contains("5,000.01"), "{s:?}");
    // Above the tier-1 per-transaction limit of 150,000.00 too.
    let m = cast.customer(&app, "6004", PIN, "0").await;
    let r = push(&app, &cast, &m, "150000.01").await;
    assert_eq!(app.run_workers().await, 1);
    expect_state(&app, &cast, &r, "failed", Some("limit_exceeded")).await;
    app.assert_ledger_ok().await;
    app.stop().await;
}

async fn approval_without_the_funds_fails_insufficient_funds(db: Db) {
    let app = TestApp::with(db, Options::manual()).await;
    let cast = Cast::live(&app).await;
    let n = cast.customer(&app, "6005", PIN, "100").await;
    let r = push(&app, &cast, &n, "100.01").await;
    assert_eq!(app.run_workers().await, 0, "within the limits: it waits from creation, nothing is due");
    expect_state(&app, &cast, &r, "pending", None).await; // prompted: the balance is checked on approval
    let s = cast.dial(&app, &n, &["3", "1", "1", PIN]).await;
    assert!(s[4].starts_with("END ") && !s[4].contains("approved"), "{s:?}");
    expect_state(&app, &cast, &r, "failed", Some("insufficient_funds")).await;
    let w = cast.wallet(&app, &n).await;
    assert_eq!(w.raw("balance"), "100.00");
    assert_eq!(w.raw("available"), "100.00", "no reservation is left behind");
    assert_eq!(cast.merchant_available(&app).await, "0.00");
    // Exactly the balance goes through.
    let r = push(&app, &cast, &n, "100").await;
    app.run_workers().await;
    cast.dial(&app, &n, &["3", "1", "1", PIN]).await;
    expect_state(&app, &cast, &r, "completed", None).await;
    assert_eq!(cast.wallet(&app, &n).await.raw("balance"), "0.00");
    assert_eq!(cast.merchant_available(&app).await, "100.00", "no fee up to 200");
    app.assert_ledger_ok().await;
    app.stop().await;
}

async fn unanswered_charge_expires(db: Db) {
    let app = TestApp::with(db, Options { charge_ttl_seconds: 2, ..Options::manual() }).await;
    let cast = Cast::live(&app).await;
    let n = cast.customer(&app, "6006", PIN, "1000").await;
    let r = push(&app, &cast, &n, "250").await;
    assert_eq!(app.run_workers().await, 0, "it waits for the customer from creation, nothing is due");
    // One microsecond before the time-to-live ends nothing is due; at its end the charge expires.
    app.advance(Duration::from_micros(1_999_999));
    assert_eq!(app.run_workers().await, 0);
    expect_state(&app, &cast, &r, "pending", None).await;
    app.advance(Duration::from_micros(1));
    assert_eq!(app.run_workers().await, 1);
    let v = expect_state(&app, &cast, &r, "expired", Some("expired")).await;
    assert_eq!(v["updated_at"], v["expires_at"], "{v}");
    let created = malipo_core::Timestamp::parse_rfc3339(v["created_at"].as_str().unwrap()).unwrap();
    assert_eq!(v["expires_at"], crate::harness::json_str(&created.plus_seconds(2).to_rfc3339()));
    // Too late to approve: nothing is listed, nothing moves.
    let s = cast.dial(&app, &n, &["3"]).await;
    assert!(s[1].starts_with("END "), "{s:?}");
    assert_eq!(cast.wallet(&app, &n).await.raw("balance"), "1000.00");
    app.assert_ledger_ok().await;
    app.stop().await;
}

async fn approved_charge_is_authorised_then_completed(db: Db) {
    let app = TestApp::shared(db);
    let cast = Cast::live(app).await;
    let n = cast.customer(app, "6007", PIN, "20000").await;
    let r = push(app, &cast, &n, "12500").await;
    let s = cast.dial(app, &n, &["3", "1", "1", PIN]).await;
    assert!(s[4].contains("approved"), "{s:?}");
    let v = app.wait_for(&cast.merchant_token, &r, "completed", WAIT).await;
    assert!(v["transaction_id"].as_str().unwrap().starts_with("tx_"));
    let charge = app.get_answer(&cast.merchant_token, &format!("/partner/charges/{r}")).await;
    assert_eq!(charge.raw("fee"), "75.00", "10000.01..20000 band");
    assert_eq!(cast.merchant_available(app).await, "12425.00");
    assert_eq!(cast.wallet(app, &n).await.raw("balance"), "7500.00");
    app.assert_ledger_ok().await;
}

async fn magic_numbers_do_not_apply_in_live_mode(db: Db) {
    let app = TestApp::with(db, Options::manual()).await;
    let cast = Cast::live(&app).await;
    // Numbers ending 1001 (declines in the sandbox) and 1003 (insufficient funds).
    let n = cast.customer(&app, "1001", PIN, "1000").await;
    let m = cast.customer(&app, "1003", PIN, "1000").await;
    let r = push(&app, &cast, &n, "250").await;
    let q = push(&app, &cast, &m, "250").await;
    // Past the sandbox delay: nobody answered, so both wait (from creation, nothing is due).
    app.advance(Duration::from_secs(1));
    assert_eq!(app.run_workers().await, 0);
    for id in [&r, &q] {
        expect_state(&app, &cast, id, "pending", None).await;
    }
    for (payer, id) in [(&n, &r), (&m, &q)] {
        let s = cast.dial(&app, payer, &["3", "1", "1", PIN]).await;
        assert!(s[4].contains("approved"), "{s:?}");
        expect_state(&app, &cast, id, "completed", None).await;
        assert_eq!(cast.wallet(&app, payer).await.raw("balance"), "750.00");
    }
    // A number ending 1007 (payer not found in the sandbox) with a live wallet is found.
    let f = cast.customer(&app, "1007", PIN, "100").await;
    let r = push(&app, &cast, &f, "50").await;
    app.advance(Duration::from_secs(1));
    assert_eq!(app.run_workers().await, 0, "a live wallet: it waits from creation");
    expect_state(&app, &cast, &r, "pending", None).await;
    app.assert_ledger_ok().await;
    app.stop().await;
}

async fn daily_limit_counts_every_payment_of_the_day(db: Db) {
    let app = TestApp::shared(db);
    let cast = Cast::live(app).await;
    // Tier 0: 5,000.00 per transaction, 10,000.00 a day.
    let n = msisdn("6008");
    cast.open_wallet(app, &n, false).await;
    cast.set_pin(app, &n, PIN).await;
    for _ in 0..3 {
        cast.cash_in(app, &n, "5000").await;
    }
    for amount in ["5000", "4999.99"] {
        let r = push(app, &cast, &n, amount).await;
        let s = cast.dial(app, &n, &["3", "1", "1", PIN]).await;
        assert!(s[4].contains("approved"), "{s:?}");
        app.wait_for(&cast.merchant_token, &r, "completed", WAIT).await;
    }
    let w = cast.wallet(app, &n).await;
    assert_eq!(crate::harness::raw_at(&w.text, &["limits", "daily_used"]), "9999.99");
    assert_eq!(w.raw("balance"), "5000.01");
    // One minor unit above the day's limit fails at once; exactly the limit waits for the customer.
    let over = push(app, &cast, &n, "0.02").await;
    expect_failure(app, &cast, &over, "failed", "limit_exceeded").await;
    let at = push(app, &cast, &n, "0.01").await;
    let s = cast.dial(app, &n, &["3", "1", "1", PIN]).await;
    assert!(s[4].contains("approved"), "{s:?}");
    app.wait_for(&cast.merchant_token, &at, "completed", WAIT).await;
    let w = cast.wallet(app, &n).await;
    assert_eq!(crate::harness::raw_at(&w.text, &["limits", "daily_used"]), "10000.00");
    assert_eq!(w.raw("balance"), "5000.00");
    // Sending money counts too (amount and fee).
    let to = cast.customer(app, "6009", "7391", "0").await;
    let s = cast.dial(app, &n, &["1", &to, "50", PIN]).await;
    assert!(s[4].starts_with("END ") && !s[4].starts_with("END Sent"), "{s:?}");
    assert_eq!(cast.wallet(app, &to).await.raw("balance"), "0.00");
    assert_eq!(cast.wallet(app, &n).await.raw("balance"), "5000.00");
    app.assert_ledger_ok().await;
}
