//! The client's examples (`crates/malipo-client/examples/`), each run as the program an
//! integrator would run, against the real server: push a charge and wait for it; payroll (a CSV
//! uploaded by the maker, approved with the checker's key pair, followed to the end); the
//! webhook receiver (verifies, handles each event once, refuses a forgery); reconcile a day.
//!
//! The programs are the ones `cargo test --workspace` builds beside this test binary
//! (`target/<profile>/examples/`); run alone, build them first with
//! `cargo build -p malipo-client --examples`.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use malipo_client::{BulkPayoutState, ChargeFilter, ChargeState, Client, EventKind, NewEndpoint};

use crate::harness::{Creds, Db, TestApp};

crate::on_both!(
    push_charge_waits_for_the_outcome_and_says_it,
    payroll_uploads_approves_with_the_checker_and_follows_to_the_end,
    the_webhook_receiver_handles_each_event_once_and_refuses_a_forgery,
    reconcile_finds_the_day_in_agreement,
);

/// An example program, as `cargo test` built it.
fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile = exe.parent().and_then(std::path::Path::parent).unwrap();
    let path = profile.join("examples").join(name);
    assert!(path.exists(), "{} is missing: `cargo build -p malipo-client --examples` builds it", path.display());
    path
}

/// A running example: its output lines, collected as they come; killed when dropped.
struct Program {
    child: Child,
    lines: Arc<Mutex<Vec<String>>>,
}

impl Drop for Program {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Program {
    fn start(name: &str, env: &[(&str, &str)], args: &[&str]) -> Program {
        let mut child =
            Command::new(example(name)).args(args).envs(env.iter().copied()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        let lines = Arc::new(Mutex::new(Vec::new()));
        for out in [Box::new(child.stdout.take().unwrap()) as Box<dyn std::io::Read + Send>, Box::new(child.stderr.take().unwrap())] {
            let lines = Arc::clone(&lines);
            std::thread::spawn(move || {
                for line in BufReader::new(out).lines().map_while(Result::ok) {
                    lines.lock().unwrap().push(line);
                }
            });
        }
        Program { child, lines }
    }

    fn output(&self) -> Vec<String> {
        self.lines.lock().unwrap().clone()
    }

    /// The first output line `matches`, waiting for it up to `within`.
    async fn line(&self, within: Duration, matches: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + within;
        loop {
            if let Some(found) = self.output().into_iter().find(|l| matches(l)) {
                return found;
            }
            assert!(Instant::now() < deadline, "no such line in {:?}", self.output());
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Waits for the program to exit (up to `within`): its exit code and output.
    async fn finish(mut self, within: Duration) -> (i32, Vec<String>) {
        let deadline = Instant::now() + within;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                // The readers see end of file once the program is gone; give them a moment to drain.
                let drained = Instant::now() + Duration::from_secs(5);
                while Arc::strong_count(&self.lines) > 1 && Instant::now() < drained {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                return (status.code().unwrap_or(-1), self.output());
            }
            assert!(Instant::now() < deadline, "still running: {:?}", self.output());
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

fn merchant_env<'a>(app: &'a TestApp, c: &'a Creds) -> [(&'a str, &'a str); 3] {
    [("MALIPO_URL", app.base.as_str()), ("MALIPO_CLIENT_ID", c.client_id.as_str()), ("MALIPO_CLIENT_SECRET", c.client_secret.as_str())]
}

const RUN: Duration = Duration::from_secs(60);

async fn push_charge_waits_for_the_outcome_and_says_it(db: Db) {
    let app = TestApp::shared(db);
    let c = app.merchant().await;
    let env = merchant_env(app, &c);
    let (code, out) = Program::start("push_charge", &env, &["254712345678", "12.50", "EX-PUSH-1"]).finish(RUN).await;
    assert_eq!(code, 0, "{out:?}");
    let client = Client::new(&app.base, &c.client_id, &c.client_secret).unwrap();
    let charge = client.charges().by_reference("EX-PUSH-1").await.unwrap();
    assert_eq!(charge.state, ChargeState::Completed);
    assert!(out.iter().any(|l| l.starts_with(&format!("{} completed", charge.charge_ref))), "{out:?}");
    // A number the sandbox declines: the program says so and exits 1.
    let (code, out) = Program::start("push_charge", &env, &["254700001001", "3.00", "EX-PUSH-2"]).finish(RUN).await;
    assert_eq!(code, 1, "{out:?}");
    assert!(out.iter().any(|l| l.contains(" declined (declined_by_customer)")), "{out:?}");
    let (code, _) = Program::start("push_charge", &env, &["254712345678"]).finish(RUN).await;
    assert_ne!(code, 0, "a usage error fails");
}

async fn payroll_uploads_approves_with_the_checker_and_follows_to_the_end(db: Db) {
    let app = TestApp::shared(db);
    let maker = app.org("corporate", "KE").await;
    app.fund(&maker.org_id, malipo_core::Mode::Test, "1000").await;
    let checker = app.credential(&maker.org_id, malipo_core::Mode::Test, Some("bulk:approve payouts")).await;
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("payroll.csv");
    std::fs::write(&csv, "payee_msisdn,amount,reference,narration\n254712340001,100.00,PAY-1,November\n254712340002,250.50,PAY-2,\n254712340003,49.50,PAY-3,\"Bonus, November\"\n").unwrap();
    let env = [
        ("MALIPO_URL", app.base.as_str()),
        ("MALIPO_MAKER_ID", maker.client_id.as_str()),
        ("MALIPO_MAKER_SECRET", maker.client_secret.as_str()),
        ("MALIPO_CHECKER_ID", checker.client_id.as_str()),
        ("MALIPO_CHECKER_SECRET", checker.client_secret.as_str()),
    ];
    let (code, out) = Program::start("payroll", &env, &[csv.to_str().unwrap(), "PAYROLL-EX"]).finish(RUN).await;
    assert_eq!(code, 0, "{out:?}");
    assert!(out.iter().any(|l| l.ends_with("awaiting_approval: 3 items, 400.00 KES")), "{out:?}");
    assert!(out.iter().any(|l| l.ends_with("completed: 3 completed, 0 failed")), "{out:?}");
    let client = Client::new(&app.base, &maker.client_id, &maker.client_secret).unwrap();
    let batches: Vec<_> = futures_util::TryStreamExt::try_collect(client.bulk_payouts().list().stream()).await.unwrap();
    let batch = batches.iter().find(|b| b.reference == "PAYROLL-EX").expect("the batch");
    assert_eq!((batch.state, batch.counts.completed), (BulkPayoutState::Completed, 3));
    assert_eq!(batch.approved_by.as_deref(), Some(checker.client_id.as_str()), "approved with the checker's key pair");
    // A bad row: the whole file refused, the row named, nothing created.
    std::fs::write(&csv, "payee_msisdn,amount,reference,narration\n254712340001,100.00,PAY-1,\n254712340002,lots,PAY-2,\n").unwrap();
    let (code, out) = Program::start("payroll", &env, &[csv.to_str().unwrap(), "PAYROLL-BAD"]).finish(RUN).await;
    assert_ne!(code, 0, "{out:?}");
    assert!(out.iter().any(|l| l.starts_with("items[1]")), "{out:?}");
    let batches: Vec<_> = futures_util::TryStreamExt::try_collect(client.bulk_payouts().list().stream()).await.unwrap();
    assert!(batches.iter().all(|b| b.reference != "PAYROLL-BAD"));
}

async fn the_webhook_receiver_handles_each_event_once_and_refuses_a_forgery(db: Db) {
    let app = TestApp::shared(db);
    let c = app.merchant().await;
    let client = Client::new(&app.base, &c.client_id, &c.client_secret).unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let url = format!("http://127.0.0.1:{port}/");
    let endpoint = client.webhooks().create(&NewEndpoint::for_kinds(url.clone(), &[EventKind::ChargeCompleted])).await.unwrap();
    let secret = endpoint.secret.clone().unwrap();
    let receiver = Program::start("webhook_receiver", &[("MALIPO_WEBHOOK_SECRET", secret.as_str())], &[&format!("127.0.0.1:{port}")]);
    receiver.line(RUN, |l| l.starts_with("listening on")).await;
    let charge = client
        .charges()
        .create(&malipo_client::NewCharge::new("254712345678", rust_decimal::Decimal::new(4_250, 2), "EX-HOOK"))
        .await
        .unwrap();
    let handled = receiver.line(RUN, |l| l.starts_with("handled ") && l.contains(&charge.charge_ref)).await;
    let parts: Vec<&str> = handled.split(' ').collect();
    assert_eq!(parts[2..], ["charge.completed", charge.charge_ref.as_str(), "42.50", "KES"], "{handled}");
    let event_id = parts[1].to_owned();
    // Delivered again: acknowledged, not handled twice.
    client.webhooks().redeliver(&event_id, None).await.unwrap();
    receiver.line(RUN, |l| l == format!("duplicate {event_id}")).await;
    // A forged delivery: refused with 400.
    let forged = app
        .http
        .post(&url)
        .header("webhook-id", "evt_forged")
        .header("webhook-timestamp", time::OffsetDateTime::now_utc().unix_timestamp().to_string())
        .header("webhook-signature", "v1,bm90IGEgc2lnbmF0dXJl")
        .body(r#"{"id":"evt_forged"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(forged.status(), 400);
    receiver.line(RUN, |l| l.starts_with("refused:")).await;
    let handled_count = receiver.output().iter().filter(|l| l.starts_with("handled ")).count();
    assert_eq!(handled_count, 1, "{:?}", receiver.output());
    let detail = client.webhooks().event(&event_id).await.unwrap();
    assert!(detail.attempts.iter().filter(|a| a.status == Some(200)).count() >= 2, "both deliveries acknowledged: {detail:?}");
}

async fn reconcile_finds_the_day_in_agreement(db: Db) {
    let app = TestApp::shared(db);
    let c = app.merchant().await;
    let client = Client::new(&app.base, &c.client_id, &c.client_secret).unwrap();
    for n in 0..2 {
        let made = client
            .charges()
            .create(&malipo_client::NewCharge::new("254712345678", rust_decimal::Decimal::new(1_000 + n, 2), format!("EX-REC-{n}")))
            .await
            .unwrap();
        let deadline = Instant::now() + RUN;
        while !client.charges().get(&made.charge_ref).await.unwrap().state.is_final() {
            assert!(Instant::now() < deadline);
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    let charges: Vec<_> = futures_util::TryStreamExt::try_collect(client.charges().list(ChargeFilter::default()).stream()).await.unwrap();
    // The day as the organisation's country (Kenya, UTC+3, no summer time) counts it.
    let completed = charges[0].completed_at.unwrap();
    let date = completed.to_offset(time::macros::offset!(+3)).date().to_string();
    let (code, out) = Program::start("reconcile", &merchant_env(app, &c), &[&date]).finish(RUN).await;
    assert_eq!(code, 0, "{out:?}");
    assert!(out.iter().any(|l| l.starts_with(&format!("{date} collection: 2 transactions, checksum "))), "{out:?}");
    assert!(out.iter().any(|l| l == &format!("{date} collection: agrees")), "{out:?}");
}
