//! `lifecycle` and `wait-idle`: the sandbox created -> completed rate.
//!
//! Charges are created round-robin over the merchants, then the run waits until no merchant has a
//! `pending` or `authorised` charge left. That check is cheap on purpose (two `limit=1` list calls
//! for one merchant per poll; a merchant found idle stays idle, since nothing moves back out of a
//! final state), because the poller competes with the server for CPU. When all are idle (or at the
//! timeout) one paginated pass over each merchant's charges classifies what we created.
//!
//! The merchants must be dedicated to the run: any pending charge of theirs counts as unfinished.
//!
//! Every call goes through `malipo-client`, as an integrator's would: one client per merchant (its
//! token cached), an idempotency key per charge, "not now" (503 with `Retry-After`) waited for and
//! retried with the same key and body.

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use futures_util::TryStreamExt;
use malipo_client::{ChargeFilter, ChargeState, Client, NewCharge};
use rust_decimal::Decimal;
use serde::Serialize;
use time::OffsetDateTime;

use crate::api;

const FINAL_STATES: [&str; 4] = ["completed", "declined", "expired", "failed"];

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// `{base_url}`, e.g. http://127.0.0.1:8080/api/v1
    #[arg(long)]
    base_url: String,
    /// JSON lines, one `{"client_id", "client_secret"}` per merchant (the output of
    /// `malipo org create --json` works as is).
    #[arg(long)]
    credentials: PathBuf,
    /// Charges to create in total, spread round-robin over the merchants.
    #[arg(long, default_value_t = 3000)]
    count: u64,
    /// Concurrent creation requests.
    #[arg(long, default_value_t = 32)]
    concurrency: usize,
    /// Give up waiting this long after the first creation.
    #[arg(long, default_value_t = 60)]
    timeout_secs: u64,
    /// Interval between completion checks.
    #[arg(long, default_value_t = 100)]
    poll_ms: u64,
    /// Payers, as for `charges --payers` (0: a new random number each).
    #[arg(long, default_value_t = 0)]
    payers: u64,
}

#[derive(Debug, clap::Args)]
pub(crate) struct WaitIdleArgs {
    /// `{base_url}`, e.g. http://127.0.0.1:8080/api/v1
    #[arg(long)]
    base_url: String,
    /// JSON lines of credentials, as for `lifecycle`.
    #[arg(long)]
    credentials: PathBuf,
    #[arg(long, default_value_t = 30)]
    timeout_secs: u64,
    #[arg(long, default_value_t = 250)]
    poll_ms: u64,
}

#[derive(Debug, Serialize)]
struct Report {
    merchants: usize,
    /// Charges created (200 answers).
    charges: u64,
    /// Creation requests that did not answer 200.
    create_errors: u64,
    completed: u64,
    other_final: u64,
    /// Created charges not in a final state at the end (or not found in the listing).
    unfinished: u64,
    /// Our charges by state at the end.
    states: BTreeMap<String, u64>,
    /// From the first creation request to the end of the creation phase.
    creation_secs: f64,
    /// From the first creation request to the poll that found every merchant idle (or the timeout).
    elapsed_secs: f64,
    /// `completed / elapsed_secs`.
    lifecycle_per_sec: f64,
    /// Server clock: first `created_at` to last `completed_at` of our charges, if present.
    server_span_secs: Option<f64>,
    /// `completed / server_span_secs`.
    lifecycle_per_sec_server_clock: Option<f64>,
    timed_out: bool,
}

#[derive(Debug, Serialize)]
struct IdleReport {
    idle: bool,
    waited_secs: f64,
}

struct Merchant {
    client: Client,
}

pub(crate) async fn run(args: Args) -> Result<serde_json::Value> {
    if args.concurrency == 0 {
        bail!("--concurrency must be at least 1");
    }
    let merchants = login_all(&args.base_url, &args.credentials).await?;
    let poll = Duration::from_millis(args.poll_ms.max(10));

    let start = Instant::now();
    let deadline = start + Duration::from_secs(args.timeout_secs);
    let (refs, create_errors) = create_all(&merchants, &args).await?;
    let creation_secs = start.elapsed().as_secs_f64();

    let busy: Vec<&Client> = merchants.iter().zip(&refs).filter(|(_, mine)| !mine.is_empty()).map(|(m, _)| &m.client).collect();
    let idle_at = wait_idle(&busy, deadline, poll).await;
    let elapsed = idle_at.unwrap_or_else(Instant::now).duration_since(start);

    // One pass over every merchant's charges to classify ours.
    let mut states: BTreeMap<String, u64> = BTreeMap::new();
    let mut first_created: Option<OffsetDateTime> = None;
    let mut last_completed: Option<OffsetDateTime> = None;
    let mut seen = 0u64;
    for (merchant, mine) in merchants.iter().zip(&refs) {
        if mine.is_empty() {
            continue;
        }
        let mut charges = std::pin::pin!(merchant.client.charges().list(ChargeFilter::default()).limit(100).stream());
        while let Some(charge) = charges.try_next().await? {
            if !mine.contains(&charge.charge_ref) {
                continue;
            }
            seen += 1;
            *states.entry(charge.state.as_str().to_owned()).or_default() += 1;
            first_created = Some(first_created.map_or(charge.created_at, |t| t.min(charge.created_at)));
            if charge.state == ChargeState::Completed {
                last_completed = last_completed.max(charge.completed_at);
            }
        }
    }

    let created: u64 = refs.iter().map(|r| r.len() as u64).sum();
    let completed = states.get("completed").copied().unwrap_or(0);
    let final_total: u64 = FINAL_STATES.iter().map(|s| states.get(*s).copied().unwrap_or(0)).sum();
    if seen < created {
        eprintln!("lifecycle: {} created charges missing from the listing", created - seen);
    }
    let server_span = match (first_created, last_completed) {
        (Some(a), Some(b)) if b > a => Some((b - a).as_seconds_f64()),
        _ => None,
    };
    let report = Report {
        merchants: merchants.len(),
        charges: created,
        create_errors,
        completed,
        other_final: final_total - completed,
        unfinished: created.saturating_sub(final_total),
        states,
        creation_secs,
        elapsed_secs: elapsed.as_secs_f64(),
        lifecycle_per_sec: per_sec(completed, elapsed.as_secs_f64()),
        server_span_secs: server_span,
        lifecycle_per_sec_server_clock: server_span.map(|s| per_sec(completed, s)),
        timed_out: idle_at.is_none(),
    };
    Ok(serde_json::to_value(report)?)
}

pub(crate) async fn wait_idle_command(args: WaitIdleArgs) -> Result<serde_json::Value> {
    let merchants = login_all(&args.base_url, &args.credentials).await?;
    let clients: Vec<&Client> = merchants.iter().map(|m| &m.client).collect();
    let start = Instant::now();
    let deadline = start + Duration::from_secs(args.timeout_secs);
    let poll = Duration::from_millis(args.poll_ms.max(10));
    let idle = wait_idle(&clients, deadline, poll).await.is_some();
    Ok(serde_json::to_value(IdleReport { idle, waited_secs: start.elapsed().as_secs_f64() })?)
}

/// One client per merchant, each with its token fetched (so that no token request falls inside
/// the measured time).
async fn login_all(base_url: &str, path: &std::path::Path) -> Result<Vec<Merchant>> {
    let mut merchants = Vec::new();
    for creds in api::read_credentials(path)? {
        let client = Client::new(&api::base(base_url), &creds.client_id, &creds.client_secret)?;
        client
            .charges()
            .list(ChargeFilter::default())
            .limit(1)
            .page(None)
            .await
            .with_context(|| format!("signing in {}", creds.client_id))?;
        merchants.push(Merchant { client });
    }
    Ok(merchants)
}

/// Creates `args.count` charges, charge `n` for merchant `n % merchants`. Returns the charge refs
/// per merchant and the number of failed creations (after the client's retries).
async fn create_all(merchants: &[Merchant], args: &Args) -> Result<(Vec<HashSet<String>>, u64)> {
    let next = Arc::new(AtomicU64::new(0));
    let clients: Arc<Vec<Client>> = Arc::new(merchants.iter().map(|m| m.client.clone()).collect());
    let amount = Decimal::new(10_000, 2);
    let mut workers = Vec::new();
    for _ in 0..args.concurrency {
        let (next, clients) = (Arc::clone(&next), Arc::clone(&clients));
        let (count, payers) = (args.count, args.payers);
        workers.push(tokio::spawn(async move {
            let mut made: Vec<(usize, String)> = Vec::new();
            let mut errors = 0u64;
            loop {
                let n = next.fetch_add(1, Ordering::Relaxed);
                if n >= count {
                    break;
                }
                let m = (n % clients.len() as u64) as usize;
                let charge = NewCharge::new(api::payer_msisdn(n, payers), amount, format!("bench-{n}"));
                match clients[m].charges().create(&charge).await {
                    Ok(c) => made.push((m, c.charge_ref)),
                    Err(e) => {
                        if errors == 0 {
                            eprintln!("lifecycle: creating a charge failed: {e}");
                        }
                        errors += 1;
                    }
                }
            }
            (made, errors)
        }));
    }
    let mut refs = vec![HashSet::new(); merchants.len()];
    let mut errors = 0;
    for worker in workers {
        let (made, errs) = worker.await.context("creation worker panicked")?;
        errors += errs;
        for (m, charge_ref) in made {
            if let Some(set) = refs.get_mut(m) {
                set.insert(charge_ref);
            }
        }
    }
    Ok((refs, errors))
}

/// Polls until no merchant has a `pending` or `authorised` charge; returns when that was observed,
/// or `None` at the deadline. While work remains a poll checks one merchant (two `limit=1` calls);
/// once that one is idle all the others are checked at once, so the end is seen within a round trip
/// or two whatever the number of merchants. A merchant found idle is never checked again.
async fn wait_idle(clients: &[&Client], deadline: Instant, poll: Duration) -> Option<Instant> {
    let mut busy: Vec<Client> = clients.iter().map(|c| (*c).clone()).collect();
    let mut warned = false;
    let mut warn = |e: anyhow::Error| {
        if !warned {
            eprintln!("lifecycle: completion check failed: {e:#}");
            warned = true;
        }
    };
    loop {
        if let Some(first) = busy.first() {
            match has_unfinished(first).await {
                Ok(true) => {}
                Err(e) => warn(e),
                Ok(false) => {
                    busy.remove(0);
                    let checks: Vec<_> = busy
                        .iter()
                        .map(|client| {
                            let client = client.clone();
                            tokio::spawn(async move { has_unfinished(&client).await })
                        })
                        .collect();
                    let mut still_busy = Vec::new();
                    for (client, check) in busy.drain(..).zip(checks) {
                        match check.await {
                            Ok(Ok(false)) => {}
                            Ok(Ok(true)) => still_busy.push(client),
                            Ok(Err(e)) => {
                                warn(e);
                                still_busy.push(client);
                            }
                            Err(e) => {
                                warn(e.into());
                                still_busy.push(client);
                            }
                        }
                    }
                    busy = still_busy;
                }
            }
        }
        if busy.is_empty() {
            return Some(Instant::now());
        }
        if Instant::now() >= deadline {
            return None;
        }
        tokio::time::sleep(poll).await;
    }
}

/// Pending first, then authorised: a charge moving between the two calls is still seen, because
/// states only move forward (pending -> authorised -> final).
async fn has_unfinished(client: &Client) -> Result<bool> {
    for state in [ChargeState::Pending, ChargeState::Authorised] {
        let page = client.charges().list(ChargeFilter::default().state(state)).limit(1).page(None).await?;
        if !page.data.is_empty() {
            return Ok(true);
        }
    }
    Ok(false)
}

fn per_sec(n: u64, secs: f64) -> f64 {
    if secs > 0.0 {
        n as f64 / secs
    } else {
        0.0
    }
}
