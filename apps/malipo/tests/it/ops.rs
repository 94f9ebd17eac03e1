//! Operational endpoints: liveness, readiness, metrics, the OpenAPI document.

use std::time::Duration;

use serde_json::json;

use crate::harness::{problem_strict, stk, Answer, Db, Options, TestApp};

crate::on_both!(
    healthz_answers_200,
    readyz_answers_200_when_the_database_is_reachable,
    metrics_count_requests_by_endpoint_pattern,
    metrics_count_charges_by_state,
    the_sealer_seals_and_metrics_report_its_backlog,
    metrics_do_not_label_unknown_paths_verbatim,
    openapi_document_lists_every_path,
    operational_endpoints_need_no_token,
    metrics_answer_only_their_token_or_their_own_listener,
    a_backlog_over_its_bound_refuses_new_charges_with_503_until_the_workers_catch_up,
    a_replay_is_answered_byte_for_byte_while_the_backlog_refuses_new_work,
    a_key_pair_reads_its_organisation_mode_and_scopes,
);

/// `GET /organisation` tells a key pair which organisation it acts for, in which country, time
/// zone and currency, with which mode and scopes; any scope may read it, no token may not.
async fn a_key_pair_reads_its_organisation_mode_and_scopes(db: Db) {
    let app = TestApp::shared(db);
    let (creds, token) = app.merchant_token().await;
    let r = app.get(&token, "/api/v1/organisation").await;
    assert_eq!(r.status(), 200);
    let org: serde_json::Value = r.json().await.unwrap();
    assert_eq!(org["id"], creds.org_id.as_str());
    assert_eq!((org["kind"].as_str(), org["country"].as_str()), (Some("merchant"), Some("KE")));
    assert_eq!((org["time_zone"].as_str(), org["currency"].as_str()), (Some("Africa/Nairobi"), Some("KES")));
    assert_eq!((org["mode"].as_str(), org["scope"].as_str()), (Some("test"), Some("payments payouts bulk:create reversals")));
    let live = app.live(&creds.org_id).await;
    let narrow = app.token_scoped(&live, "reversals").await;
    let org: serde_json::Value = app.get(&narrow, "/api/v1/organisation").await.json().await.unwrap();
    assert_eq!((org["mode"].as_str(), org["scope"].as_str()), (Some("live"), Some("reversals")));
    let anonymous = app.http.get(app.url("/api/v1/organisation")).send().await.unwrap();
    assert_eq!(anonymous.status(), 401);
}

/// The database going away (its sessions ended, new ones refused) is said quickly: `/readyz`
/// within a second and an API call within about two, both 503 `unavailable` with
/// `Retry-After`, never a client's time-out; when it comes back, so does the service, untouched.
/// (PostgreSQL: an embedded SQLite database does not go away.)
#[actix_web::test]
async fn a_database_that_goes_away_is_said_quickly_and_recovery_is_automatic() {
    use diesel::connection::SimpleConnection;
    use diesel::Connection;
    let app = TestApp::with(Db::Postgres, crate::harness::Options::default()).await;
    let (_, token) = app.merchant_token().await;
    assert_eq!(app.get(&token, "/partner/balance").await.status(), 200);
    let name = app.db.url.rsplit('/').next().unwrap().split('?').next().unwrap().to_owned();
    let admin_url =
        std::env::var("MALIPO_TEST_POSTGRES_URL").unwrap_or_else(|_| malipo_store_diesel::testing::DEFAULT_POSTGRES_URL.to_owned());
    let mut admin = diesel::PgConnection::establish(&admin_url).unwrap();
    admin
        .batch_execute(&format!(
            "ALTER DATABASE {name} ALLOW_CONNECTIONS false; \
             SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{name}'"
        ))
        .unwrap();

    let started = std::time::Instant::now();
    let ready = problem_strict(app.http.get(app.url("/readyz")).send().await.unwrap(), 503, "unavailable").await;
    assert!(started.elapsed() < Duration::from_secs(1), "/readyz took {:?}", started.elapsed());
    assert!(!ready.header("retry-after").is_empty(), "Retry-After");
    let why = ready.json["detail"].as_str().unwrap();
    assert!(why.starts_with("not ready: ") && !why.contains(&name), "/readyz says why, without the driver's text: {why}");
    for (path, post) in [("/partner/balance", false), ("/partner/stk", true)] {
        let started = std::time::Instant::now();
        let r = if post {
            app.post(&token, path, &crate::harness::stk("254712345678", serde_json::json!("10")), None).await
        } else {
            app.get(&token, path).await
        };
        let a = problem_strict(r, 503, "unavailable").await;
        assert!(started.elapsed() < Duration::from_millis(2500), "{path} took {:?}", started.elapsed());
        assert!(!a.header("retry-after").is_empty(), "Retry-After on {path}");
    }

    admin.batch_execute(&format!("ALTER DATABASE {name} ALLOW_CONNECTIONS true")).unwrap();
    let started = std::time::Instant::now();
    loop {
        let status = app.http.get(app.url("/readyz")).send().await.unwrap().status();
        if status == 200 {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(10), "/readyz still {status} after the database came back");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(app.get(&token, "/partner/balance").await.status(), 200, "API calls work again");
    app.charge(&token, "254712345678", "10").await;
    app.stop().await;
}

pub(crate) async fn metrics(app: &TestApp) -> String {
    let r = app.http.get(app.url("/metrics")).bearer_auth(crate::harness::TEST_METRICS_TOKEN).send().await.unwrap();
    assert_eq!(r.status(), 200);
    let ct = r.headers()["content-type"].to_str().unwrap().to_owned();
    assert!(ct.starts_with("text/plain"), "Prometheus text format: {ct}");
    r.text().await.unwrap()
}

/// The value of the first sample line that starts with `name{` and contains every label.
pub(crate) fn sample(text: &str, name: &str, labels: &[&str]) -> Option<f64> {
    text.lines()
        .filter(|l| (l.starts_with(&format!("{name}{{")) || l.starts_with(&format!("{name} "))) && labels.iter().all(|x| l.contains(x)))
        .find_map(|l| l.rsplit(' ').next()?.parse().ok())
}

async fn healthz_answers_200(db: Db) {
    let app = TestApp::shared(db);
    let a = Answer::of(app.http.get(app.url("/healthz")).send().await.unwrap()).await;
    assert_eq!(a.status, 200);
    assert_eq!(a.json["status"], "ok");
    assert!(!a.header("x-request-id").is_empty());
}

async fn readyz_answers_200_when_the_database_is_reachable(db: Db) {
    let app = TestApp::shared(db);
    let a = Answer::of(app.http.get(app.url("/readyz")).send().await.unwrap()).await;
    assert_eq!(a.status, 200, "{}", a.text);
    assert_eq!(a.json["status"], "ready");
}

async fn metrics_count_requests_by_endpoint_pattern(db: Db) {
    let app = TestApp::spawn(db).await;
    let (_, token) = app.merchant_token().await;
    let r = app.charge_ref(&token, "254700001009", "10").await;
    let _ = app.charge_ref(&token, "254700001009", "11").await;
    assert_eq!(app.get(&token, &format!("/partner/charges/{r}")).await.status(), 200);
    let text = metrics(&app).await;
    let stk = sample(&text, "malipo_http_requests_total", &["endpoint=\"/api/v1/partner/stk\"", "method=\"POST\"", "status=\"200\""]);
    assert_eq!(stk, Some(2.0), "{text}");
    let one = sample(&text, "malipo_http_requests_total", &["endpoint=\"/api/v1/partner/charges/{charge_ref}\"", "method=\"GET\""]);
    assert_eq!(one, Some(1.0), "path parameters are labelled by pattern: {text}");
    assert!(!text.contains(&r), "no charge id in a label");
    assert!(text.contains("malipo_http_requests_duration_seconds"), "latency histogram");
    app.stop().await;
}

async fn metrics_count_charges_by_state(db: Db) {
    let app = TestApp::spawn(db).await;
    let (_, token) = app.merchant_token().await;
    let r = app.charge_ref(&token, "254712345678", "10").await;
    app.wait_for(&token, &r, "completed", Duration::from_secs(10)).await;
    let d = app.charge_ref(&token, "254700001009", "10").await;
    assert_eq!(app.simulate(&token, &d, "decline").await.status(), 200);
    let text = metrics(&app).await;
    assert_eq!(sample(&text, "malipo_charges_total", &["state=\"pending\""]), Some(2.0), "{text}");
    assert_eq!(sample(&text, "malipo_charges_total", &["state=\"authorised\""]), Some(1.0), "{text}");
    assert_eq!(sample(&text, "malipo_charges_total", &["state=\"completed\""]), Some(1.0), "{text}");
    assert_eq!(sample(&text, "malipo_charges_total", &["state=\"declined\""]), Some(1.0), "{text}");
    app.assert_ledger_ok().await;
    app.stop().await;
}

/// The value of an unlabelled sample `name value`.
fn gauge(text: &str, name: &str) -> Option<f64> {
    text.lines().find_map(|l| l.strip_prefix(&format!("{name} "))?.parse().ok())
}

/// The server's sealer chains what the workers commit on its own, and `/metrics` reports what
/// waits for it (none, once it has passed) and for how long.
async fn the_sealer_seals_and_metrics_report_its_backlog(db: Db) {
    let app = TestApp::spawn(db).await;
    let (_, token) = app.merchant_token().await;
    let r = app.charge_ref(&token, "254712345678", "10").await;
    app.wait_for(&token, &r, "completed", Duration::from_secs(10)).await;
    // Sealed by the server, not by this test: every journal of the charge gets its chain entry.
    let started = std::time::Instant::now();
    loop {
        let p = app.platform.clone();
        let check = tokio::task::spawn_blocking(move || p.accounts().check_ledger(None)).await.unwrap().unwrap();
        assert_eq!(check.violations, vec![]);
        assert!(check.journals >= 1, "{check:?}");
        if check.unsealed == 0 {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(10), "still unsealed: {check:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The sealer's next passes report that nothing waits.
    loop {
        let text = metrics(&app).await;
        let (unsealed, lag) = (gauge(&text, "malipo_ledger_unsealed_journals"), gauge(&text, "malipo_ledger_seal_lag_seconds"));
        assert!(unsealed.is_some() && lag.is_some(), "both gauges exported: {text}");
        if unsealed == Some(0.0) {
            assert_eq!(lag, Some(0.0), "{text}");
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(10), "the gauge still reports a backlog: {text}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    app.stop().await;
}

async fn metrics_do_not_label_unknown_paths_verbatim(db: Db) {
    let app = TestApp::shared(db);
    let probe = format!("/api/v1/probe-{}", uuid::Uuid::new_v4().simple());
    problem_strict(app.http.get(app.url(&probe)).send().await.unwrap(), 404, "not_found").await;
    let text = metrics(app).await;
    assert!(!text.contains(&probe), "unknown paths must not become label values (unbounded cardinality)");
    let unknown = sample(&text, "malipo_http_requests_total", &["endpoint=\"UNKNOWN\"", "status=\"404\""]);
    assert!(unknown.is_some_and(|n| n >= 1.0), "unknown paths are counted under one label: {text}");
}

async fn openapi_document_lists_every_path(db: Db) {
    let app = TestApp::shared(db);
    let a = Answer::of(app.http.get(app.url("/api/v1/openapi.json")).send().await.unwrap()).await;
    assert_eq!(a.status, 200);
    assert!(a.header("content-type").starts_with("application/json"));
    let doc = a.json;
    assert!(doc["openapi"].as_str().unwrap().starts_with("3.1"), "{}", doc["openapi"]);
    let paths = doc["paths"].as_object().unwrap();
    let want = [
        ("/api/v1/oauth/token", "post"),
        ("/api/v1/oauth/revoke", "post"),
        ("/api/v1/partner/stk", "post"),
        ("/api/v1/partner/status", "get"),
        ("/api/v1/partner/charges", "get"),
        ("/api/v1/partner/charges/{charge_ref}", "get"),
        ("/api/v1/partner/balance", "get"),
        ("/api/v1/accounts", "get"),
        ("/api/v1/accounts/transfers", "post"),
        ("/api/v1/accounts/{account_id}/statement", "get"),
        ("/api/v1/payouts", "post"),
        ("/api/v1/payouts", "get"),
        ("/api/v1/payouts/{payout_ref}", "get"),
        ("/api/v1/bulk-payouts", "post"),
        ("/api/v1/bulk-payouts", "get"),
        ("/api/v1/bulk-payouts/{batch_id}", "get"),
        ("/api/v1/bulk-payouts/{batch_id}/approve", "post"),
        ("/api/v1/bulk-payouts/{batch_id}/reject", "post"),
        ("/api/v1/bulk-payouts/{batch_id}/items", "get"),
        ("/api/v1/reversals", "post"),
        ("/api/v1/reversals", "get"),
        ("/api/v1/reversals/{reversal_id}", "get"),
        ("/api/v1/sandbox/charges/{charge_ref}/simulate", "post"),
        ("/api/v1/sandbox/wallets", "post"),
        ("/healthz", "get"),
        ("/readyz", "get"),
        ("/api/v1/openapi.json", "get"),
    ];
    for (path, method) in want {
        assert!(paths.get(path).and_then(|p| p.get(method)).is_some(), "{method} {path} missing from the document");
    }
    // Every documented operation names its responses, and schemas it references exist.
    let text = serde_json::to_string(&doc).unwrap();
    let schemas = doc["components"]["schemas"].as_object().unwrap();
    for part in text.split("\"#/components/schemas/").skip(1) {
        let name = part.split('"').next().unwrap();
        assert!(schemas.contains_key(name), "dangling schema reference {name}");
    }
    // Every operation has an id of its own, a lower camel case verb and noun (`createCharge`),
    // as generators need them unique (OpenAPI requires it) and name methods after them.
    let mut ids = std::collections::HashMap::new();
    for (path, item) in paths {
        for (method, op) in item.as_object().unwrap() {
            assert!(op["responses"].as_object().is_some_and(|r| !r.is_empty()), "{method} {path} has no responses");
            let id = op["operationId"].as_str().unwrap_or_else(|| panic!("{method} {path} has no operationId"));
            assert!(
                id.chars().next().is_some_and(|c| c.is_ascii_lowercase())
                    && id.chars().all(|c| c.is_ascii_alphanumeric())
                    && id.chars().any(|c| c.is_ascii_uppercase()),
                "{method} {path}: operationId {id} is not a camel case verb and noun"
            );
            if let Some(other) = ids.insert(id.to_owned(), format!("{method} {path}")) {
                panic!("operationId {id} of {method} {path} is also {other}'s");
            }
        }
    }
    assert_eq!(ids.len(), 59, "{:?}", ids.keys().collect::<Vec<_>>());
    assert_eq!(ids.get("createCharge").map(String::as_str), Some("post /api/v1/partner/stk"));
    assert!(doc["components"]["securitySchemes"]["bearer"].is_object());
}

async fn operational_endpoints_need_no_token(db: Db) {
    let app = TestApp::shared(db);
    for path in ["/healthz", "/readyz", "/api/v1/openapi.json"] {
        let r = app.http.get(app.url(path)).send().await.unwrap();
        assert_eq!(r.status(), 200, "{path}");
    }
}

/// `/metrics` (per-route counts, the pool, the replica's lag) is the operator's: on the API's
/// port only with its bearer token, or on a listener of its own; never for anyone.
async fn metrics_answer_only_their_token_or_their_own_listener(db: Db) {
    let app = TestApp::shared(db);
    problem_strict(app.http.get(app.url("/metrics")).send().await.unwrap(), 401, "unauthorized").await;
    let wrong = app.http.get(app.url("/metrics")).bearer_auth("metrics-test-tokeN").send().await.unwrap();
    problem_strict(wrong, 401, "unauthorized").await;
    let (_, api_token) = app.merchant_token().await;
    problem_strict(app.http.get(app.url("/metrics")).bearer_auth(&api_token).send().await.unwrap(), 401, "unauthorized").await;
    assert!(metrics(app).await.contains("malipo_http_requests_total"));

    // No token configured: not served on the API's port at all; a listener of its own serves it.
    let database = match db {
        Db::Sqlite => malipo_store_diesel::testing::TestDatabase::sqlite(),
        Db::Postgres => malipo_store_diesel::testing::TestDatabase::postgres(),
    };
    let mut settings = crate::harness::settings(&database.url, &Options::default());
    settings.metrics_token = None;
    settings.metrics_bind = Some("127.0.0.1:0".into());
    let own = TestApp::on(database, settings).await;
    assert_eq!(own.http.get(own.url("/healthz")).send().await.unwrap().status(), 200);
    problem_strict(own.http.get(own.url("/metrics")).send().await.unwrap(), 404, "not_found").await;
    let at = own.running.metrics_addr.expect("a metrics listener");
    let r = own.http.get(format!("http://{at}/metrics")).send().await.unwrap();
    assert_eq!(r.status(), 200);
    assert!(r.headers()["content-type"].to_str().unwrap().starts_with("text/plain"));
    let text = r.text().await.unwrap();
    assert!(text.contains("malipo_http_requests_total") && text.contains("malipo_backlog_due_charges"), "{text}");
    assert_eq!(own.http.get(format!("http://{at}/api/v1/openapi.json")).send().await.unwrap().status(), 404, "nothing else there");
    own.stop().await;
}

/// Waits until the server's own monitor has measured the backlog as `refusing` new charges
/// (and, with them, new payouts).
async fn until_intake(app: &TestApp, refusing: bool) -> String {
    let flag = Some(if refusing { 1.0 } else { 0.0 });
    for _ in 0..100 {
        let text = metrics(app).await;
        if sample(&text, "malipo_intake_refused", &["work=\"charges\""]) == flag
            && sample(&text, "malipo_intake_refused", &["work=\"payouts\""]) == flag
        {
            return text;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the backlog monitor never measured refusing = {refusing}");
}

async fn a_backlog_over_its_bound_refuses_new_charges_with_503_until_the_workers_catch_up(db: Db) {
    // A manual clock and no workers running: time passes and nobody advances the due charges.
    let app = TestApp::with(db, Options { max_backlog_seconds: Some(5), ..Options::manual() }).await;
    let (_, token) = app.merchant_token().await;
    let first = app.charge(&token, "254712345678", "10").await;
    until_intake(&app, false).await;
    // The sandbox decision was due 100 ms after creation; 30 s pass.
    app.advance(Duration::from_secs(30));
    let text = until_intake(&app, true).await;
    let age = sample(&text, "malipo_backlog_age_seconds", &["work=\"charges\""]).unwrap();
    assert!((29.0..=30.0).contains(&age), "{age}");
    assert_eq!(sample(&text, "malipo_backlog_age_seconds", &["work=\"payouts\""]), Some(0.0));

    // New charges: 503 unavailable with Retry-After; nothing is created, so the same key works later.
    let body = stk("254712345678", json!("10"));
    let refused = problem_strict(app.post(&token, "/partner/stk", &body, None).await, 503, "unavailable").await;
    let retry: u64 = refused.header("retry-after").parse().unwrap();
    assert!((1..=30).contains(&retry), "{retry}");
    assert!(refused.json["detail"].as_str().unwrap().contains("catching up"), "{}", refused.text);
    let list = app.get_json(&token, "/partner/charges").await;
    assert_eq!(list["data"].as_array().unwrap().len(), 1, "the refused charge was not created: {list}");
    // Reads are not refused.
    assert_eq!(app.get(&token, "/partner/balance").await.status(), 200);
    // The gate judges new work of a known caller, after its key was looked up: an unknown
    // token is what it always is.
    assert_eq!(app.post("not-a-token", "/partner/stk", &body, None).await.status(), 401);
    assert_eq!(app.get("not-a-token", "/partner/balance").await.status(), 401);
    let text = metrics(&app).await;
    assert_eq!(sample(&text, "malipo_backlog_due_charges", &[]), Some(1.0), "the one charge left behind");

    // The workers catch up; intake opens again and the refused request goes through as sent.
    assert_eq!(app.run_workers().await, 1);
    let text = until_intake(&app, false).await;
    assert_eq!(sample(&text, "malipo_backlog_age_seconds", &["work=\"charges\""]), Some(0.0));
    let r = app.post(&token, "/partner/stk", &body, None).await;
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    let done = app.get_json(&token, &format!("/partner/status?charge_ref={}", first["charge_ref"].as_str().unwrap())).await;
    assert_eq!(done["state"], "completed", "{done}");
    app.stop().await;
}

async fn a_replay_is_answered_byte_for_byte_while_the_backlog_refuses_new_work(db: Db) {
    let app = TestApp::with(db, Options { max_backlog_seconds: Some(5), ..Options::manual() }).await;
    let (_, token) = app.merchant_token().await;
    let (_, payroll) = crate::payouts::payroll(&app, "1000").await;
    // Acknowledged before the backlog: three charges (keyed by their body) and a payout (by
    // its header), each answer kept as it was sent.
    let mut charges = Vec::new();
    for amount in ["10", "11.50", "12"] {
        let body = stk("254712345678", json!(amount));
        let a = Answer::of(app.post(&token, "/partner/stk", &body, None).await).await;
        assert_eq!(a.status, 200, "{}", a.text);
        charges.push((body, a.text));
    }
    let payout_key = crate::harness::key();
    let payout = json!({"payee_msisdn": "254712345678", "amount": "20", "reference": "SALARY-NOV"});
    let first = Answer::of(app.post(&payroll, "/payouts", &payout, Some(&payout_key)).await).await;
    assert_eq!(first.status, 200, "{}", first.text);
    until_intake(&app, false).await;
    app.advance(Duration::from_secs(30));
    until_intake(&app, true).await;

    // New work is refused ...
    problem_strict(app.post(&token, "/partner/stk", &stk("254712345678", json!("13")), None).await, 503, "unavailable").await;
    problem_strict(app.post(&payroll, "/payouts", &payout, Some(&crate::harness::key())).await, 503, "unavailable").await;
    // ... and every acknowledged request replays its answer exactly, however often.
    for _ in 0..3 {
        for (body, text) in &charges {
            let replay = Answer::of(app.post(&token, "/partner/stk", body, None).await).await;
            assert_eq!((replay.status, replay.header("idempotent-replayed").as_str()), (200, "true"), "{}", replay.text);
            assert_eq!(&replay.text, text, "byte for byte");
        }
        let replay = Answer::of(app.post(&payroll, "/payouts", &payout, Some(&payout_key)).await).await;
        assert_eq!((replay.status, replay.text.as_str()), (200, first.text.as_str()));
    }
    // A key reused with another body is refused as it always is, not with "not now".
    let mut other = charges[0].0.clone();
    other["amount"] = json!("99");
    problem_strict(app.post(&token, "/partner/stk", &other, None).await, 422, "idempotency_key_reused").await;
    app.stop().await;
}
