//! Transactions in the console (contract section 4, Merchant): the table of `GET /transactions`
//! with its filters and pages, and "Export CSV", the API's streamed export of the same filter,
//! byte for byte.

use std::time::Duration;

use malipo_core::{Mode, OrgId};
use serde_json::Value;

use super::join;
use crate::harness::{msisdn, ok, Creds, Db, TestApp};
use crate::on_both;

on_both!(
    the_table_is_get_transactions_filtered_and_paged,
    export_csv_is_the_api_export_of_the_same_filter_byte_for_byte,
    a_refused_filter_keeps_its_values_and_shows_each_error_beside_its_field,
    people_see_their_modes_transactions_and_others_none,
);

const HEADER: &str = "transaction_id,created_at,type,source_ref,account,amount,fee,net,currency,balance_after";

/// Today's date in Nairobi (`2026-11-28`) and the UTC bounds of that day, waiting first if
/// Nairobi's midnight is less than a minute away (so the day does not change under the test).
pub(super) async fn nairobi_today() -> (String, String, String) {
    loop {
        let local = malipo_core::Timestamp::now().plus_seconds(3 * 3600).to_offset_datetime();
        let midnight = local.date().next_day().unwrap().midnight().assume_utc();
        let left = Duration::from_micros(u64::try_from((midnight - local).whole_microseconds()).unwrap());
        if left < Duration::from_secs(60) {
            tokio::time::sleep(left + Duration::from_secs(1)).await;
            continue;
        }
        let d = local.date();
        let date = format!("{:04}-{:02}-{:02}", d.year(), u8::from(d.month()), d.day());
        let start = malipo_core::Timestamp::from_offset_datetime(d.midnight().assume_utc()).plus_seconds(-3 * 3600);
        return (date, start.to_rfc3339(), start.plus_seconds(24 * 3600).to_rfc3339());
    }
}

/// Funds the merchant's payout account `times` times (each a `transfer` transaction).
pub(super) async fn fund_times(app: &TestApp, org_id: &str, mode: Mode, times: usize) {
    let p = app.platform.clone();
    let org = OrgId::parse(org_id).unwrap();
    tokio::task::spawn_blocking(move || {
        for _ in 0..times {
            p.accounts().fund(&org, mode, "1").unwrap();
        }
    })
    .await
    .unwrap();
}

/// A completed test charge of `amount`.
pub(super) async fn completed_charge(app: &TestApp, creds: &Creds, amount: &str) -> Value {
    let t = app.token(creds).await;
    let c = app.charge(&t, &msisdn("0000"), amount).await;
    app.wait_for(&t, c["charge_ref"].as_str().unwrap(), "completed", Duration::from_secs(20)).await
}

/// The API's `GET /transactions` page of `query`.
async fn api_page(app: &TestApp, creds: &Creds, query: &str) -> Value {
    let t = app.token(creds).await;
    ok(app.get_answer(&t, &format!("/transactions?{query}")).await, "GET /transactions").json
}

fn ids(page: &Value) -> Vec<String> {
    page["data"].as_array().unwrap().iter().map(|t| t["transaction_id"].as_str().unwrap().to_owned()).collect()
}

async fn the_table_is_get_transactions_filtered_and_paged(db: Db) {
    let app = TestApp::shared(db);
    let m = app.merchant().await;
    completed_charge(app, &m, "100.00").await;
    fund_times(app, &m.org_id, Mode::Test, 22).await;
    let (today, _, _) = nairobi_today().await;
    for role in ["admin", "finance", "viewer"] {
        let (mut b, _) = join(app, &m.org_id, role).await;
        let page = b.get("/console/transactions").await;
        assert_eq!(page.status, 200, "{}", page.html);
        assert_eq!(page.text("h1"), "Transactions");
        for label in ["Type", "Account", "From", "To"] {
            assert!(page.texts("label").contains(&label.to_owned()), "{label}");
        }
        assert!(page.texts("button").contains(&"Filter".to_owned()));
        assert!(page.texts("a").contains(&"Export CSV".to_owned()), "{role} may export");
        let headers = page.texts("thead th");
        assert_eq!(headers, ["Transaction", "Time", "Type", "Source", "Account", "Amount", "Fee", "Net", "Balance after"]);
        // The first page is the API's first page, in its order.
        let api = api_page(app, &m, "limit=20").await;
        assert_eq!(page.texts("tbody tr td:first-child code"), ids(&api), "{role}");
        let first_row = page.texts("tbody tr:first-child td");
        let newest = &api["data"][0];
        assert_eq!(first_row[2], newest["type"].as_str().unwrap());
        assert_eq!(first_row[5], format!("KES {}", newest["amount"]));
        assert!(first_row[1].ends_with("Africa/Nairobi"), "{first_row:?}");
        // "Next page" is the API's next page.
        let next = page.attrs("p.pager a", "href");
        assert_eq!(next.len(), 1);
        let second = b.get(&next[0]).await;
        let api_next = api_page(app, &m, &format!("limit=20&cursor={}", api["next_cursor"].as_str().unwrap())).await;
        assert_eq!(second.texts("tbody tr td:first-child code"), ids(&api_next));
        assert_eq!(second.texts("tbody tr").len(), 3, "23 in all");
    }
    let (mut b, _) = join(app, &m.org_id, "viewer").await;
    let charges = b.get("/console/transactions?type=charge").await;
    assert_eq!(charges.texts("tbody tr td:nth-child(3)"), ["charge"]);
    assert!(charges.texts("tbody tr td:nth-child(4) a")[0].starts_with("ch_"), "the charge links to its page");
    assert_eq!(charges.attrs("#f-type option[selected]", "value"), ["charge"], "the filter is kept");
    let payout = b.get("/console/transactions?account=payout").await;
    assert_eq!(payout.texts("tbody tr").len(), 20);
    assert!(payout.texts("tbody tr td:nth-child(5)").iter().all(|a| a == "payout"));
    let api_payout = api_page(app, &m, "account=payout&limit=20").await;
    assert_eq!(payout.texts("tbody tr td:first-child code"), ids(&api_payout));
    let next = b.get(&payout.attrs("p.pager a", "href")[0]).await;
    assert_eq!(next.texts("tbody tr").len(), 2, "the account filter is kept on the next page");
    let both_days = b.get(&format!("/console/transactions?from={today}&to={today}")).await;
    assert_eq!(both_days.texts("tbody tr").len(), 20);
    assert_eq!(both_days.value_of("from").as_deref(), Some(today.as_str()));
    let tomorrow = b.get("/console/transactions?from=2999-01-01").await;
    assert_eq!(tomorrow.status, 200);
    assert!(tomorrow.texts("tbody tr").is_empty());
    assert!(tomorrow.html.contains("No transactions match."));
}

/// A console download and the API's export of the same filter.
async fn same_bytes(b: &mut super::Browser, app: &TestApp, token: &str, console_query: &str, api_query: &str) -> String {
    let mine = b.get(&format!("/console/transactions/export{console_query}")).await;
    assert_eq!(mine.status, 200, "{}", mine.html);
    assert_eq!(mine.headers["content-type"], "text/csv; charset=utf-8");
    let disposition = mine.headers["content-disposition"].to_str().unwrap();
    assert!(disposition.starts_with("attachment; filename=\"transactions") && disposition.ends_with(".csv\""), "{disposition}");
    assert!(mine.headers.get("content-length").is_none(), "streamed, not sized up front");
    let api = app.get(token, &format!("/transactions/export{api_query}")).await;
    assert_eq!(api.status(), 200);
    let api = api.text().await.unwrap();
    assert_eq!(mine.html, api, "the console's CSV is the API's, byte for byte ({console_query})");
    assert_eq!(mine.html.lines().next(), Some(HEADER));
    mine.html
}

async fn export_csv_is_the_api_export_of_the_same_filter_byte_for_byte(db: Db) {
    let app = TestApp::shared(db);
    let m = app.merchant().await;
    let t = app.token(&m).await;
    let charge = completed_charge(app, &m, "250.00").await;
    // More rows than one batch of the export (2,000), so it streams in several.
    fund_times(app, &m.org_id, Mode::Test, 2_010).await;
    let (today, from, to) = nairobi_today().await;
    let (mut b, _) = join(app, &m.org_id, "viewer").await;
    let page = b.get("/console/transactions?account=payout").await;
    let link = page.attrs("a[download]", "href");
    assert_eq!(link, ["/console/transactions/export?account=payout"]);
    let all = same_bytes(&mut b, app, &t, "", "").await;
    assert_eq!(all.lines().count(), 1 + 2_010 + 1, "the header, the fundings and the charge");
    let payout = same_bytes(&mut b, app, &t, "?account=payout", "?account=payout").await;
    assert_eq!(payout.lines().count(), 1 + 2_010);
    let collection = same_bytes(&mut b, app, &t, "?account=collection", "?account=collection").await;
    let row: Vec<&str> = collection.lines().nth(1).unwrap().split(',').collect();
    assert_eq!((row[2], row[3], row[5]), ("charge", charge["charge_ref"].as_str().unwrap(), "250.00"));
    // Dates as the form sends them are the country's days; the API takes their UTC bounds.
    let query = format!("?account=collection&from={today}&to={today}");
    let dated = same_bytes(&mut b, app, &t, &query, &format!("?account=collection&from={from}&to={to}")).await;
    assert_eq!(dated, collection);
    // The filtered page links to the export of its dates and account.
    let filtered = b.get(&format!("/console/transactions?type=charge&account=collection&from={today}&to={today}")).await;
    assert_eq!(filtered.attrs("a[download]", "href"), [format!("/console/transactions/export?account=collection&from={today}&to={today}")]);
    assert!(filtered.text("p span.hint").contains("every type"), "the type is not the export's");
    let empty = same_bytes(&mut b, app, &t, "?from=2999-01-01", "?from=2999-01-01T00:00:00Z").await;
    assert_eq!(empty, format!("{HEADER}\n"));
}

async fn a_refused_filter_keeps_its_values_and_shows_each_error_beside_its_field(db: Db) {
    let app = TestApp::shared(db);
    let m = app.merchant().await;
    let (mut b, _) = join(app, &m.org_id, "admin").await;
    let bad = b.get("/console/transactions?from=28%2F11%2F2026&to=2026-11-01&account=payout").await;
    assert_eq!(bad.status, 422, "{}", bad.html);
    assert_eq!(bad.field_error("from").as_deref(), Some("From must be a date, YYYY-MM-DD."));
    assert_eq!(bad.value_of("from").as_deref(), Some("28/11/2026"));
    assert_eq!(bad.value_of("to").as_deref(), Some("2026-11-01"));
    assert_eq!(bad.attrs("#f-account option[selected]", "value"), ["payout"]);
    let backwards = b.get("/console/transactions?from=2026-11-02&to=2026-11-01").await;
    assert_eq!(backwards.status, 422);
    assert!(backwards.field_error("to").unwrap().contains("before From"));
    let kind = b.get("/console/transactions?type=%3Cscript%3Ebogus").await;
    assert_eq!(kind.status, 422);
    assert!(kind.field_error("type").unwrap().contains("is not a transaction type"), "{:?}", kind.field_error("type"));
    assert!(!kind.html.contains("<script>bogus"), "escaped");
    assert_eq!(kind.attrs("#f-type", "aria-invalid"), ["true"]);
    let account = b.get("/console/transactions?account=revenue").await;
    assert_eq!(account.status, 422);
    assert!(account.field_error("account").is_some());
    assert_eq!(b.get("/console/transactions/export?from=yesterday").await.status, 400);
}

async fn people_see_their_modes_transactions_and_others_none(db: Db) {
    let app = TestApp::shared(db);
    let m = app.merchant().await;
    fund_times(app, &m.org_id, Mode::Live, 1).await;
    let live = app.live(&m.org_id).await;
    let lt = app.token(&live).await;
    let live_tx = ok(app.get_answer(&lt, "/transactions").await, "live").json["data"][0]["transaction_id"].as_str().unwrap().to_owned();
    let (mut b, _) = join(app, &m.org_id, "admin").await;
    let test_page = b.get("/console/transactions").await;
    assert!(!test_page.html.contains(&live_tx), "a test session lists no live transaction");
    let test_csv = b.get("/console/transactions/export").await;
    assert_eq!(test_csv.html, format!("{HEADER}\n"), "nor exports one");
    b.submit("/console/transactions", "/console/mode", &[("back", "/console/transactions")]).await;
    assert!(b.get("/console/transactions").await.html.contains(&live_tx));
    assert!(b.get("/console/transactions/export").await.html.contains(&live_tx));
    // An operator has no transactions to read or export.
    let operator = app.org("operator", "KE").await;
    let (mut op, _) = join(app, &operator.org_id, "operator").await;
    assert_eq!(op.get("/console/transactions").await.status, 403);
    assert_eq!(op.get("/console/transactions/export").await.status, 403);
    assert_eq!(op.get("/console/reconciliation").await.status, 403);
    assert!(!op.get("/console/account").await.texts("nav a").contains(&"Transactions".to_owned()));
}
