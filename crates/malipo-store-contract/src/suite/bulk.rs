//! Bulk payouts: batches (storage, scoping, updates, what the database refuses, listing) and
//! their items (batch order, scheduling on approval, failing on rejection, 10,000 at once).

use malipo_core::{BulkPayoutId, Mode, OrgId, PayoutRef, TransactionId};
use malipo_ledger::AccountKind;
use malipo_payouts::{BatchCounts, BatchState, BulkPayout, Payout, PayoutFailure, PayoutFilter, PayoutState, MAX_BULK_ITEMS};
use malipo_service::Store;

use super::payouts::is_other;
use crate::fixtures::duplicate;
use crate::fixtures::*;
use crate::payout_fixtures::*;

fn get(store: &dyn Store, org_id: &OrgId, mode: Mode, id: &BulkPayoutId) -> Option<BulkPayout> {
    query(store, |tx| Ok(tx.batch(org_id, mode, id)?))
}

fn items(store: &dyn Store, batch: &BulkPayoutId, state: Option<PayoutState>, after: Option<u32>, limit: usize) -> Vec<PayoutRef> {
    query(store, |tx| Ok(tx.batch_items(batch, state, after, limit)?)).into_iter().map(|p| p.id).collect()
}

fn payout_of(store: &dyn Store, p: &Payout) -> Payout {
    query(store, |tx| Ok(tx.payout(&p.org_id, p.mode, &p.id)?)).unwrap_or_else(|| panic!("payout {} should exist", p.id))
}

/// Batches round trip within their organisation and mode only; `lock_batch` finds one by id
/// alone; `update_batch` overwrites exactly the mutable fields (state, approval, rejection,
/// counts, completion, updated_at); a duplicate id is refused; updating a batch that does not
/// exist is an error.
pub fn batches_round_trip_and_update(store: &dyn Store) {
    let a = insert_merchant(store, "A", Mode::Test);
    let b = insert_merchant(store, "B", Mode::Test);
    let payee = msisdn("254712000060");
    let (batch, _) = insert_batch(store, bulk_payout(&a.payout, "ck_test_maker", &payee, &[1_000, 2_000, 3_000], at(1)));
    assert_eq!(get(store, &a.org.id, Mode::Test, &batch.id), Some(batch.clone()));
    assert_eq!(get(store, &b.org.id, Mode::Test, &batch.id), None, "another organisation's");
    assert_eq!(get(store, &a.org.id, Mode::Live, &batch.id), None, "another mode's");
    assert_eq!(get(store, &a.org.id, Mode::Test, &BulkPayoutId::new()), None);
    assert_eq!(commit(store, |tx| Ok(tx.lock_batch(&batch.id)?)), Some(batch.clone()));
    assert_eq!(commit(store, |tx| Ok(tx.lock_batch(&BulkPayoutId::new())?)), None);
    let again = BulkPayout { reference: "OTHER".into(), ..batch.clone() };
    assert_eq!(refused(store, |tx| Ok(tx.insert_batch(&again)?)), duplicate());

    // Changes every field that is not mutable: an update must leave them as inserted.
    let tampered = |x: BulkPayout| BulkPayout {
        org_id: OrgId::new(),
        mode: Mode::Live,
        reference: "CHANGED".into(),
        currency: ugx(),
        item_count: 9,
        total_amount: malipo_core::MinorUnit::new(1),
        total_fees: malipo_core::MinorUnit::new(2),
        payout_account: a.collection.id.clone(),
        created_by: "ck_test_someone".into(),
        created_at: at(-5),
        ..x
    };
    let stored = || get(store, &a.org.id, Mode::Test, &batch.id);
    let update = |x: &BulkPayout| commit(store, |tx| Ok(tx.update_batch(x)?));
    let approved = batch_approved(batch.clone(), "ck_test_checker", at(2));
    update(&tampered(approved.clone()));
    assert_eq!(stored(), Some(approved.clone()));
    let settling = BulkPayout { counts: BatchCounts { pending: 1, completed: 1, failed: 1 }, updated_at: at(3), ..approved.clone() };
    update(&tampered(settling.clone()));
    assert_eq!(stored(), Some(settling.clone()));
    let done = BulkPayout {
        state: BatchState::Completed,
        counts: BatchCounts { pending: 0, completed: 2, failed: 1 },
        completed_at: Some(at(4)),
        updated_at: at(4),
        ..settling
    };
    update(&tampered(done.clone()));
    assert_eq!(stored(), Some(done));

    let (other, _) = insert_batch(store, bulk_payout(&a.payout, "ck_test_maker", &payee, &[500, 600], at(5)));
    let rejected = BulkPayout {
        state: BatchState::Rejected,
        rejected_by: Some("ck_test_checker".into()),
        rejection_reason: Some("Wrong month «11»".into()),
        counts: BatchCounts { pending: 0, completed: 0, failed: 2 },
        completed_at: Some(at(6)),
        updated_at: at(6),
        ..other.clone()
    };
    update(&tampered(rejected.clone()));
    assert_eq!(get(store, &a.org.id, Mode::Test, &other.id), Some(rejected));
    let (ghost, _) = bulk_payout(&a.payout, "ck_test_maker", &payee, &[1], at(7));
    assert!(is_other(&refused(store, |tx| Ok(tx.update_batch(&ghost)?))), "no such batch");
}

/// The people behind maker and checker are stored and read back; the store refuses a batch
/// approved or rejected by the person who made it, whatever credentials the two sides used
/// (`bulk_payouts_people_check`), and allows another person or no person.
pub fn batches_keep_people_apart(store: &dyn Store) {
    let m = insert_merchant(store, "Payroll Ltd", Mode::Test);
    let payee = msisdn("254712000062");
    let (maker, other) = (malipo_core::UserId::new(), malipo_core::UserId::new());
    let (made, items) = bulk_payout(&m.payout, "ck_test_makers_key", &payee, &[1_000], at(1));
    let (batch, _) = insert_batch(store, (BulkPayout { created_by_person: Some(maker.clone()), ..made }, items));
    assert_eq!(get(store, &m.org.id, Mode::Test, &batch.id).and_then(|b| b.created_by_person), Some(maker.clone()));
    let approved_by = |person: Option<&malipo_core::UserId>| BulkPayout {
        approved_by_person: person.cloned(),
        ..batch_approved(batch.clone(), "ck_test_checkers_key", at(2))
    };
    let rejected_by_maker = BulkPayout {
        state: BatchState::Rejected,
        rejected_by: Some(maker.as_str().to_owned()),
        rejected_by_person: Some(maker.clone()),
        rejection_reason: Some("mine".into()),
        counts: BatchCounts { pending: 0, completed: 0, failed: 1 },
        completed_at: Some(at(3)),
        updated_at: at(3),
        ..batch.clone()
    };
    for (what, bad) in [("approved by its maker", approved_by(Some(&maker))), ("rejected by its maker", rejected_by_maker)] {
        assert!(is_other(&refused(store, |tx| Ok(tx.update_batch(&bad)?))), "{what}");
    }
    assert_eq!(get(store, &m.org.id, Mode::Test, &batch.id), Some(batch.clone()), "unchanged");
    let fine = approved_by(Some(&other));
    commit(store, |tx| Ok(tx.update_batch(&fine)?));
    assert_eq!(get(store, &m.org.id, Mode::Test, &batch.id), Some(fine));
    let (anyone, _) = insert_batch(store, bulk_payout(&m.payout, "ck_test_maker", &payee, &[1_000], at(4)));
    let by_a_key = BulkPayout { approved_by_person: Some(maker), ..batch_approved(anyone.clone(), "ck_test_checker", at(5)) };
    commit(store, |tx| Ok(tx.update_batch(&by_a_key)?));
    assert_eq!(get(store, &m.org.id, Mode::Test, &anyone.id), Some(by_a_key), "a batch no person made");
}

/// The store refuses batches its constraints forbid: the maker as checker, counts that do not
/// sum to the item count or do not fit the state, approval or rejection fields outside their
/// states, no items or more than 10,000.
pub fn batches_refuse_impossible_states(store: &dyn Store) {
    let m = insert_merchant(store, "Duka", Mode::Test);
    let payee = msisdn("254712000061");
    let (batch, _) = insert_batch(store, bulk_payout(&m.payout, "ck_test_maker", &payee, &[1_000, 2_000], at(1)));
    let approved = batch_approved(batch.clone(), "ck_test_checker", at(2));
    let counts = |pending, completed, failed| BatchCounts { pending, completed, failed };
    let rejected = |by: &str, reason: Option<&str>, counts: BatchCounts| BulkPayout {
        state: BatchState::Rejected,
        rejected_by: Some(by.into()),
        rejection_reason: reason.map(Into::into),
        counts,
        completed_at: Some(at(3)),
        updated_at: at(3),
        ..batch.clone()
    };
    let bad_updates = [
        ("maker approves", batch_approved(batch.clone(), "ck_test_maker", at(2))),
        ("maker rejects", rejected("ck_test_maker", Some("Wrong month"), counts(0, 0, 2))),
        ("approved without a checker", BulkPayout { approved_by: None, ..approved.clone() }),
        ("approved without a time", BulkPayout { approved_at: None, ..approved.clone() }),
        ("awaiting with a checker", BulkPayout { approved_by: Some("ck_test_checker".into()), ..batch.clone() }),
        ("counts above the items", BulkPayout { counts: counts(2, 1, 0), ..approved.clone() }),
        ("processing with nothing pending", BulkPayout { counts: counts(0, 1, 1), ..approved.clone() }),
        ("completed while pending", BulkPayout { state: BatchState::Completed, completed_at: Some(at(3)), ..approved.clone() }),
        (
            "completed without a time",
            BulkPayout { state: BatchState::Completed, counts: counts(0, 2, 0), completed_at: None, ..approved.clone() },
        ),
        ("rejected without a reason", rejected("ck_test_checker", None, counts(0, 0, 2))),
        ("rejected with items pending", rejected("ck_test_checker", Some("Wrong month"), counts(2, 0, 0))),
    ];
    for (what, bad) in &bad_updates {
        assert!(is_other(&refused(store, |tx| Ok(tx.update_batch(bad)?))), "{what}");
    }
    assert_eq!(get(store, &m.org.id, Mode::Test, &batch.id), Some(batch.clone()), "unchanged");

    let (empty, _) = bulk_payout(&m.payout, "ck_test_maker", &payee, &[], at(4));
    let (mut huge, _) = bulk_payout(&m.payout, "ck_test_maker", &payee, &[1], at(4));
    huge.item_count = u32::try_from(MAX_BULK_ITEMS).expect("small") + 1;
    huge.counts.pending = huge.item_count;
    for bad in [&empty, &huge] {
        assert!(is_other(&refused(store, |tx| Ok(tx.insert_batch(bad)?))), "{} items", bad.item_count);
    }
    commit(store, |tx| Ok(tx.update_batch(&rejected("ck_test_checker", Some("Wrong month"), counts(0, 0, 2)))?));
    assert_eq!(get(store, &m.org.id, Mode::Test, &batch.id).map(|b| b.state), Some(BatchState::Rejected), "a rightful rejection passes");
}

/// `list_batches` returns the organisation's batches of the mode newest first, with the
/// exclusive `before` cursor and `limit`.
pub fn list_batches_pages_newest_first(store: &dyn Store) {
    let a = insert_merchant(store, "A", Mode::Test);
    let b = insert_merchant(store, "B", Mode::Test);
    let a_live = insert_account(store, org_account(&a.org, Mode::Live, AccountKind::Payout, at(0)));
    let payee = msisdn("254712000062");
    let mine: Vec<BulkPayout> =
        (1..=4).map(|t| insert_batch(store, bulk_payout(&a.payout, "ck_test_maker", &payee, &[t * 100], at(t))).0).collect();
    let (live, _) = insert_batch(store, bulk_payout(&a_live, "ck_live_maker", &payee, &[100], at(5)));
    let (theirs, _) = insert_batch(store, bulk_payout(&b.payout, "ck_test_other", &payee, &[100], at(6)));
    let newest_first: Vec<BulkPayout> = mine.iter().rev().cloned().collect();
    let list = |org: &OrgId, mode: Mode, before: Option<&BulkPayoutId>, limit: usize| {
        query(store, |tx| Ok(tx.list_batches(org, mode, before, limit)?))
    };
    assert_eq!(list(&a.org.id, Mode::Test, None, 10), newest_first);
    assert_eq!(list(&a.org.id, Mode::Test, None, 3), newest_first[..3].to_vec());
    assert_eq!(list(&a.org.id, Mode::Test, Some(&newest_first[2].id), 3), newest_first[3..].to_vec());
    assert_eq!(list(&a.org.id, Mode::Test, Some(&newest_first[3].id), 3), vec![]);
    assert_eq!(list(&a.org.id, Mode::Live, None, 10), vec![live]);
    assert_eq!(list(&b.org.id, Mode::Test, None, 10), vec![theirs]);
}

/// `batch_items` returns a batch's items in its order whatever the insertion order, of one
/// state when asked, above an index when asked, at most `limit`; never another batch's.
pub fn batch_items_in_batch_order(store: &dyn Store) {
    let m = insert_merchant(store, "Duka", Mode::Test);
    let payee = msisdn("254712000063");
    let (batch, listed) = bulk_payout(&m.payout, "ck_test_maker", &payee, &[100, 200, 300, 400, 500], at(1));
    let shuffled: Vec<Payout> = [3, 0, 4, 1, 2].into_iter().map(|i| listed[i].clone()).collect();
    commit(store, |tx| {
        tx.insert_batch(&batch)?;
        tx.insert_payouts(&shuffled)?;
        Ok(())
    });
    let (other, _) = insert_batch(store, bulk_payout(&m.payout, "ck_test_maker", &payee, &[100, 200], at(2)));
    let in_order: Vec<PayoutRef> = listed.iter().map(|p| p.id.clone()).collect();
    let failed = payout_failed(listed[1].clone(), PayoutFailure::WalletLocked, at(3));
    let paid = payout_paid(listed[3].clone(), &TransactionId::new(), at(3));
    commit(store, |tx| {
        tx.update_payout(&failed)?;
        tx.update_payout(&paid)?;
        Ok(())
    });

    assert_eq!(items(store, &batch.id, None, None, 100), in_order);
    assert_eq!(query(store, |tx| Ok(tx.batch_items(&batch.id, None, None, 100)?))[1], failed, "whole payouts");
    assert_eq!(items(store, &batch.id, None, None, 2), in_order[..2].to_vec());
    assert_eq!(items(store, &batch.id, None, Some(1), 2), in_order[2..4].to_vec(), "after is exclusive");
    assert_eq!(items(store, &batch.id, None, Some(4), 2), vec![]);
    assert_eq!(items(store, &batch.id, None, Some(u32::MAX), 2), vec![]);
    assert_eq!(
        items(store, &batch.id, Some(PayoutState::Pending), None, 100),
        vec![in_order[0].clone(), in_order[2].clone(), in_order[4].clone()]
    );
    assert_eq!(items(store, &batch.id, Some(PayoutState::Pending), Some(0), 1), vec![in_order[2].clone()]);
    assert_eq!(items(store, &batch.id, Some(PayoutState::Failed), None, 100), vec![in_order[1].clone()]);
    assert_eq!(items(store, &batch.id, Some(PayoutState::Completed), None, 100), vec![in_order[3].clone()]);
    assert_eq!(items(store, &other.id, None, None, 100).len(), 2);
    assert_eq!(items(store, &BulkPayoutId::new(), None, None, 100), vec![]);
    assert_eq!(items(store, &batch.id, None, None, 0), vec![]);
}

/// `schedule_batch_items` makes exactly the pending items of that batch due, and
/// `fail_batch_items` fails exactly those (reason, time, nothing due); each says how many.
pub fn schedule_and_fail_only_the_pending_items_of_the_batch(store: &dyn Store) {
    let m = insert_merchant(store, "Duka", Mode::Test);
    let payee = msisdn("254712000064");
    let (batch, listed) = insert_batch(store, bulk_payout(&m.payout, "ck_test_maker", &payee, &[100, 200, 300, 400], at(1)));
    let (other, other_items) = insert_batch(store, bulk_payout(&m.payout, "ck_test_maker", &payee, &[100, 200], at(2)));
    let single = insert_payouts(store, vec![payout(&m.payout, &payee, 1_000, at(3))]).remove(0);
    let paid = payout_paid(listed[0].clone(), &TransactionId::new(), at(4));
    let failed = payout_failed(listed[1].clone(), PayoutFailure::LimitExceeded, at(4));
    commit(store, |tx| {
        tx.update_payout(&paid)?;
        tx.update_payout(&failed)?;
        Ok(())
    });

    assert_eq!(commit(store, |tx| Ok(tx.schedule_batch_items(&batch.id, at(50))?)), 2);
    assert_eq!(payout_of(store, &listed[2]), Payout { next_action_at: Some(at(50)), ..listed[2].clone() });
    assert_eq!(payout_of(store, &listed[3]), Payout { next_action_at: Some(at(50)), ..listed[3].clone() });
    assert_eq!((payout_of(store, &listed[0]), payout_of(store, &listed[1])), (paid.clone(), failed.clone()), "settled items stay");
    assert!(other_items.iter().all(|p| payout_of(store, p) == *p), "another batch's items stay");
    assert_eq!(payout_of(store, &single), single);

    assert_eq!(commit(store, |tx| Ok(tx.fail_batch_items(&batch.id, PayoutFailure::BulkPayoutRejected, at(60))?)), 2);
    for item in &listed[2..] {
        assert_eq!(payout_of(store, item), payout_failed(item.clone(), PayoutFailure::BulkPayoutRejected, at(60)));
    }
    assert_eq!((payout_of(store, &listed[0]), payout_of(store, &listed[1])), (paid, failed), "settled items stay");
    assert!(other_items.iter().all(|p| payout_of(store, p) == *p), "another batch's items stay");
    assert_eq!(commit(store, |tx| Ok(tx.fail_batch_items(&batch.id, PayoutFailure::BulkPayoutRejected, at(61))?)), 0);
    assert_eq!(commit(store, |tx| Ok(tx.schedule_batch_items(&batch.id, at(62))?)), 0);
    assert_eq!(commit(store, |tx| Ok(tx.schedule_batch_items(&BulkPayoutId::new(), at(62))?)), 0);

    assert_eq!(commit(store, |tx| Ok(tx.fail_batch_items(&other.id, PayoutFailure::BulkPayoutRejected, at(70))?)), 2);
    assert_eq!(
        commit(store, |tx| Ok(tx.claim_due_payouts(at(1_000), at(2_000), 100)?)),
        vec![single.id.clone()],
        "failed items are never due"
    );
}

/// One `insert_payouts` call stores a batch of the largest size (10,000 items), every item in
/// its place.
pub fn a_batch_of_ten_thousand_items_in_one_insert(store: &dyn Store) {
    let m = insert_merchant(store, "Duka", Mode::Test);
    let payee = msisdn("254712000065");
    let amounts: Vec<i64> = (1..=i64::try_from(MAX_BULK_ITEMS).expect("small")).collect();
    let (batch, listed) = insert_batch(store, bulk_payout(&m.payout, "ck_test_maker", &payee, &amounts, at(1)));
    let mut read = Vec::new();
    let mut after = None;
    loop {
        let page = query(store, |tx| Ok(tx.batch_items(&batch.id, None, after, 1_000)?));
        let Some(last) = page.last() else { break };
        after = last.bulk_index;
        read.extend(page);
    }
    assert_eq!(read.len(), MAX_BULK_ITEMS);
    assert!(read == listed, "every item round trips in the batch's order");
    let filter = PayoutFilter { bulk_payout_id: Some(batch.id.clone()), ..PayoutFilter::default() };
    let newest = query(store, |tx| Ok(tx.list_payouts(&m.org.id, Mode::Test, &filter, None, 3)?));
    assert_eq!(newest.len(), 3);
    assert_eq!(commit(store, |tx| Ok(tx.schedule_batch_items(&batch.id, at(2))?)), u64::try_from(MAX_BULK_ITEMS).expect("small"));
    assert_eq!(commit(store, |tx| Ok(tx.claim_due_payouts(at(2), at(30), 20_000)?)).len(), MAX_BULK_ITEMS);
}
