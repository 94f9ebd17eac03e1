//! Writes queued by a transaction (`WriteQueue::queue_writes`): journals and events written
//! together, seen by every read, never lost, never undone by a savepoint, and a refusal fails
//! the commit.

use malipo_core::{AccountId, MinorUnit, Mode};
use malipo_ledger::{JournalKind, LedgerError};
use malipo_service::{PostingQuery, ServiceError, Store};

use crate::fixtures::*;

/// An account's postings as (journal, amount, balance after), oldest first.
fn lines(store: &dyn Store, account: &AccountId) -> Vec<(String, i64, i64)> {
    let q = PostingQuery::oldest_first(account.clone(), 20);
    query(store, |tx| Ok(tx.account_postings(&q)?))
        .into_iter()
        .map(|l| (l.posting.journal_id.to_string(), l.posting.amount.get(), l.posting.balance_after.get()))
        .collect()
}

/// Two payers' sandbox fundings and payments to one merchant, posted whole in two calls of a
/// transaction that queues them: a read in the same transaction sees them (the merchant's
/// balance, a payer's debits for its limits), and the commit keeps each line with its running
/// balance in the order posted, as if posted call by call.
pub fn queued_journals_are_seen_by_reads_and_committed_in_order(store: &dyn Store) {
    let kes = insert_platform(store, Mode::Test, KES);
    let m = insert_merchant(store, "Duka", Mode::Test);
    let (a, _) = insert_wallet(store, Mode::Test, KES, &msisdn("254712000040"));
    let (b, _) = insert_wallet(store, Mode::Test, KES, &msisdn("254712000041"));
    let fund_a = journal(Mode::Test, KES, JournalKind::SandboxFunding, &[(&kes.sandbox_funding.id, -1_000), (&a.id, 1_000)], at(1));
    let pay_a = transfer(Mode::Test, KES, &a.id, &m.collection.id, 600, at(1));
    let fund_b = journal(Mode::Test, KES, JournalKind::SandboxFunding, &[(&kes.sandbox_funding.id, -500), (&b.id, 500)], at(1));
    let pay_b = transfer(Mode::Test, KES, &b.id, &m.collection.id, 200, at(1));
    let (merchant_seen, a_debited) = commit(store, |tx| {
        tx.queue_writes();
        tx.post_journals_whole(&[&fund_a, &pay_a])?;
        tx.post_journals_whole(&[&fund_b, &pay_b])?;
        let merchant = tx.account(&m.collection.id)?.expect("the collection account").balance.get();
        let (_, debited) = tx.account_with_debits_since(&a.id, at(0))?.expect("the payer's account");
        Ok((merchant, debited.get()))
    });
    assert_eq!((merchant_seen, a_debited), (800, 600), "a read in the transaction sees what it queued");
    assert_eq!((balance(store, &a.id), balance(store, &b.id), balance(store, &m.collection.id)), (400, 300, 800));
    assert_eq!(balance(store, &kes.sandbox_funding.id), -1_500);
    assert_eq!(
        lines(store, &m.collection.id),
        vec![(pay_a.id.to_string(), 600, 600), (pay_b.id.to_string(), 200, 800)],
        "the merchant's lines in the order posted, each with its running balance"
    );
    assert_eq!(lines(store, &a.id), vec![(fund_a.id.to_string(), 1_000, 1_000), (pay_a.id.to_string(), -600, 400)]);

    // Queued and never read: the commit posts them.
    let pay = transfer(Mode::Test, KES, &a.id, &b.id, 100, at(2));
    commit(store, |tx| {
        tx.queue_writes();
        Ok(tx.post_journal_whole(&pay)?)
    });
    assert_eq!((balance(store, &a.id), balance(store, &b.id), journal_count(store)), (300, 400, 5));
    assert_ledger_sound(store);
}

/// A queued journal that overdraws fails the transaction when the queue is posted (at the
/// latest its commit), with nothing of the transaction written; journals queued before a
/// savepoint are posted before it: the savepoint reads them, and undoing it keeps them.
pub fn queued_journals_refused_fail_the_commit_and_survive_a_failed_savepoint(store: &dyn Store) {
    let kes = insert_platform(store, Mode::Test, KES);
    let m = insert_merchant(store, "Duka", Mode::Test);
    let (w, _) = insert_wallet(store, Mode::Test, KES, &msisdn("254712000042"));
    let fund = journal(Mode::Test, KES, JournalKind::SandboxFunding, &[(&kes.sandbox_funding.id, -100), (&w.id, 100)], at(1));
    let fine = transfer(Mode::Test, KES, &w.id, &m.collection.id, 40, at(1));
    let over = transfer(Mode::Test, KES, &w.id, &m.collection.id, 61, at(1));
    let err = refused(store, |tx| {
        tx.queue_writes();
        tx.post_journals_whole(&[&fund, &fine])?;
        tx.post_journal_whole(&over)?;
        Ok(())
    });
    assert_eq!(err, ledger_error(LedgerError::InsufficientFunds(w.id.clone())));
    assert_eq!((balance(store, &w.id), balance(store, &m.collection.id), journal_count(store)), (0, 0, 0), "nothing written");

    commit(store, |tx| {
        tx.queue_writes();
        tx.post_journals_whole(&[&fund, &fine])?;
        let mut seen = None;
        let inner = tx.savepoint(&mut |tx| {
            seen = tx.account(&w.id)?.map(|a| a.balance);
            tx.post_journal(&transfer(Mode::Test, KES, &w.id, &m.collection.id, 10, at(1)))?;
            Err(ServiceError::Store(malipo_service::StoreError::Other("undo the savepoint".into())))
        });
        assert!(inner.is_err());
        assert_eq!(seen, Some(MinorUnit::new(60)), "the savepoint sees what was queued before it");
        // The journals queued before the savepoint stand.
        assert_eq!(tx.account(&w.id)?.map(|a| a.balance), Some(MinorUnit::new(60)));
        Ok(())
    });
    assert_eq!((balance(store, &w.id), balance(store, &m.collection.id), journal_count(store)), (60, 40, 2));
    assert_ledger_sound(store);
}

/// Events inserted by a transaction that queues them: a read in the transaction sees them, a
/// delivery of one may be inserted (its foreign key finds the event), and the commit keeps them;
/// a duplicate id fails the commit, with nothing of that transaction written.
pub fn queued_events_are_seen_by_reads_and_a_duplicate_fails_the_commit(store: &dyn Store) {
    let org = insert_org(store, "Duka", at(0));
    let hook = insert_endpoint(store, endpoint(&org, Mode::Test, at(0)));
    let first = event(&org, Mode::Test, "charge.authorised", at(1));
    let second = event(&org, Mode::Test, "charge.completed", at(1));
    let sent = delivery(&second, &hook, at(1));
    let seen = commit(store, |tx| {
        tx.queue_writes();
        tx.insert_events(&[first.clone(), second.clone()])?;
        let seen = tx.event(&org.id, Mode::Test, &first.id)?;
        tx.insert_delivery(&sent)?;
        Ok(seen)
    });
    assert_eq!(seen.as_ref(), Some(&first), "a read in the transaction sees what it queued");
    assert_eq!(query(store, |tx| Ok(tx.event(&org.id, Mode::Test, &second.id)?)), Some(second.clone()));
    assert_eq!(query(store, |tx| Ok(tx.deliveries_of_event(&second.id)?)), vec![sent.clone()]);

    let third = event(&org, Mode::Test, "charge.failed", at(2));
    let err = refused(store, |tx| {
        tx.queue_writes();
        tx.insert_event(&third)?;
        tx.insert_event(&first)?;
        Ok(())
    });
    assert_eq!(err, duplicate());
    assert_eq!(query(store, |tx| Ok(tx.event(&org.id, Mode::Test, &third.id)?)), None, "nothing of that transaction written");
}
