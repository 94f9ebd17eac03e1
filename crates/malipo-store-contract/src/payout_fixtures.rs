//! Test data of payouts, bulk payout batches and reversals, for the money-out cases.

use malipo_core::{AccountId, BulkPayoutId, MinorUnit, Msisdn, PayoutRef, ReversalId, Timestamp, TransactionId};
use malipo_ledger::{Account, Journal, JournalKind, JournalLine};
use malipo_payouts::{BatchCounts, BatchState, BulkPayout, Payout, PayoutFailure, PayoutState, Reversal, ReversalOriginal};
use malipo_service::Store;

use crate::fixtures::commit;

/// A new pending payout of `amount` (fee 1 %) to `payee` from `payout_account` (an
/// organisation's account: its organisation, mode and currency are the payout's), reference
/// `PAY-1`, created and due at `created_at`.
pub fn payout(payout_account: &Account, payee: &Msisdn, amount: i64, created_at: Timestamp) -> Payout {
    Payout {
        id: PayoutRef::new(),
        org_id: payout_account.org_id.clone().expect("a payout account belongs to an organisation"),
        mode: payout_account.mode,
        payee_msisdn: payee.clone(),
        amount: MinorUnit::new(amount),
        fee: MinorUnit::new(amount / 100),
        currency: payout_account.currency,
        amount_reversed: MinorUnit::ZERO,
        reference: "PAY-1".to_owned(),
        narration: Some("November salary".to_owned()),
        state: PayoutState::Pending,
        failure_reason: None,
        transaction_id: None,
        bulk_payout_id: None,
        bulk_index: None,
        payout_account: payout_account.id.clone(),
        created_at,
        updated_at: created_at,
        completed_at: None,
        next_action_at: Some(created_at),
    }
}

/// `payout` paid at `when` by the ledger transaction `transaction`.
pub fn payout_paid(payout: Payout, transaction: &TransactionId, when: Timestamp) -> Payout {
    Payout {
        state: PayoutState::Completed,
        failure_reason: None,
        transaction_id: Some(transaction.clone()),
        updated_at: when,
        completed_at: Some(when),
        next_action_at: None,
        ..payout
    }
}

/// `payout` failed at `when` for `reason`.
pub fn payout_failed(payout: Payout, reason: PayoutFailure, when: Timestamp) -> Payout {
    Payout { state: PayoutState::Failed, failure_reason: Some(reason), updated_at: when, next_action_at: None, ..payout }
}

/// The `payout` journal paying `payout` (not posted): the payout account gives amount and fee,
/// the payee's `wallet` receives the amount and `revenue` the fee.
pub fn payout_journal(payout: &Payout, wallet: &AccountId, revenue: &AccountId, created_at: Timestamp) -> Journal {
    let (amount, fee) = (payout.amount.get(), payout.fee.get());
    let lines = vec![
        JournalLine { account: payout.payout_account.clone(), amount: MinorUnit::new(-(amount + fee)) },
        JournalLine { account: wallet.clone(), amount: MinorUnit::new(amount) },
        JournalLine { account: revenue.clone(), amount: MinorUnit::new(fee) },
    ];
    Journal::new(payout.mode, payout.currency, JournalKind::Payout, payout.id.as_str(), lines, created_at).expect("a balanced journal")
}

/// A new batch awaiting approval, made by `created_by` at `created_at`, paid from
/// `payout_account`, with one item per amount (to `payee`, fee 1 %, references `ITEM-<index>`,
/// not due until approved), and its items.
pub fn bulk_payout(
    payout_account: &Account,
    created_by: &str,
    payee: &Msisdn,
    amounts: &[i64],
    created_at: Timestamp,
) -> (BulkPayout, Vec<Payout>) {
    let id = BulkPayoutId::new();
    let items: Vec<Payout> = amounts
        .iter()
        .enumerate()
        .map(|(i, amount)| Payout {
            reference: format!("ITEM-{i}"),
            narration: None,
            bulk_payout_id: Some(id.clone()),
            bulk_index: Some(u32::try_from(i).expect("a small batch")),
            next_action_at: None,
            ..payout(payout_account, payee, *amount, created_at)
        })
        .collect();
    let item_count = u32::try_from(items.len()).expect("a small batch");
    let batch = BulkPayout {
        id,
        org_id: payout_account.org_id.clone().expect("a payout account belongs to an organisation"),
        mode: payout_account.mode,
        reference: "PAYROLL-11".to_owned(),
        currency: payout_account.currency,
        item_count,
        total_amount: MinorUnit::new(items.iter().map(|p| p.amount.get()).sum()),
        total_fees: MinorUnit::new(items.iter().map(|p| p.fee.get()).sum()),
        payout_account: payout_account.id.clone(),
        created_by: created_by.to_owned(),
        created_by_person: None,
        approved_by: None,
        approved_by_person: None,
        rejected_by: None,
        rejected_by_person: None,
        rejection_reason: None,
        state: BatchState::AwaitingApproval,
        counts: BatchCounts { pending: item_count, completed: 0, failed: 0 },
        created_at,
        approved_at: None,
        completed_at: None,
        updated_at: created_at,
    };
    (batch, items)
}

/// `batch` approved by `checker` at `when`: processing, every item still pending.
pub fn batch_approved(batch: BulkPayout, checker: &str, when: Timestamp) -> BulkPayout {
    BulkPayout { state: BatchState::Processing, approved_by: Some(checker.to_owned()), approved_at: Some(when), updated_at: when, ..batch }
}

/// A completed reversal of `amount` (giving back `fee_reversed`) of `original`, whose ledger
/// transaction was `original_transaction`, by the new transaction `transaction`, at `created_at`.
pub fn reversal(
    original: &Payout,
    original_transaction: &TransactionId,
    amount: i64,
    fee_reversed: i64,
    transaction: &TransactionId,
    created_at: Timestamp,
) -> Reversal {
    Reversal {
        id: ReversalId::new(),
        org_id: original.org_id.clone(),
        mode: original.mode,
        original: ReversalOriginal::Payout(original.id.clone()),
        original_transaction_id: original_transaction.clone(),
        amount: MinorUnit::new(amount),
        fee_reversed: MinorUnit::new(fee_reversed),
        currency: original.currency,
        reason: "Paid to the wrong number".to_owned(),
        transaction_id: transaction.clone(),
        created_at,
    }
}

/// Inserts `payouts` in one call and returns them.
#[track_caller]
pub fn insert_payouts(store: &dyn Store, payouts: Vec<Payout>) -> Vec<Payout> {
    commit(store, |tx| Ok(tx.insert_payouts(&payouts)?));
    payouts
}

/// Inserts `batch` and then its `items` (in one call), and returns them.
#[track_caller]
pub fn insert_batch(store: &dyn Store, (batch, items): (BulkPayout, Vec<Payout>)) -> (BulkPayout, Vec<Payout>) {
    commit(store, |tx| {
        tx.insert_batch(&batch)?;
        tx.insert_payouts(&items)?;
        Ok(())
    });
    (batch, items)
}
