//! Reconciliation in the console (contract section 4, Merchant): the daily report of
//! `GET /reconciliation/daily` for a date and an account, its checksum labelled "Checksum", and
//! "Download CSV" of exactly that day, whose lines hash to the checksum.

use malipo_core::Mode;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::transactions::{completed_charge, fund_times, nairobi_today};
use super::{join, Page};
use crate::harness::{ok, Db, TestApp};
use crate::on_both;

on_both!(
    the_days_report_is_the_apis_and_its_csv_hashes_to_the_checksum,
    a_refused_report_keeps_its_values_and_shows_each_error_beside_its_field,
    a_test_session_reports_the_test_ledger_only,
);

/// The checksum the page shows (the element labelled "Checksum").
fn checksum(page: &Page) -> String {
    assert_eq!(page.text("#checksum-label"), "Checksum");
    page.text("[aria-labelledby=checksum-label]")
}

/// SHA-256 of `{transaction_id},{net}\n` for each row of a CSV, by its header's columns.
fn sha256_of_csv(csv: &str) -> String {
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let (id, net) = (header.iter().position(|h| *h == "transaction_id").unwrap(), header.iter().position(|h| *h == "net").unwrap());
    let text: String = lines.map(|l| l.split(',').collect::<Vec<_>>()).map(|f| format!("{},{}\n", f[id], f[net])).collect();
    hex::encode(Sha256::digest(text.as_bytes()))
}

/// A figure of the report by its term.
fn fact(page: &Page, term: &str) -> String {
    let terms = page.texts("dl.facts dt");
    let i = terms.iter().position(|t| t == term).unwrap_or_else(|| panic!("{term} in {terms:?}"));
    page.texts("dl.facts dd")[i].clone()
}

async fn the_days_report_is_the_apis_and_its_csv_hashes_to_the_checksum(db: Db) {
    let app = TestApp::shared(db);
    let m = app.merchant().await;
    let t = app.token(&m).await;
    let (today, from, to) = nairobi_today().await;
    let charge = completed_charge(app, &m, "1000.00").await;
    let refund = json!({"charge_ref": charge["charge_ref"], "amount": "500.00", "reason": "half back"});
    ok(app.post_new(&t, "/reversals", &refund).await, "POST /reversals");
    fund_times(app, &m.org_id, Mode::Test, 2).await;
    for role in ["admin", "finance", "viewer"] {
        let (mut b, _) = join(app, &m.org_id, role).await;
        let page = b.get("/console/reconciliation").await;
        assert_eq!(page.status, 200, "{}", page.html);
        assert_eq!(page.text("h1"), "Reconciliation");
        assert!(page.texts("nav a").contains(&"Reconciliation".to_owned()));
        assert_eq!(page.value_of("date").as_deref(), Some(today.as_str()), "today in the organisation's country");
        assert_eq!(page.attrs("#f-account option", "value"), ["collection", "payout"]);
        assert!(page.texts("button").contains(&"Show report".to_owned()));
        for (account, count) in [("collection", 2), ("payout", 2)] {
            let shown = b.get(&format!("/console/reconciliation?date={today}&account={account}")).await;
            assert_eq!(shown.status, 200);
            let api = ok(app.get_answer(&t, &format!("/reconciliation/daily?date={today}&account={account}")).await, "daily").json;
            assert_eq!(checksum(&shown), api["checksum"].as_str().unwrap(), "{account}");
            assert_eq!(api["transaction_count"], count, "{api}");
            for (term, member) in [
                ("Opening balance", "opening_balance"),
                ("Credits", "credits"),
                ("Debits", "debits"),
                ("Fees", "fees"),
                ("Closing balance", "closing_balance"),
            ] {
                assert_eq!(fact(&shown, term), money(&api[member]), "{account} {term}");
            }
            assert_eq!(fact(&shown, "Transactions"), count.to_string());
            assert_eq!(fact(&shown, "Date"), today);
            assert!(fact(&shown, "Time zone").starts_with("Africa/Nairobi"));
            // Counts and sums by type: every type, as the API's.
            let cells = shown.texts("tbody td");
            let rows: Vec<&[String]> = cells.chunks(5).collect();
            assert_eq!(rows.len(), 9);
            let charges = rows.iter().find(|r| r[0] == "charge").unwrap();
            assert_eq!(charges[1], api["by_type"]["charge"]["count"].to_string());
            assert_eq!(charges[4], money(&api["by_type"]["charge"]["net"]));
            // "Download CSV": the export of exactly that day and account, hashing to the checksum.
            let link = shown.attrs("a[download]", "href");
            assert_eq!(shown.texts("a[download]"), ["Download CSV"]);
            let (f, t_) = (from.replace(':', "%3A"), to.replace(':', "%3A"));
            assert_eq!(link, [format!("/console/transactions/export?account={account}&from={f}&to={t_}")]);
            let csv = b.get(&link[0]).await;
            assert_eq!(csv.status, 200);
            assert_eq!(csv.headers["content-type"], "text/csv; charset=utf-8");
            assert!(csv.headers["content-disposition"].to_str().unwrap().starts_with("attachment; filename="));
            assert_eq!(csv.html.lines().count(), 1 + count, "{}", csv.html);
            assert_eq!(sha256_of_csv(&csv.html), checksum(&shown), "the CSV's lines hash to the checksum ({account})");
            let api_csv = app.get(&t, &format!("/transactions/export?account={account}&from={from}&to={to}")).await.text().await.unwrap();
            assert_eq!(csv.html, api_csv);
        }
    }
    // A day without transactions: zero counts and the SHA-256 of nothing.
    let (mut b, _) = join(app, &m.org_id, "viewer").await;
    let quiet = b.get("/console/reconciliation?date=2020-01-01&account=collection").await;
    assert_eq!(checksum(&quiet), hex::encode(Sha256::digest(b"")));
    assert_eq!(fact(&quiet, "Transactions"), "0");
    let csv = b.get(&quiet.attrs("a[download]", "href")[0]).await;
    assert_eq!(sha256_of_csv(&csv.html), checksum(&quiet));
}

/// An amount of the API (`-250.00`) as the console shows it (`KES -250.00`), grouped.
fn money(v: &Value) -> String {
    let s = v.to_string();
    let (sign, digits) = s.strip_prefix('-').map_or(("", s.as_str()), |d| ("-", d));
    let (whole, frac) = digits.split_once('.').unwrap();
    let mut grouped = String::new();
    for (i, c) in whole.chars().enumerate() {
        if i > 0 && (whole.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(c);
    }
    format!("KES {sign}{grouped}.{frac}")
}

async fn a_refused_report_keeps_its_values_and_shows_each_error_beside_its_field(db: Db) {
    let app = TestApp::shared(db);
    let m = app.merchant().await;
    let (mut b, _) = join(app, &m.org_id, "finance").await;
    let bad = b.get("/console/reconciliation?date=2026-02-30&account=payout").await;
    assert_eq!(bad.status, 422, "{}", bad.html);
    assert!(bad.field_error("date").unwrap().starts_with("Date must be"), "{:?}", bad.field_error("date"));
    assert_eq!(bad.value_of("date").as_deref(), Some("2026-02-30"));
    assert_eq!(bad.attrs("#f-account option[selected]", "value"), ["payout"]);
    assert!(bad.texts("[aria-labelledby=checksum-label]").is_empty(), "no report");
    let account = b.get("/console/reconciliation?date=2026-02-01&account=revenue").await;
    assert_eq!(account.status, 422);
    assert!(account.field_error("account").is_some());
}

async fn a_test_session_reports_the_test_ledger_only(db: Db) {
    let app = TestApp::shared(db);
    let m = app.merchant().await;
    let (today, _, _) = nairobi_today().await;
    fund_times(app, &m.org_id, Mode::Live, 3).await;
    fund_times(app, &m.org_id, Mode::Test, 1).await;
    let (mut b, _) = join(app, &m.org_id, "admin").await;
    let path = format!("/console/reconciliation?date={today}&account=payout");
    let test = b.get(&path).await;
    assert_eq!(fact(&test, "Transactions"), "1");
    assert_eq!(b.get(&test.attrs("a[download]", "href")[0]).await.html.lines().count(), 2);
    b.submit("/console/reconciliation", "/console/mode", &[("back", "/console/reconciliation")]).await;
    let live = b.get(&path).await;
    assert_eq!(fact(&live, "Transactions"), "3");
    assert_ne!(checksum(&live), checksum(&test));
}
