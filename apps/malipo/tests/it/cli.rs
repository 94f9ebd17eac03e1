//! The operator commands of contract section 13, run as the compiled binary.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use diesel::connection::SimpleConnection;
use diesel::{Connection, PgConnection};
use malipo_core::{Mode, OrgId};
use malipo_ledger::AccountKind;
use malipo_service::{read, AccountKey, Platform, ServiceError, Store};
use malipo_store_diesel::testing::{TestDatabase, DEFAULT_POSTGRES_URL};
use malipo_store_diesel::DieselStore;
use serde_json::{json, Value};

use crate::harness::{self, Db, Options};

crate::on_both!(
    migrate_applies_the_schema_to_an_empty_database,
    org_create_prints_a_test_credential_with_the_kinds_scopes,
    credentials_issue_live_and_revoke,
    account_fund_and_ledger_verify,
);

/// How long a command may take.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a server may take to print its banner.
const BANNER_TIMEOUT: Duration = Duration::from_secs(30);

// ----- helpers -----

/// A fresh directory under the system's temporary directory, deleted on drop.
pub(crate) struct TempDir(PathBuf);

impl TempDir {
    pub(crate) fn new() -> TempDir {
        let dir = std::env::temp_dir().join(format!("malipo-cli-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    pub(crate) fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `malipo ARGS` in `dir` with only the given configuration (none inherited from this process).
fn command(dir: &Path, url: Option<&str>, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_malipo"));
    cmd.args(args).current_dir(dir);
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("MALIPO_") {
            cmd.env_remove(name);
        }
    }
    cmd.env("MALIPO_LOG", "error").env_remove("MALLOC_ARENA_MAX");
    if let Some(url) = url {
        cmd.env("MALIPO_DATABASE_URL", url);
        // A PostgreSQL deployment shares one key (client secrets are hashed under a key derived
        // from it): the key of the tests' own platforms and servers.
        if url.starts_with("postgres") {
            cmd.env("MALIPO_WEBHOOK_KEY", crate::harness::TEST_WEBHOOK_KEY);
        }
    }
    cmd
}

/// What a finished command said.
#[derive(Debug)]
pub(crate) struct Ran {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Ran {
    /// Exit non-zero, nothing on stdout, and an operator's message on stderr naming `mention`.
    fn refused(&self, mention: &str) {
        assert!(!matches!(self.code, Some(0) | None), "should have failed: {self:?}");
        assert!(self.stdout.trim().is_empty(), "nothing on stdout when refused: {self:?}");
        assert!(self.stderr.contains(mention), "the message should name {mention:?}: {self:?}");
        for debug in ["FieldError", "Validation(", "NotFound", "Store("] {
            assert!(!self.stderr.contains(debug), "the message is a debug dump: {self:?}");
        }
    }

    pub(crate) fn ok(&self) -> &Self {
        assert_eq!(self.code, Some(0), "command failed: {self:?}");
        self
    }

    /// The single JSON object the command printed.
    pub(crate) fn json(&self) -> Value {
        let lines: Vec<&str> = self.stdout.lines().filter(|l| !l.trim().is_empty()).collect();
        assert_eq!(lines.len(), 1, "expected one JSON line on stdout: {self:?}");
        serde_json::from_str(lines[0]).unwrap_or_else(|e| panic!("not JSON ({e}): {self:?}"))
    }
}

/// Runs `malipo ARGS` to completion (bounded) on a blocking thread.
pub(crate) async fn malipo(url: &str, args: &[&str]) -> Ran {
    let dir = TempDir::new();
    run_in(dir.path(), Some(url), args).await
}

async fn run_in(dir: &Path, url: Option<&str>, args: &[&str]) -> Ran {
    let mut cmd = command(dir, url, args);
    let shown = args.join(" ");
    tokio::task::spawn_blocking(move || {
        let child = cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        let pid = child.id();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(child.wait_with_output());
        });
        let out: Output = match rx.recv_timeout(COMMAND_TIMEOUT) {
            Ok(out) => out.unwrap(),
            Err(_) => {
                let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
                panic!("`malipo {shown}` did not finish within {COMMAND_TIMEOUT:?}");
            }
        };
        Ran {
            code: out.status.code(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    })
    .await
    .unwrap()
}

fn fresh(db: Db) -> TestDatabase {
    match db {
        Db::Sqlite => TestDatabase::sqlite(),
        Db::Postgres => TestDatabase::postgres(),
    }
}

/// A platform on the database, as the server would build it.
async fn platform(url: &str) -> Platform {
    let settings = harness::settings(url, &Options::default());
    tokio::task::spawn_blocking(move || malipo::platform(&settings).map(|(p, _)| p)).await.unwrap().unwrap()
}

pub(crate) async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(f).await.unwrap()
}

async fn balance(p: &Platform, org: &str, mode: Mode, kind: AccountKind) -> i64 {
    let key = AccountKey::Org { org_id: OrgId::parse(org).unwrap(), mode, kind };
    let p = p.clone();
    blocking(move || read(p.store(), |tx| Ok(tx.find_account(&key)?)))
        .await
        .unwrap()
        .unwrap_or_else(|| panic!("{org} has no {kind} account"))
        .balance
        .get()
}

fn scopes(v: &Value) -> BTreeSet<String> {
    v["scopes"].as_str().unwrap().split(' ').map(str::to_owned).collect()
}

fn set(words: &[&str]) -> BTreeSet<String> {
    words.iter().map(|&w| w.to_owned()).collect()
}

/// Creates an organisation through the CLI and returns the printed JSON.
pub(crate) async fn org_create(url: &str, kind: &str) -> Value {
    let r = malipo(url, &["org", "create", "--name", &format!("CLI {kind}"), "--kind", kind, "--json"]).await;
    r.ok().json()
}

fn assert_secret_shape(secret: &str, prefix: &str) {
    assert!(secret.starts_with(prefix), "secret {secret} should start {prefix}");
    assert!(secret.len() > prefix.len() + 16, "secret {secret} is too short");
    assert!(secret.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'), "secret {secret} uses only [A-Za-z0-9_]");
}

/// A database with no schema at all: a SQLite path that does not exist yet, or a new, empty
/// PostgreSQL database (dropped on drop).
struct EmptyDatabase {
    url: String,
    _dir: TempDir,
    postgres: Option<(String, String)>,
}

impl EmptyDatabase {
    fn new(db: Db) -> EmptyDatabase {
        let dir = TempDir::new();
        match db {
            Db::Sqlite => {
                let url = format!("sqlite://{}", dir.path().join("nested").join("malipo.db").display());
                EmptyDatabase { url, _dir: dir, postgres: None }
            }
            Db::Postgres => {
                let admin = std::env::var("MALIPO_TEST_POSTGRES_URL").unwrap_or_else(|_| DEFAULT_POSTGRES_URL.to_owned());
                let name = format!("malipo_cli_{}", uuid::Uuid::new_v4().simple());
                PgConnection::establish(&admin).unwrap().batch_execute(&format!("CREATE DATABASE {name}")).unwrap();
                let (server, _) = admin.rsplit_once('/').unwrap();
                EmptyDatabase { url: format!("{server}/{name}"), _dir: dir, postgres: Some((admin, name)) }
            }
        }
    }
}

impl Drop for EmptyDatabase {
    fn drop(&mut self) {
        if let Some((admin, name)) = &self.postgres {
            if let Ok(mut c) = PgConnection::establish(admin) {
                let _ = c.batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"));
            }
        }
    }
}

/// The number in "… N pending were run" (or the first number of the output).
fn applied(r: &Ran) -> u64 {
    r.stdout
        .split(|c: char| !c.is_ascii_digit())
        .find(|w| !w.is_empty())
        .and_then(|w| w.parse().ok())
        .unwrap_or_else(|| panic!("migrate printed no count: {r:?}"))
}

// ----- migrate -----

async fn migrate_applies_the_schema_to_an_empty_database(db: Db) {
    let empty = EmptyDatabase::new(db);
    let url = empty.url.clone();
    let store = blocking(move || DieselStore::connect(&url, Some(1)).unwrap()).await;
    assert!(store.ready().is_err(), "the database should start without a schema");
    let first = malipo(&empty.url, &["migrate"]).await;
    first.ok();
    assert!(applied(&first) > 0, "the first migrate on an empty database applies migrations: {first:?}");
    let s = store.clone();
    blocking(move || s.ready()).await.unwrap_or_else(|e| panic!("not migrated after `malipo migrate`: {e}"));
    let again = malipo(&empty.url, &["migrate"]).await;
    again.ok();
    assert_eq!(applied(&again), 0, "nothing is pending the second time: {again:?}");
    drop(store);
}

// ----- org create -----

async fn org_create_prints_a_test_credential_with_the_kinds_scopes(db: Db) {
    let database = fresh(db);
    let url = database.url.as_str();
    let merchant = org_create(url, "merchant").await;
    assert!(merchant["organisation_id"].as_str().unwrap().starts_with("org_"), "{merchant}");
    assert!(merchant["client_id"].as_str().unwrap().starts_with("ck_test_"), "{merchant}");
    assert_secret_shape(merchant["client_secret"].as_str().unwrap(), "cs_test_");
    assert_eq!(merchant["mode"], "test");
    assert_eq!(scopes(&merchant), set(&["payments", "payouts", "reversals", "bulk:create"]), "merchant defaults");
    let corporate = org_create(url, "corporate").await;
    assert_eq!(scopes(&corporate), set(&["payments", "payouts", "reversals", "bulk:create"]), "corporate defaults: {corporate}");
    for (kind, scope) in [("agent", "agent"), ("operator", "wallets"), ("gateway", "ussd")] {
        let v = org_create(url, kind).await;
        assert_eq!(v["scopes"], scope, "{kind} defaults: {v}");
        assert_eq!(v["mode"], "test");
    }
    // The printed credential works at once, with exactly those scopes, in test mode.
    let p = platform(url).await;
    let (id, secret) = (merchant["client_id"].as_str().unwrap().to_owned(), merchant["client_secret"].as_str().unwrap().to_owned());
    let q = p.clone();
    let token = blocking(move || q.access().issue_token(&id, &secret, None)).await.unwrap();
    let q = p.clone();
    let principal = blocking(move || q.access().authenticate(&token.access_token)).await.unwrap();
    assert_eq!(principal.mode, Mode::Test);
    assert_eq!(principal.org_id.as_str(), merchant["organisation_id"].as_str().unwrap());
    // Its accounts exist.
    let org = merchant["organisation_id"].as_str().unwrap();
    assert_eq!(balance(&p, org, Mode::Test, AccountKind::Collection).await, 0);
    // Without --json: readable, with the secret.
    let plain = malipo(url, &["org", "create", "--name", "Plain", "--kind", "merchant"]).await;
    plain.ok();
    assert!(plain.stdout.contains("cs_test_") && plain.stdout.contains("ck_test_"), "{plain:?}");
    // An unknown kind is refused with a message, and creates nothing.
    malipo(url, &["org", "create", "--name", "Bank", "--kind", "bank", "--json"]).await.refused("bank");
    let q = p.clone();
    let none = blocking(move || read(q.store(), |tx| Ok(tx.org_by_name("Bank")?))).await.unwrap();
    assert!(none.is_none(), "an organisation was created for an unknown kind");
    // An unknown country too.
    malipo(url, &["org", "create", "--name", "X", "--kind", "merchant", "--country", "ZZ"]).await.refused("ZZ");
    malipo(url, &["org", "create", "--name", " ", "--kind", "merchant"]).await.refused("name");
    // `org list` names every organisation, newest first, with the id `credentials issue` needs.
    let listed = malipo(url, &["org", "list", "--json"]).await;
    listed.ok();
    let orgs: Vec<Value> = listed.stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(orgs.len(), 6, "one of each kind and Plain: {}", listed.stdout);
    assert_eq!(orgs[0]["name"], "Plain", "newest first");
    let m = orgs.iter().find(|o| o["id"] == merchant["organisation_id"]).unwrap_or_else(|| panic!("{}", listed.stdout));
    assert_eq!((m["kind"].as_str(), m["country"].as_str(), m["name"].as_str()), (Some("merchant"), Some("KE"), Some("CLI merchant")));
    let table = malipo(url, &["org", "list"]).await;
    table.ok();
    assert!(table.stdout.lines().any(|l| l.starts_with(&format!("{org}\tmerchant\tKE\tCLI merchant\t"))), "{}", table.stdout);
}

// ----- credentials -----

async fn credentials_issue_live_and_revoke(db: Db) {
    let database = fresh(db);
    let url = database.url.as_str();
    let org = org_create(url, "merchant").await;
    let org_id = org["organisation_id"].as_str().unwrap();
    let live = malipo(url, &["credentials", "issue", "--org", org_id, "--mode", "live", "--json"]).await.ok().json();
    assert_eq!(live["organisation_id"], org_id);
    assert!(live["client_id"].as_str().unwrap().starts_with("ck_live_"), "{live}");
    assert_secret_shape(live["client_secret"].as_str().unwrap(), "cs_live_");
    assert_eq!(live["mode"], "live");
    assert_eq!(scopes(&live), set(&["payments", "payouts", "reversals", "bulk:create"]), "the kind's defaults");
    let narrow =
        malipo(url, &["credentials", "issue", "--org", org_id, "--mode", "test", "--scopes", "payments", "--json"]).await.ok().json();
    assert_eq!(narrow["scopes"], "payments");
    assert!(narrow["client_id"].as_str().unwrap().starts_with("ck_test_"));

    let p = platform(url).await;
    let (id, secret) = (live["client_id"].as_str().unwrap().to_owned(), live["client_secret"].as_str().unwrap().to_owned());
    let (q, i, s) = (p.clone(), id.clone(), secret.clone());
    let token = blocking(move || q.access().issue_token(&i, &s, None)).await.unwrap();
    let q = p.clone();
    let t = token.access_token.clone();
    assert_eq!(blocking(move || q.access().authenticate(&t)).await.unwrap().mode, Mode::Live);

    let revoked = malipo(url, &["credentials", "revoke", "--client-id", &id]).await;
    revoked.ok();
    let (q, i, s) = (p.clone(), id.clone(), secret.clone());
    let refused = blocking(move || q.access().issue_token(&i, &s, None)).await;
    assert!(matches!(refused, Err(ServiceError::OAuth(_))), "a revoked credential still gets tokens: {refused:?}");
    let q = p.clone();
    let t = token.access_token.clone();
    assert!(blocking(move || q.access().authenticate(&t)).await.is_err(), "its tokens are revoked too");
    // The other credentials are untouched.
    let (q, i, s) = (p.clone(), org["client_id"].as_str().unwrap().to_owned(), org["client_secret"].as_str().unwrap().to_owned());
    blocking(move || q.access().issue_token(&i, &s, None)).await.unwrap();
    // Revoking again, or an unknown credential, or issuing for an unknown organisation: refused.
    malipo(url, &["credentials", "revoke", "--client-id", &id]).await.refused(&id);
    malipo(url, &["credentials", "revoke", "--client-id", "ck_test_nope"]).await.refused("ck_test_nope");
    let ghost = OrgId::new().to_string();
    malipo(url, &["credentials", "issue", "--org", &ghost, "--mode", "live"]).await.refused(&ghost);
    malipo(url, &["credentials", "issue", "--org", org_id, "--mode", "prod"]).await.refused("prod");
    // Maker and checker never on one credential.
    malipo(url, &["credentials", "issue", "--org", org_id, "--mode", "test", "--scopes", "bulk:create bulk:approve"])
        .await
        .refused("bulk:approve");
    let checker =
        malipo(url, &["credentials", "issue", "--org", org_id, "--mode", "test", "--scopes", "bulk:approve", "--json"]).await.ok().json();
    assert_eq!(checker["scopes"], "bulk:approve");
    malipo(url, &["credentials", "issue", "--org", org_id, "--mode", "test", "--scopes", "payments bogus"]).await.refused("bogus");
}

// ----- account fund, ledger verify -----

async fn account_fund_and_ledger_verify(db: Db) {
    let database = fresh(db);
    let url = database.url.as_str();
    let agent = org_create(url, "agent").await;
    let agent_id = agent["organisation_id"].as_str().unwrap();
    let funded = malipo(url, &["account", "fund", "--org", agent_id, "--mode", "test", "--amount", "5000"]).await;
    let tx = funded.ok().json();
    assert!(tx["transaction_id"].as_str().unwrap_or("").starts_with("tx_"), "{tx}");
    let p = platform(url).await;
    assert_eq!(balance(&p, agent_id, Mode::Test, AccountKind::AgentFloat).await, 500_000, "the float holds 5000.00");
    assert_eq!(balance(&p, agent_id, Mode::Live, AccountKind::AgentFloat).await, 0, "the live float is another ledger");
    // A merchant's payout account can be funded too; a gateway has nothing to fund; bad amounts fail.
    let merchant = org_create(url, "merchant").await;
    let merchant_id = merchant["organisation_id"].as_str().unwrap();
    malipo(url, &["account", "fund", "--org", merchant_id, "--mode", "live", "--amount", "12.34"]).await.ok();
    assert_eq!(balance(&p, merchant_id, Mode::Live, AccountKind::Payout).await, 1234);
    let gateway = org_create(url, "gateway").await;
    malipo(url, &["account", "fund", "--org", gateway["organisation_id"].as_str().unwrap(), "--mode", "test", "--amount", "10"])
        .await
        .refused("gateway");
    for amount in ["-5", "0", "1.001", "abc"] {
        malipo(url, &["account", "fund", "--org", agent_id, "--mode", "test", &format!("--amount={amount}")]).await.refused("amount");
    }
    assert_eq!(balance(&p, agent_id, Mode::Test, AccountKind::AgentFloat).await, 500_000);

    // No server runs here, so no sealer: verify seals the two fundings first, then checks them
    // against their chain entries.
    let verified = malipo(url, &["ledger", "verify", "--json"]).await;
    let v = verified.ok().json();
    assert_eq!(v["ok"], true, "{v}");
    assert_eq!(v["violations"], json!([]), "{v}");
    assert_eq!((v["journals"].as_u64(), v["sealed_now"].as_u64(), v["unsealed"].as_u64()), (Some(2), Some(2), Some(0)), "{v}");
    let again = malipo(url, &["ledger", "verify", "--json"]).await.ok().json();
    assert_eq!((again["sealed_now"].as_u64(), again["unsealed"].as_u64()), (Some(0), Some(0)), "sealed once: {again}");
    let plain = malipo(url, &["ledger", "verify"]).await;
    plain.ok();
    assert!(plain.stdout.contains("2 journals checked; 0 sealed just now; 0 not yet sealed"), "{plain:?}");
    malipo(url, &["ledger", "verify", "--mode", "live", "--json"]).await.ok();
    for org in [agent_id, merchant_id] {
        let v = malipo(url, &["ledger", "verify", "--org", org, "--json"]).await.ok().json();
        assert_eq!(v["ok"], true, "{v}");
    }
    malipo(url, &["ledger", "verify", "--org", "org_unknown"]).await.refused("organisation");

    // Tamper with the agent's float behind the ledger's back.
    let float = {
        let key = AccountKey::Org { org_id: OrgId::parse(agent_id).unwrap(), mode: Mode::Test, kind: AccountKind::AgentFloat };
        let q = p.clone();
        blocking(move || read(q.store(), |tx| Ok(tx.find_account(&key)?))).await.unwrap().unwrap()
    };
    database.store.raw_execute(&format!("UPDATE accounts SET balance = balance + 1 WHERE id = '{}'", float.id)).unwrap();
    let broken = malipo(url, &["ledger", "verify", "--json"]).await;
    assert_eq!(broken.code, Some(1), "a violation exits 1: {broken:?}");
    let v = broken.json();
    assert_eq!(v["ok"], false, "{v}");
    let list = v["violations"].as_array().unwrap();
    assert_eq!(list.len(), 1, "{v}");
    assert!(list[0].as_str().unwrap().contains(float.id.as_str()), "the violation names the account: {v}");
    let plain = malipo(url, &["ledger", "verify"]).await;
    assert_eq!(plain.code, Some(1), "{plain:?}");
    assert!(plain.stdout.contains(float.id.as_str()), "{plain:?}");
    // The live ledger alone is still sound, and so is the merchant's part; the agent's part is not.
    malipo(url, &["ledger", "verify", "--mode", "live", "--json"]).await.ok();
    malipo(url, &["ledger", "verify", "--org", merchant_id, "--json"]).await.ok();
    let part = malipo(url, &["ledger", "verify", "--org", agent_id, "--json"]).await;
    assert_eq!(part.code, Some(1), "{part:?}");
    assert!(part.json()["violations"][0].as_str().unwrap().contains(float.id.as_str()), "{part:?}");
    // An edited posting of the merchant's funding (balanced, and the balance kept in step, as a
    // careful forger would) breaks that journal's own entry of the audit chain.
    database.store.raw_execute(&format!("UPDATE accounts SET balance = balance - 1 WHERE id = '{}'", float.id)).unwrap();
    let payout = {
        let key = AccountKey::Org { org_id: OrgId::parse(merchant_id).unwrap(), mode: Mode::Live, kind: AccountKind::Payout };
        let q = p.clone();
        blocking(move || read(q.store(), |tx| Ok(tx.find_account(&key)?))).await.unwrap().unwrap()
    };
    // Postings are append-only: the forger first removes the guard.
    let unguard = match db {
        Db::Sqlite => "DROP TRIGGER postings_no_update",
        Db::Postgres => "DROP TRIGGER postings_append_only ON postings",
    };
    database.store.raw_execute(unguard).unwrap();
    let id = payout.id.as_str();
    for sql in [
        format!("UPDATE postings SET amount = amount + 1 WHERE account_id = '{id}'"),
        format!("UPDATE accounts SET balance = balance + 1 WHERE id = '{id}'"),
        format!("UPDATE postings SET amount = amount - 1 WHERE account_id <> '{id}' AND journal_id IN (SELECT journal_id FROM postings WHERE account_id = '{id}')"),
        format!("UPDATE accounts SET balance = balance - 1 WHERE id IN (SELECT account_id FROM postings WHERE account_id <> '{id}' AND journal_id IN (SELECT journal_id FROM postings WHERE account_id = '{id}'))"),
    ] {
        assert_eq!(database.store.raw_execute(&sql).unwrap(), 1, "{sql}");
    }
    let part = malipo(url, &["ledger", "verify", "--org", merchant_id, "--json"]).await;
    assert_eq!(part.code, Some(1), "{part:?}");
    let v = part.json();
    assert!(
        v["violations"].as_array().unwrap().iter().any(|x| x.as_str().unwrap().contains("audit chain")),
        "a balanced edit breaks its entry: {v}"
    );
    malipo(url, &["ledger", "verify", "--org", agent_id, "--json"]).await.ok();
}

// ----- the first start -----

/// A running `malipo serve`, killed on drop.
pub(crate) struct Server {
    child: Child,
    lines: mpsc::Receiver<String>,
    pub(crate) seen: Vec<String>,
}

impl Server {
    fn start(dir: &Path, url: Option<&str>) -> Server {
        Server::start_with(dir, url, &[])
    }

    /// [`Server::start`] with more environment variables (`MALIPO_LOG`, say).
    pub(crate) fn start_with(dir: &Path, url: Option<&str>, env: &[(&str, &str)]) -> Server {
        let mut cmd = command(dir, url, &["serve"]);
        cmd.envs(env.iter().copied());
        cmd.env("MALIPO_BIND", "127.0.0.1:0").env("MALIPO_DEMO", "true").env("MALIPO_SANDBOX_APPROVAL_DELAY_MS", "100");
        if url.is_some_and(|u| u.starts_with("postgres")) {
            // Several instances share one PostgreSQL, so the server requires the shared key.
            cmd.env("MALIPO_WEBHOOK_KEY", crate::harness::TEST_WEBHOOK_KEY);
        }
        let mut child = cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Server { child, lines, seen: Vec::new() }
    }

    /// Reads stdout until a line contains `needle` (bounded), returning that line.
    pub(crate) fn wait_for_line(&mut self, needle: &str) -> String {
        let deadline = Instant::now() + BANNER_TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if line.contains(needle) {
                        return line;
                    }
                }
                Err(e) => panic!("no line with {needle:?} ({e:?}); the server printed {:?}", self.seen),
            }
        }
    }

    /// The value after `label` on its line, e.g. `client_id:`.
    fn value(&mut self, label: &str) -> String {
        let line = self.wait_for_line(label);
        line.split_once(label).unwrap().1.trim().to_owned()
    }

    /// The API base printed in the banner.
    pub(crate) fn base(&mut self) -> String {
        let line = self.wait_for_line("is ready at ");
        let url = line.split_once("is ready at ").unwrap().1.split_whitespace().next().unwrap();
        url.to_owned()
    }
}

impl Server {
    /// Sends SIGTERM and waits (bounded) for the exit.
    pub(crate) fn terminate(mut self, within: Duration) -> std::process::ExitStatus {
        let sent = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status().unwrap();
        assert!(sent.success(), "kill -TERM failed");
        let deadline = Instant::now() + within;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(Instant::now() < deadline, "serve did not exit within {within:?} of SIGTERM");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The banner's client id, secret and API base.
struct Banner {
    base: String,
    org_id: String,
    client_id: String,
    client_secret: String,
}

/// Reads the banner (blocking this test's own thread only: the server is another process).
fn banner(server: &mut Server) -> Banner {
    let base = server.base();
    let org_id = server.value("organisation:");
    assert!(org_id.starts_with("org_"), "{org_id}");
    let client_id = server.value("client_id:");
    let client_secret = server.value("client_secret:");
    assert!(client_id.starts_with("ck_test_"), "{client_id}");
    assert!(client_secret.starts_with("cs_test_"), "{client_secret}");
    Banner { base, org_id, client_id, client_secret }
}

/// The printed credential gets a token from the printed server.
async fn assert_credential_works(b: &Banner) {
    let http = reqwest::Client::new();
    let started = Instant::now();
    let r = loop {
        match http
            .post(format!("{}/oauth/token", b.base))
            .json(&json!({"client_id": b.client_id, "client_secret": b.client_secret}))
            .send()
            .await
        {
            Ok(r) => break r,
            Err(e) => {
                assert!(started.elapsed() < Duration::from_secs(10), "the printed server does not answer: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    };
    assert_eq!(r.status(), 200, "the printed credential is refused: {}", r.text().await.unwrap());
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["mode"], "test");
}

#[actix_web::test]
async fn first_start_with_the_default_database_prints_the_demo_credential() {
    let dir = TempDir::new();
    let first = {
        let mut server = blocking_server(dir.path(), None).await;
        let b = banner(&mut server);
        assert_credential_works(&b).await;
        // The server started itself again with two glibc malloc arenas (see main.rs).
        #[cfg(target_os = "linux")]
        {
            let environ = std::fs::read(format!("/proc/{}/environ", server.child.id())).unwrap();
            assert!(
                environ.split(|b| *b == 0).any(|v| v == b"MALLOC_ARENA_MAX=2"),
                "serve runs with MALLOC_ARENA_MAX=2: {}",
                String::from_utf8_lossy(&environ).replace('\0', " ")
            );
        }
        b
    };
    let data = dir.path().join("malipo-data");
    assert!(data.join("malipo.db").is_file(), "the default SQLite database is malipo-data/malipo.db");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let saved = data.join("demo-credentials.json");
        let mode = std::fs::metadata(&saved).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "the saved demo credential is private");
    }
    // A second start on the same database prints the same demo credential again, still working.
    let mut server = blocking_server(dir.path(), None).await;
    let again = banner(&mut server);
    assert_eq!((&again.org_id, &again.client_id), (&first.org_id, &first.client_id), "the same demo merchant");
    assert_eq!(again.client_secret, first.client_secret);
    assert_ne!(again.base, "", "a base URL is printed");
    assert_credential_works(&again).await;
    // SIGTERM stops it gracefully: exit status 0, promptly.
    let status = blocking(move || server.terminate(Duration::from_secs(15))).await;
    assert!(status.success(), "serve ended with {status} on SIGTERM");
    // Exactly one demo merchant exists.
    let url = format!("sqlite://{}", data.join("malipo.db").display());
    let p = platform(&url).await;
    let demos = blocking(move || read(p.store(), |tx| Ok(tx.org_by_name(malipo::demo::DEMO_NAME)?))).await.unwrap();
    assert_eq!(demos.map(|o| o.id.to_string()), Some(first.org_id), "the printed organisation is the demo merchant");
}

#[actix_web::test]
async fn first_start_on_postgres_prints_the_demo_credential_once() {
    let database = fresh(Db::Postgres);
    let dir = TempDir::new();
    {
        let mut server = blocking_server(dir.path(), Some(&database.url)).await;
        let b = banner(&mut server);
        assert_credential_works(&b).await;
    }
    assert!(!dir.path().join("malipo-data").exists(), "a PostgreSQL deployment writes nothing to disk");
    // Nothing on disk: the second start says the demo merchant exists, without a secret.
    let mut server = blocking_server(dir.path(), Some(&database.url)).await;
    let url = database.url.clone();
    let line = blocking(move || {
        let line = server.wait_for_line("Demo merchant");
        drop(server);
        line
    })
    .await;
    assert!(line.contains("exists"), "{line}");
    let p = platform(&url).await;
    let demo = blocking(move || read(p.store(), |tx| Ok(tx.org_by_name(malipo::demo::DEMO_NAME)?))).await.unwrap();
    assert!(demo.is_some_and(|o| line.contains(o.id.as_str())), "the message names the demo merchant");
}

async fn blocking_server(dir: &Path, url: Option<&str>) -> Server {
    let (dir, url) = (dir.to_owned(), url.map(str::to_owned));
    blocking(move || Server::start(&dir, url.as_deref())).await
}

// ----- help -----

#[actix_web::test]
async fn help_lists_the_subcommands() {
    let dir = TempDir::new();
    let help = run_in(dir.path(), None, &["--help"]).await;
    help.ok();
    for sub in ["serve", "migrate", "org", "credentials", "account", "ledger"] {
        assert!(help.stdout.lines().any(|l| l.trim_start().starts_with(sub)), "--help does not list {sub}: {}", help.stdout);
    }
    for (args, words) in [
        (&["org", "--help"][..], &["create", "list"][..]),
        (&["credentials", "--help"][..], &["issue", "revoke"][..]),
        (&["account", "--help"][..], &["fund"][..]),
        (&["ledger", "--help"][..], &["verify"][..]),
        (&["org", "create", "--help"][..], &["--name", "--kind", "--country", "--json"][..]),
        (&["ledger", "verify", "--help"][..], &["--mode", "--json"][..]),
    ] {
        let r = run_in(dir.path(), None, args).await;
        r.ok();
        for w in words {
            assert!(r.stdout.contains(w), "`malipo {}` does not mention {w}: {}", args.join(" "), r.stdout);
        }
    }
    // Each command shows its own options and what it does, never the server's.
    let server_only =
        ["--bind", "--rate-limit-live", "--rate-limit-test", "--workers", "--webhook-retry-schedule", "--webhook-timeout-ms", "--demo"];
    for (args, says) in [
        (&["ledger", "verify", "--help"][..], "audit chain"),
        (&["org", "create", "--help"][..], "test credential"),
        (&["credentials", "issue", "--help"][..], "credential"),
        (&["credentials", "revoke", "--help"][..], "every token"),
        (&["account", "fund", "--help"][..], "issuance"),
        (&["migrate", "--help"][..], "migrations"),
    ] {
        let r = run_in(dir.path(), None, args).await;
        r.ok();
        assert!(r.stdout.contains(says), "`malipo {}` does not say what it does: {}", args.join(" "), r.stdout);
        assert!(r.stdout.contains("--database-url"), "`malipo {}`: {}", args.join(" "), r.stdout);
        for flag in server_only {
            assert!(!r.stdout.contains(flag), "`malipo {}` lists the server's {flag}: {}", args.join(" "), r.stdout);
        }
    }
    for args in [&["serve", "--help"][..], &["--help"][..]] {
        let r = run_in(dir.path(), None, args).await;
        for flag in server_only {
            assert!(r.stdout.contains(flag), "`malipo {}` does not list {flag}: {}", args.join(" "), r.stdout);
        }
    }
    // No database was touched by asking for help.
    assert!(!dir.path().join("malipo-data").exists(), "--help created a database");
    let unknown = run_in(dir.path(), None, &["frobnicate"]).await;
    assert_ne!(unknown.code, Some(0), "{unknown:?}");
}
