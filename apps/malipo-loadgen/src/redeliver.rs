//! `redeliver`: queues `POST /events/{event_id}/redeliver` for many events at once, so the webhook
//! workers face a backlog and their own delivery rate (not the rate events are written) shows.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use serde::Serialize;
use uuid::Uuid;

use crate::api;

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// `{base_url}`, e.g. http://127.0.0.1:8080/api/v1
    #[arg(long)]
    base_url: String,
    #[arg(long)]
    client_id: String,
    #[arg(long)]
    client_secret: String,
    /// One event id (`evt_...`) per line.
    #[arg(long)]
    ids: PathBuf,
    #[arg(long, default_value_t = 32)]
    concurrency: usize,
}

#[derive(Debug, Serialize)]
struct Report {
    events: usize,
    queued: u64,
    errors: u64,
    secs: f64,
}

pub(crate) async fn run(args: Args) -> Result<serde_json::Value> {
    if args.concurrency == 0 {
        bail!("--concurrency must be at least 1");
    }
    let text = std::fs::read_to_string(&args.ids).with_context(|| format!("reading {}", args.ids.display()))?;
    let ids: Arc<Vec<String>> = Arc::new(text.lines().map(str::trim).filter(|l| !l.is_empty()).map(str::to_owned).collect());
    let base = api::base(&args.base_url);
    let client = api::client(args.concurrency)?;
    let creds = api::Credentials { client_id: args.client_id, client_secret: args.client_secret };
    let token = Arc::new(api::token(&client, &base, &creds).await?);
    let next = Arc::new(AtomicUsize::new(0));
    let queued = Arc::new(AtomicU64::new(0));
    let errors = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..args.concurrency {
        let (ids, next, queued, errors) = (Arc::clone(&ids), Arc::clone(&next), Arc::clone(&queued), Arc::clone(&errors));
        let (client, base, token) = (client.clone(), base.clone(), Arc::clone(&token));
        tasks.push(tokio::spawn(async move {
            while let Some(id) = ids.get(next.fetch_add(1, Ordering::Relaxed)) {
                let sent = client
                    .post(format!("{base}/events/{id}/redeliver"))
                    .bearer_auth(token.as_str())
                    .header("Idempotency-Key", Uuid::new_v4().to_string())
                    .json(&serde_json::json!({}))
                    .send()
                    .await;
                match sent {
                    Ok(resp) if resp.status().is_success() => {
                        queued.fetch_add(1, Ordering::Relaxed);
                    }
                    Ok(resp) => {
                        if errors.fetch_add(1, Ordering::Relaxed) < 3 {
                            let status = resp.status();
                            eprintln!("redeliver {id}: {status}: {}", resp.text().await.unwrap_or_default());
                        }
                    }
                    Err(e) => {
                        if errors.fetch_add(1, Ordering::Relaxed) < 3 {
                            eprintln!("redeliver {id}: {e}");
                        }
                    }
                }
            }
        }));
    }
    for task in tasks {
        task.await?;
    }
    let report = Report {
        events: ids.len(),
        queued: queued.load(Ordering::Relaxed),
        errors: errors.load(Ordering::Relaxed),
        secs: start.elapsed().as_secs_f64(),
    };
    Ok(serde_json::to_value(report)?)
}
