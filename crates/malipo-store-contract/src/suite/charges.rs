//! Charges: storage, scoping, updates, listing, background claims.

use std::collections::BTreeSet;

use malipo_charges::{Charge, ChargeFilter, ChargeState, FailureReason};
use malipo_core::{ChargeRef, MinorUnit, Mode, OrgId, Timestamp};
use malipo_ledger::JournalKind;
use malipo_service::Store;

use crate::fixtures::duplicate;
use crate::fixtures::*;

fn get(store: &dyn Store, org_id: &OrgId, mode: Mode, id: &ChargeRef) -> Option<Charge> {
    query(store, |tx| Ok(tx.charge(org_id, mode, id)?))
}

fn ids(charges: &[Charge]) -> Vec<ChargeRef> {
    charges.iter().map(|c| c.id.clone()).collect()
}

/// `insert_charges` inserts charges together, each as `insert_charge` would; one whose id exists
/// is refused with `Duplicate`, and in a transaction that then fails none of them is kept.
pub fn insert_charges_inserts_together(store: &dyn Store) {
    insert_platform(store, Mode::Test, KES);
    let a = insert_merchant(store, "A", Mode::Test);
    let payer = msisdn("254712000040");
    let charges: Vec<Charge> = (0..3).map(|i| charge(&a.collection, &payer, 1_000 + i, at(i))).collect();
    commit(store, |tx| Ok(tx.insert_charges(&charges)?));
    for c in &charges {
        assert_eq!(commit(store, |tx| Ok(tx.charge(&a.org.id, Mode::Test, &c.id)?)).as_ref(), Some(c));
    }
    let fresh = charge(&a.collection, &payer, 5_000, at(5));
    let again = [fresh.clone(), charges[1].clone()];
    assert_eq!(refused(store, |tx| Ok(tx.insert_charges(&again)?)), duplicate());
    assert_eq!(commit(store, |tx| Ok(tx.charge(&a.org.id, Mode::Test, &fresh.id)?)), None, "nothing of the failed call kept");
    commit(store, |tx| Ok(tx.insert_charges(&[])?));
}

/// Charges round trip (every field, optional ones set and unset) within their organisation and
/// mode only; `lock_charge` finds one by id alone; a duplicate id is refused.
pub fn charges_round_trip_scoped_by_org_and_mode(store: &dyn Store) {
    let kes = insert_platform(store, Mode::Test, KES);
    let a = insert_merchant(store, "A", Mode::Test);
    let b = insert_merchant(store, "B", Mode::Test);
    let a_live = insert_account(store, org_account(&a.org, Mode::Live, malipo_ledger::AccountKind::Collection, at(0)));
    let payer = msisdn("254712000030");
    let (w, _) = insert_wallet(store, Mode::Test, KES, &payer);
    post(store, transfer(Mode::Test, KES, &kes.issuance.id, &w.id, 20_000, at(1)));
    let paid = post(
        store,
        journal(Mode::Test, KES, JournalKind::Charge, &[(&w.id, -10_000), (&a.collection.id, 9_900), (&kes.revenue.id, 100)], at(3)),
    );

    let plain = Charge { description: None, ..charge(&a.collection, &payer, 25_000, at(1)) };
    let full = Charge {
        reference: "INV-2026/001 ✓".into(),
        description: Some("Invoice 001, «special» characters".into()),
        state: ChargeState::Completed,
        transaction_id: Some(paid.id.clone()),
        payer_account: Some(w.id.clone()),
        amount_reversed: MinorUnit::new(1_500),
        updated_at: at(3),
        completed_at: Some(at(3)),
        next_action_at: None,
        ..charge(&a.collection, &payer, 10_000, Timestamp::from_micros(at(2).as_micros() + 1_001))
    };
    let failed = Charge {
        state: ChargeState::Failed,
        failure_reason: Some(FailureReason::InsufficientFunds),
        next_action_at: None,
        ..charge(&a.collection, &payer, 99, Timestamp::from_micros(at(4).as_micros() + 123_457))
    };
    let live = charge(&a_live, &payer, 500, at(5));
    let charges = [plain.clone(), full.clone(), failed.clone(), live.clone()];
    commit(store, |tx| {
        for c in &charges {
            tx.insert_charge(c)?;
        }
        Ok(())
    });

    for c in &charges {
        assert_eq!(get(store, &a.org.id, c.mode, &c.id).as_ref(), Some(c), "charge {} round trips", c.id);
    }
    assert_eq!(get(store, &b.org.id, Mode::Test, &plain.id), None, "another organisation's");
    assert_eq!(get(store, &a.org.id, Mode::Live, &plain.id), None, "another mode's");
    assert_eq!(get(store, &a.org.id, Mode::Test, &live.id), None, "another mode's");
    assert_eq!(get(store, &a.org.id, Mode::Test, &ChargeRef::new()), None);

    assert_eq!(commit(store, |tx| Ok(tx.lock_charge(&full.id)?)), Some(full.clone()));
    assert_eq!(commit(store, |tx| Ok(tx.lock_charge(&live.id)?)), Some(live.clone()));
    assert_eq!(commit(store, |tx| Ok(tx.lock_charge(&ChargeRef::new())?)), None);

    let again = Charge { reference: "OTHER".into(), ..plain.clone() };
    assert_eq!(refused(store, |tx| Ok(tx.insert_charge(&again)?)), duplicate());
    assert_eq!(get(store, &a.org.id, Mode::Test, &plain.id), Some(plain));
    assert_ledger_sound(store);
}

/// `update_charge` overwrites exactly the mutable fields (state, failure_reason,
/// transaction_id, payer_account, amount_reversed, updated_at, completed_at, next_action_at),
/// from and to `None` too, and leaves every other field as inserted.
pub fn update_charge_persists_every_mutable_field(store: &dyn Store) {
    let kes = insert_platform(store, Mode::Test, KES);
    let m = insert_merchant(store, "Duka", Mode::Test);
    let payer = msisdn("254712000031");
    let (w, _) = insert_wallet(store, Mode::Test, KES, &payer);
    post(store, transfer(Mode::Test, KES, &kes.issuance.id, &w.id, 30_000, at(1)));
    let paid = post(
        store,
        journal(Mode::Test, KES, JournalKind::Charge, &[(&w.id, -25_000), (&m.collection.id, 24_750), (&kes.revenue.id, 250)], at(10)),
    );
    let original = insert_charge(store, charge(&m.collection, &payer, 25_000, at(2)));
    let unchanged = original.clone();
    // Changes every field that is not mutable: an update must leave them as inserted.
    let tampered = |c: Charge| Charge {
        payer_msisdn: msisdn("254712000039"),
        amount: MinorUnit::new(29_000),
        fee: MinorUnit::new(0),
        currency: ugx(),
        reference: "CHANGED".into(),
        description: None,
        merchant_account: m.payout.id.clone(),
        created_at: at(-50),
        expires_at: at(999),
        ..c
    };
    let stored = || get(store, &m.org.id, Mode::Test, &original.id);
    let update = |c: &Charge| commit(store, |tx| Ok(tx.update_charge(c)?));

    // pending → authorised: payer account set, next action moved.
    let authorised = Charge {
        state: ChargeState::Authorised,
        payer_account: Some(w.id.clone()),
        updated_at: at(5),
        next_action_at: Some(at(30)),
        ..unchanged.clone()
    };
    update(&tampered(authorised.clone()));
    assert_eq!(stored(), Some(authorised.clone()));

    // authorised → completed: transaction, completion, reversal amount set, next action cleared.
    let done = Charge { amount_reversed: MinorUnit::new(700), ..completed(authorised.clone(), &paid, at(10)) };
    update(&tampered(done.clone()));
    assert_eq!(stored(), Some(done));

    // authorised → failed on another charge: failure reason set, payer account and next action cleared.
    let second = insert_charge(
        store,
        in_state(Charge { payer_account: Some(w.id.clone()), ..charge(&m.collection, &payer, 500, at(3)) }, ChargeState::Authorised),
    );
    let failed = Charge {
        state: ChargeState::Failed,
        failure_reason: Some(FailureReason::ProcessingError),
        payer_account: None,
        updated_at: at(20),
        next_action_at: None,
        ..second.clone()
    };
    update(&tampered(failed.clone()));
    assert_eq!(get(store, &m.org.id, Mode::Test, &second.id), Some(failed));
    assert_eq!(stored().map(|c| c.state), Some(ChargeState::Completed), "only the named charge changes");
    assert_ledger_sound(store);
}

/// `latest_charge_by_reference` returns the most recently created charge with that reference,
/// of that organisation and mode.
pub fn latest_charge_by_reference_picks_the_newest(store: &dyn Store) {
    let a = insert_merchant(store, "A", Mode::Test);
    let b = insert_merchant(store, "B", Mode::Test);
    let a_live = insert_account(store, org_account(&a.org, Mode::Live, malipo_ledger::AccountKind::Collection, at(0)));
    let payer = msisdn("254712000032");
    let with_ref = |account: &malipo_ledger::Account, reference: &str, t: i64| Charge {
        reference: reference.into(),
        ..charge(account, &payer, 1_000, at(t))
    };
    // Built in creation order (ids are time-ordered).
    let r1 = with_ref(&a.collection, "R", 1);
    let r2 = with_ref(&a.collection, "R", 2);
    let r3 = with_ref(&a.collection, "R", 3);
    let other_ref = with_ref(&a.collection, "S", 4);
    let live = with_ref(&a_live, "R", 5);
    let other_org = with_ref(&b.collection, "R", 6);
    commit(store, |tx| {
        for c in [&r2, &r3, &other_org, &r1, &live, &other_ref] {
            tx.insert_charge(c)?;
        }
        Ok(())
    });
    let latest = |org: &OrgId, mode: Mode, reference: &str| query(store, |tx| Ok(tx.latest_charge_by_reference(org, mode, reference)?));
    assert_eq!(latest(&a.org.id, Mode::Test, "R"), Some(r3));
    assert_eq!(latest(&a.org.id, Mode::Test, "S"), Some(other_ref));
    assert_eq!(latest(&a.org.id, Mode::Live, "R"), Some(live));
    assert_eq!(latest(&b.org.id, Mode::Test, "R"), Some(other_org));
    assert_eq!(latest(&b.org.id, Mode::Test, "S"), None);
    assert_eq!(latest(&a.org.id, Mode::Test, "r"), None, "references are case-sensitive");
}

/// `list_charges` returns the organisation's charges of the mode newest first (by id), pages
/// with the exclusive `before` cursor and honours `limit`.
pub fn list_charges_pages_newest_first(store: &dyn Store) {
    let a = insert_merchant(store, "A", Mode::Test);
    let b = insert_merchant(store, "B", Mode::Test);
    let a_live = insert_account(store, org_account(&a.org, Mode::Live, malipo_ledger::AccountKind::Collection, at(0)));
    let payer = msisdn("254712000033");
    let mine: Vec<Charge> = (1..=5).map(|t| charge(&a.collection, &payer, 1_000 * t, at(t))).collect();
    let live = charge(&a_live, &payer, 100, at(6));
    let theirs = charge(&b.collection, &payer, 100, at(7));
    commit(store, |tx| {
        for c in mine.iter().rev().chain([&live, &theirs]) {
            tx.insert_charge(c)?;
        }
        Ok(())
    });
    let mut newest_first = mine.clone();
    newest_first.sort_by(|x, y| y.id.cmp(&x.id));
    let list = |before: Option<&ChargeRef>, limit: usize| {
        query(store, |tx| Ok(tx.list_charges(&a.org.id, Mode::Test, &ChargeFilter::default(), before, limit)?))
    };

    assert_eq!(list(None, 100), newest_first, "every charge, newest first");
    assert_eq!(list(None, 2), newest_first[..2].to_vec());
    assert_eq!(list(Some(&newest_first[1].id), 2), newest_first[2..4].to_vec());
    assert_eq!(list(Some(&newest_first[3].id), 2), newest_first[4..].to_vec());
    assert_eq!(list(Some(&newest_first[4].id), 2), vec![]);
    assert_eq!(list(None, 0), vec![]);
    assert_eq!(query(store, |tx| Ok(tx.list_charges(&a.org.id, Mode::Live, &ChargeFilter::default(), None, 100)?)), vec![live]);
    assert_eq!(query(store, |tx| Ok(tx.list_charges(&b.org.id, Mode::Test, &ChargeFilter::default(), None, 100)?)), vec![theirs]);
    assert_eq!(query(store, |tx| Ok(tx.list_charges(&b.org.id, Mode::Live, &ChargeFilter::default(), None, 100)?)), vec![]);
}

/// `list_charges` filters by state, `from` (created at or after), `to` (created before) and
/// reference, alone, together and with the cursor.
pub fn list_charges_filters(store: &dyn Store) {
    let m = insert_merchant(store, "Duka", Mode::Test);
    let payer = msisdn("254712000034");
    let make = |t: i64, state: ChargeState, reference: &str| {
        in_state(Charge { reference: reference.into(), ..charge(&m.collection, &payer, 1_000, at(t)) }, state)
    };
    let c1 = make(10, ChargeState::Pending, "A");
    let c2 = make(20, ChargeState::Authorised, "B");
    let c3 = make(30, ChargeState::Declined, "A");
    let c4 = make(40, ChargeState::Pending, "B");
    commit(store, |tx| {
        for c in [&c3, &c1, &c4, &c2] {
            tx.insert_charge(c)?;
        }
        Ok(())
    });
    let newest_first = |mut v: Vec<Charge>| {
        v.sort_by(|x, y| y.id.cmp(&x.id));
        ids(&v)
    };
    let list = |filter: ChargeFilter, before: Option<&ChargeRef>| {
        ids(&query(store, |tx| Ok(tx.list_charges(&m.org.id, Mode::Test, &filter, before, 100)?)))
    };

    let state = |s: ChargeState| ChargeFilter { state: Some(s), ..ChargeFilter::default() };
    assert_eq!(list(state(ChargeState::Pending), None), newest_first(vec![c1.clone(), c4.clone()]));
    assert_eq!(list(state(ChargeState::Authorised), None), newest_first(vec![c2.clone()]));
    assert_eq!(list(state(ChargeState::Expired), None), vec![]);

    let from = ChargeFilter { from: Some(at(20)), ..ChargeFilter::default() };
    assert_eq!(list(from, None), newest_first(vec![c2.clone(), c3.clone(), c4.clone()]), "from is inclusive");
    let to = ChargeFilter { to: Some(at(30)), ..ChargeFilter::default() };
    assert_eq!(list(to, None), newest_first(vec![c1.clone(), c2.clone()]), "to is exclusive");
    let window = ChargeFilter { from: Some(at(20)), to: Some(at(40)), ..ChargeFilter::default() };
    assert_eq!(list(window, None), newest_first(vec![c2.clone(), c3.clone()]));

    // An id drawn a little after its creation time was read (as earlier builds drew them) is in
    // the window of its creation time.
    let late = Charge { id: ChargeRef::at(at(45 + 600)), ..make(45, ChargeState::Pending, "C") };
    commit(store, |tx| Ok(tx.insert_charge(&late)?));
    let around = ChargeFilter { from: Some(at(45)), to: Some(at(46)), ..ChargeFilter::default() };
    assert_eq!(list(around, None), vec![late.id.clone()], "drawn ten minutes late, still listed by its creation time");
    let after = ChargeFilter { from: Some(at(46)), ..ChargeFilter::default() };
    assert_eq!(list(after, None), vec![], "nor listed after it");

    let reference = |r: &str| ChargeFilter { reference: Some(r.into()), ..ChargeFilter::default() };
    assert_eq!(list(reference("A"), None), newest_first(vec![c1.clone(), c3.clone()]));
    assert_eq!(list(reference("Z"), None), vec![]);

    let pending_b = ChargeFilter { state: Some(ChargeState::Pending), reference: Some("B".into()), ..ChargeFilter::default() };
    assert_eq!(list(pending_b, None), vec![c4.id.clone()]);
    let newer_a = newest_first(vec![c1.clone(), c3.clone()]);
    assert_eq!(list(reference("A"), Some(&newer_a[0])), newer_a[1..].to_vec(), "filter and cursor together");
}

/// `list_charges` filters by payer (the console's "Phone number"), alone, with a state and with
/// the cursor; another organisation's charges to the same payer are never listed.
pub fn list_charges_filters_by_payer(store: &dyn Store) {
    let m = insert_merchant(store, "Duka", Mode::Test);
    let other = insert_merchant(store, "Soko", Mode::Test);
    let (amina, baraka) = (msisdn("254712000041"), msisdn("254712000042"));
    let a1 = charge(&m.collection, &amina, 1_000, at(10));
    let b1 = charge(&m.collection, &baraka, 1_000, at(20));
    let a2 = in_state(charge(&m.collection, &amina, 1_000, at(30)), ChargeState::Declined);
    let a3 = charge(&m.collection, &amina, 1_000, at(40));
    let theirs = charge(&other.collection, &amina, 1_000, at(50));
    commit(store, |tx| {
        for c in [&a2, &theirs, &a1, &b1, &a3] {
            tx.insert_charge(c)?;
        }
        Ok(())
    });
    let list = |filter: ChargeFilter, before: Option<&ChargeRef>, limit: usize| {
        ids(&query(store, |tx| Ok(tx.list_charges(&m.org.id, Mode::Test, &filter, before, limit)?)))
    };
    let payer = |p: &malipo_core::Msisdn| ChargeFilter { payer: Some(p.clone()), ..ChargeFilter::default() };
    let mut amina_newest_first = vec![a1.id.clone(), a2.id.clone(), a3.id.clone()];
    amina_newest_first.sort_by(|x, y| y.cmp(x));
    assert_eq!(list(payer(&amina), None, 100), amina_newest_first);
    assert_eq!(list(payer(&baraka), None, 100), vec![b1.id.clone()]);
    assert_eq!(list(payer(&msisdn("254712000043")), None, 100), vec![]);
    assert_eq!(list(payer(&amina), None, 2), amina_newest_first[..2].to_vec(), "limit");
    assert_eq!(list(payer(&amina), Some(&amina_newest_first[1]), 100), amina_newest_first[2..].to_vec(), "with the cursor");
    let declined = ChargeFilter { state: Some(ChargeState::Declined), ..payer(&amina) };
    assert_eq!(list(declined, None, 100), vec![a2.id.clone()]);
    let declined_b = ChargeFilter { state: Some(ChargeState::Declined), ..payer(&baraka) };
    assert_eq!(list(declined_b, None, 100), vec![]);
}

/// A pending charge of 10.00 to `account`'s merchant by `payer`, due at `next` (`None`: never).
fn due_charge(account: &malipo_ledger::Account, payer: &malipo_core::Msisdn, next: Option<i64>) -> Charge {
    Charge { next_action_at: next.map(at), ..charge(account, payer, 1_000, at(0)) }
}

/// `claim_due_charges` claims charges whose `next_action_at <= now` (any organisation or
/// mode), oldest due first, at most `limit`, moving their `next_action_at` to the lease; a
/// claimed charge is not claimed again until its lease passes.
pub fn claim_due_charges_leases(store: &dyn Store) {
    let a = insert_merchant(store, "A", Mode::Test);
    let b = insert_merchant(store, "B", Mode::Live);
    let payer = msisdn("254712000035");
    let due_at = |account: &malipo_ledger::Account, next: Option<i64>| due_charge(account, &payer, next);
    let d1 = due_at(&a.collection, Some(10));
    let d2 = due_at(&a.collection, Some(5));
    let d3 = due_at(&a.collection, Some(20));
    let d_other = due_at(&b.collection, Some(15));
    let later = due_at(&a.collection, Some(100));
    let done = in_state(due_at(&a.collection, None), ChargeState::Expired);
    commit(store, |tx| {
        for c in [&d1, &d2, &d3, &d_other, &later, &done] {
            tx.insert_charge(c)?;
        }
        Ok(())
    });
    let claim = |now: i64, lease: i64, limit: usize| commit(store, |tx| Ok(tx.claim_due_charges(at(now), at(lease), limit)?));
    let next_action = |c: &Charge| get(store, &c.org_id, c.mode, &c.id).and_then(|c| c.next_action_at);
    let oldest = |now: i64| commit(store, |tx| Ok(tx.oldest_due_charge(at(now))?));

    let count = |until: i64, cap: usize| commit(store, |tx| Ok(tx.count_due_charges(at(until), cap)?));
    assert_eq!(oldest(4), None, "nothing due before 5");
    assert_eq!(oldest(20), Some(at(5)), "the oldest due, of any organisation and mode");
    assert_eq!((count(4, 100), count(5, 100), count(20, 100), count(100, 100)), (0, 1, 4, 5), "due at or before, any organisation");
    assert_eq!(count(100, 3), 3, "counted up to the cap");
    assert_eq!(claim(20, 80, 2), vec![d2.id.clone(), d1.id.clone()], "oldest due first, at most limit");
    assert_eq!(next_action(&d2), Some(at(80)), "leased");
    assert_eq!(next_action(&d1), Some(at(80)));
    assert_eq!(next_action(&d3), Some(at(20)), "not claimed yet");
    assert_eq!(oldest(20), Some(at(15)), "claimed charges are due at their lease's end");
    assert_eq!((count(20, 100), count(80, 100)), (2, 4), "claimed charges count at their lease's end");
    assert_eq!(claim(20, 80, 10), vec![d_other.id.clone(), d3.id.clone()], "every organisation and mode");
    assert_eq!(claim(20, 80, 10), vec![], "claimed charges are not claimed again");
    assert_eq!(oldest(79), None);
    assert_eq!(oldest(80), Some(at(80)), "a passed lease is due work again");
    assert_eq!(claim(79, 140, 10), vec![], "before the lease passes");
    assert_eq!(next_action(&later), Some(at(100)));
    assert_eq!(next_action(&done), None);

    let again: BTreeSet<ChargeRef> = claim(80, 140, 10).into_iter().collect();
    let expected: BTreeSet<ChargeRef> = [&d1, &d2, &d3, &d_other].into_iter().map(|c| c.id.clone()).collect();
    assert_eq!(again, expected, "a lease that passed makes the charge due again");
    assert_eq!(next_action(&d1), Some(at(140)));
    assert_eq!(claim(100, 200, 10), vec![later.id.clone()]);
    assert_eq!(next_action(&done), None, "charges without next_action_at are never claimed");
}

/// `lock_due_charges` returns the ids of the charges of one mode whose `next_action_at <= now`
/// (any organisation), oldest due first (ties by id), at most `limit`, changing nothing: a
/// claim rolled back with its transaction leaves them due.
pub fn lock_due_charges_takes_the_oldest_of_a_mode(store: &dyn Store) {
    let a = insert_merchant(store, "A", Mode::Test);
    let c = insert_merchant(store, "C", Mode::Test);
    let b = insert_merchant(store, "B", Mode::Live);
    let payer = msisdn("254712000036");
    let due_at = |account: &malipo_ledger::Account, next: Option<i64>| due_charge(account, &payer, next);
    let d1 = due_at(&a.collection, Some(10));
    let d2 = due_at(&c.collection, Some(5));
    let d3 = due_at(&a.collection, Some(20));
    let live = due_at(&b.collection, Some(1));
    let later = due_at(&a.collection, Some(100));
    let done = in_state(due_at(&a.collection, None), ChargeState::Expired);
    commit(store, |tx| {
        for c in [&d1, &d2, &d3, &live, &later, &done] {
            tx.insert_charge(c)?;
        }
        Ok(())
    });
    let lock = |mode: Mode, now: i64, limit: usize| commit(store, |tx| Ok(tx.lock_due_charges(mode, at(now), limit)?));
    assert_eq!(lock(Mode::Test, 4, 10), vec![], "nothing due before 5");
    assert_eq!(lock(Mode::Test, 20, 2), vec![d2.id.clone(), d1.id.clone()], "oldest due first, any organisation, at most limit");
    assert_eq!(lock(Mode::Test, 20, 10), vec![d2.id.clone(), d1.id.clone(), d3.id.clone()], "still due: nothing was moved");
    assert_eq!(lock(Mode::Live, 20, 10), vec![live.id.clone()], "of the mode asked for");
    assert_eq!(lock(Mode::Test, 1_000, 10).len(), 4, "a charge without next_action_at is never due");
    assert_eq!(get(store, &d2.org_id, d2.mode, &d2.id), Some(d2.clone()), "locking changed nothing");
}

/// `pending_charges_of_payer` returns the `pending` charges and cash-outs of that number in that
/// mode, of any organisation, as whole rows, oldest first.
pub fn pending_charges_of_payer(store: &dyn Store) {
    let a = insert_merchant(store, "A", Mode::Test);
    let b = insert_merchant(store, "B", Mode::Test);
    let a_live = insert_account(store, org_account(&a.org, Mode::Live, malipo_ledger::AccountKind::Collection, at(0)));
    let (p, q) = (msisdn("254712000036"), msisdn("254712000037"));
    let p2 = charge(&b.collection, &p, 1_000, at(2));
    let p1 = charge(&a.collection, &p, 1_000, at(1));
    let cash_out = cash_out(&b.collection, &p, 2_000, at(3));
    let authorised = in_state(charge(&a.collection, &p, 1_000, at(3)), ChargeState::Authorised);
    let expired = in_state(charge(&a.collection, &p, 1_000, at(4)), ChargeState::Expired);
    let other_payer = charge(&a.collection, &q, 1_000, at(5));
    let live = charge(&a_live, &p, 1_000, at(6));
    commit(store, |tx| {
        for c in [&p2, &p1, &cash_out, &authorised, &expired, &other_payer, &live] {
            tx.insert_charge(c)?;
        }
        Ok(())
    });
    let pending = |mode: Mode, payer: &malipo_core::Msisdn| query(store, |tx| Ok(tx.pending_charges_of_payer(mode, payer)?));
    assert_eq!(pending(Mode::Test, &p), vec![p1, p2, cash_out]);
    assert_eq!(pending(Mode::Live, &p), vec![live]);
    assert_eq!(pending(Mode::Test, &q), vec![other_payer]);
    assert_eq!(pending(Mode::Live, &q), vec![]);
    assert_eq!(pending(Mode::Test, &msisdn("254712000038")), vec![]);
}

/// Cash-outs live beside charges but never show as charges: not listed, not found by
/// reference, not counted as pending credits; their kind and commission round trip.
pub fn cash_outs_are_not_charges(store: &dyn Store) {
    let m = insert_merchant(store, "Agent-like", Mode::Test);
    let payer = msisdn("254712000039");
    let (w, _) = insert_wallet(store, Mode::Test, KES, &payer);
    let plain = charge(&m.collection, &payer, 1_000, at(1));
    let withdrawal = Charge { reference: plain.reference.clone(), ..cash_out(&m.collection, &payer, 5_000, at(2)) };
    let authorised = in_state(Charge { payer_account: Some(w.id.clone()), ..withdrawal.clone() }, ChargeState::Authorised);
    commit(store, |tx| {
        tx.insert_charge(&plain)?;
        tx.insert_charge(&withdrawal)?;
        tx.update_charge(&authorised)?;
        Ok(())
    });
    let listed = query(store, |tx| Ok(tx.list_charges(&m.org.id, Mode::Test, &ChargeFilter::default(), None, 10)?));
    assert_eq!(listed, vec![plain.clone()]);
    let by_ref = query(store, |tx| Ok(tx.latest_charge_by_reference(&m.org.id, Mode::Test, &plain.reference)?));
    assert_eq!(by_ref, Some(plain.clone()));
    assert_eq!(query(store, |tx| Ok(tx.pending_credits(&m.collection.id)?)), MinorUnit::ZERO);
    let stored = query(store, |tx| Ok(tx.charge(&m.org.id, Mode::Test, &withdrawal.id)?));
    assert_eq!(stored, Some(authorised));
}
