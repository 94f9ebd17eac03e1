//! The journeys in a real browser: Debian's Chromium, driven by Playwright from Python
//! (`tests/browser/journeys.py`), against a server of the test's own on each backend. The
//! README's test command installs both (`scripts/test.sh`); without them this test fails, it
//! never skips. Screenshots of every page go to `target/console-screenshots/<backend>/`.

use std::process::Command;

use super::invite;
use crate::harness::{Db, TestApp};
use crate::on_both;

on_both!(
    the_merchant_journey_passes_in_a_real_browser,
    the_operator_journey_passes_in_a_real_browser,
    the_agent_journey_passes_in_a_real_browser_at_360_px,
    the_corporate_journey_passes_in_a_real_browser
);

async fn the_merchant_journey_passes_in_a_real_browser(db: Db) {
    let app = TestApp::spawn(db).await;
    let m = app.merchant().await;
    let (email, link) = invite(&app, &m.org_id, "admin").await;
    let args = vec![app.base.clone(), link, m.client_id.clone(), m.client_secret.clone(), shots(db), email];
    journey("journeys.py", args).await;
}

/// The operator locks a live wallet, the customer's next charge is refused, the operator unlocks
/// it and the next charge is approved over USSD (`tests/browser/operator_journey.py`: not `operator.py`, which would hide Python's own `operator` module).
async fn the_operator_journey_passes_in_a_real_browser(db: Db) {
    let app = TestApp::spawn(db).await;
    let cast = crate::harness::Cast::live(&app).await;
    let pin = "4826";
    let n = cast.customer(&app, "7001", pin, "5000").await;
    let (p, token) = (app.platform.clone(), cast.operator.clone());
    let org = tokio::task::spawn_blocking(move || p.access().authenticate(&token)).await.unwrap().unwrap().org_id;
    let (_, link) = invite(&app, org.as_str(), "operator").await;
    let args = vec![app.base.clone(), link, n, pin.to_owned(), cast.merchant_token.clone(), cast.gateway.clone(), shots(db)];
    journey("operator_journey.py", args).await;
}

/// The agent's journey (`tests/browser/agent.py`) at 360 px: live mode, a customer with a wallet,
/// a PIN and a balance, and the gateway's token for the customer's USSD approval.
async fn the_agent_journey_passes_in_a_real_browser_at_360_px(db: Db) {
    let app = TestApp::spawn(db).await;
    let cast = crate::harness::Cast::live(&app).await;
    let phone = cast.customer(&app, "6001", "4826", "5000").await;
    let (_, link) = invite(&app, &cast.agent.org_id, "agent").await;
    journey("agent.py", vec![app.base.clone(), link, cast.gateway.clone(), phone, "4826".to_owned(), shots(db)]).await;
}

/// The corporate journey (`tests/browser/corporate.py`): a funded corporate organisation in test
/// mode, a maker and a checker invited; the maker uploads, fixes and submits, the checker signs
/// in with two factors and approves, the failed item's file uploads again.
async fn the_corporate_journey_passes_in_a_real_browser(db: Db) {
    let app = TestApp::spawn(db).await;
    let c = app.org("corporate", "KE").await;
    app.fund(&c.org_id, malipo_core::Mode::Test, "10000").await;
    let (_, maker) = invite(&app, &c.org_id, "maker").await;
    let (checker_email, checker) = invite(&app, &c.org_id, "checker").await;
    journey("corporate.py", vec![app.base.clone(), maker, checker, checker_email, shots(db)]).await;
}

/// Where a journey on `db` writes its screenshots.
fn shots(db: Db) -> String {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    root.join("target/console-screenshots").join(format!("{db:?}").to_lowercase()).display().to_string()
}

/// Runs the journey `script` (under `tests/browser/`) with `args`; fails with its output unless
/// it ends "ok".
async fn journey(script: &str, args: Vec<String>) {
    let python = std::env::var("MALIPO_TEST_PYTHON")
        .expect("MALIPO_TEST_PYTHON: run the tests with `bash scripts/test.sh`, which installs Playwright");
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/browser").join(script);
    let name = script.display().to_string();
    let out = tokio::task::spawn_blocking(move || Command::new(python).arg(script).args(args).output()).await.unwrap().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the browser journey {name} failed:\n{stdout}\n{stderr}");
    assert!(stdout.trim_end().ends_with("ok"), "{stdout}");
}
