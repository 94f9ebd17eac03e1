//! Contract section 11, agents (scope `agent`): cash-in, cash-out, float.

use std::time::Duration;

use malipo_core::Mode;
use serde_json::{json, Value};

use crate::harness::{
    field_error, field_problem, is_utc_timestamp, key, msisdn, ok, problem_strict, raw_items, raw_member, Answer, Cast, Creds, Db, TestApp,
};

crate::on_both!(
    cash_in_moves_money_from_the_float_to_the_wallet,
    cash_in_replays_under_its_key,
    cash_in_per_transaction_limit_at_the_boundary,
    cash_in_max_balance_at_the_boundary_in_live_mode,
    cash_in_needs_enough_float,
    concurrent_cash_ins_never_pass_the_max_balance,
    cash_in_to_a_locked_wallet_is_refused,
    cash_in_validates_its_fields,
    cash_out_approved_over_ussd_splits_the_fee,
    cash_out_in_test_mode_follows_the_sandbox,
    cash_out_to_a_number_without_wallet_fails_in_live_mode,
    cash_out_declined_or_over_the_limit_moves_nothing,
    unknown_cash_outs_are_not_found,
    agent_endpoints_need_the_agent_scope,
);

const WAIT: Duration = Duration::from_secs(10);

async fn cash_in(app: &TestApp, cast: &Cast, n: &str, amount: &str) -> reqwest::Response {
    app.post(&cast.agent_token, "/agents/cash-in", &json!({"customer_msisdn": n, "amount": amount}), Some(&key())).await
}

async fn cash_out(app: &TestApp, cast: &Cast, n: &str, amount: &str) -> Answer {
    ok(app.post_new(&cast.agent_token, "/agents/cash-out", &json!({"customer_msisdn": n, "amount": amount})).await, "POST /agents/cash-out")
}

async fn float(app: &TestApp, cast: &Cast) -> Answer {
    ok(app.get_answer(&cast.agent_token, "/agents/float").await, "GET /agents/float")
}

/// The wallet's statement lines (one page of up to 100).
async fn statement(app: &TestApp, cast: &Cast, n: &str) -> Vec<String> {
    let a = ok(app.get_answer(&cast.operator, &format!("/wallets/{n}/transactions?limit=100")).await, "statement");
    raw_items(&a.raw("data"))
}

async fn cash_in_moves_money_from_the_float_to_the_wallet(db: Db) {
    let app = TestApp::shared(db);
    let cast = Cast::live(app).await;
    let f = float(app, &cast).await;
    assert_eq!(f.json["account"], "agent_float");
    assert!(f.json["account_id"].as_str().unwrap().starts_with("acc_"), "{}", f.text);
    assert_eq!(f.json["currency"], "KES");
    assert_eq!(f.raw("available"), "100000.00");
    assert_eq!(f.raw("pending"), "0.00");
    assert!(is_utc_timestamp(f.json["as_of"].as_str().unwrap()), "{}", f.text);
    let n = msisdn("4000");
    cast.open_wallet(app, &n, true).await;
    let a = ok(Answer::of(cash_in(app, &cast, &n, "2500").await).await, "cash-in");
    let tx = a.json["transaction_id"].as_str().unwrap().to_owned();
    assert!(tx.starts_with("tx_"), "{}", a.text);
    assert_eq!(a.json["type"], "cash_in");
    assert_eq!(a.json["state"], "completed");
    assert_eq!(a.json["mode"], "live");
    assert_eq!(a.json["customer_msisdn"], n.as_str());
    assert_eq!(a.raw("amount"), "2500.00");
    assert_eq!(a.raw("fee"), "0.00");
    assert_eq!(a.json["currency"], "KES");
    assert_eq!(a.raw("float_balance"), "97500.00");
    assert!(is_utc_timestamp(a.json["created_at"].as_str().unwrap()), "{}", a.text);
    // The float went down, the wallet up, and the statement shows the cash-in.
    let f = float(app, &cast).await;
    assert_eq!(f.raw("available"), "97500.00");
    let w = cast.wallet(app, &n).await;
    assert_eq!(w.raw("balance"), "2500.00");
    assert_eq!(w.raw("available"), "2500.00");
    let lines = statement(app, &cast, &n).await;
    assert_eq!(lines.len(), 1);
    assert_eq!(raw_member(&lines[0], "transaction_id"), format!("\"{tx}\""));
    assert_eq!(raw_member(&lines[0], "type"), "\"cash_in\"");
    assert_eq!(raw_member(&lines[0], "amount"), "2500.00");
    assert_eq!(raw_member(&lines[0], "balance_after"), "2500.00");
    // A credit does not use the customer's daily (debit) limit.
    assert_eq!(crate::harness::raw_at(&w.text, &["limits", "daily_used"]), "0.00");
    app.assert_ledger_ok().await;
}

async fn cash_in_replays_under_its_key(db: Db) {
    let app = TestApp::shared(db);
    let cast = Cast::new(app, Mode::Test, "50000").await;
    let n = msisdn("4001");
    cast.open_wallet(app, &n, true).await;
    let body = json!({"customer_msisdn": n, "amount": "1000"});
    problem_strict(app.post(&cast.agent_token, "/agents/cash-in", &body, None).await, 400, "idempotency_key_missing").await;
    let k = key();
    let first = ok(Answer::of(app.post(&cast.agent_token, "/agents/cash-in", &body, Some(&k)).await).await, "cash-in");
    for _ in 0..2 {
        let again = Answer::of(app.post(&cast.agent_token, "/agents/cash-in", &body, Some(&k)).await).await;
        assert_eq!(again.status, 200);
        assert_eq!(again.header("idempotent-replayed"), "true");
        assert_eq!(again.text, first.text);
    }
    let other = json!({"customer_msisdn": n, "amount": "1001"});
    problem_strict(app.post(&cast.agent_token, "/agents/cash-in", &other, Some(&k)).await, 422, "idempotency_key_reused").await;
    assert_eq!(cast.wallet(app, &n).await.raw("balance"), "1000.00", "paid once");
    assert_eq!(float(app, &cast).await.raw("available"), "49000.00");
    app.assert_ledger_ok().await;
}

async fn cash_in_per_transaction_limit_at_the_boundary(db: Db) {
    let app = TestApp::shared(db);
    // Test mode: the tier's per-transaction limit applies to every credit.
    let cast = Cast::new(app, Mode::Test, "50000").await;
    let n = msisdn("4002");
    cast.open_wallet(app, &n, false).await;
    problem_strict(cash_in(app, &cast, &n, "5000.01").await, 422, "limit_exceeded").await;
    assert_eq!(cast.wallet(app, &n).await.raw("balance"), "0.00");
    assert_eq!(float(app, &cast).await.raw("available"), "50000.00", "a refused cash-in moves nothing");
    ok(Answer::of(cash_in(app, &cast, &n, "5000.00").await).await, "exactly the limit");
    assert_eq!(cast.wallet(app, &n).await.raw("balance"), "5000.00");
    // A tier-1 wallet takes more at once.
    let m = msisdn("4003");
    cast.open_wallet(app, &m, true).await;
    ok(Answer::of(cash_in(app, &cast, &m, "5000.01").await).await, "tier 1");
    app.assert_ledger_ok().await;
}

async fn cash_in_max_balance_at_the_boundary_in_live_mode(db: Db) {
    let app = TestApp::shared(db);
    let cast = Cast::live(app).await;
    let n = msisdn("4004");
    cast.open_wallet(app, &n, false).await;
    for amount in ["5000", "5000", "5000", "4999.99"] {
        ok(Answer::of(cash_in(app, &cast, &n, amount).await).await, amount);
    }
    assert_eq!(cast.wallet(app, &n).await.raw("balance"), "19999.99");
    // 20,000.01 would be one minor unit above the tier-0 maximum balance.
    problem_strict(cash_in(app, &cast, &n, "0.02").await, 422, "limit_exceeded").await;
    ok(Answer::of(cash_in(app, &cast, &n, "0.01").await).await, "up to exactly the maximum");
    let w = cast.wallet(app, &n).await;
    assert_eq!(w.raw("balance"), "20000.00");
    problem_strict(cash_in(app, &cast, &n, "0.01").await, 422, "limit_exceeded").await;
    assert_eq!(cast.wallet(app, &n).await.raw("balance"), "20000.00");
    assert_eq!(float(app, &cast).await.raw("available"), "80000.00");
    app.assert_ledger_ok().await;
}

async fn cash_in_needs_enough_float(db: Db) {
    let app = TestApp::shared(db);
    let cast = Cast::new(app, Mode::Live, "100").await;
    let n = msisdn("4005");
    cast.open_wallet(app, &n, true).await;
    problem_strict(cash_in(app, &cast, &n, "100.01").await, 422, "insufficient_funds").await;
    assert_eq!(cast.wallet(app, &n).await.raw("balance"), "0.00");
    ok(Answer::of(cash_in(app, &cast, &n, "100").await).await, "the whole float");
    assert_eq!(float(app, &cast).await.raw("available"), "0.00");
    problem_strict(cash_in(app, &cast, &n, "0.01").await, 422, "insufficient_funds").await;
    assert_eq!(cast.wallet(app, &n).await.raw("balance"), "100.00");
    // An agent whose float was never funded.
    let empty = Cast::new(app, Mode::Test, "0").await;
    let m = msisdn("4006");
    empty.open_wallet(app, &m, true).await;
    problem_strict(cash_in(app, &empty, &m, "1").await, 422, "insufficient_funds").await;
    app.assert_ledger_ok().await;
}

async fn cash_in_to_a_locked_wallet_is_refused(db: Db) {
    let app = TestApp::shared(db);
    let cast = Cast::live(app).await;
    let n = msisdn("4007");
    cast.open_wallet(app, &n, true).await;
    ok(app.post_new(&cast.operator, &format!("/wallets/{n}/lock"), &json!({"reason": "lost phone"})).await, "lock");
    problem_strict(cash_in(app, &cast, &n, "100").await, 422, "wallet_locked").await;
    assert_eq!(cast.wallet(app, &n).await.raw("balance"), "0.00");
    assert_eq!(float(app, &cast).await.raw("available"), "100000.00");
    app.assert_ledger_ok().await;
}

async fn cash_in_validates_its_fields(db: Db) {
    let app = TestApp::shared(db);
    let cast = Cast::live(app).await;
    // Live mode: no wallet, no cash-in (test mode would open one).
    let nobody = msisdn("4008");
    field_problem(cash_in(app, &cast, &nobody, "100").await, "customer_msisdn", "wallet_not_found").await;
    let n = msisdn("4009");
    cast.open_wallet(app, &n, true).await;
    field_problem(cash_in(app, &cast, "25471234", "100").await, "customer_msisdn", "invalid_msisdn").await;
    for bad in ["0", "-5", "1.001", "1e3", "abc"] {
        field_problem(cash_in(app, &cast, &n, bad).await, "amount", "invalid_amount").await;
    }
    let token = &cast.agent_token;
    let post = |body: Value| async move { app.post(token, "/agents/cash-in", &body, Some(&key())).await };
    field_error(post(json!({"customer_msisdn": n})).await, "amount", Some("missing_field")).await;
    field_error(post(json!({"amount": "100"})).await, "customer_msisdn", Some("missing_field")).await;
    field_error(post(json!({"customer_msisdn": n, "amount": "100", "pin": "4826"})).await, "pin", Some("unknown_field")).await;
    // A Ugandan number: the Kenyan agent's float is in KES.
    let ug = format!("256{}", &msisdn("4010")[3..]);
    problem_strict(cash_in(app, &cast, &ug, "100").await, 422, "currency_mismatch").await;
    assert_eq!(float(app, &cast).await.raw("available"), "100000.00", "nothing moved");
    assert_eq!(cast.wallet(app, &n).await.raw("balance"), "0.00");
    app.assert_ledger_ok().await;
}

async fn cash_out_approved_over_ussd_splits_the_fee(db: Db) {
    let app = TestApp::shared(db);
    let cast = Cast::live(app).await;
    let n = cast.customer(app, "4011", "4826", "5000").await;
    assert_eq!(float(app, &cast).await.raw("available"), "95000.00");
    let a = cash_out(app, &cast, &n, "1000").await;
    let wd = a.json["withdrawal_ref"].as_str().unwrap().to_owned();
    assert!(wd.starts_with("wd_"), "{}", a.text);
    assert_eq!(a.json["state"], "pending");
    assert_eq!(a.json["mode"], "live");
    assert_eq!(a.json["customer_msisdn"], n.as_str());
    assert_eq!(a.raw("amount"), "1000.00");
    assert_eq!(a.raw("fee"), "29.00");
    assert_eq!(a.raw("agent_commission"), "19.00");
    assert_eq!(a.json["currency"], "KES");
    assert_eq!(a.json["failure_reason"], Value::Null);
    assert_eq!(a.json["transaction_id"], Value::Null);
    assert_eq!(a.json["completed_at"], Value::Null);
    for t in ["created_at", "updated_at", "expires_at"] {
        assert!(is_utc_timestamp(a.json[t].as_str().unwrap_or("")), "{t}: {}", a.text);
    }
    let path = format!("/agents/cash-out/{wd}");
    assert_eq!(app.get_json(&cast.agent_token, &path).await["state"], "pending");
    // Nothing moves before the customer approves.
    assert_eq!(float(app, &cast).await.raw("available"), "95000.00");
    assert_eq!(cast.wallet(app, &n).await.raw("balance"), "5000.00");
    // The customer approves on the phone.
    let screens = cast.dial(app, &n, &["3", "1", "1", "4826"]).await;
    assert!(screens[1].contains("1. Withdraw KES 1,000.00"), "{screens:?}");
    assert!(screens[2].contains("KES 1,000.00") && screens[2].contains("Fee KES 29.00"), "{screens:?}");
    assert!(screens[2].contains("1. Approve") && screens[2].contains("2. Decline"), "{screens:?}");
    assert!(screens[3].contains("PIN"), "{screens:?}");
    assert!(screens[4].starts_with("END ") && screens[4].contains("approved"), "{screens:?}");
    let done = app.wait_state(&cast.agent_token, &path, "completed", WAIT).await;
    assert!(done["transaction_id"].as_str().unwrap().starts_with("tx_"), "{done}");
    assert!(done["completed_at"].is_string(), "{done}");
    assert_eq!(done["failure_reason"], Value::Null);
    // The customer paid amount + fee; the float got amount + commission; the operator kept 10.
    let w = cast.wallet(app, &n).await;
    assert_eq!(w.raw("balance"), "3971.00");
    assert_eq!(w.raw("available"), "3971.00");
    let f = float(app, &cast).await;
    assert_eq!(f.raw("available"), "96019.00");
    let lines = statement(app, &cast, &n).await;
    let last = lines.last().unwrap();
    assert_eq!(raw_member(last, "type"), "\"cash_out\"", "{last}");
    assert_eq!(raw_member(last, "amount"), "-1029.00", "{last}");
    assert_eq!(raw_member(last, "balance_after"), "3971.00", "{last}");
    app.assert_ledger_ok().await;
}

async fn cash_out_in_test_mode_follows_the_sandbox(db: Db) {
    let app = TestApp::shared(db);
    let cast = Cast::new(app, Mode::Test, "50000").await;
    // An ordinary test number: approved after the sandbox delay, from a new test wallet.
    let n = msisdn("4012");
    let a = cash_out(app, &cast, &n, "2500").await;
    assert_eq!(a.json["mode"], "test");
    let wd = a.json["withdrawal_ref"].as_str().unwrap();
    let path = format!("/agents/cash-out/{wd}");
    app.wait_state(&cast.agent_token, &path, "completed", WAIT).await;
    let done = ok(app.get_answer(&cast.agent_token, &path).await, "GET cash-out");
    assert_eq!(done.raw("fee"), "29.00", "{}", done.text);
    assert_eq!(done.raw("agent_commission"), "19.00", "{}", done.text);
    // 2500 + commission 19.
    assert_eq!(float(app, &cast).await.raw("available"), "52519.00");
    // A number ending 1001 declines.
    let d = cash_out(app, &cast, &msisdn("1001"), "100").await;
    let wd = d.json["withdrawal_ref"].as_str().unwrap();
    let v = app.wait_state(&cast.agent_token, &format!("/agents/cash-out/{wd}"), "declined", WAIT).await;
    assert_eq!(v["failure_reason"], "declined_by_customer");
    assert_eq!(float(app, &cast).await.raw("available"), "52519.00");
    app.assert_ledger_ok().await;
}

async fn cash_out_to_a_number_without_wallet_fails_in_live_mode(db: Db) {
    let app = TestApp::shared(db);
    let cast = Cast::live(app).await;
    let n = msisdn("4013");
    let a = cash_out(app, &cast, &n, "500").await;
    assert_eq!(a.json["state"], "pending", "payer-side outcomes come later, never as a synchronous error");
    let wd = a.json["withdrawal_ref"].as_str().unwrap();
    let v = app.wait_state(&cast.agent_token, &format!("/agents/cash-out/{wd}"), "failed", WAIT).await;
    assert_eq!(v["failure_reason"], "payer_not_found");
    assert_eq!(v["transaction_id"], Value::Null);
    assert_eq!(float(app, &cast).await.raw("available"), "100000.00");
    app.assert_ledger_ok().await;
}

async fn unknown_cash_outs_are_not_found(db: Db) {
    let app = TestApp::shared(db);
    let cast = Cast::live(app).await;
    for id in ["wd_00000000000000000000000000000000", "wd_nope", "ch_00000000000000000000000000000000", "nonsense"] {
        problem_strict(app.get(&cast.agent_token, &format!("/agents/cash-out/{id}")).await, 404, "not_found").await;
    }
    // Another agent's cash-out, and this agent's in the other mode.
    let n = cast.customer(app, "4014", "4826", "1000").await;
    let wd = cash_out(app, &cast, &n, "500").await.json["withdrawal_ref"].as_str().unwrap().to_owned();
    let other = Cast::live(app).await;
    problem_strict(app.get(&other.agent_token, &format!("/agents/cash-out/{wd}")).await, 404, "not_found").await;
    assert_eq!(app.get_json(&cast.agent_token, &format!("/agents/cash-out/{wd}")).await["withdrawal_ref"], wd.as_str());
    let p = app.platform.clone();
    let org = malipo_core::OrgId::parse(&cast.agent.org_id).unwrap();
    let issued = tokio::task::spawn_blocking(move || p.access().issue_credential(&org, Mode::Test, None)).await.unwrap().unwrap();
    let creds = Creds { org_id: cast.agent.org_id.clone(), client_id: issued.client_id, client_secret: issued.client_secret };
    let test_token = app.token(&creds).await;
    problem_strict(app.get(&test_token, &format!("/agents/cash-out/{wd}")).await, 404, "not_found").await;
    // A charge ref is not a cash-out.
    let charge = cast.charge(app, &n, "100").await;
    problem_strict(app.get(&cast.agent_token, &format!("/agents/cash-out/{charge}")).await, 404, "not_found").await;
    app.assert_ledger_ok().await;
}

async fn agent_endpoints_need_the_agent_scope(db: Db) {
    let app = TestApp::shared(db);
    let cast = Cast::new(app, Mode::Test, "1000").await;
    let n = msisdn("4015");
    let body = json!({"customer_msisdn": n, "amount": "100"});
    for token in [&cast.merchant_token, &cast.operator, &cast.gateway] {
        problem_strict(app.post(token, "/agents/cash-in", &body, Some(&key())).await, 403, "insufficient_scope").await;
        problem_strict(app.post(token, "/agents/cash-out", &body, Some(&key())).await, 403, "insufficient_scope").await;
        problem_strict(app.get(token, "/agents/float").await, 403, "insufficient_scope").await;
        problem_strict(app.get(token, "/agents/cash-out/wd_00000000000000000000000000000000").await, 403, "insufficient_scope").await;
    }
    assert_eq!(float(app, &cast).await.raw("available"), "1000.00");
    app.assert_ledger_ok().await;
}

async fn cash_out_declined_or_over_the_limit_moves_nothing(db: Db) {
    let app = TestApp::shared(db);
    let cast = Cast::live(app).await;
    // Tier 0: 5,000.00 per transaction.
    let n = msisdn("4016");
    cast.open_wallet(app, &n, false).await;
    cast.set_pin(app, &n, "4826").await;
    cast.cash_in(app, &n, "5000").await;
    cast.cash_in(app, &n, "5000").await;
    let over = cash_out(app, &cast, &n, "5000.01").await;
    let wd = over.json["withdrawal_ref"].as_str().unwrap();
    let v = app.wait_state(&cast.agent_token, &format!("/agents/cash-out/{wd}"), "failed", WAIT).await;
    assert_eq!(v["failure_reason"], "limit_exceeded");
    // Declined on the phone.
    let d = cash_out(app, &cast, &n, "3000").await;
    let wd = d.json["withdrawal_ref"].as_str().unwrap();
    let s = cast.dial(app, &n, &["3", "1", "2"]).await;
    assert!(s[3].starts_with("END ") && s[3].contains("declined"), "{s:?}");
    let v = app.wait_state(&cast.agent_token, &format!("/agents/cash-out/{wd}"), "declined", WAIT).await;
    assert_eq!(v["failure_reason"], "declined_by_customer");
    // Approved without the funds for amount + fee: 4,990.00 + 69.00 from a wallet holding 5,000.00.
    let m = msisdn("4017");
    cast.open_wallet(app, &m, false).await;
    cast.set_pin(app, &m, "4826").await;
    cast.cash_in(app, &m, "5000").await;
    let short = cash_out(app, &cast, &m, "4990").await;
    let wd = short.json["withdrawal_ref"].as_str().unwrap();
    let s = cast.dial(app, &m, &["3", "1", "1", "4826"]).await;
    assert!(s[4].starts_with("END ") && !s[4].contains("approved"), "{s:?}");
    let v = app.wait_state(&cast.agent_token, &format!("/agents/cash-out/{wd}"), "failed", WAIT).await;
    assert_eq!(v["failure_reason"], "insufficient_funds");
    assert_eq!(cast.wallet(app, &n).await.raw("balance"), "10000.00");
    assert_eq!(cast.wallet(app, &m).await.raw("balance"), "5000.00");
    assert_eq!(float(app, &cast).await.raw("available"), "85000.00");
    app.assert_ledger_ok().await;
}

async fn concurrent_cash_ins_never_pass_the_max_balance(db: Db) {
    let app = TestApp::shared(db);
    let cast = Cast::live(app).await;
    // Tier 0 holds at most 20,000.00: of six concurrent cash-ins of 5,000.00, four fit.
    let n = msisdn("4018");
    cast.open_wallet(app, &n, false).await;
    let answers = futures_util::future::join_all((0..6).map(|_| async { Answer::of(cash_in(app, &cast, &n, "5000").await).await })).await;
    let passed = answers.iter().filter(|a| a.status == 200).count();
    for a in answers.iter().filter(|a| a.status != 200) {
        assert_eq!((a.status, a.json["code"].as_str()), (422, Some("limit_exceeded")), "{}", a.text);
    }
    assert_eq!(passed, 4, "exactly four fit");
    assert_eq!(cast.wallet(app, &n).await.raw("balance"), "20000.00");
    assert_eq!(float(app, &cast).await.raw("available"), "80000.00");
    assert_eq!(statement(app, &cast, &n).await.len(), 4);
    app.assert_ledger_ok().await;
}
