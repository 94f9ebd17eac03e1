//! Check, then act, under a lock: two movements of one wallet at the same moment cannot both pass
//! a rule that only one fits. Each test runs several rounds of a live scenario in which the
//! final USSD hops (the PIN that approves, or sends) of two sessions, or an approval and an
//! operator's lock, reach the server together. The rounds (each with its own customer) run side
//! by side, so the suite pays for one round's set-up time, not ten. On PostgreSQL these fail within a few rounds when
//! an approval reads the payer's wallet without locking its row; SQLite serialises writers, so
//! there they hold by construction and guard the same outcome.

use std::time::Duration;

use futures_util::future::join_all;
use serde_json::json;

use crate::harness::{msisdn, ok, raw_at, session_id, Cast, Db, TestApp};

crate::on_both!(
    two_approvals_whose_sum_exceeds_the_daily_limit_pass_at_most_once,
    two_approvals_whose_sum_exceeds_the_balance_pay_at_most_once,
    an_approval_racing_an_operator_lock_is_either_before_it_or_refused,
    an_approval_racing_a_p2p_send_over_the_daily_limit_passes_at_most_once,
    wrong_pins_at_once_are_each_counted_and_lock_the_wallet,
);

const PIN: &str = "4826";
const WAIT: Duration = Duration::from_secs(10);
const ROUNDS: usize = 20;

/// A tier-0 customer (KES 5,000 per transaction, 10,000 a day, 20,000 balance) holding
/// 15,000.00, who has already paid a 4,000.00 charge today: 6,000.00 of the day is left.
async fn customer_with_4000_used(app: &TestApp, cast: &Cast, last4: &str) -> String {
    let n = msisdn(last4);
    cast.open_wallet(app, &n, false).await;
    cast.set_pin(app, &n, PIN).await;
    for _ in 0..3 {
        cast.cash_in(app, &n, "5000").await;
    }
    let r = cast.charge(app, &n, "4000").await;
    let s = cast.dial(app, &n, &["3", "1", "1", PIN]).await;
    assert!(s[4].contains("approved"), "the first payment: {s:?}");
    app.wait_for(&cast.merchant_token, &r, "completed", WAIT).await;
    let w = cast.wallet(app, &n).await;
    assert_eq!(w.json["kyc_tier"], 0);
    assert_eq!(w.raw("balance"), "11000.00");
    n
}

/// Dials a session up to (not including) its last input; returns the session id.
async fn dial_to_last(app: &TestApp, cast: &Cast, n: &str, inputs: &[&str]) -> String {
    let sid = session_id();
    let screens = cast.dial_in(app, &sid, n, &inputs[..inputs.len() - 1]).await;
    assert!(screens.last().unwrap().contains("PIN"), "{screens:?}");
    sid
}

/// The final hop of a session dialled with [`dial_to_last`].
async fn last_hop(app: &TestApp, cast: &Cast, sid: &str, n: &str, inputs: &[&str]) -> String {
    app.ussd_hop(&cast.gateway, sid, n, &inputs.join("*")).await
}

/// Two charges of `amount` to `n`, approved in two sessions whose PIN hops reach the server
/// together: exactly one is approved and completes, the other fails for `rule` (what it broke,
/// and the failure reason). Returns the two last screens.
async fn two_approvals_at_once(app: &TestApp, cast: &Cast, n: &str, amount: &str, rule: (&str, &str), round: usize) -> (String, String) {
    let (what, reason) = rule;
    let first = cast.charge(app, n, amount).await;
    let second = cast.charge(app, n, amount).await;
    let a_inputs = ["3", "1", "1", PIN];
    let b_inputs = ["3", "2", "1", PIN];
    let a = dial_to_last(app, cast, n, &a_inputs).await;
    let b = dial_to_last(app, cast, n, &b_inputs).await;
    let (x, y) = tokio::join!(last_hop(app, cast, &a, n, &a_inputs), last_hop(app, cast, &b, n, &b_inputs));
    let approved = [&x, &y].iter().filter(|s| s.contains("approved")).count();
    assert_eq!(approved, 1, "round {round}: exactly one of two approvals fits {what}: {x:?} / {y:?}");
    let mut completed = 0;
    for r in [&first, &second] {
        let c = app.wait_state_any(&cast.merchant_token, &format!("/partner/charges/{r}"), WAIT).await;
        match c["state"].as_str().unwrap() {
            "completed" => completed += 1,
            "failed" => assert_eq!(c["failure_reason"], reason, "round {round}: {c}"),
            other => panic!("round {round}: charge ended {other}: {c}"),
        }
    }
    assert_eq!(completed, 1, "round {round}: one payment completes");
    (x, y)
}

async fn two_approvals_whose_sum_exceeds_the_daily_limit_pass_at_most_once(db: Db) {
    let app = TestApp::shared(db);
    let cast = Cast::new(app, malipo_core::Mode::Live, "1000000").await;
    join_all((0..ROUNDS).map(|round| daily_limit_round(app, &cast, round))).await;
    app.assert_ledger_ok().await;
}

async fn daily_limit_round(app: &TestApp, cast: &Cast, round: usize) {
    let n = customer_with_4000_used(app, cast, "6000").await;
    two_approvals_at_once(app, cast, &n, "4000", ("the daily limit", "limit_exceeded"), round).await;
    let w = cast.wallet(app, &n).await;
    assert_eq!(w.raw("balance"), "7000.00", "round {round}: the wallet paid 4,000.00 once more");
    assert_eq!(raw_at(&w.text, &["limits", "daily_used"]), "8000.00", "round {round}: {}", w.text);
}

/// An approval pays at once in the transaction of its PIN hop, its posting checking the funds
/// under the wallet's row lock; the one refused there is answered as a hold would have been.
async fn two_approvals_whose_sum_exceeds_the_balance_pay_at_most_once(db: Db) {
    let app = TestApp::shared(db);
    let cast = Cast::new(app, malipo_core::Mode::Live, "1000000").await;
    join_all((0..ROUNDS).map(|round| balance_round(app, &cast, round))).await;
    app.assert_ledger_ok().await;
}

async fn balance_round(app: &TestApp, cast: &Cast, round: usize) {
    // 5,000.00 in the wallet; two payments of 3,000.00, each within the tier's limits.
    let n = msisdn("7000");
    cast.open_wallet(app, &n, false).await;
    cast.set_pin(app, &n, PIN).await;
    cast.cash_in(app, &n, "5000").await;
    let (x, y) = two_approvals_at_once(app, cast, &n, "3000", ("the balance", "insufficient_funds"), round).await;
    assert!([&x, &y].iter().any(|s| s.contains("enough money")), "round {round}: {x:?} / {y:?}");
    assert_eq!(cast.wallet(app, &n).await.raw("balance"), "2000.00", "round {round}: the wallet paid 3,000.00 once");
    // Nothing stays reserved by the refused approval: the rest of the balance can be paid.
    let rest = cast.charge(app, &n, "2000").await;
    let s = cast.dial(app, &n, &["3", "1", "1", PIN]).await;
    assert!(s[4].contains("approved"), "round {round}: {s:?}");
    app.wait_for(&cast.merchant_token, &rest, "completed", WAIT).await;
    assert_eq!(cast.wallet(app, &n).await.raw("balance"), "0.00", "round {round}");
}

async fn an_approval_racing_an_operator_lock_is_either_before_it_or_refused(db: Db) {
    let app = TestApp::shared(db);
    let cast = Cast::new(app, malipo_core::Mode::Live, "1000000").await;
    join_all((0..ROUNDS).map(|round| operator_lock_round(app, &cast, round))).await;
    app.assert_ledger_ok().await;
}

async fn operator_lock_round(app: &TestApp, cast: &Cast, round: usize) {
    let n = customer_with_4000_used(app, cast, "6001").await;
    let r = cast.charge(app, &n, "1000").await;
    let inputs = ["3", "1", "1", PIN];
    let sid = dial_to_last(app, cast, &n, &inputs).await;
    let (lock_path, reason) = (format!("/wallets/{n}/lock"), json!({"reason": "suspected fraud"}));
    let lock = app.post_new(&cast.operator, &lock_path, &reason);
    let (screen, locked) = tokio::join!(last_hop(app, cast, &sid, &n, &inputs), lock);
    ok(locked, "the operator's lock");
    let c = app.wait_state_any(&cast.merchant_token, &format!("/partner/charges/{r}"), WAIT).await;
    let w = cast.wallet(app, &n).await;
    assert_eq!(w.json["state"], "locked", "round {round}");
    if screen.contains("approved") {
        // The approval came first: the lock found the charge no longer pending.
        assert_eq!(c["state"], "completed", "round {round}: approved on screen: {c}");
        assert_eq!(w.raw("balance"), "10000.00", "round {round}");
    } else {
        // The lock came first: nothing left the locked wallet.
        assert_eq!(c["state"], "failed", "round {round}: {screen:?} {c}");
        assert_eq!(c["failure_reason"], "wallet_locked", "round {round}: {c}");
        assert_eq!(w.raw("balance"), "11000.00", "round {round}");
    }
}

async fn an_approval_racing_a_p2p_send_over_the_daily_limit_passes_at_most_once(db: Db) {
    let app = TestApp::shared(db);
    let cast = Cast::new(app, malipo_core::Mode::Live, "1000000").await;
    join_all((0..ROUNDS).map(|round| p2p_round(app, &cast, round))).await;
    app.assert_ledger_ok().await;
}

async fn p2p_round(app: &TestApp, cast: &Cast, round: usize) {
    let n = customer_with_4000_used(app, cast, "6002").await;
    let to = cast.customer(app, "6003", PIN, "0").await;
    let r = cast.charge(app, &n, "4000").await;
    // 4,000 + 2,500 (+ its fee) do not both fit the 6,000 left of the day; each alone does.
    let approve = ["3", "1", "1", PIN];
    let send = ["1", to.as_str(), "2500", PIN];
    let a = dial_to_last(app, cast, &n, &approve).await;
    let b = dial_to_last(app, cast, &n, &send).await;
    let (x, y) = tokio::join!(last_hop(app, cast, &a, &n, &approve), last_hop(app, cast, &b, &n, &send));
    let approved = x.contains("approved");
    let sent = y.contains("Sent");
    assert!(approved != sent, "round {round}: exactly one of the approval and the send passes: {x:?} / {y:?}");
    let c = app.wait_state_any(&cast.merchant_token, &format!("/partner/charges/{r}"), WAIT).await;
    let recipient = cast.wallet(app, &to).await;
    if approved {
        assert_eq!(c["state"], "completed", "round {round}: {c}");
        assert_eq!(recipient.raw("balance"), "0.00", "round {round}");
    } else {
        assert_eq!(c["state"], "failed", "round {round}: {c}");
        assert_eq!(c["failure_reason"], "limit_exceeded", "round {round}: {c}");
        assert_eq!(recipient.raw("balance"), "2500.00", "round {round}");
    }
}

/// Three wrong PINs that reach the server together, on three sessions approving one charge:
/// each is counted under the wallet's row lock, so the answers count down 2, 1, then lock the
/// wallet and decline the charge. (Counted without the lock, two of them read the same count and
/// the wallet stays open after three wrong PINs.)
async fn wrong_pins_at_once_are_each_counted_and_lock_the_wallet(db: Db) {
    let app = TestApp::shared(db);
    let cast = Cast::new(app, malipo_core::Mode::Live, "1000000").await;
    join_all((0..ROUNDS).map(|round| wrong_pins_round(app, &cast, round))).await;
    app.assert_ledger_ok().await;
}

async fn wrong_pins_round(app: &TestApp, cast: &Cast, round: usize) {
    const WRONG: &str = "9173";
    let n = customer_with_4000_used(app, cast, "6004").await;
    let r = cast.charge(app, &n, "100").await;
    let inputs = ["3", "1", "1", WRONG];
    let mut sessions = vec![];
    for _ in 0..3 {
        sessions.push(dial_to_last(app, cast, &n, &inputs).await);
    }
    let screens = join_all(sessions.iter().map(|sid| last_hop(app, cast, sid, &n, &inputs))).await;
    let count = |needle: &str| screens.iter().filter(|s| s.contains(needle)).count();
    assert_eq!(
        (count("2 attempts left"), count("1 attempt left"), count("locked")),
        (1, 1, 1),
        "round {round}: each wrong PIN counted once: {screens:?}"
    );
    let w = cast.wallet(app, &n).await;
    assert_eq!(w.json["state"], "locked", "round {round}: {}", w.text);
    let c = app.wait_for(&cast.merchant_token, &r, "declined", WAIT).await;
    assert_eq!(c["failure_reason"], "pin_attempts_exceeded", "round {round}: {c}");
    assert_eq!(w.raw("balance"), "11000.00", "round {round}");
}
