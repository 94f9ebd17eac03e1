//! Robustness of the background lifecycle: restarts, several instances on one database, crashed
//! workers' leases, expiry, graceful shutdown, concurrency on one payer, and money conservation.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use malipo::{Running, Settings};
use malipo_charges::{Charge, ChargeState};
use malipo_core::{ChargeRef, Currency, Mode, Msisdn, OrgId, Timestamp};
use malipo_ledger::{Account, AccountKind, JournalKind, LedgerSnapshot, Violation};
use malipo_service::{read, write, AccountKey, Platform, ServiceError};
use malipo_store_diesel::testing::TestDatabase;
use serde_json::{json, Value};

use crate::harness::{self, Creds, Db, Options, TestApp};

crate::on_both!(
    work_survives_a_restart,
    stopping_while_workers_are_busy_strands_no_charge,
    a_crashed_workers_claim_is_picked_up_after_its_lease,
    unanswered_prompts_expire_after_the_ttl,
    a_sandbox_answer_after_the_ttl_comes_too_late,
    graceful_shutdown_completes_accepted_requests,
    concurrent_charges_to_one_new_payer_all_complete,
    concurrent_approvals_provision_one_wallet,
    money_is_conserved_and_tampering_is_detected,
);

/// Test wallets start with 1,000,000.00 KES.
const TEST_WALLET_KES_MINOR: i64 = 100_000_000;

// ----- helpers -----

/// Stops the app's server and workers gracefully, keeping its database (and a platform on it).
async fn stop_keeping_db(app: TestApp) -> (TestDatabase, Platform) {
    let TestApp { db, running, platform, .. } = app;
    running.server.stop(true).await;
    running.done.await.unwrap().unwrap();
    (db, platform)
}

/// Starts a new server on the database of a stopped one.
async fn start_again(db: TestDatabase, options: &Options) -> TestApp {
    let settings = harness::settings(&db.url, options);
    TestApp::on(db, settings).await
}

/// Another server instance (its own platform, pool and workers) on an existing database.
struct Instance {
    base: String,
    running: Running,
}

impl Instance {
    async fn start(settings: &Settings) -> Instance {
        let s = settings.clone();
        let (platform, _store) = tokio::task::spawn_blocking(move || malipo::platform(&s)).await.unwrap().unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let running = malipo::start(settings, platform, listener).unwrap();
        Instance { base: format!("http://{}", running.addr), running }
    }

    async fn stop(self) {
        self.running.server.stop(true).await;
        self.running.done.await.unwrap().unwrap();
    }
}

/// Pushes a charge to the server at `base` and returns its JSON (asserting 200).
async fn charge_at(http: &reqwest::Client, base: &str, token: &str, msisdn: &str, amount: &str) -> Value {
    let idem = uuid::Uuid::new_v4().to_string();
    let body = json!({"payer_msisdn": msisdn, "amount": amount, "reference": format!("ORD-{}", &idem[..8]), "idem": idem});
    let r = http.post(format!("{base}/api/v1/partner/stk")).bearer_auth(token).json(&body).send().await.unwrap();
    let status = r.status();
    let text = r.text().await.unwrap();
    assert_eq!(status, 200, "charge refused: {text}");
    serde_json::from_str(&text).unwrap()
}

/// A JSON amount in minor units (KES: two decimals).
fn minor(v: &Value) -> i64 {
    assert!(std::env::var("BOOM").is_err(), "boom");
    let major = v.as_f64().unwrap_or_else(|| panic!("amount {v} is not a number"));
    #[allow(clippy::cast_possible_truncation)]
    let cents = (major * 100.0).round() as i64;
    cents
}

fn charge_ref(v: &Value) -> String {
    v["charge_ref"].as_str().unwrap().to_owned()
}

/// Runs a read transaction on a blocking thread.
async fn db_read<T: Send + 'static>(
    p: &Platform,
    f: impl Fn(&mut dyn malipo_service::Tx) -> Result<T, ServiceError> + Send + 'static,
) -> T {
    let p = p.clone();
    tokio::task::spawn_blocking(move || read(p.store(), &f)).await.unwrap().unwrap()
}

async fn stored_charge(p: &Platform, org: &str, id: &str) -> Option<Charge> {
    let (org, id) = (OrgId::parse(org).unwrap(), ChargeRef::parse(id).unwrap());
    db_read(p, move |tx| Ok(tx.charge(&org, Mode::Test, &id)?)).await
}

async fn snapshot(p: &Platform) -> LedgerSnapshot {
    db_read(p, |tx| Ok(tx.ledger_snapshot(Some(Mode::Test))?)).await
}

async fn violations(p: &Platform) -> Vec<Violation> {
    let p = p.clone();
    tokio::task::spawn_blocking(move || p.accounts().verify_ledger(Some(Mode::Test))).await.unwrap().unwrap()
}

async fn collection_account(p: &Platform, org: &str) -> Account {
    let key = AccountKey::Org { org_id: OrgId::parse(org).unwrap(), mode: Mode::Test, kind: AccountKind::Collection };
    db_read(p, move |tx| Ok(tx.find_account(&key)?)).await.unwrap()
}

/// A test wallet and its account, if the number has one.
async fn wallet_account(p: &Platform, msisdn: &str) -> Option<Account> {
    let msisdn = Msisdn::parse(msisdn).unwrap();
    db_read(p, move |tx| {
        let Some(w) = tx.wallet(Mode::Test, &msisdn)? else { return Ok(None) };
        Ok(tx.account(&w.account_id)?)
    })
    .await
}

/// Number of `charge` journals per source (charge ref).
fn charge_journals(s: &LedgerSnapshot) -> HashMap<String, usize> {
    let mut out = HashMap::new();
    for j in s.journals.iter().filter(|j| j.journal.kind == JournalKind::Charge) {
        *out.entry(j.journal.source_ref.clone()).or_insert(0) += 1;
    }
    out
}

/// Polls a charge through `base` until it is final, failing after `timeout`.
async fn wait_final(http: &reqwest::Client, base: &str, token: &str, id: &str, timeout: Duration) -> Value {
    let started = Instant::now();
    loop {
        let v: Value =
            http.get(format!("{base}/api/v1/partner/charges/{id}")).bearer_auth(token).send().await.unwrap().json().await.unwrap();
        if ["completed", "declined", "expired", "failed"].contains(&v["state"].as_str().unwrap_or("")) {
            return v;
        }
        assert!(started.elapsed() < timeout, "charge {id} still {} after {timeout:?}", v["state"]);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

// ----- 1. restart -----

async fn work_survives_a_restart(db: Db) {
    // Long enough that twenty creations on a loaded machine end before the first is due.
    let options = Options { sandbox_delay_ms: 4000, ..Options::default() };
    let app = TestApp::with(db, options.clone()).await;
    let (creds, token) = app.merchant_token().await;
    let mut charges = Vec::new();
    for i in 0..20 {
        charges.push(app.charge(&token, &format!("25471234{:04}", 5000 + i), &format!("{}.25", 100 + i)).await);
    }
    let (db, platform) = stop_keeping_db(app).await;
    // The first server stopped before any charge was due: all the work is left to the second.
    for c in &charges {
        let stored = stored_charge(&platform, &creds.org_id, &charge_ref(c)).await.unwrap();
        assert_eq!(stored.state, ChargeState::Pending, "{} was processed before the restart", stored.id);
    }
    drop(platform);
    let app = start_again(db, &options).await;
    let mut net = 0;
    for c in &charges {
        let done = app.wait_for(&token, &charge_ref(c), "completed", Duration::from_secs(10)).await;
        net += minor(&done["amount"]) - minor(&done["fee"]);
    }
    let journals = charge_journals(&snapshot(&app.platform).await);
    for c in &charges {
        assert_eq!(journals.get(&charge_ref(c)), Some(&1), "charge journals of {}", charge_ref(c));
    }
    let collection = collection_account(&app.platform, &creds.org_id).await;
    assert_eq!(collection.balance.get(), net);
    app.assert_ledger_ok().await;
    app.stop().await;
}

async fn stopping_while_workers_are_busy_strands_no_charge(db: Db) {
    let options = Options { sandbox_delay_ms: 0, ..Options::default() };
    let app = TestApp::with(db, options.clone()).await;
    let (creds, token) = app.merchant_token().await;
    let charges = futures_util::future::join_all((0..40).map(|i| {
        let token = &token;
        let app = &app;
        async move { app.charge(token, &format!("25471235{:04}", 6000 + i), "99.99").await }
    }))
    .await;
    // Stop while the workers are settling them: whatever was claimed is finished, nothing is
    // left under a lease that would hold it back for half a minute.
    let (db, platform) = stop_keeping_db(app).await;
    let now = platform.now();
    for c in &charges {
        let stored = stored_charge(&platform, &creds.org_id, &charge_ref(c)).await.unwrap();
        if let Some(next) = stored.next_action_at {
            assert_eq!(stored.state, ChargeState::Pending, "{} left {}", stored.id, stored.state);
            assert!(next <= now, "{} is still leased until {next} after the stop", stored.id);
        }
    }
    drop(platform);
    let app = start_again(db, &options).await;
    for c in &charges {
        app.wait_for(&token, &charge_ref(c), "completed", Duration::from_secs(5)).await;
    }
    let journals = charge_journals(&snapshot(&app.platform).await);
    assert!(charges.iter().all(|c| journals.get(&charge_ref(c)) == Some(&1)), "one charge journal each");
    app.assert_ledger_ok().await;
    app.stop().await;
}

// ----- 2. two instances on one PostgreSQL database -----

#[actix_web::test]
async fn two_instances_on_one_postgres_database_settle_each_charge_once() {
    let options = Options { sandbox_delay_ms: 0, ..Options::default() };
    let app = TestApp::with(Db::Postgres, options.clone()).await;
    let other = Instance::start(&harness::settings(&app.db.url, &options)).await;
    let bases = [app.base.clone(), other.base.clone()];
    let mut merchants: Vec<(Creds, String)> = Vec::new();
    for _ in 0..4 {
        merchants.push(app.merchant_token().await);
    }
    let http = reqwest::Client::new();
    // 200 charges, spread over both instances' ports and four merchants, 25 at a time.
    let mut charges: Vec<(usize, Value)> = Vec::new();
    for chunk in (0..200_usize).collect::<Vec<_>>().chunks(25) {
        let batch = futures_util::future::join_all(chunk.iter().map(|&i| {
            let (http, base, token) = (&http, &bases[i % 2], &merchants[i % 4].1);
            async move {
                let c = charge_at(http, base, token, &format!("2547200{:05}", 20_000 + i), &format!("{}.{:02}", 50 + i * 7, i % 100)).await;
                (i % 4, c)
            }
        }))
        .await;
        charges.extend(batch);
    }
    let mut expected_net = [0_i64; 4];
    for (n, (m, c)) in charges.iter().enumerate() {
        let done = wait_final(&http, &bases[(n + 1) % 2], &merchants[*m].1, &charge_ref(c), Duration::from_secs(30)).await;
        assert_eq!(done["state"], "completed", "{done}");
        expected_net[*m] += minor(&done["amount"]) - minor(&done["fee"]);
    }
    let snap = snapshot(&app.platform).await;
    let journals = charge_journals(&snap);
    for (_, c) in &charges {
        assert_eq!(journals.get(&charge_ref(c)), Some(&1), "charge journals of {}", charge_ref(c));
    }
    assert_eq!(journals.values().sum::<usize>(), 200, "charge journals in the ledger");
    for (m, (creds, _)) in merchants.iter().enumerate() {
        let collection = collection_account(&app.platform, &creds.org_id).await;
        assert_eq!(collection.balance.get(), expected_net[m], "merchant {m} received its net once");
        assert_eq!(collection.held.get(), 0);
    }
    assert!(violations(&app.platform).await.is_empty(), "{:?}", violations(&app.platform).await);
    other.stop().await;
    app.stop().await;
}

// ----- 3. a crashed worker's lease -----

async fn a_crashed_workers_claim_is_picked_up_after_its_lease(db: Db) {
    // The sandbox would answer only after a minute: whatever happens sooner is the lease's doing.
    let delay_ms = 60_000;
    let app = TestApp::with(db, Options { sandbox_delay_ms: delay_ms, ..Options::default() }).await;
    let (creds, token) = app.merchant_token().await;
    let c = app.charge(&token, "254712340042", "120").await;
    let id = ChargeRef::parse(&charge_ref(&c)).unwrap();
    let due = Timestamp::parse_rfc3339(c["created_at"].as_str().unwrap()).unwrap().plus_millis(delay_ms);
    let lease_until = app.platform.now().plus_seconds(1);
    // Another instance claims the charge when it comes due, and dies before working on it.
    let p = app.platform.clone();
    let claimed =
        tokio::task::spawn_blocking(move || write(p.store(), |tx| Ok(tx.claim_due_charges(due, lease_until, 10)?))).await.unwrap().unwrap();
    assert_eq!(claimed, vec![id.clone()], "the dying instance claims the due charge");
    let p = app.platform.clone();
    let again = tokio::task::spawn_blocking(move || {
        write(p.store(), |tx| Ok(tx.claim_due_charges(lease_until.plus_millis(-1), lease_until.plus_seconds(30), 10)?))
    })
    .await
    .unwrap()
    .unwrap();
    assert!(again.is_empty(), "a leased charge was claimed twice: {again:?}");
    // Nobody touches it while the lease holds...
    while app.platform.now() < lease_until.plus_millis(-150) {
        let v: Value = app.get(&token, &format!("/partner/charges/{id}")).await.json().await.unwrap();
        assert_eq!(v["state"], "pending", "processed during another worker's lease");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // ...and the running server's workers finish it once it lapses.
    let done = app.wait_for(&token, id.as_str(), "completed", Duration::from_secs(5)).await;
    let completed_at = Timestamp::parse_rfc3339(done["completed_at"].as_str().unwrap()).unwrap();
    assert!(completed_at >= lease_until, "completed at {completed_at}, lease until {lease_until}");
    let journals = charge_journals(&snapshot(&app.platform).await);
    assert_eq!(journals.get(id.as_str()), Some(&1));
    let collection = collection_account(&app.platform, &creds.org_id).await;
    assert_eq!(collection.balance.get(), minor(&done["amount"]) - minor(&done["fee"]));
    app.assert_ledger_ok().await;
    app.stop().await;
}

// ----- 4. expiry -----

async fn unanswered_prompts_expire_after_the_ttl(db: Db) {
    let app = TestApp::with(db, Options { charge_ttl_seconds: 1, ..Options::default() }).await;
    let (creds, token) = app.merchant_token().await;
    for msisdn in ["254700001009", "254700001002"] {
        let c = app.charge(&token, msisdn, "75").await;
        let done = app.wait_for(&token, &charge_ref(&c), "expired", Duration::from_secs(5)).await;
        assert_eq!(done["failure_reason"], "expired", "{done}");
        assert_eq!(done["transaction_id"], Value::Null);
        assert_eq!(done["completed_at"], Value::Null);
        let expires_at = Timestamp::parse_rfc3339(done["expires_at"].as_str().unwrap()).unwrap();
        let created_at = Timestamp::parse_rfc3339(done["created_at"].as_str().unwrap()).unwrap();
        let updated_at = Timestamp::parse_rfc3339(done["updated_at"].as_str().unwrap()).unwrap();
        assert_eq!(expires_at, created_at.plus_seconds(1), "the ttl is configurable");
        assert!(updated_at >= expires_at, "expired at {updated_at}, before its expiry {expires_at}");
        let stored = stored_charge(&app.platform, &creds.org_id, &charge_ref(&c)).await.unwrap();
        assert_eq!(stored.next_action_at, None, "a final charge has nothing left to do");
        if let Some(w) = wallet_account(&app.platform, msisdn).await {
            assert_eq!((w.balance.get(), w.held.get()), (TEST_WALLET_KES_MINOR, 0), "an expired prompt moves no money");
        }
    }
    assert_eq!(collection_account(&app.platform, &creds.org_id).await.balance.get(), 0);
    app.assert_ledger_ok().await;
    app.stop().await;
}

async fn a_sandbox_answer_after_the_ttl_comes_too_late(db: Db) {
    // The sandbox would approve after 1.5 s, but the prompt lives 1 s: it expires, unpaid.
    let app = TestApp::with(db, Options { charge_ttl_seconds: 1, sandbox_delay_ms: 1500, ..Options::default() }).await;
    let (creds, token) = app.merchant_token().await;
    let c = app.charge(&token, "254712340077", "60").await;
    let done = app.wait_for(&token, &charge_ref(&c), "expired", Duration::from_secs(5)).await;
    assert_eq!(done["failure_reason"], "expired", "{done}");
    assert!(wallet_account(&app.platform, "254712340077")
        .await
        .is_none_or(|w| w.balance.get() == TEST_WALLET_KES_MINOR && w.held.get() == 0));
    assert_eq!(collection_account(&app.platform, &creds.org_id).await.balance.get(), 0);
    app.assert_ledger_ok().await;
    app.stop().await;
}

// ----- 5. graceful shutdown -----

/// Reads an HTTP/1.1 response to its end (the request asked `Connection: close`) and returns the
/// status and the body, checking the body is complete.
fn parse_response(raw: &[u8]) -> Result<(u16, String), String> {
    let text = String::from_utf8_lossy(raw);
    let (head, body) = text.split_once("\r\n\r\n").ok_or_else(|| format!("truncated response head: {text:?}"))?;
    let status = head.split(' ').nth(1).and_then(|s| s.parse::<u16>().ok()).ok_or_else(|| format!("bad status line: {head:?}"))?;
    let length = head
        .lines()
        .find_map(|l| l.split_once(':').filter(|(k, _)| k.eq_ignore_ascii_case("content-length")).map(|(_, v)| v.trim().to_owned()))
        .ok_or_else(|| format!("no content-length: {head:?}"))?;
    let length: usize = length.parse().map_err(|e| format!("content-length {length}: {e}"))?;
    if body.len() != length {
        return Err(format!("body of {} bytes, content-length {length}: {body:?}", body.len()));
    }
    Ok((status, body.to_owned()))
}

async fn graceful_shutdown_completes_accepted_requests(db: Db) {
    const N: usize = 20;
    let app = TestApp::spawn(db).await;
    let (creds, token) = app.merchant_token().await;
    let addr = app.running.addr;
    let (sent_tx, sent_rx) = std::sync::mpsc::channel::<()>();
    let go = std::sync::Arc::new(std::sync::Barrier::new(N + 1));
    // Each client sends the head and half the body, then waits: the request is accepted and in
    // flight (the server is reading its body) when the server is told to stop.
    let clients: Vec<std::thread::JoinHandle<Result<Vec<u8>, String>>> = (0..N)
        .map(|i| {
            let (token, sent, go) = (token.clone(), sent_tx.clone(), go.clone());
            std::thread::spawn(move || {
                let body = json!({"payer_msisdn": format!("25471111{:04}", 2000 + i), "amount": "42.50", "reference": format!("SHUT-{i}"), "idem": format!("shutdown-{i}")})
                    .to_string();
                let head = format!(
                    "POST /api/v1/partner/stk HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                let (first, rest) = body.as_bytes().split_at(body.len() / 2);
                let connected = TcpStream::connect(addr).and_then(|mut s| {
                    s.set_read_timeout(Some(Duration::from_secs(15)))?;
                    s.write_all(head.as_bytes())?;
                    s.write_all(first)?;
                    s.flush()?;
                    Ok(s)
                });
                sent.send(()).unwrap();
                go.wait();
                let mut s = connected.map_err(|e| format!("connect/send: {e}"))?;
                s.write_all(rest).map_err(|e| format!("sending the rest of the body: {e}"))?;
                let mut raw = Vec::new();
                s.read_to_end(&mut raw).map_err(|e| format!("reading the response: {e} (after {} bytes)", raw.len()))?;
                Ok(raw)
            })
        })
        .collect();
    tokio::task::spawn_blocking(move || (0..N).for_each(|_| sent_rx.recv().unwrap())).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let TestApp { running, platform, db: _db, .. } = app;
    let stop = tokio::spawn(running.server.stop(true));
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!stop.is_finished(), "the server stopped with requests in flight");
    let go2 = go.clone();
    tokio::task::spawn_blocking(move || go2.wait()).await.unwrap();
    let mut refs = Vec::new();
    for (i, c) in clients.into_iter().enumerate() {
        let raw = tokio::task::spawn_blocking(move || c.join().unwrap()).await.unwrap();
        let raw = raw.unwrap_or_else(|e| panic!("request {i} was accepted but cut off: {e}"));
        let (status, body) = parse_response(&raw).unwrap_or_else(|e| panic!("request {i}: incomplete response: {e}"));
        assert_eq!(status, 200, "request {i}: {body}");
        let v: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(v["state"], "pending");
        refs.push(charge_ref(&v));
    }
    tokio::time::timeout(Duration::from_secs(10), stop).await.expect("graceful stop hangs").unwrap();
    tokio::time::timeout(Duration::from_secs(10), running.done).await.expect("workers do not stop").unwrap().unwrap();
    assert_eq!(refs.len(), N);
    for r in &refs {
        let stored = stored_charge(&platform, &creds.org_id, r).await;
        assert!(stored.is_some_and(|c| c.amount.get() == 4250), "charge {r} answered 200 but is not stored");
    }
}

// ----- 6. concurrency on one payer -----

async fn concurrent_charges_to_one_new_payer_all_complete(db: Db) {
    let database = match db {
        Db::Sqlite => TestDatabase::sqlite(),
        Db::Postgres => TestDatabase::postgres(),
    };
    // Many worker loops, so that several settle charges of the same new payer at once.
    let mut settings = harness::settings(&database.url, &Options { sandbox_delay_ms: 0, ..Options::default() });
    settings.workers = 8;
    let app = TestApp::on(database, settings).await;
    concurrent_charges_to_one_payer(&app, "254711111111", None).await;
    app.stop().await;
}

async fn concurrent_approvals_provision_one_wallet(db: Db) {
    // The sandbox would answer only after a minute; the customer approves every prompt at once.
    let app = TestApp::with(db, Options { sandbox_delay_ms: 60_000, ..Options::default() }).await;
    concurrent_charges_to_one_payer(&app, "254722222222", Some("approve")).await;
    app.stop().await;
}

/// 30 concurrent charges to one payer without a wallet (answered by `simulate` when given) all
/// complete, the payer gets exactly one wallet, and it pays exactly the sum.
async fn concurrent_charges_to_one_payer(app: &TestApp, msisdn: &str, simulate: Option<&str>) {
    const N: usize = 30;
    let (creds, token) = app.merchant_token().await;
    assert!(wallet_account(&app.platform, msisdn).await.is_none());
    let charges = futures_util::future::join_all((0..N).map(|i| {
        let token = &token;
        async move { app.charge(token, msisdn, &format!("{}.{:02}", 10 + i * 3, (i * 17) % 100)).await }
    }))
    .await;
    if let Some(action) = simulate {
        let answers = futures_util::future::join_all(charges.iter().map(|c| {
            let path = format!("/sandbox/charges/{}/simulate", charge_ref(c));
            let token = &token;
            async move {
                // Thirty approvals queue on one wallet's row: past the pool's checkout wait the
                // server says "not now" (503), and the customer's phone asks again with the
                // same key, as a gateway would, until a deadline.
                let key = uuid::Uuid::new_v4().to_string();
                let deadline = Instant::now() + Duration::from_secs(30);
                loop {
                    let r = app.post(token, &path, &json!({"action": action}), Some(&key)).await;
                    let status = r.status();
                    if status != 503 || Instant::now() > deadline {
                        return (status, r.text().await.unwrap());
                    }
                    assert!(r.headers().contains_key("retry-after"), "a 503 says when to retry");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }))
        .await;
        for (status, body) in answers {
            assert_eq!(status, 200, "simulate: {body}");
        }
    }
    let (mut total, mut net) = (0, 0);
    for c in &charges {
        let done = app.wait_for(&token, &charge_ref(c), "completed", Duration::from_secs(15)).await;
        total += minor(&done["amount"]);
        net += minor(&done["amount"]) - minor(&done["fee"]);
    }
    let wallet = wallet_account(&app.platform, msisdn).await.expect("the payer has a wallet");
    assert_eq!(wallet.balance.get(), TEST_WALLET_KES_MINOR - total, "the wallet paid exactly the sum");
    assert_eq!(wallet.held.get(), 0, "no reservation is left");
    let snap = snapshot(&app.platform).await;
    let wallets = snap.accounts.iter().filter(|a| a.kind == AccountKind::Wallet && a.owner_msisdn.as_deref() == Some(msisdn)).count();
    assert_eq!(wallets, 1, "one wallet account for the payer");
    let fundings = snap.journals.iter().filter(|j| j.journal.kind == JournalKind::SandboxFunding && j.journal.source_ref == msisdn).count();
    assert_eq!(fundings, 1, "the wallet was funded once");
    let journals = charge_journals(&snap);
    assert!(charges.iter().all(|c| journals.get(&charge_ref(c)) == Some(&1)), "one charge journal each");
    assert_eq!(collection_account(&app.platform, &creds.org_id).await.balance.get(), net);
    app.assert_ledger_ok().await;
}

// ----- 7. money conservation -----

async fn money_is_conserved_and_tampering_is_detected(db: Db) {
    let app = TestApp::with(db, Options { charge_ttl_seconds: 2, ..Options::default() }).await;
    let (creds, token) = app.merchant_token().await;
    let mut expected: Vec<(Value, &str, &str)> = Vec::new();
    for (msisdn, state, reason) in [
        ("254712345678", "completed", ""),
        ("254712345679", "completed", ""),
        ("254733333333", "completed", ""),
        ("254700001001", "declined", "declined_by_customer"),
        ("254700001002", "expired", "expired"),
        ("254700001003", "failed", "insufficient_funds"),
        ("254700001004", "declined", "pin_attempts_exceeded"),
        ("254700001005", "failed", "wallet_locked"),
        ("254700001006", "failed", "limit_exceeded"),
        ("254700001007", "failed", "payer_not_found"),
    ] {
        expected.push((app.charge(&token, msisdn, "333.33").await, state, reason));
    }
    // The sandbox's `fail` and `expire` answers, on prompts that would otherwise stay pending.
    for (action, state, reason) in [("fail", "failed", "insufficient_funds"), ("expire", "expired", "expired")] {
        let c = app.charge(&token, "254700001009", "10").await;
        let r = app
            .post(
                &token,
                &format!("/sandbox/charges/{}/simulate", charge_ref(&c)),
                &json!({"action": action}),
                Some(&uuid::Uuid::new_v4().to_string()),
            )
            .await;
        assert_eq!(r.status(), 200, "simulate {action}: {}", r.text().await.unwrap());
        expected.push((c, state, reason));
    }
    let mut completed = 0;
    for (c, state, reason) in &expected {
        let done = app.wait_for(&token, &charge_ref(c), state, Duration::from_secs(8)).await;
        if *state == "completed" {
            completed += minor(&done["amount"]);
        } else {
            assert_eq!(done["failure_reason"], *reason, "{done}");
        }
    }
    let snap = snapshot(&app.platform).await;
    let mut per_currency: HashMap<Currency, i64> = HashMap::new();
    for a in &snap.accounts {
        *per_currency.entry(a.currency).or_insert(0) += a.balance.get();
        assert_eq!(a.held.get(), 0, "reservation left on {}", a.id);
    }
    assert!(per_currency.values().all(|&sum| sum == 0), "test ledger balances do not sum to zero: {per_currency:?}");
    let kes = Currency::new("KES").unwrap();
    let sum =
        |kind: AccountKind| -> i64 { snap.accounts.iter().filter(|a| a.kind == kind && a.currency == kes).map(|a| a.balance.get()).sum() };
    let wallets = snap.accounts.iter().filter(|a| a.kind == AccountKind::Wallet).count();
    assert!(wallets >= 3, "the paying customers have wallets");
    let issued = i64::try_from(wallets).unwrap() * TEST_WALLET_KES_MINOR;
    assert_eq!(sum(AccountKind::SandboxFunding), -issued, "sandbox funding is negative by what it gave the wallets");
    assert_eq!(sum(AccountKind::Wallet), issued - completed, "wallets paid exactly the completed charges");
    assert_eq!(sum(AccountKind::Collection) + sum(AccountKind::Revenue), completed, "merchants and fees got exactly that");
    assert!(violations(&app.platform).await.is_empty(), "{:?}", violations(&app.platform).await);

    let collection = collection_account(&app.platform, &creds.org_id).await;
    app.db.store.raw_execute("UPDATE accounts SET balance = balance + 1 WHERE kind = 'collection'").unwrap();
    let found = violations(&app.platform).await;
    let mismatch = found.iter().any(|v| {
        matches!(v, Violation::BalanceMismatch { account, stored, computed }
            if *account == collection.id && *stored == collection.balance.get() + 1 && *computed == collection.balance.get())
    });
    assert!(mismatch, "the tampered balance is not reported: {found:?}");
    app.stop().await;
}
