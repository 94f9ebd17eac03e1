//! The background step of payouts: pay the payee's wallet or fail, one transaction per payout
//! on its locked row, so concurrent workers and instances pay every payout exactly once (and
//! the journals' unique `(source_ref)` for payouts refuses a second posting whatever happens).
//! A bulk item also counts itself into its batch, under the batch's row lock, and the last one
//! completes the batch.

use malipo_charges::SandboxOutcome;
use malipo_core::{Mode, PayoutRef, Timestamp};
use malipo_ledger::{AccountKind, Journal, JournalKind, JournalLine};
use malipo_payouts::{BatchEvent, Payout, PayoutEvent, PayoutFailure, PayoutState};

use crate::core::Core;
use crate::customers::Customers;
use crate::error::{ServiceError, StoreError};
use crate::events::Events;
use crate::limits::Limits;
use crate::ports::{write, Tx, WalletState};

/// The payout worker's use cases.
pub struct PayoutProcessing<'a> {
    core: &'a Core,
}

impl<'a> PayoutProcessing<'a> {
    pub(crate) fn new(core: &'a Core) -> Self {
        PayoutProcessing { core }
    }

    /// Claims due payouts and settles them, `payout_settle_chunk` (configured) to a transaction: each payout is
    /// still decided on its own locked row, but one commit (and one pass over the shared rows:
    /// the payout account, revenue, the ledger's chain head, the batch) serves the whole chunk.
    /// A payout failing with an error (not an outcome such as `payee_not_found`) rolls its chunk
    /// back, and the chunk is then settled one payout to a transaction, so it fails alone.
    /// Returns how many were claimed.
    ///
    /// # Errors
    /// Storage failures of the claim itself; a failing payout is logged and left to its lease.
    pub fn process_due(&self, limit: usize) -> Result<usize, ServiceError> {
        let now = self.core.now();
        let lease = now.plus_seconds(self.core.config.worker_lease_seconds);
        let ids = write(self.core.store(), |tx| Ok(tx.claim_due_payouts(now, lease, limit)?))?;
        for chunk in ids.chunks(self.core.config.payout_settle_chunk.max(1)) {
            let now = self.core.now();
            let settled = write(self.core.store(), |tx| chunk.iter().try_for_each(|id| self.step(tx, id, lease, now)));
            match settled {
                Ok(()) => continue,
                Err(e @ ServiceError::Store(StoreError::Unavailable(_))) => {
                    tracing::warn!(error = %e, "database unavailable; the claimed payouts are left to their leases");
                    break;
                }
                Err(e) => tracing::warn!(error = %e, "a chunk of payouts failed; settling them one at a time"),
            }
            for id in chunk {
                match self.settle(id, lease) {
                    Ok(()) => {}
                    Err(e @ ServiceError::Store(StoreError::Unavailable(_))) => {
                        tracing::warn!(payout = %id, error = %e, "database unavailable; the claimed payouts are left to their leases");
                        return Ok(ids.len());
                    }
                    Err(e) => tracing::warn!(payout = %id, error = %e, "payout step failed; it will be retried after its lease"),
                }
            }
        }
        Ok(ids.len())
    }

    /// Settles one payout claimed with `lease`. A payout re-claimed by another worker since
    /// (after the lease lapsed) is left to that worker.
    ///
    /// # Errors
    /// Transient storage failures (the payout stays claimed until its lease lapses).
    pub fn settle(&self, id: &PayoutRef, lease: Timestamp) -> Result<(), ServiceError> {
        let now = self.core.now();
        match write(self.core.store(), |tx| self.step(tx, id, lease, now)) {
            Ok(()) => Ok(()),
            Err(e) if is_processing_failure(&e) => {
                tracing::error!(payout = %id, error = %e, "posting failed; failing the payout");
                write(self.core.store(), |tx| self.fail_locked(tx, id, lease, PayoutFailure::ProcessingError, now))
            }
            Err(e) => Err(e),
        }
    }

    fn step(&self, tx: &mut dyn Tx, id: &PayoutRef, lease: Timestamp, now: Timestamp) -> Result<(), ServiceError> {
        let Some(mut payout) = tx.lock_payout(id)? else {
            return Ok(());
        };
        if payout.state != PayoutState::Pending || payout.next_action_at != Some(lease) {
            return Ok(());
        }
        let wallet = match self.payee_wallet(tx, &payout, now)? {
            Ok(wallet) => wallet,
            Err(reason) => return self.fail(tx, &mut payout, reason, now),
        };
        let revenue = self.core.system_account(tx, payout.mode, payout.currency, AccountKind::Revenue)?;
        let debit = payout.debit()?;
        let journal = Journal::new_skipping_zero(
            payout.mode,
            payout.currency,
            JournalKind::Payout,
            payout.id.as_str(),
            vec![
                JournalLine { account: payout.payout_account.clone(), amount: debit.checked_neg()? },
                JournalLine { account: wallet, amount: payout.amount },
                JournalLine { account: revenue, amount: payout.fee },
            ],
            now,
        )?
        .with_fee(&payout.payout_account, payout.fee);
        payout.transaction_id = Some(journal.id.clone());
        self.finish(tx, &mut payout, PayoutEvent::Pay, Some(&journal), now)
    }

    /// The payee's wallet account, locked, or why it cannot be paid. Test mode follows the
    /// sandbox's payout column, and opens the wallet on first use; both modes then refuse a
    /// locked wallet and a credit the payee's KYC tier does not allow.
    fn payee_wallet(
        &self,
        tx: &mut dyn Tx,
        payout: &Payout,
        now: Timestamp,
    ) -> Result<Result<malipo_core::AccountId, PayoutFailure>, ServiceError> {
        if payout.mode == Mode::Test {
            if let Some(reason) = SandboxOutcome::payout_failure(&payout.payee_msisdn) {
                let reason = reason.parse().map_err(|e| ServiceError::Internal(format!("the sandbox's payout column: {e}")))?;
                return Ok(Err(reason));
            }
            Customers(self.core).ensure_test_wallet(tx, &payout.payee_msisdn, now)?;
        }
        let Some(wallet) = tx.lock_wallet(payout.mode, &payout.payee_msisdn)? else {
            return Ok(Err(PayoutFailure::PayeeNotFound));
        };
        if wallet.state == WalletState::Locked {
            return Ok(Err(PayoutFailure::WalletLocked));
        }
        if wallet.currency != payout.currency {
            return Ok(Err(PayoutFailure::PayeeNotFound));
        }
        if Limits(self.core).check_credit(tx, &wallet, payout.amount)?.is_err() {
            return Ok(Err(PayoutFailure::LimitExceeded));
        }
        Ok(Ok(wallet.account_id))
    }

    fn fail(&self, tx: &mut dyn Tx, payout: &mut Payout, reason: PayoutFailure, now: Timestamp) -> Result<(), ServiceError> {
        self.finish(tx, payout, PayoutEvent::Fail(reason), None, now)
    }

    /// After a failed posting, in a new transaction: fail the payout if it is still this claim's.
    fn fail_locked(
        &self,
        tx: &mut dyn Tx,
        id: &PayoutRef,
        lease: Timestamp,
        reason: PayoutFailure,
        now: Timestamp,
    ) -> Result<(), ServiceError> {
        match tx.lock_payout(id)? {
            Some(mut p) if p.state == PayoutState::Pending && p.next_action_at == Some(lease) => self.fail(tx, &mut p, reason, now),
            _ => Ok(()),
        }
    }

    /// Moves the payout, counts it into its batch, releases its reservation, posts the journal
    /// (when paid) and writes the events. The shared rows (the batch, the payout account,
    /// revenue, the ledger's chain head) are taken last, just before commit.
    fn finish(
        &self,
        tx: &mut dyn Tx,
        payout: &mut Payout,
        event: PayoutEvent,
        journal: Option<&Journal>,
        now: Timestamp,
    ) -> Result<(), ServiceError> {
        payout.apply(event, now).map_err(|e| ServiceError::InvalidState(e.to_string()))?;
        tx.update_payout(payout)?;
        let mut batch_done = None;
        if let Some(batch_id) = &payout.bulk_payout_id {
            let mut batch =
                tx.lock_batch(batch_id)?.ok_or_else(|| ServiceError::Internal(format!("payout {} names a missing batch", payout.id)))?;
            batch
                .apply(BatchEvent::ItemSettled { completed: payout.state == PayoutState::Completed }, now)
                .map_err(|e| ServiceError::Internal(format!("batch {batch_id}: {e}")))?;
            tx.update_batch(&batch)?;
            batch_done = Some(batch);
        }
        match tx.release(&payout.payout_account, payout.debit()?) {
            Ok(()) => {}
            // Failing a payout whose posting broke an invariant must not break on the same
            // invariant: its reservation is already gone, so there is nothing to release.
            Err(StoreError::Ledger(e)) if payout.failure_reason == Some(PayoutFailure::ProcessingError) => {
                tracing::error!(payout = %payout.id, error = %e, "the failed payout's reservation could not be released");
            }
            Err(e) => return Err(e.into()),
        }
        if let Some(journal) = journal {
            tx.post_journal(journal)?;
        }
        let available = tx.account(&payout.payout_account)?.map(|a| a.available()).unwrap_or_default();
        let events = Events(self.core);
        events.payout(tx, payout, available, now)?;
        if let Some(batch) = batch_done.filter(|b| b.state == malipo_payouts::BatchState::Completed) {
            events.bulk_payout(tx, &batch, now)?;
        }
        Ok(())
    }
}

/// Failures of posting that end the payout `processing_error` rather than being retried.
fn is_processing_failure(e: &ServiceError) -> bool {
    matches!(e, ServiceError::Store(StoreError::Ledger(_)) | ServiceError::InsufficientFunds | ServiceError::Internal(_))
}
