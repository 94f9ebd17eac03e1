//! Payouts: storage, scoping, updates and what the database refuses, listing, background
//! claims, and a payout (or charge) paid by one journal only.

use std::collections::BTreeSet;

use malipo_core::{MinorUnit, Mode, OrgId, PayoutRef, TransactionId};
use malipo_ledger::{AccountKind, JournalKind};
use malipo_payouts::{Payout, PayoutFailure, PayoutFilter, PayoutState};
use malipo_service::{ServiceError, Store, StoreError};

use crate::fixtures::duplicate;
use crate::fixtures::*;
use crate::payout_fixtures::*;

fn get(store: &dyn Store, org_id: &OrgId, mode: Mode, id: &PayoutRef) -> Option<Payout> {
    query(store, |tx| Ok(tx.payout(org_id, mode, id)?))
}

fn ids(payouts: &[Payout]) -> Vec<PayoutRef> {
    payouts.iter().map(|p| p.id.clone()).collect()
}

/// Whether `e` is the store's refusal of a state its constraints forbid.
pub(crate) fn is_other(e: &ServiceError) -> bool {
    matches!(e, ServiceError::Store(StoreError::Other(_)))
}

/// Payouts round trip (every field, optional ones set and unset, single ones and bulk items)
/// within their organisation and mode only; `lock_payout` finds one by id alone; an existing id,
/// (batch, index) or transaction is refused as a duplicate, and a refused `insert_payouts`
/// stores none of its payouts and leaves the transaction usable.
pub fn payouts_round_trip_scoped_by_org_and_mode(store: &dyn Store) {
    let a = insert_merchant(store, "A", Mode::Test);
    let b = insert_merchant(store, "B", Mode::Test);
    let a_live = insert_account(store, org_account(&a.org, Mode::Live, AccountKind::Payout, at(0)));
    let payee = msisdn("254712000050");
    let paid_by = TransactionId::new();

    let plain = Payout { narration: None, ..payout(&a.payout, &payee, 25_000, at(1)) };
    let full = Payout {
        reference: "PAY/2026-11 ✓".into(),
        narration: Some("Salary, «November»".into()),
        amount_reversed: MinorUnit::new(1_500),
        ..payout_paid(payout(&a.payout, &payee, 10_000, at(2)), &paid_by, at(3))
    };
    let failed = payout_failed(payout(&a.payout, &payee, 99, at(4)), PayoutFailure::WalletLocked, at(5));
    let live = payout(&a_live, &payee, 500, at(6));
    let (batch, items) = bulk_payout(&a.payout, "ck_test_maker", &payee, &[1_000, 2_000], at(7));
    commit(store, |tx| Ok(tx.insert_batch(&batch)?));
    let all: Vec<Payout> = [plain.clone(), full.clone(), failed.clone(), live.clone()].into_iter().chain(items.clone()).collect();
    insert_payouts(store, all.clone());

    for p in &all {
        assert_eq!(get(store, &a.org.id, p.mode, &p.id).as_ref(), Some(p), "payout {} round trips", p.id);
    }
    assert_eq!(get(store, &b.org.id, Mode::Test, &plain.id), None, "another organisation's");
    assert_eq!(get(store, &a.org.id, Mode::Live, &plain.id), None, "another mode's");
    assert_eq!(get(store, &a.org.id, Mode::Test, &live.id), None, "another mode's");
    assert_eq!(get(store, &a.org.id, Mode::Test, &PayoutRef::new()), None);

    assert_eq!(commit(store, |tx| Ok(tx.lock_payout(&full.id)?)), Some(full.clone()));
    assert_eq!(commit(store, |tx| Ok(tx.lock_payout(&live.id)?)), Some(live.clone()));
    assert_eq!(commit(store, |tx| Ok(tx.lock_payout(&items[1].id)?)), Some(items[1].clone()));
    assert_eq!(commit(store, |tx| Ok(tx.lock_payout(&PayoutRef::new())?)), None);

    let fresh = payout(&a.payout, &payee, 700, at(8));
    let same_id = Payout { reference: "OTHER".into(), ..plain.clone() };
    let same_place = Payout { id: PayoutRef::new(), ..items[0].clone() };
    let same_transaction = payout_paid(payout(&a.payout, &payee, 300, at(8)), &paid_by, at(8));
    for dup in [&same_id, &same_place, &same_transaction] {
        assert_eq!(refused(store, |tx| Ok(tx.insert_payouts(&[fresh.clone(), dup.clone()])?)), duplicate(), "{dup:?}");
    }
    assert_eq!(refused(store, |tx| Ok(tx.insert_payouts(&[fresh.clone(), fresh.clone()])?)), duplicate(), "twice in one call");
    assert_eq!(get(store, &a.org.id, Mode::Test, &fresh.id), None, "a refused call stores none of its payouts");
    assert_eq!(get(store, &a.org.id, Mode::Test, &plain.id), Some(plain.clone()));
    commit(store, |tx| {
        assert_eq!(tx.insert_payouts(&[fresh.clone(), same_id.clone()]), Err(StoreError::Duplicate));
        tx.insert_payouts(std::slice::from_ref(&fresh))?;
        Ok(())
    });
    assert_eq!(get(store, &a.org.id, Mode::Test, &fresh.id), Some(fresh), "the transaction went on after the refusal");
    commit(store, |tx| Ok(tx.insert_payouts(&[])?));
}

/// `update_payout` overwrites exactly the mutable fields (state, failure_reason,
/// transaction_id, amount_reversed, updated_at, completed_at, next_action_at), from and to
/// `None` too, and leaves every other field as inserted; a payout that does not exist is an
/// error.
pub fn update_payout_persists_every_mutable_field(store: &dyn Store) {
    let m = insert_merchant(store, "Duka", Mode::Test);
    let payee = msisdn("254712000051");
    let (batch, items) = insert_batch(store, bulk_payout(&m.payout, "ck_test_maker", &payee, &[4_000, 5_000], at(1)));
    let single = insert_payouts(store, vec![payout(&m.payout, &payee, 25_000, at(2))]).remove(0);
    // Changes every field that is not mutable: an update must leave them as inserted.
    let tampered = |p: Payout| Payout {
        org_id: OrgId::new(),
        mode: Mode::Live,
        payee_msisdn: msisdn("254712000059"),
        amount: MinorUnit::new(29_000),
        fee: MinorUnit::new(0),
        currency: ugx(),
        reference: "CHANGED".into(),
        narration: Some("changed".into()),
        bulk_payout_id: None,
        bulk_index: None,
        payout_account: m.collection.id.clone(),
        created_at: at(-50),
        ..p
    };
    let stored = |p: &Payout| get(store, &m.org.id, Mode::Test, &p.id);
    let update = |p: &Payout| commit(store, |tx| Ok(tx.update_payout(p)?));

    // A lease moves the next action; then paid: transaction and completion set, next action cleared.
    let leased = Payout { next_action_at: Some(at(60)), updated_at: at(3), ..single.clone() };
    update(&tampered(leased.clone()));
    assert_eq!(stored(&single), Some(leased.clone()));
    let paid = payout_paid(leased, &TransactionId::new(), at(10));
    update(&tampered(paid.clone()));
    assert_eq!(stored(&single), Some(paid.clone()));
    // A reversal raises amount_reversed.
    let reversed = Payout { amount_reversed: MinorUnit::new(25_000), updated_at: at(20), ..paid };
    update(&tampered(reversed.clone()));
    assert_eq!(stored(&single), Some(reversed));

    // An approved batch's item, due, then failed: failure reason set, next action cleared; the
    // batch and place stay.
    let due = Payout { next_action_at: Some(at(30)), ..items[1].clone() };
    update(&tampered(due.clone()));
    assert_eq!(stored(&items[1]), Some(due.clone()));
    let failed = payout_failed(due, PayoutFailure::PayeeNotFound, at(31));
    update(&tampered(failed.clone()));
    assert_eq!(stored(&items[1]), Some(failed));
    assert_eq!(stored(&items[0]), Some(items[0].clone()), "only the named payout changes");
    let listed = query(store, |tx| Ok(tx.batch_items(&batch.id, None, None, 10)?));
    assert_eq!(listed.len(), 2, "the items are still the batch's");

    let ghost = payout(&m.payout, &payee, 1, at(40));
    assert!(is_other(&refused(store, |tx| Ok(tx.update_payout(&ghost)?))), "no such payout");
}

/// The store refuses what the payouts table's constraints forbid, through `update_payout` and
/// `insert_payouts`: more reversed than paid out, a completed payout without its transaction,
/// a failed one without its reason, a final one still due, a negative fee, an item of no batch
/// or of a batch that does not exist, a payout of no organisation.
pub fn payouts_refuse_impossible_states(store: &dyn Store) {
    let m = insert_merchant(store, "Duka", Mode::Test);
    let payee = msisdn("254712000052");
    let pending = payout(&m.payout, &payee, 10_000, at(1));
    let paid = payout_paid(payout(&m.payout, &payee, 5_000, at(2)), &TransactionId::new(), at(3));
    insert_payouts(store, vec![pending.clone(), paid.clone()]);

    let too_much = Payout { amount_reversed: MinorUnit::new(5_001), ..paid.clone() };
    assert!(is_other(&refused(store, |tx| Ok(tx.update_payout(&too_much)?))), "amount_reversed above amount");
    let reversed_pending = Payout { amount_reversed: MinorUnit::new(1), ..pending.clone() };
    let without_transaction = Payout { transaction_id: None, ..paid.clone() };
    let without_reason = Payout { state: PayoutState::Failed, next_action_at: None, updated_at: at(4), ..pending.clone() };
    let still_due = Payout { next_action_at: Some(at(9)), ..paid.clone() };
    for bad in [&reversed_pending, &without_transaction, &without_reason, &still_due] {
        assert!(is_other(&refused(store, |tx| Ok(tx.update_payout(bad)?))), "{bad:?}");
    }
    assert_eq!(get(store, &m.org.id, Mode::Test, &paid.id), Some(paid.clone()), "unchanged");
    assert_eq!(get(store, &m.org.id, Mode::Test, &pending.id), Some(pending.clone()), "unchanged");

    let negative_fee = Payout { fee: MinorUnit::new(-1), ..payout(&m.payout, &payee, 100, at(5)) };
    let zero = Payout { amount: MinorUnit::ZERO, fee: MinorUnit::ZERO, ..payout(&m.payout, &payee, 100, at(5)) };
    let half_a_bulk_item = Payout { bulk_index: Some(0), ..payout(&m.payout, &payee, 100, at(5)) };
    let (_, unknown_batch) = bulk_payout(&m.payout, "ck_test_maker", &payee, &[100], at(5));
    let unknown_org = Payout { org_id: OrgId::new(), ..payout(&m.payout, &payee, 100, at(5)) };
    for bad in [&negative_fee, &zero, &half_a_bulk_item, &unknown_batch[0], &unknown_org] {
        assert!(is_other(&refused(store, |tx| Ok(tx.insert_payouts(std::slice::from_ref(bad))?))), "{bad:?}");
    }
    let full = Payout { amount_reversed: MinorUnit::new(5_000), ..paid.clone() };
    commit(store, |tx| Ok(tx.update_payout(&full)?));
    assert_eq!(get(store, &m.org.id, Mode::Test, &paid.id), Some(full), "exactly the amount may be reversed");
}

/// `list_payouts` returns the organisation's payouts of the mode newest first (by id), pages
/// with the exclusive `before` cursor and honours `limit`.
pub fn list_payouts_pages_newest_first(store: &dyn Store) {
    let a = insert_merchant(store, "A", Mode::Test);
    let b = insert_merchant(store, "B", Mode::Test);
    let a_live = insert_account(store, org_account(&a.org, Mode::Live, AccountKind::Payout, at(0)));
    let payee = msisdn("254712000053");
    let mine: Vec<Payout> = (1..=5).map(|t| payout(&a.payout, &payee, 1_000 * t, at(t))).collect();
    let live = payout(&a_live, &payee, 100, at(6));
    let theirs = payout(&b.payout, &payee, 100, at(7));
    insert_payouts(store, mine.iter().rev().cloned().chain([live.clone(), theirs.clone()]).collect());
    let mut newest_first = mine.clone();
    newest_first.sort_by(|x, y| y.id.cmp(&x.id));
    let list = |org: &OrgId, mode: Mode, before: Option<&PayoutRef>, limit: usize| {
        query(store, |tx| Ok(tx.list_payouts(org, mode, &PayoutFilter::default(), before, limit)?))
    };

    assert_eq!(list(&a.org.id, Mode::Test, None, 100), newest_first, "every payout, newest first");
    assert_eq!(list(&a.org.id, Mode::Test, None, 2), newest_first[..2].to_vec());
    assert_eq!(list(&a.org.id, Mode::Test, Some(&newest_first[1].id), 2), newest_first[2..4].to_vec());
    assert_eq!(list(&a.org.id, Mode::Test, Some(&newest_first[3].id), 2), newest_first[4..].to_vec());
    assert_eq!(list(&a.org.id, Mode::Test, Some(&newest_first[4].id), 2), vec![]);
    assert_eq!(list(&a.org.id, Mode::Test, None, 0), vec![]);
    assert_eq!(list(&a.org.id, Mode::Live, None, 100), vec![live]);
    assert_eq!(list(&b.org.id, Mode::Test, None, 100), vec![theirs]);
    assert_eq!(list(&b.org.id, Mode::Live, None, 100), vec![]);
}

/// `list_payouts` filters by state, `from` (created at or after), `to` (created before) and
/// batch, alone, together and with the cursor.
pub fn list_payouts_filters(store: &dyn Store) {
    let m = insert_merchant(store, "Duka", Mode::Test);
    let payee = msisdn("254712000054");
    let p1 = payout(&m.payout, &payee, 1_000, at(10));
    let p2 = payout_paid(payout(&m.payout, &payee, 1_000, at(20)), &TransactionId::new(), at(21));
    let p3 = payout_failed(payout(&m.payout, &payee, 1_000, at(30)), PayoutFailure::LimitExceeded, at(31));
    let (batch, items) = insert_batch(store, bulk_payout(&m.payout, "ck_test_maker", &payee, &[500, 600], at(40)));
    let (other_batch, _) = insert_batch(store, bulk_payout(&m.payout, "ck_test_maker", &payee, &[700], at(50)));
    insert_payouts(store, vec![p3.clone(), p1.clone(), p2.clone()]);
    let newest_first = |mut v: Vec<Payout>| {
        v.sort_by(|x, y| y.id.cmp(&x.id));
        ids(&v)
    };
    let list = |filter: PayoutFilter, before: Option<&PayoutRef>| {
        ids(&query(store, |tx| Ok(tx.list_payouts(&m.org.id, Mode::Test, &filter, before, 100)?)))
    };

    let state = |s: PayoutState| PayoutFilter { state: Some(s), ..PayoutFilter::default() };
    assert_eq!(list(state(PayoutState::Pending), None).len(), 4, "p1, both items and the other batch's");
    assert_eq!(list(state(PayoutState::Completed), None), vec![p2.id.clone()]);
    assert_eq!(list(state(PayoutState::Failed), None), vec![p3.id.clone()]);

    let from = PayoutFilter { from: Some(at(20)), to: Some(at(41)), ..PayoutFilter::default() };
    let mut expected = vec![p2.clone(), p3.clone()];
    expected.extend(items.clone());
    assert_eq!(list(from, None), newest_first(expected), "from is inclusive");
    let to = PayoutFilter { to: Some(at(30)), ..PayoutFilter::default() };
    assert_eq!(list(to, None), newest_first(vec![p1.clone(), p2.clone()]), "to is exclusive");

    let of_batch = |b: &malipo_core::BulkPayoutId| PayoutFilter { bulk_payout_id: Some(b.clone()), ..PayoutFilter::default() };
    assert_eq!(list(of_batch(&batch.id), None), newest_first(items.clone()));
    assert_eq!(list(of_batch(&other_batch.id), None).len(), 1);
    assert_eq!(list(of_batch(&malipo_core::BulkPayoutId::new()), None), vec![]);
    let pending_of_batch = PayoutFilter { state: Some(PayoutState::Pending), ..of_batch(&batch.id) };
    let newer = newest_first(items.clone());
    assert_eq!(list(pending_of_batch, Some(&newer[0])), newer[1..].to_vec(), "filters and cursor together");
    let failed_of_batch = PayoutFilter { state: Some(PayoutState::Failed), ..of_batch(&batch.id) };
    assert_eq!(list(failed_of_batch, None), vec![]);
}

/// `claim_due_payouts` claims payouts whose `next_action_at <= now` (any organisation or mode),
/// oldest due first, at most `limit`, moving their `next_action_at` to the lease; a claimed
/// payout is not claimed again until its lease passes; final payouts and the items of a batch
/// not yet approved are never claimed.
pub fn claim_due_payouts_leases(store: &dyn Store) {
    let a = insert_merchant(store, "A", Mode::Test);
    let b = insert_merchant(store, "B", Mode::Live);
    let payee = msisdn("254712000055");
    let due_at =
        |account: &malipo_ledger::Account, next: i64| Payout { next_action_at: Some(at(next)), ..payout(account, &payee, 1_000, at(0)) };
    let d1 = due_at(&a.payout, 10);
    let d2 = due_at(&a.payout, 5);
    let d3 = due_at(&a.payout, 20);
    let d_other = due_at(&b.payout, 15);
    let later = due_at(&a.payout, 100);
    let done = payout_failed(payout(&a.payout, &payee, 1_000, at(0)), PayoutFailure::PayeeNotFound, at(1));
    let (_, waiting) = insert_batch(store, bulk_payout(&a.payout, "ck_test_maker", &payee, &[100, 200], at(0)));
    insert_payouts(store, vec![d1.clone(), d2.clone(), d3.clone(), d_other.clone(), later.clone(), done.clone()]);
    let claim = |now: i64, lease: i64, limit: usize| commit(store, |tx| Ok(tx.claim_due_payouts(at(now), at(lease), limit)?));
    let next_action = |p: &Payout| get(store, &p.org_id, p.mode, &p.id).and_then(|p| p.next_action_at);
    let oldest = |now: i64| commit(store, |tx| Ok(tx.oldest_due_payout(at(now))?));

    assert_eq!(oldest(4), None, "nothing due before 5 (nor batch items awaiting approval)");
    assert_eq!(oldest(20), Some(at(5)), "the oldest due, of any organisation and mode");
    assert_eq!(claim(20, 80, 0), vec![], "a limit of zero claims nothing");
    assert_eq!(claim(20, 80, 2), vec![d2.id.clone(), d1.id.clone()], "oldest due first, at most limit");
    assert_eq!(next_action(&d2), Some(at(80)), "leased");
    assert_eq!(next_action(&d1), Some(at(80)));
    assert_eq!(next_action(&d3), Some(at(20)), "not claimed yet");
    assert_eq!(claim(20, 80, 10), vec![d_other.id.clone(), d3.id.clone()], "every organisation and mode");
    assert_eq!(claim(20, 80, 10), vec![], "claimed payouts are not claimed again");
    assert_eq!(oldest(79), None, "claimed payouts are due at their lease's end");
    assert_eq!(oldest(80), Some(at(80)));
    assert_eq!(claim(79, 140, 10), vec![], "before the lease passes");
    assert_eq!(next_action(&later), Some(at(100)), "not due yet");

    let again: BTreeSet<PayoutRef> = claim(80, 140, 10).into_iter().collect();
    let expected: BTreeSet<PayoutRef> = [&d1, &d2, &d3, &d_other].into_iter().map(|p| p.id.clone()).collect();
    assert_eq!(again, expected, "a lease that passed makes the payout due again");
    assert_eq!(next_action(&d1), Some(at(140)));
    assert_eq!(claim(100, 200, 10), vec![later.id.clone()]);
    assert_eq!(claim(10_000, 20_000, 100).len(), 5, "the five due ones only");
    assert_eq!(next_action(&done), None, "final payouts are never claimed");
    assert!(waiting.iter().all(|p| next_action(p).is_none()), "nor items of a batch awaiting approval");
}

/// A charge or a payout is paid by one ledger journal: a second `charge` or `payout` journal
/// naming the same source is refused as a duplicate and writes nothing (the transaction goes
/// on), while other kinds of journal may share a source.
pub fn a_charge_or_payout_is_paid_once(store: &dyn Store) {
    let kes = insert_platform(store, Mode::Test, KES);
    let m = insert_merchant(store, "Duka", Mode::Test);
    let payee = msisdn("254712000056");
    let (w, _) = insert_wallet(store, Mode::Test, KES, &payee);
    post(store, transfer(Mode::Test, KES, &kes.issuance.id, &m.payout.id, 100_000, at(1)));
    let po = payout(&m.payout, &payee, 10_000, at(2));
    let first = post(store, payout_journal(&po, &w.id, &kes.revenue.id, at(3)));
    let again = payout_journal(&po, &w.id, &kes.revenue.id, at(4));
    let as_charge = malipo_ledger::Journal { kind: JournalKind::Charge, ..payout_journal(&po, &w.id, &kes.revenue.id, at(4)) };
    for second in [&again, &as_charge] {
        assert_eq!(refused(store, |tx| Ok(tx.post_journal(second)?)), duplicate(), "{:?}", second.kind);
    }
    assert_eq!(balance(store, &w.id), 10_000, "paid once");
    assert_eq!(balance(store, &m.payout.id), 100_000 - 10_100);
    assert_eq!(journal_count(store), 2);

    let back = malipo_ledger::Journal {
        source_ref: po.id.to_string(),
        ..journal(Mode::Test, KES, JournalKind::Reversal, &[(&w.id, -1_000), (&m.payout.id, 1_000)], at(5))
    };
    commit(store, |tx| {
        assert_eq!(tx.post_journal(&again), Err(StoreError::Duplicate));
        tx.post_journal(&back)?;
        Ok(())
    });
    assert_eq!(balance(store, &w.id), 9_000, "a reversal may name the payout too");
    let kinds: Vec<JournalKind> = query(store, |tx| Ok(tx.ledger_snapshot(None)?)).journals.iter().map(|cj| cj.journal.kind).collect();
    assert_eq!(kinds, vec![JournalKind::Funding, JournalKind::Payout, JournalKind::Reversal]);
    assert_eq!(first.source_ref, po.id.as_str());
    assert_ledger_sound(store);
}
