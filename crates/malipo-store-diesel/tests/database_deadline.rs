//! Every PostgreSQL statement has a deadline (`src/deadline.rs`): a statement the server takes
//! too long over is cancelled by the server, and a server that stops answering altogether (its
//! kernel still acknowledging every packet, as a frozen primary's does) loses the connection on
//! the client's side; either way the call fails as "unavailable" within the deadline and a
//! little more, and the store carries on with fresh connections once the server answers again.
//!
//! The frozen server is the test database's server processes stopped with `SIGSTOP` (the
//! issue's frozen primary, whose kernel acknowledges every packet while nothing answers).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use diesel::prelude::*;

use malipo_core::AccountId;
use malipo_service::{read, ServiceError, Store, StoreError};
use malipo_store_diesel::testing::TestDatabase;
use malipo_store_diesel::DieselStore;

const DEADLINE: Duration = Duration::from_millis(400);

/// The server processes (backends) of the test database's connections but `admin`'s own,
/// stopped with `SIGSTOP` (as a frozen machine's processes are: the kernel still acknowledges
/// every packet) until dropped, when they are continued.
struct Frozen(Vec<i32>);

impl Frozen {
    fn backends_of(admin: &mut PgConnection) -> Self {
        #[derive(QueryableByName)]
        struct Pid {
            #[diesel(sql_type = diesel::sql_types::Integer)]
            pid: i32,
        }
        let pids: Vec<Pid> =
            diesel::sql_query("SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()")
                .load(admin)
                .unwrap();
        let pids: Vec<i32> = pids.into_iter().map(|p| p.pid).collect();
        assert!(!pids.is_empty());
        signal("-STOP", &pids);
        Frozen(pids)
    }
}

impl Drop for Frozen {
    fn drop(&mut self) {
        signal("-CONT", &self.0);
    }
}

fn signal(which: &str, pids: &[i32]) {
    let status = std::process::Command::new("kill").arg(which).args(pids.iter().map(ToString::to_string)).status().unwrap();
    assert!(status.success(), "kill {which} {pids:?}");
}

fn unavailable(result: Result<(), ServiceError>) -> String {
    match result {
        Err(ServiceError::Store(StoreError::Unavailable(message))) => message,
        other => panic!("expected unavailable, got {other:?}"),
    }
}

#[test]
fn a_frozen_server_costs_a_call_its_deadline_and_the_store_goes_on_with_fresh_connections() {
    let db = TestDatabase::postgres();
    let store = DieselStore::connect_with_deadline(&db.url, Some(3), DEADLINE).unwrap();
    // Each call on a thread of its own, so that a call that hangs fails the test instead.
    let account = || {
        let (done, outcome) = std::sync::mpsc::channel();
        let store = store.clone();
        std::thread::spawn(move || done.send(read(&store, |tx| Ok(tx.account(&AccountId::new()).map(|_| ())?))));
        outcome.recv_timeout(Duration::from_secs(10)).expect("the call hung past 10 s")
    };
    // Three pooled connections, each with its server process.
    let together = std::sync::Arc::new(std::sync::Barrier::new(3));
    let holders: Vec<_> = (0..3)
        .map(|_| {
            let (store, together) = (store.clone(), std::sync::Arc::clone(&together));
            std::thread::spawn(move || {
                read(&store, |_| {
                    together.wait();
                    Ok(())
                })
                .unwrap();
            })
        })
        .collect();
    holders.into_iter().for_each(|h| h.join().unwrap());
    let mut admin = PgConnection::establish(&db.url).unwrap();

    // The pooled connection's server process stops answering.
    let frozen = Frozen::backends_of(&mut admin);
    let started = Instant::now();
    let message = unavailable(account());
    let took = started.elapsed();
    assert!(message.contains("did not answer within 900 ms"), "{message}");
    assert!(took >= DEADLINE && took < Duration::from_secs(3), "a frozen server held the call {took:?}");
    // The connection cut off is not pooled again, and the other two, opened to the same server
    // before it stopped answering, are cut off at once rather than each waiting out its own
    // deadline: the next call has a fresh connection (the server's postmaster answers; only the
    // old connections' processes are frozen).
    let started = Instant::now();
    account().unwrap();
    assert!(started.elapsed() < Duration::from_millis(800), "{:?}", started.elapsed());
    assert_eq!(store.ready(), Ok(()));
    drop(frozen);
    for _ in 0..4 {
        account().unwrap();
    }
}

#[test]
fn a_statement_past_the_deadline_is_cancelled_by_the_server_as_unavailable() {
    let db = TestDatabase::postgres();
    let store = DieselStore::connect_with_deadline(&db.url, Some(1), DEADLINE).unwrap();
    let started = Instant::now();
    match store.raw_execute("SELECT pg_sleep(5)") {
        Err(StoreError::Unavailable(message)) => assert!(message.contains("statement timeout"), "{message}"),
        other => panic!("expected unavailable, got {other:?}"),
    }
    assert!(started.elapsed() < Duration::from_secs(2), "{:?}", started.elapsed());
    // Migrations are exempt (a migration may rewrite a large table), and the store goes on.
    assert_eq!(store.migrate().unwrap(), 0);
    assert_eq!(store.raw_execute("SELECT 1").unwrap(), 1);
}
