//! Background work: claiming due charges (sandbox decisions, completion, expiry) and due payouts
//! (paying the payee or failing), expiring payment requests past their time, sealing committed
//! journals into the audit chain, purging old idempotency keys and events past their retention.
//! All state is in the database; any number of instances may run these. Webhook sending is in
//! [`crate::delivery`].

use std::sync::Arc;
use std::time::{Duration, Instant};

use malipo_http::{BacklogMetrics, SealGauges};
use malipo_service::{write, Platform, ServiceError, SEAL_BATCH};
use tokio::sync::{watch, Semaphore};
use tokio::task::JoinHandle;

/// Charges (and payouts) claimed per batch.
const BATCH: usize = 64;
/// Pause when there was nothing to do.
const IDLE: Duration = Duration::from_millis(100);
/// How often the backlog of due work is measured.
const BACKLOG_EVERY: Duration = Duration::from_millis(250);
/// Pause of the sealer when its last pass did not fill a batch.
const SEAL_IDLE: Duration = Duration::from_millis(50);
/// Hot accounts whose waiting lines one sealer pass applies.
const APPLY_ACCOUNTS: usize = 64;
/// Keys are kept at least 24 hours; purged after 48.
const KEY_RETENTION_SECONDS: i64 = 48 * 3600;

/// Spawns `n` work loops, each taking turns at due charges, due payouts and payment requests past
/// their expiry (none when `n` is 0: another instance, or a test, advances them), of which at
/// most `payout_lanes` settle payouts at a time (a loop that finds every lane taken goes on with
/// the rest); one sealer loop (setting `gauges` after each pass) and one housekeeping loop; each
/// stops claiming once `stop` is true.
pub fn spawn(
    platform: Platform,
    (n, payout_lanes): (usize, usize),
    gauges: SealGauges,
    stop: watch::Receiver<bool>,
) -> Vec<JoinHandle<()>> {
    let lanes = Arc::new(Semaphore::new(payout_lanes));
    let mut handles: Vec<JoinHandle<()>> = (0..n)
        .map(|i| {
            let platform = platform.clone();
            let stop = stop.clone();
            tokio::spawn(charge_loop(i, platform, Arc::clone(&lanes), stop))
        })
        .collect();
    handles.push(tokio::spawn(sealer(platform.clone(), gauges, stop.clone())));
    handles.push(tokio::spawn(housekeeping(platform, stop)));
    handles
}

/// Seals committed journals into their ledgers' audit chains: a batch, and at once another if it
/// was full, else after a short pause; reports the backlog after each pass. Each pass first
/// applies the lines waiting on hot accounts. Several instances'
/// sealers take turns on a ledger (its head is locked while one seals).
async fn sealer(platform: Platform, gauges: SealGauges, mut stop: watch::Receiver<bool>) {
    while !*stop.borrow() {
        let p = platform.clone();
        let pass = tokio::task::spawn_blocking(move || {
            // A read first: with nothing to seal, no write transaction (on SQLite, no turn of the
            // one writer lock every few milliseconds).
            let sealer = p.sealer();
            // Lines waiting on hot accounts are applied on the same pass (one read when none waits).
            if let Err(e) = sealer.apply_waiting(APPLY_ACCOUNTS) {
                tracing::warn!(error = %e, "applying waiting ledger lines failed");
            }
            let (sealed, stats) = match sealer.unsealed() {
                Ok(s) if s.count == 0 => (Ok(0), Ok(s)),
                _ => (sealer.seal(SEAL_BATCH), sealer.unsealed()),
            };
            (sealed, stats.map(|s| (s.count, sealer.lag(&s))))
        })
        .await;
        let full = match pass {
            Ok((sealed, stats)) => {
                if let Ok((unsealed, lag)) = stats {
                    gauges.set(unsealed, lag);
                }
                match sealed {
                    Ok(n) => n >= SEAL_BATCH,
                    Err(e) => {
                        tracing::warn!(error = %e, "sealing journals failed");
                        false
                    }
                }
            }
            Err(e) => {
                tracing::error!(error = %e, "sealer task failed");
                false
            }
        };
        if !full {
            tokio::select! {
                _ = tokio::time::sleep(SEAL_IDLE) => {}
                _ = stop.changed() => {}
            }
        }
    }
    // What was committed before the stop is sealed now rather than at the next start.
    let p = platform.clone();
    if let Ok(Err(e)) = tokio::task::spawn_blocking(move || p.sealer().seal_all()).await {
        tracing::warn!(error = %e, "sealing journals at shutdown failed");
    }
    tracing::debug!("sealer stopped");
}

async fn charge_loop(i: usize, platform: Platform, payout_lanes: Arc<Semaphore>, mut stop: watch::Receiver<bool>) {
    // Payouts and payment requests are claimed again at once while they keep finding work, and
    // otherwise after an idle pause, so that a loop busy with charges does not poll them (three
    // statements each) on every pass. Payouts only in a free lane: without one, this pass skips
    // them and the next tries again.
    let mut other_due = [Instant::now(); 2];
    while !*stop.borrow() {
        let p = platform.clone();
        let poll = other_due.map(|due| due <= Instant::now());
        let lanes = Arc::clone(&payout_lanes);
        let claimed = match tokio::task::spawn_blocking(move || {
            let charges = p.processing().process_due(BATCH);
            let payouts = poll[0].then(|| lanes.try_acquire_owned().ok()).flatten().map(|_lane| p.payout_processing().process_due(BATCH));
            let requests = poll[1].then(|| p.payment_requests().expire_due(BATCH));
            (charges, [payouts, requests])
        })
        .await
        {
            Ok((charges, others)) => {
                let mut claimed = claimed_or_logged(i, "charges", charges);
                for ((what, result), due) in ["payouts", "expired payment requests"].into_iter().zip(others).zip(&mut other_due) {
                    if let Some(result) = result {
                        let n = claimed_or_logged(i, what, result);
                        *due = if n == 0 { Instant::now() + IDLE } else { Instant::now() };
                        claimed += n;
                    }
                }
                claimed
            }
            Err(e) => {
                tracing::error!(worker = i, error = %e, "worker task failed");
                0
            }
        };
        if claimed == 0 {
            tokio::select! {
                _ = tokio::time::sleep(IDLE) => {}
                _ = stop.changed() => {}
            }
        }
    }
    tracing::debug!(worker = i, "charge worker stopped");
}

/// How many items a claim took (none when it failed, which is logged).
fn claimed_or_logged(worker: usize, what: &str, result: Result<usize, ServiceError>) -> usize {
    result.unwrap_or_else(|e| {
        tracing::warn!(worker, error = %e, "claiming due {what} failed");
        0
    })
}

/// Measures the backlog of due work a few times a second: it opens and closes the intake gate
/// ([`malipo_service::backlog`]) and sets the backlog gauges. Runs on every instance, also one
/// without workers, since the backlog is the shared database's.
pub async fn monitor_backlog(platform: Platform, metrics: BacklogMetrics, mut stop: watch::Receiver<bool>) {
    while !*stop.borrow() {
        let p = platform.clone();
        match tokio::task::spawn_blocking(move || p.backlog().measure()).await {
            Ok(Ok(reading)) => metrics.record(&reading),
            Ok(Err(e)) => tracing::warn!(error = %e, "measuring the backlog failed"),
            Err(e) => tracing::error!(error = %e, "backlog task failed"),
        }
        tokio::select! {
            _ = tokio::time::sleep(BACKLOG_EVERY) => {}
            _ = stop.changed() => {}
        }
    }
}

async fn housekeeping(platform: Platform, mut stop: watch::Receiver<bool>) {
    while !*stop.borrow() {
        let p = platform.clone();
        let purged = tokio::task::spawn_blocking(move || {
            let before = p.now().plus_seconds(-KEY_RETENTION_SECONDS);
            write(p.store(), |tx| Ok(tx.purge_keys(before)?))
        })
        .await;
        match purged {
            Ok(Ok(n)) if n > 0 => tracing::info!(purged = n, "purged expired idempotency keys"),
            Ok(Err(e)) => tracing::warn!(error = %e, "purging idempotency keys failed"),
            _ => {}
        }
        let p = platform.clone();
        match tokio::task::spawn_blocking(move || p.housekeeping().purge_events()).await {
            Ok(Ok(n)) if n > 0 => tracing::info!(purged = n, "purged events past their retention"),
            Ok(Err(e)) => tracing::warn!(error = %e, "purging old events failed"),
            _ => {}
        }
        let p = platform.clone();
        match tokio::task::spawn_blocking(move || p.housekeeping().purge_ussd_sessions()).await {
            Ok(Ok(n)) if n > 0 => tracing::info!(purged = n, "purged expired USSD sessions"),
            Ok(Err(e)) => tracing::warn!(error = %e, "purging USSD sessions failed"),
            _ => {}
        }
        let p = platform.clone();
        match tokio::task::spawn_blocking(move || p.housekeeping().purge_console()).await {
            Ok(Ok((sessions, failures))) if sessions + failures > 0 => {
                tracing::info!(sessions, failures, "purged ended console sessions and stale sign-in failure counts");
            }
            Ok(Err(e)) => tracing::warn!(error = %e, "purging console sessions failed"),
            _ => {}
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_secs(600)) => {}
            _ = stop.changed() => {}
        }
    }
}
