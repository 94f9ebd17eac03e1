//! Contract sections 4 (transfers, statements), 5 (payouts) and 8 (reversals), over HTTP on both
//! backends.

use std::time::Duration;

use futures_util::future::join_all;
use malipo_core::Mode;
use serde_json::{json, Value};

use crate::harness::{field_problem, is_utc_timestamp, key, msisdn, ok, problem_strict, raw_items, Answer, Creds, Db, TestApp};

crate::on_both!(
    a_payout_is_reserved_at_once_then_paid,
    payouts_are_refused_when_short_invalid_or_out_of_scope,
    sandbox_payouts_fail_for_the_magic_numbers_and_release_the_reservation,
    twenty_identical_payouts_with_one_key_make_one,
    concurrent_payouts_never_reserve_more_than_the_balance,
    transfers_move_money_between_own_accounts_and_show_in_statements,
    a_charge_is_reversed_in_parts_with_its_fee_share,
    concurrent_partial_reversals_never_exceed_the_original,
    a_payout_is_reversed_by_its_transaction_id,
);

const WAIT: Duration = Duration::from_secs(20);

/// A corporate organisation with a funded test payout account, and its token.
pub(crate) async fn payroll(app: &TestApp, funds: &str) -> (Creds, String) {
    let c = app.org("corporate", "KE").await;
    app.fund(&c.org_id, Mode::Test, funds).await;
    let t = app.token(&c).await;
    (c, t)
}

async fn pay(app: &TestApp, token: &str, payee: &str, amount: &str) -> Answer {
    app.post_new(token, "/payouts", &json!({"payee_msisdn": payee, "amount": amount, "reference": "SALARY-NOV"})).await
}

async fn payout_balance(app: &TestApp, token: &str) -> Value {
    ok(app.get_answer(token, "/partner/balance?account=payout").await, "payout balance").json
}

async fn a_payout_is_reserved_at_once_then_paid(db: Db) {
    let app = TestApp::shared(db);
    let (_, t) = payroll(app, "10000").await;
    let payee = msisdn("0000");
    let body = json!({"payee_msisdn": payee, "amount": "1000.00", "reference": "SALARY-NOV", "narration": "November"});
    let a = ok(app.post_new(&t, "/payouts", &body).await, "POST /payouts");
    let p = &a.json;
    assert!(p["payout_ref"].as_str().unwrap().starts_with("po_"), "{}", a.text);
    assert_eq!(
        (p["state"].as_str(), p["mode"].as_str(), p["payee_msisdn"].as_str()),
        (Some("pending"), Some("test"), Some(payee.as_str()))
    );
    assert_eq!((a.raw("amount"), a.raw("fee"), a.raw("amount_reversed")), ("1000.00".into(), "5.00".into(), "0.00".into()));
    assert_eq!(
        (p["currency"].as_str(), p["reference"].as_str(), p["narration"].as_str()),
        (Some("KES"), Some("SALARY-NOV"), Some("November"))
    );
    for null in ["failure_reason", "transaction_id", "bulk_payout_id", "completed_at"] {
        assert!(p[null].is_null(), "{null} in {}", a.text);
    }
    assert!(is_utc_timestamp(p["created_at"].as_str().unwrap()) && is_utc_timestamp(p["updated_at"].as_str().unwrap()));
    let path = format!("/payouts/{}", p["payout_ref"].as_str().unwrap());
    let done = app.wait_state(&t, &path, "completed", WAIT).await;
    assert!(done["transaction_id"].as_str().unwrap().starts_with("tx_"), "{done}");
    assert!(is_utc_timestamp(done["completed_at"].as_str().unwrap()), "{done}");
    let b = payout_balance(app, &t).await;
    assert_eq!(b["available"].to_string(), "8995.00", "{b}");
    // Lists: newest first, filtered by state.
    let second = ok(pay(app, &t, &msisdn("0000"), "1.00").await, "second payout");
    let list = ok(app.get_answer(&t, "/payouts?limit=1").await, "GET /payouts");
    assert_eq!(list.json["data"][0]["payout_ref"], second.json["payout_ref"], "{}", list.text);
    assert_eq!(list.json["has_more"], true);
    let completed = ok(app.get_answer(&t, "/payouts?state=completed&limit=100").await, "filtered");
    let refs: Vec<&str> = completed.json["data"].as_array().unwrap().iter().map(|p| p["payout_ref"].as_str().unwrap()).collect();
    assert!(refs.contains(&p["payout_ref"].as_str().unwrap()), "{}", completed.text);
    assert!(completed.json["data"].as_array().unwrap().iter().all(|p| p["state"] == "completed"));
    app.wait_state(&t, &format!("/payouts/{}", second.json["payout_ref"].as_str().unwrap()), "completed", WAIT).await;
    app.assert_ledger_ok().await;
}

async fn payouts_are_refused_when_short_invalid_or_out_of_scope(db: Db) {
    let app = TestApp::shared(db);
    let (c, t) = payroll(app, "100").await;
    // 95.00 + the 5.00 fee fits; one cent more does not.
    problem_strict(
        app.post(&t, "/payouts", &json!({"payee_msisdn": msisdn("0000"), "amount": "95.01", "reference": "R"}), Some(&key())).await,
        422,
        "insufficient_funds",
    )
    .await;
    field_problem(
        app.post(&t, "/payouts", &json!({"payee_msisdn": "2547", "amount": "1", "reference": "R"}), Some(&key())).await,
        "payee_msisdn",
        "invalid_msisdn",
    )
    .await;
    field_problem(
        app.post(&t, "/payouts", &json!({"payee_msisdn": msisdn("0000"), "amount": "1.001", "reference": "R"}), Some(&key())).await,
        "amount",
        "invalid_amount",
    )
    .await;
    problem_strict(
        app.post(
            &t,
            "/payouts",
            &json!({"payee_msisdn": msisdn("0000"), "amount": "1", "reference": "R", "currency": "UGX"}),
            Some(&key()),
        )
        .await,
        422,
        "currency_mismatch",
    )
    .await;
    problem_strict(
        app.post(&t, "/payouts", &json!({"payee_msisdn": msisdn("0000"), "amount": "1", "reference": "R"}), None).await,
        400,
        "idempotency_key_missing",
    )
    .await;
    let payments_only = app.token_scoped(&c, "payments").await;
    problem_strict(
        app.post(&payments_only, "/payouts", &json!({"payee_msisdn": msisdn("0000"), "amount": "1", "reference": "R"}), Some(&key())).await,
        403,
        "insufficient_scope",
    )
    .await;
    problem_strict(app.get(&t, "/payouts/po_doesnotexist").await, 404, "not_found").await;
    let (_, other) = payroll(app, "100").await;
    let mine = ok(pay(app, &t, &msisdn("0000"), "10").await, "payout");
    problem_strict(app.get(&other, &format!("/payouts/{}", mine.json["payout_ref"].as_str().unwrap())).await, 404, "not_found").await;
    assert_eq!(payout_balance(app, &t).await["available"].to_string(), "85.00");
}

async fn sandbox_payouts_fail_for_the_magic_numbers_and_release_the_reservation(db: Db) {
    let app = TestApp::shared(db);
    let (_, t) = payroll(app, "1000").await;
    for (last4, reason) in [("1005", "wallet_locked"), ("1006", "limit_exceeded"), ("1007", "payee_not_found")] {
        let a = ok(pay(app, &t, &msisdn(last4), "100").await, "payout");
        let v = app.wait_state(&t, &format!("/payouts/{}", a.json["payout_ref"].as_str().unwrap()), "failed", WAIT).await;
        assert_eq!(v["failure_reason"], reason, "{v}");
        assert!(v["transaction_id"].is_null());
    }
    let b = payout_balance(app, &t).await;
    assert_eq!(b["available"].to_string(), "1000.00", "every reservation released: {b}");
    app.assert_ledger_ok().await;
}

async fn twenty_identical_payouts_with_one_key_make_one(db: Db) {
    let app = TestApp::shared(db);
    let (_, t) = payroll(app, "1000").await;
    let k = key();
    let body = json!({"payee_msisdn": msisdn("0000"), "amount": "100", "reference": "ONCE"});
    let answers = join_all((0..20).map(|_| async { Answer::of(app.post(&t, "/payouts", &body, Some(&k)).await).await })).await;
    let mut refs: Vec<String> = Vec::new();
    for a in &answers {
        match a.status {
            200 => refs.push(a.json["payout_ref"].as_str().unwrap().to_owned()),
            409 => assert_eq!(a.json["code"], "idempotency_in_progress", "{}", a.text),
            other => panic!("unexpected {other}: {}", a.text),
        }
    }
    refs.dedup();
    assert_eq!(refs.len(), 1, "one payout: {refs:?}");
    let list = ok(app.get_answer(&t, "/payouts?limit=100").await, "list");
    assert_eq!(raw_items(&list.raw("data")).len(), 1, "{}", list.text);
    app.wait_state(&t, &format!("/payouts/{}", refs[0]), "completed", WAIT).await;
    assert_eq!(payout_balance(app, &t).await["available"].to_string(), "895.00", "reserved and paid once");
}

async fn concurrent_payouts_never_reserve_more_than_the_balance(db: Db) {
    let app = TestApp::shared(db);
    let (_, t) = payroll(app, "1000").await;
    // Eight payouts of 195.00 + 5.00 fee at once against 1,000.00: exactly five fit.
    let payees: Vec<String> = (0..8).map(|_| msisdn("0000")).collect();
    let answers = join_all(payees.iter().map(|payee| pay(app, &t, payee, "195"))).await;
    let passed = answers.iter().filter(|a| a.status == 200).count();
    for a in answers.iter().filter(|a| a.status != 200) {
        assert_eq!((a.status, a.json["code"].as_str()), (422, Some("insufficient_funds")), "{}", a.text);
    }
    assert_eq!(passed, 5);
    for a in answers.iter().filter(|a| a.status == 200) {
        app.wait_state(&t, &format!("/payouts/{}", a.json["payout_ref"].as_str().unwrap()), "completed", WAIT).await;
    }
    let b = payout_balance(app, &t).await;
    assert_eq!(b["available"].to_string(), "0.00", "{b}");
    app.assert_ledger_ok().await;
}

async fn transfers_move_money_between_own_accounts_and_show_in_statements(db: Db) {
    let app = TestApp::shared(db);
    let (_, t) = payroll(app, "500").await;
    let a = ok(app.post_new(&t, "/accounts/transfers", &json!({"from": "payout", "to": "collection", "amount": 200})).await, "transfer");
    assert!(a.json["transfer_id"].as_str().unwrap().starts_with("tx_"), "{}", a.text);
    assert_eq!((a.json["from"].as_str(), a.json["to"].as_str(), a.raw("amount")), (Some("payout"), Some("collection"), "200.00".into()));
    assert_eq!((a.json["currency"].as_str(), a.json["mode"].as_str()), (Some("KES"), Some("test")));
    problem_strict(
        app.post(&t, "/accounts/transfers", &json!({"from": "payout", "to": "collection", "amount": "300.01"}), Some(&key())).await,
        422,
        "insufficient_funds",
    )
    .await;
    field_problem(
        app.post(&t, "/accounts/transfers", &json!({"from": "payout", "to": "wallet", "amount": "1"}), Some(&key())).await,
        "to",
        "invalid_value",
    )
    .await;
    // Replays answer the same transfer and move nothing more.
    let k = key();
    let body = json!({"from": "collection", "to": "payout", "amount": "50"});
    let first = Answer::of(app.post(&t, "/accounts/transfers", &body, Some(&k)).await).await;
    let again = Answer::of(app.post(&t, "/accounts/transfers", &body, Some(&k)).await).await;
    assert_eq!((first.status, again.status, first.text.as_str()), (200, 200, again.text.as_str()));
    assert_eq!(again.header("idempotent-replayed"), "true");
    let accounts = ok(app.get_answer(&t, "/accounts").await, "accounts");
    let collection = accounts.json["data"].as_array().unwrap().iter().find(|a| a["type"] == "collection").unwrap().clone();
    assert_eq!(collection["balance"].to_string(), "150.00");
    let id = collection["account_id"].as_str().unwrap();
    let s = ok(app.get_answer(&t, &format!("/accounts/{id}/statement")).await, "statement");
    let lines = s.json["data"].as_array().unwrap();
    let seen: Vec<(String, String, String)> =
        lines.iter().map(|l| (l["type"].as_str().unwrap().to_owned(), l["amount"].to_string(), l["balance_after"].to_string())).collect();
    assert_eq!(seen, vec![("transfer".into(), "200.00".into(), "200.00".into()), ("transfer".into(), "-50.00".into(), "150.00".into())]);
    assert_eq!(lines[0]["transaction_id"], a.json["transfer_id"]);
    assert!(is_utc_timestamp(lines[0]["created_at"].as_str().unwrap()));
    // Paging and a window that ends before everything.
    let page = ok(app.get_answer(&t, &format!("/accounts/{id}/statement?limit=1")).await, "page");
    assert_eq!(page.json["has_more"], true);
    let cursor = page.json["next_cursor"].as_str().unwrap();
    let next = ok(app.get_answer(&t, &format!("/accounts/{id}/statement?limit=1&cursor={cursor}")).await, "next page");
    assert_eq!(next.json["data"][0]["amount"].to_string(), "-50.00");
    let empty = ok(app.get_answer(&t, &format!("/accounts/{id}/statement?to=2000-01-01T00:00:00Z")).await, "window");
    assert_eq!(empty.json["data"].as_array().unwrap().len(), 0);
    let (_, other) = payroll(app, "1").await;
    problem_strict(app.get(&other, &format!("/accounts/{id}/statement")).await, 404, "not_found").await;
    app.assert_ledger_ok().await;
}

/// A completed 1,000.00 charge of a new merchant (fee 4.00) and the merchant's token.
async fn completed_charge(app: &TestApp) -> (String, String) {
    let (_, t) = app.merchant_token().await;
    let charge = app.charge(&t, &msisdn("0000"), "1000.00").await;
    let id = charge["charge_ref"].as_str().unwrap().to_owned();
    app.wait_for(&t, &id, "completed", WAIT).await;
    (t, id)
}

async fn reverse(app: &TestApp, token: &str, body: Value) -> Answer {
    Answer::of(app.post(token, "/reversals", &body, Some(&key())).await).await
}

async fn a_charge_is_reversed_in_parts_with_its_fee_share(db: Db) {
    let app = TestApp::shared(db);
    let (t, charge) = completed_charge(app).await;
    let a = ok(reverse(app, &t, json!({"charge_ref": charge, "amount": "250.00", "reason": "one item returned"})).await, "reversal");
    assert!(a.json["reversal_id"].as_str().unwrap().starts_with("rv_"), "{}", a.text);
    assert_eq!((a.json["state"].as_str(), a.json["charge_ref"].as_str()), (Some("completed"), Some(charge.as_str())));
    assert!(a.json["payout_ref"].is_null() && a.json["original_transaction_id"].as_str().unwrap().starts_with("tx_"), "{}", a.text);
    assert_eq!((a.raw("amount"), a.raw("fee_reversed")), ("250.00".into(), "1.00".into()), "a quarter of the 4.00 fee");
    let c = app.get_json(&t, &format!("/partner/charges/{charge}")).await;
    assert_eq!((c["state"].as_str(), c["amount_reversed"].to_string()), (Some("completed"), "250.00".into()));
    let too_much = reverse(app, &t, json!({"charge_ref": charge, "amount": "750.01", "reason": "r"})).await;
    assert_eq!((too_much.status, too_much.json["code"].as_str()), (422, Some("reversal_exceeds_original")), "{}", too_much.text);
    let rest = ok(reverse(app, &t, json!({"charge_ref": charge, "reason": "cancelled"})).await, "the rest");
    assert_eq!((rest.raw("amount"), rest.raw("fee_reversed")), ("750.00".into(), "3.00".into()));
    let b = ok(app.get_answer(&t, "/partner/balance").await, "balance");
    assert_eq!(b.raw("available"), "0.00");
    let got = ok(app.get_answer(&t, &format!("/reversals/{}", a.json["reversal_id"].as_str().unwrap())).await, "GET reversal");
    assert_eq!(got.text, a.text);
    let list = ok(app.get_answer(&t, "/reversals").await, "list");
    assert_eq!(list.json["data"][0]["reversal_id"], rest.json["reversal_id"], "newest first");
    // Only completed originals; unknown ones are 404.
    let pending = app.charge(&t, &msisdn("1009"), "10").await;
    let r = reverse(app, &t, json!({"charge_ref": pending["charge_ref"], "reason": "r"})).await;
    assert_eq!((r.status, r.json["code"].as_str()), (409, Some("invalid_state")), "{}", r.text);
    let r = reverse(app, &t, json!({"charge_ref": "ch_unknown", "reason": "r"})).await;
    assert_eq!(r.status, 404, "{}", r.text);
    let r = reverse(app, &t, json!({"charge_ref": charge, "payout_ref": "po_x", "reason": "r"})).await;
    assert_eq!(r.status, 422, "{}", r.text);
    app.assert_ledger_ok().await;
}

async fn concurrent_partial_reversals_never_exceed_the_original(db: Db) {
    let app = TestApp::shared(db);
    let (t, charge) = completed_charge(app).await;
    // Eight reversals of 300.00 at once against 1,000.00: exactly three fit.
    let body = json!({"charge_ref": charge, "amount": "300.00", "reason": "race"});
    let answers = join_all((0..8).map(|_| reverse(app, &t, body.clone()))).await;
    let passed = answers.iter().filter(|a| a.status == 200).count();
    for a in answers.iter().filter(|a| a.status != 200) {
        assert_eq!((a.status, a.json["code"].as_str()), (422, Some("reversal_exceeds_original")), "{}", a.text);
    }
    assert_eq!(passed, 3);
    let c = app.get_json(&t, &format!("/partner/charges/{charge}")).await;
    assert_eq!(c["amount_reversed"].to_string(), "900.00");
    app.assert_ledger_ok().await;
}

async fn a_payout_is_reversed_by_its_transaction_id(db: Db) {
    let app = TestApp::shared(db);
    let (_, t) = payroll(app, "2000").await;
    let a = ok(pay(app, &t, &msisdn("0000"), "1000").await, "payout");
    let path = format!("/payouts/{}", a.json["payout_ref"].as_str().unwrap());
    let done = app.wait_state(&t, &path, "completed", WAIT).await;
    let r = ok(reverse(app, &t, json!({"transaction_id": done["transaction_id"], "reason": "paid twice"})).await, "reversal");
    assert_eq!(
        (r.json["payout_ref"].as_str(), r.raw("amount"), r.raw("fee_reversed")),
        (done["payout_ref"].as_str(), "1000.00".into(), "5.00".into())
    );
    assert!(r.json["charge_ref"].is_null());
    assert_eq!(app.get_json(&t, &path).await["amount_reversed"].to_string(), "1000.00");
    assert_eq!(payout_balance(app, &t).await["available"].to_string(), "2000.00", "amount and fee are back");
    let again = reverse(app, &t, json!({"payout_ref": done["payout_ref"], "amount": "0.01", "reason": "r"})).await;
    assert_eq!((again.status, again.json["code"].as_str()), (422, Some("reversal_exceeds_original")), "{}", again.text);
    app.assert_ledger_ok().await;
}
