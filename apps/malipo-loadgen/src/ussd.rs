//! `ussd`: live-mode charge approvals over the USSD menu.
//!
//! Setup (not timed): the operator opens `--customers` wallets (random Kenyan numbers, no ID, so
//! KYC tier 0) and sets each one's PIN, and the agent cashes `--balance` in to each. Measured:
//! `--concurrency` workers; each takes a customer no other worker holds, the merchant pushes a live
//! charge of `--amount` to it (`POST /partner/stk`), and the gateway drives one session at once
//! (a live prompt is approvable as soon as it is pending): texts `""`, `3`, `3*1`, `3*1*1`,
//! `3*1*1*PIN`, form-encoded, as Africa's Talking sends them. The approvals list shows the
//! customer's pending charges oldest first, and a customer is used by one worker at a time, so
//! `1` is the charge just pushed. A session counts when its last screen is `END …approved…`.
//!
//! Every hop's round trip is timed; the last (PIN) hop separately, since it runs the Argon2id PIN
//! verification and the authorisation. The run ends after `--duration-secs`, after `--count`
//! sessions, or when no customer is left with money for another charge (`exhausted`). Then it
//! waits (at most `--settle-secs`) until the merchant has no `authorised` charge left and counts
//! its `completed` ones, so the report shows that the approvals were really paid.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use hdrhistogram::Histogram;
use reqwest::Client;
use serde::Serialize;
use serde_json::json;
use uuid::Uuid;

use crate::api;

const SERVICE_CODE: &str = "*384#";

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// `{base_url}`, e.g. http://127.0.0.1:8080/api/v1
    #[arg(long)]
    base_url: String,
    /// Live credential of an operator (scope `wallets`): opens the wallets, sets the PINs.
    #[arg(long)]
    operator_id: String,
    #[arg(long)]
    operator_secret: String,
    /// Live credential of an agent (scope `agent`) with a funded float: cashes in.
    #[arg(long)]
    agent_id: String,
    #[arg(long)]
    agent_secret: String,
    /// Live credential of a USSD gateway (scope `ussd`): drives the sessions.
    #[arg(long)]
    gateway_id: String,
    #[arg(long)]
    gateway_secret: String,
    /// Live credential of a merchant (scope `payments`), dedicated to the run: pushes the charges.
    #[arg(long)]
    merchant_id: String,
    #[arg(long)]
    merchant_secret: String,
    /// Customers (wallets) to open; at least --concurrency.
    #[arg(long, default_value_t = 50)]
    customers: usize,
    /// Concurrent sessions (workers and pooled connections).
    #[arg(long, default_value_t = 8)]
    concurrency: usize,
    /// Length of the measured phase.
    #[arg(long, default_value_t = 30)]
    duration_secs: u64,
    /// Stop after this many sessions (started), if that comes before --duration-secs.
    #[arg(long)]
    count: Option<u64>,
    /// Whole KES cashed in to each customer (tier 0 allows up to 5,000 per transaction).
    #[arg(long, default_value_t = 1000)]
    balance: u64,
    /// Whole KES per charge; a customer takes part in at most balance / amount sessions.
    #[arg(long, default_value_t = 10)]
    amount: u64,
    /// The customers' PIN (4 digits, not a weak one).
    #[arg(long, default_value = "4826")]
    pin: String,
    /// After the measured phase, wait at most this long for the approved charges to complete.
    #[arg(long, default_value_t = 15)]
    settle_secs: u64,
}

/// The one JSON object printed on stdout.
#[derive(Debug, Serialize)]
struct Report {
    /// Sessions whose last screen was `END …approved…`.
    sessions: u64,
    /// `sessions / duration_secs`.
    approvals_per_sec: f64,
    /// Round trip of the four hops before the PIN (texts `""`, `3`, `3*1`, `3*1*1`), 200 answers.
    hop_p50_ms: f64,
    hop_p99_ms: f64,
    /// Round trip of the PIN hop: Argon2id verification of the PIN, then the authorisation.
    pin_hop_p50_ms: f64,
    pin_hop_p99_ms: f64,
    /// Sessions that did not end approved (a refused charge, a non-200 hop, an unexpected screen).
    errors: u64,
    /// Errors by step and cause.
    error_kinds: BTreeMap<String, u64>,
    customers: usize,
    concurrency: usize,
    /// Sessions started (`sessions + errors`).
    attempts: u64,
    /// `POST /partner/stk` before each session, 200 answers.
    charge_p50_ms: f64,
    charge_p99_ms: f64,
    /// From the charge request to the approval screen.
    session_p50_ms: f64,
    session_p99_ms: f64,
    amount: u64,
    balance: u64,
    /// Opening the wallets, setting the PINs and cashing in (not measured).
    setup_secs: f64,
    /// From the start of the measured phase to the end of its last session.
    duration_secs: f64,
    /// The run ended early because no free customer had money for another charge.
    exhausted: bool,
    /// The merchant's completed charges after the settling wait.
    completed: u64,
    /// Whether no charge was left `authorised` within --settle-secs.
    settled: bool,
}

struct Customer {
    msisdn: String,
    /// Sessions it can still pay for.
    left: u64,
}

struct Plan {
    client: Client,
    base: String,
    merchant: String,
    gateway: String,
    pin: String,
    amount: String,
    end: Instant,
    count: Option<u64>,
    started: AtomicU64,
    free: Mutex<VecDeque<Customer>>,
    exhausted: AtomicBool,
}

struct Tally {
    hop_us: Histogram<u64>,
    pin_hop_us: Histogram<u64>,
    charge_us: Histogram<u64>,
    session_us: Histogram<u64>,
    sessions: u64,
    errors: BTreeMap<String, u64>,
}

impl Tally {
    fn new() -> Result<Self> {
        // 1 µs .. 120 s at 3 significant digits.
        let h = || Histogram::new_with_bounds(1, 120_000_000, 3);
        Ok(Self { hop_us: h()?, pin_hop_us: h()?, charge_us: h()?, session_us: h()?, sessions: 0, errors: BTreeMap::new() })
    }

    fn merge(&mut self, other: &Tally) -> Result<()> {
        self.hop_us.add(&other.hop_us)?;
        self.pin_hop_us.add(&other.pin_hop_us)?;
        self.charge_us.add(&other.charge_us)?;
        self.session_us.add(&other.session_us)?;
        self.sessions += other.sessions;
        for (kind, n) in &other.errors {
            *self.errors.entry(kind.clone()).or_default() += n;
        }
        Ok(())
    }

    fn error(&mut self, kind: String, detail: &str) {
        let n = self.errors.entry(kind.clone()).or_default();
        if *n == 0 {
            eprintln!("ussd: {kind}: {detail}");
        }
        *n += 1;
    }
}

fn record(h: &mut Histogram<u64>, d: Duration) {
    h.saturating_record(u64::try_from(d.as_micros()).unwrap_or(u64::MAX).max(1));
}

fn ms(h: &Histogram<u64>, q: f64) -> f64 {
    h.value_at_quantile(q) as f64 / 1000.0
}

pub(crate) async fn run(args: Args) -> Result<serde_json::Value> {
    if args.concurrency == 0 {
        bail!("--concurrency must be at least 1");
    }
    if args.customers < args.concurrency {
        bail!("--customers must be at least --concurrency (a customer is in one session at a time)");
    }
    if args.amount == 0 || args.balance < args.amount {
        bail!("--amount must be at least 1 and at most --balance");
    }
    let base = api::base(&args.base_url);
    let client = api::client(args.concurrency)?;
    let login = |id: &str, secret: &str| api::Credentials { client_id: id.to_owned(), client_secret: secret.to_owned() };
    let operator = api::token(&client, &base, &login(&args.operator_id, &args.operator_secret)).await?;
    let agent = api::token(&client, &base, &login(&args.agent_id, &args.agent_secret)).await?;
    let gateway = api::token(&client, &base, &login(&args.gateway_id, &args.gateway_secret)).await?;
    let merchant = api::token(&client, &base, &login(&args.merchant_id, &args.merchant_secret)).await?;

    let setup_start = Instant::now();
    let msisdns = setup(&client, &base, &operator, &agent, &args).await?;
    let setup_secs = setup_start.elapsed().as_secs_f64();

    let per_customer = args.balance / args.amount;
    let start = Instant::now();
    let plan = Arc::new(Plan {
        client: client.clone(),
        base: base.clone(),
        merchant: merchant.clone(),
        gateway,
        pin: args.pin.clone(),
        amount: args.amount.to_string(),
        end: start + Duration::from_secs(args.duration_secs),
        count: args.count,
        started: AtomicU64::new(0),
        free: Mutex::new(msisdns.into_iter().map(|msisdn| Customer { msisdn, left: per_customer }).collect()),
        exhausted: AtomicBool::new(false),
    });
    let workers: Vec<_> = (0..args.concurrency).map(|_| tokio::spawn(worker(Arc::clone(&plan)))).collect();
    let mut total = Tally::new()?;
    for handle in workers {
        total.merge(&handle.await.context("worker panicked")??)?;
    }
    let duration = start.elapsed().as_secs_f64();

    let (completed, settled) = settle(&client, &base, &merchant, Duration::from_secs(args.settle_secs)).await?;
    let errors: u64 = total.errors.values().sum();
    let report = Report {
        sessions: total.sessions,
        approvals_per_sec: if duration > 0.0 { total.sessions as f64 / duration } else { 0.0 },
        hop_p50_ms: ms(&total.hop_us, 0.50),
        hop_p99_ms: ms(&total.hop_us, 0.99),
        pin_hop_p50_ms: ms(&total.pin_hop_us, 0.50),
        pin_hop_p99_ms: ms(&total.pin_hop_us, 0.99),
        errors,
        error_kinds: total.errors,
        customers: args.customers,
        concurrency: args.concurrency,
        attempts: total.sessions + errors,
        charge_p50_ms: ms(&total.charge_us, 0.50),
        charge_p99_ms: ms(&total.charge_us, 0.99),
        session_p50_ms: ms(&total.session_us, 0.50),
        session_p99_ms: ms(&total.session_us, 0.99),
        amount: args.amount,
        balance: args.balance,
        setup_secs,
        duration_secs: duration,
        exhausted: plan.exhausted.load(Ordering::Relaxed),
        completed,
        settled,
    };
    Ok(serde_json::to_value(report)?)
}

/// `POST` a JSON body with a fresh `Idempotency-Key`, reading the whole answer; an error unless 200.
async fn post(client: &Client, url: &str, token: &str, body: &serde_json::Value) -> Result<()> {
    let resp = client
        .post(url)
        .bearer_auth(token)
        .header("Idempotency-Key", Uuid::new_v4().to_string())
        .json(body)
        .send()
        .await
        .with_context(|| format!("POST {url}"))?;
    let status = resp.status();
    let text = resp.text().await?;
    if status.as_u16() != 200 {
        bail!("POST {url}: {status}: {text}");
    }
    Ok(())
}

/// Opens the customers' wallets, sets their PINs and cashes in, `--concurrency` customers at a
/// time. Returns their numbers. Any failure stops the run: the measurement needs them all.
async fn setup(client: &Client, base: &str, operator: &str, agent: &str, args: &Args) -> Result<Vec<String>> {
    let msisdns: Arc<Vec<String>> = Arc::new((0..args.customers).map(|_| api::random_msisdn()).collect());
    let next = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for _ in 0..args.concurrency {
        let (client, base, operator, agent) = (client.clone(), base.to_owned(), operator.to_owned(), agent.to_owned());
        let (msisdns, next, pin, balance) = (Arc::clone(&msisdns), Arc::clone(&next), args.pin.clone(), args.balance.to_string());
        tasks.push(tokio::spawn(async move {
            while let Some(msisdn) = usize::try_from(next.fetch_add(1, Ordering::Relaxed)).ok().and_then(|i| msisdns.get(i)) {
                let wallet = json!({"msisdn": msisdn, "first_name": "Bench", "last_name": "Customer"});
                post(&client, &format!("{base}/wallets"), &operator, &wallet).await?;
                post(&client, &format!("{base}/wallets/{msisdn}/pin"), &operator, &json!({"new_pin": pin})).await?;
                let cash_in = json!({"customer_msisdn": msisdn, "amount": balance});
                post(&client, &format!("{base}/agents/cash-in"), &agent, &cash_in).await?;
            }
            Ok::<(), anyhow::Error>(())
        }));
    }
    for task in tasks {
        task.await.context("setup task panicked")?.context("setting up the customers")?;
    }
    Ok(msisdns.to_vec())
}

async fn worker(plan: Arc<Plan>) -> Result<Tally> {
    let mut tally = Tally::new()?;
    loop {
        if Instant::now() >= plan.end {
            break;
        }
        if plan.count.is_some_and(|count| plan.started.load(Ordering::Relaxed) >= count) {
            break;
        }
        let taken = plan.free.lock().map_err(|_| anyhow!("customer pool poisoned"))?.pop_front();
        let Some(mut customer) = taken else {
            // Every customer left is in a session or has spent its balance.
            plan.exhausted.store(true, Ordering::Relaxed);
            break;
        };
        let n = plan.started.fetch_add(1, Ordering::Relaxed);
        if plan.count.is_some_and(|count| n >= count) {
            plan.free.lock().map_err(|_| anyhow!("customer pool poisoned"))?.push_front(customer);
            break;
        }
        customer.left -= 1;
        session(&plan, &customer.msisdn, n, &mut tally).await;
        if customer.left > 0 {
            plan.free.lock().map_err(|_| anyhow!("customer pool poisoned"))?.push_back(customer);
        }
    }
    Ok(tally)
}

/// One charge and the session approving it. Records into `tally`; a failure is one error.
async fn session(plan: &Plan, msisdn: &str, n: u64, tally: &mut Tally) {
    let began = Instant::now();
    let body = json!({
        "payer_msisdn": msisdn,
        "amount": plan.amount,
        "reference": format!("ussd-{n}"),
        "idem": Uuid::new_v4().to_string(),
    });
    match plan.client.post(format!("{}/partner/stk", plan.base)).bearer_auth(&plan.merchant).json(&body).send().await {
        Ok(resp) => {
            let status = resp.status().as_u16();
            let text = resp.text().await.unwrap_or_default();
            if status != 200 {
                return tally.error(format!("charge: {status}"), &text);
            }
            record(&mut tally.charge_us, began.elapsed());
        }
        Err(e) => return tally.error("charge: transport".to_owned(), &e.to_string()),
    }

    let session_id = format!("bench-{}", Uuid::new_v4().simple());
    let texts = ["".to_owned(), "3".to_owned(), "3*1".to_owned(), "3*1*1".to_owned(), format!("3*1*1*{}", plan.pin)];
    let last = texts.len() - 1;
    for (i, text) in texts.iter().enumerate() {
        let step = if i == last { "pin hop".to_owned() } else { format!("hop {}", i + 1) };
        let form = [("sessionId", session_id.as_str()), ("serviceCode", SERVICE_CODE), ("phoneNumber", msisdn), ("text", text.as_str())];
        let sent = Instant::now();
        let resp = match plan.client.post(format!("{}/ussd", plan.base)).bearer_auth(&plan.gateway).form(&form).send().await {
            Ok(resp) => resp,
            Err(e) => return tally.error(format!("{step}: transport"), &e.to_string()),
        };
        let status = resp.status().as_u16();
        let screen = match resp.text().await {
            Ok(screen) => screen,
            Err(e) => return tally.error(format!("{step}: transport"), &e.to_string()),
        };
        let took = sent.elapsed();
        if status != 200 {
            return tally.error(format!("{step}: {status}"), &screen);
        }
        if i == last {
            record(&mut tally.pin_hop_us, took);
            if !(screen.starts_with("END ") && screen.contains("approved")) {
                return tally.error(format!("{step}: not approved"), &screen);
            }
        } else {
            record(&mut tally.hop_us, took);
            if !screen.starts_with("CON ") {
                return tally.error(format!("{step}: unexpected screen"), &screen);
            }
        }
    }
    record(&mut tally.session_us, began.elapsed());
    tally.sessions += 1;
}

/// Waits (at most `limit`) until the merchant has no `authorised` charge, then counts its
/// `completed` ones. Returns (completed, settled).
async fn settle(client: &Client, base: &str, merchant: &str, limit: Duration) -> Result<(u64, bool)> {
    let deadline = Instant::now() + limit;
    let settled = loop {
        if api::list_charges(client, base, merchant, Some("authorised"), 1, None).await?.data.is_empty() {
            break true;
        }
        if Instant::now() >= deadline {
            break false;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let mut completed = 0u64;
    let mut cursor: Option<String> = None;
    loop {
        let page = api::list_charges(client, base, merchant, Some("completed"), 100, cursor.as_deref()).await?;
        completed += page.data.len() as u64;
        match page.next_cursor {
            Some(next) if page.has_more => cursor = Some(next),
            _ => break,
        }
    }
    Ok((completed, settled))
}
