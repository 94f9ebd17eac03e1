//! Contract section 11, USSD (scope `ussd`): every menu branch end to end in live mode, with
//! real wallets and PINs (operator opens the wallet and sets the PIN, an agent cashes in, a
//! merchant pushes a live charge, the gateway's live token drives the menu).

use std::time::Duration;

use serde_json::{json, Value};

use crate::harness::{assert_screen, msisdn, ok, problem_strict, raw_items, raw_member, session_id, Answer, Cast, Db, TestApp};

crate::on_both!(
    main_menu_and_balance,
    approving_a_charge_completes_it,
    declining_a_charge,
    three_wrong_pins_lock_the_wallet_and_decline_its_prompts,
    sending_money_to_another_wallet,
    changing_the_pin_over_ussd,
    kyc_tier_and_limits_screen,
    unknown_number_is_sent_to_an_agent,
    locked_wallet_is_told_so,
    gateway_retry_replays_the_screen_and_acts_once,
    form_and_json_bodies_and_a_plus_prefixed_number,
    wrong_media_type_and_wrong_token_are_refused,
    bad_inputs_answer_invalid_and_keep_the_screen,
    two_sessions_approving_one_charge_at_once_pay_once,
    a_long_list_of_approvals_fits_one_screen,
    pay_merchant_with_an_unknown_pay_code,
    a_send_whose_session_update_was_lost_is_not_sent_twice,
    a_menu_hop_racing_the_next_never_moves_the_session_back,
);

const WAIT: Duration = Duration::from_secs(10);
const MAIN: &str = "CON Malipo\n1. Send money\n2. Pay merchant\n3. Approve payments\n4. My balance\n5. My account";
const PIN: &str = "4826";
const WRONG: &str = "7391";

fn charge_path(r: &str) -> String {
    format!("/partner/charges/{r}")
}

/// The wallet's statement lines.
async fn statement(app: &TestApp, cast: &Cast, n: &str) -> Vec<String> {
    let a = ok(app.get_answer(&cast.operator, &format!("/wallets/{n}/transactions?limit=100")).await, "statement");
    raw_items(&a.raw("data"))
}

async fn main_menu_and_balance(db: Db) {
    let app = TestApp::shared(db);
    let cast = Cast::live(app).await;
    let n = cast.customer(app, "5000", PIN, "1234.50").await;
    let s = cast.dial(app, &n, &["4", PIN]).await;
    assert_eq!(s[0], MAIN);
    assert!(s[1].starts_with("CON ") && s[1].contains("PIN"), "{s:?}");
    assert_eq!(s[2], "END Your balance is KES 1,234.50");
    // Another session answers the same.
    let s = cast.dial(app, &n, &["4", PIN]).await;
    assert_eq!(s[2], "END Your balance is KES 1,234.50");
    // Asking for the balance moves nothing.
    assert_eq!(cast.wallet(app, &n).await.raw("balance"), "1234.50");
    app.assert_ledger_ok().await;
}

async fn approving_a_charge_completes_it(db: Db) {
    let app = TestApp::shared(db);
    let cast = Cast::live(app).await;
    let n = cast.customer(app, "5001", PIN, "1000").await;
    let r = cast.charge(app, &n, "250").await;
    let s = cast.dial(app, &n, &["3", "1", "1", PIN]).await;
    assert!(s[1].starts_with("CON ") && s[1].contains("1. Test Org KES 250.00"), "{s:?}");
    assert!(s[2].contains("KES 250.00") && s[2].contains("1. Approve") && s[2].contains("2. Decline"), "{s:?}");
    assert!(s[3].starts_with("CON ") && s[3].contains("PIN"), "{s:?}");
    assert!(s[4].starts_with("END ") && s[4].contains("approved"), "{s:?}");
    let c = app.wait_for(&cast.merchant_token, &r, "completed", WAIT).await;
    assert!(c["transaction_id"].as_str().unwrap().starts_with("tx_"), "{c}");
    assert_eq!(c["failure_reason"], Value::Null);
    let charge = app.get_answer(&cast.merchant_token, &charge_path(&r)).await;
    assert_eq!(charge.raw("fee"), "2.00");
    // The merchant got amount - fee; the wallet paid exactly the amount.
    assert_eq!(cast.merchant_available(app).await, "248.00");
    let w = cast.wallet(app, &n).await;
    assert_eq!(w.raw("balance"), "750.00");
    assert_eq!(w.raw("available"), "750.00");
    assert_eq!(crate::harness::raw_at(&w.text, &["limits", "daily_used"]), "250.00");
    // Nothing left to approve.
    let s = cast.dial(app, &n, &["3"]).await;
    assert!(s[1].starts_with("END "), "{s:?}");
    app.assert_ledger_ok().await;
}

async fn declining_a_charge(db: Db) {
    let app = TestApp::shared(db);
    let cast = Cast::live(app).await;
    let n = cast.customer(app, "5002", PIN, "1000").await;
    let r = cast.charge(app, &n, "300").await;
    let s = cast.dial(app, &n, &["3", "1", "2"]).await;
    assert!(s[3].starts_with("END ") && s[3].contains("declined"), "{s:?}");
    let c = app.wait_for(&cast.merchant_token, &r, "declined", WAIT).await;
    assert_eq!(c["failure_reason"], "declined_by_customer");
    assert_eq!(cast.wallet(app, &n).await.raw("balance"), "1000.00");
    assert_eq!(cast.merchant_available(app).await, "0.00");
    let s = cast.dial(app, &n, &["3"]).await;
    assert!(s[1].starts_with("END ") && s[1].contains("no payments"), "{s:?}");
    app.assert_ledger_ok().await;
}

async fn three_wrong_pins_lock_the_wallet_and_decline_its_prompts(db: Db) {
    let app = TestApp::shared(db);
    let cast = Cast::live(app).await;
    let n = cast.customer(app, "5003", PIN, "1000").await;
    let r = cast.charge(app, &n, "250").await;
    let other = cast.charge(app, &n, "100").await;
    let s = cast.dial(app, &n, &["3", "1", "1", WRONG, WRONG, WRONG]).await;
    assert!(s[4].starts_with("CON ") && s[4].contains("Wrong PIN") && s[4].contains("2 attempts left"), "{s:?}");
    assert!(s[5].starts_with("CON ") && s[5].contains("Wrong PIN") && s[5].contains("1 attempt left"), "{s:?}");
    assert!(s[6].starts_with("END ") && s[6].contains("locked"), "{s:?}");
    for id in [&r, &other] {
        let c = app.wait_for(&cast.merchant_token, id, "declined", WAIT).await;
        assert_eq!(c["failure_reason"], "pin_attempts_exceeded", "{c}");
    }
    let w = cast.wallet(app, &n).await;
    assert_eq!(w.json["state"], "locked");
    assert!(w.json["lock_reason"].is_string(), "{}", w.text);
    assert_eq!(w.raw("balance"), "1000.00");
    // The next session is told at once.
    let s = cast.dial(app, &n, &[]).await;
    assert!(s[0].starts_with("END ") && s[0].contains("locked"), "{s:?}");
    // And the right PIN no longer works anywhere: the back office refuses a PIN change too.
    let body = json!({"new_pin": "0582", "current_pin": PIN});
    problem_strict(app.post(&cast.operator, &format!("/wallets/{n}/pin"), &body, Some(&crate::harness::key())).await, 422, "wallet_locked")
        .await;
    assert_eq!(cast.merchant_available(app).await, "0.00");
    app.assert_ledger_ok().await;
}

async fn sending_money_to_another_wallet(db: Db) {
    let app = TestApp::shared(db);
    let cast = Cast::live(app).await;
    let from = cast.customer(app, "5004", PIN, "5000").await;
    let to = cast.customer(app, "5005", "7391", "0").await;
    let s = cast.dial(app, &from, &["1", &to, "1000", PIN]).await;
    assert!(s[1].contains("phone number"), "{s:?}");
    assert!(s[2].contains("amount") && s[2].contains("KES"), "{s:?}");
    assert!(s[3].contains("KES 1,000.00") && s[3].contains("Fee KES 13.00") && s[3].contains("PIN"), "{s:?}");
    assert!(s[4].starts_with("END ") && s[4].contains("KES 1,000.00"), "{s:?}");
    // The sender paid amount + fee (13.00 for 500.01..1000); the recipient got the amount.
    assert_eq!(cast.wallet(app, &from).await.raw("balance"), "3987.00");
    assert_eq!(cast.wallet(app, &to).await.raw("balance"), "1000.00");
    let sent = statement(app, &cast, &from).await;
    let last = sent.last().unwrap();
    assert_eq!(raw_member(last, "type"), "\"p2p\"", "{last}");
    assert_eq!(raw_member(last, "amount"), "-1013.00", "{last}");
    assert_eq!(raw_member(last, "balance_after"), "3987.00", "{last}");
    let received = statement(app, &cast, &to).await;
    assert_eq!(received.len(), 1);
    assert_eq!(raw_member(&received[0], "type"), "\"p2p\"");
    assert_eq!(raw_member(&received[0], "amount"), "1000.00");
    // More than the balance: refused, nothing moves.
    let s = cast.dial(app, &from, &["1", &to, "4000", PIN]).await;
    assert!(s[4].starts_with("END "), "{s:?}");
    assert_eq!(cast.wallet(app, &from).await.raw("balance"), "3987.00");
    assert_eq!(cast.wallet(app, &to).await.raw("balance"), "1000.00");
    // A number without a wallet, or one's own number: the session goes no further.
    let s = cast.dial(app, &from, &["1", &msisdn("5006")]).await;
    assert!(!s[2].contains("Enter amount"), "{s:?}");
    let s = cast.dial(app, &from, &["1", &from]).await;
    assert!(s[2].starts_with("CON ") && !s[2].contains("Enter amount"), "{s:?}");
    app.assert_ledger_ok().await;
}

async fn changing_the_pin_over_ussd(db: Db) {
    let app = TestApp::shared(db);
    let cast = Cast::live(app).await;
    let n = cast.customer(app, "5007", PIN, "500").await;
    let s = cast.dial(app, &n, &["5", "1", PIN, "5937", "5937"]).await;
    assert!(s[1].contains("1. Change PIN") && s[1].contains("2. KYC tier and limits"), "{s:?}");
    assert!(s[2].contains("current PIN"), "{s:?}");
    assert!(s[3].contains("new PIN"), "{s:?}");
    assert!(s[4].contains("Confirm"), "{s:?}");
    assert!(s[5].starts_with("END ") && s[5].contains("changed"), "{s:?}");
    // The old PIN is now a wrong PIN; the new one works.
    let s = cast.dial(app, &n, &["4", PIN]).await;
    assert!(s[2].starts_with("CON ") && s[2].contains("Wrong PIN") && s[2].contains("2 attempts left"), "{s:?}");
    let s = cast.dial(app, &n, &["4", "5937"]).await;
    assert_eq!(s[2], "END Your balance is KES 500.00");
    // A weak new PIN, a mismatched confirmation: asked again, the PIN unchanged.
    let s = cast.dial(app, &n, &["5", "1", "5937", "1234", "0582", "0583"]).await;
    assert!(s[4].starts_with("CON ") && s[4].contains("easy"), "{s:?}");
    assert!(s[6].starts_with("CON ") && s[6].contains("do not match"), "{s:?}");
    // The back office sees the same PIN: it is one PIN for every channel.
    let body = json!({"new_pin": "0582", "current_pin": "5937"});
    ok(app.post_new(&cast.operator, &format!("/wallets/{n}/pin"), &body).await, "change with the USSD PIN");
    app.assert_ledger_ok().await;
}

async fn kyc_tier_and_limits_screen(db: Db) {
    let app = TestApp::shared(db);
    let cast = Cast::live(app).await;
    let n = cast.customer(app, "5008", PIN, "1000").await;
    let s = cast.dial(app, &n, &["5", "2"]).await;
    let screen = &s[2];
    assert!(screen.starts_with("END ") && screen.contains("tier 1"), "{s:?}");
    assert!(screen.contains("KES 150,000.00") && screen.contains("KES 300,000.00"), "{s:?}");
    // A tier-0 wallet with a payment made today shows what it used.
    let m = msisdn("5009");
    cast.open_wallet(app, &m, false).await;
    cast.set_pin(app, &m, PIN).await;
    cast.cash_in(app, &m, "1000").await;
    let r = cast.charge(app, &m, "250").await;
    cast.dial(app, &m, &["3", "1", "1", PIN]).await;
    app.wait_for(&cast.merchant_token, &r, "completed", WAIT).await;
    let s = cast.dial(app, &m, &["5", "2"]).await;
    let screen = &s[2];
    assert!(screen.contains("tier 0"), "{s:?}");
    assert!(screen.contains("KES 5,000.00") && screen.contains("KES 10,000.00") && screen.contains("KES 20,000.00"), "{s:?}");
    assert!(screen.contains("KES 250.00"), "daily used: {s:?}");
    app.assert_ledger_ok().await;
}

async fn unknown_number_is_sent_to_an_agent(db: Db) {
    let app = TestApp::shared(db);
    let cast = Cast::live(app).await;
    let s = cast.dial(app, &msisdn("5010"), &[]).await;
    assert!(s[0].starts_with("END ") && s[0].contains("agent"), "{s:?}");
    // A wallet without a PIN cannot use the menu either.
    let n = msisdn("5011");
    cast.open_wallet(app, &n, true).await;
    let s = cast.dial(app, &n, &[]).await;
    assert!(s[0].starts_with("END ") && s[0].contains("PIN"), "{s:?}");
    app.assert_ledger_ok().await;
}

async fn locked_wallet_is_told_so(db: Db) {
    let app = TestApp::shared(db);
    let cast = Cast::live(app).await;
    let n = cast.customer(app, "5012", PIN, "1000").await;
    ok(app.post_new(&cast.operator, &format!("/wallets/{n}/lock"), &json!({"reason": "fraud review"})).await, "lock");
    let s = cast.dial(app, &n, &[]).await;
    assert!(s[0].starts_with("END ") && s[0].contains("locked"), "{s:?}");
    // Locked in the middle of a session: the next PIN is refused.
    ok(app.post_new(&cast.operator, &format!("/wallets/{n}/unlock"), &json!({"reason": "cleared"})).await, "unlock");
    let session = session_id();
    let s = cast.dial_in(app, &session, &n, &["4"]).await;
    assert!(s[1].starts_with("CON "), "{s:?}");
    ok(app.post_new(&cast.operator, &format!("/wallets/{n}/lock"), &json!({"reason": "again"})).await, "lock again");
    let last = app.ussd_hop(&cast.gateway, &session, &n, &format!("4*{PIN}")).await;
    assert!(last.starts_with("END ") && last.contains("locked"), "{last:?}");
    app.assert_ledger_ok().await;
}

async fn gateway_retry_replays_the_screen_and_acts_once(db: Db) {
    let app = TestApp::shared(db);
    let cast = Cast::live(app).await;
    let n = cast.customer(app, "5013", PIN, "1000").await;
    let r = cast.charge(app, &n, "250").await;
    let session = session_id();
    let first = app.ussd_hop(&cast.gateway, &session, &n, "").await;
    assert_eq!(app.ussd_hop(&cast.gateway, &session, &n, "").await, first, "the first request repeated");
    let list = app.ussd_hop(&cast.gateway, &session, &n, "3").await;
    assert_eq!(app.ussd_hop(&cast.gateway, &session, &n, "3").await, list);
    app.ussd_hop(&cast.gateway, &session, &n, "3*1").await;
    app.ussd_hop(&cast.gateway, &session, &n, "3*1*1").await;
    let text = format!("3*1*1*{PIN}");
    let done = app.ussd_hop(&cast.gateway, &session, &n, &text).await;
    assert!(done.starts_with("END ") && done.contains("approved"), "{done:?}");
    for _ in 0..2 {
        assert_eq!(app.ussd_hop(&cast.gateway, &session, &n, &text).await, done, "a retry replays the last screen");
    }
    app.wait_for(&cast.merchant_token, &r, "completed", WAIT).await;
    assert_eq!(cast.wallet(app, &n).await.raw("balance"), "750.00", "debited once");
    assert_eq!(cast.merchant_available(app).await, "248.00", "paid once");
    // A retried wrong PIN is counted once.
    let m = cast.customer(app, "5014", PIN, "100").await;
    let session = session_id();
    cast.dial_in(app, &session, &m, &["4"]).await;
    let wrong = format!("4*{WRONG}");
    let once = app.ussd_hop(&cast.gateway, &session, &m, &wrong).await;
    assert!(once.contains("2 attempts left"), "{once:?}");
    assert_eq!(app.ussd_hop(&cast.gateway, &session, &m, &wrong).await, once);
    assert_eq!(app.ussd_hop(&cast.gateway, &session, &m, &wrong).await, once);
    assert_eq!(cast.wallet(app, &m).await.json["state"], "active");
    let next = app.ussd_hop(&cast.gateway, &session, &m, &format!("{wrong}*{WRONG}")).await;
    assert!(next.starts_with("CON ") && next.contains("1 attempt left"), "{next:?}");
    app.assert_ledger_ok().await;
}

async fn form_and_json_bodies_and_a_plus_prefixed_number(db: Db) {
    let app = TestApp::shared(db);
    let cast = Cast::live(app).await;
    let n = cast.customer(app, "5015", PIN, "42").await;
    let session = session_id();
    // JSON for the first hop, a form for the next: the same fields either way.
    let body = json!({"sessionId": session, "serviceCode": "*384*1#", "phoneNumber": n, "text": "", "networkCode": "63902"});
    let r = app.http.post(app.url("/ussd")).bearer_auth(&cast.gateway).json(&body).send().await.unwrap();
    assert_eq!(assert_screen(&Answer::of(r).await, ""), MAIN);
    let form = [("sessionId", session.as_str()), ("serviceCode", "*384*1#"), ("phoneNumber", n.as_str()), ("text", "4")];
    let s = assert_screen(&Answer::of(app.ussd_form(&cast.gateway, &form).await).await, "4");
    assert!(s.starts_with("CON ") && s.contains("PIN"), "{s:?}");
    let body = json!({"sessionId": session, "serviceCode": "*384*1#", "phoneNumber": n, "text": format!("4*{PIN}")});
    let r = app.http.post(app.url("/ussd")).bearer_auth(&cast.gateway).json(&body).send().await.unwrap();
    assert_eq!(assert_screen(&Answer::of(r).await, "4*PIN"), "END Your balance is KES 42.00");
    // A `+` before the number, as gateways send it; networkCode is optional.
    let plus = format!("+{n}");
    let s = cast.dial(app, &plus, &["4", PIN]).await;
    assert_eq!(s[0], MAIN);
    assert_eq!(s[2], "END Your balance is KES 42.00");
    let form = [("sessionId", session_id()), ("serviceCode", "*384*1#".into()), ("phoneNumber", plus.clone()), ("text", String::new())];
    let form: Vec<(&str, &str)> = form.iter().map(|(k, v)| (*k, v.as_str())).collect();
    assert_eq!(assert_screen(&Answer::of(app.ussd_form(&cast.gateway, &form).await).await, ""), MAIN);
    app.assert_ledger_ok().await;
}

async fn wrong_media_type_and_wrong_token_are_refused(db: Db) {
    let app = TestApp::shared(db);
    let cast = Cast::live(app).await;
    let n = cast.customer(app, "5016", PIN, "0").await;
    let body = format!("sessionId={}&serviceCode=*384*1%23&phoneNumber={n}&text=", session_id());
    let r = app.send(reqwest::Method::POST, Some(&cast.gateway), "/ussd", Some("text/plain"), body.clone()).await;
    problem_strict(r, 415, "unsupported_media_type").await;
    // The same body as a form is fine.
    let r = app.send(reqwest::Method::POST, Some(&cast.gateway), "/ussd", Some("application/x-www-form-urlencoded"), body).await;
    assert_eq!(assert_screen(&Answer::of(r).await, ""), MAIN);
    // Tokens without the ussd scope.
    let form = [("sessionId", "s-1"), ("serviceCode", "*384*1#"), ("phoneNumber", n.as_str()), ("text", "")];
    for token in [&cast.merchant_token, &cast.operator, &cast.agent_token] {
        problem_strict(app.ussd_form(token, &form).await, 403, "insufficient_scope").await;
    }
    let r = app.http.post(app.url("/ussd")).form(&form).send().await.unwrap();
    assert_eq!(r.status(), 401);
    // A malformed callback: no usable phone number.
    let bad = [("sessionId", "s-2"), ("serviceCode", "*384*1#"), ("phoneNumber", "12"), ("text", "")];
    let r = app.ussd_form(&cast.gateway, &bad).await;
    assert_eq!(r.status(), 422, "a callback without a valid phoneNumber");
    app.assert_ledger_ok().await;
}

async fn bad_inputs_answer_invalid_and_keep_the_screen(db: Db) {
    let app = TestApp::shared(db);
    let cast = Cast::live(app).await;
    let n = cast.customer(app, "5017", PIN, "100").await;
    // Letters, an out-of-range choice, then an empty hop on the recipient screen.
    let s = cast.dial(app, &n, &["x", "9", "1", ""]).await;
    for (i, screen) in s.iter().enumerate().skip(1) {
        if i == 3 {
            assert!(screen.starts_with("CON ") && screen.contains("phone number"), "{s:?}");
            continue;
        }
        assert!(screen.starts_with("CON ") && screen.contains("Invalid"), "hop {i}: {s:?}");
    }
    assert!(s[1].contains("1. Send money"), "the menu is shown again: {s:?}");
    // An out-of-range approval, a bad amount, a malformed PIN (not an attempt).
    cast.charge(app, &n, "50").await;
    let s = cast.dial(app, &n, &["3", "7"]).await;
    assert!(s[2].starts_with("CON ") && s[2].contains("Invalid") && s[2].contains("1. "), "{s:?}");
    let to = cast.customer(app, "5018", PIN, "0").await;
    let s = cast.dial(app, &n, &["1", &to, "abc", "1.001"]).await;
    assert!(s[3].starts_with("CON ") && s[3].contains("Invalid"), "{s:?}");
    assert!(s[4].starts_with("CON ") && s[4].contains("Invalid"), "{s:?}");
    let s = cast.dial(app, &n, &["4", "48a6", "482", PIN]).await;
    assert!(s[2].starts_with("CON ") && s[2].contains("Invalid"), "{s:?}");
    assert!(s[3].starts_with("CON ") && s[3].contains("Invalid"), "{s:?}");
    assert_eq!(s[4], "END Your balance is KES 100.00");
    app.assert_ledger_ok().await;
}

async fn two_sessions_approving_one_charge_at_once_pay_once(db: Db) {
    let app = TestApp::shared(db);
    let cast = Cast::live(app).await;
    let n = cast.customer(app, "5019", PIN, "1000").await;
    let r = cast.charge(app, &n, "250").await;
    let (a, b) = (session_id(), session_id());
    cast.dial_in(app, &a, &n, &["3", "1", "1"]).await;
    cast.dial_in(app, &b, &n, &["3", "1", "1"]).await;
    let text = format!("3*1*1*{PIN}");
    let (x, y) = tokio::join!(app.ussd_hop(&cast.gateway, &a, &n, &text), app.ussd_hop(&cast.gateway, &b, &n, &text));
    assert!(x.starts_with("END ") && y.starts_with("END "), "{x:?} / {y:?}");
    let approved = [&x, &y].iter().filter(|s| s.contains("approved")).count();
    assert_eq!(approved, 1, "exactly one session approves: {x:?} / {y:?}");
    let c = app.wait_for(&cast.merchant_token, &r, "completed", WAIT).await;
    assert!(c["transaction_id"].is_string());
    assert_eq!(cast.wallet(app, &n).await.raw("balance"), "750.00", "debited once");
    assert_eq!(cast.merchant_available(app).await, "248.00", "paid once");
    let lines = statement(app, &cast, &n).await;
    assert_eq!(lines.len(), 2, "the cash-in and one payment: {lines:?}");
    app.assert_ledger_ok().await;
}

async fn a_long_list_of_approvals_fits_one_screen(db: Db) {
    let app = TestApp::shared(db);
    let cast = Cast::live(app).await;
    let n = cast.customer(app, "5020", PIN, "1000").await;
    let mut refs = vec![];
    for i in 0..7 {
        refs.push(cast.charge(app, &n, &format!("{}.{i}5", 100_000 + i)).await);
    }
    // Each screen is checked to be at most 182 characters by the harness.
    let s = cast.dial(app, &n, &["3", "9"]).await;
    assert!(s[1].starts_with("CON ") && s[1].contains("1. Test Org KES 100,000.05"), "oldest first: {s:?}");
    assert!(!s[1].contains("6. "), "at most five listed: {s:?}");
    assert!(s[2].starts_with("CON ") && s[2].contains("Invalid"), "{s:?}");
    // Declining the first leaves the others, listed from the next oldest.
    let s = cast.dial(app, &n, &["3", "1", "2"]).await;
    assert!(s[3].contains("declined"), "{s:?}");
    app.wait_for(&cast.merchant_token, &refs[0], "declined", WAIT).await;
    let s = cast.dial(app, &n, &["3"]).await;
    assert!(s[1].contains("1. Test Org KES 100,001.15"), "{s:?}");
    for r in &refs[1..] {
        assert_eq!(app.get_json(&cast.merchant_token, &charge_path(r)).await["state"], "pending");
    }
    app.assert_ledger_ok().await;
}

async fn pay_merchant_with_an_unknown_pay_code(db: Db) {
    let app = TestApp::shared(db);
    let cast = Cast::live(app).await;
    let n = cast.customer(app, "5021", PIN, "1000").await;
    // A malformed code is asked for again; a well-formed code no request ever had ends the
    // session before any PIN is asked for.
    let s = cast.dial(app, &n, &["2", "12", "482913"]).await;
    assert!(s[1].starts_with("CON ") && s[1].contains("pay code"), "{s:?}");
    assert!(s[2].starts_with("CON ") && s[2].contains("Invalid"), "{s:?}");
    assert_eq!(s[3], "END No payment request has pay code 482913.", "{s:?}");
    assert_eq!(cast.wallet(app, &n).await.raw("balance"), "1000.00");
    app.assert_ledger_ok().await;
}

/// The stored session of the cast's gateway (read and written through the platform's store).
async fn session_row(app: &TestApp, cast: &Cast, sid: &str) -> malipo_service::UssdSession {
    let (p, org, sid) = (app.platform.clone(), malipo_core::OrgId::parse(&cast.gateway_org_id).unwrap(), sid.to_owned());
    let mode = cast.mode;
    tokio::task::spawn_blocking(move || malipo_service::write(p.store(), |tx| Ok(tx.ussd_session(&org, mode, &sid)?)))
        .await
        .unwrap()
        .unwrap()
        .expect("the session is stored")
}

async fn a_send_whose_session_update_was_lost_is_not_sent_twice(db: Db) {
    let app = TestApp::shared(db);
    let cast = Cast::live(app).await;
    let from = cast.customer(app, "5031", PIN, "5000").await;
    let to = cast.customer(app, "5032", WRONG, "0").await;
    let sid = session_id();
    for text in ["".to_owned(), "1".to_owned(), format!("1*{to}"), format!("1*{to}*1000")] {
        app.ussd_hop(&cast.gateway, &sid, &from, &text).await;
    }
    let before_pin = session_row(app, &cast, &sid).await;
    let pin_text = format!("1*{to}*1000*{PIN}");
    let first = app.ussd_hop(&cast.gateway, &sid, &from, &pin_text).await;
    assert!(first.starts_with("END Sent KES 1,000.00"), "{first:?}");
    // The transfer committed, then the session's last update was lost (a database failure
    // between the two): the session is back where it stood before the PIN, so the gateway's
    // retry is handled afresh and runs the send again.
    let p = app.platform.clone();
    tokio::task::spawn_blocking(move || malipo_service::write(p.store(), |tx| Ok(tx.put_ussd_session(&before_pin)?)))
        .await
        .unwrap()
        .unwrap();
    let again = app.ussd_hop(&cast.gateway, &sid, &from, &pin_text).await;
    assert_eq!(again, first, "the retry answers the first transfer");
    assert_eq!(cast.wallet(app, &from).await.raw("balance"), "3987.00", "sent once");
    assert_eq!(cast.wallet(app, &to).await.raw("balance"), "1000.00", "received once");
    let p2p = statement(app, &cast, &from).await.iter().filter(|l| raw_member(l, "type") == "\"p2p\"").count();
    assert_eq!(p2p, 1);
    app.assert_ledger_ok().await;
}

/// Menu hops are answered outside a transaction and written by compare-and-swap: "3" and "3*1"
/// sent at once (a gateway's late retry racing the next step) leave the session either two
/// inputs on (the prompt) or, when "3*1" came after "3" was stored, one (the list: "3*1" only
/// moved through the menu, so it wrote nothing), however they interleave; and the next hop
/// answers from there. (That a slower "3" never writes over "3*1" is the compare-and-swap's
/// contract case: from here the two look alike.)
async fn a_menu_hop_racing_the_next_never_moves_the_session_back(db: Db) {
    let app = TestApp::shared(db);
    let cast = Cast::live(app).await;
    let n = cast.customer(app, "5033", PIN, "1000").await;
    cast.charge(app, &n, "250").await;
    for round in 0..20 {
        let sid = session_id();
        assert_eq!(app.ussd_hop(&cast.gateway, &sid, &n, "").await, MAIN);
        let (list, prompt) = tokio::join!(app.ussd_hop(&cast.gateway, &sid, &n, "3"), app.ussd_hop(&cast.gateway, &sid, &n, "3*1"));
        assert!(prompt.starts_with("CON Pay KES 250.00 to "), "round {round}: {prompt:?}");
        assert!(list.starts_with("CON Approve payments\n1. ") || list.contains("out of step"), "round {round}: {list:?}");
        let stored = session_row(app, &cast, &sid).await;
        let at = (stored.hops, stored.last_screen.as_str());
        assert!(at == (2, prompt.as_str()) || (at == (1, list.as_str()) && list.starts_with("CON ")), "round {round}: {at:?}");
        let next = app.ussd_hop(&cast.gateway, &sid, &n, "3*1*1").await;
        assert_eq!(next, "CON Enter PIN to approve:", "round {round}");
    }
}
