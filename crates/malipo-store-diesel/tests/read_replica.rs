//! Reads that may be stale go to the replica (`DieselStore::with_replica`, `src/replica.rs`)
//! while it answers and is within its lag bound, and to the primary otherwise.
//!
//! The "replica" here is a second database on the test server with the same schema: it is not in
//! recovery, so it has no lag, and what it holds differs from the primary, which shows where
//! each read went. The lag bound itself is tested on a real standby by the failover test
//! (`apps/malipo/tests/it/failover.rs`), whose replay is paused.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use malipo_core::Mode;
use malipo_ledger::Account;
use malipo_service::{read, report, write, Store};
use malipo_store_contract::fixtures::{msisdn, ugx, wallet_account};
use malipo_store_diesel::testing::TestDatabase;
use malipo_store_diesel::DieselStore;

fn wait_until(what: &str, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !ok() {
        assert!(Instant::now() < deadline, "not within 10 s: {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// An account only the primary has.
fn on_primary(store: &DieselStore) -> Account {
    let account = wallet_account(Mode::Test, ugx(), &msisdn("256700000101"));
    write(store, |tx| Ok(tx.insert_account(&account)?)).unwrap();
    account
}

fn seen(store: &DieselStore, account: &Account, stale_ok: bool) -> bool {
    let id = account.id.clone();
    let f = |tx: &mut dyn malipo_service::Tx| Ok(tx.account(&id)?.is_some());
    if stale_ok {
        report(store, f).unwrap()
    } else {
        read(store, f).unwrap()
    }
}

#[test]
fn reports_read_on_the_replica_and_everything_else_on_the_primary() {
    let primary = TestDatabase::postgres();
    let copy = TestDatabase::postgres();
    let store = DieselStore::connect(&primary.url, Some(2)).unwrap().with_replica(&copy.url, Some(2), Duration::from_secs(2)).unwrap();
    let account = on_primary(&store);
    wait_until("the replica measured and in use", || store.replica().unwrap().in_use);
    let state = store.replica().unwrap();
    assert_eq!(state.lag, Some(Duration::ZERO), "a server not in recovery is not behind");
    assert_eq!(state.max_lag, Duration::from_secs(2));
    assert!(seen(&store, &account, false), "reads that must be fresh go to the primary");
    assert!(!seen(&store, &account, true), "reports go to the replica, which does not have it");
    assert_eq!(store.replica().unwrap().fallbacks, 0);
}

#[test]
fn a_replica_that_goes_away_sends_reports_to_the_primary_at_once() {
    let primary = TestDatabase::postgres();
    let copy = TestDatabase::postgres();
    let store = DieselStore::connect(&primary.url, Some(2)).unwrap().with_replica(&copy.url, Some(2), Duration::from_secs(2)).unwrap();
    let account = on_primary(&store);
    wait_until("the replica in use", || store.replica().unwrap().in_use);
    assert!(!seen(&store, &account, true));
    // The replica's database dropped, its connections ended: the next report fails there and
    // is read on the primary, in the same call.
    drop(copy);
    let started = Instant::now();
    assert!(seen(&store, &account, true), "read on the primary");
    assert!(started.elapsed() < Duration::from_secs(2), "at once: {:?}", started.elapsed());
    let state = store.replica().unwrap();
    assert!(!state.in_use);
    assert!(state.fallbacks >= 1);
    wait_until("the replica measured as not answering", || store.replica().unwrap().lag.is_none());
    assert!(seen(&store, &account, true), "still on the primary");
}

#[test]
fn a_replica_down_at_start_is_not_an_error_and_reports_read_on_the_primary() {
    let primary = TestDatabase::postgres();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let nowhere = format!("postgres://postgres@127.0.0.1:{port}/malipo?connect_timeout=1");
    let store = DieselStore::connect(&primary.url, Some(2)).unwrap().with_replica(&nowhere, Some(2), Duration::from_secs(2)).unwrap();
    let account = on_primary(&store);
    assert!(seen(&store, &account, true));
    let state = store.replica().unwrap();
    assert_eq!((state.lag, state.in_use), (None, false));
    assert_eq!(state.fallbacks, 1);
}

#[test]
fn a_replica_needs_postgresql_on_both_sides() {
    let primary = TestDatabase::postgres();
    let refused = DieselStore::connect(&primary.url, Some(1)).unwrap().with_replica("sqlite:///tmp/x.db", None, Duration::from_secs(1));
    assert!(refused.unwrap_err().to_string().contains("PostgreSQL"));
    let sqlite = TestDatabase::sqlite();
    let refused = DieselStore::connect(&sqlite.url, Some(1)).unwrap().with_replica(&primary.url, None, Duration::from_secs(1));
    assert!(refused.unwrap_err().to_string().contains("PostgreSQL"));
}
