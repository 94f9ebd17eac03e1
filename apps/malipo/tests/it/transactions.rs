//! Contract section 7 (transactions, the export, the daily reconciliation) and `malipo recon`,
//! over HTTP on both backends.

use std::time::Duration;

use malipo_core::Mode;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::harness::{is_utc_timestamp, msisdn, ok, problem_strict, Creds, Db, Options, TestApp, TEST_WEBHOOK_KEY};

crate::on_both!(a_day_of_business_reconciles_from_the_export, transactions_refuse_what_is_not_theirs_or_not_valid,);

const TRANSACTION_KEYS: [&str; 10] =
    ["transaction_id", "type", "source_ref", "account", "amount", "fee", "net", "currency", "balance_after", "created_at"];

/// Today's and tomorrow's dates in Nairobi (UTC+3), and how long until Nairobi's midnight.
fn nairobi(now: malipo_core::Timestamp) -> (String, String, Duration) {
    let local = now.plus_seconds(3 * 3600).to_offset_datetime();
    let date = |d: time::Date| format!("{:04}-{:02}-{:02}", d.year(), u8::from(d.month()), d.day());
    let midnight = local.date().next_day().unwrap().midnight().assume_utc();
    let left = (midnight - local).whole_microseconds();
    (date(local.date()), date(local.date().next_day().unwrap()), Duration::from_micros(u64::try_from(left).unwrap()))
}

/// Completes the due sandbox charges and payouts of a manual app.
async fn settle(app: &TestApp) {
    app.advance(Duration::from_secs(1));
    app.run_workers().await;
}

async fn charge(app: &TestApp, token: &str, amount: &str) -> Value {
    let c = app.charge(token, &msisdn("0000"), amount).await;
    let path = format!("/partner/charges/{}", c["charge_ref"].as_str().unwrap());
    for _ in 0..10 {
        settle(app).await;
        let now = app.get_json(token, &path).await;
        if now["state"] == "completed" {
            return now;
        }
    }
    panic!("charge {path} did not complete")
}

/// `GET /transactions` to the end, newest first.
async fn all_transactions(app: &TestApp, token: &str, query: &str) -> Vec<Value> {
    let mut out = Vec::new();
    let mut path = format!("/transactions?limit=2{query}");
    loop {
        let page = ok(app.get_answer(token, &path).await, "GET /transactions");
        out.extend(page.json["data"].as_array().unwrap().iter().cloned());
        match page.json["next_cursor"].as_str() {
            Some(c) => path = format!("/transactions?limit=2{query}&cursor={c}"),
            None => return out,
        }
    }
}

/// The export's rows, each split into its ten fields.
async fn export(app: &TestApp, token: &str, query: &str) -> Vec<Vec<String>> {
    let r = app.get(token, &format!("/transactions/export?{query}")).await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "text/csv; charset=utf-8");
    let text = r.text().await.unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("transaction_id,created_at,type,source_ref,account,amount,fee,net,currency,balance_after"));
    lines.map(|l| l.split(',').map(str::to_owned).collect::<Vec<_>>()).inspect(|f| assert_eq!(f.len(), 10, "{f:?}")).collect()
}

fn sorted(keys: &[&str]) -> Vec<String> {
    let mut keys: Vec<String> = keys.iter().map(|k| (*k).to_owned()).collect();
    keys.sort();
    keys
}

fn sorted_keys(v: &Value) -> Vec<String> {
    sorted(&v.as_object().unwrap().keys().map(String::as_str).collect::<Vec<_>>())
}

fn sha256_of_rows(rows: &[&Vec<String>]) -> String {
    let text: String = rows.iter().map(|f| format!("{},{}\n", f[0], f[7])).collect();
    hex::encode(Sha256::digest(text.as_bytes()))
}

fn cents(v: &Value) -> i64 {
    let s = v.to_string();
    let (units, frac) = s.split_once('.').unwrap();
    let sign = if units.starts_with('-') { -1 } else { 1 };
    units.parse::<i64>().unwrap() * 100 + sign * frac.parse::<i64>().unwrap()
}

async fn a_day_of_business_reconciles_from_the_export(db: Db) {
    let app = TestApp::with(db, Options::manual()).await;
    let c = app.merchant().await;
    app.fund(&c.org_id, Mode::Test, "1000").await;
    let t = app.token(&c).await;
    let (today, tomorrow, to_midnight) = nairobi(app.platform.now());
    // The balance tells an integrator whose day its reports count, so it need not guess the zone.
    let balance = app.get_json(&t, "/partner/balance").await;
    assert_eq!((balance["country"].as_str(), balance["time_zone"].as_str()), (Some("KE"), Some("Africa/Nairobi")), "{balance}");

    let paid = charge(&app, &t, "250.00").await;
    assert_eq!(paid["state"], "completed", "{paid}");
    let payout =
        ok(app.post_new(&t, "/payouts", &json!({"payee_msisdn": msisdn("0000"), "amount": "100.00", "reference": "P-1"})).await, "payout");
    settle(&app).await;
    ok(app.post_new(&t, "/accounts/transfers", &json!({"from": "collection", "to": "payout", "amount": "50.00"})).await, "transfer");
    let reversal = json!({"charge_ref": paid["charge_ref"], "amount": "100.00", "reason": "returned"});
    ok(app.post_new(&t, "/reversals", &reversal).await, "reversal");

    // The charge's transaction: amount, fee and net as the charge says.
    let tx = ok(app.get_answer(&t, &format!("/transactions/{}", paid["transaction_id"].as_str().unwrap())).await, "GET /transactions/{id}");
    assert_eq!(sorted_keys(&tx.json), sorted(&TRANSACTION_KEYS), "{}", tx.text);
    assert_eq!((tx.json["type"].as_str(), tx.json["account"].as_str()), (Some("charge"), Some("collection")));
    assert_eq!(tx.json["source_ref"], paid["charge_ref"]);
    assert_eq!((tx.raw("amount"), tx.raw("fee")), ("250.00".to_owned(), paid["fee"].to_string()));
    assert_eq!(cents(&tx.json["net"]), cents(&tx.json["amount"]) - cents(&tx.json["fee"]));
    assert!(is_utc_timestamp(tx.json["created_at"].as_str().unwrap()));
    // The payout's: out of the payout account, amount negative, its fee positive.
    let payout = app.get_json(&t, &format!("/payouts/{}", payout.json["payout_ref"].as_str().unwrap())).await;
    let ptx = app.get_json(&t, &format!("/transactions/{}", payout["transaction_id"].as_str().unwrap())).await;
    assert_eq!(
        (ptx["type"].as_str(), ptx["account"].as_str(), ptx["amount"].to_string()),
        (Some("payout"), Some("payout"), "-100.00".into())
    );
    assert_eq!(ptx["fee"], payout["fee"]);

    // The list is newest first and holds the transfer on both accounts; filters work.
    let list = all_transactions(&app, &t, "").await;
    let types: Vec<(&str, &str)> = list.iter().map(|x| (x["type"].as_str().unwrap(), x["account"].as_str().unwrap())).collect();
    assert_eq!(
        types,
        [
            ("reversal", "collection"),
            ("transfer", "payout"),
            ("transfer", "collection"),
            ("payout", "payout"),
            ("charge", "collection"),
            ("transfer", "payout")
        ],
        "newest first; the operator's funding shows as a transfer into the payout account"
    );
    let charges = all_transactions(&app, &t, "&type=charge").await;
    assert_eq!(charges.len(), 1);
    assert_eq!(all_transactions(&app, &t, "&account=payout").await.len(), 3);
    assert_eq!(all_transactions(&app, &t, "&type=cash_out").await.len(), 0);

    // The export of the collection account is the list's collection part, oldest first, and the
    // statement agrees on every balance.
    let rows = export(&app, &t, "account=collection").await;
    let listed: Vec<&Value> = list.iter().filter(|x| x["account"] == "collection").rev().collect();
    assert_eq!(rows.len(), listed.len());
    for (row, x) in rows.iter().zip(&listed) {
        assert_eq!(
            (row[0].as_str(), row[2].as_str(), row[7].as_str()),
            (x["transaction_id"].as_str().unwrap(), x["type"].as_str().unwrap(), x["net"].to_string().as_str())
        );
        assert_eq!(row[9], x["balance_after"].to_string());
    }
    let accounts = app.get_json(&t, "/accounts").await;
    let collection = accounts["data"].as_array().unwrap().iter().find(|a| a["type"] == "collection").unwrap().clone();
    let statement = app.get_json(&t, &format!("/accounts/{}/statement", collection["account_id"].as_str().unwrap())).await;
    let st: Vec<(String, String)> =
        statement["data"].as_array().unwrap().iter().map(|l| (l["amount"].to_string(), l["balance_after"].to_string())).collect();
    let ex: Vec<(String, String)> = rows.iter().map(|r| (r[7].clone(), r[9].clone())).collect();
    assert_eq!(st, ex, "the statement's amount is the transaction's net");

    // Two more charges, either side of Nairobi's midnight.
    app.advance(to_midnight.checked_sub(Duration::from_secs(30)).unwrap_or_default());
    let t = app.token(&c).await; // tokens last an hour
    charge(&app, &t, "10.00").await;
    app.advance(Duration::from_secs(30));
    charge(&app, &t, "20.00").await;

    let rows = export(&app, &t, "account=collection").await;
    let day1 = ok(app.get_answer(&t, &format!("/reconciliation/daily?date={today}")).await, "recon today");
    let day2 = ok(app.get_answer(&t, &format!("/reconciliation/daily?date={tomorrow}&account=collection")).await, "recon tomorrow");
    for (day, date) in [(&day1, &today), (&day2, &tomorrow)] {
        let r = &day.json;
        let expected = [
            "date",
            "time_zone",
            "from",
            "to",
            "account",
            "currency",
            "opening_balance",
            "credits",
            "debits",
            "fees",
            "closing_balance",
            "transaction_count",
            "by_type",
            "checksum",
        ];
        assert_eq!(sorted_keys(r), sorted(&expected), "{}", day.text);
        assert_eq!(sorted_keys(&r["by_type"]).len(), 9, "every type: {}", day.text);
        assert_eq!(
            (r["date"].as_str(), r["time_zone"].as_str(), r["account"].as_str()),
            (Some(date.as_str()), Some("Africa/Nairobi"), Some("collection"))
        );
        let (from, to) = (r["from"].as_str().unwrap(), r["to"].as_str().unwrap());
        assert!(from.ends_with("T21:00:00Z") && to.ends_with("T21:00:00Z"), "{}", day.text);
        assert_eq!(cents(&r["closing_balance"]), cents(&r["opening_balance"]) + cents(&r["credits"]) - cents(&r["debits"]));
        let in_day: Vec<&Vec<String>> = rows.iter().filter(|f| f[1].as_str() >= from && f[1].as_str() < to).collect();
        assert_eq!(r["transaction_count"], in_day.len());
        assert_eq!(r["checksum"].as_str().unwrap(), sha256_of_rows(&in_day), "recomputed from the export");
        assert_eq!(r["closing_balance"].to_string(), in_day.last().unwrap()[9], "closing is the day's last balance_after");
    }
    assert_eq!(day2.json["opening_balance"], day1.json["closing_balance"], "the next day opens where the day closed");
    // An export window is exactly that day's rows.
    let (from2, to2) = (day2.json["from"].as_str().unwrap(), day2.json["to"].as_str().unwrap());
    let window = export(&app, &t, &format!("account=collection&from={from2}&to={to2}")).await;
    let expected: Vec<Vec<String>> = rows.iter().filter(|f| f[1].as_str() >= from2 && f[1].as_str() < to2).cloned().collect();
    assert_eq!(window, expected);
    assert_eq!(window.len(), 1);
    assert_eq!((day1.json["by_type"]["charge"]["count"].as_u64(), day2.json["by_type"]["charge"]["count"].as_u64()), (Some(2), Some(1)));
    assert!(cents(&day1.json["by_type"]["reversal"]["fee"]) < 0, "a reversal gives a fee share back: {}", day1.text);
    // A day without transactions: opening = closing, and the SHA-256 of nothing.
    let empty = app.get_json(&t, "/reconciliation/daily?date=2020-01-01").await;
    assert_eq!((empty["transaction_count"].as_u64(), empty["opening_balance"].to_string()), (Some(0), "0.00".into()));
    assert_eq!(empty["checksum"], "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");

    // `malipo recon` prints the same object.
    let cli = tokio::task::spawn_blocking({
        let (url, c, today) = (app.settings.database_url.clone(), c.clone(), today.clone());
        move || recon_cli(&url, &c, &today)
    })
    .await
    .unwrap();
    assert_eq!(cli, day1.json);
    app.assert_ledger_ok().await;
    app.stop().await;
}

/// `malipo recon ... --json` on the database at `url`.
fn recon_cli(url: &str, c: &Creds, date: &str) -> Value {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_malipo"));
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("MALIPO_") {
            cmd.env_remove(name);
        }
    }
    let out = cmd
        .args(["recon", "--date", date, "--org", &c.org_id, "--mode", "test", "--json"])
        .env("MALIPO_DATABASE_URL", url)
        .env("MALIPO_WEBHOOK_KEY", TEST_WEBHOOK_KEY)
        .env("MALIPO_LOG", "error")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

async fn transactions_refuse_what_is_not_theirs_or_not_valid(db: Db) {
    let app = TestApp::shared(db);
    let (_, t) = app.merchant_token().await;
    let (_, other) = app.merchant_token().await;
    let paid = app.charge(&other, &msisdn("0000"), "5.00").await;
    let done = app.wait_for(&other, paid["charge_ref"].as_str().unwrap(), "completed", Duration::from_secs(20)).await;
    let theirs = done["transaction_id"].as_str().unwrap();
    problem_strict(app.get(&t, &format!("/transactions/{theirs}")).await, 404, "not_found").await;
    problem_strict(app.get(&t, "/transactions/tx_nothing").await, 404, "not_found").await;
    problem_strict(app.get(&t, "/transactions/not-an-id").await, 404, "not_found").await;
    for bad in
        ["type=funding", "type=", "from=yesterday", "to=2026-13-01", "limit=0", "limit=101", "cursor=abc", "cursor=-5", "account=wallet"]
    {
        problem_strict(app.get(&t, &format!("/transactions?{bad}")).await, 400, "invalid_request").await;
    }
    problem_strict(app.get(&t, "/transactions/export?account=revenue").await, 400, "invalid_request").await;
    problem_strict(app.get(&t, "/transactions?account=agent_float").await, 404, "not_found").await;
    let accounts = app.get_json(&other, "/accounts").await;
    let their_account = accounts["data"][0]["account_id"].as_str().unwrap().to_owned();
    problem_strict(app.get(&t, &format!("/transactions?account={their_account}")).await, 404, "not_found").await;
    problem_strict(app.get(&t, &format!("/reconciliation/daily?date=2026-11-24&account={their_account}")).await, 404, "not_found").await;
    for bad in ["", "?date=24-11-2026", "?date=2026-02-30", "?date=2026-11-24&account=issuance"] {
        problem_strict(app.get(&t, &format!("/reconciliation/daily{bad}")).await, 400, "invalid_request").await;
    }
    problem_strict(app.http.get(app.url("/transactions")).send().await.unwrap(), 401, "unauthorized").await;
    let gateway = app.org("gateway", "KE").await;
    let g = app.token(&gateway).await;
    for path in ["/transactions", "/transactions/export", "/reconciliation/daily?date=2026-11-24"] {
        problem_strict(app.get(&g, path).await, 403, "insufficient_scope").await;
    }
    let r = app.http.post(app.url("/transactions")).bearer_auth(&t).send().await.unwrap();
    problem_strict(r, 405, "method_not_allowed").await;
    // A new merchant's list, export and report are empty, not errors.
    let list = app.get_json(&t, "/transactions").await;
    assert_eq!((list["data"].as_array().map(Vec::len), list["has_more"].as_bool()), (Some(0), Some(false)));
    assert_eq!(export(app, &t, "").await.len(), 0);
}
