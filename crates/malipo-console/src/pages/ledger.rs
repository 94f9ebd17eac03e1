//! Ledger health (console contract section 4, Operator): the last verification, the audit
//! chain's sealing lag, and "Verify now", which runs `malipo ledger verify`'s use case in the
//! background (one at a time per instance) and records its result in the audit log; the page's
//! live region follows it to its result. Reached from the operator's Wallets page (the contract's
//! navigation has no "Ledger health" link). Needs `Permission::BackOffice`.

use std::collections::BTreeMap;
use std::sync::Mutex;

use actix_web::{web, HttpRequest, HttpResponse};
use askama::Template;
use malipo_auth::Permission;
use malipo_core::Timestamp;
use malipo_service::LedgerHealth;

use super::local_time::LocalTime;
use crate::chrome::{page, see_other, Chrome, Notice};
use crate::csrf::Posted;
use crate::session::{client_ip, console_of, Person};
use crate::{csrf_forms, run, Console, ConsoleError};

/// `/console/ledger`, its live facts, and "Verify now".
pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/ledger", web::get().to(ledger_page))
        .route("/ledger/live", web::get().to(live_facts))
        .route("/ledger/verify", web::post().to(verify_now));
}

const PATH: &str = "/console/ledger";

/// What one console (by its address: a process may serve several, as tests do) knows of its
/// background verification.
#[derive(Clone, Debug, Default)]
struct State {
    /// Running: who started it, and when.
    running: Option<(String, Timestamp)>,
    /// The last one failed before its result was recorded (a storage failure): why.
    failed: Option<String>,
}

static STATES: Mutex<BTreeMap<usize, State>> = Mutex::new(BTreeMap::new());

fn key(console: &Console) -> usize {
    std::ptr::from_ref(console) as usize
}

fn state(console: &Console) -> State {
    STATES.lock().map(|s| s.get(&key(console)).cloned().unwrap_or_default()).unwrap_or_default()
}

#[derive(Clone, Debug, Default, serde::Deserialize)]
struct VerifyForm {
    #[serde(default)]
    csrf_token: String,
}
csrf_forms!(VerifyForm);

/// What the page and its live region show.
struct Facts {
    /// No verification running: the live region stops asking.
    settled: bool,
    running: Option<String>,
    failed: Option<String>,
    last_time: Option<String>,
    last_by: String,
    last_detail: String,
    last_ok: bool,
    unsealed: u64,
    lag: String,
}

#[derive(Template)]
#[template(path = "ledger/index.html")]
struct LedgerPage {
    chrome: Chrome,
    facts: Facts,
}

#[derive(Template)]
#[template(path = "ledger/facts_fragment.html")]
struct FactsFragment {
    facts: Facts,
}

async fn facts(console: &Console, who: &Person) -> Result<Facts, ConsoleError> {
    let w = who.0.clone();
    let health: LedgerHealth = run(console, move |p| p.back_office().ledger_health(&w)).await?;
    let clock = LocalTime::of(console, who);
    let state = state(console);
    let running = state.running.map(|(by, at)| format!("started by {by} at {}", clock.time(at)));
    let last = health.last.as_ref();
    Ok(Facts {
        settled: running.is_none(),
        running,
        failed: state.failed,
        last_time: last.map(|e| clock.time(e.created_at)),
        last_by: last.map(|e| e.actor.clone()).unwrap_or_default(),
        last_detail: last.map(|e| e.detail.clone()).unwrap_or_default(),
        last_ok: last.is_some_and(|e| e.detail.starts_with("ok")),
        unsealed: health.unsealed,
        lag: format!("{:.1} s", health.lag.as_secs_f64()),
    })
}

#[derive(Debug, Default, serde::Deserialize)]
struct DoneQuery {
    started: Option<String>,
}

async fn ledger_page(req: HttpRequest, who: Person, query: web::Query<DoneQuery>) -> Result<HttpResponse, ConsoleError> {
    who.require(Permission::BackOffice)?;
    let console = console_of(&req)?;
    let notice = match query.started.as_deref() {
        Some("now") => Notice::done("Verification started: its result shows here when it is done."),
        Some("already") => Notice::done("A verification is already running: its result shows here when it is done."),
        _ => None,
    };
    let facts = facts(&console, &who).await?;
    Ok(page(&LedgerPage { chrome: Chrome::new(&who, "Wallets", "Ledger health", PATH).with_notice(notice), facts }))
}

async fn live_facts(req: HttpRequest, who: Person) -> Result<HttpResponse, ConsoleError> {
    who.require(Permission::BackOffice)?;
    let console = console_of(&req)?;
    Ok(page(&FactsFragment { facts: facts(&console, &who).await? }))
}

/// "Verify now": starts a verification in the background unless one is running, then shows
/// the page (which follows it).
async fn verify_now(req: HttpRequest, posted: Posted<VerifyForm>) -> Result<HttpResponse, ConsoleError> {
    let who = posted.person;
    who.require(Permission::BackOffice)?;
    let console = console_of(&req)?;
    let now = console.platform.now();
    let id = key(&console);
    {
        let mut states = STATES.lock().map_err(|_| ConsoleError::Internal("verification state poisoned".into()))?;
        let state = states.entry(id).or_default();
        if state.running.is_some() {
            return Ok(see_other(&format!("{PATH}?started=already")));
        }
        state.running = Some((who.user.email.clone(), now));
    }
    let (platform, w, ip) = (console.platform.clone(), who.0.clone(), client_ip(&req, &console.settings));
    tokio::task::spawn_blocking(move || {
        let outcome = platform.back_office().verify_ledger(&w, ip);
        let failed = outcome.err().map(|e| {
            tracing::error!(error = %e, "the ledger verification failed");
            "The last verification could not finish; see the server's log.".to_owned()
        });
        if let Ok(mut states) = STATES.lock() {
            states.insert(id, State { running: None, failed });
        }
    });
    Ok(see_other(&format!("{PATH}?started=now")))
}
