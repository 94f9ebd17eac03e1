//! The callback worker: claims due callbacks (the outcomes requests asked for with the GSMA
//! door's `X-Callback-URL`), renders each as the GSMA door answers it (`malipo_gsma::callbacks`),
//! `PUT`s it through the webhook sender's guarded clients (the same address guard, no redirects,
//! no proxies) and records what came back, which schedules the next attempt. All state is in
//! the database; any number of instances may run this.

use std::sync::Arc;
use std::time::Duration;

use malipo_service::{CallbackJob, Platform, SendOutcome};
use malipo_webhooks::check_url;
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};

use crate::delivery::{answer, refused_text, Sender};

/// At most this many callbacks are claimed (and sent at once) per round.
const BATCH: usize = 32;
/// Pause when there was nothing due.
const IDLE: Duration = Duration::from_millis(100);

/// Spawns the callback loop. Once `stop` is true it claims nothing more; the sends of the round
/// in flight finish (bounded by the send timeout) and are recorded.
pub fn spawn(platform: Platform, sender: Arc<Sender>, mut stop: watch::Receiver<bool>) -> JoinHandle<()> {
    tokio::spawn(async move {
        while !*stop.borrow() {
            let sent = round(&platform, &sender).await;
            if sent == 0 {
                tokio::select! {
                    _ = tokio::time::sleep(IDLE) => {}
                    changed = stop.changed() => if changed.is_err() { break },
                }
            }
        }
        tracing::debug!("callback worker stopped");
    })
}

/// Claims, sends and records one round; returns how many were sent.
///
/// A round's attempts run together, each recorded as it ends.
pub async fn round(platform: &Platform, sender: &Arc<Sender>) -> usize {
    let p = platform.clone();
    let jobs = match tokio::task::spawn_blocking(move || p.callbacks().claim(BATCH)).await {
        Ok(Ok(jobs)) => jobs,
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "claiming due callbacks failed");
            return 0;
        }
        Err(e) => {
            tracing::error!(error = %e, "callback claim task failed");
            return 0;
        }
    };
    let count = jobs.len();
    let mut sends = JoinSet::new();
    for job in jobs {
        let (platform, sender) = (platform.clone(), Arc::clone(sender));
        sends.spawn(async move {
            let outcome = send(&platform, &sender, &job).await;
            tracing::debug!(callback = %job.id, object = %job.object_id, ?outcome, "callback attempt");
            let p = platform.clone();
            match tokio::task::spawn_blocking(move || p.callbacks().record(&job, &outcome)).await {
                Ok(Ok(())) => {}
                // The lease lapses and the callback comes due again: delivery is at least once.
                Ok(Err(e)) => tracing::warn!(error = %e, "recording a callback attempt failed"),
                Err(e) => tracing::error!(error = %e, "callback record task failed"),
            }
        });
    }
    while sends.join_next().await.is_some() {}
    count
}

/// Renders and sends one attempt.
async fn send(platform: &Platform, sender: &Sender, job: &CallbackJob) -> SendOutcome {
    if let Err(e) = check_url(&job.url, job.policy) {
        return SendOutcome::Failed(refused_text(&e));
    }
    let (p, j) = (platform.clone(), job.clone());
    let body = match tokio::task::spawn_blocking(move || malipo_gsma::callbacks::callback_body(&p, &j)).await {
        Ok(Ok(body)) => body,
        Ok(Err(e)) => return SendOutcome::Failed(format!("the outcome could not be read: {e}")),
        Err(e) => return SendOutcome::Failed(format!("the outcome could not be read: {e}")),
    };
    let headers = malipo_gsma::callbacks::callback_headers(job, &body);
    match sender.client(job.policy, job.timeout) {
        Ok(client) => answer(client.put(&job.url), job.timeout, &headers, body).await,
        Err(e) => SendOutcome::Failed(e),
    }
}
