//! Starting the app for a test, and talking to it.

use std::net::TcpListener;
use std::time::{Duration, Instant};

use malipo::{Running, Settings};
use malipo_service::Platform;
use malipo_store_diesel::testing::TestDatabase;
use serde_json::{json, Value};

/// Which database a test runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Db {
    Sqlite,
    Postgres,
}

/// Generates `mod sqlite { #[actix_web::test] async fn name() }` and the same for postgres
/// from one `async fn name(db: Db)`.
#[macro_export]
macro_rules! on_both {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $( #[actix_web::test] async fn $name() { super::$name($crate::harness::Db::Sqlite).await } )*
        }
        mod postgres {
            $( #[actix_web::test] async fn $name() { super::$name($crate::harness::Db::Postgres).await } )*
        }
    };
}

/// Options of a test server.
#[derive(Clone, Debug)]
pub struct Options {
    pub sandbox_delay_ms: i64,
    pub charge_ttl_seconds: i64,
    pub rate_limit_test: u32,
    pub rate_limit_live: u32,
    /// Failed token requests a minute per client id and per source address (every test
    /// connects from 127.0.0.1, so the address limit is high unless a test sets it).
    pub token_failures: (u32, u32),
    /// `MALIPO_MAX_BACKLOG_SECONDS` (default: 60, or 0 under a manual clock).
    pub max_backlog_seconds: Option<i64>,
    /// Time stands still until the test moves it ([`TestApp::advance`]), and no charge worker
    /// runs: the test advances charges with [`TestApp::run_workers`].
    pub manual: bool,
    /// `MALIPO_CREATE_GROUP_MAX` (default: the server's default, 32).
    pub create_group_max: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            sandbox_delay_ms: 100,
            charge_ttl_seconds: 90,
            rate_limit_test: 100_000,
            rate_limit_live: 100_000,
            token_failures: (100_000, 100_000),
            max_backlog_seconds: None,
            manual: false,
            create_group_max: 32,
        }
    }
}

impl Options {
    /// A manual clock and no charge workers.
    pub fn manual() -> Self {
        Options { manual: true, ..Options::default() }
    }
}

/// A clock that moves only when told to.
#[derive(Debug)]
pub struct ManualClock(std::sync::atomic::AtomicI64);

impl ManualClock {
    fn starting_now() -> Self {
        ManualClock(std::sync::atomic::AtomicI64::new(malipo_core::Timestamp::now().as_micros()))
    }

    fn advance(&self, by: Duration) {
        let micros = i64::try_from(by.as_micros()).unwrap();
        self.0.fetch_add(micros, std::sync::atomic::Ordering::SeqCst);
    }
}

impl malipo_core::Clock for ManualClock {
    fn now(&self) -> malipo_core::Timestamp {
        malipo_core::Timestamp::from_micros(self.0.load(std::sync::atomic::Ordering::SeqCst))
    }
}

thread_local! {
    /// The organisations this test thread created (through [`TestApp::org`]): on the shared
    /// server, [`TestApp::assert_ledger_ok`] verifies their part of the ledger alone.
    static ORGS: std::cell::RefCell<Vec<malipo_core::OrgId>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// A running app on a fresh database.
pub struct TestApp {
    pub base: String,
    pub http: reqwest::Client,
    pub platform: Platform,
    pub running: Running,
    pub settings: Settings,
    pub db: TestDatabase,
    /// Whether this is the server shared by the process's tests (see [`TestApp::shared`]).
    pub shared: bool,
    /// The platform's clock when the test drives time ([`Options::manual`]).
    pub clock: Option<std::sync::Arc<ManualClock>>,
}

/// A merchant's credential.
#[derive(Clone, Debug)]
pub struct Creds {
    pub org_id: String,
    pub client_id: String,
    pub client_secret: String,
}

pub fn settings(url: &str, o: &Options) -> Settings {
    Settings {
        database_url: url.to_owned(),
        bind: "127.0.0.1:0".into(),
        countries: None,
        charge_ttl_seconds: o.charge_ttl_seconds,
        worker_lease_seconds: 30,
        payout_settle_chunk: None,
        payout_lanes: 1,
        charge_settle_chunk: None,
        create_group_max: o.create_group_max,
        // Under a manual clock no worker runs while time jumps, so due work is always behind.
        max_backlog_seconds: o.max_backlog_seconds.unwrap_or(if o.manual { 0 } else { 60 }),
        sandbox_approval_delay_ms: o.sandbox_delay_ms,
        rate_limit_live: o.rate_limit_live,
        rate_limit_test: o.rate_limit_test,
        token_failures_per_client: o.token_failures.0,
        token_failures_per_address: o.token_failures.1,
        log: "warn".into(),
        db_pool_size: Some(8),
        db_deadline_ms: 3000,
        database_read_url: None,
        db_read_max_lag_ms: 2000,
        workers: 2,
        http_workers: Some(2),
        demo: false,
        webhook_retry_schedule: malipo_webhooks::RetrySchedule::default(),
        webhook_timeout_ms: 15_000,
        webhook_allow_private: false,
        // PostgreSQL needs a key (instances share it); SQLite keeps one beside its database file.
        webhook_key: url.starts_with("postgres").then(|| malipo::WebhookKey(TEST_WEBHOOK_KEY.to_owned())),
        webhook_concurrency: 64,
        console_url: None,
        console_secure_cookies: Some(false),
        trust_proxy: false,
        metrics_token: Some(TEST_METRICS_TOKEN.to_owned()),
        metrics_bind: None,
    }
}

/// The token test servers' `/metrics` answers.
pub const TEST_METRICS_TOKEN: &str = "metrics-test-token";

/// The webhook key of test servers on PostgreSQL (base64 of 32 bytes; the same for every
/// instance and restart of a test, as a deployment's would be).
pub const TEST_WEBHOOK_KEY: &str = "bWFsaXBvLXRlc3Qtd2ViaG9vay1rZXktMzItYnl0ZXM=";

impl TestApp {
    pub async fn spawn(db: Db) -> TestApp {
        Self::with(db, Options::default()).await
    }

    pub async fn with(db: Db, options: Options) -> TestApp {
        let database = match db {
            Db::Sqlite => TestDatabase::sqlite(),
            Db::Postgres => TestDatabase::postgres(),
        };
        let mut settings = settings(&database.url, &options);
        if !options.manual {
            return Self::on(database, settings).await;
        }
        settings.workers = 0;
        let clock = std::sync::Arc::new(ManualClock::starting_now());
        let mut app = Self::on_clock(database, settings, clock.clone()).await;
        app.clock = Some(clock);
        app
    }

    /// Starts another server (e.g. a second instance) on an existing database.
    pub async fn on(db: TestDatabase, settings: Settings) -> TestApp {
        Self::on_clock(db, settings, std::sync::Arc::new(malipo_core::SystemClock)).await
    }

    async fn on_clock(db: TestDatabase, settings: Settings, clock: std::sync::Arc<dyn malipo_core::Clock>) -> TestApp {
        Self::on_listener(db, settings, clock, TcpListener::bind("127.0.0.1:0").unwrap()).await
    }

    /// Starts a server on an existing database at `addr` (the address of a server stopped with
    /// [`TestApp::stop_keeping_database`], say: a restart that clients find where they left it).
    pub async fn on_addr(db: TestDatabase, settings: Settings, addr: std::net::SocketAddr) -> TestApp {
        let listener = TcpListener::bind(addr).unwrap();
        Self::on_listener(db, settings, std::sync::Arc::new(malipo_core::SystemClock), listener).await
    }

    async fn on_listener(
        db: TestDatabase,
        settings: Settings,
        clock: std::sync::Arc<dyn malipo_core::Clock>,
        listener: TcpListener,
    ) -> TestApp {
        let s = settings.clone();
        let (platform, _store) = tokio::task::spawn_blocking(move || malipo::platform_with_clock(&s, clock)).await.unwrap().unwrap();
        let running = malipo::start(&settings, platform.clone(), listener).unwrap();
        let base = format!("http://{}", running.addr);
        TestApp { base, http: reqwest::Client::new(), platform, running, settings, db, shared: false, clock: None }
    }

    /// Moves the manual clock forward ([`Options::manual`] apps only).
    pub fn advance(&self, by: Duration) {
        self.clock.as_ref().expect("advance needs an app started with Options::manual()").advance(by);
    }

    /// Runs the charge and payout workers (and the expiry of payment requests) now, as their loop
    /// would, until nothing is due; returns how many charges, payouts and requests they took in all ([`Options::manual`] apps, whose own loops do not run).
    pub async fn run_workers(&self) -> usize {
        assert!(self.clock.is_some(), "run_workers drives the worker of an Options::manual() app");
        let mut claimed = 0;
        loop {
            let p = self.platform.clone();
            let n = tokio::task::spawn_blocking(move || {
                p.processing().process_due(100).unwrap()
                    + p.payout_processing().process_due(100).unwrap()
                    + p.payment_requests().expire_due(100).unwrap()
            })
            .await
            .unwrap();
            if n == 0 {
                return claimed;
            }
            claimed += n;
        }
    }

    pub fn url(&self, path: &str) -> String {
        if path.starts_with('/') && !path.starts_with("/api/") && !["/healthz", "/readyz", "/metrics"].contains(&path) {
            format!("{}/api/v1{path}", self.base)
        } else {
            format!("{}{path}", self.base)
        }
    }

    /// Creates an organisation (merchant in KE unless told) and returns its test credential.
    pub async fn org(&self, kind: &str, country: &str) -> Creds {
        let p = self.platform.clone();
        let (kind, country) = (kind.parse().unwrap(), country.to_owned());
        let issued = tokio::task::spawn_blocking(move || p.access().create_org("Test Org", kind, &country)).await.unwrap().unwrap();
        ORGS.with(|orgs| orgs.borrow_mut().push(issued.org_id.clone()));
        Creds { org_id: issued.org_id.to_string(), client_id: issued.client_id, client_secret: issued.client_secret }
    }

    pub async fn merchant(&self) -> Creds {
        self.org("merchant", "KE").await
    }

    /// A live credential for an organisation.
    pub async fn live(&self, org_id: &str) -> Creds {
        self.credential(org_id, malipo_core::Mode::Live, None).await
    }

    /// A new credential for an organisation in `mode`, with `scopes` (space-separated; the
    /// kind's defaults when `None`).
    pub async fn credential(&self, org_id: &str, mode: malipo_core::Mode, scopes: Option<&str>) -> Creds {
        let p = self.platform.clone();
        let org = malipo_core::OrgId::parse(org_id).unwrap();
        let scopes = scopes.map(|s| malipo_auth::Scopes::parse(s).unwrap());
        let issued = tokio::task::spawn_blocking(move || p.access().issue_credential(&org, mode, scopes)).await.unwrap().unwrap();
        Creds { org_id: org_id.to_owned(), client_id: issued.client_id, client_secret: issued.client_secret }
    }

    pub async fn token(&self, c: &Creds) -> String {
        let r = self
            .http
            .post(self.url("/oauth/token"))
            .json(&json!({"client_id": c.client_id, "client_secret": c.client_secret}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200, "token request failed");
        r.json::<Value>().await.unwrap()["access_token"].as_str().unwrap().to_owned()
    }

    /// A new merchant and a token for it.
    pub async fn merchant_token(&self) -> (Creds, String) {
        let c = self.merchant().await;
        let t = self.token(&c).await;
        (c, t)
    }

    pub async fn get(&self, token: &str, path: &str) -> reqwest::Response {
        self.http.get(self.url(path)).bearer_auth(token).send().await.unwrap()
    }

    pub async fn post(&self, token: &str, path: &str, body: &Value, key: Option<&str>) -> reqwest::Response {
        let mut r = self.http.post(self.url(path)).bearer_auth(token).json(body);
        if let Some(k) = key {
            r = r.header("Idempotency-Key", k);
        }
        r.send().await.unwrap()
    }

    /// Pushes a charge and returns its JSON (asserting 200).
    pub async fn charge(&self, token: &str, msisdn: &str, amount: &str) -> Value {
        self.charge_raw(token, msisdn, amount).await.0
    }

    /// Pushes a charge and returns its JSON and the exact body text.
    pub async fn charge_raw(&self, token: &str, msisdn: &str, amount: &str) -> (Value, String) {
        let idem = uuid::Uuid::new_v4().to_string();
        let body = json!({"payer_msisdn": msisdn, "amount": amount, "reference": format!("ORD-{}", &idem[..8]), "idem": idem});
        let r = self.post(token, "/partner/stk", &body, None).await;
        assert_eq!(r.status(), 200);
        let text = r.text().await.unwrap();
        (serde_json::from_str(&text).unwrap(), text)
    }

    /// Polls a charge until it is in a final state (or `state`), failing after `timeout`.
    pub async fn wait_for(&self, token: &str, charge_ref: &str, state: &str, timeout: Duration) -> Value {
        let started = Instant::now();
        loop {
            let v: Value = self.get(token, &format!("/partner/charges/{charge_ref}")).await.json().await.unwrap();
            if v["state"] == state {
                return v;
            }
            let final_state = ["completed", "declined", "expired", "failed"].contains(&v["state"].as_str().unwrap_or(""));
            assert!(!final_state, "charge ended {} ({}), expected {state}", v["state"], v["failure_reason"]);
            assert!(started.elapsed() < timeout, "charge still {} after {timeout:?}", v["state"]);
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Asserts the ledger is sound, as `malipo ledger verify` does: the whole ledger of an app of
    /// the test's own; on the shared server, the part of the organisations this test created
    /// (`malipo ledger verify --org`), so that the check costs what the test did and a failure
    /// is reported by the test that caused it.
    pub async fn assert_ledger_ok(&self) {
        // Sealed first (the server's sealer may not have passed yet), so that every journal is
        // checked against its chain entry too.
        let p = self.platform.clone();
        tokio::task::spawn_blocking(move || p.sealer().seal_all()).await.unwrap().unwrap();
        let p = self.platform.clone();
        let v = if self.shared {
            let orgs = ORGS.with(|orgs| orgs.borrow().clone());
            assert!(!orgs.is_empty(), "this test created no organisation whose ledger could be verified");
            tokio::task::spawn_blocking(move || p.accounts().verify_org_ledger(&orgs)).await.unwrap().unwrap()
        } else {
            tokio::task::spawn_blocking(move || p.accounts().verify_ledger(None)).await.unwrap().unwrap()
        };
        assert!(v.is_empty(), "ledger violations: {v:?}");
    }

    pub async fn stop(self) {
        self.running.server.stop(true).await;
        let _ = self.running.done.await;
    }

    /// Stops the server and its workers but keeps the database: what [`TestApp::on_addr`]
    /// needs to start it again, with the address it listened on.
    pub async fn stop_keeping_database(self) -> (TestDatabase, Settings, std::net::SocketAddr) {
        let addr = self.running.addr;
        self.running.server.stop(true).await;
        let _ = self.running.done.await;
        (self.db, self.settings, addr)
    }
}

/// Asserts a problem document with this status and code, returning it.
pub async fn problem(r: reqwest::Response, status: u16, code: &str) -> Value {
    assert_eq!(r.status().as_u16(), status, "status");
    let ct = r.headers().get("content-type").map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default();
    let has_id = r.headers().get("x-request-id").is_some();
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["code"], code, "code in {v}");
    assert_eq!(v["status"], status, "status member in {v}");
    assert_eq!(v["type"], format!("urn:malipo:problem:{code}"));
    assert!(v["title"].is_string() && v["detail"].is_string() && v["request_id"].is_string(), "{v}");
    assert!(has_id, "X-Request-Id header");
    assert!(ct.starts_with("application/problem+json") || ct.starts_with("application/json"), "content type {ct}");
    v
}

/// The exact JSON text of a top-level member (numbers keep their written form).
pub fn raw_member(body: &str, name: &str) -> String {
    let map: std::collections::HashMap<String, Box<serde_json::value::RawValue>> = serde_json::from_str(body).unwrap();
    map.get(name).map(|v| v.get().to_owned()).unwrap_or_default()
}

// ---------------------------------------------------------------------------------------------
// Helpers of the contract tests (auth, errors, charges, sandbox, idempotency, isolation, ops).

/// Words that must never appear in an error body: internals, SQL, panics, file paths.
pub const LEAKS: [&str; 9] = ["diesel", "SQL", "sqlite", "postgres", "panicked", ".rs", "src/", "/home/", "/work/"];

/// Asserts that a body names no internals.
pub fn assert_no_internals(body: &str) {
    for word in LEAKS {
        assert!(!body.contains(word), "error body leaks {word:?}: {body}");
    }
}

/// A response read to the end: status, headers, text and JSON (Null when not JSON).
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub text: String,
    pub json: Value,
}

impl Answer {
    pub async fn of(r: reqwest::Response) -> Answer {
        let status = r.status().as_u16();
        let headers = r.headers().clone();
        let text = r.text().await.unwrap();
        let json = serde_json::from_str(&text).unwrap_or(Value::Null);
        Answer { status, headers, text, json }
    }

    /// A header as text ("" when absent).
    pub fn header(&self, name: &str) -> String {
        self.headers.get(name).map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default()
    }

    /// The exact text of a top-level member.
    pub fn raw(&self, name: &str) -> String {
        raw_member(&self.text, name)
    }
}

/// Like [`problem`], and stricter: `application/problem+json` (or `application/json` when
/// `oauth`), `request_id` equal to `X-Request-Id`, and no internals in the body.
pub async fn strict(r: reqwest::Response, status: u16, code: &str, oauth: bool) -> Answer {
    let a = Answer::of(r).await;
    assert_eq!(a.status, status, "status of {}", a.text);
    let v = &a.json;
    assert_eq!(v["code"], code, "code in {v}");
    assert_eq!(v["status"], status, "status member in {v}");
    assert_eq!(v["type"], format!("urn:malipo:problem:{code}"), "{v}");
    assert!(v["title"].is_string() && v["detail"].is_string(), "{v}");
    let id = a.header("x-request-id");
    assert!(!id.is_empty(), "X-Request-Id header");
    assert_eq!(v["request_id"], id.as_str(), "request_id equals X-Request-Id");
    let ct = a.header("content-type");
    let want = if oauth { "application/json" } else { "application/problem+json" };
    assert!(ct.starts_with(want), "content type {ct}, wanted {want}");
    if oauth {
        assert_eq!(v["error"], code, "{v}");
        assert!(v["error_description"].is_string(), "{v}");
        assert_eq!(a.header("cache-control"), "no-store");
    }
    assert_no_internals(&a.text);
    a
}

/// [`strict`] for a non-token endpoint.
pub async fn problem_strict(r: reqwest::Response, status: u16, code: &str) -> Answer {
    strict(r, status, code, false).await
}

/// A 422 `validation_failed` whose first field error is `field`/`code`.
pub async fn field_problem(r: reqwest::Response, field: &str, code: &str) -> Answer {
    let a = strict(r, 422, "validation_failed", false).await;
    let e = &a.json["errors"][0];
    assert_eq!(e["field"], field, "errors[0].field in {}", a.text);
    assert_eq!(e["code"], code, "errors[0].code in {}", a.text);
    assert!(e["message"].is_string(), "{}", a.text);
    a
}

/// A fresh `POST /partner/stk` body.
pub fn stk(msisdn: &str, amount: Value) -> Value {
    let idem = uuid::Uuid::new_v4().to_string();
    json!({"payer_msisdn": msisdn, "amount": amount, "reference": format!("ORD-{}", &idem[..8]), "idem": idem})
}

/// Whether a text is an RFC 3339 UTC timestamp ending in `Z`.
pub fn is_utc_timestamp(s: &str) -> bool {
    s.ends_with('Z')
        && s.len() >= 20
        && malipo_core::Timestamp::parse_rfc3339(s).is_ok()
        && s.as_bytes()[4] == b'-'
        && s.as_bytes()[10] == b'T'
}

impl TestApp {
    /// A request with an arbitrary body and content type (and a bearer token if given).
    pub async fn send(
        &self,
        method: reqwest::Method,
        token: Option<&str>,
        path: &str,
        content_type: Option<&str>,
        body: impl Into<reqwest::Body>,
    ) -> reqwest::Response {
        let mut r = self.http.request(method, self.url(path)).body(body);
        if let Some(t) = token {
            r = r.bearer_auth(t);
        }
        if let Some(ct) = content_type {
            r = r.header("Content-Type", ct);
        }
        r.send().await.unwrap()
    }

    /// `POST /oauth/token` with a JSON body.
    pub async fn token_json(&self, body: &Value) -> reqwest::Response {
        self.http.post(self.url("/oauth/token")).json(body).send().await.unwrap()
    }

    /// `POST /oauth/token` with a form body and, if given, HTTP Basic credentials (raw).
    pub async fn token_form(&self, form: &[(&str, &str)], basic: Option<(&str, &str)>) -> reqwest::Response {
        let mut r = self.http.post(self.url("/oauth/token")).form(form);
        if let Some((id, secret)) = basic {
            r = r.basic_auth(id, Some(secret));
        }
        r.send().await.unwrap()
    }

    /// A token for a subset of the credential's scopes.
    pub async fn token_scoped(&self, c: &Creds, scope: &str) -> String {
        let r = self.token_json(&json!({"client_id": c.client_id, "client_secret": c.client_secret, "scope": scope})).await;
        assert_eq!(r.status(), 200, "scoped token request failed");
        r.json::<Value>().await.unwrap()["access_token"].as_str().unwrap().to_owned()
    }

    /// `POST /sandbox/charges/{ref}/simulate` with a fresh key.
    pub async fn simulate(&self, token: &str, charge_ref: &str, action: &str) -> reqwest::Response {
        let key = uuid::Uuid::new_v4().to_string();
        self.post(token, &format!("/sandbox/charges/{charge_ref}/simulate"), &json!({"action": action}), Some(&key)).await
    }

    /// `POST /sandbox/wallets` with a fresh key.
    pub async fn sandbox_wallet(&self, token: &str, body: &Value) -> reqwest::Response {
        let key = uuid::Uuid::new_v4().to_string();
        self.post(token, "/sandbox/wallets", body, Some(&key)).await
    }

    /// GET returning the JSON body (asserting 200).
    pub async fn get_json(&self, token: &str, path: &str) -> Value {
        let r = self.get(token, path).await;
        let status = r.status();
        let text = r.text().await.unwrap();
        assert_eq!(status, 200, "GET {path}: {text}");
        serde_json::from_str(&text).unwrap()
    }

    /// A charge's ref after pushing it (asserting 200).
    pub async fn charge_ref(&self, token: &str, msisdn: &str, amount: &str) -> String {
        self.charge(token, msisdn, amount).await["charge_ref"].as_str().unwrap().to_owned()
    }
}

/// Standard base64 with padding (for hand-made HTTP Basic headers).
pub fn base64(input: &str) -> String {
    const ABC: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let bytes = input.as_bytes();
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ABC[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// A server shared by the tests of one process, per backend.
//
// Creating, migrating and dropping a database costs most of a short test, on PostgreSQL above
// all. Tests that only need default options and keep to their own merchant, payer
// numbers and keys use one server per backend for the whole process instead. It is never
// stopped; its database is recorded in a registry file and removed by a later run once this
// process has ended.

static NEXT_NUMBER: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// A Kenyan test number no other test of this process uses, ending in `last4` (which picks
/// the sandbox outcome): `2547` + 4 unique digits + `last4`.
pub fn msisdn(last4: &str) -> String {
    assert_eq!(last4.len(), 4);
    let n = NEXT_NUMBER.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % 10_000;
    format!("2547{n:04}{last4}")
}

fn shared_registry() -> std::path::PathBuf {
    std::env::temp_dir().join("malipo-it-shared-databases.txt")
}

/// `Some(alive)` where the platform can tell.
fn process_alive(pid: u32) -> Option<bool> {
    let proc = std::path::Path::new("/proc");
    proc.join("self").exists().then(|| proc.join(pid.to_string()).exists())
}

fn is_test_database_name(name: &str) -> bool {
    name.strip_prefix("malipo_t_").is_some_and(|rest| !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_alphanumeric()))
}

/// Removes what shared servers of ended processes left behind: PostgreSQL databases (dropped
/// without FORCE, so a database still in use is kept) and SQLite directories.
fn sweep_shared_databases() {
    use diesel::connection::SimpleConnection;
    use diesel::Connection;
    let path = shared_registry();
    let Ok(text) = std::fs::read_to_string(&path) else { return };
    let admin_url =
        std::env::var("MALIPO_TEST_POSTGRES_URL").unwrap_or_else(|_| malipo_store_diesel::testing::DEFAULT_POSTGRES_URL.to_owned());
    let mut admin: Option<diesel::PgConnection> = None;
    let mut keep = String::new();
    for line in text.lines() {
        let mut parts = line.splitn(3, ' ');
        let (Some(pid), Some(kind), Some(target)) = (parts.next(), parts.next(), parts.next()) else { continue };
        let ended = pid.parse().ok().and_then(process_alive) == Some(false);
        let removed = ended
            && match kind {
                "postgres" if is_test_database_name(target) => {
                    if admin.is_none() {
                        admin = diesel::PgConnection::establish(&admin_url).ok();
                    }
                    admin.as_mut().is_some_and(|c| c.batch_execute(&format!("DROP DATABASE IF EXISTS {target}")).is_ok())
                }
                "sqlite" => {
                    let dir = std::path::Path::new(target);
                    let ours = dir.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("malipo-test-"));
                    ours && (std::fs::remove_dir_all(dir).is_ok() || !dir.exists())
                }
                _ => true,
            };
        if !removed {
            keep.push_str(line);
            keep.push('\n');
        }
    }
    let _ = std::fs::write(&path, keep);
}

fn register_shared_database(db: Db, url: &str) {
    use std::io::Write;
    let target = match db {
        Db::Postgres => url.split('?').next().unwrap_or(url).rsplit('/').next().unwrap_or("").to_owned(),
        Db::Sqlite => {
            std::path::Path::new(url.trim_start_matches("sqlite://")).parent().map(|p| p.display().to_string()).unwrap_or_default()
        }
    };
    let kind = if db == Db::Postgres { "postgres" } else { "sqlite" };
    if let Ok(mut f) = std::fs::OpenOptions::new().create(true).append(true).open(shared_registry()) {
        let _ = writeln!(f, "{} {kind} {target}", std::process::id());
    }
}

impl TestApp {
    /// The server shared by this process's tests on `db` (default [`Options`]), started on
    /// first use. Use a fresh merchant, [`msisdn`] numbers for anything that changes a wallet,
    /// and never `stop` it. Its client opens a connection per request, so that no pooled
    /// connection outlives the runtime of the test that opened it.
    pub fn shared(db: Db) -> &'static TestApp {
        static SQLITE: std::sync::OnceLock<TestApp> = std::sync::OnceLock::new();
        static POSTGRES: std::sync::OnceLock<TestApp> = std::sync::OnceLock::new();
        let cell = match db {
            Db::Sqlite => &SQLITE,
            Db::Postgres => &POSTGRES,
        };
        cell.get_or_init(|| {
            sweep_shared_databases();
            let (tx, rx) = std::sync::mpsc::channel();
            std::thread::Builder::new()
                .name(format!("shared-{db:?}"))
                .spawn(move || {
                    actix_web::rt::System::new().block_on(async move {
                        let mut app = TestApp::spawn(db).await;
                        app.shared = true;
                        app.http = reqwest::Client::builder().pool_max_idle_per_host(0).build().unwrap();
                        register_shared_database(db, &app.db.url);
                        if tx.send(app).is_ok() {
                            std::future::pending::<()>().await;
                        }
                    });
                })
                .unwrap();
            rx.recv().expect("the shared test server failed to start")
        })
    }
}

/// A JSON string value.
pub fn json_str(s: &str) -> Value {
    Value::String(s.to_owned())
}

// ---------------------------------------------------------------------------------------------
// Helpers of the customer-side tests (wallets, agents, USSD, configuration, live mode).

/// A fresh idempotency key.
pub fn key() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// Random decimal digits.
pub fn digits(n: usize) -> String {
    let mut out = String::new();
    while out.len() < n {
        out.extend(uuid::Uuid::new_v4().as_bytes().iter().map(|b| char::from(b'0' + b % 10)));
    }
    out.truncate(n);
    out
}

/// A Kenyan national ID number (8 digits) no other test uses.
pub fn national_id() -> String {
    format!("{}{}", 1 + digits(1).parse::<u8>().unwrap() % 9, digits(7))
}

/// A Kenyan KRA PIN (`A` + 9 digits + a letter) no other test uses.
pub fn kra_pin() -> String {
    format!("A{}Z", digits(9))
}

/// The exact JSON text at a path of object members (`["limits", "daily"]`).
pub fn raw_at(body: &str, path: &[&str]) -> String {
    let mut text = body.to_owned();
    for name in path {
        text = raw_member(&text, name);
    }
    text
}

/// The exact JSON texts of the items of an array.
pub fn raw_items(array: &str) -> Vec<String> {
    let items: Vec<Box<serde_json::value::RawValue>> = serde_json::from_str(array).unwrap();
    items.into_iter().map(|v| v.get().to_owned()).collect()
}

/// Whether a problem's `errors[]` holds `field` (with `code`, when given).
pub fn has_field_error(problem: &Value, field: &str, code: Option<&str>) -> bool {
    problem["errors"].as_array().is_some_and(|errors| errors.iter().any(|e| e["field"] == field && code.is_none_or(|c| e["code"] == c)))
}

/// A 422 `validation_failed` naming `field` (and `code`, when given) among its `errors[]`.
pub async fn field_error(r: reqwest::Response, field: &str, code: Option<&str>) -> Answer {
    let a = problem_strict(r, 422, "validation_failed").await;
    assert!(has_field_error(&a.json, field, code), "wanted errors[] with field {field} code {code:?}: {}", a.text);
    a
}

/// Asserts a 200 answer and returns it.
pub fn ok(a: Answer, what: &str) -> Answer {
    assert_eq!(a.status, 200, "{what}: {}", a.text);
    a
}

impl TestApp {
    /// Funds an agent's float (or a merchant's payout account) from e-money issuance, as the
    /// `malipo account fund` command does.
    pub async fn fund(&self, org_id: &str, mode: malipo_core::Mode, amount: &str) {
        let p = self.platform.clone();
        let (org, amount) = (malipo_core::OrgId::parse(org_id).unwrap(), amount.to_owned());
        tokio::task::spawn_blocking(move || p.accounts().fund(&org, mode, &amount)).await.unwrap().unwrap();
    }

    /// POST with a fresh idempotency key, read to the end.
    pub async fn post_new(&self, token: &str, path: &str, body: &Value) -> Answer {
        Answer::of(self.post(token, path, body, Some(&key())).await).await
    }

    /// GET, read to the end.
    pub async fn get_answer(&self, token: &str, path: &str) -> Answer {
        Answer::of(self.get(token, path).await).await
    }

    /// `POST /ussd` with a form body.
    pub async fn ussd_form(&self, token: &str, fields: &[(&str, &str)]) -> reqwest::Response {
        self.http.post(self.url("/ussd")).bearer_auth(token).form(fields).send().await.unwrap()
    }

    /// One USSD hop (form body): asserts a well-formed screen and returns it.
    pub async fn ussd_hop(&self, token: &str, session_id: &str, phone: &str, text: &str) -> String {
        let fields =
            [("sessionId", session_id), ("serviceCode", "*384*1#"), ("phoneNumber", phone), ("text", text), ("networkCode", "63902")];
        let a = Answer::of(self.ussd_form(token, &fields).await).await;
        assert_screen(&a, text)
    }

    /// Polls `path` until its `state` is final (completed, declined, expired or failed), failing
    /// after `timeout`.
    pub async fn wait_state_any(&self, token: &str, path: &str, timeout: Duration) -> Value {
        let started = Instant::now();
        loop {
            let v = self.get_json(token, path).await;
            if ["completed", "declined", "expired", "failed"].contains(&v["state"].as_str().unwrap_or("")) {
                return v;
            }
            assert!(started.elapsed() < timeout, "{path} still {} after {timeout:?}", v["state"]);
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Polls `path` until its `state` is `state`, failing on another final state or after `timeout`.
    pub async fn wait_state(&self, token: &str, path: &str, state: &str, timeout: Duration) -> Value {
        let started = Instant::now();
        loop {
            let v = self.get_json(token, path).await;
            if v["state"] == state {
                return v;
            }
            let final_state = ["completed", "declined", "expired", "failed"].contains(&v["state"].as_str().unwrap_or(""));
            assert!(!final_state, "{path} ended {} ({}), expected {state}", v["state"], v["failure_reason"]);
            assert!(started.elapsed() < timeout, "{path} still {} after {timeout:?}", v["state"]);
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// Asserts a USSD answer is a well-formed screen (200, `text/plain; charset=utf-8`, `CON `/`END `,
/// at most 182 characters) and returns its text. Set `USSD_TRACE=1` to print the exchange.
pub fn assert_screen(a: &Answer, text: &str) -> String {
    assert_eq!(a.status, 200, "USSD text {text:?}: {}", a.text);
    assert_eq!(a.header("content-type"), "text/plain; charset=utf-8", "USSD text {text:?}");
    assert!(a.text.starts_with("CON ") || a.text.starts_with("END "), "USSD text {text:?}: {:?}", a.text);
    assert!(a.text.chars().count() <= 182, "screen longer than 182 characters: {:?}", a.text);
    if std::env::var_os("USSD_TRACE").is_some() {
        eprintln!("USSD text={text:?}\n{}\n---", a.text);
    }
    a.text.clone()
}

/// A fresh gateway session id.
pub fn session_id() -> String {
    format!("ATUid_{}", uuid::Uuid::new_v4().simple())
}

/// The organisations of a customer-side scenario in one mode, with tokens: an operator (scope
/// `wallets`), an agent with a funded float (`agent`), a merchant (`payments ...`) and a USSD
/// gateway (`ussd`), all in Kenya.
pub struct Cast {
    pub mode: malipo_core::Mode,
    pub operator: String,
    pub agent: Creds,
    pub agent_token: String,
    pub merchant: Creds,
    pub merchant_token: String,
    pub gateway: String,
    pub gateway_org_id: String,
}

impl Cast {
    /// The cast in `mode`, the agent's float funded with `float` (none when "0").
    pub async fn new(app: &TestApp, mode: malipo_core::Mode, float: &str) -> Cast {
        let creds = |kind: &'static str| async move {
            let test = app.org(kind, "KE").await;
            match mode {
                malipo_core::Mode::Test => test,
                malipo_core::Mode::Live => app.live(&test.org_id).await,
            }
        };
        let (operator, agent, merchant, gateway) =
            (creds("operator").await, creds("agent").await, creds("merchant").await, creds("gateway").await);
        if float != "0" {
            app.fund(&agent.org_id, mode, float).await;
        }
        Cast {
            mode,
            operator: app.token(&operator).await,
            agent_token: app.token(&agent).await,
            agent,
            merchant_token: app.token(&merchant).await,
            merchant,
            gateway: app.token(&gateway).await,
            gateway_org_id: gateway.org_id,
        }
    }

    pub async fn live(app: &TestApp) -> Cast {
        Cast::new(app, malipo_core::Mode::Live, "100000").await
    }

    /// Opens a wallet (tier 1 with a national ID when `tier1`), asserting 200.
    pub async fn open_wallet(&self, app: &TestApp, msisdn: &str, tier1: bool) -> Answer {
        let mut body = json!({"msisdn": msisdn, "first_name": "Amina", "last_name": "Otieno"});
        if tier1 {
            body["id_type"] = json!("national_id");
            body["id_number"] = json!(national_id());
        }
        ok(app.post_new(&self.operator, "/wallets", &body).await, "POST /wallets")
    }

    /// Sets a wallet's first PIN, asserting 200.
    pub async fn set_pin(&self, app: &TestApp, msisdn: &str, pin: &str) -> Answer {
        ok(app.post_new(&self.operator, &format!("/wallets/{msisdn}/pin"), &json!({"new_pin": pin})).await, "POST /wallets/{msisdn}/pin")
    }

    /// A cash-in by the agent, asserting 200.
    pub async fn cash_in(&self, app: &TestApp, msisdn: &str, amount: &str) -> Answer {
        let body = json!({"customer_msisdn": msisdn, "amount": amount});
        ok(app.post_new(&self.agent_token, "/agents/cash-in", &body).await, "POST /agents/cash-in")
    }

    /// A tier-1 customer with a PIN and `balance` cashed in (none when "0"); returns the number.
    pub async fn customer(&self, app: &TestApp, last4: &str, pin: &str, balance: &str) -> String {
        let n = msisdn(last4);
        self.open_wallet(app, &n, true).await;
        self.set_pin(app, &n, pin).await;
        if balance != "0" {
            self.cash_in(app, &n, balance).await;
        }
        n
    }

    /// The wallet as the operator sees it.
    pub async fn wallet(&self, app: &TestApp, msisdn: &str) -> Answer {
        ok(app.get_answer(&self.operator, &format!("/wallets/{msisdn}")).await, "GET /wallets/{msisdn}")
    }

    /// A whole USSD session: the first request (`text` ""), then one request per input, the
    /// text being every input so far joined by `*`. Returns every screen; all but the last are `CON`.
    pub async fn dial(&self, app: &TestApp, phone: &str, inputs: &[&str]) -> Vec<String> {
        self.dial_in(app, &session_id(), phone, inputs).await
    }

    /// [`Cast::dial`] in a given session.
    pub async fn dial_in(&self, app: &TestApp, session: &str, phone: &str, inputs: &[&str]) -> Vec<String> {
        let mut screens = vec![app.ussd_hop(&self.gateway, session, phone, "").await];
        for i in 0..inputs.len() {
            assert!(screens[i].starts_with("CON "), "session ended early after {:?}: {:?}", &inputs[..i], screens[i]);
            screens.push(app.ussd_hop(&self.gateway, session, phone, &inputs[..=i].join("*")).await);
        }
        screens
    }

    /// A pending charge by the merchant (asserting 200), returning its ref.
    pub async fn charge(&self, app: &TestApp, payer: &str, amount: &str) -> String {
        app.charge_ref(&self.merchant_token, payer, amount).await
    }

    /// The merchant's collection balance (`available`, as written).
    pub async fn merchant_available(&self, app: &TestApp) -> String {
        app.get_answer(&self.merchant_token, "/partner/balance").await.raw("available")
    }
}
