//! Developers (console contract section 4): API key pairs (the secret shown once, step-up to
//! create and revoke, live keys after review), webhook endpoints (the signing secret shown once,
//! rotate with a step-up, disable) and events with their attempts and "Redeliver".

use std::time::Duration;

use serde_json::{json, Value};

use super::{join, Browser, Page, Someone};
use crate::harness::{msisdn, Creds, Db, TestApp};
use crate::on_both;

on_both!(
    a_key_pair_created_on_the_page_gets_a_token_and_names_the_person_who_created_it,
    key_pairs_and_secret_rotations_need_a_fresh_authentication_code,
    a_live_key_pair_waits_for_review,
    revoking_a_key_pair_stops_its_tokens,
    an_endpoint_shows_its_signing_secret_once_rotates_and_disables,
    the_callback_secret_is_shown_and_rotated_after_a_step_up,
    events_are_listed_newest_first_with_their_attempts_and_redelivered_once,
    finance_and_viewers_may_not_use_developers,
    a_test_session_cannot_see_or_touch_live_endpoints_and_events,
    developers_forms_from_another_origin_or_without_their_token_do_nothing,
    after_ten_wrong_step_up_codes_the_right_one_is_refused_and_nothing_is_created,
);

const HOOK: &str = "http://127.0.0.1:9/hook";

/// The text of the element labelled by the element with id `label`.
fn labelled(page: &Page, label: &str) -> String {
    page.text(&format!("[aria-labelledby={label}]"))
}

/// Creates a key pair on the page with `code`.
async fn create_key(b: &mut Browser, mode: &str, code: &str) -> Page {
    b.submit("/console/developers", "/console/developers/keys", &[("mode", mode), ("code", code)]).await
}

/// Adds an endpoint on the page (the form's own one-time key).
async fn add_endpoint(b: &mut Browser, url: &str, events: &[&str], description: &str) -> (Page, Vec<(String, String)>) {
    let form = b.get("/console/developers").await;
    let mut fields = vec![
        ("csrf_token".to_owned(), form.csrf()),
        (
            "idempotency_key".to_owned(),
            form.attrs("form[action='/console/developers/endpoints'] input[name=idempotency_key]", "value")[0].clone(),
        ),
        ("url".to_owned(), url.to_owned()),
        ("description".to_owned(), description.to_owned()),
    ];
    fields.extend(events.iter().map(|e| ("events".to_owned(), (*e).to_owned())));
    let borrowed: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    (b.post("/console/developers/endpoints", &borrowed).await, fields)
}

async fn token_of(app: &TestApp, client_id: &str, client_secret: &str) -> reqwest::Response {
    app.http.post(app.url("/oauth/token")).json(&json!({"client_id": client_id, "client_secret": client_secret})).send().await.unwrap()
}

/// The key pairs' rows of the Developers table: (client id, created by, state).
fn key_rows(page: &Page) -> Vec<Vec<String>> {
    let cells = |i: usize| page.texts(&format!("table:first-of-type tbody tr td:nth-child({i})"));
    let (ids, by, state) = (cells(1), cells(5), cells(7));
    ids.into_iter().zip(by).zip(state).map(|((a, b), c)| vec![a, b, c]).collect()
}

async fn new_admin(app: &TestApp) -> (Creds, Browser, Someone) {
    let m = app.merchant().await;
    let (b, someone) = join(app, &m.org_id, "admin").await;
    (m, b, someone)
}

async fn a_key_pair_created_on_the_page_gets_a_token_and_names_the_person_who_created_it(db: Db) {
    let app = TestApp::shared(db);
    let (m, mut b, admin) = new_admin(app).await;
    let page = b.get("/console/developers").await;
    assert_eq!(page.status, 200, "{}", page.html);
    assert_eq!(page.text("h1"), "Developers");
    assert!(page.texts("nav a").contains(&"Developers".to_owned()));
    // The first field named "Authentication code" is the create form's (the journey fills `.first`).
    assert_eq!(page.attrs("label", "for").into_iter().find(|f| f.starts_with("f-code")), Some("f-code".to_owned()));
    assert_eq!(page.attrs("#f-mode option[selected]", "value"), vec!["test"], "the session's mode by default");

    let created = create_key(&mut b, "test", &admin.recovery[0]).await;
    assert_eq!(created.status, 200, "{}", created.html);
    let client_id = labelled(&created, "new-client-id-label");
    let secret = labelled(&created, "new-client-secret-label");
    assert!(client_id.starts_with("ck_test_"), "{client_id}");
    assert!(created.status_message().unwrap().contains("only this once"));
    let r = token_of(app, &client_id, &secret).await;
    assert_eq!(r.status(), 200);
    let token: Value = r.json().await.unwrap();
    assert_eq!(token["mode"], "test");
    assert_eq!(app.get(token["access_token"].as_str().unwrap(), "/accounts").await.status(), 200);

    // Listed with its creator; the secret is never shown again.
    let again = b.get("/console/developers").await;
    assert!(!again.html.contains(&secret), "the secret is shown once");
    let row = key_rows(&again).into_iter().find(|r| r[0] == client_id).unwrap();
    assert!(row[1].contains("Amina Njeri") && row[1].contains(&admin.email), "{row:?}");
    assert_eq!(row[2], "Active");
    let operator_issued = key_rows(&again).into_iter().find(|r| r[0] == m.client_id).unwrap();
    assert_eq!(operator_issued[1], "Malipo operator");
    // As stored: created by the person.
    let (p, cookie) = (app.platform.clone(), b.cookie.clone().unwrap());
    let stored = tokio::task::spawn_blocking(move || {
        let who = p.people().session(&cookie).unwrap().unwrap();
        p.people().keys(&who).unwrap()
    })
    .await
    .unwrap();
    let mine = stored.iter().find(|c| c.client_id == client_id).unwrap();
    assert_eq!(mine.created_by.as_ref().map(|u| u.to_string()), stored_user_id(app, &admin.email).await);
}

async fn stored_user_id(app: &TestApp, email: &str) -> Option<String> {
    let (p, email) = (app.platform.clone(), email.to_owned());
    tokio::task::spawn_blocking(move || {
        let key = malipo_auth::User::email_key(&email);
        malipo_service::read(p.store(), |tx| Ok(tx.user_by_email(&key)?)).unwrap().map(|u| u.id.to_string())
    })
    .await
    .unwrap()
}

async fn key_pairs_and_secret_rotations_need_a_fresh_authentication_code(db: Db) {
    // Wrong codes count as failed sign-ins: a server of the test's own.
    let app = TestApp::spawn(db).await;
    let (_, mut b, admin) = new_admin(&app).await;
    let before = key_rows(&b.get("/console/developers").await).len();
    for (code, why) in [("000000", "wrong"), (admin.enrolled_with.as_str(), "used at enrolment"), ("", "missing")] {
        let refused = create_key(&mut b, "test", code).await;
        assert_eq!(refused.status, 422, "{why}: {}", refused.html);
        assert!(refused.field_error("code").is_some(), "{why}: the error beside Authentication code");
        assert_eq!(refused.attrs("#f-code", "aria-invalid"), vec!["true"]);
        assert_eq!(refused.texts("[aria-labelledby=new-client-secret-label]").len(), 0);
        assert_eq!(refused.alert().as_deref(), Some("The key pair was not created."));
    }
    assert_eq!(create_key(&mut b, "test", &admin.recovery[0]).await.status, 200);
    let replayed = create_key(&mut b, "test", &admin.recovery[0]).await;
    assert_eq!(replayed.status, 422, "a recovery code works once");
    let page = b.get("/console/developers").await;
    assert_eq!(key_rows(&page).len(), before + 1, "one key pair made");

    // Revoking: the error beside the row's own field, the key pair untouched.
    let created = create_key(&mut b, "test", &admin.recovery[1]).await;
    let (id, secret) = (labelled(&created, "new-client-id-label"), labelled(&created, "new-client-secret-label"));
    let action = format!("/console/developers/keys/{id}/revoke");
    let refused = b.submit("/console/developers", &action, &[("code", &admin.recovery[0])]).await;
    assert_eq!(refused.status, 422, "{}", refused.html);
    assert!(refused.texts(&format!("#f-code-{id}-error"))[0].contains("code"), "{}", refused.html);
    assert_eq!(token_of(&app, &id, &secret).await.status(), 200, "still works");

    // Rotating: refused without a fresh code; the secret is not changed.
    let (added, _) = add_endpoint(&mut b, HOOK, &["*"], "").await;
    assert_eq!(added.status, 200, "{}", added.html);
    let (_, token) = merchant_token_of(&app, &b).await;
    let endpoint = app.get_json(&token, "/webhooks/endpoints").await["data"][0].clone();
    let eid = endpoint["endpoint_id"].as_str().unwrap().to_owned();
    let page = b.get("/console/developers").await;
    let key =
        page.attrs(&format!("form[action='/console/developers/endpoints/{eid}/rotate'] input[name=idempotency_key]"), "value")[0].clone();
    let rotate = format!("/console/developers/endpoints/{eid}/rotate");
    let refused = b.post(&rotate, &[("csrf_token", &page.csrf()), ("idempotency_key", &key), ("code", "123456")]).await;
    assert_eq!(refused.status, 422);
    assert!(!refused.texts(&format!("#f-code-{eid}-error")).is_empty());
    assert!(refused.texts("[aria-labelledby=signing-secret-label]").is_empty());
    let after = app.get_json(&token, &format!("/webhooks/endpoints/{eid}")).await;
    assert_eq!(after["previous_secret_expires_at"], Value::Null, "not rotated");
    let rotated = b.post(&rotate, &[("csrf_token", &page.csrf()), ("idempotency_key", &key), ("code", &admin.recovery[2])]).await;
    assert_eq!(rotated.status, 200, "{}", rotated.html);
    assert!(labelled(&rotated, "signing-secret-label").starts_with("whsec_"));
    assert!(app.get_json(&token, &format!("/webhooks/endpoints/{eid}")).await["previous_secret_expires_at"].is_string());
}

/// The organisation's test credential of the person's browser (a key pair made on the page).
async fn merchant_token_of(app: &TestApp, b: &Browser) -> (String, String) {
    let (p, cookie) = (app.platform.clone(), b.cookie.clone().unwrap());
    let issued = tokio::task::spawn_blocking(move || {
        let who = p.people().session(&cookie).unwrap().unwrap();
        p.access().issue_credential(&who.org.id, malipo_core::Mode::Test, None).unwrap()
    })
    .await
    .unwrap();
    let creds = Creds { org_id: issued.org_id.to_string(), client_id: issued.client_id.clone(), client_secret: issued.client_secret };
    (issued.client_id, app.token(&creds).await)
}

async fn a_live_key_pair_waits_for_review(db: Db) {
    let app = TestApp::shared(db);
    let (m, mut b, admin) = new_admin(app).await;
    let refused = create_key(&mut b, "live", &admin.recovery[0]).await;
    assert_eq!(refused.status, 409, "{}", refused.html);
    assert!(refused.field_error("mode").unwrap().contains("review"), "{:?}", refused.field_error("mode"));
    assert_eq!(refused.attrs("#f-mode option[selected]", "value"), vec!["live"], "the choice is kept");
    assert!(!key_rows(&refused).iter().any(|r| r[0].starts_with("ck_live_")));
    // After review (an operator issues the first live key), the person may create more.
    let first = app.live(&m.org_id).await;
    let created = create_key(&mut b, "live", &admin.recovery[0]).await;
    assert_eq!(created.status, 200, "the code was not spent on the refusal: {}", created.html);
    let id = labelled(&created, "new-client-id-label");
    assert!(id.starts_with("ck_live_") && id != first.client_id);
    let token: Value = token_of(app, &id, &labelled(&created, "new-client-secret-label")).await.json().await.unwrap();
    assert_eq!(token["mode"], "live");
    assert_eq!(b.submit("/console/developers", "/console/developers/keys", &[("mode", "sandbox"), ("code", "1")]).await.status, 422);
}

async fn revoking_a_key_pair_stops_its_tokens(db: Db) {
    let app = TestApp::shared(db);
    let (_, mut b, admin) = new_admin(app).await;
    let created = create_key(&mut b, "test", &admin.recovery[0]).await;
    let (id, secret) = (labelled(&created, "new-client-id-label"), labelled(&created, "new-client-secret-label"));
    let token: Value = token_of(app, &id, &secret).await.json().await.unwrap();
    let token = token["access_token"].as_str().unwrap().to_owned();
    assert_eq!(app.get(&token, "/accounts").await.status(), 200);
    let done = b.submit("/console/developers", &format!("/console/developers/keys/{id}/revoke"), &[("code", &admin.recovery[1])]).await;
    assert_eq!((done.status, done.location.as_deref()), (303, Some("/console/developers?done=key-revoked")), "{}", done.html);
    let page = b.follow(&done).await;
    assert!(page.status_message().unwrap().contains("revoked"));
    let row = key_rows(&page).into_iter().find(|r| r[0] == id).unwrap();
    assert!(row[2].starts_with("Revoked"), "{row:?}");
    assert!(
        page.attrs(&format!("form[action='/console/developers/keys/{id}/revoke']"), "action").is_empty(),
        "no Revoke for a revoked key"
    );
    assert_eq!(app.get(&token, "/accounts").await.status(), 401, "its token stopped");
    assert_eq!(token_of(app, &id, &secret).await.status(), 401, "no new token");
    // Revoking again, or another organisation's key pair: not found, and the code is not spent.
    let again = b.submit("/console/developers", &format!("/console/developers/keys/{id}/revoke"), &[("code", &admin.recovery[2])]).await;
    assert_eq!(again.status, 404);
    let other = app.merchant().await;
    let theirs = b
        .submit("/console/developers", &format!("/console/developers/keys/{}/revoke", other.client_id), &[("code", &admin.recovery[2])])
        .await;
    assert_eq!(theirs.status, 404);
}

async fn an_endpoint_shows_its_signing_secret_once_rotates_and_disables(db: Db) {
    let app = TestApp::shared(db);
    let (_, mut b, admin) = new_admin(app).await;
    // A refused form keeps its values, each error beside its field.
    let (refused, _) = add_endpoint(&mut b, "ftp://example.com/x", &[], "<b>Orders</b> \u{202E}gpj").await;
    assert_eq!(refused.status, 422, "{}", refused.html);
    assert!(refused.field_error("url").is_some());
    assert!(refused.field_error("events").is_some(), "no kind ticked");
    assert!(refused.field_error("description").unwrap().contains("U+202E"), "{:?}", refused.field_error("description"));
    assert_eq!(refused.value_of("url").as_deref(), Some("ftp://example.com/x"));
    assert_eq!(refused.value_of("description").as_deref(), Some("<b>Orders</b> [U+202E]gpj"), "kept, the override visible");
    assert!(refused.html.contains("&lt;b&gt;Orders&lt;/b&gt; [U+202E]gpj"), "shown as text");

    let (added, fields) = add_endpoint(&mut b, HOOK, &["charge.completed", "charge.failed"], "<b>Orders</b> & co").await;
    assert_eq!(added.status, 200, "{}", added.html);
    let secret = labelled(&added, "signing-secret-label");
    assert!(secret.starts_with("whsec_"), "{secret}");
    assert!(added.html.contains("&lt;b&gt;Orders&lt;/b&gt; &amp; co"), "markup shown as text");
    assert!(added.texts("table tbody tr td").iter().any(|t| t == "charge.completed, charge.failed"));
    // The same form again (double click, back and resubmit): one endpoint, no secret shown.
    let borrowed: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let again = b.post("/console/developers/endpoints", &borrowed).await;
    assert_eq!((again.status, again.location.as_deref()), (303, Some("/console/developers?done=endpoint-added")));
    let page = b.follow(&again).await;
    assert!(!page.html.contains(&secret));
    let rotate_forms = page.attrs("form[action$='/rotate']", "action");
    assert_eq!(rotate_forms.len(), 1, "one endpoint");
    let eid = rotate_forms[0].split('/').nth(4).unwrap().to_owned();

    let rotated = b
        .post(
            &rotate_forms[0],
            &[
                ("csrf_token", &page.csrf()),
                ("idempotency_key", &page.attrs("form[action$='/rotate'] input[name=idempotency_key]", "value")[0]),
                ("code", &admin.recovery[0]),
            ],
        )
        .await;
    assert_eq!(rotated.status, 200, "{}", rotated.html);
    let new_secret = labelled(&rotated, "signing-secret-label");
    assert!(new_secret.starts_with("whsec_") && new_secret != secret);

    let page = b.get("/console/developers").await;
    let disable = format!("/console/developers/endpoints/{eid}/disable");
    let key = page.attrs(&format!("form[action='{disable}'] input[name=idempotency_key]"), "value")[0].clone();
    let done = b.post(&disable, &[("csrf_token", &page.csrf()), ("idempotency_key", &key)]).await;
    assert_eq!((done.status, done.location.as_deref()), (303, Some("/console/developers?done=endpoint-disabled")));
    let twice = b.post(&disable, &[("csrf_token", &page.csrf()), ("idempotency_key", &key)]).await;
    assert_eq!(twice.location, done.location, "a repeat lands on the same page");
    let page = b.follow(&done).await;
    assert!(page.attrs("form[action$='/rotate']", "action").is_empty(), "no longer listed");
    let (_, token) = merchant_token_of(app, &b).await;
    assert_eq!(app.get(&token, &format!("/webhooks/endpoints/{eid}")).await.status(), 404, "deleted, as the API's DELETE");
}

/// Posts the "GSMA callbacks" form with `code`, pressing `action` (`show` or `rotate`).
async fn callback_form(b: &mut Browser, csrf: &str, key: &str, code: &str, action: &str) -> Page {
    let fields = [("csrf_token", csrf), ("idempotency_key", key), ("code", code), ("action", action)];
    b.post("/console/developers/callback-secret", &fields).await
}

async fn the_callback_secret_is_shown_and_rotated_after_a_step_up(db: Db) {
    let app = TestApp::shared(db);
    let (_, mut b, admin) = new_admin(app).await;
    let page = b.get("/console/developers").await;
    assert_eq!(page.text("h2#callbacks"), "GSMA callbacks");
    let key = page.attrs("form[action='/console/developers/callback-secret'] input[name=idempotency_key]", "value")[0].clone();
    let csrf = page.csrf();
    // A wrong code shows nothing, the error beside the field.
    let refused = callback_form(&mut b, &csrf, &key, "123456", "show").await;
    assert_eq!(refused.status, 422, "{}", refused.html);
    assert!(refused.html.contains("f-callback-code-error"), "{}", refused.html);
    assert!(!refused.html.contains("whsec_"));

    let shown = callback_form(&mut b, &csrf, &key, &admin.recovery[0], "show").await;
    assert_eq!(shown.status, 200, "{}", shown.html);
    let secret = labelled(&shown, "callback-secret-label");
    assert!(secret.starts_with("whsec_"), "{secret}");
    let (_, token) = merchant_token_of(app, &b).await;
    assert_eq!(app.get_json(&token, "/api/v1/webhooks/callback-secret").await["secret"], secret.as_str(), "the API's");

    let rotated = callback_form(&mut b, &csrf, &key, &admin.recovery[1], "rotate").await;
    assert_eq!(rotated.status, 200, "{}", rotated.html);
    let new_secret = labelled(&rotated, "callback-secret-label");
    assert!(new_secret.starts_with("whsec_") && new_secret != secret);
    let api = app.get_json(&token, "/api/v1/webhooks/callback-secret").await;
    assert_eq!(api["secret"], new_secret.as_str());
    assert!(api["previous_secret_expires_at"].is_string(), "{api}");
    // The same form again: rotated once, no secret shown.
    let again = callback_form(&mut b, &csrf, &key, &admin.recovery[2], "rotate").await;
    assert_eq!((again.status, again.location.as_deref()), (303, Some("/console/developers?done=callback-rotated")));
    assert_eq!(app.get_json(&token, "/api/v1/webhooks/callback-secret").await["secret"], new_secret.as_str());
}

async fn events_are_listed_newest_first_with_their_attempts_and_redelivered_once(db: Db) {
    let app = TestApp::shared(db);
    let (_, mut b, _) = new_admin(app).await;
    let (added, _) = add_endpoint(&mut b, HOOK, &["*"], "").await;
    assert_eq!(added.status, 200);
    let (_, token) = merchant_token_of(app, &b).await;
    let mut refs = Vec::new();
    for _ in 0..3 {
        let r = app.charge_ref(&token, &msisdn("5678"), "250").await;
        app.wait_for(&token, &r, "completed", Duration::from_secs(10)).await;
        refs.push(r);
    }
    let api = app.get_json(&token, "/events?limit=100").await;
    let oldest_first: Vec<String> = api["data"].as_array().unwrap().iter().map(|e| e["id"].as_str().unwrap().to_owned()).collect();
    assert!(oldest_first.len() >= 3, "{oldest_first:?}");

    let page = b.get("/console/developers/events").await;
    assert_eq!(page.status, 200, "{}", page.html);
    assert_eq!(page.text("h1"), "Events");
    let listed = page.texts("table tbody tr td:first-child a");
    let newest_first: Vec<String> = oldest_first.iter().rev().cloned().collect();
    assert_eq!(listed, newest_first, "newest first");
    let completed = b.get("/console/developers/events?type=charge.completed").await;
    let kinds = completed.texts("table tbody tr td:nth-child(2)");
    assert_eq!(kinds.len(), 3);
    assert!(kinds.iter().all(|k| k == "charge.completed"));
    assert_eq!(b.get("/console/developers/events?type=charge.nope").await.status, 422);
    // Pages of 20: more events than that page by "Next page".
    let mut more = Vec::new();
    for _ in 0..18 {
        more.push(app.charge_ref(&token, &msisdn("5678"), "100").await);
    }
    for r in &more {
        app.wait_for(&token, r, "completed", Duration::from_secs(20)).await;
    }
    let first = b.get("/console/developers/events").await;
    assert_eq!(first.texts("table tbody tr").len(), 20);
    let next = first.attrs(".pager a", "href")[0].clone();
    let second = b.get(&next).await;
    let (a, z) = (first.texts("table tbody tr td:first-child a"), second.texts("table tbody tr td:first-child a"));
    assert!(!z.is_empty() && a.iter().all(|id| !z.contains(id)));
    assert!(a.last().unwrap() > z.first().unwrap(), "the next page is older");

    // An event's page: its summary, its attempts (the endpoint refuses connections).
    let id = newest_first.iter().find(|id| listed.contains(id)).unwrap().clone();
    let path = format!("/console/developers/events/{id}");
    let started = std::time::Instant::now();
    let event = loop {
        let event = b.get(&path).await;
        if !event.texts("table tbody tr").is_empty() {
            break event;
        }
        assert!(started.elapsed() < Duration::from_secs(15), "no attempt shown: {}", event.html);
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(event.text("h1"), format!("Event {id}"));
    let facts = event.texts("dl.facts dd");
    assert!(facts.iter().any(|f| f == "KES 250.00" || f == "KES 100.00"), "{facts:?}");
    let attempt = event.texts("table tbody tr:first-child td");
    assert_eq!(attempt[1], HOOK, "the endpoint's URL");
    assert_eq!(attempt[2], "No answer");
    assert!(attempt[3].ends_with(" ms") && !attempt[4].is_empty(), "{attempt:?}");

    // "Redeliver": once per form, however often it is posted.
    let deliveries = |v: &Value| v["deliveries"].as_array().unwrap().len();
    let before = deliveries(&app.get_json(&token, &format!("/events/{id}")).await);
    let key = event.attrs("form[action$='/redeliver'] input[name=idempotency_key]", "value")[0].clone();
    let action = format!("{path}/redeliver");
    let one = b.post(&action, &[("csrf_token", &event.csrf()), ("idempotency_key", &key)]).await;
    let two = b.post(&action, &[("csrf_token", &event.csrf()), ("idempotency_key", &key)]).await;
    assert_eq!(one.status, 303, "{}", one.html);
    assert_eq!(one.location, two.location);
    assert_eq!(deliveries(&app.get_json(&token, &format!("/events/{id}")).await), before + 1, "one redelivery");
    assert!(b.follow(&one).await.status_message().unwrap().contains("Queued again for 1 endpoint"));
}

async fn finance_and_viewers_may_not_use_developers(db: Db) {
    let app = TestApp::shared(db);
    let (m, mut admin_b, admin) = new_admin(app).await;
    let (added, _) = add_endpoint(&mut admin_b, HOOK, &["*"], "").await;
    assert_eq!(added.status, 200);
    let created = create_key(&mut admin_b, "test", &admin.recovery[0]).await;
    let id = labelled(&created, "new-client-id-label");
    let (_, token) = merchant_token_of(app, &admin_b).await;
    let eid = app.get_json(&token, "/webhooks/endpoints").await["data"][0]["endpoint_id"].as_str().unwrap().to_owned();
    let r = app.charge_ref(&token, &msisdn("5678"), "250").await;
    app.wait_for(&token, &r, "completed", Duration::from_secs(10)).await;
    let evt = app.get_json(&token, "/events").await["data"][0]["id"].as_str().unwrap().to_owned();
    let keys_before = key_rows(&admin_b.get("/console/developers").await).len();
    for role in ["finance", "viewer"] {
        let (mut b, someone) = join(app, &m.org_id, role).await;
        let home = b.get("/console/").await;
        assert!(!home.texts("nav a").contains(&"Developers".to_owned()), "{role} sees no Developers link");
        for path in ["/console/developers", "/console/developers/events", &format!("/console/developers/events/{evt}")] {
            assert_eq!(b.get(path).await.status, 403, "{role} GET {path}");
        }
        let csrf = home.csrf();
        let code = someone.recovery.first().cloned().unwrap_or_default();
        let key = uuid::Uuid::new_v4().to_string();
        let posts: Vec<(String, Vec<(&str, &str)>)> = vec![
            ("/console/developers/keys".into(), vec![("csrf_token", &csrf), ("mode", "test"), ("code", &code)]),
            (format!("/console/developers/keys/{id}/revoke"), vec![("csrf_token", &csrf), ("code", &code)]),
            (
                "/console/developers/endpoints".into(),
                vec![("csrf_token", &csrf), ("idempotency_key", &key), ("url", HOOK), ("events", "*")],
            ),
            (
                format!("/console/developers/endpoints/{eid}/rotate"),
                vec![("csrf_token", &csrf), ("idempotency_key", &key), ("code", &code)],
            ),
            (format!("/console/developers/endpoints/{eid}/disable"), vec![("csrf_token", &csrf), ("idempotency_key", &key)]),
            (format!("/console/developers/events/{evt}/redeliver"), vec![("csrf_token", &csrf), ("idempotency_key", &key)]),
            (
                "/console/developers/callback-secret".into(),
                vec![("csrf_token", &csrf), ("idempotency_key", &key), ("code", &code), ("action", "show")],
            ),
        ];
        for (path, fields) in &posts {
            assert_eq!(b.post(path, fields).await.status, 403, "{role} POST {path}");
        }
    }
    // Nothing was done: one endpoint, its key pair active, no redelivery.
    let page = admin_b.get("/console/developers").await;
    assert_eq!(page.attrs("form[action$='/rotate']", "action").len(), 1);
    assert_eq!(key_rows(&page).iter().find(|r| r[0] == id).unwrap()[2], "Active");
    assert_eq!(key_rows(&page).len(), keys_before, "no key pair made");
    assert_eq!(app.get_json(&token, &format!("/events/{evt}")).await["deliveries"].as_array().unwrap().len(), 1);
}

async fn a_test_session_cannot_see_or_touch_live_endpoints_and_events(db: Db) {
    let app = TestApp::shared(db);
    let (m, mut b, admin) = new_admin(app).await;
    let live = app.live(&m.org_id).await;
    let token = app.token(&live).await;
    let r = app
        .post(
            &token,
            "/webhooks/endpoints",
            &json!({"url": "https://example.com/live-hooks", "events": ["*"]}),
            Some(&uuid::Uuid::new_v4().to_string()),
        )
        .await;
    assert_eq!(r.status(), 200);
    let eid = r.json::<Value>().await.unwrap()["endpoint_id"].as_str().unwrap().to_owned();
    let page = b.get("/console/developers").await;
    assert!(!page.html.contains("live-hooks"), "a test session lists test endpoints only");
    let key = uuid::Uuid::new_v4().to_string();
    let rotate = b
        .post(
            &format!("/console/developers/endpoints/{eid}/rotate"),
            &[("csrf_token", &page.csrf()), ("idempotency_key", &key), ("code", &admin.recovery[0])],
        )
        .await;
    assert_eq!(rotate.status, 404);
    let disable =
        b.post(&format!("/console/developers/endpoints/{eid}/disable"), &[("csrf_token", &page.csrf()), ("idempotency_key", &key)]).await;
    assert_eq!(disable.status, 404);
    assert_eq!(app.get(&token, &format!("/webhooks/endpoints/{eid}")).await.status(), 200, "untouched");
    // Switched to live mode, the same person sees it.
    let switched = b.post("/console/mode", &[("csrf_token", &page.csrf()), ("back", "/console/developers")]).await;
    assert_eq!(switched.status, 303);
    let live_page = b.get("/console/developers").await;
    assert!(live_page.html.contains("https://example.com/live-hooks"));
    // A test event is not found from a live session.
    let test_token = app.token(&m).await;
    let c = app.charge_ref(&test_token, &msisdn("5678"), "250").await;
    app.wait_for(&test_token, &c, "completed", Duration::from_secs(10)).await;
    let evt = app.get_json(&test_token, "/events").await["data"][0]["id"].as_str().unwrap().to_owned();
    assert_eq!(b.get(&format!("/console/developers/events/{evt}")).await.status, 404);
    assert!(b.get("/console/developers/events").await.texts("table tbody tr").is_empty());
}

async fn developers_forms_from_another_origin_or_without_their_token_do_nothing(db: Db) {
    let app = TestApp::shared(db);
    let (_, mut b, admin) = new_admin(app).await;
    let csrf = b.get("/console/developers").await.csrf();
    let before = key_rows(&b.get("/console/developers").await).len();
    b.origin = Some("https://evil.example".into());
    assert_eq!(
        b.post("/console/developers/keys", &[("csrf_token", &csrf), ("mode", "test"), ("code", &admin.recovery[0])]).await.status,
        403
    );
    b.origin = Some(app.base.clone());
    assert_eq!(b.post("/console/developers/keys", &[("mode", "test"), ("code", &admin.recovery[0])]).await.status, 403);
    let key = uuid::Uuid::new_v4().to_string();
    assert_eq!(b.post("/console/developers/endpoints", &[("idempotency_key", &key), ("url", HOOK), ("events", "*")]).await.status, 403);
    let page = b.get("/console/developers").await;
    assert_eq!(key_rows(&page).len(), before, "nothing was done");
    assert!(page.attrs("form[action$='/rotate']", "action").is_empty());
    assert_eq!(create_key(&mut b, "test", &admin.recovery[0]).await.status, 200, "the code was not spent");

    // The GSMA callbacks form the same way: the secret is not rotated and the code not spent.
    let (_, token) = merchant_token_of(app, &b).await;
    let secret = app.get_json(&token, "/api/v1/webhooks/callback-secret").await["secret"].clone();
    let form_key = uuid::Uuid::new_v4().to_string();
    b.origin = Some("https://evil.example".into());
    assert_eq!(callback_form(&mut b, &csrf, &form_key, &admin.recovery[1], "rotate").await.status, 403);
    b.origin = Some(app.base.clone());
    let no_token = [("idempotency_key", form_key.as_str()), ("code", admin.recovery[1].as_str()), ("action", "rotate")];
    assert_eq!(b.post("/console/developers/callback-secret", &no_token).await.status, 403);
    assert_eq!(app.get_json(&token, "/api/v1/webhooks/callback-secret").await["secret"], secret, "not rotated");
    let csrf = b.get("/console/developers").await.csrf();
    let shown = callback_form(&mut b, &csrf, &uuid::Uuid::new_v4().to_string(), &admin.recovery[1], "show").await;
    assert_eq!(shown.status, 200, "the code was not spent: {}", shown.html);
}

/// Step-up is a second factor and limited like one: eleven wrong codes and then the right one
/// create nothing; the form says why, and the attempts are in the audit log.
async fn after_ten_wrong_step_up_codes_the_right_one_is_refused_and_nothing_is_created(db: Db) {
    // Wrong codes count as failed sign-ins: a server of the test's own.
    let app = TestApp::spawn(db).await;
    let (_, mut b, admin) = new_admin(&app).await;
    let before = key_rows(&b.get("/console/developers").await).len();
    for i in 0..11 {
        let refused = create_key(&mut b, "test", "000000").await;
        assert_eq!(refused.status, 422, "attempt {}: {}", i + 1, refused.html);
    }
    // A code of the next step: never used, and accepted within the clock skew allowed.
    let refused = create_key(&mut b, "test", &admin.code(1)).await;
    assert_eq!(refused.status, 422, "the right code past the limit: {}", refused.html);
    let why = refused.field_error("code").unwrap_or_default();
    assert!(why.contains("Too many wrong authentication codes") && why.contains("15 minutes"), "{why}");
    assert_eq!(refused.texts("[aria-labelledby=new-client-secret-label]").len(), 0);
    let refused = create_key(&mut b, "test", &admin.recovery[0]).await;
    assert_eq!(refused.status, 422, "a recovery code too");
    assert_eq!(key_rows(&b.get("/console/developers").await).len(), before, "nothing created");
    // Counted where the sign-in's failures count: the account waits to sign in from here too.
    let locked = b.post("/console/login", &[("email", &admin.email), ("password", &admin.password)]).await;
    assert_eq!(locked.status, 429, "{}", locked.html);
    let audit = b.get("/console/audit?action=step_up").await;
    assert!(audit.html.matches("step_up.failed").count() >= 10, "{}", audit.html);
    assert!(audit.html.contains("step_up.locked"), "{}", audit.html);
}
