//! Contract section 11, merchant payment requests (scope `payments`): the four endpoints and
//! their errors, and paying over USSD in live mode with real wallets and PINs ("Pay merchant"
//! with the pay code, and "Approve payments" for a request addressed to the caller): the money
//! moved once (even when several customers pay one code at once, or the gateway repeats a hop),
//! nothing moved for a cancelled, expired or paid request, the PIN rules and the limits of
//! every other channel, and a sound ledger after each.

use futures_util::future::join_all;
use serde_json::{json, Value};
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

use crate::harness::{field_error, key, msisdn, ok, problem_strict, raw_at, session_id, Answer, Cast, Db, Options, TestApp};

crate::on_both!(
    a_request_is_created_read_listed_and_cancelled,
    requests_are_refused_when_invalid_out_of_scope_or_absent,
    paying_a_pay_code_over_ussd_moves_the_money_once,
    several_customers_paying_one_code_at_once_pay_it_once,
    an_addressed_request_is_approved_or_declined_in_approve_payments,
    a_gateway_retry_of_the_pin_hop_pays_once,
    cancelled_and_expired_requests_move_no_money,
    wrong_pins_count_and_lock_the_wallet,
    limits_and_funds_are_checked_as_on_every_channel,
);

const PIN: &str = "4826";
const WRONG: &str = "7391";
/// The KES `payment_request` fee of an amount from 200.01 to 500.00, paid by the merchant.
const FEE_500: &str = "2.00";

fn path(id: &str) -> String {
    format!("/biz/requests/{id}")
}

/// `POST /biz/request` by the cast's merchant, asserting 200.
async fn ask(app: &TestApp, cast: &Cast, body: Value) -> Answer {
    ok(app.post_new(&cast.merchant_token, "/biz/request", &body).await, "POST /biz/request")
}

/// A request for `amount` (expiring in an hour): its id and pay code.
async fn open(app: &TestApp, cast: &Cast, amount: &str) -> (String, String) {
    let a = ask(app, cast, json!({"amount": amount, "reference": format!("INV-{}", &key()[..8]), "expires_in": 3600})).await;
    (a.json["request_id"].as_str().unwrap().to_owned(), a.json["pay_code"].as_str().unwrap().to_owned())
}

async fn request(app: &TestApp, cast: &Cast, id: &str) -> Answer {
    ok(app.get_answer(&cast.merchant_token, &path(id)).await, "GET /biz/requests/{id}")
}

fn seconds_between(from: &Value, to: &Value) -> i64 {
    let t = |v: &Value| OffsetDateTime::parse(v.as_str().unwrap(), &Rfc3339).unwrap();
    (t(to) - t(from)).whole_seconds()
}

async fn balance(app: &TestApp, cast: &Cast, n: &str) -> String {
    cast.wallet(app, n).await.raw("balance")
}

async fn a_request_is_created_read_listed_and_cancelled(db: Db) {
    let app = TestApp::shared(db);
    let cast = Cast::live(app).await;
    let payer = msisdn("6100");
    let idem = key();
    let body = json!({"amount": "500", "reference": "INV-1", "description": "Table 12", "payer_msisdn": payer, "expires_in": 3600});
    let a = ok(Answer::of(app.post(&cast.merchant_token, "/biz/request", &body, Some(&idem)).await).await, "create");
    let v = &a.json;
    let id = v["request_id"].as_str().unwrap();
    assert!(id.starts_with("pr_"), "{v}");
    let code = v["pay_code"].as_str().unwrap();
    assert!(code.len() == 6 && code.bytes().all(|b| b.is_ascii_digit()), "{v}");
    assert_eq!((v["state"].as_str(), v["mode"].as_str(), v["currency"].as_str()), (Some("open"), Some("live"), Some("KES")));
    assert_eq!((a.raw("amount"), a.raw("fee")), ("500.00".to_owned(), FEE_500.to_owned()));
    assert_eq!((v["reference"].as_str(), v["description"].as_str()), (Some("INV-1"), Some("Table 12")));
    assert_eq!(v["payer_msisdn"], payer.as_str());
    for absent in ["paid_by_msisdn", "transaction_id", "paid_at"] {
        assert_eq!(v[absent], Value::Null, "{absent} in {v}");
    }
    assert_eq!(seconds_between(&v["created_at"], &v["expires_at"]), 3600);
    assert_eq!(v.as_object().unwrap().len(), 15, "exactly the contract's members: {v}");
    // The same key and body: the same answer, replayed; another body: refused.
    let again = Answer::of(app.post(&cast.merchant_token, "/biz/request", &body, Some(&idem)).await).await;
    assert_eq!((again.status, again.text.as_str(), again.header("idempotent-replayed").as_str()), (200, a.text.as_str(), "true"));
    let other = json!({"amount": "501", "reference": "INV-1"});
    problem_strict(app.post(&cast.merchant_token, "/biz/request", &other, Some(&idem)).await, 422, "idempotency_key_reused").await;
    assert_eq!(request(app, &cast, id).await.json, a.json, "GET answers the object");

    // Default expiry: a day.
    let d = ask(app, &cast, json!({"amount": 250.5, "reference": "INV-2"})).await;
    assert_eq!(seconds_between(&d.json["created_at"], &d.json["expires_at"]), 86_400);
    assert_eq!((d.raw("amount"), d.raw("fee")), ("250.50".to_owned(), FEE_500.to_owned()));
    assert_ne!(d.json["pay_code"], a.json["pay_code"], "open codes differ");
    let (third, _) = open(app, &cast, "100").await;
    assert_eq!(request(app, &cast, &third).await.raw("fee"), "0.00", "the smallest band is free");

    // Pages, newest first, and the state filter.
    let page = ok(app.get_answer(&cast.merchant_token, "/biz/requests?limit=2").await, "list").json;
    assert_eq!(page["data"].as_array().unwrap().len(), 2);
    assert_eq!((page["has_more"].as_bool(), page["data"][0]["request_id"].as_str()), (Some(true), Some(third.as_str())));
    let cursor = page["next_cursor"].as_str().unwrap();
    let rest = ok(app.get_answer(&cast.merchant_token, &format!("/biz/requests?limit=2&cursor={cursor}")).await, "page 2").json;
    assert_eq!((rest["data"][0]["request_id"].as_str(), rest["has_more"].as_bool()), (Some(id), Some(false)));
    assert_eq!(rest["next_cursor"], Value::Null);

    // Cancel: idempotent; only an open request.
    let cancel = format!("{}/cancel", path(id));
    let ck = key();
    let c = ok(Answer::of(app.post(&cast.merchant_token, &cancel, &json!({}), Some(&ck)).await).await, "cancel");
    assert_eq!(c.json["state"], "cancelled");
    assert_eq!(c.json["paid_at"], Value::Null);
    let replay = Answer::of(app.post(&cast.merchant_token, &cancel, &json!({}), Some(&ck)).await).await;
    assert_eq!((replay.status, replay.text.as_str()), (200, c.text.as_str()));
    problem_strict(app.post(&cast.merchant_token, &cancel, &json!({}), Some(&key())).await, 409, "invalid_state").await;
    assert_eq!(request(app, &cast, id).await.json["state"], "cancelled");
    let only = |state: &str| format!("/biz/requests?state={state}&limit=100");
    let cancelled = ok(app.get_answer(&cast.merchant_token, &only("cancelled")).await, "cancelled").json;
    assert_eq!(cancelled["data"].as_array().unwrap().iter().map(|r| r["request_id"].as_str().unwrap()).collect::<Vec<_>>(), [id]);
    assert_eq!(ok(app.get_answer(&cast.merchant_token, &only("open")).await, "open").json["data"].as_array().unwrap().len(), 2);
    assert_eq!(ok(app.get_answer(&cast.merchant_token, &only("paid")).await, "paid").json["data"], json!([]));
    app.assert_ledger_ok().await;
}

async fn requests_are_refused_when_invalid_out_of_scope_or_absent(db: Db) {
    let app = TestApp::shared(db);
    let cast = Cast::live(app).await;
    let t = &cast.merchant_token;
    let good = json!({"amount": "500", "reference": "INV-1"});
    problem_strict(app.post(t, "/biz/request", &good, None).await, 400, "idempotency_key_missing").await;
    problem_strict(app.post("nope", "/biz/request", &good, Some(&key())).await, 401, "invalid_token").await;
    problem_strict(app.post(&cast.agent_token, "/biz/request", &good, Some(&key())).await, 403, "insufficient_scope").await;
    problem_strict(app.get(&cast.agent_token, "/biz/requests").await, 403, "insufficient_scope").await;
    let with = |member: &str, value: Value| {
        let mut body = good.clone();
        body[member] = value;
        body
    };
    for (body, field, code) in [
        (with("amount", json!("0")), "amount", "invalid_amount"),
        (with("amount", json!("1.001")), "amount", "invalid_amount"),
        (with("amount", json!("-5")), "amount", "invalid_amount"),
        (with("amount", json!("250001")), "amount", "invalid_amount"),
        (with("expires_in", json!(59)), "expires_in", "invalid_value"),
        (with("expires_in", json!(604_801)), "expires_in", "invalid_value"),
        (with("payer_msisdn", json!("12345")), "payer_msisdn", "invalid_msisdn"),
        (with("reference", json!("")), "reference", "missing_field"),
        (with("description", json!("x".repeat(101))), "description", "too_long"),
        (with("note", json!("x")), "note", "unknown_field"),
        (json!({"amount": "5"}), "reference", "missing_field"),
    ] {
        field_error(app.post(t, "/biz/request", &body, Some(&key())).await, field, Some(code)).await;
    }
    for body in [with("expires_in", json!("60")), with("expires_in", json!(60.5)), with("amount", json!(true))] {
        problem_strict(app.post(t, "/biz/request", &body, Some(&key())).await, 400, "invalid_request").await;
    }
    let ugandan = with("payer_msisdn", json!("256712345678"));
    problem_strict(app.post(t, "/biz/request", &ugandan, Some(&key())).await, 422, "currency_mismatch").await;

    let (id, _) = open(app, &cast, "50").await;
    // Another organisation's request, in either mode: absent.
    let other = app.merchant_token().await.1;
    let test_mode = app.token(&app.org("merchant", "KE").await).await;
    for (token, p) in [(t, path("pr_0000000000000000000000000000abcd")), (t, path("nothing")), (&other, path(&id)), (&test_mode, path(&id))]
    {
        problem_strict(app.get(token, &p).await, 404, "not_found").await;
    }
    for token in [&other, &test_mode] {
        problem_strict(app.post(token, &format!("{}/cancel", path(&id)), &json!({}), Some(&key())).await, 404, "not_found").await;
    }
    field_error(
        app.post(t, &format!("{}/cancel", path(&id)), &json!({"reason": "x"}), Some(&key())).await,
        "reason",
        Some("unknown_field"),
    )
    .await;
    problem_strict(app.post(t, &format!("{}/cancel", path(&id)), &json!({}), None).await, 400, "idempotency_key_missing").await;
    for q in ["state=pending", "limit=0", "limit=101", "cursor=nope"] {
        problem_strict(app.get(t, &format!("/biz/requests?{q}")).await, 400, "invalid_request").await;
    }
    assert_eq!(request(app, &cast, &id).await.json["state"], "open", "nothing changed it");
    app.assert_ledger_ok().await;
}

async fn paying_a_pay_code_over_ussd_moves_the_money_once(db: Db) {
    let app = TestApp::shared(db);
    let cast = Cast::live(app).await;
    let n = cast.customer(app, "6101", PIN, "1000").await;
    let (id, code) = open(app, &cast, "500").await;
    let s = cast.dial(app, &n, &["2", &code, PIN]).await;
    assert_eq!(s[1], "CON Enter merchant pay code:");
    assert_eq!(s[2], "CON Pay KES 500.00 to Test Org\nEnter PIN:", "the merchant's display name and the amount, no fee");
    assert_eq!(s[3], "END Paid KES 500.00 to Test Org. Your balance is KES 500.00.");
    let r = request(app, &cast, &id).await;
    assert_eq!((r.json["state"].as_str(), r.json["paid_by_msisdn"].as_str()), (Some("paid"), Some(n.as_str())));
    assert!(r.json["transaction_id"].as_str().unwrap().starts_with("tx_"), "{}", r.text);
    assert!(r.json["paid_at"].is_string());
    // The customer paid the amount; the merchant got amount - fee.
    let w = cast.wallet(app, &n).await;
    assert_eq!((w.raw("balance"), raw_at(&w.text, &["limits", "daily_used"])), ("500.00".to_owned(), "500.00".to_owned()));
    assert_eq!(cast.merchant_available(app).await, "498.00");

    // Paid: nobody pays it again, and the merchant cannot cancel it.
    let other = cast.customer(app, "6102", PIN, "1000").await;
    let s = cast.dial(app, &other, &["2", &code]).await;
    assert_eq!(s[2], "END This payment request has already been paid.");
    let s = cast.dial(app, &n, &["2", &code]).await;
    assert_eq!(s[2], "END This payment request has already been paid.");
    problem_strict(app.post(&cast.merchant_token, &format!("{}/cancel", path(&id)), &json!({}), Some(&key())).await, 409, "invalid_state")
        .await;
    assert_eq!((balance(app, &cast, &other).await, balance(app, &cast, &n).await), ("1000.00".to_owned(), "500.00".to_owned()));
    assert_eq!(cast.merchant_available(app).await, "498.00");
    app.assert_ledger_ok().await;
}

/// Dials `inputs` but the last in a new session; returns the session id.
async fn dial_to_last(app: &TestApp, cast: &Cast, n: &str, inputs: &[&str]) -> String {
    let sid = session_id();
    let screens = cast.dial_in(app, &sid, n, &inputs[..inputs.len() - 1]).await;
    assert!(screens.last().unwrap().contains("PIN"), "{screens:?}");
    sid
}

/// Several customers enter the PIN for one pay code at the same moment: one pays, every other
/// hears it is paid, and the balances are exact. On PostgreSQL this fails when the request is
/// read without its row lock and marked paid without the open guard.
async fn several_customers_paying_one_code_at_once_pay_it_once(db: Db) {
    const PAYERS: usize = 8;
    const ROUNDS: usize = 3;
    let app = TestApp::shared(db);
    let cast = Cast::live(app).await;
    let rounds = (0..ROUNDS).map(|round| {
        let cast = &cast;
        async move {
            let (id, code) = open(app, cast, "500").await;
            let mut customers = Vec::new();
            for i in 0..PAYERS {
                customers.push(cast.customer(app, &format!("62{round}{i}"), PIN, "1000").await);
            }
            let inputs = ["2", code.as_str(), PIN];
            let mut sessions = Vec::new();
            for n in &customers {
                sessions.push(dial_to_last(app, cast, n, &inputs).await);
            }
            let text = inputs.join("*");
            let screens = join_all(customers.iter().zip(&sessions).map(|(n, sid)| app.ussd_hop(&cast.gateway, sid, n, &text))).await;
            let paid: Vec<usize> = (0..PAYERS).filter(|&i| screens[i].starts_with("END Paid KES 500.00")).collect();
            assert_eq!(paid.len(), 1, "exactly one payment: {screens:?}");
            for (i, s) in screens.iter().enumerate().filter(|(i, _)| *i != paid[0]) {
                assert_eq!(s, "END This payment request has already been paid.", "customer {i}");
            }
            let r = request(app, cast, &id).await;
            assert_eq!(r.json["paid_by_msisdn"], customers[paid[0]].as_str());
            for (i, n) in customers.iter().enumerate() {
                assert_eq!(balance(app, cast, n).await, if i == paid[0] { "500.00" } else { "1000.00" }, "customer {i}");
            }
        }
    });
    join_all(rounds).await;
    assert_eq!(cast.merchant_available(app).await, format!("{}.00", 498 * ROUNDS), "each request paid once");
    app.assert_ledger_ok().await;
}

async fn an_addressed_request_is_approved_or_declined_in_approve_payments(db: Db) {
    let app = TestApp::shared(db);
    let cast = Cast::live(app).await;
    let n = cast.customer(app, "6103", PIN, "1000").await;
    let addressed = |amount: &str| json!({"amount": amount, "reference": "INV-A", "payer_msisdn": n, "expires_in": 600});
    let first = ask(app, &cast, addressed("300")).await.json;
    let second = ask(app, &cast, addressed("200")).await.json;
    let charge = cast.charge(app, &n, "50").await;
    let s = cast.dial(app, &n, &["3"]).await;
    assert_eq!(
        s[1], "CON Approve payments\n1. Test Org KES 50.00\n2. Test Org KES 300.00\n3. Test Org KES 200.00",
        "charges, then requests"
    );

    let s = cast.dial(app, &n, &["3", "2", "1", PIN]).await;
    assert_eq!(s[2], "CON Pay KES 300.00 to Test Org?\n1. Approve\n2. Decline");
    assert_eq!(s[4], "END Paid KES 300.00 to Test Org. Your balance is KES 700.00.");
    let paid = request(app, &cast, first["request_id"].as_str().unwrap()).await;
    assert_eq!((paid.json["state"].as_str(), paid.json["paid_by_msisdn"].as_str()), (Some("paid"), Some(n.as_str())));

    // Declined by its addressee: cancelled, payable by no one, no money moved.
    let s = cast.dial(app, &n, &["3", "2", "2"]).await;
    assert_eq!(s[3], "END You declined KES 200.00 to Test Org.");
    let declined = request(app, &cast, second["request_id"].as_str().unwrap()).await;
    assert_eq!((declined.json["state"].as_str(), declined.json["paid_at"].clone()), (Some("cancelled"), Value::Null));
    let s = cast.dial(app, &n, &["2", second["pay_code"].as_str().unwrap()]).await;
    assert_eq!(s[2], "END This payment request was cancelled.");
    let s = cast.dial(app, &n, &["3"]).await;
    assert_eq!(s[1], "CON Approve payments\n1. Test Org KES 50.00", "only the charge is left");
    assert_eq!(app.get_json(&cast.merchant_token, &format!("/partner/charges/{charge}")).await["state"], "pending");
    assert_eq!(balance(app, &cast, &n).await, "700.00");
    assert_eq!(cast.merchant_available(app).await, "298.00");
    app.assert_ledger_ok().await;
}

async fn a_gateway_retry_of_the_pin_hop_pays_once(db: Db) {
    let app = TestApp::shared(db);
    let cast = Cast::live(app).await;
    let n = cast.customer(app, "6104", PIN, "1000").await;
    let (id, code) = open(app, &cast, "400").await;
    let sid = dial_to_last(app, &cast, &n, &["2", &code, PIN]).await;
    let text = ["2", code.as_str(), PIN].join("*");
    let first = app.ussd_hop(&cast.gateway, &sid, &n, &text).await;
    assert_eq!(first, "END Paid KES 400.00 to Test Org. Your balance is KES 600.00.");
    // The gateway did not hear the answer and sends the same request again, twice.
    for _ in 0..2 {
        assert_eq!(app.ussd_hop(&cast.gateway, &sid, &n, &text).await, first, "the same answer, replayed");
    }
    assert_eq!(balance(app, &cast, &n).await, "600.00", "paid once");
    assert_eq!(cast.merchant_available(app).await, "398.00");
    assert_eq!(request(app, &cast, &id).await.json["state"], "paid");
    app.assert_ledger_ok().await;
}

async fn cancelled_and_expired_requests_move_no_money(db: Db) {
    let app = TestApp::with(db, Options::manual()).await;
    let cast = Cast::live(&app).await;
    let n = cast.customer(&app, "6105", PIN, "1000").await;
    let (cancelled, cancelled_code) = open(&app, &cast, "300").await;
    // Shown, then cancelled by the merchant before the PIN.
    let sid = dial_to_last(&app, &cast, &n, &["2", &cancelled_code, PIN]).await;
    ok(app.post_new(&cast.merchant_token, &format!("{}/cancel", path(&cancelled)), &json!({})).await, "cancel");
    let end = app.ussd_hop(&cast.gateway, &sid, &n, &["2", cancelled_code.as_str(), PIN].join("*")).await;
    assert_eq!(end, "END This payment request was cancelled.");

    let a = ask(&app, &cast, json!({"amount": "300", "reference": "INV-E", "expires_in": 60})).await;
    let (expiring, code) = (a.json["request_id"].as_str().unwrap().to_owned(), a.json["pay_code"].as_str().unwrap().to_owned());
    let sid = dial_to_last(&app, &cast, &n, &["2", &code, PIN]).await;
    app.advance(std::time::Duration::from_secs(60));
    // Past its time, before the worker has run: refused all the same.
    let end = app.ussd_hop(&cast.gateway, &sid, &n, &["2", code.as_str(), PIN].join("*")).await;
    assert_eq!(end, "END This payment request has expired.");
    assert_eq!(request(&app, &cast, &expiring).await.json["state"], "open");
    assert_eq!(app.run_workers().await, 1, "the worker expires it");
    let r = request(&app, &cast, &expiring).await;
    assert_eq!((r.json["state"].as_str(), r.json["transaction_id"].clone()), (Some("expired"), Value::Null));
    let s = cast.dial(&app, &n, &["2", &code]).await;
    assert_eq!(s[2], "END This payment request has expired.");
    problem_strict(
        app.post(&cast.merchant_token, &format!("{}/cancel", path(&expiring)), &json!({}), Some(&key())).await,
        409,
        "invalid_state",
    )
    .await;
    assert_eq!(app.run_workers().await, 0, "expired once");
    assert_eq!(balance(&app, &cast, &n).await, "1000.00");
    assert_eq!(cast.merchant_available(&app).await, "0.00");
    app.assert_ledger_ok().await;
    app.stop().await;
}

async fn wrong_pins_count_and_lock_the_wallet(db: Db) {
    let app = TestApp::shared(db);
    let cast = Cast::live(app).await;
    let n = cast.customer(app, "6106", PIN, "1000").await;
    let (id, code) = open(app, &cast, "500").await;
    let s = cast.dial(app, &n, &["2", &code, WRONG, WRONG, WRONG]).await;
    assert_eq!(s[3], "CON Wrong PIN. 2 attempts left.\nEnter PIN:");
    assert_eq!(s[4], "CON Wrong PIN. 1 attempt left.\nEnter PIN:");
    assert!(s[5].starts_with("END ") && s[5].contains("locked"), "{s:?}");
    let w = cast.wallet(app, &n).await;
    assert_eq!((w.json["state"].as_str(), w.raw("balance")), (Some("locked"), "1000.00".to_owned()));
    let s = cast.dial_in(app, &session_id(), &n, &[]).await;
    assert!(s[0].starts_with("END ") && s[0].contains("locked"), "{s:?}");
    // The request stays open for its merchant; nothing moved.
    assert_eq!(request(app, &cast, &id).await.json["state"], "open");
    assert_eq!(cast.merchant_available(app).await, "0.00");

    // A right PIN after a wrong one resets the count.
    let m = cast.customer(app, "6107", PIN, "1000").await;
    let s = cast.dial(app, &m, &["2", &code, WRONG, PIN]).await;
    assert_eq!(s[4], "END Paid KES 500.00 to Test Org. Your balance is KES 500.00.");
    assert_eq!(cast.wallet(app, &m).await.json["state"], "active");
    app.assert_ledger_ok().await;
}

async fn limits_and_funds_are_checked_as_on_every_channel(db: Db) {
    let app = TestApp::shared(db);
    let cast = Cast::live(app).await;
    // Tier 0: 5,000.00 per transaction, 10,000.00 a day.
    let n = msisdn("6108");
    cast.open_wallet(app, &n, false).await;
    cast.set_pin(app, &n, PIN).await;
    for _ in 0..2 {
        cast.cash_in(app, &n, "3000").await;
    }
    let pay = |code: String| {
        let (cast, n) = (&cast, n.clone());
        async move { cast.dial(app, &n, &["2", &code, PIN]).await.pop().unwrap() }
    };
    let (over_limit, code) = open(app, &cast, "5001").await;
    assert_eq!(pay(code).await, "END This payment is above your wallet's limits.");
    let (first, code) = open(app, &cast, "5000").await;
    assert!(pay(code).await.starts_with("END Paid KES 5,000.00"));
    let (short, code) = open(app, &cast, "1200").await;
    assert_eq!(pay(code).await, "END You do not have enough money for this payment.");
    for id in [&over_limit, &short] {
        assert_eq!(request(app, &cast, id).await.json["state"], "open", "still payable by someone who can");
    }
    // The daily limit counts what was paid today.
    cast.cash_in(app, &n, "4000").await;
    let (_, code) = open(app, &cast, "4500").await;
    assert!(pay(code).await.starts_with("END Paid KES 4,500.00"));
    cast.cash_in(app, &n, "1000").await;
    let (_, code) = open(app, &cast, "600").await;
    assert_eq!(pay(code).await, "END This payment is above your wallet's limits.");
    assert_eq!(request(app, &cast, &first).await.json["state"], "paid");
    let w = cast.wallet(app, &n).await;
    assert_eq!((w.raw("balance"), raw_at(&w.text, &["limits", "daily_used"])), ("1500.00".to_owned(), "9500.00".to_owned()));
    app.assert_ledger_ok().await;
}
