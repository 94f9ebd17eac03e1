//! The database server's death (issue 32): three Patroni-managed PostgreSQL nodes in synchronous
//! mode (`scripts/cluster/up.sh`), two Malipo instances on the multi-host URL under a load of
//! charges, payouts and reversals; the primary is killed (SIGKILL of its Patroni and postmaster),
//! a standby is promoted, then the new primary is frozen (SIGSTOP: a host that hangs), and
//! another is promoted. Meanwhile every answer is 200 or 503 with `Retry-After` (a reversal of
//! a charge not yet completed may be 409), none later than the deadline allows; afterwards every
//! unanswered request, retried with its key, settles, every acknowledged object exists exactly
//! once, everything reaches a final state, every webhook is delivered, and `malipo ledger
//! verify` is clean. Before the load, the instances' reports (`MALIPO_DATABASE_READ_URL` on the
//! standbys) are shown to read on a standby within the lag bound and on the primary past it.

use std::collections::HashMap;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use diesel::prelude::*;
use serde_json::{json, Value};

use crate::crash::{free_port, ready, token, Serve};
use crate::harness::TEST_WEBHOOK_KEY;
use crate::webhooks_delivery::Receiver;

/// The cluster of `scripts/cluster/up.sh` in a directory of its own, brought down on drop.
struct Cluster {
    dir: std::path::PathBuf,
    url: String,
}

fn script(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/cluster").join(name)
}

impl Cluster {
    fn up() -> Cluster {
        let dir = std::env::temp_dir().join(format!("malipo-cluster-{}", uuid::Uuid::new_v4().simple()));
        let out = Command::new("bash").arg(script("up.sh")).arg(&dir).output().unwrap();
        let url = String::from_utf8_lossy(&out.stdout).lines().last().unwrap_or_default().trim().to_owned();
        assert!(out.status.success() && url.starts_with("postgres://"), "up.sh failed:\n{}", String::from_utf8_lossy(&out.stderr));
        Cluster { dir, url }
    }

    /// `ctl.sh DIR args…`: its output (run off the test's runtime, whose load goes on).
    async fn ctl(&self, args: &[&str]) -> String {
        let mut cmd = Command::new("bash");
        cmd.arg(script("ctl.sh")).arg(&self.dir).args(args);
        let out = actix_web::rt::task::spawn_blocking(move || cmd.output()).await.unwrap().unwrap();
        assert!(out.status.success(), "ctl.sh {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = Command::new("bash").arg(script("down.sh")).arg(&self.dir).output();
    }
}

/// One request of the load, as sent, and how it was answered.
#[derive(Clone, Debug)]
struct Sent {
    path: &'static str,
    body: Value,
    key: String,
    /// The object's id once answered 200.
    id: Option<String>,
}

#[derive(Default)]
struct Tally {
    sent: Vec<Sent>,
    /// Completed charges' refs with when they were acknowledged (reversals take older ones).
    charges: Vec<(String, Instant)>,
    answers: HashMap<u16, usize>,
    /// When each acknowledged request began and ended (since the test began).
    acks: Vec<(Duration, Duration)>,
    slowest: Duration,
    errors: Vec<String>,
}

async fn send(http: &reqwest::Client, base: &str, token: &str, s: &Sent) -> Result<(u16, Value, bool), String> {
    let r = http
        .post(format!("{base}/api/v1{}", s.path))
        .bearer_auth(token)
        .header("Idempotency-Key", &s.key)
        .json(&s.body)
        .send()
        .await
        .map_err(|e| e.to_string())?;
    let status = r.status().as_u16();
    let retry_after = r.headers().contains_key("retry-after");
    let body: Value = r.json().await.unwrap_or(Value::Null);
    Ok((status, body, retry_after))
}

fn id_of(path: &str, body: &Value) -> Option<String> {
    let field = match path {
        "/partner/stk" => "charge_ref",
        "/payouts" => "payout_ref",
        _ => "reversal_id",
    };
    body[field].as_str().map(str::to_owned)
}

/// One load loop against `base` until `stop`.
async fn load(base: String, token: String, tally: Arc<Mutex<Tally>>, stop: Arc<std::sync::atomic::AtomicBool>, lane: usize) {
    let http = reqwest::Client::builder().timeout(Duration::from_secs(10)).build().unwrap();
    let mut n = 0_usize;
    while !stop.load(std::sync::atomic::Ordering::SeqCst) {
        n += 1;
        let key = uuid::Uuid::new_v4().to_string();
        let reference = format!("FO-{lane}-{n}");
        let sent = match n % 4 {
            0 => {
                let old = {
                    let t = tally.lock().unwrap();
                    let old: Vec<&String> =
                        t.charges.iter().filter(|(_, at)| at.elapsed() > Duration::from_secs(5)).map(|(r, _)| r).collect();
                    (!old.is_empty()).then(|| old[(n * 7919) % old.len()].clone())
                };
                match old {
                    Some(charge_ref) => Sent {
                        path: "/reversals",
                        body: json!({"charge_ref": charge_ref, "amount": "1", "reason": "failover test"}),
                        key,
                        id: None,
                    },
                    None => continue,
                }
            }
            1 => Sent {
                path: "/payouts",
                body: json!({"payee_msisdn": "254712345678", "amount": "5", "reference": reference}),
                key,
                id: None,
            },
            _ => Sent {
                path: "/partner/stk",
                body: json!({"payer_msisdn": "254712345678", "amount": "10", "reference": reference, "idem": key}),
                key,
                id: None,
            },
        };
        let started = Instant::now();
        let answer = send(&http, &base, &token, &sent).await;
        let took = started.elapsed();
        record(&tally, sent, answer, took);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Seconds since the test began (for messages).
fn started_at() -> Duration {
    static BEGAN: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    BEGAN.get_or_init(Instant::now).elapsed()
}

/// Counts an answer of the load, and keeps the request unless it was refused for good.
fn record(tally: &Mutex<Tally>, mut sent: Sent, answer: Result<(u16, Value, bool), String>, took: Duration) {
    let mut t = tally.lock().unwrap();
    t.slowest = t.slowest.max(took);
    match answer {
        Ok((200, body, _)) => {
            sent.id = id_of(sent.path, &body);
            let ended = started_at();
            t.acks.push((ended.saturating_sub(took), ended));
            if sent.path == "/partner/stk" {
                t.charges.push((sent.id.clone().unwrap(), Instant::now()));
            }
        }
        Ok((503, _, true)) => {}
        // A reversal of a charge not completed yet, or reversed in full: refused, nothing done.
        Ok((409 | 422, _, _)) if sent.path == "/reversals" => {
            *t.answers.entry(409).or_default() += 1;
            return;
        }
        Ok((status, body, retry_after)) => t.errors.push(format!("{} answered {status} (Retry-After: {retry_after}): {body}", sent.path)),
        Err(e) => t.errors.push(format!("{} ended at {:?}, failed after {took:?}: {e}", sent.path, started_at())),
    }
    let status = if sent.id.is_some() { 200 } else { 503 };
    *t.answers.entry(status).or_default() += 1;
    t.sent.push(sent);
}

/// A value of the instance's `/metrics`.
async fn metric(http: &reqwest::Client, base: &str, name: &str) -> Option<f64> {
    let text =
        http.get(format!("{base}/metrics")).bearer_auth(crate::harness::TEST_METRICS_TOKEN).send().await.unwrap().text().await.unwrap();
    text.lines().find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
}

/// Polls `/metrics` until `name` has `value` (deadline 30 s).
async fn wait_metric(http: &reqwest::Client, base: &str, name: &str, value: f64) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while metric(http, base, name).await != Some(value) {
        assert!(Instant::now() < deadline, "{name} never {value}: {:?}", metric(http, base, name).await);
        actix_web::rt::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The charge refs of the first page of `GET /charges` (a report: read on the replica).
async fn listed(http: &reqwest::Client, base: &str, token: &str) -> Vec<String> {
    let page: Value =
        http.get(format!("{base}/api/v1/partner/charges?limit=100")).bearer_auth(token).send().await.unwrap().json().await.unwrap();
    page["data"].as_array().unwrap_or_else(|| panic!("{page}")).iter().map(|c| c["charge_ref"].as_str().unwrap().to_owned()).collect()
}

/// Lists read on a standby while it is within the lag bound (5 s), and on the primary once it is
/// not: with the standbys applying each commit 15 s late (`recovery_min_apply_delay`; Patroni
/// resumes a paused replay by itself), a new charge is missing from the list until the bound has
/// passed (so the list was read there), then listed (read on the primary); without the delay the
/// standby is used again.
async fn reports_follow_the_replica_lag(cluster: &Cluster, http: &reqwest::Client, base: &str, token: &str) -> Sent {
    wait_metric(http, base, "malipo_db_replica_in_use", 1.0).await;
    cluster.ctl(&["apply-delay", "15s"]).await;
    let key = uuid::Uuid::new_v4().to_string();
    let body = json!({"payer_msisdn": "254712345678", "amount": "10", "reference": "REPLICA-1", "idem": key});
    let mut sent = Sent { path: "/partner/stk", body, key, id: None };
    let (status, body, _) = send(http, base, token, &sent).await.unwrap();
    assert_eq!(status, 200, "{body}");
    let charge = id_of(sent.path, &body).unwrap();
    sent.id = Some(charge.clone());
    let paused = Instant::now();
    let stale = listed(http, base, token).await;
    let within = paused.elapsed();
    if within < Duration::from_secs(4) {
        assert!(!stale.contains(&charge), "listed {within:?} after it was made: the list was not read on a standby");
    }
    wait_metric(http, base, "malipo_db_replica_in_use", 0.0).await;
    let behind = paused.elapsed();
    // The bound counts from the last measurement before the commit (every 0.5 s).
    assert!(behind >= Duration::from_secs(4), "the standby counted as too far behind after {behind:?}, within its bound of 5 s");
    assert!(listed(http, base, token).await.contains(&charge), "read on the primary once the standby is too far behind");
    assert!(metric(http, base, "malipo_db_replica_fallbacks_total").await.unwrap() >= 1.0);
    cluster.ctl(&["apply-delay", "0"]).await;
    wait_metric(http, base, "malipo_db_replica_in_use", 1.0).await;
    assert!(listed(http, base, token).await.contains(&charge), "the standby caught up");
    eprintln!("failover: reports on the standby; {within:?} stale; on the primary after {behind:?}");
    sent
}

fn cli(url: &str, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_malipo"))
        .args(args)
        .env("MALIPO_DATABASE_URL", url)
        .env("MALIPO_WEBHOOK_KEY", TEST_WEBHOOK_KEY)
        .output()
        .unwrap()
}

fn count(conn: &mut PgConnection, sql: &str) -> i64 {
    #[derive(QueryableByName)]
    struct N {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        n: i64,
    }
    diesel::sql_query(sql).get_result::<N>(conn).unwrap().n
}

#[actix_web::test]
async fn a_primary_killed_then_one_frozen_loses_nothing_acknowledged() {
    started_at();
    let cluster = Cluster::up();
    let created = cli(&cluster.url, &["org", "create", "--name", "Failover Ltd", "--kind", "merchant", "--json"]);
    assert!(created.status.success(), "{}", String::from_utf8_lossy(&created.stderr));
    let org: Value = serde_json::from_slice(created.stdout.split(|b| *b == b'\n').rfind(|l| l.starts_with(b"{")).unwrap()).unwrap();
    let funded =
        cli(&cluster.url, &["account", "fund", "--org", org["organisation_id"].as_str().unwrap(), "--mode", "test", "--amount", "100000"]);
    assert!(funded.status.success(), "{}", String::from_utf8_lossy(&funded.stderr));
    let ports = [free_port(), free_port()];
    // Reports on the standbys (`MALIPO_DATABASE_READ_URL`), within 5 s of the primary.
    let read_url = cluster.url.replace("target_session_attrs=read-write", "target_session_attrs=prefer-standby");
    assert_ne!(read_url, cluster.url);
    let more =
        [("MALIPO_DATABASE_READ_URL", read_url.as_str()), ("MALIPO_DB_READ_MAX_LAG_MS", "5000"), ("MALIPO_WEBHOOK_ALLOW_PRIVATE", "true")];
    let _servers: Vec<Serve> = ports.iter().map(|p| Serve::start_with(&cluster.url, *p, &more)).collect();
    let http = reqwest::Client::new();
    let bases: Vec<String> = ports.iter().map(|p| format!("http://127.0.0.1:{p}")).collect();
    for base in &bases {
        ready(&http, base).await;
    }
    let token = token(&http, &bases[0], org["client_id"].as_str().unwrap(), org["client_secret"].as_str().unwrap()).await;
    // Every event delivered, through the failovers.
    let receiver = Receiver::answering(200).await;
    let hook = http
        .post(format!("{}/api/v1/webhooks/endpoints", bases[0]))
        .bearer_auth(&token)
        .header("Idempotency-Key", uuid::Uuid::new_v4().to_string())
        .json(&json!({"url": receiver.url(), "events": ["*"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(hook.status(), 200, "{}", hook.text().await.unwrap());
    let made = reports_follow_the_replica_lag(&cluster, &http, &bases[0], &token).await;

    let tally = Arc::new(Mutex::new(Tally { sent: vec![made], ..Tally::default() }));
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let loops: Vec<_> = (0..4)
        .map(|lane| actix_web::rt::spawn(load(bases[lane % 2].clone(), token.clone(), Arc::clone(&tally), Arc::clone(&stop), lane)))
        .collect();
    let pause = |s| actix_web::rt::time::sleep(Duration::from_secs(s));
    pause(6).await;
    let killed = cluster.ctl(&["kill-leader"]).await;
    let kill_at = started_at();
    eprintln!("failover: killed at {kill_at:?}");
    let promoted = cluster.ctl(&["wait-leader", &killed]).await;
    pause(4).await;
    // The killed node back as a standby: with one node dead and one frozen, strict synchronous
    // mode would rightly let no commit through.
    cluster.ctl(&["start", &killed]).await;
    cluster.ctl(&["wait-standby", &killed]).await;
    pause(2).await;
    let frozen = cluster.ctl(&["freeze-leader"]).await;
    let freeze_at = started_at();
    eprintln!("failover: frozen at {freeze_at:?}");
    let second = cluster.ctl(&["wait-leader", &frozen]).await;
    pause(6).await;
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    for l in loops {
        l.await.unwrap();
    }
    cluster.ctl(&["thaw", &frozen]).await;
    eprintln!("failover: killed {killed} -> {promoted}; froze {frozen} -> {second}");

    let mut t = std::mem::take(&mut *tally.lock().unwrap());
    assert!(t.errors.is_empty(), "answers other than 200 or 503 with Retry-After: {:#?}", t.errors);
    assert!(t.slowest < Duration::from_secs(8), "a request waited {:?}", t.slowest);
    assert!(t.answers.get(&200).copied().unwrap_or(0) > 50, "too little was acknowledged: {:?}", t.answers);
    eprintln!("failover: answers {:?}, slowest {:?}", t.answers, t.slowest);
    // From each death to the first acknowledged request begun after it (every connection to the
    // dead server is gone by then, so it went to the new primary), for `bench/failover.sh`.
    let first_after = |at: Duration| t.acks.iter().filter(|(began, _)| *began > at).map(|(_, ended)| *ended - at).min();
    // Recovered without a restart, with the load still running: a request begun after each
    // death was acknowledged (the connections to a frozen server are all dropped once one of
    // them missed its deadline, not each after its own).
    let after_kill = first_after(kill_at).expect("no request begun after the kill was acknowledged");
    let after_freeze = first_after(freeze_at).expect("no request begun after the freeze was acknowledged");
    println!(
        "BENCH {}",
        json!({"killed_first_ack_s": after_kill.as_secs_f64(), "frozen_first_ack_s": after_freeze.as_secs_f64(),
               "slowest_s": t.slowest.as_secs_f64(), "acknowledged": t.answers.get(&200), "unavailable": t.answers.get(&503)})
    );

    // Every unanswered request, retried with its key and body, settles: done once (200), or,
    // for a reversal whose charge other reversals used up meanwhile, refused with nothing done
    // (had the first attempt committed, its retry would have replayed its 200).
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut refused = Vec::new();
    for (i, s) in t.sent.iter_mut().enumerate().filter(|(_, s)| s.id.is_none()) {
        loop {
            match send(&http, &bases[1], &token, s).await {
                Ok((200, body, _)) => {
                    s.id = id_of(s.path, &body);
                    break;
                }
                Ok((422, body, _)) if s.path == "/reversals" && body["code"] == "reversal_exceeds_original" => {
                    refused.push(i);
                    break;
                }
                other => assert!(Instant::now() < deadline, "{} {} never settled: {other:?}", s.path, s.key),
            }
            actix_web::rt::time::sleep(Duration::from_millis(200)).await;
        }
    }
    for i in refused.into_iter().rev() {
        t.sent.remove(i);
    }

    // Each acknowledged object exactly once, and nothing else.
    let mut conn = PgConnection::establish(&cluster.url).unwrap();
    for (path, table) in [("/partner/stk", "charges"), ("/payouts", "payouts"), ("/reversals", "reversals")] {
        let ids: std::collections::HashSet<&str> = t.sent.iter().filter(|s| s.path == path).map(|s| s.id.as_deref().unwrap()).collect();
        let keys = t.sent.iter().filter(|s| s.path == path).count();
        assert_eq!(ids.len(), keys, "{path}: one object per key");
        let stored =
            count(&mut conn, &format!("SELECT count(*) AS n FROM {table} WHERE org_id = '{}'", org["organisation_id"].as_str().unwrap()));
        assert_eq!(usize::try_from(stored).unwrap(), keys, "{table}: exactly the acknowledged objects");
    }
    // Everything reaches a final state.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let open = count(&mut conn, "SELECT count(*) AS n FROM charges WHERE state IN ('pending', 'authorised')")
            + count(&mut conn, "SELECT count(*) AS n FROM payouts WHERE state = 'pending'");
        if open == 0 {
            break;
        }
        assert!(Instant::now() < deadline, "{open} charges and payouts still open");
        actix_web::rt::time::sleep(Duration::from_millis(200)).await;
    }
    // Every event's delivery succeeded, and the receiver has each event.
    let org_id = org["organisation_id"].as_str().unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let of_org = format!("FROM deliveries d JOIN events e ON e.id = d.event_id WHERE e.org_id = '{org_id}'");
    loop {
        let undelivered = count(&mut conn, &format!("SELECT count(*) AS n {of_org} AND d.state <> 'succeeded'"));
        if undelivered == 0 {
            break;
        }
        assert!(Instant::now() < deadline, "{undelivered} webhook deliveries not delivered");
        actix_web::rt::time::sleep(Duration::from_millis(200)).await;
    }
    #[derive(QueryableByName)]
    struct Id {
        #[diesel(sql_type = diesel::sql_types::Text)]
        id: String,
    }
    let events: Vec<Id> = diesel::sql_query(format!("SELECT d.event_id AS id {of_org}")).load(&mut conn).unwrap();
    let got: std::collections::HashSet<String> = receiver.hits().iter().map(|h| h.id().to_owned()).collect();
    let missing: Vec<&str> = events.iter().map(|e| e.id.as_str()).filter(|id| !got.contains(*id)).collect();
    assert!(events.len() > 50 && missing.is_empty(), "{} events, not received: {missing:?}", events.len());
    eprintln!("failover: {} events delivered", events.len());
    let verified = cli(&cluster.url, &["ledger", "verify", "--mode", "test"]);
    assert!(
        verified.status.success(),
        "ledger verify: {}{}",
        String::from_utf8_lossy(&verified.stdout),
        String::from_utf8_lossy(&verified.stderr)
    );
}
