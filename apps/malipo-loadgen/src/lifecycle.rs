//! `lifecycle` and `wait-idle`: the sandbox created -> completed rate.
//!
//! Charges are created round-robin over the merchants, then the run waits until no merchant has a
//! `pending` or `authorised` charge left. That check is cheap on purpose (two `limit=1` list calls
//! for one merchant per poll; a merchant found idle stays idle, since nothing moves back out of a
//! final state), because the poller competes with the server for CPU. When all are idle (or at the
//! timeout) one paginated pass over each merchant's charges classifies what we created.
//!
//! The merchants must be dedicated to the run: any pending charge of theirs counts as unfinished.

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use reqwest::Client;
use serde::{Deserialize, Serialize};
use time::format_description::well_known::Rfc3339;
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
    token: String,
}

pub(crate) async fn run(args: Args) -> Result<serde_json::Value> {
    if args.concurrency == 0 {
        bail!("--concurrency must be at least 1");
    }
    let base = api::base(&args.base_url);
    let client = api::client(args.concurrency)?;
    let merchants = login_all(&client, &base, &args.credentials).await?;
    let poll = Duration::from_millis(args.poll_ms.max(10));

    let start = Instant::now();
    let deadline = start + Duration::from_secs(args.timeout_secs);
    let (refs, create_errors) = create_all(&client, &base, &merchants, &args).await?;
    let creation_secs = start.elapsed().as_secs_f64();

    let tokens: Vec<&str> = merchants.iter().zip(&refs).filter(|(_, mine)| !mine.is_empty()).map(|(m, _)| m.token.as_str()).collect();
    let idle_at = wait_idle(&client, &base, &tokens, deadline, poll).await;
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
        let mut cursor: Option<String> = None;
        loop {
            let page = api::list_charges(&client, &base, &merchant.token, None, 100, cursor.as_deref()).await?;
            for charge in page.data.iter().filter(|c| mine.contains(&c.charge_ref)) {
                seen += 1;
                *states.entry(charge.state.clone()).or_default() += 1;
                first_created = earliest(first_created, charge.created_at.as_deref());
                if charge.state == "completed" {
                    last_completed = latest(last_completed, charge.completed_at.as_deref());
                }
            }
            match page.next_cursor {
                Some(next) if page.has_more => cursor = Some(next),
                _ => break,
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
    let base = api::base(&args.base_url);
    let client = api::client(1)?;
    let merchants = login_all(&client, &base, &args.credentials).await?;
    let tokens: Vec<&str> = merchants.iter().map(|m| m.token.as_str()).collect();
    let start = Instant::now();
    let deadline = start + Duration::from_secs(args.timeout_secs);
    let poll = Duration::from_millis(args.poll_ms.max(10));
    let idle = wait_idle(&client, &base, &tokens, deadline, poll).await.is_some();
    Ok(serde_json::to_value(IdleReport { idle, waited_secs: start.elapsed().as_secs_f64() })?)
}

async fn login_all(client: &Client, base: &str, path: &std::path::Path) -> Result<Vec<Merchant>> {
    let mut merchants = Vec::new();
    for creds in api::read_credentials(path)? {
        merchants.push(Merchant { token: api::token(client, base, &creds).await? });
    }
    Ok(merchants)
}

/// Creates `args.count` charges, charge `n` for merchant `n % merchants`. Returns the charge refs
/// per merchant and the number of failed creations.
async fn create_all(client: &Client, base: &str, merchants: &[Merchant], args: &Args) -> Result<(Vec<HashSet<String>>, u64)> {
    #[derive(Deserialize)]
    struct Created {
        charge_ref: String,
    }
    let next = Arc::new(AtomicU64::new(0));
    let tokens: Arc<Vec<String>> = Arc::new(merchants.iter().map(|m| m.token.clone()).collect());
    let url = Arc::new(format!("{base}/partner/stk"));
    let mut workers = Vec::new();
    for _ in 0..args.concurrency {
        let (client, next, tokens, url) = (client.clone(), Arc::clone(&next), Arc::clone(&tokens), Arc::clone(&url));
        let count = args.count;
        workers.push(tokio::spawn(async move {
            let mut made: Vec<(usize, String)> = Vec::new();
            let mut errors = 0u64;
            loop {
                let n = next.fetch_add(1, Ordering::Relaxed);
                if n >= count {
                    break;
                }
                let m = (n % tokens.len() as u64) as usize;
                let body = api::charge_body(n);
                // A well-behaved integrator: "not now" (503 with Retry-After) is retried after the
                // wait it names, with the same body and idempotency key.
                let sent = loop {
                    let sent = client.post(url.as_str()).bearer_auth(&tokens[m]).json(&body).send().await;
                    match &sent {
                        Ok(resp) if resp.status().as_u16() == 503 => {
                            let wait = resp.headers().get("retry-after").and_then(|v| v.to_str().ok()?.parse::<u64>().ok()).unwrap_or(1);
                            tokio::time::sleep(std::time::Duration::from_secs(wait)).await;
                        }
                        _ => break sent,
                    }
                };
                let created = match sent {
                    Ok(resp) if resp.status().as_u16() == 200 => resp.json::<Created>().await.ok(),
                    Ok(resp) => {
                        if errors == 0 {
                            eprintln!("lifecycle: POST /partner/stk answered {}", resp.status());
                        }
                        None
                    }
                    Err(e) => {
                        if errors == 0 {
                            eprintln!("lifecycle: POST /partner/stk failed: {e}");
                        }
                        None
                    }
                };
                match created {
                    Some(c) => made.push((m, c.charge_ref)),
                    None => errors += 1,
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
async fn wait_idle(client: &Client, base: &str, tokens: &[&str], deadline: Instant, poll: Duration) -> Option<Instant> {
    let mut busy: Vec<String> = tokens.iter().map(|t| (*t).to_owned()).collect();
    let mut warned = false;
    let mut warn = |e: anyhow::Error| {
        if !warned {
            eprintln!("lifecycle: completion check failed: {e:#}");
            warned = true;
        }
    };
    loop {
        if let Some(first) = busy.first() {
            match has_unfinished(client, base, first).await {
                Ok(true) => {}
                Err(e) => warn(e),
                Ok(false) => {
                    busy.remove(0);
                    let checks: Vec<_> = busy
                        .iter()
                        .map(|token| {
                            let (client, base, token) = (client.clone(), base.to_owned(), token.clone());
                            tokio::spawn(async move { has_unfinished(&client, &base, &token).await })
                        })
                        .collect();
                    let mut still_busy = Vec::new();
                    for (token, check) in busy.drain(..).zip(checks) {
                        match check.await {
                            Ok(Ok(false)) => {}
                            Ok(Ok(true)) => still_busy.push(token),
                            Ok(Err(e)) => {
                                warn(e);
                                still_busy.push(token);
                            }
                            Err(e) => {
                                warn(e.into());
                                still_busy.push(token);
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
async fn has_unfinished(client: &Client, base: &str, token: &str) -> Result<bool> {
    for state in ["pending", "authorised"] {
        let page = api::list_charges(client, base, token, Some(state), 1, None).await?;
        if !page.data.is_empty() {
            return Ok(true);
        }
    }
    Ok(false)
}

fn parse_time(s: Option<&str>) -> Option<OffsetDateTime> {
    s.and_then(|s| OffsetDateTime::parse(s, &Rfc3339).ok())
}

fn earliest(acc: Option<OffsetDateTime>, s: Option<&str>) -> Option<OffsetDateTime> {
    match (acc, parse_time(s)) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

fn latest(acc: Option<OffsetDateTime>, s: Option<&str>) -> Option<OffsetDateTime> {
    match (acc, parse_time(s)) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

fn per_sec(n: u64, secs: f64) -> f64 {
    if secs > 0.0 {
        n as f64 / secs
    } else {
        0.0
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn time_bounds_ignore_missing_and_bad_values() {
        let a = earliest(None, Some("2026-11-22T10:00:01.250Z"));
        let a = earliest(a, Some("not a time"));
        let a = earliest(a, Some("2026-11-22T10:00:00.500Z"));
        let b = latest(None, Some("2026-11-22T10:00:03Z"));
        let b = latest(b, None);
        assert_eq!((b.unwrap() - a.unwrap()).as_seconds_f64(), 2.5);
    }
}
