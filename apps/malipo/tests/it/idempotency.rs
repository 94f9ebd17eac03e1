//! Contract section 10, idempotency keys: exactly one effect, scoping, key syntax.

use serde_json::{json, Value};

use crate::harness::{field_problem, key, msisdn, problem_strict, stk, Answer, Db, TestApp};

crate::on_both!(
    concurrent_identical_requests_make_exactly_one_charge,
    creations_at_once_are_committed_together_and_each_answered_as_alone,
    header_equal_to_body_idem_is_accepted,
    header_different_from_body_idem_is_refused,
    quoted_header_key_equals_bare_key,
    keys_are_scoped_per_organisation,
    keys_are_scoped_per_mode,
    keys_are_scoped_per_operation,
    key_of_255_characters_is_accepted_and_256_refused,
    key_reused_with_a_different_body_is_refused,
    key_reuse_compares_the_canonical_body,
    keys_with_invisible_characters_are_refused,
    replay_survives_state_changes,
    the_header_key_is_asked_for_before_the_fields_are_judged,
);

async fn concurrent_identical_requests_make_exactly_one_charge(db: Db) {
    let app = TestApp::shared(db);
    let (_, token) = app.merchant_token().await;
    let body = json!({"payer_msisdn": "254700001009", "amount": "99.99", "reference": "RACE", "idem": "race-1"});
    let requests = (0..48).map(|_| async { Answer::of(app.post(&token, "/partner/stk", &body, None).await).await });
    let answers = futures_util::future::join_all(requests).await;
    let mut refs = std::collections::HashSet::new();
    let (mut firsts, mut replays, mut in_progress) = (0, 0, 0);
    let mut first_body = None;
    for a in &answers {
        match a.status {
            200 => {
                refs.insert(a.json["charge_ref"].as_str().unwrap().to_owned());
                assert_eq!(a.raw("amount"), "99.99");
                if a.header("idempotent-replayed") == "true" {
                    replays += 1;
                } else {
                    firsts += 1;
                    first_body = Some(a.text.clone());
                }
            }
            409 => {
                assert_eq!(a.json["code"], "idempotency_in_progress", "{}", a.text);
                assert_eq!(a.header("retry-after"), "1");
                in_progress += 1;
            }
            other => panic!("unexpected {other}: {}", a.text),
        }
    }
    assert_eq!(firsts, 1, "exactly one request did the work ({replays} replays, {in_progress} in progress)");
    assert_eq!(refs.len(), 1, "every success names the same charge");
    let first_body = first_body.unwrap();
    for a in answers.iter().filter(|a| a.status == 200) {
        assert_eq!(a.text, first_body, "replays are byte for byte");
    }
    let list = app.get_json(&token, "/partner/charges").await;
    let data = list["data"].as_array().unwrap();
    assert_eq!(data.len(), 1, "exactly one charge exists");
    assert_eq!(data[0]["charge_ref"].as_str().unwrap(), refs.iter().next().unwrap());
    // After the race, the key replays.
    let again = Answer::of(app.post(&token, "/partner/stk", &body, None).await).await;
    assert_eq!(again.status, 200);
    assert_eq!(again.header("idempotent-replayed"), "true");
    assert_eq!(again.text, first_body);
    app.assert_ledger_ok().await;
}

/// Rounds of 30 different charges and 8 copies of one more, sent at once, until some were
/// committed in groups (several creations in one transaction; `/metrics` counts them). Whatever
/// the groups, each request is answered as it would be alone: its own charge, the copies one
/// charge, replayed byte for byte.
async fn creations_at_once_are_committed_together_and_each_answered_as_alone(db: Db) {
    let app = TestApp::spawn(db).await;
    let (_, token) = app.merchant_token().await;
    // The merchant's first charge looks its account up (a read before its transaction, then
    // cached), so the rounds below start with it known.
    app.charge_ref(&token, "254700001009", "10").await;
    let mut seen = std::collections::HashSet::new();
    let mut grouped = 0.0;
    for round in 0..5 {
        let body = |i: usize| json!({"payer_msisdn": "254700001009", "amount": "12.50", "reference": format!("R{round}-{i}"), "idem": format!("r{round}-{i}")});
        let requests = (0..38).map(|i| {
            let body = body(i.min(30));
            let app = &app;
            let token = &token;
            async move { (i.min(30), Answer::of(app.post(token, "/partner/stk", &body, None).await).await) }
        });
        let answers = futures_util::future::join_all(requests).await;
        let mut copies = Vec::new();
        for (i, a) in &answers {
            assert_eq!(a.status, 200, "{}", a.text);
            assert_eq!(a.json["reference"], format!("R{round}-{i}"), "each request is answered with its own charge");
            if *i == 30 {
                copies.push(a);
            } else {
                assert_eq!(a.header("idempotent-replayed"), "", "a first answer is not a replay");
                assert!(seen.insert(a.json["charge_ref"].as_str().unwrap().to_owned()), "a charge per request: {}", a.text);
            }
        }
        assert!(copies.iter().all(|a| a.text == copies[0].text), "the copies are answered byte for byte alike");
        assert_eq!(copies.iter().filter(|a| a.header("idempotent-replayed") != "true").count(), 1, "one copy did the work");
        assert!(seen.insert(copies[0].json["charge_ref"].as_str().unwrap().to_owned()));
        grouped = crate::ops::sample(&crate::ops::metrics(&app).await, "malipo_create_group_members_total", &[]).unwrap_or(0.0);
        if grouped > 0.0 {
            break;
        }
    }
    assert!(grouped > 0.0, "some creations were committed together");
    for r in &seen {
        let c = app.get_json(&token, &format!("/partner/charges/{r}")).await;
        assert_eq!(c["charge_ref"].as_str(), Some(r.as_str()), "every answered charge was kept");
    }
    app.assert_ledger_ok().await;
    app.stop().await;
}

async fn header_equal_to_body_idem_is_accepted(db: Db) {
    let app = TestApp::shared(db);
    let (_, token) = app.merchant_token().await;
    let body = stk("254700001009", json!(10));
    let key = body["idem"].as_str().unwrap().to_owned();
    let first = Answer::of(app.post(&token, "/partner/stk", &body, Some(&key)).await).await;
    assert_eq!(first.status, 200, "{}", first.text);
    // Without the header, the body key alone finds the same request.
    let again = Answer::of(app.post(&token, "/partner/stk", &body, None).await).await;
    assert_eq!(again.header("idempotent-replayed"), "true");
    assert_eq!(again.json["charge_ref"], first.json["charge_ref"]);
}

async fn header_different_from_body_idem_is_refused(db: Db) {
    let app = TestApp::shared(db);
    let (_, token) = app.merchant_token().await;
    let body = stk("254700001009", json!(10));
    problem_strict(app.post(&token, "/partner/stk", &body, Some("another-key")).await, 400, "invalid_request").await;
    assert_eq!(app.get_json(&token, "/partner/charges").await["data"], json!([]));
}

async fn quoted_header_key_equals_bare_key(db: Db) {
    let app = TestApp::shared(db);
    let (_, token) = app.merchant_token().await;
    // On the charge endpoint: the quoted header equals the bare body key.
    let body = json!({"payer_msisdn": "254700001009", "amount": 10, "reference": "Q", "idem": "k-1"});
    let first = Answer::of(app.post(&token, "/partner/stk", &body, Some("\"k-1\"")).await).await;
    assert_eq!(first.status, 200, "{}", first.text);
    let bare = Answer::of(app.post(&token, "/partner/stk", &body, Some("k-1")).await).await;
    assert_eq!(bare.header("idempotent-replayed"), "true");
    assert_eq!(bare.text, first.text);
    // On a header-only endpoint: quoted first, bare second is a replay.
    let w = json!({"msisdn": msisdn("2222"), "balance": "5"});
    let quoted = Answer::of(app.post(&token, "/sandbox/wallets", &w, Some("\"w-1\"")).await).await;
    assert_eq!(quoted.status, 200, "{}", quoted.text);
    assert_eq!(quoted.header("idempotent-replayed"), "");
    let bare = Answer::of(app.post(&token, "/sandbox/wallets", &w, Some("w-1")).await).await;
    assert_eq!(bare.status, 200);
    assert_eq!(bare.header("idempotent-replayed"), "true");
    // An escaped quote inside the string is part of the key.
    let esc = Answer::of(app.post(&token, "/sandbox/wallets", &w, Some(r#""a\"b""#)).await).await;
    assert_eq!(esc.status, 200);
    let plain = Answer::of(app.post(&token, "/sandbox/wallets", &w, Some(r#"a"b"#)).await).await;
    assert_eq!(plain.header("idempotent-replayed"), "true");
    // An unterminated quoted string is malformed.
    problem_strict(app.post(&token, "/sandbox/wallets", &w, Some("\"w-2")).await, 400, "invalid_request").await;
}

async fn keys_are_scoped_per_organisation(db: Db) {
    let app = TestApp::shared(db);
    let (_, a) = app.merchant_token().await;
    let (_, b) = app.merchant_token().await;
    let body = json!({"payer_msisdn": "254700001009", "amount": 10, "reference": "SAME", "idem": "shared-key"});
    let ra = Answer::of(app.post(&a, "/partner/stk", &body, None).await).await;
    let rb = Answer::of(app.post(&b, "/partner/stk", &body, None).await).await;
    assert_eq!((ra.status, rb.status), (200, 200));
    assert_eq!(rb.header("idempotent-replayed"), "", "another organisation's key is not a replay");
    assert_ne!(ra.json["charge_ref"], rb.json["charge_ref"]);
    assert_eq!(app.get_json(&a, "/partner/charges").await["data"].as_array().unwrap().len(), 1);
    assert_eq!(app.get_json(&b, "/partner/charges").await["data"].as_array().unwrap().len(), 1);
}

async fn keys_are_scoped_per_mode(db: Db) {
    let app = TestApp::shared(db);
    let (c, test) = app.merchant_token().await;
    let live = app.token(&app.live(&c.org_id).await).await;
    let body = json!({"payer_msisdn": "254700001009", "amount": 10, "reference": "SAME", "idem": "mode-key"});
    let t = Answer::of(app.post(&test, "/partner/stk", &body, None).await).await;
    let l = Answer::of(app.post(&live, "/partner/stk", &body, None).await).await;
    assert_eq!((t.status, l.status), (200, 200), "{}", l.text);
    assert_eq!(l.header("idempotent-replayed"), "");
    assert_eq!((t.json["mode"].as_str(), l.json["mode"].as_str()), (Some("test"), Some("live")));
    assert_ne!(t.json["charge_ref"], l.json["charge_ref"]);
}

async fn keys_are_scoped_per_operation(db: Db) {
    let app = TestApp::shared(db);
    let (_, token) = app.merchant_token().await;
    let c = app
        .post(&token, "/partner/stk", &json!({"payer_msisdn": "254700001009", "amount": 10, "reference": "R", "idem": "op-key"}), None)
        .await;
    assert_eq!(c.status(), 200);
    let w = Answer::of(app.post(&token, "/sandbox/wallets", &json!({"msisdn": "254711112223"}), Some("op-key")).await).await;
    assert_eq!(w.status, 200, "{}", w.text);
    assert_eq!(w.header("idempotent-replayed"), "");
    assert_eq!(w.json["msisdn"], "254711112223");
}

async fn key_of_255_characters_is_accepted_and_256_refused(db: Db) {
    let app = TestApp::shared(db);
    let (_, token) = app.merchant_token().await;
    let mut body = stk("254700001009", json!(10));
    body["idem"] = json!("k".repeat(256));
    // A body field's problem is the body's: 422 on `idem` (the header's is a 400, below).
    field_problem(app.post(&token, "/partner/stk", &body, None).await, "idem", "too_long").await;
    let w = json!({"msisdn": "254711112224"});
    problem_strict(app.post(&token, "/sandbox/wallets", &w, Some(&"k".repeat(256))).await, 400, "invalid_request").await;
    body["idem"] = json!("k".repeat(255));
    assert_eq!(app.post(&token, "/partner/stk", &body, None).await.status(), 200);
    let mut empty = stk("254700001009", json!(10));
    empty["idem"] = json!("");
    field_problem(app.post(&token, "/partner/stk", &empty, None).await, "idem", "missing_field").await;
    assert_eq!(app.get_json(&token, "/partner/charges").await["data"].as_array().unwrap().len(), 1);
}

async fn key_reused_with_a_different_body_is_refused(db: Db) {
    let app = TestApp::shared(db);
    let (_, token) = app.merchant_token().await;
    let body = json!({"payer_msisdn": "254700001009", "amount": "10", "reference": "R", "idem": "reuse"});
    assert_eq!(app.post(&token, "/partner/stk", &body, None).await.status(), 200);
    for (field, value) in [("amount", json!("10.01")), ("reference", json!("R2")), ("payer_msisdn", json!("254700002009"))] {
        let mut other = body.clone();
        other[field] = value;
        problem_strict(app.post(&token, "/partner/stk", &other, None).await, 422, "idempotency_key_reused").await;
    }
    let w = json!({"msisdn": "254711112225"});
    assert_eq!(app.post(&token, "/sandbox/wallets", &w, Some("w-reuse")).await.status(), 200);
    let w2 = json!({"msisdn": "254711112226"});
    problem_strict(app.post(&token, "/sandbox/wallets", &w2, Some("w-reuse")).await, 422, "idempotency_key_reused").await;
    assert_eq!(app.get_json(&token, "/partner/charges").await["data"].as_array().unwrap().len(), 1);
}

async fn key_reuse_compares_the_canonical_body(db: Db) {
    let app = TestApp::shared(db);
    let (_, token) = app.merchant_token().await;
    let one = r#"{"payer_msisdn":"254700001009","amount":"10","reference":"R","idem":"canon"}"#;
    let two = "{ \"idem\" : \"canon\",\n \"reference\":\"R\", \"amount\":\"10\", \"payer_msisdn\":\"254700001009\" }";
    let send = |b: &'static str| app.send(reqwest::Method::POST, Some(&token), "/partner/stk", Some("application/json"), b);
    let first = Answer::of(send(one).await).await;
    assert_eq!(first.status, 200);
    let second = Answer::of(send(two).await).await;
    assert_eq!(second.status, 200, "the same request, formatted differently, is a replay: {}", second.text);
    assert_eq!(second.header("idempotent-replayed"), "true");
    assert_eq!(second.text, first.text);
    // Numbers compare by value, exactly: 10, 10.0 and 10.00 are one amount, 10.01 another.
    let send = |b: String| app.send(reqwest::Method::POST, Some(&token), "/partner/stk", Some("application/json"), b);
    let body = |amount: &str| format!(r#"{{"payer_msisdn":"254700001009","amount":{amount},"reference":"R","idem":"canon-number"}}"#);
    let first = Answer::of(send(body("10")).await).await;
    assert_eq!(first.status, 200, "{}", first.text);
    for same in ["10.0", "10.00", "10.000000000000000000000000000000"] {
        let again = Answer::of(send(body(same)).await).await;
        assert_eq!(again.header("idempotent-replayed"), "true", "{same}: {}", again.text);
    }
    problem_strict(send(body("10.01")).await, 422, "idempotency_key_reused").await;
    // An amount that differs only far past the currency's decimals is a different request, and
    // invalid before its key is looked at.
    field_problem(send(body("10.000000000000000000000000001")).await, "amount", "invalid_amount").await;
}

async fn keys_with_invisible_characters_are_refused(db: Db) {
    let app = TestApp::shared(db);
    let (_, token) = app.merchant_token().await;
    for key in ["has space", "tab\tkey", "ключ", "new\nline", "\u{0}", "\u{202E}abc"] {
        let mut body = stk("254700001009", json!(10));
        body["idem"] = json!(key);
        let a = field_problem(app.post(&token, "/partner/stk", &body, None).await, "idem", "invalid_value").await;
        assert!(!a.text.contains("Idempotency-Key"), "a body field's problem does not speak of the header: {}", a.text);
    }
    let w = json!({"msisdn": "254711112227"});
    problem_strict(app.post(&token, "/sandbox/wallets", &w, Some("\"has space\"")).await, 400, "invalid_request").await;
    assert_eq!(app.get_json(&token, "/partner/charges").await["data"], json!([]));
}

async fn replay_survives_state_changes(db: Db) {
    let app = TestApp::shared(db);
    let (_, token) = app.merchant_token().await;
    let body = json!({"payer_msisdn": "254700001009", "amount": 10, "reference": "R", "idem": "replay-after"});
    let first = Answer::of(app.post(&token, "/partner/stk", &body, None).await).await;
    let r = first.json["charge_ref"].as_str().unwrap().to_owned();
    assert_eq!(app.simulate(&token, &r, "approve").await.status(), 200);
    // The replay is the stored answer (pending), not the charge's current state.
    let again = Answer::of(app.post(&token, "/partner/stk", &body, None).await).await;
    assert_eq!(again.text, first.text);
    assert_eq!(again.json["state"], "pending");
    let now: Value = app.get_json(&token, &format!("/partner/charges/{r}")).await;
    assert_eq!(now["state"], "completed");
}

async fn the_header_key_is_asked_for_before_the_fields_are_judged(db: Db) {
    let app = TestApp::shared(db);
    let (_, token) = app.merchant_token().await;
    // The body's own problems (its JSON, a wire form) come before the header key; the fields'
    // problems after it, all at once.
    let bad = json!({"payee_msisdn": "07", "amount": "-1", "reference": ""});
    problem_strict(app.post(&token, "/payouts", &bad, None).await, 400, "idempotency_key_missing").await;
    let wrong_type = json!({"payee_msisdn": "07", "amount": true, "reference": ""});
    problem_strict(app.post(&token, "/payouts", &wrong_type, None).await, 400, "invalid_request").await;
    let a = problem_strict(app.post(&token, "/payouts", &bad, Some(&key())).await, 422, "validation_failed").await;
    let fields: Vec<&str> = a.json["errors"].as_array().unwrap().iter().map(|e| e["field"].as_str().unwrap()).collect();
    assert_eq!(fields, ["payee_msisdn", "amount", "reference"], "{}", a.text);
    // A path id that names nothing is answered after the key too.
    let cancel = "/biz/requests/nonsense/cancel";
    problem_strict(app.post(&token, cancel, &json!({}), None).await, 400, "idempotency_key_missing").await;
    problem_strict(app.post(&token, cancel, &json!({}), Some(&key())).await, 404, "not_found").await;
    // The sandbox's action is the body's own: before the key.
    let simulate = "/sandbox/charges/ch_nonsense/simulate";
    field_problem(app.post(&token, simulate, &json!({"action": "dance"}), None).await, "action", "invalid_value").await;
    problem_strict(app.post(&token, simulate, &json!({"action": "approve"}), None).await, 400, "idempotency_key_missing").await;
    problem_strict(app.post(&token, simulate, &json!({"action": "approve"}), Some(&key())).await, 404, "not_found").await;
}
