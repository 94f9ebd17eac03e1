//! Contract section 2: the token and revoke endpoints, bearer use, scopes.

use serde_json::{json, Value};

use crate::harness::{problem_strict, strict, Answer, Creds, Db, Options, TestApp};

crate::on_both!(
    json_token_request_answers_the_token_object,
    form_token_request_with_basic_auth,
    form_token_request_with_body_credentials,
    basic_credentials_are_form_urldecoded,
    basic_and_body_secret_together_are_invalid_request,
    wrong_secret_and_unknown_client_answer_alike,
    basic_auth_failure_names_the_basic_realm,
    form_without_grant_type_is_invalid_request,
    password_grant_is_unsupported,
    scope_subset_is_granted,
    scope_beyond_the_credential_is_invalid_scope,
    unknown_scope_is_invalid_scope,
    token_endpoint_takes_only_json_or_form,
    live_credential_gets_a_live_token,
    payouts_only_token_cannot_push_charges,
    missing_token_is_unauthorized_with_bearer_challenge,
    garbage_token_is_invalid_token,
    bearer_scheme_is_case_insensitive,
    other_authorization_schemes_are_unauthorized,
    revoked_token_is_refused_at_once_form,
    revoked_token_is_refused_at_once_json,
    revoking_an_unknown_token_answers_200,
    revoke_needs_valid_client_and_token,
    revoking_the_credential_kills_its_tokens,
    expired_token_says_it_expired,
    oauth2_crate_fetches_a_working_token_with_basic_auth,
    oauth2_crate_fetches_a_working_token_with_body_credentials,
    failed_token_requests_are_limited_per_client_id_and_per_address,
    a_flood_from_its_address_does_not_keep_the_right_credential_from_its_token,
);

/// Asserts a 200 token answer and returns its JSON.
async fn token_ok(r: reqwest::Response) -> Value {
    let a = Answer::of(r).await;
    assert_eq!(a.status, 200, "{}", a.text);
    assert_eq!(a.header("cache-control"), "no-store");
    assert!(a.header("content-type").starts_with("application/json"), "{}", a.header("content-type"));
    let v = a.json;
    assert!(v["access_token"].as_str().is_some_and(|t| t.len() >= 32), "{v}");
    assert_eq!(v["token_type"], "Bearer");
    assert!(v["expires_in"].is_i64(), "expires_in must be an integer: {v}");
    assert_eq!(v["expires_in"], 3600);
    assert!(v.get("refresh_token").is_none(), "no refresh token: {v}");
    v
}

async fn works(app: &TestApp, token: &str) {
    let r = app.get(token, "/partner/balance").await;
    assert_eq!(r.status(), 200, "token should work: {}", r.text().await.unwrap());
}

async fn refused(app: &TestApp, token: &str, description: &str) {
    let r = app.get(token, "/partner/balance").await;
    let challenge = r.headers().get("www-authenticate").map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default();
    problem_strict(r, 401, "invalid_token").await;
    assert!(challenge.starts_with("Bearer realm=\"malipo\""), "{challenge}");
    assert!(challenge.contains("error=\"invalid_token\""), "{challenge}");
    assert!(challenge.contains(&format!("error_description=\"{description}\"")), "{challenge}");
}

async fn json_token_request_answers_the_token_object(db: Db) {
    let app = TestApp::shared(db);
    let c = app.merchant().await;
    let r = app.token_json(&json!({"client_id": c.client_id, "client_secret": c.client_secret})).await;
    let v = token_ok(r).await;
    let mut keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(keys, ["access_token", "expires_in", "mode", "scope", "token_type"]);
    assert_eq!(v["scope"], "payments payouts bulk:create reversals", "the merchant's default scopes");
    assert_eq!(v["mode"], "test");
    works(app, v["access_token"].as_str().unwrap()).await;
    // grant_type may be given in the JSON form too.
    let r = app.token_json(&json!({"grant_type": "client_credentials", "client_id": c.client_id, "client_secret": c.client_secret})).await;
    let again = token_ok(r).await;
    assert_ne!(again["access_token"], v["access_token"], "every request gets a new token");
}

async fn form_token_request_with_basic_auth(db: Db) {
    let app = TestApp::shared(db);
    let c = app.merchant().await;
    let r = app.token_form(&[("grant_type", "client_credentials")], Some((&c.client_id, &c.client_secret))).await;
    let v = token_ok(r).await;
    assert_eq!(v["scope"], "payments payouts bulk:create reversals");
    works(app, v["access_token"].as_str().unwrap()).await;
}

async fn form_token_request_with_body_credentials(db: Db) {
    let app = TestApp::shared(db);
    let c = app.merchant().await;
    let form = [("grant_type", "client_credentials"), ("client_id", c.client_id.as_str()), ("client_secret", c.client_secret.as_str())];
    let v = token_ok(app.token_form(&form, None).await).await;
    works(app, v["access_token"].as_str().unwrap()).await;
}

/// RFC 6749 §2.3.1: the id and secret are form-urlencoded before base64. Encoding every byte
/// (`_` as `%5F`) is a valid encoding the server must undo.
async fn basic_credentials_are_form_urldecoded(db: Db) {
    let app = TestApp::shared(db);
    let c = app.merchant().await;
    let encode_all = |s: &str| s.bytes().map(|b| format!("%{b:02X}")).collect::<String>();
    let basic = crate::harness::base64(&format!("{}:{}", encode_all(&c.client_id), encode_all(&c.client_secret)));
    let r = app
        .http
        .post(app.url("/oauth/token"))
        .header("Authorization", format!("Basic {basic}"))
        .form(&[("grant_type", "client_credentials")])
        .send()
        .await
        .unwrap();
    let v = token_ok(r).await;
    works(app, v["access_token"].as_str().unwrap()).await;
    // A wrong secret, encoded the same way, still fails.
    let bad = crate::harness::base64(&format!("{}:{}", encode_all(&c.client_id), encode_all("cs_test_wrong")));
    let r = app
        .http
        .post(app.url("/oauth/token"))
        .header("Authorization", format!("Basic {bad}"))
        .form(&[("grant_type", "client_credentials")])
        .send()
        .await
        .unwrap();
    strict(r, 401, "invalid_client", true).await;
}

async fn basic_and_body_secret_together_are_invalid_request(db: Db) {
    let app = TestApp::shared(db);
    let c = app.merchant().await;
    let form = [("grant_type", "client_credentials"), ("client_secret", c.client_secret.as_str())];
    let r = app.token_form(&form, Some((&c.client_id, &c.client_secret))).await;
    strict(r, 400, "invalid_request", true).await;
}

async fn wrong_secret_and_unknown_client_answer_alike(db: Db) {
    let app = TestApp::shared(db);
    let c = app.merchant().await;
    let wrong = app.token_json(&json!({"client_id": c.client_id, "client_secret": "cs_test_not_the_secret"})).await;
    let wrong = strict(wrong, 401, "invalid_client", true).await;
    let unknown = app.token_json(&json!({"client_id": "ck_test_nobody", "client_secret": c.client_secret})).await;
    let unknown = strict(unknown, 401, "invalid_client", true).await;
    let strip = |mut v: Value| {
        v.as_object_mut().unwrap().remove("request_id");
        v
    };
    assert_ne!(wrong.json["request_id"], unknown.json["request_id"]);
    assert_eq!(wrong.header("www-authenticate"), "", "no Basic challenge when Basic was not used");
    assert_eq!(strip(wrong.json), strip(unknown.json), "unknown client and wrong secret must be indistinguishable");
    // The same through the form with body credentials.
    let form = [("grant_type", "client_credentials"), ("client_id", "ck_test_nobody"), ("client_secret", "x")];
    strict(app.token_form(&form, None).await, 401, "invalid_client", true).await;
}

async fn basic_auth_failure_names_the_basic_realm(db: Db) {
    let app = TestApp::shared(db);
    let c = app.merchant().await;
    for (id, secret) in [(c.client_id.as_str(), "cs_test_wrong"), ("ck_test_nobody", c.client_secret.as_str())] {
        let r = app.token_form(&[("grant_type", "client_credentials")], Some((id, secret))).await;
        let a = strict(r, 401, "invalid_client", true).await;
        assert_eq!(a.header("www-authenticate"), "Basic realm=\"malipo\"");
    }
    // Malformed Basic credentials (not base64, or no colon) are refused the same way.
    for value in ["Basic !!!not-base64!!!", &format!("Basic {}", crate::harness::base64("no-colon-here"))] {
        let r = app
            .http
            .post(app.url("/oauth/token"))
            .header("Authorization", value)
            .form(&[("grant_type", "client_credentials")])
            .send()
            .await
            .unwrap();
        let a = strict(r, 401, "invalid_client", true).await;
        assert_eq!(a.header("www-authenticate"), "Basic realm=\"malipo\"");
    }
}

async fn form_without_grant_type_is_invalid_request(db: Db) {
    let app = TestApp::shared(db);
    let c = app.merchant().await;
    let r = app.token_form(&[("scope", "payments")], Some((&c.client_id, &c.client_secret))).await;
    let a = strict(r, 400, "invalid_request", true).await;
    assert!(a.json["error_description"].as_str().unwrap().contains("grant_type"), "{}", a.text);
    // Malformed JSON at the token endpoint is invalid_request too, in the token error shape.
    let r = app.send(reqwest::Method::POST, None, "/oauth/token", Some("application/json"), "{\"client_id\":").await;
    strict(r, 400, "invalid_request", true).await;
}

async fn password_grant_is_unsupported(db: Db) {
    let app = TestApp::shared(db);
    let c = app.merchant().await;
    let form = [("grant_type", "password"), ("username", "a"), ("password", "b")];
    let r = app.token_form(&form, Some((&c.client_id, &c.client_secret))).await;
    strict(r, 400, "unsupported_grant_type", true).await;
    let r = app.token_json(&json!({"grant_type": "authorization_code", "client_id": c.client_id, "client_secret": c.client_secret})).await;
    strict(r, 400, "unsupported_grant_type", true).await;
}

async fn scope_subset_is_granted(db: Db) {
    let app = TestApp::shared(db);
    let c = app.merchant().await;
    let form = [("grant_type", "client_credentials"), ("scope", "payouts")];
    let v = token_ok(app.token_form(&form, Some((&c.client_id, &c.client_secret))).await).await;
    assert_eq!(v["scope"], "payouts");
    let r = app.token_json(&json!({"client_id": c.client_id, "client_secret": c.client_secret, "scope": "reversals payments"})).await;
    let v = token_ok(r).await;
    assert_eq!(v["scope"], "payments reversals", "exactly what was granted");
    works(app, v["access_token"].as_str().unwrap()).await;
}

async fn scope_beyond_the_credential_is_invalid_scope(db: Db) {
    let app = TestApp::shared(db);
    let c = app.merchant().await;
    let form = [("grant_type", "client_credentials"), ("scope", "payments wallets")];
    strict(app.token_form(&form, Some((&c.client_id, &c.client_secret))).await, 400, "invalid_scope", true).await;
    let r = app.token_json(&json!({"client_id": c.client_id, "client_secret": c.client_secret, "scope": "bulk:approve"})).await;
    strict(r, 400, "invalid_scope", true).await;
}

async fn unknown_scope_is_invalid_scope(db: Db) {
    let app = TestApp::shared(db);
    let c = app.merchant().await;
    let r = app.token_json(&json!({"client_id": c.client_id, "client_secret": c.client_secret, "scope": "payments admin"})).await;
    strict(r, 400, "invalid_scope", true).await;
}

async fn token_endpoint_takes_only_json_or_form(db: Db) {
    let app = TestApp::shared(db);
    let c = app.merchant().await;
    let body = format!("client_id={}&client_secret={}", c.client_id, c.client_secret);
    let r = app.send(reqwest::Method::POST, None, "/oauth/token", Some("text/plain"), body.clone()).await;
    // The token endpoint's errors are all in its own format: application/json with `error` and
    // `error_description`, whatever refused the request.
    strict(r, 415, "unsupported_media_type", true).await;
    let r = app.send(reqwest::Method::POST, None, "/oauth/revoke", Some("text/plain"), body).await;
    strict(r, 415, "unsupported_media_type", true).await;
    let big = format!("client_id={}&client_secret={}&pad={}", c.client_id, c.client_secret, "x".repeat(70 * 1024));
    let form = Some("application/x-www-form-urlencoded");
    strict(app.send(reqwest::Method::POST, None, "/oauth/token", form, big.clone()).await, 413, "payload_too_large", true).await;
    strict(app.send(reqwest::Method::POST, None, "/oauth/revoke", form, big).await, 413, "payload_too_large", true).await;
    // Unknown JSON members at the token endpoint are refused as invalid_request.
    let r = app.token_json(&json!({"client_id": c.client_id, "client_secret": c.client_secret, "extra": 1})).await;
    strict(r, 400, "invalid_request", true).await;
}

async fn live_credential_gets_a_live_token(db: Db) {
    let app = TestApp::shared(db);
    let c = app.merchant().await;
    let live = app.live(&c.org_id).await;
    assert!(live.client_id.starts_with("ck_live_") && live.client_secret.starts_with("cs_live_"));
    let v = token_ok(app.token_json(&json!({"client_id": live.client_id, "client_secret": live.client_secret})).await).await;
    assert_eq!(v["mode"], "live");
    let b = app.get_json(v["access_token"].as_str().unwrap(), "/partner/balance").await;
    assert_eq!(b["account"], "collection");
}

async fn payouts_only_token_cannot_push_charges(db: Db) {
    let app = TestApp::shared(db);
    let c = app.merchant().await;
    let token = app.token_scoped(&c, "payouts").await;
    let r = app.post(&token, "/partner/stk", &crate::harness::stk("254712345678", json!("10")), None).await;
    let challenge = r.headers().get("www-authenticate").map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default();
    problem_strict(r, 403, "insufficient_scope").await;
    assert!(challenge.contains("error=\"insufficient_scope\""), "{challenge}");
    let r = app.get(&token, "/partner/balance").await;
    problem_strict(r, 403, "insufficient_scope").await;
    // Nothing was created.
    let full = app.token(&c).await;
    assert_eq!(app.get_json(&full, "/partner/charges").await["data"], json!([]));
}

async fn missing_token_is_unauthorized_with_bearer_challenge(db: Db) {
    let app = TestApp::shared(db);
    let r = app.http.get(app.url("/partner/balance")).send().await.unwrap();
    let a = problem_strict(r, 401, "unauthorized").await;
    assert_eq!(a.header("www-authenticate"), "Bearer realm=\"malipo\"");
    let r = app.http.post(app.url("/partner/stk")).json(&crate::harness::stk("254712345678", json!(10))).send().await.unwrap();
    let a = problem_strict(r, 401, "unauthorized").await;
    assert_eq!(a.header("www-authenticate"), "Bearer realm=\"malipo\"");
}

async fn garbage_token_is_invalid_token(db: Db) {
    let app = TestApp::shared(db);
    refused(app, "mlp_thisisnotatokenatall", "The access token is invalid").await;
    refused(app, "x", "The access token is invalid").await;
}

async fn bearer_scheme_is_case_insensitive(db: Db) {
    let app = TestApp::shared(db);
    let (_, token) = app.merchant_token().await;
    for scheme in ["bearer", "BEARER", "Bearer"] {
        let r = app.http.get(app.url("/partner/balance")).header("Authorization", format!("{scheme} {token}")).send().await.unwrap();
        assert_eq!(r.status(), 200, "scheme {scheme}");
    }
}

async fn other_authorization_schemes_are_unauthorized(db: Db) {
    let app = TestApp::shared(db);
    let c = app.merchant().await;
    let r = app.http.get(app.url("/partner/balance")).basic_auth(&c.client_id, Some(&c.client_secret)).send().await.unwrap();
    let a = problem_strict(r, 401, "unauthorized").await;
    assert_eq!(a.header("www-authenticate"), "Bearer realm=\"malipo\"");
}

async fn revoke_form(app: &TestApp, c: &Creds, token: &str) -> reqwest::Response {
    app.http
        .post(app.url("/oauth/revoke"))
        .basic_auth(&c.client_id, Some(&c.client_secret))
        .form(&[("token", token), ("token_type_hint", "access_token")])
        .send()
        .await
        .unwrap()
}

async fn revoked_token_is_refused_at_once_form(db: Db) {
    let app = TestApp::shared(db);
    let (c, token) = app.merchant_token().await;
    let other = app.token(&c).await;
    works(app, &token).await;
    let r = revoke_form(app, &c, &token).await;
    assert_eq!(r.status(), 200);
    refused(app, &token, "The access token was revoked").await;
    works(app, &other).await;
    // Revoking again is still 200.
    assert_eq!(revoke_form(app, &c, &token).await.status(), 200);
}

async fn revoked_token_is_refused_at_once_json(db: Db) {
    let app = TestApp::shared(db);
    let (c, token) = app.merchant_token().await;
    let r = app
        .http
        .post(app.url("/oauth/revoke"))
        .json(&json!({"token": token, "client_id": c.client_id, "client_secret": c.client_secret}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    refused(app, &token, "The access token was revoked").await;
}

async fn revoking_an_unknown_token_answers_200(db: Db) {
    let app = TestApp::shared(db);
    let (c, token) = app.merchant_token().await;
    assert_eq!(revoke_form(app, &c, "mlp_never_issued").await.status(), 200);
    // Another client's token is not revoked by this client (RFC 7009 §2.1), but the answer is 200.
    let (_, other_token) = app.merchant_token().await;
    assert_eq!(revoke_form(app, &c, &other_token).await.status(), 200);
    works(app, &other_token).await;
    works(app, &token).await;
}

async fn revoke_needs_valid_client_and_token(db: Db) {
    let app = TestApp::shared(db);
    let (c, token) = app.merchant_token().await;
    let r = app
        .http
        .post(app.url("/oauth/revoke"))
        .basic_auth(&c.client_id, Some("cs_test_wrong"))
        .form(&[("token", token.as_str())])
        .send()
        .await
        .unwrap();
    let a = strict(r, 401, "invalid_client", true).await;
    assert_eq!(a.header("www-authenticate"), "Basic realm=\"malipo\"");
    works(app, &token).await;
    let r =
        app.http.post(app.url("/oauth/revoke")).basic_auth(&c.client_id, Some(&c.client_secret)).form(&[("x", "y")]).send().await.unwrap();
    strict(r, 400, "invalid_request", true).await;
}

async fn revoking_the_credential_kills_its_tokens(db: Db) {
    let app = TestApp::shared(db);
    let (c, token) = app.merchant_token().await;
    works(app, &token).await;
    let p = app.platform.clone();
    let id = c.client_id.clone();
    tokio::task::spawn_blocking(move || p.access().revoke_credential(&id)).await.unwrap().unwrap();
    let r = app.get(&token, "/partner/balance").await;
    problem_strict(r, 401, "invalid_token").await;
    // And the credential can no longer get tokens.
    let r = app.token_json(&json!({"client_id": c.client_id, "client_secret": c.client_secret})).await;
    strict(r, 401, "invalid_client", true).await;
}

async fn expired_token_says_it_expired(db: Db) {
    let app = TestApp::shared(db);
    let c = app.merchant().await;
    let token = "mlp_expired_token_for_the_test_0123456789abcdef".to_owned();
    let record = malipo_auth::AccessToken {
        digest: malipo_auth::token_digest(&token),
        client_id: c.client_id.clone(),
        org_id: malipo_core::OrgId::parse(&c.org_id).unwrap(),
        mode: malipo_core::Mode::Test,
        scopes: malipo_auth::Scopes::parse("payments").unwrap(),
        created_at: malipo_core::Timestamp::now().plus_seconds(-3700),
        expires_at: malipo_core::Timestamp::now().plus_seconds(-100),
        revoked_at: None,
    };
    let p = app.platform.clone();
    tokio::task::spawn_blocking(move || malipo_service::write(p.store(), |tx| Ok(tx.insert_token(&record)?))).await.unwrap().unwrap();
    refused(app, &token, "The access token expired").await;
}

async fn oauth2_fetch(app: &TestApp, c: &Creds, auth: oauth2::AuthType) -> String {
    use oauth2::basic::BasicClient;
    use oauth2::{ClientId, ClientSecret, TokenResponse, TokenUrl};
    let client = BasicClient::new(ClientId::new(c.client_id.clone()))
        .set_client_secret(ClientSecret::new(c.client_secret.clone()))
        .set_token_uri(TokenUrl::new(app.url("/oauth/token")).unwrap())
        .set_auth_type(auth);
    let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let token = client.exchange_client_credentials().request_async(&http).await.unwrap();
    assert_eq!(*token.token_type(), oauth2::basic::BasicTokenType::Bearer);
    assert_eq!(token.expires_in(), Some(std::time::Duration::from_secs(3600)));
    let scopes: Vec<String> = token.scopes().unwrap().iter().map(|s| s.to_string()).collect();
    assert_eq!(scopes, ["payments", "payouts", "bulk:create", "reversals"]);
    token.access_token().secret().clone()
}

async fn oauth2_crate_fetches_a_working_token_with_basic_auth(db: Db) {
    let app = TestApp::shared(db);
    let c = app.merchant().await;
    let token = oauth2_fetch(app, &c, oauth2::AuthType::BasicAuth).await;
    works(app, &token).await;
}

async fn oauth2_crate_fetches_a_working_token_with_body_credentials(db: Db) {
    let app = TestApp::shared(db);
    let c = app.merchant().await;
    let token = oauth2_fetch(app, &c, oauth2::AuthType::RequestBody).await;
    works(app, &token).await;
}

async fn failed_token_requests_are_limited_per_client_id_and_per_address(db: Db) {
    // 3 failures a minute per client id, 6 per address (every request here comes from 127.0.0.1).
    let app = TestApp::with(db, Options { token_failures: (3, 6), ..Options::default() }).await;
    let (a, b) = (app.merchant().await, app.merchant().await);
    let (_, token) = app.merchant_token().await;
    let wrong = |c: &Creds| json!({"client_id": c.client_id, "client_secret": "cs_test_not_the_secret"});
    let right = |c: &Creds| json!({"client_id": c.client_id, "client_secret": c.client_secret});
    let unknown = json!({"client_id": "ck_test_nobody", "client_secret": "cs_test_whatever"});
    let retry_after = |a: &Answer| -> u64 { a.header("retry-after").parse().expect("Retry-After is whole seconds") };
    for _ in 0..3 {
        strict(app.token_json(&wrong(&a)).await, 401, "invalid_client", true).await;
    }
    // The client id's fourth failure is one too many (the address has had 4 of its 6).
    let r = strict(app.token_json(&wrong(&a)).await, 429, "rate_limited", true).await;
    assert!((1..=20).contains(&retry_after(&r)), "{}", r.header("retry-after"));
    // Its rightful owner still gets a token: failing on purpose cannot lock an integrator out.
    token_ok(app.token_json(&right(&a)).await).await;
    // Another client id from the same address fails twice more, then the address is spent.
    for _ in 0..2 {
        strict(app.token_json(&wrong(&b)).await, 401, "invalid_client", true).await;
    }
    let r = strict(app.token_json(&wrong(&b)).await, 429, "rate_limited", true).await;
    assert!((1..=10).contains(&retry_after(&r)), "{}", r.header("retry-after"));
    // Every failure from the address is answered 429 now, unknown client ids too, with no
    // Basic challenge; but its credentials are still checked: a right secret gets its token,
    // and is heard at the revoke endpoint.
    let r = strict(app.token_form(&[("grant_type", "client_credentials")], Some(("ck_test_nobody", "x"))).await, 429, "rate_limited", true)
        .await;
    assert_eq!(r.header("www-authenticate"), "", "a 429 is no challenge");
    let issued = token_ok(app.token_json(&right(&b)).await).await;
    let issued = issued["access_token"].as_str().unwrap();
    works(&app, issued).await;
    let r = app
        .http
        .post(app.url("/oauth/revoke"))
        .basic_auth(&b.client_id, Some(&b.client_secret))
        .form(&[("token", issued)])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    refused(&app, issued, "The access token was revoked").await;
    let r = app
        .http
        .post(app.url("/oauth/revoke"))
        .basic_auth(&b.client_id, Some("cs_test_wrong"))
        .form(&[("token", "x")])
        .send()
        .await
        .unwrap();
    strict(r, 429, "rate_limited", true).await;
    // An address that goes on failing has as many 429s answered at once as its limit (6: three
    // above, three here); after that each is held a second before its answer. Its right secret
    // is never held.
    for body in [&unknown, &wrong(&b), &wrong(&a)] {
        strict(app.token_json(body).await, 429, "rate_limited", true).await;
    }
    let started = std::time::Instant::now();
    let last = strict(app.token_json(&unknown).await, 429, "rate_limited", true).await;
    let held = started.elapsed();
    assert!(held >= malipo_http::failures::HOLD, "the seventh 429 was answered after {held:?}");
    let started = std::time::Instant::now();
    token_ok(app.token_json(&right(&b)).await).await;
    assert!(started.elapsed() < malipo_http::failures::HOLD, "a right secret is answered at once: {:?}", started.elapsed());
    // Bearer calls are not token requests: a token issued earlier still works from there.
    works(&app, &token).await;
    // The address's bucket refills one cell every 10 s; then one more failure is a 401 (of a
    // client id with failures to spare: "ck_test_nobody" has had its 3).
    tokio::time::sleep(std::time::Duration::from_secs(retry_after(&last))).await;
    strict(app.token_json(&json!({"client_id": "ck_test_someone", "client_secret": "x"})).await, 401, "invalid_client", true).await;
    app.stop().await;
}

/// What a flood of failing token requests was answered.
#[derive(Debug, Default)]
struct FloodSeen {
    answers: std::sync::atomic::AtomicU64,
    failed: std::sync::atomic::AtomicU64,
    limited: std::sync::atomic::AtomicU64,
    /// 429s without a `Retry-After` of whole seconds (at least 1), and any other status.
    wrong: std::sync::Mutex<Vec<String>>,
}

/// A flood of failing token requests, stopped when dropped (also when the test fails).
struct Flood {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    seen: std::sync::Arc<FloodSeen>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Flood {
    /// `connections` clients on one address (127.0.0.1, the integrator's own) posting wrong
    /// secrets for `client_id` and unknown client ids in turn to `url`, each waiting for its
    /// answer before the next request, as any client on a connection does. They run on a thread
    /// and runtime of their own, so that the test's timing of its own calls measures the server,
    /// not its turn on a shared runtime.
    fn start(url: String, client_id: String, connections: usize) -> Flood {
        use std::sync::atomic::Ordering::Relaxed;
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let seen = std::sync::Arc::new(FloodSeen::default());
        let (stop2, seen2) = (stop.clone(), seen.clone());
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
            rt.block_on(async move {
                let http = reqwest::Client::builder().pool_max_idle_per_host(connections).build().unwrap();
                let tasks: Vec<_> = (0..connections)
                    .map(|c| {
                        let (http, url, client_id, stop, seen) =
                            (http.clone(), url.clone(), client_id.clone(), stop2.clone(), seen2.clone());
                        tokio::spawn(async move {
                            let mut n = 0u64;
                            while !stop.load(Relaxed) {
                                n += 1;
                                let body = if n.is_multiple_of(2) {
                                    json!({"client_id": client_id, "client_secret": format!("cs_test_wrong_{c}_{n}")})
                                } else {
                                    json!({"client_id": format!("ck_test_nobody_{c}_{n}"), "client_secret": "cs_test_whatever"})
                                };
                                let r = match http.post(&url).json(&body).send().await {
                                    Ok(r) => r,
                                    Err(e) => {
                                        seen.wrong.lock().unwrap().push(e.to_string());
                                        return;
                                    }
                                };
                                let (status, retry_after) = (r.status().as_u16(), r.headers().get("retry-after").cloned());
                                let _ = r.bytes().await;
                                seen.answers.fetch_add(1, Relaxed);
                                match status {
                                    401 => seen.failed.fetch_add(1, Relaxed),
                                    429 => seen.limited.fetch_add(1, Relaxed),
                                    other => {
                                        seen.wrong.lock().unwrap().push(format!("status {other}"));
                                        0
                                    }
                                };
                                let whole = retry_after.as_ref().and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
                                if status == 429 && whole.is_none_or(|s| s < 1) {
                                    seen.wrong.lock().unwrap().push(format!("429 with Retry-After {retry_after:?}"));
                                }
                            }
                        })
                    })
                    .collect();
                for t in tasks {
                    let _ = t.await;
                }
            });
        });
        Flood { stop, seen, thread: Some(thread) }
    }

    /// Stops the flood and waits for its clients' last answers.
    fn stop(mut self) -> std::sync::Arc<FloodSeen> {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        self.thread.take().unwrap().join().unwrap();
        self.seen.clone()
    }
}

impl Drop for Flood {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

fn p50(times: &mut [std::time::Duration]) -> std::time::Duration {
    times.sort();
    times[times.len() / 2]
}

/// Integrators share egress addresses: a flood of wrong and unknown credentials from one
/// address must not keep the right credential from the same address from its token, at the
/// token or the revoke endpoint, nor slow it or other calls. Only the failures are limited.
async fn a_flood_from_its_address_does_not_keep_the_right_credential_from_its_token(db: Db) {
    use std::sync::atomic::Ordering::Relaxed;
    use std::time::{Duration, Instant};
    // 3 failures a minute per client id, 8 per address: the flood spends both at once.
    let app = TestApp::with(db, Options { token_failures: (3, 8), ..Options::default() }).await;
    let c = app.merchant().await;
    let right = json!({"client_id": c.client_id, "client_secret": c.client_secret});
    // The right credential's rounds (a token, then a call with it) without the flood: the
    // yardstick of the same run, on a machine whose speed other tests share.
    let (mut base_tokens, mut base_calls) = (Vec::new(), Vec::new());
    for _ in 0..10 {
        let t = Instant::now();
        let v = token_ok(app.token_json(&right).await).await;
        base_tokens.push(t.elapsed());
        let t = Instant::now();
        works(&app, v["access_token"].as_str().unwrap()).await;
        base_calls.push(t.elapsed());
    }
    let flood = Flood::start(app.url("/oauth/token"), c.client_id.clone(), 64);
    let seen = flood.seen.clone();
    // Until the flood has spent the address's bucket and as many refusals again.
    let deadline = Instant::now() + Duration::from_secs(30);
    while seen.limited.load(Relaxed) < 16 {
        assert!(Instant::now() < deadline, "the flood was not limited: {seen:?}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // The right credential, from the same address, 30 times during the flood: a token each
    // time, and the token works.
    let (mut token_times, mut call_times) = (Vec::new(), Vec::new());
    let answers_before = seen.answers.load(Relaxed);
    let mut token = String::new();
    for _ in 0..30 {
        let t = Instant::now();
        let v = token_ok(app.token_json(&right).await).await;
        token_times.push(t.elapsed());
        token = v["access_token"].as_str().unwrap().to_owned();
        let t = Instant::now();
        works(&app, &token).await;
        call_times.push(t.elapsed());
    }
    let flood_answers = seen.answers.load(Relaxed) - answers_before;
    // The revoke endpoint too.
    let r = app
        .http
        .post(app.url("/oauth/revoke"))
        .basic_auth(&c.client_id, Some(&c.client_secret))
        .form(&[("token", token.as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    refused(&app, &token, "The access token was revoked").await;
    // The flood's own failures are answered 429 with Retry-After, in the token endpoint's format.
    let r = app.token_json(&json!({"client_id": c.client_id, "client_secret": "cs_test_wrong"})).await;
    let a = strict(r, 429, "rate_limited", true).await;
    assert!(a.header("retry-after").parse::<u64>().is_ok_and(|s| s >= 1), "{}", a.header("retry-after"));
    let seen = flood.stop();
    let (token_p50, call_p50) = (p50(&mut token_times), p50(&mut call_times));
    let (base_token, base_call) = (p50(&mut base_tokens), p50(&mut base_calls));
    eprintln!(
        "{db:?}: right credential's token p50 {token_p50:?} (alone {base_token:?}), balance p50 {call_p50:?} (alone {base_call:?}); flood answered {flood_answers} meanwhile; {seen:?}"
    );
    assert!(seen.wrong.lock().unwrap().is_empty(), "{seen:?}");
    assert!(seen.failed.load(Relaxed) >= 1 && flood_answers >= 1, "{seen:?}");
    // Not slowed: within 20 ms, or within four times the same calls without the flood when the
    // machine is slow for everyone (a flood that reached the hashing of secrets, or the same
    // queue, costs ten times and more).
    let bound = |alone: Duration| Duration::from_millis(20).max(alone * 4);
    assert!(token_p50 < bound(base_token), "the right credential's token p50 was {token_p50:?} during the flood, {base_token:?} alone");
    assert!(call_p50 < bound(base_call), "a bearer call's p50 was {call_p50:?} during the flood, {base_call:?} alone");
    app.stop().await;
}
