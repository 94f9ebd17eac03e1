//! Reversals: storage, scoping, listing, and finding what a ledger transaction paid.

use malipo_charges::Charge;
use malipo_core::{ChargeRef, MinorUnit, Mode, OrgId, PayoutRef, ReversalId, TransactionId};
use malipo_ledger::{AccountKind, JournalKind};
use malipo_payouts::{Payout, Reversal, ReversalOriginal};
use malipo_service::Store;

use super::payouts::is_other;
use crate::fixtures::duplicate;
use crate::fixtures::*;
use crate::payout_fixtures::*;

fn get(store: &dyn Store, org_id: &OrgId, mode: Mode, id: &ReversalId) -> Option<Reversal> {
    query(store, |tx| Ok(tx.reversal(org_id, mode, id)?))
}

/// A completed payout of `account` (a payout account), stored, with a made-up transaction.
fn completed_payout(store: &dyn Store, account: &malipo_ledger::Account, t: i64) -> (Payout, TransactionId) {
    let transaction = TransactionId::new();
    let p = payout_paid(payout(account, &msisdn("254712000070"), 10_000, at(t)), &transaction, at(t));
    insert_payouts(store, vec![p.clone()]);
    (p, transaction)
}

/// Reversals of charges and of payouts round trip (every field) within their organisation and
/// mode only; an existing id or compensating transaction is refused as a duplicate, and a
/// reversal of a charge or payout that does not exist is refused.
pub fn reversals_round_trip_scoped_by_org_and_mode(store: &dyn Store) {
    let a = insert_merchant(store, "A", Mode::Test);
    let b = insert_merchant(store, "B", Mode::Test);
    let payer = msisdn("254712000071");
    let (po, po_tx) = completed_payout(store, &a.payout, 1);
    let charge_tx = TransactionId::new();
    let ch = Charge {
        state: malipo_charges::ChargeState::Completed,
        transaction_id: Some(charge_tx.clone()),
        completed_at: Some(at(2)),
        next_action_at: None,
        ..charge(&a.collection, &payer, 25_000, at(2))
    };
    insert_charge(store, ch.clone());

    let of_payout = reversal(&po, &po_tx, 4_000, 40, &TransactionId::new(), at(3));
    let of_charge = Reversal {
        original: ReversalOriginal::Charge(ch.id.clone()),
        original_transaction_id: charge_tx.clone(),
        amount: MinorUnit::new(25_000),
        fee_reversed: MinorUnit::new(250),
        reason: "Customer returned the goods «ü»".into(),
        ..reversal(&po, &po_tx, 1, 0, &TransactionId::new(), at(4))
    };
    commit(store, |tx| {
        tx.insert_reversal(&of_payout)?;
        tx.insert_reversal(&of_charge)?;
        Ok(())
    });
    assert_eq!(get(store, &a.org.id, Mode::Test, &of_payout.id), Some(of_payout.clone()));
    assert_eq!(get(store, &a.org.id, Mode::Test, &of_charge.id), Some(of_charge.clone()));
    assert_eq!(get(store, &b.org.id, Mode::Test, &of_payout.id), None, "another organisation's");
    assert_eq!(get(store, &a.org.id, Mode::Live, &of_payout.id), None, "another mode's");
    assert_eq!(get(store, &a.org.id, Mode::Test, &ReversalId::new()), None);

    let same_id = Reversal { reason: "other".into(), transaction_id: TransactionId::new(), ..of_payout.clone() };
    let same_transaction = Reversal { id: ReversalId::new(), ..of_payout.clone() };
    for dup in [&same_id, &same_transaction] {
        assert_eq!(refused(store, |tx| Ok(tx.insert_reversal(dup)?)), duplicate());
    }
    let fresh = || reversal(&po, &po_tx, 1_000, 10, &TransactionId::new(), at(5));
    let of_no_payout = Reversal { original: ReversalOriginal::Payout(PayoutRef::new()), ..fresh() };
    let of_no_charge = Reversal { original: ReversalOriginal::Charge(ChargeRef::new()), ..fresh() };
    let of_nothing = Reversal { amount: MinorUnit::ZERO, ..fresh() };
    let negative_fee = Reversal { fee_reversed: MinorUnit::new(-1), ..fresh() };
    for bad in [&of_no_payout, &of_no_charge, &of_nothing, &negative_fee] {
        assert!(is_other(&refused(store, |tx| Ok(tx.insert_reversal(bad)?))), "{bad:?}");
    }
    assert_eq!(get(store, &a.org.id, Mode::Test, &same_id.id), Some(of_payout));
}

/// `list_reversals` returns the organisation's reversals of the mode newest first, with the
/// exclusive `before` cursor and `limit`.
pub fn list_reversals_pages_newest_first(store: &dyn Store) {
    let a = insert_merchant(store, "A", Mode::Test);
    let b = insert_merchant(store, "B", Mode::Test);
    let a_live = insert_account(store, org_account(&a.org, Mode::Live, AccountKind::Payout, at(0)));
    let (po, po_tx) = completed_payout(store, &a.payout, 1);
    let (live_po, live_tx) = completed_payout(store, &a_live, 1);
    let (their_po, their_tx) = completed_payout(store, &b.payout, 1);
    let mine: Vec<Reversal> = (1..=4).map(|t| reversal(&po, &po_tx, t * 100, 0, &TransactionId::new(), at(t))).collect();
    let live = reversal(&live_po, &live_tx, 100, 1, &TransactionId::new(), at(5));
    let theirs = reversal(&their_po, &their_tx, 100, 1, &TransactionId::new(), at(6));
    commit(store, |tx| {
        for r in mine.iter().rev().chain([&live, &theirs]) {
            tx.insert_reversal(r)?;
        }
        Ok(())
    });
    let newest_first: Vec<Reversal> = mine.iter().rev().cloned().collect();
    let list = |org: &OrgId, mode: Mode, before: Option<&ReversalId>, limit: usize| {
        query(store, |tx| Ok(tx.list_reversals(org, mode, before, limit)?))
    };
    assert_eq!(list(&a.org.id, Mode::Test, None, 10), newest_first);
    assert_eq!(list(&a.org.id, Mode::Test, None, 3), newest_first[..3].to_vec());
    assert_eq!(list(&a.org.id, Mode::Test, Some(&newest_first[2].id), 3), newest_first[3..].to_vec());
    assert_eq!(list(&a.org.id, Mode::Test, Some(&newest_first[3].id), 3), vec![]);
    assert_eq!(list(&a.org.id, Mode::Test, None, 0), vec![]);
    assert_eq!(list(&a.org.id, Mode::Live, None, 10), vec![live]);
    assert_eq!(list(&b.org.id, Mode::Test, None, 10), vec![theirs]);
}

/// `journal_source` names the kind and source object of a journal of that mode (none of
/// another mode, none for an unknown id).
pub fn journal_source_names_what_a_transaction_paid(store: &dyn Store) {
    let kes = insert_platform(store, Mode::Test, KES);
    let live_kes = insert_platform(store, Mode::Live, KES);
    let m = insert_merchant(store, "Duka", Mode::Test);
    let payee = msisdn("254712000072");
    let (w, _) = insert_wallet(store, Mode::Test, KES, &payee);
    post(store, transfer(Mode::Test, KES, &kes.issuance.id, &m.payout.id, 50_000, at(1)));
    let po = payout(&m.payout, &payee, 10_000, at(2));
    let paid = post(store, payout_journal(&po, &w.id, &kes.revenue.id, at(3)));
    let ch = ChargeRef::new();
    let charged = post(
        store,
        malipo_ledger::Journal {
            source_ref: ch.to_string(),
            ..journal(Mode::Test, KES, JournalKind::Charge, &[(&w.id, -1_000), (&m.collection.id, 990), (&kes.revenue.id, 10)], at(4))
        },
    );
    let live = post(store, transfer(Mode::Live, KES, &live_kes.issuance.id, &live_kes.sandbox_funding.id, 5, at(5)));
    let source = |mode: Mode, id: &TransactionId| query(store, |tx| Ok(tx.journal_source(mode, id)?));

    assert_eq!(source(Mode::Test, &paid.id), Some((JournalKind::Payout, po.id.to_string())));
    assert_eq!(source(Mode::Test, &charged.id), Some((JournalKind::Charge, ch.to_string())));
    assert_eq!(source(Mode::Live, &live.id), Some((JournalKind::Funding, "src_test".to_owned())));
    assert_eq!(source(Mode::Live, &paid.id), None, "another mode's");
    assert_eq!(source(Mode::Test, &live.id), None, "another mode's");
    assert_eq!(source(Mode::Test, &TransactionId::new()), None);
    assert_ledger_sound(store);
}
