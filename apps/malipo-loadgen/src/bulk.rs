//! `bulk`: money out, the maker/checker batch under a concurrent charge load (contract section 6).
//!
//! Phase A: closed-loop charge creation by a separate merchant for `--baseline-secs` -> p50/p99
//! without the batch. Phase B: a CSV of `--items` distinct payees is uploaded by the maker,
//! approved by the checker (both timed), and while the batch is paid (`GET /bulk-payouts/{id}`
//! every `--poll-ms` until `completed`) the same charge load runs again -> time until every item is
//! final, the batch's counts, and charge p50/p99 during the batch over the baseline's.
//!
//! The paying organisation's payout account must be funded (`malipo account fund`). The helpers
//! shared with the `payouts` subcommand come from [`crate::payouts`].

use std::collections::HashSet;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use hdrhistogram::Histogram;
use reqwest::Client;
use serde::{Deserialize, Serialize};
use serde_json::json;
use uuid::Uuid;

use crate::api;
use crate::payouts::{histogram, parse_time, per_sec, record, AMOUNT};

#[derive(Debug, clap::Args)]
pub(crate) struct BulkArgs {
    /// `{base_url}`, e.g. http://127.0.0.1:8080/api/v1
    #[arg(long)]
    base_url: String,
    /// The maker: a credential of the paying organisation with `bulk:create`.
    #[arg(long)]
    maker_id: String,
    #[arg(long)]
    maker_secret: String,
    /// The checker: another credential of the same organisation with `bulk:approve`.
    #[arg(long)]
    checker_id: String,
    #[arg(long)]
    checker_secret: String,
    /// Items in the batch (1 to 10,000), each KES 10.00 to a distinct random payee.
    #[arg(long, default_value_t = 10_000)]
    items: usize,
    /// The merchant whose charge creations measure the batch's effect on the API.
    #[arg(long)]
    charge_client_id: String,
    #[arg(long)]
    charge_client_secret: String,
    /// Concurrent charge creations (closed loop) in both phases.
    #[arg(long, default_value_t = 8)]
    charge_concurrency: usize,
    /// Length of the charge-only baseline (phase A).
    #[arg(long, default_value_t = 10)]
    baseline_secs: u64,
    /// Give up waiting for the batch this long after the approval.
    #[arg(long, default_value_t = 120)]
    timeout_secs: u64,
    /// Interval between `GET /bulk-payouts/{id}` checks.
    #[arg(long, default_value_t = 200)]
    poll_ms: u64,
}

#[derive(Debug, Deserialize)]
struct Counts {
    #[serde(default)]
    pending: u64,
    #[serde(default)]
    completed: u64,
    #[serde(default)]
    failed: u64,
}

/// The fields of a batch object the load generator reads.
#[derive(Debug, Deserialize)]
struct Batch {
    batch_id: String,
    state: String,
    #[serde(default)]
    item_count: u64,
    counts: Counts,
    #[serde(default)]
    approved_at: Option<String>,
    #[serde(default)]
    completed_at: Option<String>,
}

/// A charge-load window's figures.
#[derive(Debug, Serialize)]
struct ChargeWindow {
    requests: u64,
    ok: u64,
    errors: u64,
    duration_secs: f64,
    rate_per_sec: f64,
    p50_ms: f64,
    p90_ms: f64,
    p99_ms: f64,
    max_ms: f64,
}

#[derive(Debug, Serialize)]
struct BulkReport {
    batch_id: String,
    items: u64,
    csv_bytes: usize,
    /// `POST /bulk-payouts` (text/csv) round trip.
    upload_secs: f64,
    /// `POST /bulk-payouts/{id}/approve` round trip.
    approve_secs: f64,
    /// From sending the approval to the poll that saw the batch `completed` (or the timeout).
    all_final_secs: f64,
    /// Server clock: the batch's `completed_at - approved_at`.
    server_all_final_secs: Option<f64>,
    /// Final items per second over `all_final_secs`.
    items_per_sec: f64,
    state: String,
    completed: u64,
    failed: u64,
    pending: u64,
    timed_out: bool,
    polls: u64,
    /// Wall clock (Unix ms) when the approval was sent and when the end was seen, to line up
    /// samples taken outside (e.g. `pg_stat_activity`).
    approve_sent_unix_ms: u64,
    done_unix_ms: u64,
    charge_concurrency: usize,
    /// Phase A: charge creation alone.
    baseline: ChargeWindow,
    /// Phase B: charge creation while the batch is paid (approval answer to batch completed).
    during: ChargeWindow,
    /// `during.p99_ms / baseline.p99_ms`.
    p99_ratio: Option<f64>,
    p50_ratio: Option<f64>,
}

pub(crate) async fn run(args: BulkArgs) -> Result<serde_json::Value> {
    if args.charge_concurrency == 0 {
        bail!("--charge-concurrency must be at least 1");
    }
    if !(1..=10_000).contains(&args.items) {
        bail!("--items must be 1 to 10,000");
    }
    let base = api::base(&args.base_url);
    let client = api::client(args.charge_concurrency + 2)?;
    let login = |id: &str, secret: &str| api::Credentials { client_id: id.to_owned(), client_secret: secret.to_owned() };
    let maker = api::token(&client, &base, &login(&args.maker_id, &args.maker_secret)).await?;
    let checker = api::token(&client, &base, &login(&args.checker_id, &args.checker_secret)).await?;
    let merchant = api::token(&client, &base, &login(&args.charge_client_id, &args.charge_client_secret)).await?;
    let csv = build_csv(args.items);

    // Phase A: the charge load alone.
    eprintln!("bulk: baseline, {} s of charge creation at concurrency {}", args.baseline_secs, args.charge_concurrency);
    let load = ChargeLoad::start(&client, &base, &merchant, args.charge_concurrency)?;
    tokio::time::sleep(Duration::from_secs(args.baseline_secs)).await;
    let baseline = load.stop().await?;
    eprintln!("bulk: baseline {:.0}/s, p50 {:.2} ms, p99 {:.2} ms", baseline.rate_per_sec, baseline.p50_ms, baseline.p99_ms);

    // Phase B: upload, approve, then the same load while the batch is paid.
    let reference = format!("bench-bulk-{}", Uuid::new_v4().simple());
    let sent = Instant::now();
    let resp = client
        .post(format!("{base}/bulk-payouts"))
        .bearer_auth(&maker)
        .query(&[("reference", reference.as_str())])
        .header("Content-Type", "text/csv")
        .header("Idempotency-Key", Uuid::new_v4().to_string())
        .timeout(Duration::from_secs(120))
        .body(csv.clone())
        .send()
        .await
        .context("POST /bulk-payouts")?;
    let status = resp.status();
    let body = resp.bytes().await?;
    let upload_secs = sent.elapsed().as_secs_f64();
    if !status.is_success() {
        bail!("POST /bulk-payouts: {status}: {}", truncate(&String::from_utf8_lossy(&body), 2000));
    }
    let batch: Batch = serde_json::from_slice(&body).context("POST /bulk-payouts: unexpected body")?;
    eprintln!("bulk: {} uploaded ({} items, state {}) in {upload_secs:.3} s", batch.batch_id, batch.item_count, batch.state);
    let id = batch.batch_id;

    let approve_sent = Instant::now();
    let approve_sent_unix_ms = unix_ms();
    let resp = client
        .post(format!("{base}/bulk-payouts/{id}/approve"))
        .bearer_auth(&checker)
        .header("Idempotency-Key", Uuid::new_v4().to_string())
        .json(&json!({}))
        .send()
        .await
        .context("POST /bulk-payouts/{id}/approve")?;
    let status = resp.status();
    let body = resp.bytes().await?;
    let approve_secs = approve_sent.elapsed().as_secs_f64();
    if !status.is_success() {
        bail!("POST /bulk-payouts/{id}/approve: {status}: {}", truncate(&String::from_utf8_lossy(&body), 2000));
    }
    eprintln!("bulk: approved in {approve_secs:.3} s; charge load while it is paid");

    let load = ChargeLoad::start(&client, &base, &merchant, args.charge_concurrency)?;
    let deadline = approve_sent + Duration::from_secs(args.timeout_secs);
    let poll = Duration::from_millis(args.poll_ms.max(10));
    let mut polls = 0u64;
    let mut last: Option<Batch> = None;
    let mut warned = false;
    let done_at = loop {
        polls += 1;
        match get_batch(&client, &base, &maker, &id).await {
            Ok(b) => {
                let done = b.state == "completed";
                last = Some(b);
                if done {
                    break Some(Instant::now());
                }
            }
            Err(e) if !warned => {
                eprintln!("bulk: GET /bulk-payouts/{id} failed: {e:#}");
                warned = true;
            }
            Err(_) => {}
        }
        if Instant::now() >= deadline {
            break None;
        }
        tokio::time::sleep(poll).await;
    };
    let done_unix_ms = unix_ms();
    let during = load.stop().await?;
    let all_final_secs = done_at.unwrap_or_else(Instant::now).duration_since(approve_sent).as_secs_f64();
    let last = match last {
        Some(b) => b,
        None => get_batch(&client, &base, &maker, &id).await?,
    };
    let server_all_final = match (parse_time(last.approved_at.as_deref()), parse_time(last.completed_at.as_deref())) {
        (Some(a), Some(b)) if b >= a => Some((b - a).as_seconds_f64()),
        _ => None,
    };
    eprintln!(
        "bulk: {} after {all_final_secs:.2} s ({} completed, {} failed, {} pending); charges {:.0}/s, p50 {:.2} ms, p99 {:.2} ms",
        last.state, last.counts.completed, last.counts.failed, last.counts.pending, during.rate_per_sec, during.p50_ms, during.p99_ms
    );
    let ratio = |a: f64, b: f64| if b > 0.0 { Some(a / b) } else { None };
    let report = BulkReport {
        batch_id: id,
        items: args.items as u64,
        csv_bytes: csv.len(),
        upload_secs,
        approve_secs,
        all_final_secs,
        server_all_final_secs: server_all_final,
        items_per_sec: per_sec(last.counts.completed + last.counts.failed, all_final_secs),
        state: last.state,
        completed: last.counts.completed,
        failed: last.counts.failed,
        pending: last.counts.pending,
        timed_out: done_at.is_none(),
        polls,
        approve_sent_unix_ms,
        done_unix_ms,
        charge_concurrency: args.charge_concurrency,
        p99_ratio: ratio(during.p99_ms, baseline.p99_ms),
        p50_ratio: ratio(during.p50_ms, baseline.p50_ms),
        baseline,
        during,
    };
    Ok(serde_json::to_value(report)?)
}

/// The batch as `text/csv`: the header, then one row per item to a distinct random payee.
fn build_csv(items: usize) -> String {
    let mut payees = HashSet::with_capacity(items);
    let mut csv = String::with_capacity(items * 48 + 64);
    csv.push_str("payee_msisdn,amount,reference,narration\r\n");
    let mut i = 0;
    while i < items {
        let payee = api::random_msisdn();
        if !payees.insert(payee.clone()) {
            continue;
        }
        // Writing to a String cannot fail.
        let _ = write!(csv, "{payee},{AMOUNT},bench-item-{i},bench payout {i}\r\n");
        i += 1;
    }
    csv
}

async fn get_batch(client: &Client, base: &str, token: &str, id: &str) -> Result<Batch> {
    let resp = client.get(format!("{base}/bulk-payouts/{id}")).bearer_auth(token).send().await?;
    let status = resp.status();
    let body = resp.bytes().await?;
    if !status.is_success() {
        bail!("{status}: {}", truncate(&String::from_utf8_lossy(&body), 500));
    }
    serde_json::from_slice(&body).context("unexpected body")
}

fn truncate(s: &str, max: usize) -> &str {
    match s.char_indices().nth(max) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

/// Closed-loop charge creation (`POST /partner/stk`) by N workers until stopped.
struct ChargeLoad {
    stop: Arc<AtomicBool>,
    started: Instant,
    workers: Vec<tokio::task::JoinHandle<Result<WorkerTally>>>,
}

/// One charge worker's figures.
struct WorkerTally {
    latency: Histogram<u64>,
    requests: u64,
    ok: u64,
}

impl ChargeLoad {
    fn start(client: &Client, base: &str, token: &str, concurrency: usize) -> Result<Self> {
        let stop = Arc::new(AtomicBool::new(false));
        let next = Arc::new(AtomicU64::new(0));
        let url = Arc::new(format!("{base}/partner/stk"));
        let token = Arc::new(token.to_owned());
        let workers = (0..concurrency)
            .map(|_| {
                let (client, stop, next, url, token) =
                    (client.clone(), Arc::clone(&stop), Arc::clone(&next), Arc::clone(&url), Arc::clone(&token));
                tokio::spawn(async move {
                    let mut latency = histogram()?;
                    let (mut requests, mut ok) = (0u64, 0u64);
                    while !stop.load(Ordering::Relaxed) {
                        let n = next.fetch_add(1, Ordering::Relaxed);
                        let sent = Instant::now();
                        let answer = client.post(url.as_str()).bearer_auth(token.as_str()).json(&api::charge_body(n, 0)).send().await;
                        requests += 1;
                        if let Ok(resp) = answer {
                            let code = resp.status().as_u16();
                            if resp.bytes().await.is_ok() && code == 200 {
                                ok += 1;
                                record(&mut latency, sent.elapsed());
                            } else if requests - ok == 1 {
                                eprintln!("bulk: POST /partner/stk answered {code}");
                            }
                        }
                    }
                    Ok(WorkerTally { latency, requests, ok })
                })
            })
            .collect();
        Ok(Self { stop, started: Instant::now(), workers })
    }

    async fn stop(self) -> Result<ChargeWindow> {
        self.stop.store(true, Ordering::Relaxed);
        let mut latency = histogram()?;
        let (mut requests, mut ok) = (0u64, 0u64);
        for worker in self.workers {
            let tally = worker.await.context("charge worker panicked")??;
            latency.add(&tally.latency)?;
            requests += tally.requests;
            ok += tally.ok;
        }
        let duration = self.started.elapsed().as_secs_f64();
        let ms = |q: f64| latency.value_at_quantile(q) as f64 / 1000.0;
        Ok(ChargeWindow {
            requests,
            ok,
            errors: requests - ok,
            duration_secs: duration,
            rate_per_sec: per_sec(ok, duration),
            p50_ms: ms(0.50),
            p90_ms: ms(0.90),
            p99_ms: ms(0.99),
            max_ms: latency.max() as f64 / 1000.0,
        })
    }
}

fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_csv_has_the_header_and_one_row_per_distinct_payee() {
        let csv = build_csv(500);
        let mut lines = csv.split("\r\n").filter(|l| !l.is_empty());
        assert_eq!(lines.next(), Some("payee_msisdn,amount,reference,narration"));
        let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
        assert_eq!(rows.len(), 500);
        assert!(rows.iter().all(|r| r.len() == 4 && r[1] == AMOUNT));
        assert_eq!(rows.iter().map(|r| r[0]).collect::<HashSet<_>>().len(), 500);
        assert_eq!(rows[7][2], "bench-item-7");
    }

    #[test]
    fn truncate_keeps_short_text_and_cuts_on_characters() {
        assert_eq!(truncate("abc", 10), "abc");
        assert_eq!(truncate("ñandú", 2), "ña");
    }
}
