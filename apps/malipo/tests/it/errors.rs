//! Contract sections 1, 9 and 10: one error format everywhere, request validation, body limits,
//! media types, request ids and rate limits.

use reqwest::Method;
use serde_json::{json, Value};

use crate::harness::{field_problem, problem_strict, stk, Answer, Db, Options, TestApp};

crate::on_both!(
    malformed_json_is_invalid_request,
    a_key_given_twice_is_invalid_request,
    wrong_json_type_is_invalid_request,
    non_object_body_is_invalid_request,
    unknown_field_is_refused_by_name,
    missing_field_is_reported,
    bad_msisdns_are_invalid_msisdn,
    bad_amounts_are_invalid_amount,
    text_that_displays_as_other_text_is_refused,
    amounts_beyond_the_currency_minor_units_are_invalid,
    amount_above_the_country_maximum_is_invalid,
    amount_as_numeric_string_is_accepted,
    currency_must_be_the_merchants,
    reference_over_64_characters_is_too_long,
    description_over_100_characters_is_too_long,
    several_field_problems_are_reported_together,
    body_over_64_kib_is_payload_too_large,
    text_plain_body_is_unsupported_media_type,
    json_with_charset_is_accepted,
    unknown_path_is_not_found_problem,
    wrong_method_is_method_not_allowed_problem,
    bad_query_parameter_is_invalid_request,
    rejected_request_writes_nothing,
    rate_limit_refuses_with_retry_after,
    authenticated_responses_carry_rate_limit_headers,
    every_response_carries_a_request_id,
    caller_request_id_is_echoed,
    overlong_or_invisible_request_id_is_replaced,
);

async fn stk_raw(app: &TestApp, token: &str, body: &str) -> reqwest::Response {
    app.send(Method::POST, Some(token), "/partner/stk", Some("application/json"), body.to_owned()).await
}

async fn malformed_json_is_invalid_request(db: Db) {
    let app = TestApp::shared(db);
    let (_, token) = app.merchant_token().await;
    for body in ["{\"payer_msisdn\": \"254712345678\",", "not json", "", "{\"a\":1}}"] {
        let a = problem_strict(stk_raw(app, &token, body).await, 400, "invalid_request").await;
        assert!(a.json.get("errors").is_none(), "{}", a.text);
    }
}

async fn a_key_given_twice_is_invalid_request(db: Db) {
    let app = TestApp::shared(db);
    let (_, token) = app.merchant_token().await;
    for body in [
        r#"{"payer_msisdn": "254712345678", "amount": 10, "amount": 10000, "reference": "R", "idem": "twice-1"}"#,
        r#"{"payer_msisdn": "254712345678", "amount": 10, "reference": "R", "idem": "twice-2", "idem": "twice-3"}"#,
    ] {
        let a = problem_strict(stk_raw(app, &token, body).await, 400, "invalid_request").await;
        assert!(a.json["detail"].as_str().unwrap().contains("duplicate field"), "{}", a.text);
    }
    assert_eq!(app.get_json(&token, "/partner/charges").await["data"], json!([]), "nothing was created");
}

async fn wrong_json_type_is_invalid_request(db: Db) {
    let app = TestApp::shared(db);
    let (_, token) = app.merchant_token().await;
    let cases = [
        json!({"payer_msisdn": "254712345678", "amount": 10, "reference": 1042, "idem": "k1"}),
        json!({"payer_msisdn": 254712345678_u64, "amount": 10, "reference": "R", "idem": "k2"}),
        json!({"payer_msisdn": "254712345678", "amount": true, "reference": "R", "idem": "k3"}),
        json!({"payer_msisdn": "254712345678", "amount": [10], "reference": "R", "idem": "k4"}),
        json!({"payer_msisdn": "254712345678", "amount": 10, "reference": "R", "idem": 5}),
    ];
    for body in cases {
        let a = problem_strict(app.post(&token, "/partner/stk", &body, None).await, 400, "invalid_request").await;
        assert!(!a.json["detail"].as_str().unwrap().is_empty());
    }
}

async fn non_object_body_is_invalid_request(db: Db) {
    let app = TestApp::shared(db);
    let (_, token) = app.merchant_token().await;
    for body in ["[]", "\"x\"", "42", "null"] {
        problem_strict(stk_raw(app, &token, body).await, 400, "invalid_request").await;
    }
}

async fn unknown_field_is_refused_by_name(db: Db) {
    let app = TestApp::shared(db);
    let (_, token) = app.merchant_token().await;
    let mut body = stk("254712345678", json!(10));
    body["foo"] = json!(1);
    let a = field_problem(app.post(&token, "/partner/stk", &body, None).await, "foo", "unknown_field").await;
    assert_eq!(a.json["errors"].as_array().unwrap().len(), 1, "{}", a.text);
    let mut body = stk("254712345678", json!(10));
    body["ammount"] = json!(10);
    field_problem(app.post(&token, "/partner/stk", &body, None).await, "ammount", "unknown_field").await;
}

async fn missing_field_is_reported(db: Db) {
    let app = TestApp::shared(db);
    let (_, token) = app.merchant_token().await;
    for field in ["payer_msisdn", "amount", "reference", "idem"] {
        let mut body = stk("254712345678", json!(10));
        body.as_object_mut().unwrap().remove(field);
        field_problem(app.post(&token, "/partner/stk", &body, None).await, field, "missing_field").await;
    }
}

async fn bad_msisdns_are_invalid_msisdn(db: Db) {
    let app = TestApp::shared(db);
    let (_, token) = app.merchant_token().await;
    for msisdn in [
        "2547123abc78",    // letters
        "+254712345678",   // leading +
        "25471234567",     // Kenya is 254 + 9 digits
        "2547123456789",   // one too many
        "0712345678",      // national format
        "999712345678",    // no such country
        "",                // empty
        "254 712 345 678", // spaces
    ] {
        let a =
            field_problem(app.post(&token, "/partner/stk", &stk(msisdn, json!(10)), None).await, "payer_msisdn", "invalid_msisdn").await;
        assert!(a.json["detail"].is_string());
    }
}

async fn bad_amounts_are_invalid_amount(db: Db) {
    let app = TestApp::shared(db);
    let (_, token) = app.merchant_token().await;
    let raw = |amount: &str| {
        let idem = uuid::Uuid::new_v4();
        format!("{{\"payer_msisdn\":\"254712345678\",\"amount\":{amount},\"reference\":\"R-1\",\"idem\":\"{idem}\"}}")
    };
    for amount in [
        "0",
        "0.00",
        "-5",
        "1e3",
        "1E3",
        "2.5e2",
        "\"abc\"",
        "\"\"",
        "\"1e3\"",
        "\"NaN\"",
        "250.001",
        "\"250.001\"",
        "\"-5\"",
        "\" 5\"",
        "99999999999999999999999",
        // Out of any range as JSON numbers: the amount's problem, not malformed JSON.
        "1e400",
        "-1e400",
        &"9".repeat(400),
        &format!("\"{}\"", "9".repeat(400)),
    ] {
        field_problem(stk_raw(app, &token, &raw(amount)).await, "amount", "invalid_amount").await;
    }
    // Too many decimals is said as such, however many digits there are.
    for amount in ["100.0000000000000000000000000001", "\"100.0000000000000000000000000001\"", "1.001"] {
        let a = field_problem(stk_raw(app, &token, &raw(amount)).await, "amount", "invalid_amount").await;
        assert!(a.json["errors"][0]["message"].as_str().unwrap().contains("decimals"), "{amount}: {}", a.text);
    }
    let a = field_problem(stk_raw(app, &token, &raw(&"9".repeat(400))).await, "amount", "invalid_amount").await;
    assert!(a.json["errors"][0]["message"].as_str().unwrap().contains("too large"), "{}", a.text);
    // Trailing zeros are exact: 250.000000000000000000000000000000 is 250.00.
    let ok = stk_raw(app, &token, &raw(&format!("250.{}", "0".repeat(40)))).await;
    let a = Answer::of(ok).await;
    assert_eq!(a.status, 200, "{}", a.text);
    assert_eq!(a.raw("amount"), "250.00");
}

async fn text_that_displays_as_other_text_is_refused(db: Db) {
    let app = TestApp::shared(db);
    let (_, token) = app.merchant_token().await;
    // A right-to-left override makes ORDER-1042 display as another reference; zero-width and
    // other format characters hide characters; none reaches a statement or a screen.
    for reference in ["ORDER-\u{202E}2401", "ORDER\u{200B}-1042", "ORDER\u{2066}-1042", "\u{FEFF}ORDER-1042", "ORDER\u{2028}1042"] {
        let mut body = stk("254712345678", json!("10"));
        body["reference"] = json!(reference);
        field_problem(app.post(&token, "/partner/stk", &body, None).await, "reference", "invalid_value").await;
        let mut body = stk("254712345678", json!("10"));
        body["description"] = json!(reference);
        field_problem(app.post(&token, "/partner/stk", &body, None).await, "description", "invalid_value").await;
    }
    // Letters of every script and emoji are welcome.
    let mut body = stk("254712345678", json!("10"));
    body["reference"] = json!("Agizo-42 Café ✓ 订单");
    assert_eq!(app.post(&token, "/partner/stk", &body, None).await.status(), 200);
}

async fn amounts_beyond_the_currency_minor_units_are_invalid(db: Db) {
    let app = TestApp::shared(db);
    let c = app.org("merchant", "UG").await;
    let token = app.token(&c).await;
    let a = field_problem(app.post(&token, "/partner/stk", &stk("256712345678", json!(1.5)), None).await, "amount", "invalid_amount").await;
    assert!(a.json["errors"][0]["message"].as_str().unwrap().contains("UGX"), "{}", a.text);
    // A whole amount is fine, and written with two decimals.
    let r = app.post(&token, "/partner/stk", &stk("256712345678", json!(5000)), None).await;
    let a = Answer::of(r).await;
    assert_eq!(a.status, 200, "{}", a.text);
    assert_eq!(a.json["currency"], "UGX");
    assert_eq!(a.raw("amount"), "5000.00");
}

async fn amount_above_the_country_maximum_is_invalid(db: Db) {
    let app = TestApp::shared(db);
    let (_, token) = app.merchant_token().await;
    // Kenya's max_charge is 250000.
    field_problem(app.post(&token, "/partner/stk", &stk("254712345678", json!("250000.01")), None).await, "amount", "invalid_amount").await;
    let r = app.post(&token, "/partner/stk", &stk("254700001009", json!("250000")), None).await;
    assert_eq!(r.status(), 200, "the maximum itself is allowed");
}

async fn amount_as_numeric_string_is_accepted(db: Db) {
    let app = TestApp::shared(db);
    let (_, token) = app.merchant_token().await;
    let (_, text) = {
        let r = app.post(&token, "/partner/stk", &stk("254700001009", json!("250.5")), None).await;
        assert_eq!(r.status(), 200);
        ((), r.text().await.unwrap())
    };
    assert_eq!(crate::harness::raw_member(&text, "amount"), "250.50");
    let r = stk_raw(app, &token, "{\"payer_msisdn\":\"254700001009\",\"amount\":99.9,\"reference\":\"R\",\"idem\":\"n-1\"}").await;
    let a = Answer::of(r).await;
    assert_eq!(a.status, 200, "{}", a.text);
    assert_eq!(a.raw("amount"), "99.90", "parsed exactly, not through a float");
}

async fn currency_must_be_the_merchants(db: Db) {
    let app = TestApp::shared(db);
    let (_, token) = app.merchant_token().await;
    let mut body = stk("254712345678", json!(10));
    body["currency"] = json!("UGX");
    problem_strict(app.post(&token, "/partner/stk", &body, None).await, 422, "currency_mismatch").await;
    let mut body = stk("254700001009", json!(10));
    body["currency"] = json!("KES");
    let r = app.post(&token, "/partner/stk", &body, None).await;
    assert_eq!(r.status(), 200, "the merchant's own currency is accepted");
    // A payer in another currency's country cannot be charged by a KES merchant.
    problem_strict(app.post(&token, "/partner/stk", &stk("256712345678", json!(10)), None).await, 422, "currency_mismatch").await;
}

async fn reference_over_64_characters_is_too_long(db: Db) {
    let app = TestApp::shared(db);
    let (_, token) = app.merchant_token().await;
    let mut body = stk("254712345678", json!(10));
    body["reference"] = json!("R".repeat(65));
    field_problem(app.post(&token, "/partner/stk", &body, None).await, "reference", "too_long").await;
    let mut body = stk("254700001009", json!(10));
    body["reference"] = json!("é".repeat(64));
    assert_eq!(app.post(&token, "/partner/stk", &body, None).await.status(), 200, "64 characters are allowed");
    // Printable characters only.
    let mut body = stk("254712345678", json!(10));
    body["reference"] = json!("ORDER\u{7}1");
    field_problem(app.post(&token, "/partner/stk", &body, None).await, "reference", "invalid_value").await;
}

async fn description_over_100_characters_is_too_long(db: Db) {
    let app = TestApp::shared(db);
    let (_, token) = app.merchant_token().await;
    let mut body = stk("254712345678", json!(10));
    body["description"] = json!("d".repeat(101));
    field_problem(app.post(&token, "/partner/stk", &body, None).await, "description", "too_long").await;
    let mut body = stk("254700001009", json!(10));
    body["description"] = json!("d".repeat(100));
    let a = Answer::of(app.post(&token, "/partner/stk", &body, None).await).await;
    assert_eq!(a.status, 200);
    assert_eq!(a.json["description"], "d".repeat(100));
}

async fn several_field_problems_are_reported_together(db: Db) {
    let app = TestApp::shared(db);
    let (_, token) = app.merchant_token().await;
    let body = json!({"payer_msisdn": "12", "amount": "0", "reference": "R".repeat(70), "idem": "k"});
    let a = problem_strict(app.post(&token, "/partner/stk", &body, None).await, 422, "validation_failed").await;
    let mut got: Vec<(String, String)> = a.json["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["field"].as_str().unwrap().to_owned(), e["code"].as_str().unwrap().to_owned()))
        .collect();
    got.sort();
    let want = [("amount", "invalid_amount"), ("payer_msisdn", "invalid_msisdn"), ("reference", "too_long")];
    assert_eq!(got, want.map(|(f, c)| (f.to_owned(), c.to_owned())));
}

async fn body_over_64_kib_is_payload_too_large(db: Db) {
    let app = TestApp::shared(db);
    let (_, token) = app.merchant_token().await;
    let mut body = stk("254712345678", json!(10));
    body["description"] = json!("x".repeat(64 * 1024));
    problem_strict(app.post(&token, "/partner/stk", &body, None).await, 413, "payload_too_large").await;
    // Also without a Content-Length (chunked), over a raw connection.
    let addr = app.running.addr;
    let bearer = token.clone();
    let answer = tokio::task::spawn_blocking(move || {
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        let head = format!(
            "POST /api/v1/partner/stk HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {bearer}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
        );
        s.write_all(head.as_bytes()).unwrap();
        let chunk = "y".repeat(8 * 1024);
        for _ in 0..10 {
            if s.write_all(format!("{:x}\r\n{chunk}\r\n", chunk.len()).as_bytes()).is_err() {
                break;
            }
        }
        let _ = s.write_all(b"0\r\n\r\n");
        let mut out = String::new();
        let _ = s.read_to_string(&mut out);
        out
    })
    .await
    .unwrap();
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(answer.contains("payload_too_large"), "{answer}");
    // The token endpoint has the same limit.
    let big = format!("grant_type=client_credentials&scope={}", "a".repeat(65 * 1024));
    let r = app.send(Method::POST, None, "/oauth/token", Some("application/x-www-form-urlencoded"), big).await;
    assert_eq!(r.status(), 413);
}

async fn text_plain_body_is_unsupported_media_type(db: Db) {
    let app = TestApp::shared(db);
    let (_, token) = app.merchant_token().await;
    let body = serde_json::to_string(&stk("254712345678", json!(10))).unwrap();
    problem_strict(
        app.send(Method::POST, Some(&token), "/partner/stk", Some("text/plain"), body.clone()).await,
        415,
        "unsupported_media_type",
    )
    .await;
    problem_strict(app.send(Method::POST, Some(&token), "/partner/stk", None, body.clone()).await, 415, "unsupported_media_type").await;
    problem_strict(
        app.send(Method::POST, Some(&token), "/partner/stk", Some("application/x-www-form-urlencoded"), "payer_msisdn=254712345678").await,
        415,
        "unsupported_media_type",
    )
    .await;
}

async fn json_with_charset_is_accepted(db: Db) {
    let app = TestApp::shared(db);
    let (_, token) = app.merchant_token().await;
    for ct in ["application/json; charset=utf-8", "application/json;charset=UTF-8", "Application/JSON"] {
        let body = serde_json::to_string(&stk("254700001009", json!(10))).unwrap();
        let a = Answer::of(app.send(Method::POST, Some(&token), "/partner/stk", Some(ct), body).await).await;
        assert_eq!(a.status, 200, "{ct}: {}", a.text);
        assert!(a.header("content-type").starts_with("application/json"));
    }
}

async fn unknown_path_is_not_found_problem(db: Db) {
    let app = TestApp::shared(db);
    let (_, token) = app.merchant_token().await;
    problem_strict(app.get(&token, "/partner/nothing-here").await, 404, "not_found").await;
    problem_strict(app.http.get(format!("{}/nope", app.base)).send().await.unwrap(), 404, "not_found").await;
    problem_strict(app.http.get(format!("{}/api/v2/partner/stk", app.base)).send().await.unwrap(), 404, "not_found").await;
}

async fn wrong_method_is_method_not_allowed_problem(db: Db) {
    let app = TestApp::shared(db);
    let (_, token) = app.merchant_token().await;
    let r = app.send(Method::DELETE, Some(&token), "/partner/stk", None, "").await;
    assert_eq!(
        r.headers().get("allow").map(|v| v.to_str().unwrap().to_owned()),
        Some("POST".to_owned()),
        "RFC 9110: 405 says what is allowed"
    );
    problem_strict(r, 405, "method_not_allowed").await;
    let r = app.send(Method::PUT, Some(&token), "/webhooks/endpoints", None, "").await;
    assert_eq!(r.headers().get("allow").map(|v| v.to_str().unwrap().to_owned()), Some("POST, GET".to_owned()));
    problem_strict(r, 405, "method_not_allowed").await;
    problem_strict(app.send(Method::GET, Some(&token), "/partner/stk", None, "").await, 405, "method_not_allowed").await;
    problem_strict(app.send(Method::GET, None, "/oauth/token", None, "").await, 405, "method_not_allowed").await;
    problem_strict(
        app.send(Method::POST, Some(&token), "/partner/balance", Some("application/json"), "{}").await,
        405,
        "method_not_allowed",
    )
    .await;
}

async fn bad_query_parameter_is_invalid_request(db: Db) {
    let app = TestApp::shared(db);
    let (_, token) = app.merchant_token().await;
    problem_strict(app.get(&token, "/partner/charges?limit=abc").await, 400, "invalid_request").await;
    problem_strict(app.get(&token, "/partner/charges?state=nonsense").await, 400, "invalid_request").await;
    problem_strict(app.get(&token, "/partner/charges?from=yesterday").await, 400, "invalid_request").await;
    problem_strict(app.get(&token, "/partner/balance?account=savings").await, 400, "invalid_request").await;
}

async fn rejected_request_writes_nothing(db: Db) {
    let app = TestApp::shared(db);
    let (_, token) = app.merchant_token().await;
    let bad = json!({"payer_msisdn": "254700001009", "amount": "0", "reference": "R-1", "idem": "same-key"});
    field_problem(app.post(&token, "/partner/stk", &bad, None).await, "amount", "invalid_amount").await;
    let mut unknown = bad.clone();
    unknown["extra"] = json!(true);
    field_problem(app.post(&token, "/partner/stk", &unknown, None).await, "extra", "unknown_field").await;
    let list = app.get_json(&token, "/partner/charges").await;
    assert_eq!(list["data"], json!([]), "a refused request creates nothing");
    problem_strict(app.get(&token, "/partner/status?reference=R-1").await, 404, "not_found").await;
    // The key was not consumed: the corrected request succeeds as a first request.
    let good = json!({"payer_msisdn": "254700001009", "amount": "10", "reference": "R-1", "idem": "same-key"});
    let r = app.post(&token, "/partner/stk", &good, None).await;
    assert_eq!(r.status(), 200);
    assert!(r.headers().get("idempotent-replayed").is_none());
    let list = app.get_json(&token, "/partner/charges").await;
    assert_eq!(list["data"].as_array().unwrap().len(), 1);
    app.assert_ledger_ok().await;
}

async fn rate_limit_refuses_with_retry_after(db: Db) {
    let app = TestApp::with(db, Options { rate_limit_test: 3, ..Default::default() }).await;
    let (c, token) = app.merchant_token().await;
    let mut refused = None;
    for _ in 0..10 {
        let r = app.get(&token, "/partner/balance").await;
        if r.status() == 429 {
            refused = Some(r);
            break;
        }
        assert_eq!(r.status(), 200);
    }
    let r = refused.expect("the bucket of 3 per second must run dry within 10 quick requests");
    let a = problem_strict(r, 429, "rate_limited").await;
    let retry: u64 = a.header("retry-after").parse().expect("Retry-After is whole seconds");
    assert!((1..=2).contains(&retry), "Retry-After {retry}");
    assert_eq!(a.header("ratelimit-policy"), "3;w=1", "the refusal states the policy");
    assert!(a.header("ratelimit").contains("remaining=0"), "{:?}", a.header("ratelimit"));
    // Another credential has its own bucket.
    let other = app.token(&app.merchant().await).await;
    assert_eq!(app.get(&other, "/partner/balance").await.status(), 200);
    // The token endpoint is not behind the bearer rate limit.
    assert_eq!(app.token_json(&json!({"client_id": c.client_id, "client_secret": c.client_secret})).await.status(), 200);
    // The bucket refills (one request per 1/3 s).
    tokio::time::sleep(std::time::Duration::from_millis(400)).await;
    assert_eq!(app.get(&token, "/partner/balance").await.status(), 200);
    app.stop().await;
}

async fn authenticated_responses_carry_rate_limit_headers(db: Db) {
    let app = TestApp::with(db, Options { rate_limit_test: 50, ..Default::default() }).await;
    let (_, token) = app.merchant_token().await;
    let responses = [
        app.get(&token, "/partner/balance").await,
        app.get(&token, "/partner/charges").await,
        app.post(&token, "/partner/stk", &stk("254700001009", json!(10)), None).await,
        app.get(&token, "/partner/charges/ch_nothing").await,
        app.post(&token, "/partner/stk", &json!({}), None).await,
    ];
    let mut remaining: Vec<u32> = vec![];
    for r in responses {
        let a = Answer::of(r).await;
        assert_eq!(a.header("ratelimit-policy"), "50;w=1", "on a {} answer", a.status);
        let rl = a.header("ratelimit");
        assert!(rl.starts_with("limit=50, remaining="), "{rl}");
        let n: u32 = rl.split("remaining=").nth(1).unwrap().split(',').next().unwrap().parse().unwrap();
        remaining.push(n);
    }
    assert!(remaining.iter().all(|&n| n < 50), "each request takes from the bucket: {remaining:?}");
    app.stop().await;
}

async fn every_response_carries_a_request_id(db: Db) {
    let app = TestApp::shared(db);
    let (_, token) = app.merchant_token().await;
    let errors = [
        (app.http.get(app.url("/partner/balance")).send().await.unwrap(), 401, "unauthorized"),
        (app.get(&token, "/partner/charges/ch_missing").await, 404, "not_found"),
        (app.get(&token, "/partner/charges?limit=0").await, 400, "invalid_request"),
        (app.post(&token, "/partner/stk", &json!({"x": 1}), None).await, 422, "validation_failed"),
        (app.send(Method::PUT, None, "/healthz", None, "").await, 405, "method_not_allowed"),
    ];
    let mut ids = std::collections::HashSet::new();
    for (r, status, code) in errors {
        let a = problem_strict(r, status, code).await;
        assert!(ids.insert(a.header("x-request-id")), "request ids are unique");
    }
    for r in [app.http.get(format!("{}/healthz", app.base)).send().await.unwrap(), app.get(&token, "/partner/balance").await] {
        let id = r.headers().get("x-request-id").expect("X-Request-Id on successes too").to_str().unwrap().to_owned();
        assert!(!id.is_empty() && ids.insert(id));
    }
}

async fn caller_request_id_is_echoed(db: Db) {
    let app = TestApp::shared(db);
    let (_, token) = app.merchant_token().await;
    let r = app.http.get(app.url("/partner/balance")).bearer_auth(&token).header("X-Request-Id", "abc-123").send().await.unwrap();
    assert_eq!(r.headers()["x-request-id"], "abc-123");
    let r =
        app.http.get(app.url("/partner/charges/ch_missing")).bearer_auth(&token).header("X-Request-Id", "abc-123").send().await.unwrap();
    let a = problem_strict(r, 404, "not_found").await;
    assert_eq!(a.json["request_id"], "abc-123");
    let id128 = "r".repeat(128);
    let r = app.http.get(app.url("/partner/charges/ch_missing")).bearer_auth(&token).header("X-Request-Id", &id128).send().await.unwrap();
    assert_eq!(r.headers()["x-request-id"], id128.as_str(), "128 characters are kept");
}

async fn overlong_or_invisible_request_id_is_replaced(db: Db) {
    let app = TestApp::shared(db);
    let (_, token) = app.merchant_token().await;
    for sent in ["r".repeat(129), "has space".to_owned(), "tab\there".to_owned()] {
        let r =
            app.http.get(app.url("/partner/charges/ch_missing")).bearer_auth(&token).header("X-Request-Id", &sent).send().await.unwrap();
        let a = problem_strict(r, 404, "not_found").await;
        let id = a.header("x-request-id");
        assert_ne!(id, sent);
        assert!(!id.is_empty() && id.len() <= 128, "{id}");
        assert_eq!(a.json["request_id"], Value::String(id));
    }
}
