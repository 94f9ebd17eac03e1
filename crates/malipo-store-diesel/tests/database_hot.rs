//! Hot accounts' waiting lines on both databases: the schema lets a waiting line leave only as
//! its posting and never changes one, a forged waiting line is found at its journal's chain
//! entry, and the migration is not undone while a line waits.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use diesel::connection::SimpleConnection;
use diesel::{Connection, PgConnection, SqliteConnection};
use diesel_migrations::{embed_migrations, EmbeddedMigrations, MigrationHarness};
use malipo_core::{AccountId, Mode};
use malipo_ledger::{verify, Journal, JournalKind, LedgerSnapshot, Violation};
use malipo_service::{read, Store};
use malipo_store_contract::fixtures::{
    apply_waiting, at, balance, insert_merchant, insert_platform, insert_wallet, journal, msisdn, post, postings_of, seal, transfer, KES,
};
use malipo_store_diesel::testing::TestDatabase;
use malipo_store_diesel::Backend;

const PG_MIGRATIONS: EmbeddedMigrations = embed_migrations!("../../migrations/postgres");
const SQLITE_MIGRATIONS: EmbeddedMigrations = embed_migrations!("../../migrations/sqlite");

fn snapshot(store: &dyn Store) -> LedgerSnapshot {
    read(store, |tx| Ok(tx.ledger_snapshot(None)?)).unwrap()
}

/// A merchant paid three charges by one funded wallet: the revenue and funding lines wait.
fn three_charges(db: &TestDatabase) -> (malipo_store_contract::fixtures::Merchant, AccountId, Vec<Journal>) {
    let kes = insert_platform(db, Mode::Test, KES);
    let m = insert_merchant(db, "Duka", Mode::Test);
    let (w, _) = insert_wallet(db, Mode::Test, KES, &msisdn("254712000090"));
    post(db, transfer(Mode::Test, KES, &kes.sandbox_funding.id, &w.id, 10_000, at(1)));
    let charges = (1..=3)
        .map(|i| {
            post(
                db,
                journal(
                    Mode::Test,
                    KES,
                    JournalKind::P2p,
                    &[(&w.id, -100 * i), (&m.collection.id, 99 * i), (&kes.revenue.id, i)],
                    at(1 + i),
                ),
            )
        })
        .collect();
    (m, kes.revenue.id, charges)
}

// ----- the cases, each run on both backends -----

/// A waiting line never changes, and is deleted only once its posting exists.
fn a_waiting_line_leaves_only_as_its_posting(db: &TestDatabase) {
    let (m, revenue, charges) = three_charges(db);
    let id = charges[0].id.as_str();
    db.refused(&format!("UPDATE deferred_lines SET amount = amount + 1 WHERE journal_id = '{id}'"));
    db.refused(&format!("DELETE FROM deferred_lines WHERE journal_id = '{id}'"));
    db.refused("DELETE FROM deferred_lines");
    assert_eq!(balance(db, &revenue), 6, "nothing was lost");
    assert!(postings_of(db, &revenue).is_empty());
    // Applied, each became its posting and is gone.
    assert_eq!(apply_waiting(db), 4, "three revenue lines and one funding line");
    assert_eq!(postings_of(db, &revenue).len(), 3);
    assert_eq!(balance(db, &revenue), 6);
    assert_eq!(balance(db, &m.collection.id), 99 * 6);
    assert_eq!(verify(&snapshot(db)), vec![]);
}

/// A waiting line's amount edited in SQL (with the guard dropped, the other lines and balances
/// kept in step, as a careful forger would) is found at its journal's chain entry, before and
/// after it is applied.
fn a_forged_waiting_line_is_found_at_its_entry(db: &TestDatabase) {
    let (_, revenue, charges) = three_charges(db);
    assert_eq!(seal(db), 4);
    assert_eq!(verify(&snapshot(db)), vec![]);
    let guard = match db.store.backend() {
        Backend::Postgres => "DROP TRIGGER deferred_lines_no_update ON deferred_lines",
        Backend::Sqlite => "DROP TRIGGER deferred_lines_no_update",
    };
    db.run(guard);
    let target = &charges[1];
    let payer = &target.lines[0].account;
    let forged = format!("UPDATE deferred_lines SET amount = amount + 1 WHERE journal_id = '{}' AND account_id = '{revenue}'", target.id);
    assert_eq!(db.run(&forged), 1);
    let guard = match db.store.backend() {
        Backend::Postgres => "DROP TRIGGER postings_append_only ON postings",
        Backend::Sqlite => "DROP TRIGGER postings_no_update",
    };
    db.run(guard);
    assert_eq!(
        db.run(&format!("UPDATE postings SET amount = amount - 1 WHERE journal_id = '{}' AND account_id = '{payer}'", target.id)),
        1
    );
    db.run(&format!("UPDATE accounts SET balance = balance - 1 WHERE id = '{payer}'"));
    let expected = vec![Violation::BrokenChain { mode: Mode::Test, currency: KES, journal: target.id.clone(), seq: 3 }];
    assert_eq!(verify(&snapshot(db)), expected, "the balances agree: only the chain can tell");
    apply_waiting(db);
    assert_eq!(verify(&snapshot(db)), expected, "applied, the forged line is still found");
}

/// Undoing the hot accounts' migration is refused while a line waits, and changes nothing; with
/// every line applied it is undone, and done again.
fn the_migration_is_not_undone_while_a_line_waits(db: &TestDatabase) {
    let (_, revenue, _) = three_charges(db);
    let before = snapshot(db);
    // Undoes the migrations down to the hot accounts' (every later one first), then does them
    // again on a new connection (a failed revert leaves its transaction open on its own);
    // answers what the last revert undid, or why it was refused.
    let revert = |db: &TestDatabase| -> Result<String, String> {
        let down = |mut revert: Box<dyn FnMut() -> Result<String, String> + '_>| loop {
            let undone = revert()?;
            if undone.ends_with("000008") {
                return Ok(undone);
            }
        };
        match db.store.backend() {
            Backend::Postgres => {
                let mut conn = PgConnection::establish(&db.url).unwrap();
                let undone = down(Box::new(|| conn.revert_last_migration(PG_MIGRATIONS).map(|m| m.to_string()).map_err(|e| e.to_string())));
                PgConnection::establish(&db.url).unwrap().run_pending_migrations(PG_MIGRATIONS).unwrap();
                undone
            }
            Backend::Sqlite => {
                let path = db.url.trim_start_matches("sqlite://");
                let mut conn = SqliteConnection::establish(path).unwrap();
                conn.batch_execute("PRAGMA busy_timeout=5000; PRAGMA foreign_keys=ON;").unwrap();
                let undone =
                    down(Box::new(|| conn.revert_last_migration(SQLITE_MIGRATIONS).map(|m| m.to_string()).map_err(|e| e.to_string())));
                drop(conn);
                let mut again = SqliteConnection::establish(path).unwrap();
                again.batch_execute("PRAGMA busy_timeout=5000; PRAGMA foreign_keys=ON;").unwrap();
                again.run_pending_migrations(SQLITE_MIGRATIONS).unwrap();
                undone
            }
        }
    };
    assert!(revert(db).is_err(), "refused while lines wait");
    assert_eq!(snapshot(db).journals, before.journals);
    assert_eq!(balance(db, &revenue), 6);
    apply_waiting(db);
    assert!(revert(db).unwrap().ends_with("000008"));
    assert_eq!(verify(&snapshot(db)), vec![]);
    assert_eq!(balance(db, &revenue), 6);
}

malipo_store_diesel::on_both_backends!(
    a_waiting_line_leaves_only_as_its_posting,
    a_forged_waiting_line_is_found_at_its_entry,
    the_migration_is_not_undone_while_a_line_waits,
);
