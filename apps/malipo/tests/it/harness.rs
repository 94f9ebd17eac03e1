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
}

impl Default for Options {
    fn default() -> Self {
        Options { sandbox_delay_ms: 100, charge_ttl_seconds: 90, rate_limit_test: 100_000, rate_limit_live: 100_000 }
    }
}

/// A running app on a fresh database.
pub struct TestApp {
    pub base: String,
    pub http: reqwest::Client,
    pub platform: Platform,
    pub running: Running,
    pub settings: Settings,
    pub db: TestDatabase,
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
        sandbox_approval_delay_ms: o.sandbox_delay_ms,
        rate_limit_live: o.rate_limit_live,
        rate_limit_test: o.rate_limit_test,
        log: "warn".into(),
        db_pool_size: Some(8),
        workers: 2,
        http_workers: Some(2),
        demo: false,
    }
}

impl TestApp {
    pub async fn spawn(db: Db) -> TestApp {
        Self::with(db, Options::default()).await
    }

    pub async fn with(db: Db, options: Options) -> TestApp {
        let database = match db {
            Db::Sqlite => TestDatabase::sqlite(),
            Db::Postgres => TestDatabase::postgres(),
        };
        let settings = settings(&database.url, &options);
        Self::on(database, settings).await
    }

    /// Starts another server (e.g. a second instance) on an existing database.
    pub async fn on(db: TestDatabase, settings: Settings) -> TestApp {
        let s = settings.clone();
        let (platform, _store) = tokio::task::spawn_blocking(move || malipo::platform(&s)).await.unwrap().unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let running = malipo::start(&settings, platform.clone(), listener).unwrap();
        let base = format!("http://{}", running.addr);
        TestApp { base, http: reqwest::Client::new(), platform, running, settings, db }
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
        let issued = tokio::task::spawn_blocking(move || p.create_org("Test Org", kind, &country)).await.unwrap().unwrap();
        Creds { org_id: issued.org_id.to_string(), client_id: issued.client_id, client_secret: issued.client_secret }
    }

    pub async fn merchant(&self) -> Creds {
        self.org("merchant", "KE").await
    }

    /// A live credential for an organisation.
    pub async fn live(&self, org_id: &str) -> Creds {
        let p = self.platform.clone();
        let org = malipo_core::OrgId::parse(org_id).unwrap();
        let issued = tokio::task::spawn_blocking(move || p.issue_credential(&org, malipo_core::Mode::Live, None)).await.unwrap().unwrap();
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

    /// Runs `malipo ledger verify` logic and asserts the ledger is sound.
    pub async fn assert_ledger_ok(&self) {
        let p = self.platform.clone();
        let v = tokio::task::spawn_blocking(move || p.verify_ledger(None)).await.unwrap().unwrap();
        assert!(v.is_empty(), "ledger violations: {v:?}");
    }

    pub async fn stop(self) {
        self.running.server.stop(true).await;
        let _ = self.running.done.await;
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
