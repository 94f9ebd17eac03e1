//! The audit chain on both databases: journals are committed unsealed and sealed once (the
//! schema refuses any other change), tampering with sealed history in SQL is found at the entry
//! it touched, a restart between commits and their seal loses nothing, and the sealer's
//! migration keeps every chained journal as it was.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use diesel::connection::SimpleConnection;
use diesel::{Connection, PgConnection, SqliteConnection};
use diesel_migrations::{embed_migrations, EmbeddedMigrations, MigrationHarness};
use malipo_charges::ChargeState;
use malipo_core::Mode;
use malipo_ledger::JournalKind;
use malipo_ledger::{verify, ChainLink, Journal, LedgerSnapshot, Violation};
use malipo_service::{read, write, Store, UnsealedStats};
use malipo_store_contract::fixtures::{
    apply_waiting, at, charge, commit, completed, in_state, insert_merchant, insert_platform, insert_wallet, journal, msisdn, post, seal,
    transfer, KES,
};
use malipo_store_diesel::testing::TestDatabase;
use malipo_store_diesel::{Backend, DieselStore};

const PG_MIGRATIONS: EmbeddedMigrations = embed_migrations!("../../migrations/postgres");
const SQLITE_MIGRATIONS: EmbeddedMigrations = embed_migrations!("../../migrations/sqlite");

fn snapshot(store: &dyn Store) -> LedgerSnapshot {
    read(store, |tx| Ok(tx.ledger_snapshot(None)?)).unwrap()
}

fn link_of(store: &dyn Store, journal: &Journal) -> Option<ChainLink> {
    snapshot(store).journals.into_iter().find(|cj| cj.journal.id == journal.id).and_then(|cj| cj.link)
}

/// Five journals in the test KES ledger (a wallet funded five times, 100 to 500), sealed:
/// seq 1 to 5 in posting order.
fn five_sealed(db: &TestDatabase) -> (malipo_ledger::Account, Vec<Journal>) {
    let kes = insert_platform(db, Mode::Test, KES);
    let (w, _) = insert_wallet(db, Mode::Test, KES, &msisdn("254712000050"));
    let journals: Vec<Journal> = (1..=5).map(|i| post(db, transfer(Mode::Test, KES, &kes.issuance.id, &w.id, 100 * i, at(i)))).collect();
    assert_eq!(seal(db), 5);
    // The issuance account's lines, waiting (it is hot), become postings.
    assert_eq!(apply_waiting(db), 5);
    for (i, j) in journals.iter().enumerate() {
        assert_eq!(link_of(db, j).map(|l| l.seq), Some(i64::try_from(i).unwrap() + 1));
    }
    assert_eq!(verify(&snapshot(db)), vec![]);
    (kes.issuance, journals)
}

/// The one violation tampering must cause: the chain broken at `journal`, `seq`.
fn broken_at(db: &TestDatabase, journal: &Journal, seq: i64) {
    let expected = vec![Violation::BrokenChain { mode: Mode::Test, currency: KES, journal: journal.id.clone(), seq }];
    assert_eq!(verify(&snapshot(db)), expected);
    // The sealer does not paper over it: sealed journals are never sealed again.
    assert_eq!(seal(db), 0);
    assert_eq!(verify(&snapshot(db)), expected);
}

/// The forger first removes the guards (append-only triggers).
fn unguard(db: &TestDatabase) {
    let sql = match db.store.backend() {
        Backend::Postgres => {
            "DROP TRIGGER journals_seal_once ON journals; DROP TRIGGER journals_append_only ON journals; \
                              DROP TRIGGER postings_append_only ON postings"
        }
        Backend::Sqlite => {
            "DROP TRIGGER journals_no_update; DROP TRIGGER journals_no_delete; DROP TRIGGER postings_no_update; \
                            DROP TRIGGER postings_no_delete"
        }
    };
    for statement in sql.split("; ") {
        db.run(statement);
    }
}

// ----- the cases, each run on both backends -----

/// A journal is inserted unsealed and may then be sealed once (seq, prev_hash and hash
/// together); nothing else of it ever changes, a sealed entry never changes, none is deleted.
fn journals_are_sealed_once_and_never_changed(db: &TestDatabase) {
    let kes = insert_platform(db, Mode::Test, KES);
    let (w, _) = insert_wallet(db, Mode::Test, KES, &msisdn("254712000051"));
    let j = post(db, transfer(Mode::Test, KES, &kes.issuance.id, &w.id, 100, at(1)));
    let id = j.id.as_str();
    assert_eq!(link_of(db, &j), None, "committed unsealed");
    assert_eq!(read(db, |tx| Ok(tx.unsealed_stats()?)).unwrap(), UnsealedStats { count: 1, oldest: Some(at(1)) });
    db.refused(&format!("UPDATE journals SET source_ref = 'x' WHERE id = '{id}'"));
    db.refused(&format!("UPDATE journals SET seq = 1, prev_hash = 'p' WHERE id = '{id}'"));
    db.refused(&format!("UPDATE journals SET seq = 1, prev_hash = 'p', hash = 'h', kind = 'payout' WHERE id = '{id}'"));
    db.refused(&format!("DELETE FROM journals WHERE id = '{id}'"));
    assert_eq!(seal(db), 1);
    let link = link_of(db, &j).unwrap();
    db.refused(&format!("UPDATE journals SET seq = 2 WHERE id = '{id}'"));
    db.refused(&format!("UPDATE journals SET hash = 'h' WHERE id = '{id}'"));
    db.refused(&format!("UPDATE journals SET seq = NULL, prev_hash = NULL, hash = NULL WHERE id = '{id}'"));
    db.refused(&format!("DELETE FROM journals WHERE id = '{id}'"));
    assert_eq!(link_of(db, &j), Some(link));
    // Another journal may not take a sealed one's place in its chain.
    let k = post(db, transfer(Mode::Test, KES, &kes.issuance.id, &w.id, 100, at(2)));
    db.refused(&format!("UPDATE journals SET seq = 1, prev_hash = 'p', hash = 'h' WHERE id = '{}'", k.id));
    assert_eq!(seal(db), 1);
    assert_eq!(verify(&snapshot(db)), vec![]);
}

/// A posting's amount edited in SQL (balanced, with the balances kept in step, as a careful
/// forger would): only its journal's chain entry can tell, and it does, at that entry.
fn an_edited_posting_is_found_at_its_entry(db: &TestDatabase) {
    let (issuance, journals) = five_sealed(db);
    unguard(db);
    let target = &journals[2];
    let id = target.id.as_str();
    assert_eq!(db.run(&format!("UPDATE postings SET amount = amount + 1 WHERE journal_id = '{id}' AND amount > 0")), 1);
    assert_eq!(db.run(&format!("UPDATE postings SET amount = amount - 1 WHERE journal_id = '{id}' AND amount < 0")), 1);
    let wallet = &target.lines[1].account;
    db.run(&format!("UPDATE accounts SET balance = balance + 1 WHERE id = '{wallet}'"));
    db.run(&format!("UPDATE accounts SET balance = balance - 1 WHERE id = '{}'", issuance.id));
    broken_at(db, target, 3);
}

/// A journal's own row edited in SQL (its source) is found at its entry.
fn an_edited_journal_is_found_at_its_entry(db: &TestDatabase) {
    let (_, journals) = five_sealed(db);
    unguard(db);
    assert_eq!(db.run(&format!("UPDATE journals SET source_ref = 'forged' WHERE id = '{}'", journals[1].id)), 1);
    broken_at(db, &journals[1], 2);
}

/// A journal deleted in SQL with its postings (and the balances moved back) leaves a gap in the
/// chain: the entry after it no longer links, and that is where the chain is reported broken.
fn a_deleted_journal_is_found_where_it_was(db: &TestDatabase) {
    let (issuance, journals) = five_sealed(db);
    unguard(db);
    let target = &journals[3];
    let wallet = &target.lines[1].account;
    assert_eq!(db.run(&format!("DELETE FROM postings WHERE journal_id = '{}'", target.id)), 2);
    assert_eq!(db.run(&format!("DELETE FROM journals WHERE id = '{}'", target.id)), 1);
    db.run(&format!("UPDATE accounts SET balance = balance - 400 WHERE id = '{wallet}'"));
    db.run(&format!("UPDATE accounts SET balance = balance + 400 WHERE id = '{}'", issuance.id));
    // seq 4 is gone: seq 5 is where the chain stops linking.
    broken_at(db, &journals[4], 5);
}

/// Journals committed with no sealer running (the process killed right after its commits) are
/// all there after a restart, unsealed; the restarted sealer chains every one of them.
fn a_restart_between_commit_and_seal_loses_nothing(db: &TestDatabase) {
    // The process that posts: its own pool, sealing once and then posting with no sealer.
    let old = DieselStore::connect(&db.url, Some(2)).unwrap();
    let kes = insert_platform(&old, Mode::Test, KES);
    let (w, _) = insert_wallet(&old, Mode::Test, KES, &msisdn("254712000052"));
    let first = post(&old, transfer(Mode::Test, KES, &kes.issuance.id, &w.id, 50, at(0)));
    assert_eq!(seal(&old), 1);
    let journals: Vec<Journal> = (1..=30).map(|i| post(&old, transfer(Mode::Test, KES, &kes.issuance.id, &w.id, i, at(i)))).collect();
    drop(old);

    // A new process: a new pool on the same database.
    let store = DieselStore::connect(&db.url, Some(2)).unwrap();
    let stats = read(&store, |tx| Ok(tx.unsealed_stats()?)).unwrap();
    assert_eq!(stats, UnsealedStats { count: 30, oldest: Some(at(1)) });
    let before = snapshot(&store);
    assert_eq!((before.journals.len(), before.unsealed()), (31, 30));
    assert_eq!(verify(&before), vec![], "balances and balance checks hold before the seal");

    let mut sealed = 0;
    loop {
        let n = write(&store, |tx| Ok(tx.seal_pending(7)?)).unwrap();
        sealed += n;
        if n == 0 {
            break;
        }
    }
    assert_eq!(sealed, 30);
    let after = snapshot(&store);
    assert_eq!((after.journals.len(), after.unsealed()), (31, 0));
    assert_eq!(verify(&after), vec![]);
    assert_eq!(link_of(&store, &first).map(|l| l.seq), Some(1));
    for (i, j) in journals.iter().enumerate() {
        assert_eq!(link_of(&store, j).map(|l| l.seq), Some(i64::try_from(i).unwrap() + 2), "sealed in time order after the head");
    }
}

/// The migrations after the sealer's: the hot accounts' (000008), the debits' index (000009),
/// the console's people (000010), the console's charges indexes (000011), maker/checker by
/// person (000012), emails waiting in several organisations (000013), snapshots (000014),
/// callbacks (000015) and Home's hourly totals (000016).
const AFTER_SEALER: [&str; 9] = ["000008", "000009", "000010", "000011", "000012", "000013", "000014", "000015", "000016"];

/// Undoes the migrations down to and including the sealer's (000007), with `revert` undoing
/// the last one and naming it: the later ones ([`AFTER_SEALER`]) first, if still applied.
fn undo_to_sealer(mut revert: impl FnMut() -> Result<String, String>) -> Result<(), String> {
    loop {
        let undone = revert()?;
        if undone.ends_with("000007") {
            return Ok(());
        }
        assert!(AFTER_SEALER.iter().any(|v| undone.ends_with(v)), "{undone}");
    }
}

/// Undoing the sealer's migration is refused while a journal awaits its seal; with every journal
/// sealed, undoing and redoing it keeps every chain entry as it was, and the sealer continues
/// the chain from its head.
fn the_sealer_migration_keeps_the_chain(db: &TestDatabase) {
    let (issuance, journals) = five_sealed(db);
    let wallet = journals[0].lines[1].account.clone();
    let unsealed = post(db, transfer(Mode::Test, KES, &issuance.id, &wallet, 600, at(6)));
    assert_eq!(apply_waiting(db), 1);
    let before = snapshot(db);
    let revert = |db: &TestDatabase| -> Result<(), String> {
        let undone = match db.store.backend() {
            Backend::Postgres => {
                let mut conn = PgConnection::establish(&db.url).unwrap();
                undo_to_sealer(|| conn.revert_last_migration(PG_MIGRATIONS).map(|m| m.to_string()).map_err(|e| e.to_string()))
            }
            Backend::Sqlite => {
                let mut conn = SqliteConnection::establish(db.url.trim_start_matches("sqlite://")).unwrap();
                conn.batch_execute("PRAGMA busy_timeout=5000; PRAGMA foreign_keys=ON;").unwrap();
                undo_to_sealer(|| conn.revert_last_migration(SQLITE_MIGRATIONS).map(|m| m.to_string()).map_err(|e| e.to_string()))
            }
        };
        // What was undone is done again, on a new connection (a failed revert leaves its
        // transaction open on its own): the sealer's and the later ones, or the later ones
        // undone before the refusal.
        let redone = match db.store.backend() {
            Backend::Postgres => PgConnection::establish(&db.url).unwrap().run_pending_migrations(PG_MIGRATIONS).unwrap().len(),
            Backend::Sqlite => {
                let mut conn = SqliteConnection::establish(db.url.trim_start_matches("sqlite://")).unwrap();
                conn.batch_execute("PRAGMA busy_timeout=5000; PRAGMA foreign_keys=ON;").unwrap();
                conn.run_pending_migrations(SQLITE_MIGRATIONS).unwrap().len()
            }
        };
        assert_eq!(redone, AFTER_SEALER.len() + usize::from(undone.is_ok()));
        undone
    };
    assert!(revert(db).is_err(), "refused while a journal awaits its seal");
    assert_eq!(seal(db), 1);
    let sealed = snapshot(db);
    revert(db).unwrap();

    // A new pool: the old one's prepared statements may name the table as it was.
    let store = DieselStore::connect(&db.url, Some(2)).unwrap();
    let after = snapshot(&store);
    let links = |s: &LedgerSnapshot| {
        let mut l: Vec<_> = s.journals.iter().map(|cj| (cj.journal.id.clone(), cj.link.clone())).collect();
        l.sort_by(|a, b| a.0.cmp(&b.0));
        l
    };
    assert_eq!(links(&after), links(&sealed), "every entry as it was");
    assert_eq!(before.journals.len(), after.journals.len());
    assert_eq!(verify(&after), vec![]);
    assert_eq!(link_of(&store, &unsealed).map(|l| l.seq), Some(6));
    // The schema still seals once, and the sealer continues from the head.
    db.refused(&format!("UPDATE journals SET hash = 'h' WHERE id = '{}'", unsealed.id));
    let next = post(&store, transfer(Mode::Test, KES, &issuance.id, &wallet, 700, at(7)));
    assert_eq!(commit(&store, |tx| Ok(tx.seal_pending(10)?)), 1);
    let link = link_of(&store, &next).unwrap();
    assert_eq!((link.seq, link.prev_hash), (7, link_of(&store, &unsealed).unwrap().hash));
    assert_eq!(verify(&snapshot(&store)), vec![]);
}

/// Home's hourly totals (000016) start from the charges written before them: with the migration
/// undone, charges are written (none counted), and done again, the totals are theirs; the
/// charges written after it are counted by its triggers.
fn the_hour_totals_migration_counts_the_charges_before_it(db: &TestDatabase) {
    let revert = || match db.store.backend() {
        Backend::Postgres => PgConnection::establish(&db.url).unwrap().revert_last_migration(PG_MIGRATIONS).unwrap().to_string(),
        Backend::Sqlite => {
            let mut conn = SqliteConnection::establish(db.url.trim_start_matches("sqlite://")).unwrap();
            conn.revert_last_migration(SQLITE_MIGRATIONS).unwrap().to_string()
        }
    };
    assert!(revert().ends_with("000016"), "000016 is the last migration (update this test with the next one)");
    let m = insert_merchant(db, "Duka", Mode::Test);
    let payer = msisdn("254712000052");
    let paid = journal(Mode::Test, KES, JournalKind::Charge, &[(&m.payout.id, -100), (&m.collection.id, 100)], at(0));
    let before = [
        completed(charge(&m.collection, &payer, 1_000, at(10)), &paid, at(12)),
        in_state(charge(&m.collection, &payer, 400, at(3_700)), ChargeState::Failed),
        charge(&m.collection, &payer, 700, at(7_300)),
    ];
    commit(db, |tx| {
        for c in &before {
            tx.insert_charge(c)?;
        }
        Ok(())
    });
    let redone = match db.store.backend() {
        Backend::Postgres => PgConnection::establish(&db.url).unwrap().run_pending_migrations(PG_MIGRATIONS).unwrap().len(),
        Backend::Sqlite => {
            let mut conn = SqliteConnection::establish(db.url.trim_start_matches("sqlite://")).unwrap();
            conn.run_pending_migrations(SQLITE_MIGRATIONS).unwrap().len()
        }
    };
    assert_eq!(redone, 1);
    let store = DieselStore::connect(&db.url, Some(2)).unwrap();
    let day = |store: &DieselStore| {
        let totals = read(store, |tx| Ok(tx.charge_day_totals(&m.org.id, Mode::Test, at(0), 1)?)).unwrap();
        totals.into_iter().map(|t| (t.day, t.count, t.amount.get(), t.completed, t.completed_amount.get())).collect::<Vec<_>>()
    };
    assert_eq!(day(&store), vec![(0, 3, 2_100, 1, 1_000)]);
    commit(&store, |tx| Ok(tx.update_charge(&completed(before[2].clone(), &paid, at(7_310)))?));
    assert_eq!(day(&store), vec![(0, 3, 2_100, 2, 1_700)]);
}

malipo_store_diesel::on_both_backends!(
    the_hour_totals_migration_counts_the_charges_before_it,
    journals_are_sealed_once_and_never_changed,
    an_edited_posting_is_found_at_its_entry,
    an_edited_journal_is_found_at_its_entry,
    a_deleted_journal_is_found_where_it_was,
    a_restart_between_commit_and_seal_loses_nothing,
    the_sealer_migration_keeps_the_chain,
);

/// The sealer's reads (the unsealed journals, their count and their lines) are planned with
/// their values on every pass on PostgreSQL, not kept prepared: a kept statement's generic plan,
/// made after a few passes on tables still nearly empty, stays a sequential scan of every
/// posting as the ledger grows (until an `ANALYZE` invalidates it), so that each pass reads the
/// whole table and the sealer falls ever further behind the postings.
#[test]
fn the_sealers_reads_are_planned_on_every_pass_on_postgres() {
    let db = TestDatabase::postgres();
    let store = DieselStore::connect(&db.url, Some(1)).unwrap();
    let kes = insert_platform(&store, Mode::Test, KES);
    let (w, _) = insert_wallet(&store, Mode::Test, KES, &msisdn("254712000051"));
    for i in 1..=8 {
        post(&store, transfer(Mode::Test, KES, &kes.issuance.id, &w.id, 100, at(i)));
        assert_eq!(read(&store, |tx| Ok(tx.unsealed_stats()?)).unwrap().count, 1);
        assert_eq!(seal(&store), 1);
    }
    assert_eq!(verify(&snapshot(&store)), vec![]);
    let prepared = store.prepared_statements().unwrap();
    assert!(prepared.iter().any(|s| s.starts_with(r#"INSERT INTO "journals""#)), "the posting's statements are kept: {prepared:#?}");
    for read in [r#""postings"."journal_id" = ANY"#, r#""deferred_lines"."journal_id" = ANY"#, r#""journals"."seq" IS NULL"#] {
        assert!(!prepared.iter().any(|s| s.contains(read)), "a statement reading {read} is kept prepared: {prepared:#?}");
    }
}
