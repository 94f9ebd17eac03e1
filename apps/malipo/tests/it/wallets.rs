//! Contract section 11, wallets and KYC (operator back office, scope `wallets`).

use std::time::Duration;

use malipo_core::Mode;
use serde_json::{json, Value};

use crate::harness::{
    field_error, field_problem, is_utc_timestamp, key, kra_pin, msisdn, national_id, ok, problem_strict, raw_at, Answer, Cast, Db, TestApp,
};

crate::on_both!(
    opening_a_wallet_without_id_gives_tier_0,
    opening_a_wallet_with_a_national_id_gives_tier_1,
    a_second_wallet_for_a_number_is_invalid_state,
    opening_validates_every_field,
    one_identity_document_holds_one_wallet,
    first_pin_weak_pins_and_changing_the_pin,
    three_wrong_current_pins_lock_the_wallet,
    lock_fails_pending_charges_and_unlock_resets_the_attempts,
    kyc_raises_the_tier_and_its_limits,
    statement_pages_oldest_first,
    wallets_need_the_wallets_scope,
    live_wallets_are_invisible_to_test_tokens,
    opening_replays_under_its_key,
    a_pin_change_replays_under_its_key_after_the_wallet_locked,
);

async fn test_cast(app: &TestApp) -> Cast {
    Cast::new(app, Mode::Test, "50000").await
}

async fn open(app: &TestApp, token: &str, body: &Value) -> Answer {
    app.post_new(token, "/wallets", body).await
}

async fn pin(app: &TestApp, cast: &Cast, n: &str, body: Value) -> Answer {
    app.post_new(&cast.operator, &format!("/wallets/{n}/pin"), &body).await
}

async fn opening_a_wallet_without_id_gives_tier_0(db: Db) {
    let app = TestApp::shared(db);
    let cast = test_cast(app).await;
    let n = msisdn("3000");
    let a = ok(open(app, &cast.operator, &json!({"msisdn": n, "first_name": "Amina", "last_name": "Otieno"})).await, "open");
    let w = &a.json;
    assert_eq!(w["msisdn"], n.as_str());
    assert_eq!(w["mode"], "test");
    assert_eq!(w["state"], "active");
    assert_eq!(w["kyc_tier"], 0);
    assert_eq!(w["currency"], "KES");
    assert_eq!(a.raw("balance"), "0.00");
    assert_eq!(a.raw("available"), "0.00");
    assert_eq!(raw_at(&a.text, &["limits", "per_transaction"]), "5000.00");
    assert_eq!(raw_at(&a.text, &["limits", "daily"]), "10000.00");
    assert_eq!(raw_at(&a.text, &["limits", "daily_used"]), "0.00");
    assert_eq!(raw_at(&a.text, &["limits", "max_balance"]), "20000.00");
    assert_eq!(w["pin_set"], false);
    assert_eq!(w["first_name"], "Amina");
    assert_eq!(w["last_name"], "Otieno");
    assert_eq!(w["id_type"], Value::Null);
    assert_eq!(w["id_number"], Value::Null);
    assert_eq!(w["date_of_birth"], Value::Null);
    assert_eq!(w["lock_reason"], Value::Null);
    assert!(is_utc_timestamp(w["created_at"].as_str().unwrap()), "{w}");
    assert!(is_utc_timestamp(w["updated_at"].as_str().unwrap()), "{w}");
    let got = cast.wallet(app, &n).await;
    assert_eq!(got.json, a.json, "GET answers the wallet as opened");
    assert_eq!(got.text, a.text, "and writes it the same way");
    app.assert_ledger_ok().await;
}

async fn opening_a_wallet_with_a_national_id_gives_tier_1(db: Db) {
    let app = TestApp::shared(db);
    let cast = test_cast(app).await;
    let n = msisdn("3001");
    let id = national_id();
    let body = json!({"msisdn": n, "first_name": "Juma", "last_name": "Mwangi", "id_type": "national_id", "id_number": id, "date_of_birth": "1990-04-17"});
    let a = ok(open(app, &cast.operator, &body).await, "open");
    assert_eq!(a.json["kyc_tier"], 1);
    assert_eq!(a.json["id_type"], "national_id");
    assert_eq!(a.json["id_number"], id.as_str());
    assert_eq!(a.json["date_of_birth"], "1990-04-17");
    assert_eq!(raw_at(&a.text, &["limits", "per_transaction"]), "150000.00");
    assert_eq!(raw_at(&a.text, &["limits", "daily"]), "300000.00");
    assert_eq!(raw_at(&a.text, &["limits", "max_balance"]), "300000.00");
    // A seven-digit national ID matches the pattern too.
    let seven = &national_id()[..7];
    let b = json!({"msisdn": msisdn("3002"), "first_name": "Wanjiru", "last_name": "Kamau", "id_type": "national_id", "id_number": seven});
    assert_eq!(ok(open(app, &cast.operator, &b).await, "open").json["kyc_tier"], 1);
    // A KRA PIN on opening gives tier 2.
    let c = json!({"msisdn": msisdn("3003"), "first_name": "Otieno", "last_name": "Achieng", "id_type": "kra_pin", "id_number": kra_pin()});
    assert_eq!(ok(open(app, &cast.operator, &c).await, "open").json["kyc_tier"], 2);
    app.assert_ledger_ok().await;
}

async fn a_second_wallet_for_a_number_is_invalid_state(db: Db) {
    let app = TestApp::shared(db);
    let cast = test_cast(app).await;
    let n = msisdn("3004");
    cast.open_wallet(app, &n, false).await;
    let again = json!({"msisdn": n, "first_name": "Other", "last_name": "Person"});
    problem_strict(app.post(&cast.operator, "/wallets", &again, Some(&key())).await, 409, "invalid_state").await;
    // With an ID this time: still the same number, still refused; the wallet is unchanged.
    let with_id = json!({"msisdn": n, "first_name": "Other", "last_name": "Person", "id_type": "national_id", "id_number": national_id()});
    problem_strict(app.post(&cast.operator, "/wallets", &with_id, Some(&key())).await, 409, "invalid_state").await;
    let w = cast.wallet(app, &n).await;
    assert_eq!(w.json["first_name"], "Amina");
    assert_eq!(w.json["kyc_tier"], 0);
    app.assert_ledger_ok().await;
}

async fn opening_validates_every_field(db: Db) {
    let app = TestApp::shared(db);
    let cast = test_cast(app).await;
    let op = &cast.operator;
    let base = |n: &str| json!({"msisdn": n, "first_name": "Amina", "last_name": "Otieno"});
    let post = |body: Value| async move { app.post(op, "/wallets", &body, Some(&key())).await };
    // Numbers.
    for bad in ["25471234", "+254712340000", "0712345678", "999712345678", "2547123456789", "25471234567x"] {
        field_problem(post(json!({"msisdn": bad, "first_name": "A", "last_name": "B"})).await, "msisdn", "invalid_msisdn").await;
    }
    field_problem(post(json!({"first_name": "A", "last_name": "B"})).await, "msisdn", "missing_field").await;
    // An ID number that does not match its type's pattern.
    let n = msisdn("3005");
    let mut b = base(&n);
    b["id_type"] = json!("national_id");
    b["id_number"] = json!("12AB");
    field_error(post(b.clone()).await, "id_number", None).await;
    b["id_number"] = json!("123456789");
    field_error(post(b.clone()).await, "id_number", None).await;
    b["id_type"] = json!("kra_pin");
    b["id_number"] = json!("X123456789Z");
    field_error(post(b).await, "id_number", None).await;
    // An ID type the country does not have.
    let mut b = base(&n);
    b["id_type"] = json!("driving_licence");
    b["id_number"] = json!("12345678");
    field_error(post(b).await, "id_type", None).await;
    // A date of birth in the future, or not a date.
    for dob in ["2999-01-01", "1990-02-30", "17/04/1990"] {
        let mut b = base(&n);
        b["date_of_birth"] = json!(dob);
        field_error(post(b).await, "date_of_birth", None).await;
    }
    // Unknown fields are never ignored.
    let mut b = base(&n);
    b["pin"] = json!("4826");
    field_error(post(b).await, "pin", Some("unknown_field")).await;
    // None of these opened a wallet.
    problem_strict(app.get(op, &format!("/wallets/{n}")).await, 404, "not_found").await;
    app.assert_ledger_ok().await;
}

async fn one_identity_document_holds_one_wallet(db: Db) {
    let app = TestApp::shared(db);
    let cast = test_cast(app).await;
    let id = national_id();
    let first = json!({"msisdn": msisdn("3006"), "first_name": "Amina", "last_name": "Otieno", "id_type": "national_id", "id_number": id});
    ok(open(app, &cast.operator, &first).await, "first");
    let n = msisdn("3007");
    let second = json!({"msisdn": n, "first_name": "Amina", "last_name": "Otieno", "id_type": "national_id", "id_number": id});
    field_error(app.post(&cast.operator, "/wallets", &second, Some(&key())).await, "id_number", Some("already_registered")).await;
    problem_strict(app.get(&cast.operator, &format!("/wallets/{n}")).await, 404, "not_found").await;
    // Raising another wallet's tier on the same document is refused the same way.
    cast.open_wallet(app, &n, false).await;
    let kyc = json!({"tier": 1, "id_type": "national_id", "id_number": id});
    field_error(app.post(&cast.operator, &format!("/wallets/{n}/kyc"), &kyc, Some(&key())).await, "id_number", Some("already_registered"))
        .await;
    assert_eq!(cast.wallet(app, &n).await.json["kyc_tier"], 0);
    app.assert_ledger_ok().await;
}

async fn first_pin_weak_pins_and_changing_the_pin(db: Db) {
    let app = TestApp::shared(db);
    let cast = test_cast(app).await;
    let n = msisdn("3008");
    cast.open_wallet(app, &n, true).await;
    let path = format!("/wallets/{n}/pin");
    // Weak and malformed PINs are refused before anything is stored.
    for weak in ["1234", "0000", "1111", "4321", "1212", "5678"] {
        field_problem(app.post(&cast.operator, &path, &json!({"new_pin": weak}), Some(&key())).await, "new_pin", "weak_pin").await;
    }
    for malformed in ["482", "48261", "48a6", ""] {
        field_error(app.post(&cast.operator, &path, &json!({"new_pin": malformed}), Some(&key())).await, "new_pin", None).await;
    }
    field_error(app.post(&cast.operator, &path, &json!({}), Some(&key())).await, "new_pin", Some("missing_field")).await;
    assert_eq!(cast.wallet(app, &n).await.json["pin_set"], false);
    // The first PIN needs no current one.
    let a = ok(pin(app, &cast, &n, json!({"new_pin": "4826"})).await, "first PIN");
    assert_eq!(a.json["pin_set"], true);
    assert_eq!(a.json["msisdn"], n.as_str());
    assert!(!a.text.contains("4826"), "the PIN is never echoed: {}", a.text);
    // Changing it needs the current one.
    field_problem(app.post(&cast.operator, &path, &json!({"new_pin": "7391"}), Some(&key())).await, "current_pin", "missing_field").await;
    field_problem(
        app.post(&cast.operator, &path, &json!({"new_pin": "7391", "current_pin": "0582"}), Some(&key())).await,
        "current_pin",
        "wrong_pin",
    )
    .await;
    // A weak new PIN is refused even with the right current one.
    field_problem(
        app.post(&cast.operator, &path, &json!({"new_pin": "1111", "current_pin": "4826"}), Some(&key())).await,
        "new_pin",
        "weak_pin",
    )
    .await;
    let a = ok(pin(app, &cast, &n, json!({"new_pin": "7391", "current_pin": "4826"})).await, "change");
    assert_eq!(a.json["pin_set"], true);
    // The old PIN no longer is the current one.
    field_problem(
        app.post(&cast.operator, &path, &json!({"new_pin": "0582", "current_pin": "4826"}), Some(&key())).await,
        "current_pin",
        "wrong_pin",
    )
    .await;
    ok(pin(app, &cast, &n, json!({"new_pin": "0582", "current_pin": "7391"})).await, "change again");
    assert_eq!(cast.wallet(app, &n).await.json["state"], "active", "a right PIN reset the count");
    // Unknown wallet.
    let unknown = msisdn("3009");
    problem_strict(
        app.post(&cast.operator, &format!("/wallets/{unknown}/pin"), &json!({"new_pin": "4826"}), Some(&key())).await,
        404,
        "not_found",
    )
    .await;
    app.assert_ledger_ok().await;
}

async fn three_wrong_current_pins_lock_the_wallet(db: Db) {
    let app = TestApp::shared(db);
    let cast = test_cast(app).await;
    let n = msisdn("3010");
    cast.open_wallet(app, &n, true).await;
    cast.set_pin(app, &n, "4826").await;
    let path = format!("/wallets/{n}/pin");
    for attempt in 1..=2 {
        let a = field_problem(
            app.post(&cast.operator, &path, &json!({"new_pin": "7391", "current_pin": "0582"}), Some(&key())).await,
            "current_pin",
            "wrong_pin",
        )
        .await;
        assert_eq!(cast.wallet(app, &n).await.json["state"], "active", "attempt {attempt}: {}", a.text);
    }
    let third = Answer::of(app.post(&cast.operator, &path, &json!({"new_pin": "7391", "current_pin": "0582"}), Some(&key())).await).await;
    assert_eq!(third.status, 422, "third wrong current PIN: {}", third.text);
    assert!(
        third.json["code"] == "wallet_locked" || crate::harness::has_field_error(&third.json, "current_pin", Some("wrong_pin")),
        "third wrong current PIN: {}",
        third.text
    );
    let w = cast.wallet(app, &n).await;
    assert_eq!(w.json["state"], "locked", "three wrong PINs lock the wallet");
    assert!(w.json["lock_reason"].is_string(), "{}", w.text);
    // Locked: even the right PIN is refused.
    problem_strict(
        app.post(&cast.operator, &path, &json!({"new_pin": "7391", "current_pin": "4826"}), Some(&key())).await,
        422,
        "wallet_locked",
    )
    .await;
    app.assert_ledger_ok().await;
}

async fn lock_fails_pending_charges_and_unlock_resets_the_attempts(db: Db) {
    let app = TestApp::shared(db);
    let cast = test_cast(app).await;
    // A number ending 1009: the sandbox leaves its charges pending.
    let n = msisdn("1009");
    cast.open_wallet(app, &n, true).await;
    cast.set_pin(app, &n, "4826").await;
    let pending = cast.charge(app, &n, "100").await;
    let lock = format!("/wallets/{n}/lock");
    let unlock = format!("/wallets/{n}/unlock");
    field_error(app.post(&cast.operator, &lock, &json!({}), Some(&key())).await, "reason", Some("missing_field")).await;
    field_error(app.post(&cast.operator, &lock, &json!({"reason": "  "}), Some(&key())).await, "reason", None).await;
    problem_strict(app.post(&cast.operator, &unlock, &json!({"reason": "not locked"}), Some(&key())).await, 409, "invalid_state").await;
    let a = ok(app.post_new(&cast.operator, &lock, &json!({"reason": "suspected fraud"})).await, "lock");
    assert_eq!(a.json["state"], "locked");
    assert_eq!(a.json["lock_reason"], "suspected fraud");
    problem_strict(app.post(&cast.operator, &lock, &json!({"reason": "again"}), Some(&key())).await, 409, "invalid_state").await;
    let c = app.wait_for(&cast.merchant_token, &pending, "failed", Duration::from_secs(5)).await;
    assert_eq!(c["failure_reason"], "wallet_locked");
    // Locked wallets take no cash-in and no PIN change.
    let body = json!({"customer_msisdn": n, "amount": "100"});
    problem_strict(app.post(&cast.agent_token, "/agents/cash-in", &body, Some(&key())).await, 422, "wallet_locked").await;
    let change = json!({"new_pin": "7391", "current_pin": "4826"});
    problem_strict(app.post(&cast.operator, &format!("/wallets/{n}/pin"), &change, Some(&key())).await, 422, "wallet_locked").await;
    // Unlocking makes it active again.
    let a = ok(app.post_new(&cast.operator, &unlock, &json!({"reason": "customer identified"})).await, "unlock");
    assert_eq!(a.json["state"], "active");
    assert_eq!(a.json["lock_reason"], Value::Null);
    problem_strict(app.post(&cast.operator, &unlock, &json!({"reason": "again"}), Some(&key())).await, 409, "invalid_state").await;
    // Lock out with three wrong PINs, unlock: the count starts again from zero.
    let path = format!("/wallets/{n}/pin");
    let wrong = json!({"new_pin": "7391", "current_pin": "0582"});
    for _ in 0..3 {
        assert_eq!(app.post(&cast.operator, &path, &wrong, Some(&key())).await.status(), 422);
    }
    assert_eq!(cast.wallet(app, &n).await.json["state"], "locked");
    ok(app.post_new(&cast.operator, &unlock, &json!({"reason": "customer called"})).await, "unlock after lockout");
    for attempt in 1..=2 {
        field_problem(app.post(&cast.operator, &path, &wrong, Some(&key())).await, "current_pin", "wrong_pin").await;
        assert_eq!(cast.wallet(app, &n).await.json["state"], "active", "wrong attempt {attempt} after unlocking");
    }
    ok(pin(app, &cast, &n, json!({"new_pin": "7391", "current_pin": "4826"})).await, "right PIN after two wrong ones");
    // Unknown wallets.
    let unknown = msisdn("3011");
    problem_strict(
        app.post(&cast.operator, &format!("/wallets/{unknown}/lock"), &json!({"reason": "x"}), Some(&key())).await,
        404,
        "not_found",
    )
    .await;
    app.assert_ledger_ok().await;
}

async fn kyc_raises_the_tier_and_its_limits(db: Db) {
    let app = TestApp::shared(db);
    let cast = test_cast(app).await;
    let n = msisdn("3012");
    cast.open_wallet(app, &n, false).await;
    let path = format!("/wallets/{n}/kyc");
    let post = |body: Value| {
        let (path, op) = (path.clone(), cast.operator.clone());
        async move { app.post(&op, &path, &body, Some(&key())).await }
    };
    // A national ID cannot give tier 2; a tier the country lacks; a bad ID number.
    field_error(post(json!({"tier": 2, "id_type": "national_id", "id_number": national_id()})).await, "tier", None).await;
    field_error(post(json!({"tier": 9, "id_type": "kra_pin", "id_number": kra_pin()})).await, "tier", None).await;
    field_error(post(json!({"tier": 1, "id_type": "national_id", "id_number": "12"})).await, "id_number", None).await;
    field_error(
        post(json!({"tier": 1, "id_type": "national_id", "id_number": national_id(), "note": "x"})).await,
        "note",
        Some("unknown_field"),
    )
    .await;
    assert_eq!(cast.wallet(app, &n).await.json["kyc_tier"], 0);
    // Tier 1 on a national ID.
    let id = national_id();
    let a = ok(app.post_new(&cast.operator, &path, &json!({"tier": 1, "id_type": "national_id", "id_number": id})).await, "kyc 1");
    assert_eq!(a.json["kyc_tier"], 1);
    assert_eq!(a.json["id_type"], "national_id");
    assert_eq!(a.json["id_number"], id.as_str());
    assert_eq!(raw_at(&a.text, &["limits", "per_transaction"]), "150000.00");
    assert_eq!(raw_at(&a.text, &["limits", "max_balance"]), "300000.00");
    // The same tier again, or a lower one: invalid state.
    problem_strict(post(json!({"tier": 1, "id_type": "national_id", "id_number": national_id()})).await, 409, "invalid_state").await;
    problem_strict(post(json!({"tier": 0, "id_type": "national_id", "id_number": national_id()})).await, 409, "invalid_state").await;
    // `1.0` is the tier 1 (JSON Schema's `integer` admits it); `1.5` is no tier.
    problem_strict(post(json!({"tier": 1.0, "id_type": "national_id", "id_number": national_id()})).await, 409, "invalid_state").await;
    problem_strict(post(json!({"tier": 1.5, "id_type": "national_id", "id_number": national_id()})).await, 400, "invalid_request").await;
    // Tier 2 on a KRA PIN.
    let a = ok(app.post_new(&cast.operator, &path, &json!({"tier": 2, "id_type": "kra_pin", "id_number": kra_pin()})).await, "kyc 2");
    assert_eq!(a.json["kyc_tier"], 2);
    assert_eq!(raw_at(&a.text, &["limits", "per_transaction"]), "250000.00");
    assert_eq!(raw_at(&a.text, &["limits", "daily"]), "500000.00");
    assert_eq!(raw_at(&a.text, &["limits", "max_balance"]), "500000.00");
    assert_eq!(cast.wallet(app, &n).await.json["kyc_tier"], 2);
    app.assert_ledger_ok().await;
}

async fn statement_pages_oldest_first(db: Db) {
    let app = TestApp::shared(db);
    let cast = test_cast(app).await;
    let n = msisdn("3013");
    cast.open_wallet(app, &n, true).await;
    let mut ids = vec![];
    for amount in ["100", "250.50", "300"] {
        ids.push(cast.cash_in(app, &n, amount).await.json["transaction_id"].as_str().unwrap().to_owned());
    }
    let path = format!("/wallets/{n}/transactions");
    let first = ok(app.get_answer(&cast.operator, &format!("{path}?limit=2")).await, "statement page 1");
    assert_eq!(first.json["has_more"], true, "{}", first.text);
    let cursor = first.json["next_cursor"].as_str().unwrap().to_owned();
    let lines = crate::harness::raw_items(&first.raw("data"));
    assert_eq!(lines.len(), 2);
    let expected = [("100.00", "100.00"), ("250.50", "350.50"), ("300.00", "650.50")];
    for (i, line) in lines.iter().enumerate() {
        let v: Value = serde_json::from_str(line).unwrap();
        assert_eq!(v["transaction_id"], ids[i].as_str(), "oldest first: {line}");
        assert_eq!(v["type"], "cash_in", "{line}");
        assert!(v["source_ref"].is_string(), "{line}");
        assert!(is_utc_timestamp(v["created_at"].as_str().unwrap()), "{line}");
        assert_eq!(crate::harness::raw_member(line, "amount"), expected[i].0, "{line}");
        assert_eq!(crate::harness::raw_member(line, "balance_after"), expected[i].1, "{line}");
    }
    let second = ok(app.get_answer(&cast.operator, &format!("{path}?limit=2&cursor={cursor}")).await, "statement page 2");
    assert_eq!(second.json["has_more"], false, "{}", second.text);
    assert_eq!(second.json["next_cursor"], Value::Null);
    let lines = crate::harness::raw_items(&second.raw("data"));
    assert_eq!(lines.len(), 1);
    assert_eq!(crate::harness::raw_member(&lines[0], "transaction_id"), format!("\"{}\"", ids[2]));
    assert_eq!(crate::harness::raw_member(&lines[0], "amount"), expected[2].0);
    assert_eq!(crate::harness::raw_member(&lines[0], "balance_after"), expected[2].1);
    // Everything at once by default.
    let all = ok(app.get_answer(&cast.operator, &path).await, "statement");
    assert_eq!(all.json["data"].as_array().unwrap().len(), 3);
    assert_eq!(all.json["has_more"], false);
    assert_eq!(cast.wallet(app, &n).await.raw("balance"), "650.50");
    // Bad paging parameters; unknown wallet.
    for q in ["limit=0", "limit=101", "limit=-1", "limit=2.5", "cursor=garbage", "cursor="] {
        problem_strict(app.get(&cast.operator, &format!("{path}?{q}")).await, 400, "invalid_request").await;
    }
    problem_strict(app.get(&cast.operator, &format!("/wallets/{}/transactions", msisdn("3014"))).await, 404, "not_found").await;
    app.assert_ledger_ok().await;
}

async fn wallets_need_the_wallets_scope(db: Db) {
    let app = TestApp::shared(db);
    let cast = test_cast(app).await;
    let n = msisdn("3015");
    cast.open_wallet(app, &n, false).await;
    let body = json!({"msisdn": msisdn("3016"), "first_name": "A", "last_name": "B"});
    for token in [&cast.merchant_token, &cast.agent_token, &cast.gateway] {
        problem_strict(app.post(token, "/wallets", &body, Some(&key())).await, 403, "insufficient_scope").await;
        problem_strict(app.get(token, &format!("/wallets/{n}")).await, 403, "insufficient_scope").await;
        problem_strict(app.get(token, &format!("/wallets/{n}/transactions")).await, 403, "insufficient_scope").await;
        problem_strict(
            app.post(token, &format!("/wallets/{n}/lock"), &json!({"reason": "x"}), Some(&key())).await,
            403,
            "insufficient_scope",
        )
        .await;
        problem_strict(
            app.post(token, &format!("/wallets/{n}/pin"), &json!({"new_pin": "4826"}), Some(&key())).await,
            403,
            "insufficient_scope",
        )
        .await;
    }
    let w = cast.wallet(app, &n).await;
    assert_eq!(w.json["state"], "active");
    assert_eq!(w.json["pin_set"], false);
    problem_strict(app.get(&cast.operator, &format!("/wallets/{}", msisdn("3016"))).await, 404, "not_found").await;
    app.assert_ledger_ok().await;
}

async fn live_wallets_are_invisible_to_test_tokens(db: Db) {
    let app = TestApp::shared(db);
    let live = Cast::live(app).await;
    let test = test_cast(app).await;
    let n = msisdn("3017");
    let opened = live.open_wallet(app, &n, true).await;
    assert_eq!(opened.json["mode"], "live");
    problem_strict(app.get(&test.operator, &format!("/wallets/{n}")).await, 404, "not_found").await;
    problem_strict(app.get(&test.operator, &format!("/wallets/{n}/transactions")).await, 404, "not_found").await;
    problem_strict(app.post(&test.operator, &format!("/wallets/{n}/lock"), &json!({"reason": "x"}), Some(&key())).await, 404, "not_found")
        .await;
    problem_strict(
        app.post(&test.operator, &format!("/wallets/{n}/pin"), &json!({"new_pin": "4826"}), Some(&key())).await,
        404,
        "not_found",
    )
    .await;
    // The same number may hold a test wallet too; each mode sees its own.
    let t = test.open_wallet(app, &n, false).await;
    assert_eq!(t.json["mode"], "test");
    assert_eq!(live.wallet(app, &n).await.json["mode"], "live");
    assert_eq!(live.wallet(app, &n).await.json["kyc_tier"], 1);
    assert_eq!(test.wallet(app, &n).await.json["kyc_tier"], 0);
    // A test wallet of another number is invisible to the live operator.
    let m = msisdn("3018");
    test.open_wallet(app, &m, false).await;
    problem_strict(app.get(&live.operator, &format!("/wallets/{m}")).await, 404, "not_found").await;
    app.assert_ledger_ok().await;
}

async fn opening_replays_under_its_key(db: Db) {
    let app = TestApp::shared(db);
    let cast = test_cast(app).await;
    let n = msisdn("3019");
    let body = json!({"msisdn": n, "first_name": "Amina", "last_name": "Otieno"});
    problem_strict(app.post(&cast.operator, "/wallets", &body, None).await, 400, "idempotency_key_missing").await;
    let k = key();
    let first = ok(Answer::of(app.post(&cast.operator, "/wallets", &body, Some(&k)).await).await, "open");
    let again = Answer::of(app.post(&cast.operator, "/wallets", &body, Some(&k)).await).await;
    assert_eq!(again.status, 200, "a replay, not 409: {}", again.text);
    assert_eq!(again.header("idempotent-replayed"), "true");
    assert_eq!(again.text, first.text, "replayed byte for byte");
    let other = json!({"msisdn": n, "first_name": "Someone", "last_name": "Else"});
    problem_strict(app.post(&cast.operator, "/wallets", &other, Some(&k)).await, 422, "idempotency_key_reused").await;
    // A new key for the same number is a second opening: refused.
    problem_strict(app.post(&cast.operator, "/wallets", &body, Some(&key())).await, 409, "invalid_state").await;
    app.assert_ledger_ok().await;
}

/// A retry of a PIN change that succeeded answers what it answered then, even when the wallet
/// has been locked since (the retry changes nothing); a new change of a locked wallet is refused.
async fn a_pin_change_replays_under_its_key_after_the_wallet_locked(db: Db) {
    let app = TestApp::shared(db);
    let cast = test_cast(app).await;
    let n = msisdn("3020");
    ok(open(app, &cast.operator, &json!({"msisdn": n, "first_name": "Amina", "last_name": "Otieno"})).await, "open");
    let path = format!("/wallets/{n}/pin");
    let body = json!({"new_pin": "4826"});
    let k = key();
    let first = ok(Answer::of(app.post(&cast.operator, &path, &body, Some(&k)).await).await, "first PIN");
    ok(app.post_new(&cast.operator, &format!("/wallets/{n}/lock"), &json!({"reason": "reported stolen"})).await, "lock");
    let again = Answer::of(app.post(&cast.operator, &path, &body, Some(&k)).await).await;
    assert_eq!(again.status, 200, "the stored answer, not wallet_locked: {}", again.text);
    assert_eq!(again.header("idempotent-replayed"), "true");
    assert_eq!(again.text, first.text, "replayed byte for byte");
    problem_strict(
        app.post(&cast.operator, &path, &json!({"new_pin": "5937", "current_pin": "4826"}), Some(&key())).await,
        422,
        "wallet_locked",
    )
    .await;
}
