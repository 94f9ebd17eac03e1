//! Tests of the database layer itself, on both backends: the schema refuses wrong states written
//! by hand (append-only ledger and events, balance, charge and delivery constraints), concurrent
//! claims never overlap, transient conflicts are retried, and connecting picks the backend by URL
//! scheme.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;

use malipo_auth::{OrgKind, Organisation};
use malipo_charges::{Charge, ChargeKind, ChargeState};
use malipo_core::{AccountId, ChargeRef, Currency, MinorUnit, Mode, Msisdn, OrgId, Timestamp};
use malipo_idempotency::{Fingerprint, IdempotencyKey, IdempotencyRecord, KeyScope, Outcome};
use malipo_ledger::{verify, Account, AccountKind, Journal, JournalKind, JournalLine};
use malipo_service::{autocommit, query, read, write, ServiceError, Store, StoreError, Tx};
use malipo_store_diesel::testing::TestDatabase;
use malipo_store_diesel::{Backend, DieselStore};
use malipo_webhooks::{Delivery, Endpoint, Event};

const T0: Timestamp = Timestamp::from_micros(1_767_225_600_000_000);

fn at(seconds: i64) -> Timestamp {
    T0.plus_seconds(seconds)
}

fn commit<T>(store: &dyn Store, f: impl FnMut(&mut dyn Tx) -> Result<T, ServiceError>) -> T {
    write(store, f).unwrap_or_else(|e| panic!("transaction failed: {e:?}"))
}

/// A merchant with a collection account, the platform's issuance account and one funded wallet.
struct Fixture {
    org: Organisation,
    collection: Account,
    issuance: Account,
    wallet: Account,
}

fn fixture(store: &dyn Store) -> Fixture {
    let org = Organisation { id: OrgId::new(), name: "Duka".into(), kind: OrgKind::Merchant, country: "KE".into(), created_at: at(0) };
    let collection = Account::open(Some(org.id.clone()), Mode::Test, AccountKind::Collection, Currency::KES, None, at(0));
    let issuance = Account::open(None, Mode::Test, AccountKind::Issuance, Currency::KES, None, at(0));
    let wallet = Account::open(None, Mode::Test, AccountKind::Wallet, Currency::KES, Some("254712000001".into()), at(0));
    let funding = journal(&issuance.id, &wallet.id, 10_000);
    commit(store, |tx| {
        tx.insert_org(&org)?;
        for a in [&collection, &issuance, &wallet] {
            tx.insert_account(a)?;
        }
        tx.post_journal(&funding)?;
        Ok(())
    });
    Fixture { org, collection, issuance, wallet }
}

fn journal(from: &AccountId, to: &AccountId, amount: i64) -> Journal {
    Journal::new(
        Mode::Test,
        Currency::KES,
        JournalKind::Transfer,
        "test",
        vec![
            JournalLine { account: from.clone(), amount: MinorUnit::new(-amount) },
            JournalLine { account: to.clone(), amount: MinorUnit::new(amount) },
        ],
        at(1),
    )
    .unwrap()
}

fn pending_charge(f: &Fixture, payer: &str, due: Timestamp) -> Charge {
    Charge {
        id: ChargeRef::new(),
        kind: ChargeKind::Charge,
        commission: MinorUnit::ZERO,
        org_id: f.org.id.clone(),
        mode: Mode::Test,
        payer_msisdn: Msisdn::parse(payer).unwrap(),
        amount: MinorUnit::new(1_000),
        fee: MinorUnit::new(10),
        currency: Currency::KES,
        amount_reversed: MinorUnit::ZERO,
        reference: "ORDER-1".into(),
        description: None,
        state: ChargeState::Pending,
        failure_reason: None,
        transaction_id: None,
        merchant_account: f.collection.id.clone(),
        payer_account: None,
        created_at: at(0),
        updated_at: at(0),
        expires_at: at(90),
        completed_at: None,
        next_action_at: Some(due),
    }
}

fn ledger_is_sound(store: &dyn Store) {
    let snapshot = read(store, |tx| Ok(tx.ledger_snapshot(None)?)).unwrap();
    assert_eq!(verify(&snapshot), vec![]);
}

// ----- the cases, each run on both backends -----

fn journals_and_postings_are_append_only(db: &TestDatabase) {
    let f = fixture(db);
    for table in ["journals", "postings"] {
        db.refused(&format!("UPDATE {table} SET created_at = created_at + 1"));
        db.refused(&format!("DELETE FROM {table}"));
        if db.store.backend() == Backend::Postgres {
            db.refused(&format!("TRUNCATE {table} CASCADE"));
        }
    }
    let snapshot = read(db, |tx| Ok(tx.ledger_snapshot(None)?)).unwrap();
    assert_eq!(snapshot.journals.len(), 1);
    assert_eq!(snapshot.journals[0].journal.lines.len(), 2);
    assert_eq!(read(db, |tx| Ok(tx.account(&f.wallet.id)?)).unwrap().map(|a| a.balance.get()), Some(10_000));
    ledger_is_sound(db);
}

fn balances_are_checked_by_the_database(db: &TestDatabase) {
    let f = fixture(db);
    let wallet = f.wallet.id.as_str();
    db.refused(&format!("UPDATE accounts SET balance = -1 WHERE id = '{wallet}'"));
    db.refused(&format!("UPDATE accounts SET held = balance + 1 WHERE id = '{wallet}'"));
    db.refused(&format!("UPDATE accounts SET held = -1 WHERE id = '{wallet}'"));
    db.refused(&format!("UPDATE accounts SET allow_negative = TRUE WHERE id = '{wallet}'"));
    db.refused(&format!("UPDATE accounts SET allow_negative = FALSE WHERE id = '{}'", f.issuance.id));
    db.refused(
        "INSERT INTO accounts (id, mode, kind, currency, balance, held, allow_negative, created_at) \
         VALUES ('acc_negative', 'test', 'wallet', 'KES', -5, 0, FALSE, 0)",
    );
    // The same statements within the rules pass: the checks refuse exactly the wrong states.
    assert_eq!(db.store.raw_execute(&format!("UPDATE accounts SET held = balance WHERE id = '{wallet}'")), Ok(1));
    assert_eq!(db.store.raw_execute(&format!("UPDATE accounts SET held = 0 WHERE id = '{wallet}'")), Ok(1));
    assert_eq!(
        db.store.raw_execute(&format!("UPDATE accounts SET balance = balance - 1 WHERE id = '{}'", f.issuance.id)),
        Ok(1),
        "issuance may go negative"
    );
}

fn charges_are_checked_by_the_database(db: &TestDatabase) {
    let f = fixture(db);
    let charge = pending_charge(&f, "254712000002", at(0));
    commit(db, |tx| Ok(tx.insert_charge(&charge)?));
    let id = charge.id.as_str();
    db.refused(&format!("UPDATE charges SET state = 'completed', next_action_at = NULL WHERE id = '{id}'"));
    db.refused(&format!("UPDATE charges SET state = 'failed', next_action_at = NULL WHERE id = '{id}'"));
    db.refused(&format!("UPDATE charges SET next_action_at = NULL WHERE id = '{id}'"));
    db.refused(&format!("UPDATE charges SET fee = amount + 1 WHERE id = '{id}'"));
    db.refused(&format!("UPDATE charges SET state = 'done' WHERE id = '{id}'"));
    assert_eq!(
        db.store.raw_execute(&format!(
            "UPDATE charges SET state = 'completed', next_action_at = NULL, transaction_id = 'tx_1' WHERE id = '{id}'"
        )),
        Ok(1),
        "a completed charge with its transaction is fine"
    );
}

fn store_errors_leave_the_transaction_usable(db: &TestDatabase) {
    let f = fixture(db);
    // A duplicate and a refused journal inside one transaction do not poison it (PostgreSQL
    // aborts a transaction on any failed statement).
    let overdraft = journal(&f.collection.id, &f.wallet.id, 1);
    let refund = journal(&f.wallet.id, &f.collection.id, 2_500);
    commit(db, |tx| {
        assert_eq!(tx.insert_org(&f.org), Err(StoreError::Duplicate));
        assert_eq!(
            tx.post_journal(&overdraft),
            Err(StoreError::Ledger(malipo_ledger::LedgerError::InsufficientFunds(f.collection.id.clone())))
        );
        tx.post_journal(&refund)?;
        // Posting it again fails on the journal's id: the savepoint undoes what it wrote, and on
        // PostgreSQL the transaction recovers from the failed statement.
        assert_eq!(tx.post_journal(&refund), Err(StoreError::Duplicate));
        Ok(())
    });
    let balances = read(db, |tx| Ok((tx.account(&f.wallet.id)?.unwrap().balance, tx.account(&f.collection.id)?.unwrap().balance))).unwrap();
    assert_eq!(balances, (MinorUnit::new(7_500), MinorUnit::new(2_500)));
    ledger_is_sound(db);
}

/// Two workers claiming due charges at once never claim the same charge, and together claim all.
fn concurrent_claims_never_overlap(db: &TestDatabase) {
    let f = fixture(db);
    let total = 200;
    let charges: Vec<Charge> = (0..total).map(|i| pending_charge(&f, "254712000003", at(i))).collect();
    commit(db, |tx| {
        for c in &charges {
            tx.insert_charge(c)?;
        }
        Ok(())
    });
    let store = db.store.clone();
    let start = Arc::new(Barrier::new(2));
    let workers: Vec<_> = (0..2)
        .map(|_| {
            let store = store.clone();
            let start = Arc::clone(&start);
            std::thread::spawn(move || {
                start.wait();
                let mut mine = Vec::new();
                loop {
                    let batch = write(&store, |tx| {
                        let ids = tx.claim_due_charges(at(1_000), at(10_000), 7)?;
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
    let claimed: Vec<Vec<ChargeRef>> = workers.into_iter().map(|w| w.join().unwrap()).collect();
    let all: Vec<&ChargeRef> = claimed.iter().flatten().collect();
    let unique: HashSet<&ChargeRef> = all.iter().copied().collect();
    assert_eq!(all.len(), unique.len(), "a charge was claimed twice");
    assert_eq!(unique, charges.iter().map(|c| &c.id).collect::<HashSet<_>>(), "every due charge was claimed");
    if db.store.backend() == Backend::Postgres {
        // SQLite's write lock is not fair: one worker may take every batch there.
        let counts: Vec<usize> = claimed.iter().map(Vec::len).collect();
        assert!(counts.iter().all(|&n| n > 0), "both workers claimed some: {counts:?}");
    }
    assert_eq!(commit(db, |tx| Ok(tx.claim_due_charges(at(1_000), at(10_000), 10)?)), vec![], "leased until later");
}

/// Two workers locking due charges in their transactions at once, and moving them on, never
/// take the same charge: each skips those the other holds (PostgreSQL: both transactions have
/// begun before either locks), or waits its turn (SQLite's writer) and finds them moved on.
fn concurrent_due_locks_never_overlap(db: &TestDatabase) {
    let inside = db.store.backend() == Backend::Postgres;
    let f = fixture(db);
    let charges: Vec<Charge> = (0..60).map(|i| pending_charge(&f, "254712000004", at(i))).collect();
    commit(db, |tx| {
        for c in &charges {
            tx.insert_charge(c)?;
        }
        Ok(())
    });
    let (store, start) = (db.store.clone(), Arc::new(Barrier::new(2)));
    let workers: Vec<_> = (0..2)
        .map(|_| {
            let (store, start) = (store.clone(), Arc::clone(&start));
            std::thread::spawn(move || {
                if !inside {
                    start.wait();
                }
                let mut waited = false;
                let locked = write(&store, |tx| {
                    if inside && !std::mem::replace(&mut waited, true) {
                        start.wait();
                    }
                    let mine = tx.lock_due_charges(Mode::Test, at(1_000), 20)?;
                    for id in &mine {
                        let c = tx.lock_charge(id)?.expect("locked");
                        tx.update_charge(&Charge { next_action_at: Some(at(5_000)), ..c })?;
                    }
                    Ok(mine)
                });
                locked.unwrap()
            })
        })
        .collect();
    let locked: Vec<Vec<ChargeRef>> = workers.into_iter().map(|w| w.join().unwrap()).collect();
    let all: Vec<&ChargeRef> = locked.iter().flatten().collect();
    let unique: HashSet<&ChargeRef> = all.iter().copied().collect();
    assert_eq!(all.len(), unique.len(), "a charge was locked by both: {locked:?}");
    assert_eq!(all.len(), 40, "each took 20");
}

/// An endpoint of the fixture's organisation and an event with `deliveries` pending deliveries
/// to it, due one second apart from `at(0)`.
fn webhook_fixture(db: &TestDatabase, f: &Fixture, deliveries: i64) -> (Endpoint, Event, Vec<Delivery>) {
    use malipo_store_contract::fixtures::{delivery, endpoint, event};
    let ep = endpoint(&f.org, Mode::Test, at(0));
    let ev = event(&f.org, Mode::Test, "charge.completed", at(0));
    let due: Vec<Delivery> = (0..deliveries).map(|i| delivery(&ev, &ep, at(i))).collect();
    commit(db, |tx| {
        tx.insert_endpoint(&ep)?;
        tx.insert_event(&ev)?;
        for d in &due {
            tx.insert_delivery(d)?;
        }
        Ok(())
    });
    (ep, ev, due)
}

/// Events are append-only (UPDATE is refused by a trigger; DELETE, which only the purge does,
/// is allowed for an event without deliveries), and deliveries and attempts are checked.
fn events_are_append_only_and_deliveries_checked(db: &TestDatabase) {
    let f = fixture(db);
    let (ep, ev, due) = webhook_fixture(db, &f, 1);
    let id = ev.id.as_str();
    db.refused(&format!("UPDATE events SET kind = 'charge.failed' WHERE id = '{id}'"));
    db.refused("UPDATE events SET created_at = created_at + 1");
    db.refused(&format!("DELETE FROM events WHERE id = '{id}'"));
    assert_eq!(read(db, |tx| Ok(tx.event(&f.org.id, Mode::Test, &ev.id)?)).unwrap(), Some(ev.clone()), "unchanged");

    let d = due[0].id.as_str();
    db.refused(&format!("UPDATE deliveries SET state = 'succeeded' WHERE id = '{d}'"));
    db.refused(&format!("UPDATE deliveries SET next_attempt_at = NULL WHERE id = '{d}'"));
    db.refused(&format!("UPDATE deliveries SET state = 'done', next_attempt_at = NULL WHERE id = '{d}'"));
    db.refused(&format!("UPDATE deliveries SET attempts = -1 WHERE id = '{d}'"));
    db.refused(&format!("UPDATE webhook_endpoints SET previous_secret_expires_at = 1 WHERE id = '{}'", ep.id));
    db.refused(&format!("UPDATE webhook_endpoints SET mode = 'prod' WHERE id = '{}'", ep.id));
    db.refused(&format!(
        "INSERT INTO delivery_attempts (delivery_id, event_id, endpoint_id, attempted_at, status, latency_ms, error) \
             VALUES ('{d}', '{id}', '{}', 0, 200, -1, NULL)",
        ep.id
    ));
    assert_eq!(
        db.store.raw_execute(&format!("UPDATE deliveries SET state = 'succeeded', next_attempt_at = NULL WHERE id = '{d}'")),
        Ok(1),
        "a settled delivery without a next attempt is fine"
    );

    let bare = malipo_store_contract::fixtures::event(&f.org, Mode::Test, "charge.failed", at(1));
    commit(db, |tx| Ok(tx.insert_event(&bare)?));
    assert_eq!(db.store.raw_execute(&format!("DELETE FROM events WHERE id = '{}'", bare.id)), Ok(1), "events may be deleted");
}

/// Two workers claiming due deliveries at once never claim the same one, and together claim all.
fn concurrent_delivery_claims_never_overlap(db: &TestDatabase) {
    let f = fixture(db);
    let (_, _, due) = webhook_fixture(db, &f, 200);
    let start = Arc::new(Barrier::new(2));
    let workers: Vec<_> = (0..2)
        .map(|_| {
            let store = db.store.clone();
            let start = Arc::clone(&start);
            std::thread::spawn(move || {
                start.wait();
                let mut mine = Vec::new();
                loop {
                    let batch = write(&store, |tx| {
                        let ids = tx.claim_due_deliveries(at(1_000), at(10_000), 7)?;
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
    let claimed: Vec<Vec<String>> = workers.into_iter().map(|w| w.join().unwrap()).collect();
    let all: Vec<&String> = claimed.iter().flatten().collect();
    let unique: HashSet<&String> = all.iter().copied().collect();
    assert_eq!(all.len(), unique.len(), "a delivery was claimed twice");
    assert_eq!(unique, due.iter().map(|d| &d.id).collect::<HashSet<_>>(), "every due delivery was claimed");
    if db.store.backend() == Backend::Postgres {
        // SQLite's write lock is not fair: one worker may take every batch there.
        let counts: Vec<usize> = claimed.iter().map(Vec::len).collect();
        assert!(counts.iter().all(|&n| n > 0), "both workers claimed some: {counts:?}");
    }
    assert_eq!(commit(db, |tx| Ok(tx.claim_due_deliveries(at(1_000), at(10_000), 10)?)), Vec::<String>::new(), "leased until later");
}

/// 48 transactions claim the same idempotency key at once: exactly one gets it.
fn racing_claims_of_one_key_yield_one_winner(db: &TestDatabase) {
    let f = fixture(db);
    let scope = KeyScope { org_id: f.org.id.clone(), mode: Mode::Test, operation: "POST /partner/stk".into() };
    let key = IdempotencyKey::parse("race").unwrap();
    let threads = 48;
    let start = Arc::new(Barrier::new(threads));
    let racers: Vec<_> = (0..threads)
        .map(|i| {
            let (store, scope, key, start) = (db.store.clone(), scope.clone(), key.clone(), Arc::clone(&start));
            std::thread::spawn(move || {
                start.wait();
                write(&store, |tx| {
                    let record = IdempotencyRecord {
                        fingerprint: Fingerprint::from_stored(format!("fp{i}")),
                        outcome: Some(Outcome::Snapshot(format!("{i}").into_bytes())),
                        created_at: at(0),
                    };
                    let stored = tx.insert_key(&scope, &key, &record)?;
                    // Keep the insert uncommitted a moment: the others must wait for it.
                    std::thread::sleep(Duration::from_millis(5));
                    Ok(stored)
                })
                .unwrap()
            })
        })
        .collect();
    let results: Vec<_> = racers.into_iter().map(|r| r.join().unwrap()).collect();
    assert_eq!(results.iter().filter(|stored| **stored).count(), 1, "exactly one insert stores the key");
    let kept = write(&db.store, |tx| Ok(tx.idempotency_record(&scope, &key)?)).unwrap().unwrap();
    assert!(kept.fingerprint.as_str().starts_with("fp"), "the winner's record is kept");
}

/// Two transactions that lock two accounts in opposite orders deadlock on PostgreSQL (or wait
/// for the write lock on SQLite); the conflict is retried and both commit.
fn conflicting_transactions_are_retried(db: &TestDatabase) {
    let f = fixture(db);
    commit(db, |tx| Ok(tx.post_journal(&journal(&f.issuance.id, &f.collection.id, 10_000))?));
    let both_locked_one = Arc::new(Barrier::new(2));
    let pairs = [(f.wallet.id.clone(), f.collection.id.clone()), (f.collection.id.clone(), f.wallet.id.clone())];
    let threads: Vec<_> = pairs
        .into_iter()
        .map(|(first, second)| {
            let (store, barrier) = (db.store.clone(), Arc::clone(&both_locked_one));
            std::thread::spawn(move || {
                let mut attempts = 0;
                write(&store, |tx| {
                    attempts += 1;
                    tx.hold(&first, MinorUnit::new(10))?;
                    if attempts == 1 && store.backend() == Backend::Postgres {
                        barrier.wait();
                    }
                    tx.hold(&second, MinorUnit::new(10))?;
                    Ok(())
                })
                .map(|()| attempts)
            })
        })
        .collect();
    let attempts: Vec<u32> = threads.into_iter().map(|t| t.join().unwrap().unwrap()).collect();
    if db.store.backend() == Backend::Postgres {
        assert_eq!(attempts.iter().sum::<u32>(), 3, "one deadlock victim ran again: {attempts:?}");
    }
    let held = read(db, |tx| Ok((tx.account(&f.wallet.id)?.unwrap().held, tx.account(&f.collection.id)?.unwrap().held))).unwrap();
    assert_eq!(held, (MinorUnit::new(20), MinorUnit::new(20)));
}

/// Transfers between a few wallets from several threads at once: every refusal is a clean
/// `InsufficientFunds`, and the ledger stays sound (balances equal their postings, the audit
/// chain has no gap or fork, no money is created).
fn concurrent_postings_keep_the_ledger_sound(db: &TestDatabase) {
    let f = fixture(db);
    let wallets: Vec<Account> = (0..4)
        .map(|i| {
            let owner = format!("25471200010{i}");
            Account::open(None, Mode::Test, AccountKind::Wallet, Currency::KES, Some(owner), at(0))
        })
        .collect();
    commit(db, |tx| {
        for w in &wallets {
            tx.insert_account(w)?;
            tx.post_journal(&journal(&f.issuance.id, &w.id, 1_000))?;
        }
        Ok(())
    });
    let ids: Arc<Vec<AccountId>> = Arc::new(wallets.iter().map(|w| w.id.clone()).collect());
    let threads: Vec<_> = (0..6_usize)
        .map(|t| {
            let (store, ids) = (db.store.clone(), Arc::clone(&ids));
            std::thread::spawn(move || {
                let mut posted = 0;
                for i in 0..25_usize {
                    let from = &ids[(t + i) % 4];
                    let to = &ids[(t + 2 * i + 1) % 4];
                    if from == to {
                        continue;
                    }
                    let amount = i64::try_from(50 + (t * 37 + i * 91) % 400).unwrap();
                    match write(&store, |tx| Ok(tx.post_journal(&journal(from, to, amount))?)) {
                        Ok(()) => posted += 1,
                        Err(ServiceError::Store(StoreError::Ledger(malipo_ledger::LedgerError::InsufficientFunds(_)))) => {}
                        Err(e) => panic!("unexpected failure: {e:?}"),
                    }
                }
                posted
            })
        })
        .collect();
    let posted: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
    assert!(posted > 0);
    let snapshot = read(db, |tx| Ok(tx.ledger_snapshot(Some(Mode::Test))?)).unwrap();
    assert_eq!(verify(&snapshot), vec![]);
    assert_eq!(snapshot.journals.len(), 1 + 4 + posted);
    let total: i64 = snapshot.accounts.iter().filter(|a| ids.contains(&a.id)).map(|a| a.balance.get()).sum();
    assert_eq!(total, 4_000, "transfers between wallets create and destroy nothing");
}

/// Transactions that queue their journals (`WriteQueue::queue_writes`, as the worker's chunks
/// do) race to debit one wallet that holds enough for only some of them: the funds are checked
/// where the queue is posted, by the account's guarded update under its row lock, so exactly as
/// many commit as the balance covers, every other one is refused `InsufficientFunds` with nothing
/// written, and the ledger stays sound.
fn racing_queued_debits_of_one_wallet_take_only_what_it_holds(db: &TestDatabase) {
    let f = fixture(db);
    let threads = 8;
    let barrier = Arc::new(Barrier::new(threads));
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let (store, barrier) = (db.store.clone(), Arc::clone(&barrier));
            let (wallet, collection) = (f.wallet.id.clone(), f.collection.id.clone());
            std::thread::spawn(move || {
                let (first, second) = (journal(&wallet, &collection, 1_500), journal(&wallet, &collection, 1_500));
                barrier.wait();
                write(&store, |tx| {
                    tx.queue_writes();
                    tx.post_journals_whole(&[&first])?;
                    tx.post_journal_whole(&second)?;
                    // Queued, not yet posted: the others run into the same moment.
                    std::thread::sleep(Duration::from_millis(20));
                    Ok(())
                })
            })
        })
        .collect();
    let mut committed = 0;
    for handle in handles {
        match handle.join().unwrap() {
            Ok(()) => committed += 1,
            Err(ServiceError::Store(StoreError::Ledger(malipo_ledger::LedgerError::InsufficientFunds(id)))) => {
                assert_eq!(id, f.wallet.id);
            }
            Err(e) => panic!("unexpected failure: {e:?}"),
        }
    }
    assert_eq!(committed, 3, "10,000 covers three debits of 3,000");
    let balance = |id: &AccountId| read(db, |tx| Ok(tx.account(id)?)).unwrap().unwrap().balance.get();
    assert_eq!((balance(&f.wallet.id), balance(&f.collection.id)), (1_000, 9_000));
    ledger_is_sound(db);
}

/// A closure that goes on after a failed statement and returns `Ok`: PostgreSQL has aborted the
/// transaction (and would turn COMMIT into a silent ROLLBACK), so the run fails and nothing is
/// written; SQLite only undid the failed statement, so the rest commits.
fn a_swallowed_database_error(db: &TestDatabase) {
    let f = fixture(db);
    let stranger = Organisation { id: OrgId::new(), name: "Stranger".into(), ..f.org.clone() };
    let orphan = malipo_auth::Credential {
        client_id: "ck_test_orphan".into(),
        org_id: OrgId::new(),
        mode: Mode::Test,
        secret_hash: "hash".into(),
        scopes: OrgKind::Merchant.default_scopes(),
        created_at: at(0),
        revoked_at: None,
        created_by: None,
        last_used_at: None,
    };
    let result = write(db, |tx| {
        tx.insert_org(&stranger)?;
        assert!(tx.insert_credential(&orphan).is_err(), "no such organisation");
        Ok(())
    });
    let stored = read(db, |tx| Ok(tx.org(&stranger.id)?)).unwrap();
    match db.store.backend() {
        Backend::Postgres => {
            assert!(matches!(result, Err(ServiceError::Store(StoreError::Other(_)))), "{result:?}");
            assert_eq!(stored, None);
        }
        Backend::Sqlite => {
            assert_eq!(result, Ok(()));
            assert_eq!(stored, Some(stranger));
        }
    }
    assert_eq!(read(db, |tx| Ok(tx.credential("ck_test_orphan")?)), Ok(None));
}

fn migrations_are_applied_once_and_ready_reports_them(db: &TestDatabase) {
    assert_eq!(db.store.migrate(), Ok(0), "already migrated");
    assert_eq!(db.store.ready(), Ok(()));
    let again = DieselStore::connect(&db.url, Some(2)).unwrap();
    assert_eq!(again.backend(), db.store.backend());
    assert_eq!(again.ready(), Ok(()));
}

/// Home's hourly totals stay exact while several transactions insert and complete one
/// organisation's charges at once (on PostgreSQL each backend counts in its own slot, so none
/// waits on another's counter), and the transactions that roll back leave no count behind.
fn concurrent_writers_keep_the_hour_totals_exact(db: &TestDatabase) {
    let f = Arc::new(fixture(&db.store));
    let threads = 4;
    let start = Arc::new(Barrier::new(threads));
    let paid = malipo_store_contract::fixtures::journal(
        Mode::Test,
        Currency::KES,
        JournalKind::Charge,
        &[(&f.wallet.id, -100), (&f.collection.id, 100)],
        at(0),
    );
    let workers: Vec<_> = (0..threads)
        .map(|t| {
            let (store, f, start, paid) = (db.store.clone(), f.clone(), start.clone(), paid.clone());
            std::thread::spawn(move || {
                start.wait();
                // (created, completed) amounts this thread committed.
                let mut kept = (Vec::new(), Vec::new());
                for i in 0..30_i64 {
                    let when = at((i * 7 + i64::try_from(t).unwrap() * 600) % 86_000);
                    let charge = Charge {
                        created_at: when,
                        updated_at: when,
                        amount: MinorUnit::new(100 + i),
                        ..pending_charge(&f, "254712000002", when)
                    };
                    // Every third is rolled back after its insert and completion.
                    let undo = i % 3 == 0;
                    let done = malipo_store_contract::fixtures::completed(charge.clone(), &paid, when.plus_seconds(5));
                    let outcome = write(&store, |tx| {
                        tx.insert_charge(&charge)?;
                        if i % 2 == 0 {
                            tx.update_charge(&done)?;
                        }
                        if undo {
                            return Err(ServiceError::Internal("rolled back".into()));
                        }
                        Ok(())
                    });
                    assert_eq!(outcome.is_ok(), !undo, "{outcome:?}");
                    if !undo {
                        kept.0.push(100 + i);
                        if i % 2 == 0 {
                            kept.1.push(100 + i);
                        }
                    }
                }
                kept
            })
        })
        .collect();
    let (mut created, mut completed) = (Vec::new(), Vec::new());
    for w in workers {
        let (c, d) = w.join().unwrap();
        created.extend(c);
        completed.extend(d);
    }
    let totals = read(&db.store, |tx| Ok(tx.charge_day_totals(&f.org.id, Mode::Test, at(0), 1)?)).unwrap();
    let sum = |v: &[i64]| v.iter().sum::<i64>();
    assert_eq!(totals.len(), 1, "{totals:?}");
    let day = &totals[0];
    assert_eq!((day.count, day.amount.get()), (u64::try_from(created.len()).unwrap(), sum(&created)));
    assert_eq!((day.completed, day.completed_amount.get()), (u64::try_from(completed.len()).unwrap(), sum(&completed)));
}

malipo_store_diesel::on_both_backends!(
    concurrent_writers_keep_the_hour_totals_exact,
    journals_and_postings_are_append_only,
    balances_are_checked_by_the_database,
    charges_are_checked_by_the_database,
    store_errors_leave_the_transaction_usable,
    concurrent_claims_never_overlap,
    concurrent_due_locks_never_overlap,
    events_are_append_only_and_deliveries_checked,
    concurrent_delivery_claims_never_overlap,
    racing_claims_of_one_key_yield_one_winner,
    conflicting_transactions_are_retried,
    concurrent_postings_keep_the_ledger_sound,
    racing_queued_debits_of_one_wallet_take_only_what_it_holds,
    a_swallowed_database_error,
    migrations_are_applied_once_and_ready_reports_them,
);

/// The writes of a charge's life, which diesel would prepare anew on every call (updates,
/// inserts with a DEFAULT), are kept prepared on PostgreSQL (`cached.rs`): after one charge they
/// are among the connection's prepared statements, and a second charge prepares nothing new.
#[test]
fn a_charges_writes_stay_prepared_on_postgres() {
    let db = TestDatabase::postgres();
    let store = DieselStore::connect(&db.url, Some(1)).unwrap();
    let f = fixture(&store);
    let ep = malipo_store_contract::fixtures::endpoint(&f.org, Mode::Test, at(0));
    commit(&store, |tx| Ok(tx.insert_endpoint(&ep)?));
    let life = |n: usize| {
        let mut charge = pending_charge(&f, &format!("25471200{n:04}"), at(5));
        let event = malipo_store_contract::fixtures::event(&f.org, Mode::Test, "charge.completed", at(1));
        let delivery = malipo_store_contract::fixtures::delivery(&event, &ep, at(1));
        let scope = KeyScope { org_id: f.org.id.clone(), mode: Mode::Test, operation: "POST /partner/stk".into() };
        let key = IdempotencyKey::parse(&format!("key-{n}")).unwrap();
        let record = IdempotencyRecord { fingerprint: Fingerprint::of("POST", "/partner/stk", b"{}"), outcome: None, created_at: at(0) };
        commit(&store, |tx| {
            assert!(tx.insert_key(&scope, &key, &record)?);
            tx.insert_charge(&charge)?;
            tx.hold(&f.wallet.id, MinorUnit::new(1_000))?;
            tx.release(&f.wallet.id, MinorUnit::new(1_000))?;
            let paid = journal(&f.wallet.id, &f.collection.id, 1_000);
            tx.post_journal(&paid)?;
            charge.state = ChargeState::Completed;
            charge.transaction_id = Some(paid.id.clone());
            charge.payer_account = Some(f.wallet.id.clone());
            charge.completed_at = Some(at(2));
            charge.next_action_at = None;
            tx.update_charge(&charge)?;
            tx.insert_event(&event)?;
            tx.insert_delivery(&delivery)?;
            Ok(())
        });
    };
    life(1);
    let prepared = store.prepared_statements().unwrap();
    for statement in [
        r#"INSERT INTO "idempotency_keys""#,
        r#"INSERT INTO "charges""#,
        r#"UPDATE "accounts" SET "held" = ("accounts"."held" +"#,
        r#"UPDATE "accounts" SET "held" = ("accounts"."held" -"#,
        r#"UPDATE "accounts" SET "balance""#,
        r#"INSERT INTO "postings""#,
        r#"INSERT INTO "journals""#,
        r#"UPDATE "charges""#,
        r#"INSERT INTO "events""#,
        r#"INSERT INTO "deliveries""#,
    ] {
        assert!(prepared.iter().any(|s| s.starts_with(statement)), "`{statement}` is not kept prepared: {prepared:#?}");
    }
    life(2);
    assert_eq!(store.prepared_statements().unwrap().len(), prepared.len(), "a second charge prepares nothing new");
    ledger_is_sound(&store);
}

/// Two transactions that queue their journals, as the worker's chunks do, each crediting two
/// merchants' collection accounts in opposite orders with a read of another account (a chunk's
/// next payer) in between, and both past that read before either commits: the queued journals
/// are written at the commit, their accounts locked in the posting's one order, so one waits
/// for the other and both commit at their first attempt. Written at the read instead, each
/// held its first account and waited for the other's: PostgreSQL found a deadlock after a
/// second and one ran again.
#[test]
fn queued_journals_lock_their_accounts_at_commit_in_one_order() {
    let db = TestDatabase::postgres();
    let f = fixture(&db);
    let org = Organisation { id: OrgId::new(), name: "Soko".into(), ..f.org.clone() };
    let other = Account::open(Some(org.id.clone()), Mode::Test, AccountKind::Collection, Currency::KES, None, at(0));
    commit(&db, |tx| {
        tx.insert_org(&org)?;
        Ok(tx.insert_account(&other)?)
    });
    let both_read = Arc::new(Barrier::new(2));
    let orders = [(f.collection.id.clone(), other.id.clone()), (other.id.clone(), f.collection.id.clone())];
    let threads: Vec<_> = orders
        .into_iter()
        .map(|(first, second)| {
            let (store, barrier) = (db.store.clone(), Arc::clone(&both_read));
            let (issuance, payer) = (f.issuance.id.clone(), f.wallet.id.clone());
            std::thread::spawn(move || {
                let mut attempts = 0;
                write(&store, |tx| {
                    attempts += 1;
                    tx.queue_writes();
                    tx.post_journal_whole(&journal(&issuance, &first, 100))?;
                    assert_eq!(tx.account(&payer)?.map(|a| a.balance), Some(MinorUnit::new(10_000)));
                    if attempts == 1 {
                        barrier.wait();
                    }
                    tx.post_journal_whole(&journal(&issuance, &second, 100))?;
                    Ok(())
                })
                .map(|()| attempts)
            })
        })
        .collect();
    let attempts: Vec<u32> = threads.into_iter().map(|t| t.join().unwrap().unwrap()).collect();
    assert_eq!(attempts, vec![1, 1], "no transaction ran again");
    let balance = |id: &AccountId| read(&db, |tx| Ok(tx.account(id)?)).unwrap().unwrap().balance.get();
    assert_eq!((balance(&f.collection.id), balance(&other.id)), (200, 200));
    ledger_is_sound(&db);
}

/// Pooled connections that the server ended (a restart) are discarded on checkout, invisibly.
#[test]
fn dead_pooled_connections_are_replaced() {
    let db = TestDatabase::postgres();
    let f = fixture(&db);
    // Open a few connections, then have the server end every one but the killer's own.
    let start = Arc::new(Barrier::new(4));
    let busy: Vec<_> = (0..4)
        .map(|_| {
            let (store, start) = (db.store.clone(), Arc::clone(&start));
            std::thread::spawn(move || {
                read(&store, |_| {
                    start.wait();
                    Ok(())
                })
                .unwrap();
            })
        })
        .collect();
    busy.into_iter().for_each(|t| t.join().unwrap());
    let killed = db
        .store
        .raw_execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
             WHERE datname = current_database() AND pid <> pg_backend_pid()",
        )
        .unwrap();
    assert!(killed >= 3, "ended {killed} connections");
    assert_eq!(db.ready(), Ok(()));
    for _ in 0..8 {
        let balance = read(&db, |tx| Ok(tx.account(&f.wallet.id)?.map(|a| a.balance))).unwrap();
        assert_eq!(balance, Some(MinorUnit::new(10_000)));
    }
    assert_eq!(db.ready(), Ok(()));
}

/// SQLite's writers of one process queue on one lock per database file, shared by every store
/// opened on it (the server's API and background pools), however its path is spelled; held for
/// the write transaction only, whether it commits or fails, and for statements outside a
/// transaction that may write; never taken by readers, nor on PostgreSQL.
#[test]
fn sqlite_writers_of_one_process_share_one_lock_per_file() {
    let db = TestDatabase::sqlite();
    let spelled = match db.url.rsplit_once('/') {
        Some((dir, file)) => format!("{dir}/./{file}"),
        None => panic!("{}", db.url),
    };
    let other = DieselStore::connect(&spelled, Some(2)).unwrap();
    let elsewhere = TestDatabase::sqlite();
    assert!(!other.sqlite_writer_busy());
    write(&db.store, |_| {
        assert!(other.sqlite_writer_busy(), "a second store on the file sees the writer");
        assert!(!elsewhere.store.sqlite_writer_busy(), "another file has its own lock");
        Ok(())
    })
    .unwrap();
    assert!(!other.sqlite_writer_busy(), "released at commit");
    let failed = write(&other, |_| -> Result<(), ServiceError> {
        assert!(db.store.sqlite_writer_busy());
        Err(ServiceError::Internal("refused".into()))
    });
    assert!(failed.is_err());
    assert!(!db.store.sqlite_writer_busy(), "released at rollback");
    read(&db.store, |_| {
        assert!(!other.sqlite_writer_busy(), "readers take no writer lock");
        Ok(())
    })
    .unwrap();
    query(&db.store, |_| {
        assert!(!other.sqlite_writer_busy(), "nor single reads outside a transaction");
        Ok(())
    })
    .unwrap();
    autocommit(&db.store, |_| {
        assert!(other.sqlite_writer_busy(), "statements that may write outside a transaction take their turn");
        Ok(())
    })
    .unwrap();
    assert!(!other.sqlite_writer_busy(), "released after them");
    // Both stores still write (the lock was given back both times).
    fixture(&other);
    let pg = TestDatabase::postgres();
    write(&pg.store, |_| {
        assert!(!pg.store.sqlite_writer_busy());
        Ok(())
    })
    .unwrap();
}

/// The bundled SQLite is built and set up as `.cargo/config.toml` and `SQLITE_PRAGMAS` say: no
/// allocation statistics (a process-wide mutex on every allocation), plans that never depend on
/// bound values (else every `LIMIT ?` is prepared again on each execution), and savepoints'
/// statement journals in memory. Fails when the workspace's build configuration is lost.
#[test]
fn sqlite_is_built_and_set_up_for_a_server() {
    let db = TestDatabase::sqlite();
    let options = db.store.sqlite_pragma("compile_options").unwrap();
    for wanted in ["DEFAULT_MEMSTATUS=0", "ENABLE_QPSG"] {
        assert!(options.iter().any(|o| o == wanted), "{wanted} missing from {options:?}");
    }
    // MEMORY (2) on every pooled connection.
    for _ in 0..3 {
        assert_eq!(db.store.sqlite_pragma("temp_store").unwrap(), vec!["2".to_owned()]);
    }
}

// ----- connecting -----

#[test]
fn the_url_scheme_picks_the_backend() {
    for url in ["mysql://localhost/malipo", "malipo.db", "file:malipo.db", "sqlite://"] {
        assert!(matches!(DieselStore::connect(url, None), Err(StoreError::Other(_))), "{url}");
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nested/dirs/malipo.db");
    let store = DieselStore::connect(&format!("sqlite://{}", path.display()), Some(1)).unwrap();
    assert_eq!((store.backend(), store.backend().as_str()), (Backend::Sqlite, "sqlite"));
    assert!(path.exists(), "parent directories are created");
    assert!(matches!(store.ready(), Err(StoreError::Unavailable(_))), "not ready before the migrations ran");
    // Every migration directory, applied once.
    let migrations = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../../migrations/sqlite")).unwrap().count();
    assert_eq!(store.migrate(), Ok(migrations));
    assert_eq!(store.ready(), Ok(()));

    let memory = DieselStore::connect("sqlite://:memory:", None).unwrap();
    assert_eq!(memory.migrate(), Ok(migrations));
    assert_eq!(memory.ready(), Ok(()), "one connection, so one database");
}

#[test]
fn an_unreachable_postgres_is_unavailable() {
    let result = DieselStore::connect("postgres://postgres@127.0.0.1:1/malipo?connect_timeout=2", None);
    assert!(matches!(result, Err(StoreError::Unavailable(_))), "{result:?}");
    let db = TestDatabase::postgres();
    assert_eq!((db.store.backend(), db.store.backend().as_str()), (Backend::Postgres, "postgres"));
}

/// SQLite's log is copied into the database file by the file's checkpointer, not by the commit
/// that filled it inside the writers' turn (`sqlite_file.rs`): what is written reaches the
/// database file while the store is open, and the log
/// starts again from its beginning (its file stays far shorter than what was written) while
/// readers keep reading, which checkpoints made only beside the writers never achieve.
#[test]
fn sqlite_log_is_checkpointed_off_the_writers_turn_and_kept_short() {
    let db = TestDatabase::sqlite();
    let f = fixture(&db);
    let path = db.url.strip_prefix("sqlite://").unwrap().to_owned();
    let len = |p: &str| std::fs::metadata(p).map_or(0, |m| m.len());
    let start = len(&path);
    let stop = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let (store, stop, account) = (db.store.clone(), stop.clone(), f.wallet.id.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    read(&store, |tx| Ok(tx.account(&account)?)).unwrap();
                }
            })
        })
        .collect();
    // 30 MiB in 3,000 commits of an event of 10 KiB.
    const WRITTEN: u64 = 3_000 * 10_240;
    for i in 0..3_000 {
        let event = Event {
            id: malipo_core::EventId::new(),
            org_id: f.org.id.clone(),
            mode: Mode::Test,
            kind: "charge.completed".into(),
            object_id: format!("ch_{i}"),
            data: vec![b'x'; 10_240],
            summary: Default::default(),
            created_at: at(i),
        };
        commit(&db, |tx| Ok(tx.insert_event(&event)?));
        // About 20 MB of log a second, as 1,000 charge creations a second write.
        std::thread::sleep(Duration::from_millis(1));
    }
    stop.store(true, Ordering::Relaxed);
    for reader in readers {
        reader.join().unwrap();
    }
    // Two passes of the checkpointer.
    std::thread::sleep(Duration::from_millis(250));
    let (file, log) = (len(&path), len(&format!("{path}-wal")));
    assert!(file >= start + WRITTEN, "the database file holds what was written while open: {start} -> {file} bytes");
    // The log holds some 24 KiB a commit (the event's pages and its indexes'): 72 MiB without a
    // start from the beginning; the checkpointer waits for readers past 16 MiB.
    assert!(log < 32 << 20, "the log started again from its beginning: {log} bytes for {WRITTEN} written");
}
