//! Tests of the payouts migration and tables on both backends: the schema refuses wrong payouts,
//! batches, reversals and second payments written by hand; concurrent payout claims never
//! overlap; the migration (which rebuilds `organisations` on SQLite) keeps every row, and
//! undoing and redoing it does too.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashSet;
use std::sync::{Arc, Barrier};
use std::time::Duration;

use diesel::connection::SimpleConnection;
use diesel::{Connection, PgConnection, RunQueryDsl, SqliteConnection};
use diesel_migrations::{embed_migrations, EmbeddedMigrations, MigrationHarness};
use malipo_auth::{Credential, OrgKind, Organisation};
use malipo_core::{Mode, OrgId, PayoutRef, TransactionId};
use malipo_ledger::AccountKind;
use malipo_payouts::Payout;
use malipo_service::{read, write, Store};
use malipo_store_contract::fixtures::{
    apply_waiting, at, charge, commit, credential, insert_charge, insert_merchant, insert_platform, insert_wallet, msisdn, post, seal,
    transfer, Merchant, KES,
};
use malipo_store_contract::payout_fixtures::{bulk_payout, insert_batch, insert_payouts, payout, payout_journal, payout_paid};
use malipo_store_diesel::testing::TestDatabase;
use malipo_store_diesel::{Backend, DieselStore};

const PG_MIGRATIONS: EmbeddedMigrations = embed_migrations!("../../migrations/postgres");
const SQLITE_MIGRATIONS: EmbeddedMigrations = embed_migrations!("../../migrations/sqlite");

fn accepted(db: &TestDatabase, sql: &str) {
    assert_eq!(db.store.raw_execute(sql), Ok(1), "{sql}");
}

/// A merchant whose payout account holds 100,000, with a pending payout, a completed one (its
/// journal posted) and a batch of two items awaiting approval.
struct Fixture {
    merchant: Merchant,
    pending: Payout,
    paid: Payout,
    items: Vec<Payout>,
    batch_id: String,
}

fn fixture(db: &TestDatabase) -> Fixture {
    let kes = insert_platform(db, Mode::Test, KES);
    let merchant = insert_merchant(db, "Duka", Mode::Test);
    let payee = msisdn("254712000080");
    let (w, _) = insert_wallet(db, Mode::Test, KES, &payee);
    post(db, transfer(Mode::Test, KES, &kes.issuance.id, &merchant.payout.id, 100_000, at(1)));
    let pending = payout(&merchant.payout, &payee, 1_000, at(2));
    let to_pay = payout(&merchant.payout, &payee, 2_000, at(2));
    let journal = post(db, payout_journal(&to_pay, &w.id, &kes.revenue.id, at(3)));
    let paid = payout_paid(to_pay, &journal.id, at(3));
    insert_payouts(db, vec![pending.clone(), paid.clone()]);
    let (batch, items) = insert_batch(db, bulk_payout(&merchant.payout, "ck_test_maker", &payee, &[300, 400], at(4)));
    Fixture { merchant, pending, paid, items, batch_id: batch.id.to_string() }
}

fn payouts_are_checked_by_the_database(db: &TestDatabase) {
    let f = fixture(db);
    let (pending, paid, item) = (f.pending.id.as_str(), f.paid.id.as_str(), f.items[0].id.as_str());
    db.refused(&format!("UPDATE payouts SET amount_reversed = amount + 1 WHERE id = '{paid}'"));
    db.refused(&format!("UPDATE payouts SET amount_reversed = -1 WHERE id = '{paid}'"));
    db.refused(&format!("UPDATE payouts SET amount_reversed = 1 WHERE id = '{pending}'"));
    db.refused(&format!("UPDATE payouts SET state = 'completed', next_action_at = NULL, completed_at = 1 WHERE id = '{pending}'"));
    db.refused(&format!("UPDATE payouts SET state = 'failed', next_action_at = NULL WHERE id = '{pending}'"));
    db.refused(&format!("UPDATE payouts SET state = 'paid' WHERE id = '{pending}'"));
    db.refused(&format!("UPDATE payouts SET next_action_at = 1 WHERE id = '{paid}'"));
    db.refused(&format!("UPDATE payouts SET fee = -1 WHERE id = '{pending}'"));
    db.refused(&format!("UPDATE payouts SET bulk_index = NULL WHERE id = '{item}'"));
    db.refused(&format!("UPDATE payouts SET bulk_index = 1 WHERE id = '{item}'"));
    db.refused(&format!(
        "UPDATE payouts SET state = 'completed', next_action_at = NULL, completed_at = 1, \
             transaction_id = (SELECT p.transaction_id FROM payouts p WHERE p.id = '{paid}') WHERE id = '{pending}'"
    ));
    db.refused(&format!("UPDATE payouts SET id = 'ch_{pending}' WHERE id = '{pending}'"));
    db.refused(&format!("UPDATE payouts SET id = 'PO_{pending}' WHERE id = '{pending}'"));
    db.refused(&format!("UPDATE payouts SET bulk_payout_id = 'bp_nothing' WHERE id = '{item}'"));
    accepted(db, &format!("UPDATE payouts SET amount_reversed = amount WHERE id = '{paid}'"));
    accepted(
        db,
        &format!("UPDATE payouts SET state = 'failed', failure_reason = 'payee_not_found', next_action_at = NULL WHERE id = '{pending}'"),
    );

    // A second payment of the payout (or of a charge) is refused; other kinds may share a source.
    let journal = |id: &str, kind: &str, seq: i64| {
        format!(
            "INSERT INTO journals (id, mode, currency, kind, source_ref, created_at, seq, prev_hash, hash) \
             VALUES ('{id}', 'test', 'XXX', '{kind}', '{paid}', 0, {seq}, '', '')"
        )
    };
    db.refused(&journal("tx_again", "payout", 1));
    db.refused(&journal("tx_charge", "charge", 1));
    accepted(db, &journal("tx_reversal", "reversal", 1));
    accepted(db, &journal("tx_transfer", "transfer", 2));
}

fn batches_and_reversals_are_checked_by_the_database(db: &TestDatabase) {
    let f = fixture(db);
    let batch = f.batch_id.as_str();
    db.refused(&format!("UPDATE bulk_payouts SET state = 'processing', approved_by = created_by, approved_at = 1 WHERE id = '{batch}'"));
    db.refused(&format!("UPDATE bulk_payouts SET state = 'processing', approved_by = 'ck_test_checker' WHERE id = '{batch}'"));
    db.refused(&format!("UPDATE bulk_payouts SET approved_by = 'ck_test_checker', approved_at = 1 WHERE id = '{batch}'"));
    db.refused(&format!("UPDATE bulk_payouts SET pending_count = pending_count - 1 WHERE id = '{batch}'"));
    db.refused(&format!("UPDATE bulk_payouts SET pending_count = 0, completed_count = 2 WHERE id = '{batch}'"));
    db.refused(&format!("UPDATE bulk_payouts SET item_count = 10001, pending_count = 10001 WHERE id = '{batch}'"));
    db.refused(&format!(
        "UPDATE bulk_payouts SET state = 'rejected', rejected_by = created_by, rejection_reason = 'x', \
             pending_count = 0, failed_count = 2, completed_at = 1 WHERE id = '{batch}'"
    ));
    db.refused(&format!(
        "UPDATE bulk_payouts SET state = 'rejected', rejected_by = 'ck_test_checker', \
             pending_count = 0, failed_count = 2, completed_at = 1 WHERE id = '{batch}'"
    ));
    db.refused(&format!(
        "UPDATE bulk_payouts SET state = 'completed', approved_by = 'ck_test_checker', approved_at = 1, \
             completed_at = 1 WHERE id = '{batch}'"
    ));
    accepted(
        db,
        &format!("UPDATE bulk_payouts SET state = 'processing', approved_by = 'ck_test_checker', approved_at = 1 WHERE id = '{batch}'"),
    );
    accepted(
        db,
        &format!(
            "UPDATE bulk_payouts SET state = 'completed', pending_count = 0, completed_count = 1, failed_count = 1, \
             completed_at = 2 WHERE id = '{batch}'"
        ),
    );

    let reversal = |id: &str, charge: &str, payout: &str, amount: i64| {
        format!(
            "INSERT INTO reversals (id, org_id, mode, charge_ref, payout_ref, original_transaction_id, amount, fee_reversed, \
             currency, reason, transaction_id, created_at) \
             VALUES ('{id}', '{}', 'test', {charge}, {payout}, 'tx_original', {amount}, 0, 'KES', 'r', 'tx_{id}', 0)",
            f.merchant.org.id
        )
    };
    let ch = insert_charge(db, charge(&f.merchant.collection, &msisdn("254712000081"), 500, at(5)));
    let (paid, ch) = (format!("'{}'", f.paid.id), format!("'{}'", ch.id));
    db.refused(&reversal("rv_both", &ch, &paid, 100));
    db.refused(&reversal("rv_neither", "NULL", "NULL", 100));
    db.refused(&reversal("rv_nothing", "NULL", &paid, 0));
    db.refused(&reversal("rv_unknown", "NULL", "'po_unknown'", 100));
    accepted(db, &reversal("rv_payout", "NULL", &paid, 100));
    accepted(db, &reversal("rv_charge", &ch, "NULL", 100));
    db.refused(&reversal("rv_payout", "NULL", &paid, 100));
}

/// Two workers claiming due payouts at once never claim the same payout, and together claim all.
fn concurrent_payout_claims_never_overlap(db: &TestDatabase) {
    let m = insert_merchant(db, "Duka", Mode::Test);
    let payee = msisdn("254712000082");
    let due: Vec<Payout> = (0..200).map(|i| payout(&m.payout, &payee, 100, at(i))).collect();
    insert_payouts(db, due.clone());
    let start = Arc::new(Barrier::new(2));
    let workers: Vec<_> = (0..2)
        .map(|_| {
            let (store, start) = (db.store.clone(), Arc::clone(&start));
            std::thread::spawn(move || {
                start.wait();
                let mut mine = Vec::new();
                loop {
                    let batch = write(&store, |tx| {
                        let ids = tx.claim_due_payouts(at(1_000), at(10_000), 7)?;
                        // Hold the row locks a moment so that the other worker runs into them.
                        std::thread::sleep(Duration::from_millis(1));
                        Ok(ids)
                    })
                    .unwrap();
                    if batch.is_empty() {
                        return mine;
                    }
                    mine.extend(batch);
                }
            })
        })
        .collect();
    let claimed: Vec<Vec<PayoutRef>> = workers.into_iter().map(|w| w.join().unwrap()).collect();
    let all: Vec<&PayoutRef> = claimed.iter().flatten().collect();
    let unique: HashSet<&PayoutRef> = all.iter().copied().collect();
    assert_eq!(all.len(), unique.len(), "a payout was claimed twice");
    assert_eq!(unique, due.iter().map(|p| &p.id).collect::<HashSet<_>>(), "every due payout was claimed");
    if db.store.backend() == Backend::Postgres {
        // SQLite's write lock is not fair: one worker may take every batch there.
        let counts: Vec<usize> = claimed.iter().map(Vec::len).collect();
        assert!(counts.iter().all(|&n| n > 0), "both workers claimed some: {counts:?}");
    }
    assert_eq!(commit(db, |tx| Ok(tx.claim_due_payouts(at(1_000), at(10_000), 10)?)), vec![], "leased until later");
}

/// Whether foreign keys are enforced on a SQLite connection.
fn sqlite_foreign_keys(conn: &mut SqliteConnection) -> bool {
    #[derive(diesel::QueryableByName)]
    struct Pragma {
        #[diesel(sql_type = diesel::sql_types::Integer)]
        foreign_keys: i32,
    }
    diesel::sql_query("PRAGMA foreign_keys").get_result::<Pragma>(conn).unwrap().foreign_keys == 1
}

/// Reverts migrations newest first (`revert` undoes one and names it) down to and including the
/// payouts one; returns how many were undone.
fn revert_through_payouts(mut revert: impl FnMut() -> String) -> usize {
    let mut undone = 1;
    while !revert().ends_with("000004") {
        undone += 1;
    }
    undone
}

/// The newest applied migration's version.
fn last_applied(applied: Vec<diesel::migration::MigrationVersion<'static>>) -> String {
    applied.iter().map(ToString::to_string).max().unwrap()
}

/// Undoes the payouts migration (and any later one first) and applies them again on a database holding data of every
/// earlier table: nothing is lost, foreign keys still hold (and SQLite's connection has them on
/// again), and organisations may then be corporate.
fn the_payouts_migration_keeps_every_row(db: &TestDatabase) {
    let m = insert_merchant(db, "Duka", Mode::Test);
    let cred = credential(&m.org, Mode::Test, "ck_test_duka");
    commit(db, |tx| Ok(tx.insert_credential(&cred)?));
    let kes = insert_platform(db, Mode::Test, KES);
    let (w, _) = insert_wallet(db, Mode::Test, KES, &msisdn("254712000084"));
    post(db, transfer(Mode::Test, KES, &kes.issuance.id, &w.id, 5_000, at(1)));
    // Undoing the sealer's migration (on the way back) needs every journal sealed, and the hot
    // accounts' every waiting line applied.
    seal(db);
    apply_waiting(db);
    let ch = insert_charge(db, charge(&m.collection, &msisdn("254712000084"), 700, at(2)));
    let corporate = |name: &str| {
        format!("INSERT INTO organisations (id, name, kind, country, created_at) VALUES ('org_{name}', '{name}', 'corporate', 'KE', 0)")
    };

    let reapply = |undo_check: &dyn Fn()| match db.store.backend() {
        Backend::Postgres => {
            let mut conn = PgConnection::establish(&db.url).unwrap();
            let undone = revert_through_payouts(|| conn.revert_last_migration(PG_MIGRATIONS).unwrap().to_string());
            undo_check();
            assert_eq!(conn.run_pending_migrations(PG_MIGRATIONS).unwrap().len(), undone);
        }
        Backend::Sqlite => {
            let mut conn = SqliteConnection::establish(db.url.trim_start_matches("sqlite://")).unwrap();
            conn.batch_execute("PRAGMA busy_timeout=5000; PRAGMA foreign_keys=ON;").unwrap();
            let undone = revert_through_payouts(|| conn.revert_last_migration(SQLITE_MIGRATIONS).unwrap().to_string());
            assert!(sqlite_foreign_keys(&mut conn), "the revert turns foreign keys back on");
            undo_check();
            assert_eq!(conn.run_pending_migrations(SQLITE_MIGRATIONS).unwrap().len(), undone);
            assert!(sqlite_foreign_keys(&mut conn), "the migration turns foreign keys back on");
        }
    };
    reapply(&|| db.refused(&corporate("before")));

    // A new pool: the old one's prepared statements may name the tables as they were.
    let store = DieselStore::connect(&db.url, Some(2)).unwrap();
    assert_eq!(store.ready(), Ok(()));
    assert_eq!(read(&store, |tx| Ok(tx.org(&m.org.id)?)).unwrap(), Some(m.org.clone()));
    assert_eq!(read(&store, |tx| Ok(tx.credential(&cred.client_id)?)).unwrap(), Some(cred.clone()));
    assert_eq!(read(&store, |tx| Ok(tx.account(&m.payout.id)?)).unwrap(), Some(m.payout.clone()));
    assert_eq!(read(&store, |tx| Ok(tx.charge(&m.org.id, Mode::Test, &ch.id)?)).unwrap(), Some(ch));
    let snapshot = read(&store, |tx| Ok(tx.ledger_snapshot(None)?)).unwrap();
    assert_eq!((snapshot.journals.len(), malipo_ledger::verify(&snapshot)), (1, vec![]));

    accepted(db, &corporate("after"));
    db.refused("INSERT INTO organisations (id, name, kind, country, created_at) VALUES ('org_bank', 'b', 'bank', 'KE', 0)");
    let orphan = Credential { client_id: "ck_test_orphan".into(), org_id: OrgId::new(), ..cred.clone() };
    assert!(write(&store, |tx| Ok(tx.insert_credential(&orphan)?)).is_err(), "foreign keys to organisations still hold");
    let corp = Organisation { id: OrgId::new(), name: "Corp".into(), kind: OrgKind::Corporate, country: "KE".into(), created_at: at(0) };
    commit(&store, |tx| Ok(tx.insert_org(&corp)?));
    assert_eq!(read(&store, |tx| Ok(tx.org(&corp.id)?)).unwrap(), Some(corp));
    let live = malipo_ledger::Account::open(Some(m.org.id.clone()), Mode::Live, AccountKind::Payout, KES, None, at(0));
    commit(&store, |tx| Ok(tx.insert_account(&live)?));
    drop(store);

    // Undoing the migration refuses while a corporate organisation exists, and changes nothing.
    match db.store.backend() {
        Backend::Postgres => {
            let mut conn = PgConnection::establish(&db.url).unwrap();
            while !last_applied(conn.applied_migrations().unwrap()).ends_with("000004") {
                conn.revert_last_migration(PG_MIGRATIONS).unwrap();
            }
            assert!(conn.revert_last_migration(PG_MIGRATIONS).is_err());
            conn.run_pending_migrations(PG_MIGRATIONS).unwrap();
        }
        Backend::Sqlite => {
            let mut conn = SqliteConnection::establish(db.url.trim_start_matches("sqlite://")).unwrap();
            conn.batch_execute("PRAGMA busy_timeout=5000; PRAGMA foreign_keys=ON;").unwrap();
            while !last_applied(conn.applied_migrations().unwrap()).ends_with("000004") {
                conn.revert_last_migration(SQLITE_MIGRATIONS).unwrap();
            }
            assert!(conn.revert_last_migration(SQLITE_MIGRATIONS).is_err());
            // The failed revert leaves its own transaction open on this connection (closing it
            // rolls that back): a new connection applies the later migrations again.
            drop(conn);
            let mut conn = SqliteConnection::establish(db.url.trim_start_matches("sqlite://")).unwrap();
            conn.batch_execute("PRAGMA busy_timeout=5000; PRAGMA foreign_keys=ON;").unwrap();
            conn.run_pending_migrations(SQLITE_MIGRATIONS).unwrap();
        }
    }
    let store = DieselStore::connect(&db.url, Some(2)).unwrap();
    assert_eq!(store.ready(), Ok(()), "still migrated");
    assert_eq!(read(&store, |tx| Ok(tx.org(&m.org.id)?)).unwrap(), Some(m.org));
    let id = TransactionId::new();
    assert_eq!(read(&store, |tx| Ok(tx.journal_source(Mode::Test, &id)?)).unwrap(), None, "the new tables are there");
}

malipo_store_diesel::on_both_backends!(
    payouts_are_checked_by_the_database,
    batches_and_reversals_are_checked_by_the_database,
    concurrent_payout_claims_never_overlap,
    the_payouts_migration_keeps_every_row,
);
