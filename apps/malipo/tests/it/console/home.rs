//! Home (console contract section 4): balances, today's charges in the organisation's local day,
//! and the last 14 days' completed amount per day drawn by the server as SVG.

use std::collections::HashMap;
use std::time::Duration;

use serde_json::json;

use super::{join, Browser, Page, Someone};
use crate::harness::{msisdn, Db, Options, TestApp};
use crate::on_both;

on_both!(home_shows_balances_today_and_the_last_fourteen_days, a_corporate_home_shows_its_payout_account, the_demo_user_is_told_on_home,);

/// The cards' figures by label.
fn figures(page: &Page) -> HashMap<String, String> {
    page.texts(".card .label").into_iter().zip(page.texts(".card .figure")).collect()
}

async fn push(app: &TestApp, token: &str, payer: &str, amount: &str) -> String {
    let body = json!({"payer_msisdn": payer, "amount": amount, "reference": "HOME", "idem": uuid::Uuid::new_v4().to_string()});
    let r = app.post(token, "/partner/stk", &body, None).await;
    assert_eq!(r.status(), 200);
    r.json::<serde_json::Value>().await.unwrap()["charge_ref"].as_str().unwrap().to_owned()
}

/// The local date (Nairobi, UTC+3) of the app's clock now.
fn local_date(app: &TestApp) -> time::Date {
    (app.platform.now().to_offset_datetime() + time::Duration::hours(3)).date()
}

async fn signed_in(app: &TestApp, who: &Someone) -> Browser {
    let mut b = Browser::new(app);
    let r = b.post("/console/login", &[("email", &who.email), ("password", &who.password), ("next", "/console/")]).await;
    assert_eq!(r.status, 303, "{}", r.html);
    b
}

async fn home_shows_balances_today_and_the_last_fourteen_days(db: Db) {
    let app = TestApp::with(db, Options::manual()).await;
    let (m, token) = app.merchant_token().await;
    let (_, viewer) = join(&app, &m.org_id, "viewer").await;

    // Two days ago: 1,000 and 500 completed.
    let earlier = local_date(&app);
    push(&app, &token, &msisdn("0001"), "1000.00").await;
    push(&app, &token, &msisdn("0001"), "500.00").await;
    app.advance(Duration::from_secs(5));
    app.run_workers().await;
    app.advance(Duration::from_secs(2 * 86_400));
    let token = app.token(&m).await;
    // Today: 250 completed, 100 failed, 75 pending; and a live charge, which a test session
    // never counts.
    push(&app, &token, &msisdn("0001"), "250.00").await;
    push(&app, &token, &msisdn("1003"), "100.00").await;
    push(&app, &token, &msisdn("1009"), "75.00").await;
    let live = app.live(&m.org_id).await;
    push(&app, &app.token(&live).await, &msisdn("0001"), "999.00").await;
    app.advance(Duration::from_secs(5));
    app.run_workers().await;
    let today = local_date(&app);

    // (Days later the session has long ended: a viewer signs in with the password alone.)
    let mut b = signed_in(&app, &viewer).await;
    let home = b.get("/console/").await;
    assert_eq!(home.status, 200, "{}", home.html);
    assert_eq!(home.text("h1"), "Home");
    let f = figures(&home);
    assert_eq!(f["Charges today"], "3", "{f:?}");
    assert_eq!(f["Amount today"], "KES 425.00");
    assert_eq!(f["Completed today"], "33%");
    assert!(home.texts(".card .hint").contains(&"1 of 3".to_owned()));
    assert!(f["Collection available"].starts_with("KES 1,7"), "the completed charges less their fees: {f:?}");
    assert_eq!(f["Collection pending"], "KES 0.00");
    assert_eq!(f["Payout available"], "KES 0.00");

    // The chart: drawn by the server, named for assistive technology, a bar per day with
    // completed charges and a label for every day; and the same days as a table.
    let label = home.attrs("svg[role=img]", "aria-label");
    assert_eq!(label.len(), 1, "{}", home.html);
    assert!(label[0].contains("KES 1,750.00 in all"), "{}", label[0]);
    assert!(label[0].contains(&format!("the most KES 1,500.00 on {earlier}")), "{}", label[0]);
    assert_eq!(home.texts("svg rect.bar").len(), 2);
    assert_eq!(home.texts("svg text").len(), 14);
    assert_eq!(home.texts("svg text").last().unwrap(), &today.day().to_string());
    let rows = home.texts(".chart tbody tr");
    assert_eq!(rows.len(), 14);
    assert!(rows[0].starts_with(&today.to_string()) && rows[0].contains("KES 250.00"), "today first: {}", rows[0]);
    let two_days = rows.iter().find(|r| r.starts_with(&earlier.to_string())).unwrap();
    assert!(two_days.contains("KES 1,500.00"), "{two_days}");
    assert!(!home.html.contains("style="), "no inline style (the CSP forbids it)");

    // Fifteen days on, those days have left the chart; today is empty.
    app.advance(Duration::from_secs(15 * 86_400));
    let later = signed_in(&app, &viewer).await.get("/console/").await;
    let f = figures(&later);
    assert_eq!((f["Charges today"].as_str(), f["Completed today"].as_str()), ("0", "–"));
    assert!(later.attrs("svg[role=img]", "aria-label")[0].contains("KES 0.00 in all, no completed charges"));
    assert_eq!(later.texts("svg rect.bar").len(), 0);
    app.stop().await;
}

async fn a_corporate_home_shows_its_payout_account(db: Db) {
    let app = TestApp::shared(db);
    let c = app.org("corporate", "KE").await;
    app.fund(&c.org_id, malipo_core::Mode::Test, "5000").await;
    let (mut b, _) = join(app, &c.org_id, "admin").await;
    let home = b.get("/console/").await;
    assert_eq!(home.status, 200, "{}", home.html);
    let f = figures(&home);
    assert_eq!(f["Payout available"], "KES 5,000.00", "{f:?}");
    assert_eq!(f["Payout reserved"], "KES 0.00");
    assert!(!f.contains_key("Charges today") && home.attrs("svg", "role").is_empty(), "no charges on a corporate Home");
    assert!(!home.texts("nav a").contains(&"Charges".to_owned()));
}

async fn the_demo_user_is_told_on_home(db: Db) {
    let app = TestApp::shared(db);
    let m = app.merchant().await;
    let email = format!("demo-{}@example.com", uuid::Uuid::new_v4().simple());
    let (p, org, e) = (app.platform.clone(), malipo_core::OrgId::parse(&m.org_id).unwrap(), email.clone());
    tokio::task::spawn_blocking(move || p.people().ensure_demo_user(&org, &e, "Demo", "demo password 2026!")).await.unwrap().unwrap();
    let mut b = Browser::new(app);
    let signed = b.post("/console/login", &[("email", &email), ("password", "demo password 2026!"), ("next", "/console/")]).await;
    assert_eq!(signed.status, 303, "{}", signed.html);
    let home = b.get("/console/").await;
    assert_eq!(home.status, 200, "{}", home.html);
    assert!(home.status_message().unwrap().contains("demo user, which needs no second factor"));
    assert!(figures(&home).contains_key("Charges today"));
}
