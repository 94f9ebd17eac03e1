//! The webhook endpoints and events API (contract section 12): registering, listing, deleting
//! and rotating endpoints; listing events, reading one with its deliveries, redelivering.

use std::time::Duration;

use serde_json::{json, Value};

use crate::harness::{field_problem, is_utc_timestamp, problem_strict, Answer, Db, Options, TestApp};

crate::on_both!(
    create_shows_the_secret_once,
    endpoints_are_private_to_their_merchant_and_mode,
    live_endpoints_need_public_https,
    test_endpoints_allow_http_and_loopback_but_not_metadata,
    create_validates_events_and_fields,
    create_needs_a_key_and_replays_byte_for_byte,
    delete_answers_the_deleted_endpoint_and_hides_it,
    rotate_answers_a_new_secret_and_the_overlap,
    webhooks_need_the_payments_scope,
    events_list_charge_events_oldest_first,
    events_filter_paginate_and_refuse_bad_parameters,
    events_are_private_to_their_merchant_and_mode,
    event_detail_shows_deliveries_and_redeliver_queues_again,
    openapi_documents_the_webhook_endpoints,
);

const HOOK: &str = "http://127.0.0.1:9/hook";

/// The members of an endpoint as `GET` shows it (creation and rotation add `secret`).
const ENDPOINT_KEYS: [&str; 10] = [
    "created_at",
    "description",
    "disabled_reason",
    "enabled",
    "endpoint_id",
    "events",
    "mode",
    "previous_secret_expires_at",
    "updated_at",
    "url",
];

fn key() -> String {
    uuid::Uuid::new_v4().to_string()
}

fn keys(v: &Value) -> Vec<String> {
    let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
    k.sort();
    k
}

/// Standard base64 with padding, decoded (the test crate has no base64 dependency).
fn unbase64(text: &str) -> Option<Vec<u8>> {
    const ABC: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    if !text.len().is_multiple_of(4) {
        return None;
    }
    let mut out = Vec::new();
    for chunk in text.as_bytes().chunks(4) {
        let pad = chunk.iter().rev().take_while(|&&c| c == b'=').count();
        let mut n: u32 = 0;
        for &c in chunk {
            let v = if c == b'=' { 0 } else { u32::try_from(ABC.iter().position(|&a| a == c)?).ok()? };
            n = (n << 6) | v;
        }
        let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        out.extend_from_slice(&bytes[..3 - pad]);
    }
    Some(out)
}

/// Asserts a `whsec_` secret of 32 random bytes and returns it.
fn assert_secret(v: &Value) -> String {
    let s = v["secret"].as_str().unwrap_or_else(|| panic!("no secret in {v}")).to_owned();
    let b64 = s.strip_prefix("whsec_").unwrap_or_else(|| panic!("secret {s} is not whsec_"));
    assert_eq!(unbase64(b64).map(|k| k.len()), Some(32), "secret {s} decodes to 32 bytes");
    s
}

async fn create(app: &TestApp, token: &str, body: &Value) -> Answer {
    Answer::of(app.post(token, "/webhooks/endpoints", body, Some(&key())).await).await
}

/// Registers an endpoint (asserting 200) and returns it.
async fn endpoint(app: &TestApp, token: &str, url: &str, events: &[&str]) -> Value {
    let a = create(app, token, &json!({"url": url, "events": events})).await;
    assert_eq!(a.status, 200, "{}", a.text);
    a.json
}

async fn delete(app: &TestApp, token: &str, path: &str, key: Option<&str>) -> reqwest::Response {
    let mut r = app.http.delete(app.url(path)).bearer_auth(token);
    if let Some(k) = key {
        r = r.header("Idempotency-Key", k);
    }
    r.send().await.unwrap()
}

async fn create_shows_the_secret_once(db: Db) {
    let app = TestApp::shared(db);
    let (_, token) = app.merchant_token().await;
    let a = create(app, &token, &json!({"url": HOOK, "events": ["charge.completed", "charge.failed"], "description": "orders"})).await;
    assert_eq!(a.status, 200, "{}", a.text);
    let e = &a.json;
    let id = e["endpoint_id"].as_str().unwrap();
    assert!(id.starts_with("we_"), "{e}");
    assert_eq!(e["url"], HOOK);
    assert_eq!(e["events"], json!(["charge.completed", "charge.failed"]));
    assert_eq!(e["description"], "orders");
    assert_eq!(e["enabled"], true);
    assert_eq!(e["disabled_reason"], Value::Null);
    assert_eq!(e["mode"], "test");
    assert!(is_utc_timestamp(e["created_at"].as_str().unwrap()), "{e}");
    assert!(a.header("content-type").starts_with("application/json"));
    let secret = assert_secret(e);
    let mut want: Vec<String> = ENDPOINT_KEYS.iter().map(|k| (*k).to_owned()).collect();
    want.push("secret".into());
    want.sort();
    assert_eq!(keys(e), want, "{e}");

    let one = Answer::of(app.get(&token, &format!("/webhooks/endpoints/{id}")).await).await;
    assert_eq!(one.status, 200, "{}", one.text);
    assert_eq!(keys(&one.json), ENDPOINT_KEYS, "no secret in GET: {}", one.text);
    assert!(!one.text.contains(&secret) && !one.text.contains("whsec_"));
    assert_eq!(one.json["endpoint_id"], id);
    assert_eq!(one.json["events"], e["events"]);

    let list = Answer::of(app.get(&token, "/webhooks/endpoints").await).await;
    assert_eq!(list.status, 200, "{}", list.text);
    assert!(!list.text.contains("whsec_"), "no secret in the list: {}", list.text);
    assert_eq!(list.json["has_more"], false);
    assert_eq!(list.json["next_cursor"], Value::Null);
    let data = list.json["data"].as_array().unwrap();
    assert_eq!(data.len(), 1, "{}", list.text);
    assert_eq!(data[0]["endpoint_id"], id);
    assert_eq!(keys(&data[0]), ENDPOINT_KEYS);
}

async fn endpoints_are_private_to_their_merchant_and_mode(db: Db) {
    let app = TestApp::shared(db);
    let (creds, token) = app.merchant_token().await;
    let (_, other) = app.merchant_token().await;
    let live = app.token(&app.live(&creds.org_id).await).await;
    let e = endpoint(app, &token, HOOK, &["*"]).await;
    let path = format!("/webhooks/endpoints/{}", e["endpoint_id"].as_str().unwrap());
    problem_strict(app.get(&other, &path).await, 404, "not_found").await;
    problem_strict(app.get(&live, &path).await, 404, "not_found").await;
    problem_strict(app.get(&token, "/webhooks/endpoints/we_nonsense").await, 404, "not_found").await;
    assert_eq!(app.get_json(&other, "/webhooks/endpoints").await["data"], json!([]));
    assert_eq!(app.get_json(&live, "/webhooks/endpoints").await["data"], json!([]));
    problem_strict(delete(app, &other, &path, Some(&key())).await, 404, "not_found").await;
    let rotate = format!("{path}/rotate-secret");
    problem_strict(app.post(&other, &rotate, &json!({}), Some(&key())).await, 404, "not_found").await;
    problem_strict(app.post(&live, &rotate, &json!({}), Some(&key())).await, 404, "not_found").await;
    // Still there for its owner.
    assert_eq!(app.get_json(&token, &path).await["enabled"], true);
}

async fn live_endpoints_need_public_https(db: Db) {
    let app = TestApp::shared(db);
    let (creds, _) = app.merchant_token().await;
    let live = app.token(&app.live(&creds.org_id).await).await;
    for url in ["http://example.com/hooks", "https://127.0.0.1/", "https://localhost/hooks", "https://10.1.2.3/", "https://[::1]/"] {
        let r = app.post(&live, "/webhooks/endpoints", &json!({"url": url, "events": ["*"]}), Some(&key())).await;
        field_problem(r, "url", "invalid_url").await;
    }
    let e = endpoint(app, &live, "https://example.com/hooks", &["charge.completed"]).await;
    assert_eq!(e["mode"], "live");
    assert_eq!(e["url"], "https://example.com/hooks");
    assert_secret(&e);
}

async fn test_endpoints_allow_http_and_loopback_but_not_metadata(db: Db) {
    let app = TestApp::shared(db);
    let (_, token) = app.merchant_token().await;
    for url in ["http://169.254.169.254/", "http://169.254.169.254/latest/meta-data/", "ftp://example.com/", "not a url", ""] {
        let r = app.post(&token, "/webhooks/endpoints", &json!({"url": url, "events": ["*"]}), Some(&key())).await;
        field_problem(r, "url", "invalid_url").await;
    }
    let e = endpoint(app, &token, HOOK, &["charge.completed"]).await;
    assert_eq!(e["url"], HOOK);
    assert_eq!(e["mode"], "test");
    let e = endpoint(app, &token, "http://localhost:8080/hook", &["charge.completed"]).await;
    assert_eq!(e["mode"], "test");
}

async fn create_validates_events_and_fields(db: Db) {
    let app = TestApp::shared(db);
    let (_, token) = app.merchant_token().await;
    let post = |body: Value| {
        let token = token.clone();
        async move { app.post(&token, "/webhooks/endpoints", &body, Some(&key())).await }
    };
    field_problem(post(json!({"url": HOOK, "events": ["charge.done"]})).await, "events", "invalid_value").await;
    field_problem(post(json!({"url": HOOK, "events": []})).await, "events", "invalid_value").await;
    field_problem(post(json!({"url": HOOK})).await, "events", "missing_field").await;
    field_problem(post(json!({"events": ["*"]})).await, "url", "missing_field").await;
    field_problem(post(json!({"url": HOOK, "events": ["*"], "secret": "whsec_x"})).await, "secret", "unknown_field").await;
    field_problem(post(json!({"url": HOOK, "events": ["*"], "description": "x".repeat(201)})).await, "description", "too_long").await;
    problem_strict(post(json!({"url": HOOK, "events": "charge.completed"})).await, 400, "invalid_request").await;
    let bad = app.send(reqwest::Method::POST, Some(&token), "/webhooks/endpoints", Some("application/json"), "{").await;
    problem_strict(bad, 400, "invalid_request").await;
    let text = app.send(reqwest::Method::POST, Some(&token), "/webhooks/endpoints", Some("text/plain"), "{}").await;
    problem_strict(text, 415, "unsupported_media_type").await;
    assert_eq!(app.get_json(&token, "/webhooks/endpoints").await["data"], json!([]), "nothing was registered");

    let all = endpoint(app, &token, HOOK, &["*"]).await;
    assert_eq!(all["events"], json!(["*"]));
    let dup = endpoint(app, &token, HOOK, &["charge.completed", "charge.completed", "payout.failed"]).await;
    assert_eq!(dup["events"], json!(["charge.completed", "payout.failed"]), "duplicates removed, order kept");
    assert_eq!(dup["description"], Value::Null);
}

async fn create_needs_a_key_and_replays_byte_for_byte(db: Db) {
    let app = TestApp::shared(db);
    let (_, token) = app.merchant_token().await;
    let body = json!({"url": HOOK, "events": ["*"]});
    problem_strict(app.post(&token, "/webhooks/endpoints", &body, None).await, 400, "idempotency_key_missing").await;
    let k = key();
    let first = app.post(&token, "/webhooks/endpoints", &body, Some(&k)).await;
    assert_eq!(first.status(), 200);
    assert!(first.headers().get("idempotent-replayed").is_none());
    let first = first.text().await.unwrap();
    let again = app.post(&token, "/webhooks/endpoints", &body, Some(&k)).await;
    assert_eq!(again.status(), 200);
    assert_eq!(again.headers()["idempotent-replayed"], "true");
    assert_eq!(again.text().await.unwrap(), first, "the same endpoint and the same secret, byte for byte");
    let other = json!({"url": HOOK, "events": ["charge.completed"]});
    problem_strict(app.post(&token, "/webhooks/endpoints", &other, Some(&k)).await, 422, "idempotency_key_reused").await;
    let list = app.get_json(&token, "/webhooks/endpoints").await;
    assert_eq!(list["data"].as_array().unwrap().len(), 1, "one effect: {list}");
}

async fn delete_answers_the_deleted_endpoint_and_hides_it(db: Db) {
    let app = TestApp::shared(db);
    let (_, token) = app.merchant_token().await;
    let keep = endpoint(app, &token, HOOK, &["*"]).await;
    let gone = endpoint(app, &token, HOOK, &["charge.completed"]).await;
    let path = format!("/webhooks/endpoints/{}", gone["endpoint_id"].as_str().unwrap());
    problem_strict(delete(app, &token, &path, None).await, 400, "idempotency_key_missing").await;
    let k = key();
    let a = Answer::of(delete(app, &token, &path, Some(&k)).await).await;
    assert_eq!(a.status, 200, "{}", a.text);
    assert_eq!(a.json["endpoint_id"], gone["endpoint_id"]);
    assert_eq!(a.json["enabled"], false);
    assert_eq!(a.json["deleted"], true);
    assert_eq!(a.json["disabled_reason"], "deleted");
    assert!(a.json.get("secret").is_none(), "{}", a.text);
    let replay = Answer::of(delete(app, &token, &path, Some(&k)).await).await;
    assert_eq!(replay.status, 200);
    assert_eq!(replay.header("idempotent-replayed"), "true");
    assert_eq!(replay.text, a.text);
    // A path that is no endpoint id names nothing, answered after the key: here a key used for
    // another deletion.
    problem_strict(delete(app, &token, "/webhooks/endpoints/nonsense", Some(&k)).await, 422, "idempotency_key_reused").await;
    problem_strict(delete(app, &token, "/webhooks/endpoints/nonsense", Some(&key())).await, 404, "not_found").await;
    problem_strict(app.get(&token, &path).await, 404, "not_found").await;
    problem_strict(delete(app, &token, &path, Some(&key())).await, 404, "not_found").await;
    let rotate = format!("{path}/rotate-secret");
    problem_strict(app.post(&token, &rotate, &json!({}), Some(&key())).await, 404, "not_found").await;
    let list = app.get_json(&token, "/webhooks/endpoints").await;
    let ids: Vec<&Value> = list["data"].as_array().unwrap().iter().map(|e| &e["endpoint_id"]).collect();
    assert_eq!(ids, vec![&keep["endpoint_id"]], "{list}");
}

async fn rotate_answers_a_new_secret_and_the_overlap(db: Db) {
    let app = TestApp::shared(db);
    let (_, token) = app.merchant_token().await;
    let e = endpoint(app, &token, HOOK, &["*"]).await;
    let old = assert_secret(&e);
    assert_eq!(e["previous_secret_expires_at"], Value::Null);
    let path = format!("/webhooks/endpoints/{}/rotate-secret", e["endpoint_id"].as_str().unwrap());
    problem_strict(app.post(&token, &path, &json!({}), None).await, 400, "idempotency_key_missing").await;
    field_problem(app.post(&token, &path, &json!({"secret": "whsec_x"}), Some(&key())).await, "secret", "unknown_field").await;

    // An empty body, without a content type.
    let k = key();
    let empty = || app.http.post(app.url(&path)).bearer_auth(&token).header("Idempotency-Key", &k).send();
    let a = Answer::of(empty().await.unwrap()).await;
    assert_eq!(a.status, 200, "{}", a.text);
    let new = assert_secret(&a.json);
    assert_ne!(new, old);
    assert_eq!(a.json["endpoint_id"], e["endpoint_id"]);
    assert_eq!(a.json["enabled"], true);
    let until = malipo_core::Timestamp::parse_rfc3339(a.json["previous_secret_expires_at"].as_str().unwrap()).unwrap();
    let ahead = until.as_unix_seconds() - malipo_core::Timestamp::now().as_unix_seconds();
    assert!((24 * 3600 - 120..=24 * 3600 + 5).contains(&ahead), "the old secret signs for 24 h more: {ahead} s");
    let replay = Answer::of(empty().await.unwrap()).await;
    assert_eq!(replay.header("idempotent-replayed"), "true");
    assert_eq!(replay.text, a.text);

    // `{}` as JSON.
    let b = Answer::of(app.post(&token, &path, &json!({}), Some(&key())).await).await;
    assert_eq!(b.status, 200, "{}", b.text);
    let newer = assert_secret(&b.json);
    assert!(newer != new && newer != old);

    let got = app.get_json(&token, &format!("/webhooks/endpoints/{}", e["endpoint_id"].as_str().unwrap())).await;
    assert!(got.get("secret").is_none(), "{got}");
    assert!(is_utc_timestamp(got["previous_secret_expires_at"].as_str().unwrap()), "{got}");
}

async fn webhooks_need_the_payments_scope(db: Db) {
    let app = TestApp::shared(db);
    let c = app.merchant().await;
    let token = app.token_scoped(&c, "payouts").await;
    problem_strict(app.get(&token, "/webhooks/endpoints").await, 403, "insufficient_scope").await;
    problem_strict(app.get(&token, "/events").await, 403, "insufficient_scope").await;
    let r = app.post(&token, "/webhooks/endpoints", &json!({"url": HOOK, "events": ["*"]}), Some(&key())).await;
    problem_strict(r, 403, "insufficient_scope").await;
    problem_strict(app.http.get(app.url("/events")).send().await.unwrap(), 401, "unauthorized").await;
}

/// A server whose sandbox answers quickly.
async fn quick(db: Db) -> TestApp {
    TestApp::with(db, Options { sandbox_delay_ms: 50, ..Options::default() }).await
}

/// Pushes a 250 KES charge that the sandbox approves and waits until it completes.
async fn completed_charge(app: &TestApp, token: &str) -> String {
    let r = app.charge_ref(token, "254712345678", "250").await;
    app.wait_for(token, &r, "completed", Duration::from_secs(10)).await;
    r
}

/// `GET /events…` as an answer with its text (asserting 200).
async fn events(app: &TestApp, token: &str, query: &str) -> Answer {
    let a = Answer::of(app.get(token, &format!("/events{query}")).await).await;
    assert_eq!(a.status, 200, "{}", a.text);
    a
}

async fn events_list_charge_events_oldest_first(db: Db) {
    let app = quick(db).await;
    let (_, token) = app.merchant_token().await;
    let charge = completed_charge(&app, &token).await;
    let a = events(&app, &token, "").await;
    assert_eq!(a.json["has_more"], false);
    assert_eq!(a.json["next_cursor"], Value::Null);
    let data = a.json["data"].as_array().unwrap();
    let kinds: Vec<&str> = data.iter().map(|e| e["event"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["charge.authorised", "charge.completed"], "oldest first: {}", a.text);
    for (e, state) in data.iter().zip(["authorised", "completed"]) {
        assert_eq!(keys(e), ["created_at", "data", "event", "id", "mode", "object_id"], "{e}");
        assert!(e["id"].as_str().unwrap().starts_with("evt_"), "{e}");
        assert_eq!(e["object_id"], charge.as_str());
        assert_eq!(e["mode"], "test");
        assert!(is_utc_timestamp(e["created_at"].as_str().unwrap()), "{e}");
        assert_eq!(e["data"]["charge_ref"], charge.as_str(), "data is the full charge: {e}");
        assert_eq!(e["data"]["state"], state, "{e}");
        assert_eq!(e["data"]["currency"], "KES");
    }
    assert!(data[0]["created_at"].as_str() <= data[1]["created_at"].as_str());
    assert!(data[0]["id"].as_str() < data[1]["id"].as_str());
    assert!(a.text.contains("\"amount\":250.00"), "data keeps the API's number form: {}", a.text);
    assert!(!a.text.contains("\"amount\":250.0,") && !a.text.contains("\"amount\":250,"), "{}", a.text);

    let one = Answer::of(app.get(&token, &format!("/events/{}", data[1]["id"].as_str().unwrap())).await).await;
    assert_eq!(one.status, 200, "{}", one.text);
    assert_eq!(one.json["id"], data[1]["id"]);
    assert_eq!(one.json["event"], "charge.completed");
    assert_eq!(one.json["data"], data[1]["data"]);
    assert!(one.text.contains("\"amount\":250.00"), "{}", one.text);
    assert_eq!(one.json["deliveries"], json!([]), "no endpoint, no delivery");
    assert_eq!(one.json["attempts"], json!([]));
    app.stop().await;
}

async fn events_filter_paginate_and_refuse_bad_parameters(db: Db) {
    let app = quick(db).await;
    let (_, token) = app.merchant_token().await;
    let charge = completed_charge(&app, &token).await;

    let done = events(&app, &token, "?type=charge.completed").await;
    let data = done.json["data"].as_array().unwrap();
    assert_eq!(data.len(), 1, "{}", done.text);
    assert_eq!(data[0]["event"], "charge.completed");
    assert_eq!(data[0]["object_id"], charge.as_str());
    assert_eq!(events(&app, &token, "?type=payout.completed").await.json["data"], json!([]));

    let first = events(&app, &token, "?limit=1").await;
    assert_eq!(first.json["data"].as_array().unwrap().len(), 1);
    assert_eq!(first.json["data"][0]["event"], "charge.authorised");
    assert_eq!(first.json["has_more"], true);
    let cursor = first.json["next_cursor"].as_str().unwrap().to_owned();
    assert_eq!(cursor, first.json["data"][0]["id"].as_str().unwrap(), "the cursor is the last id");
    let second = events(&app, &token, &format!("?limit=1&after={cursor}")).await;
    assert_eq!(second.json["data"].as_array().unwrap().len(), 1);
    assert_eq!(second.json["data"][0]["event"], "charge.completed");
    assert_eq!(second.json["has_more"], false);
    assert_eq!(second.json["next_cursor"], Value::Null);
    let last = second.json["data"][0]["id"].as_str().unwrap();
    assert_eq!(events(&app, &token, &format!("?after={last}")).await.json["data"], json!([]));
    let same = events(&app, &token, &format!("?limit=1&cursor={cursor}")).await;
    assert_eq!(same.json["data"], second.json["data"], "cursor is accepted as after");

    for q in ["?after=nonsense", "?after=ch_123", "?limit=0", "?limit=101", "?limit=x", "?type=charge.done"] {
        problem_strict(app.get(&token, &format!("/events{q}")).await, 400, "invalid_request").await;
    }
    app.stop().await;
}

async fn events_are_private_to_their_merchant_and_mode(db: Db) {
    let app = quick(db).await;
    let (creds, token) = app.merchant_token().await;
    let (_, other) = app.merchant_token().await;
    let live = app.token(&app.live(&creds.org_id).await).await;
    let endpoint_id = endpoint(&app, &token, HOOK, &["*"]).await["endpoint_id"].as_str().unwrap().to_owned();
    completed_charge(&app, &token).await;
    let mine = events(&app, &token, "").await;
    let id = mine.json["data"][0]["id"].as_str().unwrap().to_owned();
    assert_eq!(events(&app, &other, "").await.json["data"], json!([]));
    assert_eq!(events(&app, &live, "").await.json["data"], json!([]));
    assert_eq!(events(&app, &other, &format!("?after={id}")).await.json["data"], json!([]));
    for t in [&other, &live] {
        problem_strict(app.get(t, &format!("/events/{id}")).await, 404, "not_found").await;
        let r = app.post(t, &format!("/events/{id}/redeliver"), &json!({}), Some(&key())).await;
        problem_strict(r, 404, "not_found").await;
    }
    // Another merchant's endpoint cannot be named either.
    let (_, third) = app.merchant_token().await;
    let theirs = endpoint(&app, &third, HOOK, &["*"]).await;
    let r = app.post(&token, &format!("/events/{id}/redeliver"), &json!({"endpoint_id": theirs["endpoint_id"]}), Some(&key())).await;
    problem_strict(r, 404, "not_found").await;
    problem_strict(app.get(&token, "/events/evt_nonsense").await, 404, "not_found").await;
    assert_eq!(app.get_json(&token, &format!("/events/{id}")).await["deliveries"][0]["endpoint_id"], endpoint_id.as_str());
    app.stop().await;
}

async fn event_detail_shows_deliveries_and_redeliver_queues_again(db: Db) {
    let app = quick(db).await;
    let (_, token) = app.merchant_token().await;
    let e = endpoint(&app, &token, HOOK, &["charge.completed"]).await;
    let endpoint_id = e["endpoint_id"].as_str().unwrap().to_owned();
    completed_charge(&app, &token).await;
    let list = events(&app, &token, "").await;
    let authorised = list.json["data"][0]["id"].as_str().unwrap().to_owned();
    let completed = list.json["data"][1]["id"].as_str().unwrap().to_owned();

    let detail = app.get_json(&token, &format!("/events/{completed}")).await;
    let deliveries = detail["deliveries"].as_array().unwrap();
    assert_eq!(deliveries.len(), 1, "{detail}");
    let d = &deliveries[0];
    assert_eq!(d["endpoint_id"], endpoint_id.as_str());
    assert!(["pending", "succeeded", "failed"].contains(&d["state"].as_str().unwrap()), "{d}");
    assert!(d["attempts"].is_u64(), "{d}");
    assert!(d["next_attempt_at"].is_null() || is_utc_timestamp(d["next_attempt_at"].as_str().unwrap()), "{d}");
    for a in detail["attempts"].as_array().unwrap() {
        assert_eq!(a["endpoint_id"], endpoint_id.as_str(), "{a}");
        assert!(is_utc_timestamp(a["attempted_at"].as_str().unwrap()), "{a}");
        assert!(a["latency_ms"].is_u64(), "{a}");
        assert!(a.get("status").is_some() && a.get("error").is_some(), "{a}");
    }
    let unsubscribed = app.get_json(&token, &format!("/events/{authorised}")).await;
    assert_eq!(unsubscribed["deliveries"], json!([]), "the endpoint does not take charge.authorised");

    let path = format!("/events/{completed}/redeliver");
    problem_strict(app.post(&token, &path, &json!({}), None).await, 400, "idempotency_key_missing").await;
    field_problem(app.post(&token, &path, &json!({"endpoint": endpoint_id}), Some(&key())).await, "endpoint", "unknown_field").await;
    problem_strict(app.post(&token, &path, &json!({"endpoint_id": "we_nonsense"}), Some(&key())).await, 404, "not_found").await;

    let k = key();
    let a = Answer::of(app.post(&token, &path, &json!({"endpoint_id": endpoint_id}), Some(&k)).await).await;
    assert_eq!(a.status, 200, "{}", a.text);
    assert_eq!(a.json, json!({"event_id": completed, "endpoint_ids": [endpoint_id]}));
    let replay = Answer::of(app.post(&token, &path, &json!({"endpoint_id": endpoint_id}), Some(&k)).await).await;
    assert_eq!(replay.header("idempotent-replayed"), "true");
    assert_eq!(replay.text, a.text);
    let detail = app.get_json(&token, &format!("/events/{completed}")).await;
    let deliveries = detail["deliveries"].as_array().unwrap();
    assert_eq!(deliveries.len(), 2, "a second delivery, and only one for the replay: {detail}");
    assert!(deliveries.iter().all(|d| d["endpoint_id"] == endpoint_id.as_str()), "{detail}");

    // An empty body: every subscribed endpoint.
    let all = app.http.post(app.url(&path)).bearer_auth(&token).header("Idempotency-Key", key()).send().await.unwrap();
    let all = Answer::of(all).await;
    assert_eq!(all.status, 200, "{}", all.text);
    assert_eq!(all.json["endpoint_ids"], json!([endpoint_id]));
    assert_eq!(app.get_json(&token, &format!("/events/{completed}")).await["deliveries"].as_array().unwrap().len(), 3);
    // Not subscribed: nothing to queue.
    let none = Answer::of(app.post(&token, &format!("/events/{authorised}/redeliver"), &json!({}), Some(&key())).await).await;
    assert_eq!(none.status, 200, "{}", none.text);
    assert_eq!(none.json["endpoint_ids"], json!([]));

    // A deleted endpoint cannot be named.
    let r = delete(&app, &token, &format!("/webhooks/endpoints/{endpoint_id}"), Some(&key())).await;
    assert_eq!(r.status(), 200);
    problem_strict(app.post(&token, &path, &json!({"endpoint_id": endpoint_id}), Some(&key())).await, 404, "not_found").await;
    app.stop().await;
}

async fn openapi_documents_the_webhook_endpoints(db: Db) {
    let app = TestApp::shared(db);
    let doc: Value = app.http.get(app.url("/api/v1/openapi.json")).send().await.unwrap().json().await.unwrap();
    let paths = &doc["paths"];
    for (path, method) in [
        ("/api/v1/webhooks/endpoints", "post"),
        ("/api/v1/webhooks/endpoints", "get"),
        ("/api/v1/webhooks/endpoints/{endpoint_id}", "get"),
        ("/api/v1/webhooks/endpoints/{endpoint_id}", "delete"),
        ("/api/v1/webhooks/endpoints/{endpoint_id}/rotate-secret", "post"),
        ("/api/v1/events", "get"),
        ("/api/v1/events/{event_id}", "get"),
        ("/api/v1/events/{event_id}/redeliver", "post"),
    ] {
        let op = &paths[path][method];
        assert!(op.is_object(), "{method} {path} is documented");
        assert_eq!(op["tags"], json!(["Webhooks"]), "{method} {path}");
    }
    let schemas = &doc["components"]["schemas"];
    for s in ["EndpointCreateRequest", "EndpointDto", "EventDto", "EventDetailDto", "RedeliverRequest", "RedeliveryDto"] {
        assert!(schemas[s].is_object(), "schema {s}");
    }
}
