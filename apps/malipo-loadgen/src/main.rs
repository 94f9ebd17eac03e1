//! `malipo-loadgen`: a small HTTP load generator for the Malipo API, driven by `bench/run.sh`.
//!
//! Every subcommand prints exactly one JSON object on stdout; diagnostics go to stderr.

mod api;
mod bulk;
mod charges;
mod lifecycle;
mod payouts;
mod receiver;
mod redeliver;
mod ussd;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "malipo-loadgen", about = "Load generator for the Malipo HTTP API (used by `just bench`)")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Create charges with N concurrent workers (closed loop, or open loop with --rate) and report
    /// throughput and latency of the 200 responses.
    Charges(charges::Args),
    /// Create charges round-robin over several merchants, wait until all reach a final state and
    /// report the created -> completed rate.
    Lifecycle(lifecycle::Args),
    /// Wait until the merchants have no pending or authorised charges left (drains background work
    /// between measurements).
    WaitIdle(lifecycle::WaitIdleArgs),
    /// A minimal HTTP/1.1 webhook receiver on 127.0.0.1 that acknowledges every request at once
    /// and counts them; stops after --duration-secs (or on SIGINT/SIGTERM).
    Receiver(receiver::Args),
    /// Queue a redelivery of every event in a file at once (a backlog for the webhook workers).
    Redeliver(redeliver::Args),
    /// Live-mode charge approvals over the USSD menu: opens customers' wallets, then workers push a
    /// live charge to a customer and approve it in one USSD session; reports approvals/s and the
    /// hops' round trips (the PIN hop separately).
    Ussd(ussd::Args),
    /// Create single payouts with N concurrent workers, then wait until none is pending; reports
    /// creations/s, creation p50/p99 and the created -> final rate.
    Payouts(payouts::Args),
    /// A maker/checker bulk payout (CSV upload, approval, paid to the end) under a charge-creation
    /// load; reports upload and approval times, the time until every item is final, and charge
    /// p50/p99 during the batch against a baseline measured right before.
    Bulk(bulk::BulkArgs),
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let report = runtime.block_on(async {
        match cli.command {
            Command::Charges(args) => charges::run(args).await,
            Command::Lifecycle(args) => lifecycle::run(args).await,
            Command::WaitIdle(args) => lifecycle::wait_idle_command(args).await,
            Command::Receiver(args) => receiver::run(args).await,
            Command::Redeliver(args) => redeliver::run(args).await,
            Command::Ussd(args) => ussd::run(args).await,
            Command::Payouts(args) => payouts::run(args).await,
            Command::Bulk(args) => bulk::run(args).await,
        }
    })?;
    println!("{}", serde_json::to_string(&report)?);
    Ok(())
}
