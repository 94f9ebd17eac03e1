//! A server killed (SIGKILL) while a bulk payout is being paid, then started again: every item
//! is paid exactly once and none is left behind (contract section 6), and every journal
//! committed before the kill, sealed or not, is sealed into the audit chain after the restart.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use malipo_core::{Mode, OrgId};
use malipo_service::Platform;
use malipo_store_diesel::testing::TestDatabase;
use serde_json::{json, Value};

use crate::harness::{self, key, Db, Options, TEST_WEBHOOK_KEY};

crate::on_both!(a_batch_killed_midway_pays_every_item_exactly_once);

const ITEMS: usize = 400;

/// `malipo serve` on `url` at `port`, killed with SIGKILL on drop.
pub(crate) struct Serve(Child);

impl Serve {
    pub(crate) fn start(url: &str, port: u16) -> Serve {
        Self::start_with(url, port, &[])
    }

    /// [`Serve::start`] with more settings (`MALIPO_*` variables).
    pub(crate) fn start_with(url: &str, port: u16, more: &[(&str, &str)]) -> Serve {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_malipo"));
        for (name, _) in std::env::vars_os() {
            if name.to_string_lossy().starts_with("MALIPO_") {
                cmd.env_remove(name);
            }
        }
        cmd.arg("serve")
            .env("MALIPO_DATABASE_URL", url)
            .env("MALIPO_BIND", format!("127.0.0.1:{port}"))
            .env("MALIPO_LOG", "error")
            .env("MALIPO_METRICS_TOKEN", crate::harness::TEST_METRICS_TOKEN)
            .env("MALIPO_RATE_LIMIT_TEST", "100000")
            // The restarted instance takes over the killed one's claims after 2 s.
            .env("MALIPO_WORKER_LEASE_SECONDS", "2")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .envs(more.iter().copied());
        // The same key as the test's own platform (`harness::settings`): on SQLite the key file
        // beside the database, on PostgreSQL the shared key. Secrets hashed by one verify in the other.
        if url.starts_with("postgres") {
            cmd.env("MALIPO_WEBHOOK_KEY", TEST_WEBHOOK_KEY);
        }
        Serve(cmd.spawn().unwrap())
    }

    fn kill(mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

pub(crate) async fn ready(http: &reqwest::Client, base: &str) {
    let started = Instant::now();
    while !http.get(format!("{base}/readyz")).send().await.is_ok_and(|r| r.status() == 200) {
        assert!(started.elapsed() < Duration::from_secs(30), "the server did not become ready");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

pub(crate) async fn token(http: &reqwest::Client, base: &str, client_id: &str, secret: &str) -> String {
    let r: Value = http
        .post(format!("{base}/api/v1/oauth/token"))
        .json(&json!({"client_id": client_id, "client_secret": secret}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    r["access_token"].as_str().unwrap().to_owned()
}

async fn batch(http: &reqwest::Client, base: &str, token: &str, id: &str) -> Value {
    http.get(format!("{base}/api/v1/bulk-payouts/{id}")).bearer_auth(token).send().await.unwrap().json().await.unwrap()
}

async fn a_batch_killed_midway_pays_every_item_exactly_once(db: Db) {
    let database = match db {
        Db::Sqlite => TestDatabase::sqlite(),
        Db::Postgres => TestDatabase::postgres(),
    };
    let url = database.url.clone();
    let settings = harness::settings(&url, &Options::default());
    let platform: Platform = tokio::task::spawn_blocking(move || malipo::platform(&settings).map(|(p, _)| p)).await.unwrap().unwrap();
    let p = platform.clone();
    let (maker, checker) = tokio::task::spawn_blocking(move || {
        let access = p.access();
        let maker = access.create_org("Payroll", malipo_auth::OrgKind::Corporate, "KE").unwrap();
        p.accounts().fund(&maker.org_id, Mode::Test, "1000000").unwrap();
        let checker =
            access.issue_credential(&maker.org_id, Mode::Test, Some(malipo_auth::Scopes::parse("bulk:approve").unwrap())).unwrap();
        (maker, checker)
    })
    .await
    .unwrap();

    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let http = reqwest::Client::new();
    let server = Serve::start(&url, port);
    ready(&http, &base).await;
    let maker_token = token(&http, &base, &maker.client_id, &maker.client_secret).await;
    let checker_token = token(&http, &base, &checker.client_id, &checker.client_secret).await;
    let items: Vec<Value> =
        (0..ITEMS).map(|i| json!({"payee_msisdn": format!("25479{i:07}"), "amount": "10.00", "reference": format!("EMP-{i}")})).collect();
    let created: Value = http
        .post(format!("{base}/api/v1/bulk-payouts"))
        .bearer_auth(&maker_token)
        .header("Idempotency-Key", key())
        .json(&json!({"reference": "CRASH", "items": items}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = created["batch_id"].as_str().unwrap_or_else(|| panic!("{created}")).to_owned();
    let approved = http
        .post(format!("{base}/api/v1/bulk-payouts/{id}/approve"))
        .bearer_auth(&checker_token)
        .header("Idempotency-Key", key())
        .send()
        .await
        .unwrap();
    assert_eq!(approved.status(), 200);
    // Kill it once some items are paid and some are not.
    let started = Instant::now();
    loop {
        let b = batch(&http, &base, &maker_token, &id).await;
        let completed = b["counts"]["completed"].as_u64().unwrap();
        if completed >= 20 {
            assert!(completed < ITEMS as u64, "the whole batch was paid before the kill; make it larger");
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(60), "no item was paid: {b}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    server.kill();
    // A journal committed at the moment of the kill, before any sealer saw it: posted here,
    // where no sealer runs.
    let p = platform.clone();
    let org = maker.org_id.clone();
    let unsealed = tokio::task::spawn_blocking(move || {
        p.accounts().fund(&org, Mode::Test, "1").unwrap();
        p.sealer().unsealed().unwrap().count
    })
    .await
    .unwrap();
    assert!(unsealed >= 1);

    // Restarted (after the killed instance's leases lapse), it finishes the batch.
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let _server = Serve::start(&url, port);
    ready(&http, &base).await;
    let started = Instant::now();
    let done = loop {
        let b = batch(&http, &base, &maker_token, &id).await;
        if b["state"] == "completed" {
            break b;
        }
        assert!(started.elapsed() < Duration::from_secs(120), "the batch did not complete after the restart: {b}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(done["counts"], json!({"pending": 0, "completed": ITEMS, "failed": 0}), "{done}");
    // The restarted server's sealer chains everything (its loop passes every 50 ms or so).
    let started = Instant::now();
    loop {
        let p = platform.clone();
        if tokio::task::spawn_blocking(move || p.sealer().unsealed().unwrap().count).await.unwrap() == 0 {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "journals left unsealed after the restart");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let org = OrgId::parse(&maker.org_id.to_string()).unwrap();
    let p = platform.clone();
    let (violations, balance) = tokio::task::spawn_blocking(move || {
        let check = p.accounts().check_ledger(None).unwrap();
        assert_eq!(check.unsealed, 0);
        assert!(check.journals > ITEMS, "{check:?}");
        let v = check.violations;
        let key = malipo_service::AccountKey::Org { org_id: org, mode: Mode::Test, kind: malipo_ledger::AccountKind::Payout };
        let account = malipo_service::read(p.store(), |tx| Ok(tx.find_account(&key)?)).unwrap().unwrap();
        (v, account)
    })
    .await
    .unwrap();
    assert!(violations.is_empty(), "{violations:?}");
    // 400 items of 10.00 with a 5.00 fee each, paid once each: 6,000.00 left the account (and
    // 1.00 came in at the kill).
    assert_eq!((balance.balance.get(), balance.held.get()), (100_000_000 - 600_000 + 100, 0));
}
