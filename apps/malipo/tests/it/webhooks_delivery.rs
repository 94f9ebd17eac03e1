//! Webhook delivery with real receivers: a small HTTP/1.1 server in the test records every request
//! (headers and raw body) and answers from a script (statuses, delays, `Retry-After`, or never).
//! Servers run with compressed retry schedules and short timeouts so each test takes seconds.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine;
use malipo_auth::Principal;
use malipo_idempotency::{Fingerprint, IdempotencyKey, KeyScope};
use malipo_service::{CreateEndpoint, EventDetail, Idem, NewEndpoint, Platform};
use malipo_store_diesel::testing::TestDatabase;
use malipo_webhooks::{body_signature, DeliveryState, Endpoint, RetrySchedule, Secret, Verifier};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::harness::{self, msisdn, raw_member, Db, Options, TestApp};

crate::on_both!(
    a_completed_charge_is_delivered_signed_with_the_charge,
    failures_are_retried_on_the_schedule_with_the_same_id,
    retry_after_is_honoured,
    a_hanging_receiver_delays_no_one_else,
    gone_disables_the_endpoint,
    deliveries_survive_a_restart_mid_delivery,
    an_instance_without_webhook_sends_leaves_them_to_another,
    the_standardwebhooks_python_library_verifies_deliveries,
    money_out_events_are_delivered_and_verified_by_standardwebhooks,
    payment_request_events_are_delivered_and_verified_by_standardwebhooks,
);

// ----- the receiver -----

/// One request as the receiver got it.
#[derive(Clone, Debug)]
pub(crate) struct Hit {
    at: Instant,
    unix: i64,
    pub(crate) method: String,
    pub(crate) path: String,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Vec<u8>,
}

impl Hit {
    pub(crate) fn header(&self, name: &str) -> &str {
        self.headers.iter().find(|(n, _)| n == name).map_or("", |(_, v)| v.as_str())
    }
    pub(crate) fn id(&self) -> &str {
        self.header("webhook-id")
    }
    fn text(&self) -> &str {
        std::str::from_utf8(&self.body).unwrap()
    }
    pub(crate) fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap()
    }
    pub(crate) fn kind(&self) -> String {
        self.json()["event"].as_str().unwrap_or_default().to_owned()
    }
}

/// How the receiver answers one request.
#[derive(Clone, Debug)]
pub(crate) enum Reply {
    /// At once, with these extra headers.
    Status(u16, Vec<(String, String)>),
    /// After a pause.
    After(Duration, u16),
    /// Never (the connection stays open, silent).
    Hang,
}

pub(crate) fn status(code: u16) -> Reply {
    Reply::Status(code, Vec::new())
}

type Script = Arc<dyn Fn(usize, &Hit) -> Reply + Send + Sync>;

/// A local HTTP/1.1 receiver. The script gets the request's index (0 for the first request this
/// receiver got) and the request.
pub(crate) struct Receiver {
    addr: SocketAddr,
    hits: Arc<Mutex<Vec<Hit>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Receiver {
    pub(crate) async fn start(script: impl Fn(usize, &Hit) -> Reply + Send + Sync + 'static) -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let hits = Arc::new(Mutex::new(Vec::new()));
        let script: Script = Arc::new(script);
        let h = Arc::clone(&hits);
        let task = tokio::spawn(async move {
            // Connections live in this set, so that aborting the receiver ends them all.
            let mut connections = tokio::task::JoinSet::new();
            loop {
                tokio::select! {
                    accepted = listener.accept() => {
                        let Ok((stream, _)) = accepted else { continue };
                        connections.spawn(serve(stream, Arc::clone(&h), Arc::clone(&script)));
                    }
                    Some(_) = connections.join_next(), if !connections.is_empty() => {}
                }
            }
        });
        Receiver { addr, hits, task }
    }

    pub(crate) async fn answering(code: u16) -> Receiver {
        Self::start(move |_, _| status(code)).await
    }

    pub(crate) fn url(&self) -> String {
        format!("http://{}/hook", self.addr)
    }

    pub(crate) fn hits(&self) -> Vec<Hit> {
        self.hits.lock().unwrap().clone()
    }

    /// Waits until `done` holds for the requests so far, failing after `timeout`.
    pub(crate) async fn wait(&self, what: &str, timeout: Duration, done: impl Fn(&[Hit]) -> bool) -> Vec<Hit> {
        let started = Instant::now();
        loop {
            let hits = self.hits();
            if done(&hits) {
                return hits;
            }
            assert!(
                started.elapsed() < timeout,
                "{what}: not within {timeout:?}; the receiver got {} requests: {:?}",
                hits.len(),
                summary(&hits)
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Waits for requests carrying `id` until there are `n`.
    async fn wait_for_id(&self, id: &str, n: usize, timeout: Duration) -> Vec<Hit> {
        let hits = self.wait(&format!("{n} requests for {id}"), timeout, |h| h.iter().filter(|x| x.id() == id).count() >= n).await;
        hits.into_iter().filter(|x| x.id() == id).collect()
    }
}

fn summary(hits: &[Hit]) -> Vec<String> {
    hits.iter().map(|h| format!("{} {} {}", h.id(), h.header("webhook-timestamp"), h.kind())).collect()
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// Serves one connection: requests one after the other (keep-alive).
async fn serve(mut stream: TcpStream, hits: Arc<Mutex<Vec<Hit>>>, script: Script) {
    let mut buf = Vec::new();
    let mut chunk = [0_u8; 8192];
    loop {
        let head_end = loop {
            if let Some(i) = find(&buf, b"\r\n\r\n") {
                break i;
            }
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        };
        let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
        buf.drain(..head_end + 4);
        let mut lines = head.split("\r\n");
        let mut request_line = lines.next().unwrap_or("").split(' ');
        let method = request_line.next().unwrap_or("").to_owned();
        let path = request_line.next().unwrap_or("").to_owned();
        let headers: Vec<(String, String)> =
            lines.filter_map(|l| l.split_once(':')).map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned())).collect();
        let length: usize = headers.iter().find(|(n, _)| n == "content-length").and_then(|(_, v)| v.parse().ok()).unwrap_or(0);
        while buf.len() < length {
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
        let body: Vec<u8> = buf.drain(..length).collect();
        let hit = Hit { at: Instant::now(), unix: now_unix(), method, path, headers, body };
        let reply = {
            let mut hits = hits.lock().unwrap();
            let reply = script(hits.len(), &hit);
            hits.push(hit);
            reply
        };
        let (code, extra) = match reply {
            Reply::Hang => std::future::pending().await,
            Reply::After(pause, code) => {
                tokio::time::sleep(pause).await;
                (code, Vec::new())
            }
            Reply::Status(code, extra) => (code, extra),
        };
        let mut answer = format!("HTTP/1.1 {code} Scripted\r\ncontent-length: 2\r\ncontent-type: text/plain\r\n");
        for (n, v) in extra {
            answer.push_str(&format!("{n}: {v}\r\n"));
        }
        answer.push_str("\r\nok");
        if stream.write_all(answer.as_bytes()).await.is_err() {
            return;
        }
    }
}

fn now_unix() -> i64 {
    i64::try_from(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs()).unwrap()
}

// ----- the app side -----

/// A server on a fresh database with this retry schedule and send timeout.
pub(crate) async fn app_with(db: Db, schedule: &str, timeout_ms: u64) -> TestApp {
    let database = match db {
        Db::Sqlite => TestDatabase::sqlite(),
        Db::Postgres => TestDatabase::postgres(),
    };
    let settings = webhook_settings(&database.url, schedule, timeout_ms);
    TestApp::on(database, settings).await
}

fn webhook_settings(url: &str, schedule: &str, timeout_ms: u64) -> malipo::Settings {
    let mut settings = harness::settings(url, &Options::default());
    settings.webhook_retry_schedule = RetrySchedule::parse(schedule).unwrap();
    settings.webhook_timeout_ms = timeout_ms;
    settings
}

/// A registered endpoint and its secret.
#[derive(Clone, Debug)]
struct Registered {
    id: String,
    secret: String,
}

pub(crate) async fn principal(app: &TestApp, token: &str) -> Principal {
    let (p, t) = (app.platform.clone(), token.to_owned());
    tokio::task::spawn_blocking(move || p.access().authenticate(&t)).await.unwrap().unwrap()
}

/// Registers an endpoint: `POST /webhooks/endpoints` with an `Idempotency-Key`; while that
/// route is not served (404), through the platform's use case with the same idempotency.
async fn register(app: &TestApp, token: &str, url: &str, events: &[&str]) -> Registered {
    let body = json!({"url": url, "events": events});
    let key = uuid::Uuid::new_v4().to_string();
    let r = app.post(token, "/webhooks/endpoints", &body, Some(&key)).await;
    let status = r.status().as_u16();
    let text = r.text().await.unwrap();
    let v: Value = if status == 404 {
        let principal = principal(app, token).await;
        let (p, url) = (app.platform.clone(), url.to_owned());
        let events: Vec<String> = events.iter().map(|e| (*e).to_owned()).collect();
        let out = tokio::task::spawn_blocking(move || {
            let idem = Idem {
                scope: KeyScope { org_id: principal.org_id.clone(), mode: principal.mode, operation: "POST /webhooks/endpoints".into() },
                key: IdempotencyKey::parse(&key).unwrap(),
                fingerprint: Fingerprint::of("POST", "/webhooks/endpoints", body.to_string().as_bytes()),
                actor: None,
                callback: None,
            };
            let endpoint: CreateEndpoint = p.parse(&principal, &NewEndpoint { url, events, description: None })?;
            p.webhooks().create_endpoint(&principal, &endpoint, &idem)
        })
        .await
        .unwrap()
        .unwrap();
        json!({"endpoint_id": out.value.endpoint.id.to_string(), "secret": out.value.secret})
    } else {
        assert_eq!(status, 200, "POST /webhooks/endpoints: {text}");
        serde_json::from_str(&text).unwrap()
    };
    let id = v["endpoint_id"].as_str().unwrap().to_owned();
    let secret = v["secret"].as_str().unwrap().to_owned();
    assert!(secret.starts_with("whsec_"), "{v}");
    Registered { id, secret }
}

async fn endpoint(app: &TestApp, token: &str, id: &str) -> Endpoint {
    let principal = principal(app, token).await;
    let (p, id) = (app.platform.clone(), id.to_owned());
    tokio::task::spawn_blocking(move || p.webhooks().endpoint(&principal, &id)).await.unwrap().unwrap()
}

async fn event(platform: &Platform, principal: &Principal, id: &str) -> EventDetail {
    let (p, pr, id) = (platform.clone(), principal.clone(), id.to_owned());
    tokio::task::spawn_blocking(move || p.webhooks().event(&pr, &id)).await.unwrap().unwrap()
}

/// Polls an event until `done` holds for its detail.
async fn wait_event(app: &TestApp, token: &str, id: &str, what: &str, done: impl Fn(&EventDetail) -> bool) -> EventDetail {
    let principal = principal(app, token).await;
    let started = Instant::now();
    loop {
        let detail = event(&app.platform, &principal, id).await;
        if done(&detail) {
            return detail;
        }
        assert!(started.elapsed() < Duration::from_secs(10), "{what}: not within 10 s: {:?} {:?}", detail.deliveries, detail.attempts);
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// Every event of the principal's organisation (oldest first).
async fn events(platform: &Platform, principal: &Principal, kind: Option<&str>) -> Vec<malipo_webhooks::Event> {
    let (p, pr, kind) = (platform.clone(), principal.clone(), kind.map(str::to_owned));
    tokio::task::spawn_blocking(move || p.webhooks().events(&pr, kind.as_deref(), None, 1000)).await.unwrap().unwrap().data
}

pub(crate) fn verify(secret: &str, hit: &Hit) {
    let verifier = Verifier::new(Secret::parse(secret).unwrap());
    let checked = verifier.verify(hit.id(), hit.header("webhook-timestamp"), hit.header("webhook-signature"), &hit.body, now_unix());
    assert_eq!(checked, Ok(()), "delivery does not verify: {:?} {}", hit.headers, hit.text());
}

// ----- (a) payloads and signatures -----

async fn a_completed_charge_is_delivered_signed_with_the_charge(db: Db) {
    let app = app_with(db, "0,1,1,1", 2000).await;
    let rx = Receiver::answering(200).await;
    let (_, token) = app.merchant_token().await;
    let ep = register(&app, &token, &rx.url(), &["charge.authorised", "charge.completed"]).await;
    let created = app.charge(&token, &msisdn("0000"), "250").await;
    let charge_ref = created["charge_ref"].as_str().unwrap().to_owned();
    let charge = app.wait_for(&token, &charge_ref, "completed", Duration::from_secs(10)).await;
    let hits = rx
        .wait("charge.authorised and charge.completed", Duration::from_secs(10), |h| {
            h.iter().any(|x| x.kind() == "charge.completed") && h.iter().any(|x| x.kind() == "charge.authorised")
        })
        .await;
    assert_eq!(hits.len(), 2, "one delivery per event: {:?}", summary(&hits));
    let secret = Secret::parse(&ep.secret).unwrap();
    for hit in &hits {
        verify(&ep.secret, hit);
        assert_eq!(hit.path, "/hook");
        assert!(hit.header("content-type").starts_with("application/json"), "{:?}", hit.headers);
        let v = hit.json();
        let kind = hit.kind();
        let state = kind.trim_start_matches("charge.");
        // The envelope: the same id and timestamp as the headers.
        assert_eq!(v["id"], hit.id(), "{v}");
        assert!(hit.id().starts_with("evt_"), "{}", hit.id());
        let ts: i64 = hit.header("webhook-timestamp").parse().unwrap();
        assert_eq!(v["timestamp"], ts, "{v}");
        assert!((hit.unix - ts).abs() <= 5, "the timestamp is the attempt's time");
        assert_eq!(v["mode"], "test");
        assert!(harness::is_utc_timestamp(v["created_at"].as_str().unwrap()), "{v}");
        // The seed's fields at the top level; the amount written with two decimals.
        assert_eq!(v["charge_ref"], charge_ref.as_str());
        assert_eq!(raw_member(hit.text(), "amount"), "250.00", "{}", hit.text());
        assert_eq!(v["currency"], "KES");
        assert_eq!(v["state"], state);
        assert_eq!(v["reference"], charge["reference"]);
        // The body signature, recomputed.
        let expected = body_signature(&secret, hit.id(), ts, &kind, &charge_ref, Some("250.00"), Some("KES"), Some(state));
        assert_eq!(v["signature"], expected.as_str(), "{v}");
        assert_eq!(v["data"]["charge_ref"], charge_ref.as_str());
        assert_eq!(v["data"]["state"], state);
    }
    let completed = hits.iter().find(|h| h.kind() == "charge.completed").unwrap();
    assert_eq!(completed.json()["data"], charge, "data is the charge as the API shows it");
    app.stop().await;
}

// ----- (b) retries -----

async fn failures_are_retried_on_the_schedule_with_the_same_id(db: Db) {
    let app = app_with(db, "0,1,1,1", 2000).await;
    let rx = Receiver::start(|n, _| status(if n < 3 { 503 } else { 200 })).await;
    let (_, token) = app.merchant_token().await;
    let ep = register(&app, &token, &rx.url(), &["charge.completed"]).await;
    app.charge(&token, &msisdn("0000"), "100").await;
    let hits = rx.wait("four attempts", Duration::from_secs(15), |h| h.len() >= 4).await;
    let id = hits[0].id().to_owned();
    assert!(hits.iter().all(|h| h.id() == id), "the same webhook-id on every attempt: {:?}", summary(&hits));
    for pair in hits.windows(2) {
        let gap = pair[1].at - pair[0].at;
        assert!(gap >= Duration::from_millis(850), "the schedule waits about 1 s (±10%) between attempts: {gap:?}");
    }
    for (i, a) in hits.iter().enumerate() {
        verify(&ep.secret, a);
        for b in &hits[i + 1..] {
            let same_time = a.header("webhook-timestamp") == b.header("webhook-timestamp");
            let same_sig = a.header("webhook-signature") == b.header("webhook-signature");
            assert_eq!(same_time, same_sig, "signatures differ exactly when timestamps do: {:?}", summary(&hits));
        }
    }
    let detail = wait_event(&app, &token, &id, "the fourth attempt recorded", |d| {
        d.deliveries.first().is_some_and(|x| x.state == DeliveryState::Succeeded)
    })
    .await;
    let statuses: Vec<Option<u16>> = detail.attempts.iter().map(|a| a.status).collect();
    assert_eq!(statuses, [Some(503), Some(503), Some(503), Some(200)]);
    assert_eq!(detail.attempts[0].error.as_deref(), Some("HTTP 503"));
    assert_eq!(detail.attempts[3].error, None);
    assert_eq!(detail.deliveries.len(), 1);
    assert_eq!(detail.deliveries[0].attempts, 4);
    // Settled: nothing more arrives.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(rx.hits().len(), 4, "{:?}", summary(&rx.hits()));
    app.stop().await;
}

fn http_date(at: time::OffsetDateTime) -> String {
    at.format(time::macros::format_description!("[weekday repr:short], [day] [month repr:short] [year] [hour]:[minute]:[second] GMT"))
        .unwrap()
}

async fn retry_after_is_honoured(db: Db) {
    // The schedule says "at once" every time: only Retry-After spaces the attempts.
    let app = app_with(db, "0,0,0,0", 2000).await;
    let rx = Receiver::start(|n, _| match n {
        0 => Reply::Status(429, vec![("Retry-After".into(), "1".into())]),
        1 => {
            let at = time::OffsetDateTime::now_utc() + time::Duration::seconds(3);
            Reply::Status(503, vec![("Retry-After".into(), http_date(at))])
        }
        _ => status(200),
    })
    .await;
    let (_, token) = app.merchant_token().await;
    register(&app, &token, &rx.url(), &["charge.completed"]).await;
    app.charge(&token, &msisdn("0000"), "100").await;
    let hits = rx.wait("three attempts", Duration::from_secs(15), |h| h.len() >= 3).await;
    let (first, second) = (hits[1].at - hits[0].at, hits[2].at - hits[1].at);
    assert!(first >= Duration::from_millis(950), "Retry-After: 1 (seconds) was not honoured: {first:?}");
    assert!(second >= Duration::from_millis(1500), "Retry-After as an HTTP date (3 s ahead) was not honoured: {second:?}");
    assert!(hits.iter().all(|h| h.id() == hits[0].id()));
    app.stop().await;
}

// ----- (c) isolation of slow receivers -----

async fn a_hanging_receiver_delays_no_one_else(db: Db) {
    let app = app_with(db, "0,1,1,1", 3000).await;
    let hang = Receiver::start(|_, _| Reply::Hang).await;
    let fast = Receiver::answering(200).await;
    let (_, token) = app.merchant_token().await;
    register(&app, &token, &hang.url(), &["charge.completed"]).await;
    register(&app, &token, &fast.url(), &["charge.completed"]).await;
    app.charge(&token, &msisdn("0000"), "100").await;
    let first = hang.wait("the hanging receiver's first request", Duration::from_secs(10), |h| !h.is_empty()).await;
    let hung_at = first[0].at;
    let id = first[0].id().to_owned();
    fast.wait_for_id(&id, 1, Duration::from_secs(5)).await;
    // While that send hangs, another event reaches the other receiver on time.
    let created_at = Instant::now();
    let c2 = app.charge(&token, &msisdn("0000"), "100").await;
    app.wait_for(&token, c2["charge_ref"].as_str().unwrap(), "completed", Duration::from_secs(10)).await;
    let got = fast.wait("the second event at the fast receiver", Duration::from_secs(5), |h| h.len() >= 2).await;
    let second = got.iter().find(|h| h.id() != id).unwrap();
    let lag = second.at - created_at;
    assert!(lag < Duration::from_millis(1500), "the fast receiver waited {lag:?} for its delivery");
    assert!(second.at < hung_at + Duration::from_secs(3), "delivered while the other send was still hanging");
    // The hung send is timed out (3 s) and retried (1 s later).
    let retried = hang.wait_for_id(&id, 2, Duration::from_secs(10)).await;
    let gap = retried[1].at - retried[0].at;
    assert!(gap >= Duration::from_millis(3500), "timed out after 3 s, then retried after about 1 s: {gap:?}");
    let detail =
        wait_event(&app, &token, &id, "the timeout recorded", |d| d.attempts.iter().any(|a| a.error.as_deref() == Some("timeout"))).await;
    let timed_out = detail.attempts.iter().find(|a| a.error.as_deref() == Some("timeout")).unwrap();
    assert_eq!(timed_out.status, None);
    assert!((2900..5000).contains(&timed_out.latency_ms), "latency {} ms", timed_out.latency_ms);
    app.stop().await;
}

// ----- (d) 410 Gone -----

async fn gone_disables_the_endpoint(db: Db) {
    let app = app_with(db, "0,1,1,1", 2000).await;
    let rx = Receiver::answering(410).await;
    let (_, token) = app.merchant_token().await;
    let ep = register(&app, &token, &rx.url(), &["charge.completed"]).await;
    app.charge(&token, &msisdn("0000"), "100").await;
    rx.wait("the first delivery", Duration::from_secs(10), |h| !h.is_empty()).await;
    let started = Instant::now();
    let disabled = loop {
        let e = endpoint(&app, &token, &ep.id).await;
        if !e.enabled {
            break e;
        }
        assert!(started.elapsed() < Duration::from_secs(5), "the endpoint is still enabled after a 410");
        tokio::time::sleep(Duration::from_millis(25)).await;
    };
    assert_eq!(disabled.disabled_reason.as_deref(), Some("gone"));
    // Later events are not delivered to it.
    let c2 = app.charge(&token, &msisdn("0000"), "100").await;
    let c2 = c2["charge_ref"].as_str().unwrap().to_owned();
    app.wait_for(&token, &c2, "completed", Duration::from_secs(10)).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(rx.hits().len(), 1, "no deliveries after the 410: {:?}", summary(&rx.hits()));
    let principal = principal(&app, &token).await;
    let later = events(&app.platform, &principal, Some("charge.completed")).await;
    let later = later.iter().find(|e| e.object_id == c2).expect("the second charge's event is still recorded");
    let detail = event(&app.platform, &principal, later.id.as_str()).await;
    assert!(detail.deliveries.iter().all(|d| d.state != DeliveryState::Pending), "{:?}", detail.deliveries);
    assert!(detail.attempts.is_empty(), "{:?}", detail.attempts);
    app.stop().await;
}

// ----- (e) restart -----

/// Stops a server gracefully and hands back its database.
async fn stop_keeping_db(app: TestApp) -> (TestDatabase, malipo::Settings) {
    let TestApp { running, db, settings, .. } = app;
    running.server.stop(true).await;
    running.done.await.unwrap().unwrap();
    (db, settings)
}

async fn deliveries_survive_a_restart_mid_delivery(db: Db) {
    let app = app_with(db, "0,1,1,1", 5000).await;
    // Every answer takes a while, so the server is stopped with sends in flight.
    let rx = Receiver::start(|_, _| Reply::After(Duration::from_millis(400), 200)).await;
    let (_, token) = app.merchant_token().await;
    register(&app, &token, &rx.url(), &["charge.completed"]).await;
    let mut refs = Vec::new();
    for _ in 0..6 {
        refs.push(app.charge(&token, &msisdn("0000"), "100").await["charge_ref"].as_str().unwrap().to_owned());
    }
    rx.wait("a delivery in flight", Duration::from_secs(10), |h| !h.is_empty()).await;
    let (database, settings) = stop_keeping_db(app).await;
    let app = TestApp::on(database, settings).await;
    for r in &refs {
        app.wait_for(&token, r, "completed", Duration::from_secs(10)).await;
    }
    let principal = principal(&app, &token).await;
    let committed = events(&app.platform, &principal, Some("charge.completed")).await;
    assert_eq!(committed.len(), refs.len(), "one charge.completed per charge");
    let ids: Vec<String> = committed.iter().map(|e| e.id.to_string()).collect();
    rx.wait("every committed event delivered", Duration::from_secs(15), |h| ids.iter().all(|id| h.iter().any(|x| x.id() == id))).await;
    app.stop().await;
}

// ----- (f) several instances -----

#[actix_web::test]
async fn two_instances_on_postgres_deliver_each_event_once() {
    let app = app_with(Db::Postgres, "0,1,1,1", 5000).await;
    let s = app.settings.clone();
    let (platform, _store) = tokio::task::spawn_blocking(move || malipo::platform(&s)).await.unwrap().unwrap();
    let other = malipo::start(&app.settings, platform, std::net::TcpListener::bind("127.0.0.1:0").unwrap()).unwrap();
    let rx = Receiver::answering(200).await;
    let (_, token) = app.merchant_token().await;
    register(&app, &token, &rx.url(), &["charge.completed"]).await;
    let payers: Vec<String> = (0..50).map(|_| msisdn("0000")).collect();
    let pushes = payers.iter().map(|payer| app.charge(&token, payer, "100"));
    let refs: Vec<String> =
        futures_util::future::join_all(pushes).await.iter().map(|c| c["charge_ref"].as_str().unwrap().to_owned()).collect();
    for r in &refs {
        app.wait_for(&token, r, "completed", Duration::from_secs(20)).await;
    }
    let distinct = |h: &[Hit]| h.iter().map(Hit::id).collect::<std::collections::BTreeSet<_>>().len();
    rx.wait("50 events", Duration::from_secs(20), |h| distinct(h) >= 50).await;
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let hits = rx.hits();
    assert_eq!(distinct(&hits), 50);
    assert_eq!(hits.len(), 50, "each event delivered exactly once by the two instances");
    other.server.stop(true).await;
    other.done.await.unwrap().unwrap();
    app.stop().await;
}

/// An instance started with `MALIPO_WEBHOOK_CONCURRENCY=0` sends nothing: what it queues waits
/// until an instance that sends starts on the same database.
async fn an_instance_without_webhook_sends_leaves_them_to_another(db: Db) {
    let database = match db {
        Db::Sqlite => TestDatabase::sqlite(),
        Db::Postgres => TestDatabase::postgres(),
    };
    let mut quiet = webhook_settings(&database.url, "0,1,1,1", 5000);
    quiet.webhook_concurrency = 0;
    let app = TestApp::on(database, quiet).await;
    let rx = Receiver::answering(200).await;
    let (_, token) = app.merchant_token().await;
    register(&app, &token, &rx.url(), &["charge.completed"]).await;
    let charge = app.charge(&token, &msisdn("0000"), "100").await["charge_ref"].as_str().unwrap().to_owned();
    app.wait_for(&token, &charge, "completed", Duration::from_secs(10)).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(rx.hits().len(), 0, "an instance without webhook sends sent one");
    let (database, mut settings) = stop_keeping_db(app).await;
    settings.webhook_concurrency = 64;
    let app = TestApp::on(database, settings).await;
    rx.wait("the queued delivery sent by the other instance", Duration::from_secs(10), |h| h.len() == 1).await;
    app.stop().await;
}

// ----- (g) a third-party verifier -----

fn verify_script() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/verify_standardwebhooks.py")
}

/// The Python that runs the verifier: `MALIPO_TEST_PYTHON` (set by `scripts/test.sh`, a
/// virtualenv with `scripts/requirements-test.txt`), else `python3`.
fn python() -> String {
    std::env::var("MALIPO_TEST_PYTHON").unwrap_or_else(|_| "python3".to_owned())
}

/// Panics, never skips, when the Python package is missing: the tests install nothing.
fn require_standardwebhooks() {
    let out = std::process::Command::new(python())
        .args(["-c", "import standardwebhooks"])
        .output()
        .unwrap_or_else(|e| panic!("{} is required for this test: {e}", python()));
    assert!(
        out.status.success(),
        "the standardwebhooks Python package is missing for {}: run the tests with `bash scripts/test.sh`, which installs \
         scripts/requirements-test.txt (or install it yourself and set MALIPO_TEST_PYTHON)",
        python()
    );
}

/// A delivery as recorded: its headers and raw body.
type Recorded = (Vec<(String, String)>, Vec<u8>);

/// Runs `scripts/verify_standardwebhooks.py FILE SECRET` with [`python`]: its exit code and output.
async fn python_verify(deliveries: &[Recorded], secret: &str) -> (i32, String) {
    let file = tempfile::NamedTempFile::new().unwrap();
    let list: Vec<Value> = deliveries
        .iter()
        .map(|(headers, body)| {
            let headers: serde_json::Map<String, Value> =
                headers.iter().filter(|(n, _)| n.starts_with("webhook-")).map(|(n, v)| (n.clone(), Value::String(v.clone()))).collect();
            json!({"headers": headers, "body": base64::engine::general_purpose::STANDARD.encode(body)})
        })
        .collect();
    std::fs::write(file.path(), serde_json::to_vec(&list).unwrap()).unwrap();
    tokio::task::spawn_blocking(require_standardwebhooks).await.unwrap();
    let (path, secret) = (file.path().to_owned(), secret.to_owned());
    let out =
        tokio::task::spawn_blocking(move || std::process::Command::new(python()).arg(verify_script()).arg(&path).arg(&secret).output())
            .await
            .unwrap()
            .unwrap_or_else(|e| panic!("{} is required for this test: {e}", python()));
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.code().unwrap_or(-1), text)
}

async fn the_standardwebhooks_python_library_verifies_deliveries(db: Db) {
    let app = app_with(db, "0,1,1,1", 2000).await;
    let rx = Receiver::answering(200).await;
    let (_, token) = app.merchant_token().await;
    let ep = register(&app, &token, &rx.url(), &["*"]).await;
    app.charge(&token, &msisdn("0000"), "250").await;
    app.charge(&token, &msisdn("0000"), "75.5").await;
    let hits = rx.wait("three deliveries", Duration::from_secs(10), |h| h.len() >= 3).await;
    let recorded: Vec<Recorded> = hits.iter().take(3).map(|h| (h.headers.clone(), h.body.clone())).collect();
    let (code, out) = python_verify(&recorded, &ep.secret).await;
    assert_eq!(code, 0, "standardwebhooks refused our deliveries:\n{out}");
    assert!(out.contains("3 of 3 deliveries verified"), "{out}");
    // One changed byte in one body: refused.
    let mut tampered = recorded.clone();
    let body = String::from_utf8(tampered[1].1.clone()).unwrap();
    let changed = body.replacen("\"mode\":\"test\"", "\"mode\":\"live\"", 1);
    assert_ne!(body, changed);
    tampered[1].1 = changed.into_bytes();
    let (code, out) = python_verify(&tampered, &ep.secret).await;
    assert_eq!(code, 1, "a tampered body must fail verification:\n{out}");
    assert!(out.contains("2 of 3 deliveries verified"), "{out}");
    // Another endpoint's secret: refused.
    let (code, out) = python_verify(&recorded, &Secret::generate().to_whsec()).await;
    assert_eq!(code, 1, "{out}");
    app.stop().await;
}

async fn money_out_events_are_delivered_and_verified_by_standardwebhooks(db: Db) {
    let app = app_with(db, "0,1,1,1", 2000).await;
    let rx = Receiver::answering(200).await;
    let c = app.org("corporate", "KE").await;
    app.fund(&c.org_id, malipo_core::Mode::Test, "10000").await;
    let maker = app.token(&c).await;
    let ep = register(&app, &maker, &rx.url(), &["*"]).await;
    let p = app.platform.clone();
    let org = malipo_core::OrgId::parse(&c.org_id).unwrap();
    let checker = tokio::task::spawn_blocking(move || {
        p.access().issue_credential(&org, malipo_core::Mode::Test, Some(malipo_auth::Scopes::parse("bulk:approve").unwrap()))
    })
    .await
    .unwrap()
    .unwrap();
    let checker =
        app.token(&harness::Creds { org_id: c.org_id.clone(), client_id: checker.client_id, client_secret: checker.client_secret }).await;
    let post = |token: String, path: String, body: Value| {
        let app = &app;
        async move {
            let r = app.post(&token, &path, &body, Some(&harness::key())).await;
            assert_eq!(r.status(), 200, "{path}");
            r.json::<Value>().await.unwrap()
        }
    };
    let paid = post(maker.clone(), "/payouts".into(), json!({"payee_msisdn": msisdn("0000"), "amount": "100", "reference": "P1"})).await;
    // P1 settles alone, so its running balance is exact.
    let done =
        app.wait_state(&maker, &format!("/payouts/{}", paid["payout_ref"].as_str().unwrap()), "completed", Duration::from_secs(10)).await;
    post(maker.clone(), "/payouts".into(), json!({"payee_msisdn": msisdn("1007"), "amount": "100", "reference": "P2"})).await;
    let items = json!({"reference": "B", "items": [{"payee_msisdn": msisdn("0000"), "amount": "10", "reference": "I1"}]});
    let approved = post(maker.clone(), "/bulk-payouts".into(), items.clone()).await;
    post(checker.clone(), format!("/bulk-payouts/{}/approve", approved["batch_id"].as_str().unwrap()), json!({})).await;
    let rejected = post(maker.clone(), "/bulk-payouts".into(), items).await;
    post(checker.clone(), format!("/bulk-payouts/{}/reject", rejected["batch_id"].as_str().unwrap()), json!({"reason": "duplicate"})).await;
    post(maker.clone(), "/reversals".into(), json!({"payout_ref": done["payout_ref"], "amount": "40", "reason": "overpaid"})).await;
    let kinds = [
        "payout.completed",
        "payout.failed",
        "bulk_payout.approved",
        "bulk_payout.completed",
        "bulk_payout.rejected",
        "reversal.completed",
    ];
    let hits = rx.wait("every money-out event", Duration::from_secs(15), |h| kinds.iter().all(|k| h.iter().any(|x| x.kind() == *k))).await;
    let of = |kind: &str| {
        hits.iter().find(|h| h.kind() == kind && (kind != "payout.completed" || h.json()["data"]["reference"] == "P1")).unwrap()
    };
    let completed = of("payout.completed");
    let data = raw_member(completed.text(), "data");
    assert_eq!(raw_member(&data, "payout_ref"), format!("\"{}\"", done["payout_ref"].as_str().unwrap()));
    // 10,000.00 funded; P1 took 100.00 and its 5.00 fee.
    assert_eq!(raw_member(&data, "payout_account_available"), "9895.00", "{data}");
    assert_eq!(of("payout.failed").json()["data"]["failure_reason"], "payee_not_found");
    assert_eq!(of("bulk_payout.completed").json()["data"]["counts"], json!({"pending": 0, "completed": 1, "failed": 0}));
    assert_eq!(of("bulk_payout.rejected").json()["data"]["rejection_reason"], "duplicate");
    assert_eq!(raw_member(&raw_member(of("reversal.completed").text(), "data"), "amount"), "40.00");
    let recorded: Vec<Recorded> = kinds.iter().map(|k| of(k)).map(|h| (h.headers.clone(), h.body.clone())).collect();
    let (code, out) = python_verify(&recorded, &ep.secret).await;
    assert_eq!(code, 0, "standardwebhooks refused our deliveries:\n{out}");
    assert!(out.contains("6 of 6 deliveries verified"), "{out}");
    app.stop().await;
}

/// A payment request paid over USSD and another left to expire: `payment_request.paid` and
/// `payment_request.expired` delivered with the request as `data`, verified by the library.
async fn payment_request_events_are_delivered_and_verified_by_standardwebhooks(db: Db) {
    let app = TestApp::with(db, Options::manual()).await;
    let rx = Receiver::answering(200).await;
    let cast = harness::Cast::new(&app, malipo_core::Mode::Test, "100000").await;
    let ep = register(&app, &cast.merchant_token, &rx.url(), &["payment_request.paid", "payment_request.expired"]).await;
    let n = cast.customer(&app, "6300", "4826", "1000").await;
    let ask = |expires_in: i64| {
        let app = &app;
        let token = cast.merchant_token.clone();
        async move {
            let body = json!({"amount": "500", "reference": format!("INV-{expires_in}"), "expires_in": expires_in});
            let r = app.post(&token, "/biz/request", &body, Some(&harness::key())).await;
            assert_eq!(r.status(), 200);
            r.json::<Value>().await.unwrap()
        }
    };
    let paid = ask(3600).await;
    let expiring = ask(60).await;
    let s = cast.dial(&app, &n, &["2", paid["pay_code"].as_str().unwrap(), "4826"]).await;
    assert!(s[3].starts_with("END Paid KES 500.00"), "{s:?}");
    // The paid event's delivery is answered and recorded before the clock moves on: a minute
    // later its lease would have lapsed, and an attempt not yet recorded would be sent again.
    let first = rx.wait("the paid event", Duration::from_secs(15), |h| h.iter().any(|x| x.kind() == "payment_request.paid")).await;
    let paid_event = first.iter().find(|x| x.kind() == "payment_request.paid").unwrap().id().to_owned();
    wait_event(&app, &cast.merchant_token, &paid_event, "the paid delivery recorded", |d| !d.attempts.is_empty()).await;
    app.advance(Duration::from_secs(60));
    assert_eq!(app.run_workers().await, 1, "the second request expires");
    let kinds = ["payment_request.paid", "payment_request.expired"];
    let hits =
        rx.wait("both payment request events", Duration::from_secs(15), |h| kinds.iter().all(|k| h.iter().any(|x| x.kind() == *k))).await;
    assert_eq!(hits.len(), 2, "{:?}", summary(&hits));
    for (kind, request, state) in [(kinds[0], &paid, "paid"), (kinds[1], &expiring, "expired")] {
        let hit = hits.iter().find(|h| h.kind() == kind).unwrap();
        verify(&ep.secret, hit);
        let body = hit.json();
        assert_eq!((body["mode"].as_str(), body["data"]["request_id"].as_str()), (Some("test"), request["request_id"].as_str()), "{kind}");
        assert_eq!(body["data"]["state"], state, "{kind}");
        let data = raw_member(hit.text(), "data");
        assert_eq!((raw_member(&data, "amount"), raw_member(&data, "fee")), ("500.00".to_owned(), "2.00".to_owned()), "{kind}");
    }
    let paid_data = hits.iter().find(|h| h.kind() == kinds[0]).unwrap().json()["data"].clone();
    assert_eq!(paid_data["paid_by_msisdn"], n.as_str());
    assert!(paid_data["transaction_id"].as_str().unwrap().starts_with("tx_"));
    let recorded: Vec<Recorded> = hits.iter().map(|h| (h.headers.clone(), h.body.clone())).collect();
    let (code, out) = python_verify(&recorded, &ep.secret).await;
    assert_eq!(code, 0, "standardwebhooks refused our deliveries:\n{out}");
    assert!(out.contains("2 of 2 deliveries verified"), "{out}");
    app.assert_ledger_ok().await;
    app.stop().await;
}
