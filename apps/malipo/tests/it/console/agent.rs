//! The agent's application in the console (contract section 4, Agent): Float, Cash in with its
//! confirmation and receipt, Cash out that waits for the customer's PIN over USSD, the float's
//! statement and CSV; who may, CSRF, double submits, one agent never seeing another's float,
//! and each page's weight on a slow network.

use std::io::Write;
use std::time::Duration;

use malipo_core::Mode;
use serde_json::json;

use super::payment_requests::post_keyed;
use super::{join, Browser, Page};
use crate::harness::{msisdn, ok, Cast, Db, TestApp};
use crate::on_both;

on_both!(
    an_agent_sees_only_its_own_float,
    cash_in_shows_the_registered_name_before_anything_moves_and_confirms_once,
    a_locked_wallet_or_an_amount_over_the_limit_is_said_on_the_confirmation_page,
    cash_out_waits_for_the_customer_and_follows_to_the_receipt_or_the_reason,
    the_statement_lists_a_period_and_exports_it_as_csv,
    other_roles_and_forged_posts_are_refused,
    every_agent_page_weighs_under_30_kb_compressed,
);

const WAIT: Duration = Duration::from_secs(20);

/// An agent of `cast`'s organisation, signed in to the console, in `cast`'s mode.
async fn agent(app: &TestApp, cast: &Cast) -> Browser {
    let (mut b, _) = join(app, &cast.agent.org_id, "agent").await;
    if cast.mode == Mode::Live {
        let switched = b.submit("/console/float", "/console/mode", &[("back", "/console/float")]).await;
        assert_eq!(switched.status, 303, "{}", switched.html);
    }
    b
}

/// The float's available balance as the API reports it.
async fn float(app: &TestApp, cast: &Cast) -> String {
    ok(app.get_answer(&cast.agent_token, "/agents/float").await, "GET /agents/float").raw("available")
}

/// The figure of the card labelled `label`.
fn figure(page: &Page, label: &str) -> String {
    let labels = page.texts(".card .label");
    let figures = page.texts(".card .figure");
    let i = labels.iter().position(|l| l == label).unwrap_or_else(|| panic!("no card {label}: {labels:?}"));
    figures[i].clone()
}

/// The value of the fact `term` of a `dl.facts`.
fn fact(page: &Page, term: &str) -> String {
    let terms = page.texts("dl.facts dt");
    let values = page.texts("dl.facts dd");
    let i = terms.iter().position(|t| t == term).unwrap_or_else(|| panic!("no fact {term}: {terms:?}\n{}", page.html));
    values[i].clone()
}

/// "Continue" on the cash-in form: the confirmation page.
async fn cash_in_continue(b: &mut Browser, phone: &str, amount: &str) -> (Page, Page) {
    let form = b.get("/console/cash-in").await;
    assert_eq!(form.status, 200, "{}", form.html);
    let confirm = post_keyed(b, &form, "/console/cash-in", &[("customer_msisdn", phone), ("amount", amount)]).await;
    (form, confirm)
}

/// "Confirm" on a confirmation page (its hidden fields posted as they are).
async fn confirm(b: &mut Browser, confirmation: &Page) -> Page {
    let value = |name: &str| confirmation.value_of(name).unwrap_or_else(|| panic!("no {name} in:\n{}", confirmation.html));
    let fields = [
        ("csrf_token", value("csrf_token")),
        ("idempotency_key", value("idempotency_key")),
        ("customer_msisdn", value("customer_msisdn")),
        ("amount", value("amount")),
    ];
    let fields: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
    b.post("/console/cash-in/confirm", &fields).await
}

async fn an_agent_sees_only_its_own_float(db: Db) {
    let app = TestApp::shared(db);
    let mine = Cast::new(app, Mode::Test, "1000").await;
    let theirs = Cast::new(app, Mode::Test, "777").await;
    let mut b = agent(app, &mine).await;
    let home = b.get("/console/").await;
    assert_eq!(home.location.as_deref(), Some("/console/float"), "an agent's home is the float");
    let page = b.get("/console/float").await;
    assert_eq!(page.status, 200, "{}", page.html);
    assert_eq!(figure(&page, "Available balance"), "KES 1,000.00");
    assert_eq!(figure(&page, "Commission today"), "KES 0.00");
    assert_eq!(figure(&page, "Commission this month"), "KES 0.00");
    assert!(!page.html.contains("777.00"), "another agent's float is not shown");
    let nav = page.texts("nav a");
    assert_eq!(nav, vec!["Float", "Cash in", "Cash out"]);
    // The other agent's cash-in and cash-out exist; this agent finds neither.
    let n = theirs.customer(app, "5101", "4826", "0").await;
    let tx = theirs.cash_in(app, &n, "50").await.json["transaction_id"].as_str().unwrap().to_owned();
    let wd = ok(app.post_new(&theirs.agent_token, "/agents/cash-out", &json!({"customer_msisdn": n, "amount": "40"})).await, "cash-out")
        .json["withdrawal_ref"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(b.get(&format!("/console/cash-in/{tx}")).await.status, 404);
    assert_eq!(b.get(&format!("/console/cash-out/{wd}")).await.status, 404);
    assert_eq!(b.get(&format!("/console/cash-out/{wd}/live")).await.status, 404);
    let statement = b.get("/console/float/statement").await;
    assert!(!statement.html.contains(&tx), "not on this agent's statement");
    let mut other = agent(app, &theirs).await;
    assert_eq!(figure(&other.get("/console/float").await, "Available balance"), "KES 727.00");
    assert_eq!(other.get(&format!("/console/cash-in/{tx}")).await.status, 200);
}

async fn cash_in_shows_the_registered_name_before_anything_moves_and_confirms_once(db: Db) {
    let app = TestApp::shared(db);
    let cast = Cast::new(app, Mode::Test, "10000").await;
    let n = msisdn("5102");
    cast.open_wallet(app, &n, true).await;
    let mut b = agent(app, &cast).await;
    let (form, confirmation) = cash_in_continue(&mut b, &n, "250").await;
    assert_eq!(confirmation.status, 200, "{}", confirmation.html);
    assert_eq!(confirmation.text("h1"), "Confirm the cash-in");
    assert_eq!(fact(&confirmation, "Customer"), "Amina Otieno");
    assert_eq!(fact(&confirmation, "Phone number"), n);
    assert_eq!(fact(&confirmation, "Amount"), "KES 250.00");
    assert_eq!(fact(&confirmation, "Fee"), "KES 0.00");
    assert_eq!(confirmation.texts("button[type=submit]").last().map(String::as_str), Some("Confirm"));
    assert_eq!(confirmation.value_of("idempotency_key"), form.value_of("idempotency_key"), "the form's key goes on");
    assert_eq!(float(app, &cast).await, "10000.00", "nothing moved before Confirm");
    // "Confirm" twice at once, then once more (back and submit): one cash-in.
    let mut twin = Browser::new(app);
    twin.cookie = b.cookie.clone();
    let (first, second) = futures_util::join!(confirm(&mut b, &confirmation), confirm(&mut twin, &confirmation));
    assert_eq!((first.status, second.status), (303, 303), "{}\n{}", first.html, second.html);
    assert_eq!(first.location, second.location);
    assert_eq!(confirm(&mut b, &confirmation).await.location, first.location);
    assert_eq!(float(app, &cast).await, "9750.00", "moved once");
    assert_eq!(cast.wallet(app, &n).await.raw("balance"), "250.00");
    let receipt = b.follow(&first).await;
    assert_eq!(receipt.status, 200, "{}", receipt.html);
    assert_eq!(receipt.text("h1"), "Cash-in receipt");
    let tx = first.location.as_deref().unwrap().trim_start_matches("/console/cash-in/").to_owned();
    assert!(tx.starts_with("tx_"), "{tx}");
    assert_eq!(fact(&receipt, "Transaction"), tx);
    assert_eq!(fact(&receipt, "Amount"), "KES 250.00");
    assert_eq!(fact(&receipt, "From the float"), "KES 250.00");
    assert_eq!(fact(&receipt, "Float after"), "KES 9,750.00");
    assert!(fact(&receipt, "Time").ends_with("Africa/Nairobi"), "{}", fact(&receipt, "Time"));
    assert_eq!(receipt.attrs("section.receipt", "aria-label"), vec!["Receipt"]);
    // Audited once, as the agent's, where an operator reads every organisation's audit log.
    let operator_org = app.org("operator", "KE").await.org_id;
    let (mut operator, _) = join(app, &operator_org, "operator").await;
    let audit = operator.get(&format!("/console/audit?action=cash_in.created&org={}", cast.agent.org_id)).await;
    assert_eq!(audit.status, 200, "{}", audit.html);
    assert_eq!(audit.texts("table tbody td").iter().filter(|c| **c == tx).count(), 1, "{}", audit.html);
    // The float page shows it among today's transactions.
    let page = b.get("/console/float").await;
    assert_eq!(figure(&page, "Available balance"), "KES 9,750.00");
    assert!(page.html.contains(&tx), "{}", page.html);
    // Refused fields come back beside their fields, the values kept.
    let (_, refused) = cash_in_continue(&mut b, "0712<b>", "-5").await;
    assert_eq!(refused.status, 422, "{}", refused.html);
    assert!(refused.field_error("customer_msisdn").unwrap().starts_with("Phone number"), "{}", refused.html);
    assert!(refused.field_error("amount").unwrap().starts_with("Amount"), "{}", refused.html);
    assert_eq!(refused.value_of("customer_msisdn").as_deref(), Some("0712<b>"));
    assert!(!refused.html.contains("0712<b>"), "shown as text");
}

async fn a_locked_wallet_or_an_amount_over_the_limit_is_said_on_the_confirmation_page(db: Db) {
    let app = TestApp::shared(db);
    let cast = Cast::new(app, Mode::Test, "20000").await;
    let mut b = agent(app, &cast).await;
    // Locked: said before anything moves, and no "Confirm".
    let locked = msisdn("5103");
    cast.open_wallet(app, &locked, true).await;
    ok(app.post_new(&cast.operator, &format!("/wallets/{locked}/lock"), &json!({"reason": "lost phone"})).await, "lock");
    let (form, page) = cash_in_continue(&mut b, &locked, "100").await;
    assert_eq!(page.status, 422, "{}", page.html);
    assert!(page.alert().unwrap().contains("Wallet locked"), "{:?}", page.alert());
    assert_eq!(fact(&page, "Customer"), "Amina Otieno");
    assert!(!page.texts("button").contains(&"Confirm".to_owned()), "no Confirm");
    // A hand-made "Confirm" is still refused by the use case, under the wallet's lock.
    let forged = post_keyed(&mut b, &form, "/console/cash-in/confirm", &[("customer_msisdn", &locked), ("amount", "100")]).await;
    assert_eq!(forged.status, 422, "{}", forged.html);
    assert!(forged.alert().unwrap().contains("Wallet locked"), "{:?}", forged.alert());
    // Tier 0: 5,000.00 at most at once.
    let small = msisdn("5104");
    cast.open_wallet(app, &small, false).await;
    let (_, over) = cash_in_continue(&mut b, &small, "5000.01").await;
    assert_eq!(over.status, 422, "{}", over.html);
    let alert = over.alert().unwrap();
    assert!(alert.contains("Limit exceeded") && alert.contains("KES 5000.00"), "{alert}");
    assert!(!over.texts("button").contains(&"Confirm".to_owned()));
    // More than the float holds.
    let big = msisdn("5105");
    cast.open_wallet(app, &big, true).await;
    let (_, short) = cash_in_continue(&mut b, &big, "20000.01").await;
    assert!(short.alert().unwrap().contains("Insufficient funds"), "{:?}", short.alert());
    // Exactly the limit: Confirm is offered.
    let (_, fine) = cash_in_continue(&mut b, &small, "5000").await;
    assert_eq!(fine.status, 200, "{}", fine.html);
    assert_eq!(fine.alert(), None);
    assert_eq!(float(app, &cast).await, "20000.00", "nothing moved");
    assert_eq!(cast.wallet(app, &locked).await.raw("balance"), "0.00");
    app.assert_ledger_ok().await;
}

async fn cash_out_waits_for_the_customer_and_follows_to_the_receipt_or_the_reason(db: Db) {
    let app = TestApp::shared(db);
    let cast = Cast::live(app).await;
    let n = cast.customer(app, "5106", "4826", "5000").await;
    let mut b = agent(app, &cast).await;
    let form = b.get("/console/cash-out").await;
    assert_eq!(form.texts("button[type=submit]").last().map(String::as_str), Some("Request approval"));
    let asked = post_keyed(&mut b, &form, "/console/cash-out", &[("customer_msisdn", &n), ("amount", "1000")]).await;
    assert_eq!(asked.status, 303, "{}", asked.html);
    let again = post_keyed(&mut b, &form, "/console/cash-out", &[("customer_msisdn", &n), ("amount", "1000")]).await;
    assert_eq!(again.location, asked.location, "asked once");
    let path = asked.location.clone().unwrap();
    let waiting = b.get(&path).await;
    assert_eq!(waiting.text("h1"), "Waiting for the customer");
    assert!(waiting.status_message().unwrap().starts_with("Waiting for the customer"));
    assert!(waiting.html.contains("<noscript><meta http-equiv=\"refresh\""), "follows without script");
    assert_eq!(waiting.attrs(&format!("a[href=\"{path}\"]"), "href").len(), 1, "a Refresh link");
    assert_eq!(fact(&waiting, "Fee"), "KES 29.00");
    assert_eq!(float(app, &cast).await, "95000.00", "nothing moves before the customer approves");
    // The customer approves on the phone, as a gateway sends it.
    let screens = cast.dial(app, &n, &["3", "1", "1", "4826"]).await;
    assert!(screens[4].starts_with("END ") && screens[4].contains("approved"), "{screens:?}");
    let receipt = until_titled(&mut b, &path, "Cash-out receipt").await;
    assert!(fact(&receipt, "Transaction").starts_with("tx_"), "{}", receipt.html);
    assert_eq!(fact(&receipt, "Amount"), "KES 1,000.00");
    assert_eq!(fact(&receipt, "Commission"), "KES 19.00");
    assert!(fact(&receipt, "Time").ends_with("Africa/Nairobi"));
    assert!(!receipt.html.contains("http-equiv=\"refresh\""), "stops following");
    assert!(receipt.html.contains("data-final"));
    let page = b.get("/console/float").await;
    assert_eq!(figure(&page, "Available balance"), "KES 96,019.00");
    assert_eq!(figure(&page, "Commission today"), "KES 19.00");
    assert_eq!(figure(&page, "Commission this month"), "KES 19.00");
    // Declined: the page says why, and no cash is due.
    let form = b.get("/console/cash-out").await;
    let asked = post_keyed(&mut b, &form, "/console/cash-out", &[("customer_msisdn", &n), ("amount", "500")]).await;
    let path = asked.location.clone().unwrap();
    cast.dial(app, &n, &["3", "1", "2"]).await;
    let failed = until_titled(&mut b, &path, "Cash-out failed").await;
    assert!(failed.alert().unwrap().contains("declined"), "{:?}", failed.alert());
    let live = b.get(&format!("{path}/live")).await;
    assert!(live.html.contains("data-final") && !live.html.contains("<html"), "a fragment: {}", live.html);
    // A refused request keeps its values.
    let form = b.get("/console/cash-out").await;
    let refused = post_keyed(&mut b, &form, "/console/cash-out", &[("customer_msisdn", &n), ("amount", "10")]).await;
    assert_eq!(refused.status, 422, "{}", refused.html);
    assert!(refused.field_error("amount").unwrap().contains("fee"), "{:?}", refused.field_error("amount"));
    assert_eq!(refused.value_of("amount").as_deref(), Some("10"));
}

async fn the_statement_lists_a_period_and_exports_it_as_csv(db: Db) {
    let app = TestApp::shared(db);
    let cast = Cast::new(app, Mode::Test, "1000").await;
    let n = msisdn("5107");
    cast.open_wallet(app, &n, true).await;
    let tx = cast.cash_in(app, &n, "125.50").await.json["transaction_id"].as_str().unwrap().to_owned();
    let mut b = agent(app, &cast).await;
    let today = b.get("/console/float/statement").await;
    assert_eq!(today.status, 200, "{}", today.html);
    assert!(today.html.contains(&tx), "today's statement by default");
    let from = today.value_of("from").unwrap();
    let export = today.attrs("a[download]", "href");
    assert_eq!(today.texts("a[download]"), vec!["Export CSV"]);
    let csv = b.get(&export[0]).await;
    assert_eq!(csv.status, 200);
    assert!(csv.headers["content-type"].to_str().unwrap().starts_with("text/csv"));
    let lines: Vec<&str> = csv.html.lines().collect();
    assert_eq!(lines.len(), 3, "the funding and the cash-in: {}", csv.html);
    assert!(lines[1].contains(",transfer,"), "{}", lines[1]);
    assert!(lines[2].starts_with(&format!("{tx},")) && lines[2].contains(",cash_in,"), "{}", lines[2]);
    // Another period: nothing; a period backwards: said beside "To".
    let empty = b.get("/console/float/statement?from=2020-01-01&to=2020-01-31").await;
    assert!(!empty.html.contains(&tx));
    assert!(empty.html.contains("No transactions in this period"));
    let backwards = b.get(&format!("/console/float/statement?from={from}&to=2020-01-01")).await;
    assert_eq!(backwards.status, 422);
    assert!(backwards.field_error("to").is_some(), "{}", backwards.html);
    assert_eq!(b.get("/console/float/statement/export?from=nope").await.status, 400);
}

async fn other_roles_and_forged_posts_are_refused(db: Db) {
    let app = TestApp::shared(db);
    let cast = Cast::new(app, Mode::Test, "1000").await;
    let n = msisdn("5108");
    cast.open_wallet(app, &n, true).await;
    // A merchant's people (and an operator) may not use the agent's pages.
    let merchant = app.merchant().await;
    let (mut admin, _) = join(app, &merchant.org_id, "admin").await;
    let operator_org = app.org("operator", "KE").await.org_id;
    let (mut operator, _) = join(app, &operator_org, "operator").await;
    for who in [&mut admin, &mut operator] {
        for path in
            ["/console/float", "/console/cash-in", "/console/cash-out", "/console/float/statement", "/console/float/statement/export"]
        {
            assert_eq!(who.get(path).await.status, 403, "{path}");
        }
        let page = who.get("/console/account").await;
        let posted = post_keyed(who, &keyed(&page), "/console/cash-in/confirm", &[("customer_msisdn", &n), ("amount", "10")]).await;
        assert_eq!(posted.status, 403, "{}", posted.html);
        let posted = post_keyed(who, &keyed(&page), "/console/cash-out", &[("customer_msisdn", &n), ("amount", "100")]).await;
        assert_eq!(posted.status, 403, "{}", posted.html);
    }
    // And an agent may not use theirs.
    let mut b = agent(app, &cast).await;
    for path in ["/console/charges", "/console/payouts", "/console/transactions", "/console/wallets"] {
        let status = b.get(path).await.status;
        assert!(status == 403 || status == 404, "{path}: {status}");
    }
    // Without the token, or from another origin: 403, nothing moved.
    let (_, confirmation) = cash_in_continue(&mut b, &n, "10").await;
    let key = confirmation.value_of("idempotency_key").unwrap();
    let no_token = b.post("/console/cash-in/confirm", &[("idempotency_key", &key), ("customer_msisdn", &n), ("amount", "10")]).await;
    assert_eq!(no_token.status, 403);
    b.origin = Some("https://evil.example".into());
    assert_eq!(confirm(&mut b, &confirmation).await.status, 403);
    let form = b.get("/console/cash-out").await;
    assert_eq!(post_keyed(&mut b, &form, "/console/cash-out", &[("customer_msisdn", &n), ("amount", "100")]).await.status, 403);
    b.origin = Some(app.base.clone());
    assert_eq!(float(app, &cast).await, "1000.00", "nothing moved");
    assert_eq!(cast.wallet(app, &n).await.raw("balance"), "0.00");
    // A key without a form behind it: refused, nothing moved.
    let bare = b.post("/console/cash-in/confirm", &[("csrf_token", &confirmation.csrf()), ("customer_msisdn", &n), ("amount", "10")]).await;
    assert_eq!(bare.status, 400, "{}", bare.html);
    assert_eq!(float(app, &cast).await, "1000.00");
}

/// The page at `path`, reloaded (as its refresh does) until its title is `title`.
async fn until_titled(b: &mut Browser, path: &str, title: &str) -> Page {
    let started = std::time::Instant::now();
    loop {
        let p = b.get(path).await;
        if p.text("h1") == title {
            return p;
        }
        assert!(started.elapsed() < WAIT, "{path} still {:?} after {WAIT:?}", p.text("h1"));
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A page with a fresh one-time key beside its CSRF token (for a hand-made post).
fn keyed(page: &Page) -> Page {
    let html = format!("{}<input name=\"idempotency_key\" value=\"{}\">", page.html, uuid::Uuid::new_v4());
    Page { status: page.status, location: None, html, headers: page.headers.clone() }
}

/// gzip at the default level, as a server or proxy would send it.
fn gzipped(bytes: &[u8]) -> usize {
    let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    z.write_all(bytes).unwrap();
    z.finish().unwrap().len()
}

/// Each agent page, with the script and the stylesheet it loads, under 30 KB gzipped: the
/// server sends pages uncompressed (a page holds the session's CSRF token beside what people
/// type, so compression would open it to BREACH-style guessing), so the test compresses what a
/// compressing proxy or a later server would send, and the pages are made small enough either way.
async fn every_agent_page_weighs_under_30_kb_compressed(db: Db) {
    let app = TestApp::shared(db);
    let cast = Cast::live(app).await;
    let n = cast.customer(app, "5109", "4826", "5000").await;
    let mut b = agent(app, &cast).await;
    // A busy day: 20 transactions on the float page.
    for _ in 0..20 {
        cast.cash_in(app, &n, "10").await;
    }
    let (_, confirmation) = cash_in_continue(&mut b, &n, "100").await;
    let confirmed = confirm(&mut b, &confirmation).await;
    let receipt = b.follow(&confirmed).await;
    let form = b.get("/console/cash-out").await;
    let asked = post_keyed(&mut b, &form, "/console/cash-out", &[("customer_msisdn", &n), ("amount", "100")]).await;
    let waiting = b.get(asked.location.as_deref().unwrap()).await;
    let pages = [
        ("float", b.get("/console/float").await),
        ("statement", b.get("/console/float/statement").await),
        ("cash-in", b.get("/console/cash-in").await),
        ("cash-in confirmation", confirmation),
        ("cash-in receipt", receipt),
        ("cash-out", form),
        ("cash-out waiting", waiting),
    ];
    let assets: usize = {
        let mut total = 0;
        for href in pages[0].1.attrs("link[rel=stylesheet]", "href").into_iter().chain(pages[0].1.attrs("script[src]", "src")) {
            let asset = b.get(&href).await;
            assert_eq!(asset.status, 200, "{href}");
            total += gzipped(asset.html.as_bytes());
        }
        total
    };
    for (name, page) in &pages {
        assert_eq!(page.status, 200, "{name}: {}", page.html);
        let total = gzipped(page.html.as_bytes()) + assets;
        // One line for `bench/console_apps.sh` (the bytes are the same in every build).
        println!(
            "BENCH {}",
            serde_json::json!({"backend": format!("{db:?}").to_lowercase(), "agent_page": name, "html_bytes": page.html.len(), "gzipped_with_assets": total, "assets_gzipped": assets})
        );
        assert!(total < 30 * 1024, "{name}: {total} bytes gzipped");
        // Usable at 360 px: the viewport follows the device, and wide tables scroll on their own.
        assert!(page.html.contains("width=device-width"));
        assert!(page.texts("table").is_empty() || !page.texts(".table-wrap").is_empty(), "{name}");
    }
}
