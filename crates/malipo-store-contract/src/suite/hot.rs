//! Hot accounts: lines that need no funds check on the platform's revenue, issuance or sandbox
//! funding account may wait to be applied. Whatever an adapter does with them, balances count
//! them at once, journals keep all their lines, a debit or hold that checks funds counts them,
//! and once applied they are postings with one running balance per account.

use std::sync::atomic::{AtomicBool, Ordering};

use malipo_core::{AccountId, Mode};
use malipo_ledger::{JournalKind, LedgerError};
use malipo_service::Store;

use crate::fixtures::*;

/// A charge's journal and a sandbox funding: every balance moves at once, the snapshot holds
/// each journal with all its lines (sealed the same whether or not lines wait), and after
/// applying, the hot accounts' postings run from zero to their balances in order.
pub fn waiting_lines_count_at_once_and_post_in_order(store: &dyn Store) {
    let kes = insert_platform(store, Mode::Test, KES);
    let m = insert_merchant(store, "Duka", Mode::Test);
    let (w, _) = insert_wallet(store, Mode::Test, KES, &msisdn("254712000060"));
    let funding = post(store, transfer(Mode::Test, KES, &kes.sandbox_funding.id, &w.id, 10_000, at(1)));
    let mut charges = Vec::new();
    for i in 1..=3 {
        let j = journal(
            Mode::Test,
            KES,
            JournalKind::P2p,
            &[(&w.id, -1_000 * i), (&m.collection.id, 990 * i), (&kes.revenue.id, 10 * i)],
            at(i + 1),
        )
        .with_fee(&kes.revenue.id, malipo_core::MinorUnit::new(i));
        charges.push(post(store, j));
    }
    assert_eq!(balance(store, &w.id), 4_000);
    assert_eq!(balance(store, &m.collection.id), 5_940);
    assert_eq!(balance(store, &kes.revenue.id), 60, "waiting credits count in the balance at once");
    assert_eq!(balance(store, &kes.sandbox_funding.id), -10_000);
    let listed = query(store, |tx| Ok(tx.org_accounts(&m.org.id, Mode::Test)?));
    assert_eq!(listed.iter().find(|a| a.id == m.collection.id).map(|a| a.balance.get()), Some(5_940));

    let snapshot = query(store, |tx| Ok(tx.ledger_snapshot(Some(Mode::Test))?));
    for posted in std::iter::once(&funding).chain(&charges) {
        let stored = snapshot.journals.iter().find(|cj| cj.journal.id == posted.id).expect("journal in the snapshot");
        assert_eq!(&stored.journal, posted, "a journal keeps all its lines, waiting or posted, in order, with its fees");
    }
    assert!(malipo_ledger::verify(&snapshot).is_empty());
    let part = query(store, |tx| Ok(tx.ledger_part(std::slice::from_ref(&kes.revenue.id))?));
    assert_eq!(part.journals.len(), 3, "the revenue account's part has its journals, waiting or not");
    assert_eq!(part.accounts[0].balance.get(), 60);
    assert!(malipo_ledger::verify_part(&part).is_empty());

    // Sealed while waiting, the chain covers the lines; applying changes no entry.
    assert_eq!(seal(store), 4);
    apply_waiting(store);
    assert!(query(store, |tx| Ok(tx.waiting_accounts(10)?)).is_empty());
    let lines = postings_of(store, &kes.revenue.id);
    assert_eq!(lines.iter().map(|l| l.posting.amount.get()).collect::<Vec<_>>(), vec![10, 20, 30]);
    assert_eq!(lines.iter().map(|l| l.posting.balance_after.get()).collect::<Vec<_>>(), vec![10, 30, 60]);
    assert_eq!(lines.iter().map(|l| l.posting.fee.get()).collect::<Vec<_>>(), vec![1, 2, 3], "fees stay on their lines");
    assert_eq!(lines.iter().map(|l| &l.posting.journal_id).collect::<Vec<_>>(), charges.iter().map(|j| &j.id).collect::<Vec<_>>());
    assert_ledger_sound(store);
}

/// A debit of a hot account that checks funds (revenue giving a fee back) and a hold on it count
/// the credits waiting on it, exactly: all of it may be spent, one unit more is refused.
pub fn checked_debits_and_holds_count_waiting_credits(store: &dyn Store) {
    let kes = insert_platform(store, Mode::Test, KES);
    let (w, _) = insert_wallet(store, Mode::Test, KES, &msisdn("254712000061"));
    let (v, _) = insert_wallet(store, Mode::Test, KES, &msisdn("254712000062"));
    let revenue = &kes.revenue.id;
    post(store, transfer(Mode::Test, KES, &kes.sandbox_funding.id, &w.id, 5_000, at(1)));
    post(store, transfer(Mode::Test, KES, &w.id, revenue, 3_000, at(2)));

    let refused_hold = refused(store, |tx| Ok(tx.hold(revenue, malipo_core::MinorUnit::new(3_001))?));
    assert_eq!(refused_hold, ledger_error(LedgerError::InsufficientFunds(revenue.clone())));
    commit(store, |tx| Ok(tx.hold(revenue, malipo_core::MinorUnit::new(1_000))?));
    assert_eq!(held(store, revenue), 1_000);
    commit(store, |tx| Ok(tx.release(revenue, malipo_core::MinorUnit::new(1_000))?));

    post(store, transfer(Mode::Test, KES, &w.id, revenue, 2_000, at(3)));
    let too_much = transfer(Mode::Test, KES, revenue, &v.id, 5_001, at(4));
    assert_eq!(refused(store, |tx| Ok(tx.post_journal(&too_much)?)), ledger_error(LedgerError::InsufficientFunds(revenue.clone())));
    post(store, transfer(Mode::Test, KES, revenue, &v.id, 5_000, at(5)));
    assert_eq!(balance(store, revenue), 0);
    assert_eq!(balance(store, &v.id), 5_000);
    let lines = postings_of(store, revenue);
    assert_eq!(
        lines.iter().map(|l| l.posting.balance_after.get()).collect::<Vec<_>>(),
        vec![3_000, 5_000, 0],
        "credits applied before the debit"
    );
    assert_ledger_sound(store);
}

/// Charges posted from several threads while appliers run beside them (several instances): no
/// revenue line is lost or applied twice, the balance is their sum, and the postings run in one
/// order.
pub fn concurrent_credits_and_appliers_keep_one_running_balance(store: &dyn Store) {
    const PAYERS: usize = 3;
    const EACH: i64 = 30;
    let kes = insert_platform(store, Mode::Test, KES);
    let m = insert_merchant(store, "Duka", Mode::Test);
    let payers: Vec<AccountId> = (0..PAYERS)
        .map(|i| {
            let (w, _) = insert_wallet(store, Mode::Test, KES, &msisdn(&format!("25471200007{i}")));
            post(store, transfer(Mode::Test, KES, &kes.sandbox_funding.id, &w.id, 1_000_000, at(0)));
            w.id
        })
        .collect();
    let posting = AtomicBool::new(true);
    std::thread::scope(|s| {
        let appliers: Vec<_> = (0..2)
            .map(|_| {
                s.spawn(|| loop {
                    let still_posting = posting.load(Ordering::SeqCst);
                    let n = apply_waiting(store);
                    if n == 0 && !still_posting {
                        break;
                    }
                })
            })
            .collect();
        let posters: Vec<_> = payers
            .iter()
            .map(|payer| {
                let (collection, revenue) = (&m.collection.id, &kes.revenue.id);
                s.spawn(move || {
                    for i in 1..=EACH {
                        let j = journal(Mode::Test, KES, JournalKind::P2p, &[(payer, -100), (collection, 99), (revenue, 1)], at(i));
                        post(store, j);
                    }
                })
            })
            .collect();
        // Every poster is joined and the appliers stopped before a poster's failure is raised.
        let posted: Vec<_> = posters.into_iter().map(std::thread::ScopedJoinHandle::join).collect();
        posting.store(false, Ordering::SeqCst);
        for a in appliers {
            a.join().expect("applier");
        }
        for p in posted {
            p.expect("poster");
        }
    });
    let total = i64::try_from(PAYERS).expect("small") * EACH;
    assert_eq!(balance(store, &m.collection.id), 99 * total);
    assert_eq!(balance(store, &kes.revenue.id), total);
    assert_eq!(postings_of(store, &kes.revenue.id).len(), usize::try_from(total).expect("small"), "every line applied once");
    assert_running_balance(store, &account(store, &kes.revenue.id));
    assert_ledger_sound(store);
}

/// Two debits of a hot account at once, each for more than half of what it has (all of it
/// waiting): exactly one passes, and the account never goes below zero.
pub fn concurrent_debits_of_waiting_credits_pass_once(store: &dyn Store) {
    let kes = insert_platform(store, Mode::Test, KES);
    let (w, _) = insert_wallet(store, Mode::Test, KES, &msisdn("254712000063"));
    let payees: Vec<AccountId> = (0..2).map(|i| insert_wallet(store, Mode::Test, KES, &msisdn(&format!("25471200008{i}"))).0.id).collect();
    let revenue = &kes.revenue.id;
    post(store, transfer(Mode::Test, KES, &kes.sandbox_funding.id, &w.id, 5_000, at(1)));
    post(store, transfer(Mode::Test, KES, &w.id, revenue, 5_000, at(2)));
    let start = std::sync::Barrier::new(2);
    let outcomes: Vec<bool> = std::thread::scope(|s| {
        let racers: Vec<_> = payees
            .iter()
            .map(|payee| {
                let start = &start;
                s.spawn(move || {
                    start.wait();
                    let debit = transfer(Mode::Test, KES, revenue, payee, 3_000, at(3));
                    malipo_service::write(store, |tx| Ok(tx.post_journal(&debit)?)).is_ok()
                })
            })
            .collect();
        racers.into_iter().map(|r| r.join().expect("racer")).collect()
    });
    assert_eq!(outcomes.iter().filter(|ok| **ok).count(), 1, "exactly one debit passes: {outcomes:?}");
    assert_eq!(balance(store, revenue), 2_000);
    assert_ledger_sound(store);
}
