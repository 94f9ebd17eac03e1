//! The GSMA door's account history (`docs/gsma.md`): `GET /accounts/{identifierType}/{identifier}/
//! transactions` and `…/statemententries`, paged by `offset` and `limit` over the use cases'
//! cursor pages, with the `X-Records-*` headers. Every answer is validated against the GSMA
//! documents as in `gsma.rs`.

use std::collections::BTreeSet;
use std::time::Duration;

use malipo_core::Timestamp;
use serde_json::{json, Value};

use crate::gsma::{Door, Reply};
use crate::harness::{msisdn, Cast, Db, TestApp};

crate::on_both!(
    a_merchants_transactions_page_by_offset_newest_first,
    statement_entries_page_the_same_postings_and_chain_their_balances,
    another_organisations_account_is_not_found,
    an_operator_reads_a_wallets_statement_and_a_merchant_may_not,
    bad_offsets_and_limits_are_the_documents_error,
);

const TRANSACTIONS: &str = "/accounts/{identifierType}/{identifier}/transactions";
const ENTRIES: &str = "/accounts/{identifierType}/{identifier}/statemententries";

/// A merchant with `n` completed charges: its token and its collection account's id.
async fn merchant_with_charges(app: &TestApp, n: usize) -> (String, String, Vec<String>) {
    let (_, token) = app.merchant_token().await;
    let mut refs = Vec::new();
    for i in 0..n {
        let c = app.charge(&token, &msisdn("0000"), &format!("{}", 100 + i * 10)).await;
        refs.push(c["charge_ref"].as_str().unwrap().to_owned());
    }
    for r in &refs {
        app.wait_for(&token, r, "completed", Duration::from_secs(15)).await;
    }
    let accounts = app.get_json(&token, "/accounts").await;
    let list = accounts["data"].as_array().or_else(|| accounts.as_array()).unwrap().clone();
    let account = list.iter().find(|a| a["type"] == "collection").unwrap()["account_id"].as_str().unwrap().to_owned();
    (token, account, refs)
}

fn count(r: &Reply, name: &str) -> usize {
    r.headers.get(name).unwrap_or_else(|| panic!("no {name}: {}", r.text)).to_str().unwrap().parse().unwrap()
}

fn items(r: &Reply) -> Vec<Value> {
    assert_eq!(r.status, 200, "{}", r.text);
    r.json.as_array().unwrap_or_else(|| panic!("not an array: {}", r.text)).clone()
}

fn at(v: &Value) -> Timestamp {
    Timestamp::parse_rfc3339(v["creationDate"].as_str().unwrap()).unwrap()
}

/// Every page of `template` for `path` at `limit`, joined, with each page's headers checked.
async fn every_page(door: &Door<'_>, template: &'static str, path: &str, limit: usize, total: usize) -> Vec<Value> {
    let mut all = Vec::new();
    let mut offset = 0;
    loop {
        let r = door.get(template, &format!("{path}?offset={offset}&limit={limit}")).await;
        let page = items(&r);
        assert_eq!(count(&r, "x-records-available-count"), total, "{}", r.text);
        assert_eq!(count(&r, "x-records-returned-count"), page.len());
        assert_eq!(page.len(), limit.min(total.saturating_sub(offset)), "offset {offset}: {}", r.text);
        if page.is_empty() {
            return all;
        }
        all.extend(page);
        offset += limit;
    }
}

async fn a_merchants_transactions_page_by_offset_newest_first(db: Db) {
    let app = TestApp::shared(db);
    let (token, account, refs) = merchant_with_charges(app, 5).await;
    let door = Door::new(app, &token);
    let path = format!("/accounts/accountid/{account}/transactions");
    let all = every_page(&door, TRANSACTIONS, &path, 2, 5).await;
    let ids: Vec<&str> = all.iter().map(|t| t["transactionReference"].as_str().unwrap()).collect();
    assert_eq!(ids.iter().collect::<BTreeSet<_>>().len(), 5, "pages join without duplicates: {ids:?}");
    let receipts: BTreeSet<&str> = all.iter().map(|t| t["transactionReceipt"].as_str().unwrap()).collect();
    assert_eq!(receipts, refs.iter().map(String::as_str).collect(), "one transaction per charge");
    assert!(all.windows(2).all(|w| at(&w[0]) >= at(&w[1])), "newest first: {all:?}");
    for t in &all {
        assert_eq!((t["type"].as_str(), t["transactionStatus"].as_str()), (Some("merchantpay"), Some("completed")), "{t}");
        assert_eq!(t["creditParty"][0], json!({"key": "accountid", "value": account}), "money in names the account: {t}");
    }
    // The same order as the REST API's list of the account.
    let rest = app.get_json(&token, &format!("/transactions?account={account}")).await;
    let rest_ids: Vec<&str> = rest["data"].as_array().unwrap().iter().map(|t| t["transaction_id"].as_str().unwrap()).collect();
    assert_eq!(ids, rest_ids);

    // Without parameters: the document's default limit (50) covers them all.
    let whole = door.get(TRANSACTIONS, &path).await;
    assert_eq!(items(&whole).len(), 5);
    // The window is inclusive at both ends.
    let (newer, older) = (all[1]["creationDate"].as_str().unwrap(), all[3]["creationDate"].as_str().unwrap());
    let expected = all.iter().filter(|t| at(t) >= at(&all[3]) && at(t) <= at(&all[1])).count();
    let window = door.get(TRANSACTIONS, &format!("{path}?fromDateTime={older}&toDateTime={newer}")).await;
    assert_eq!((items(&window).len(), count(&window, "x-records-available-count")), (expected, expected), "{}", window.text);
    let later = door.get(TRANSACTIONS, &format!("{path}?fromDateTime=2999-01-01T00:00:00Z")).await;
    assert_eq!((items(&later).len(), count(&later, "x-records-available-count")), (0, 0));
    // Every ledger transaction is completed.
    let pending = door.get(TRANSACTIONS, &format!("{path}?transactionStatus=pending")).await;
    assert!(items(&pending).is_empty());
    let completed = door.get(TRANSACTIONS, &format!("{path}?transactionStatus=completed&limit=1")).await;
    assert_eq!((items(&completed).len(), count(&completed, "x-records-available-count")), (1, 5));
    // An offset past the last record is an empty page, not an error.
    let past = door.get(TRANSACTIONS, &format!("{path}?offset=7")).await;
    assert_eq!((items(&past).len(), count(&past, "x-records-available-count")), (0, 5));
    door.validate().await;
}

async fn statement_entries_page_the_same_postings_and_chain_their_balances(db: Db) {
    let app = TestApp::shared(db);
    let (token, account, _) = merchant_with_charges(app, 4).await;
    let door = Door::new(app, &token);
    let entries = every_page(&door, ENTRIES, &format!("/accounts/accountid/{account}/statemententries"), 3, 4).await;
    let transactions = items(&door.get(TRANSACTIONS, &format!("/accounts/accountid/{account}/transactions")).await);
    let ids = |list: &[Value]| list.iter().map(|t| t["transactionReference"].as_str().unwrap().to_owned()).collect::<Vec<_>>();
    assert_eq!(ids(&entries), ids(&transactions), "the same postings in the same order");
    assert_eq!(ids(&entries).into_iter().collect::<BTreeSet<_>>().len(), 4);
    let number = |v: &Value| v.as_str().unwrap().parse::<f64>().unwrap();
    let balance_after = |e: &Value| {
        let data = e["customData"].as_array().unwrap();
        number(&data.iter().find(|p| p["key"] == "balanceAfter").unwrap()["value"])
    };
    for e in &entries {
        assert_eq!((e["displayType"].as_str(), e["transactionStatus"].as_str()), (Some("charge"), Some("completed")), "{e}");
    }
    // Newest first: each entry's balance less what it moved is the next (older) entry's balance.
    for w in entries.windows(2) {
        assert!((balance_after(&w[0]) - number(&w[0]["amount"]) - balance_after(&w[1])).abs() < 1e-9, "{w:?}");
    }
    let last = entries.last().unwrap();
    assert!((balance_after(last) - number(&last["amount"])).abs() < 1e-9, "the oldest entry opens from zero: {last}");
    let balance = door.get("/accounts/{identifierType}/{identifier}/balance", &format!("/accounts/accountid/{account}/balance")).await;
    assert!((number(&balance.json["currentBalance"]) - balance_after(&entries[0])).abs() < 1e-9, "{}", balance.text);
    door.validate().await;
}

async fn another_organisations_account_is_not_found(db: Db) {
    let app = TestApp::shared(db);
    let (_, account, _) = merchant_with_charges(app, 1).await;
    let (_, other_token) = app.merchant_token().await;
    let door = Door::new(app, &other_token);
    for (template, op) in [(TRANSACTIONS, "transactions"), (ENTRIES, "statemententries")] {
        let foreign = door.get(template, &format!("/accounts/accountid/{account}/{op}")).await;
        assert_eq!((foreign.status, foreign.json["errorCategory"].as_str()), (404, Some("identification")), "{}", foreign.text);
        // An account kind is not an account id here.
        let kind = door.get(template, &format!("/accounts/accountid/collection/{op}")).await;
        assert_eq!(kind.status, 404, "{}", kind.text);
        let unknown = door.get(template, &format!("/accounts/walletid/1234/{op}")).await;
        assert_eq!((unknown.status, unknown.json["errorCode"].as_str()), (400, Some("formatError")), "{}", unknown.text);
    }
    door.validate().await;
}

async fn an_operator_reads_a_wallets_statement_and_a_merchant_may_not(db: Db) {
    let app = TestApp::shared(db);
    let cast = Cast::new(app, malipo_core::Mode::Test, "5000").await;
    let customer = cast.customer(app, "0000", "8642", "300").await;
    cast.cash_in(app, &customer, "200").await;
    let door = Door::new(app, &cast.operator);
    let path = format!("/accounts/msisdn/+{customer}/statemententries");
    let first = door.get(ENTRIES, &format!("{path}?limit=1")).await;
    let second = door.get(ENTRIES, &format!("{path}?limit=1&offset=1")).await;
    assert_eq!((count(&first, "x-records-available-count"), count(&second, "x-records-returned-count")), (2, 1));
    let entries = [items(&first), items(&second)].concat();
    assert_eq!(entries.iter().map(|e| e["amount"].as_str().unwrap()).collect::<Vec<_>>(), ["200", "300"], "newest first");
    assert_eq!(entries[0]["creditParty"][0], json!({"key": "msisdn", "value": format!("+{customer}")}));
    assert_eq!(entries[0]["customData"][0], json!({"key": "balanceAfter", "value": "500"}));
    assert_ne!(entries[0]["transactionReference"], entries[1]["transactionReference"]);
    let deposits = items(&door.get(TRANSACTIONS, &format!("/accounts/msisdn/{customer}/transactions")).await);
    assert!(deposits.len() == 2 && deposits.iter().all(|t| t["type"] == "deposit"), "{deposits:?}");
    let none = door.get(ENTRIES, &format!("/accounts/msisdn/{}/statemententries", msisdn("0000"))).await;
    assert_eq!(none.status, 404, "{}", none.text);

    // A merchant reads no one's wallet.
    let merchant = door.with_token(&cast.merchant_token);
    for (template, op) in [(TRANSACTIONS, "transactions"), (ENTRIES, "statemententries")] {
        let r = merchant.get(template, &format!("/accounts/msisdn/{customer}/{op}")).await;
        assert_eq!((r.status, r.json["errorCategory"].as_str()), (401, Some("authorisation")), "{}", r.text);
    }
    merchant.hand_over(&door);
    door.validate().await;
}

async fn bad_offsets_and_limits_are_the_documents_error(db: Db) {
    let app = TestApp::shared(db);
    let (token, account, _) = merchant_with_charges(app, 1).await;
    let door = Door::new(app, &token);
    let path = format!("/accounts/accountid/{account}/transactions");
    for offset in ["-1", "abc", "1000", "5000"] {
        let r = door.get(TRANSACTIONS, &format!("{path}?offset={offset}")).await;
        assert_eq!((r.status, r.json["errorCode"].as_str()), (400, Some("invalidOffset")), "{offset}: {}", r.text);
        assert_eq!((r.json["errorCategory"].as_str(), r.json["errorParameters"][0]["key"].as_str()), (Some("validation"), Some("offset")));
    }
    let max = door.get(TRANSACTIONS, &format!("{path}?offset=999&limit=100")).await;
    assert_eq!((items(&max).len(), count(&max, "x-records-available-count")), (0, 1));
    for (query, field) in [("limit=0", "limit"), ("limit=101", "limit"), ("limit=ten", "limit"), ("fromDateTime=yesterday", "fromDateTime")]
    {
        for (template, op) in [(TRANSACTIONS, "transactions"), (ENTRIES, "statemententries")] {
            let r = door.get(template, &format!("/accounts/accountid/{account}/{op}?{query}")).await;
            assert_eq!((r.status, r.json["errorCode"].as_str()), (400, Some("formatError")), "{query}: {}", r.text);
            assert_eq!(r.json["errorParameters"][0]["key"], field, "{}", r.text);
        }
    }
    // The filter each operation lists and the door does not offer is refused, not ignored.
    for (template, op, query) in [(TRANSACTIONS, "transactions", "transactionType"), (ENTRIES, "statemententries", "displayType")] {
        let r = door.get(template, &format!("/accounts/accountid/{account}/{op}?{query}=merchantpay")).await;
        assert_eq!((r.status, r.json["errorParameters"][0]["key"].as_str()), (400, Some(query)), "{}", r.text);
    }
    door.validate().await;
}
