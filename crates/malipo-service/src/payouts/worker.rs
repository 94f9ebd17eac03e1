//! The background step of payouts: pay the payee's wallet or fail, each payout decided on its
//! locked row, so concurrent workers and instances pay every payout exactly once (and the
//! journals' unique `(source_ref)` for payouts refuses a second posting whatever happens).
//!
//! Up to `payout_settle_chunk` payouts share a transaction, in two parts: first each payout is
//! decided on its own rows (the payout, the payee's wallet), then the rows the payouts share are
//! written once for all of them, just before the commit: each batch counts its items under its
//! row lock (the last one completes it), each payout account releases the chunk's reservations
//! by one update, and the journals are posted together. So the rows every payout of a batch
//! shares (the batch, the payout account) are held from the end of the chunk to its commit, not
//! while the chunk's payees are looked up. A transaction pays a wallet once: the next payout to
//! a payee it already pays starts the next transaction, since that payout's limits are checked
//! on the wallet's balance with the earlier payment in it, which is posted only at the end.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use malipo_charges::SandboxOutcome;
use malipo_core::{AccountId, MinorUnit, Mode, Msisdn, PayoutRef, Timestamp};
use malipo_ledger::{AccountKind, Journal, JournalKind, JournalLine};
use malipo_payouts::{BatchEvent, BatchState, BulkPayout, Payout, PayoutEvent, PayoutFailure, PayoutState};

use crate::core::{system_account, Core};
use crate::customers::Customers;
use crate::error::{ServiceError, StoreError};
use crate::events::Events;
use crate::limits::Limits;
use crate::ports::{PayoutFlow, WalletState};
use crate::views::{OnPayouts, PayingOut, View};

/// The payout worker's use cases.
pub struct PayoutProcessing<'a> {
    core: &'a Core,
}

/// A payout decided and its row written, in the caller's transaction; what it does to the rows
/// it shares with other payouts (its batch, its payout account) is still to be written.
struct Decided {
    payout: Payout,
    /// The payment's journal (a paid payout).
    journal: Option<Journal>,
}

impl<'a> PayoutProcessing<'a> {
    pub(crate) fn new(core: &'a Core) -> Self {
        PayoutProcessing { core }
    }

    /// Claims due payouts and settles them, `payout_settle_chunk` (configured) to a
    /// transaction: each payout is decided on its own locked row, and one commit (and one
    /// write of the shared rows: the batch, the payout account) serves the whole chunk. A
    /// payout failing with an error (not an outcome such as `payee_not_found`) rolls its
    /// transaction back, and its payouts are then settled one to a transaction, so it fails
    /// alone. Returns how many were claimed.
    ///
    /// # Errors
    /// Storage failures of the claim itself; a failing payout is logged and left to its lease.
    pub fn process_due(&self, limit: usize) -> Result<usize, ServiceError> {
        let now = self.core.now();
        let lease = now.plus_seconds(self.core.config.worker_lease_seconds);
        let ids = OnPayouts::write(self.core.store(), |tx| Ok(tx.claim_due_payouts(now, lease, limit)?))?;
        let chunk = self.core.config.payout_settle_chunk.max(1);
        let mut rest = ids.as_slice();
        while !rest.is_empty() {
            let part = rest.get(..chunk).unwrap_or(rest);
            let now = self.core.now();
            let failed = match PayingOut::write(self.core.store(), |tx| self.settle_in(tx, part, lease, now)) {
                Ok(taken) => {
                    rest = rest.get(taken.max(1)..).unwrap_or_default();
                    continue;
                }
                Err(e @ ServiceError::Store(StoreError::Unavailable(_))) => {
                    tracing::warn!(error = %e, "database unavailable; the claimed payouts are left to their leases");
                    break;
                }
                Err(e) => e,
            };
            if part.len() > 1 {
                tracing::warn!(error = %failed, "payouts settled together failed; settling them one at a time");
            }
            for id in part {
                match self.settle(id, lease) {
                    Ok(()) => {}
                    Err(e @ ServiceError::Store(StoreError::Unavailable(_))) => {
                        tracing::warn!(payout = %id, error = %e, "database unavailable; the claimed payouts are left to their leases");
                        return Ok(ids.len());
                    }
                    Err(e) => tracing::warn!(payout = %id, error = %e, "payout step failed; it will be retried after its lease"),
                }
            }
            rest = rest.get(part.len()..).unwrap_or_default();
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
        match PayingOut::write(self.core.store(), |tx| self.settle_in(tx, std::slice::from_ref(id), lease, now)) {
            Ok(_) => Ok(()),
            Err(e) if is_processing_failure(&e) => {
                tracing::error!(payout = %id, error = %e, "posting failed; failing the payout");
                PayingOut::write(self.core.store(), |tx| self.fail_locked(tx, id, lease, PayoutFailure::ProcessingError, now))
            }
            Err(e) => Err(e),
        }
    }

    /// Settles the payouts `ids` claimed with `lease`, from the first on, in the caller's
    /// transaction, which fails as a whole if any of them fails (its journals and events are
    /// queued and written together); it stops before a payout to a payee it already pays.
    /// Returns how many of `ids` it took (at least one).
    fn settle_in(
        &self,
        tx: &mut (impl PayoutFlow + ?Sized),
        ids: &[PayoutRef],
        lease: Timestamp,
        now: Timestamp,
    ) -> Result<usize, ServiceError> {
        tx.queue_writes();
        let mut decided = Vec::with_capacity(ids.len());
        let mut payees: HashSet<(Mode, Msisdn)> = HashSet::new();
        let mut taken: usize = 0;
        for id in ids {
            if let Some(payout) = claimed(tx, id, lease)? {
                if !payees.insert((payout.mode, payout.payee_msisdn.clone())) {
                    break;
                }
                decided.push(self.decide(tx, payout, now)?);
            }
            taken = taken.saturating_add(1);
        }
        self.finish(tx, &decided, now)?;
        Ok(taken)
    }

    /// Decides the locked payout: pays the payee's wallet or fails.
    fn decide(&self, tx: &mut (impl PayoutFlow + ?Sized), payout: Payout, now: Timestamp) -> Result<Decided, ServiceError> {
        let wallet = match self.payee_wallet(tx, &payout, now)? {
            Ok(wallet) => wallet,
            Err(reason) => return moved(tx, payout, PayoutEvent::Fail(reason), None, now),
        };
        let revenue = system_account(tx, payout.mode, payout.currency, AccountKind::Revenue)?;
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
        moved(tx, payout, PayoutEvent::Pay, Some(journal), now)
    }

    /// The payee's wallet account, locked, or why it cannot be paid. Test mode follows the
    /// sandbox's payout column, and opens the wallet on first use; both modes then refuse a
    /// locked wallet and a credit the payee's KYC tier does not allow.
    fn payee_wallet(
        &self,
        tx: &mut (impl PayoutFlow + ?Sized),
        payout: &Payout,
        now: Timestamp,
    ) -> Result<Result<AccountId, PayoutFailure>, ServiceError> {
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

    /// After a failed posting, in a new transaction: fail the payout if it is still this claim's.
    fn fail_locked(
        &self,
        tx: &mut (impl PayoutFlow + ?Sized),
        id: &PayoutRef,
        lease: Timestamp,
        reason: PayoutFailure,
        now: Timestamp,
    ) -> Result<(), ServiceError> {
        let Some(payout) = claimed(tx, id, lease)? else {
            return Ok(());
        };
        let failed = moved(tx, payout, PayoutEvent::Fail(reason), None, now)?;
        self.finish(tx, std::slice::from_ref(&failed), now)
    }

    /// Writes what the decided payouts do to the rows they share, each row once: counts them
    /// into their batches (each batch locked once, in id order; the last item completes it),
    /// releases their reservations (one update per payout account), posts their journals, and
    /// writes their events in their order, each payout's with the payout account's available
    /// balance just after it, as if they had been settled one at a time.
    fn finish(&self, tx: &mut (impl PayoutFlow + ?Sized), decided: &[Decided], now: Timestamp) -> Result<(), ServiceError> {
        let batch_ids: BTreeSet<_> = decided.iter().filter_map(|d| d.payout.bulk_payout_id.as_ref()).collect();
        // Each completed batch, with the index of the item that completed it.
        let mut completed: Vec<(usize, BulkPayout)> = vec![];
        for batch_id in batch_ids {
            let mut batch =
                tx.lock_batch(batch_id)?.ok_or_else(|| ServiceError::Internal(format!("payouts name a missing batch {batch_id}")))?;
            let mut last = 0;
            for (i, d) in decided.iter().enumerate().filter(|(_, d)| d.payout.bulk_payout_id.as_ref() == Some(batch_id)) {
                batch
                    .apply(BatchEvent::ItemSettled { completed: d.payout.state == PayoutState::Completed }, now)
                    .map_err(|e| ServiceError::Internal(format!("batch {batch_id}: {e}")))?;
                last = i;
            }
            tx.update_batch(&batch)?;
            if batch.state == BatchState::Completed {
                completed.push((last, batch));
            }
        }
        // Per payout account: the reservations to release, and whether every payout releasing
        // there failed `processing_error`.
        let mut reserved: BTreeMap<&AccountId, (MinorUnit, bool)> = BTreeMap::new();
        for d in decided {
            let (amount, errored) = reserved.entry(&d.payout.payout_account).or_insert((MinorUnit::ZERO, true));
            *amount = amount.checked_add(d.payout.debit()?)?;
            *errored &= d.payout.failure_reason == Some(PayoutFailure::ProcessingError);
        }
        // Descending, the order in which postings lock accounts.
        let mut released = BTreeSet::new();
        for (&account, &(amount, errored)) in reserved.iter().rev() {
            match tx.release(account, amount) {
                Ok(()) => {
                    released.insert(account);
                }
                // Failing a payout whose posting broke an invariant must not break on the same
                // invariant: its reservation is already gone, so there is nothing to release.
                Err(StoreError::Ledger(e)) if errored => {
                    tracing::error!(account = %account, error = %e, "a failed payout's reservation could not be released");
                }
                Err(e) => return Err(e.into()),
            }
        }
        let journals: Vec<&Journal> = decided.iter().filter_map(|d| d.journal.as_ref()).collect();
        if !journals.is_empty() {
            tx.post_journals_whole(&journals)?;
        }
        let mut available = BTreeMap::new();
        for &account in reserved.keys() {
            available.insert(account, tx.account(account)?.map(|a| a.available()).unwrap_or_default());
        }
        // Backwards from the end: a paid payout leaves its account's available balance as it
        // was (its reservation released, its debit posted), a failed one had freed its
        // reservation.
        let mut after = vec![MinorUnit::ZERO; decided.len()];
        for (i, d) in decided.iter().enumerate().rev() {
            let account = &d.payout.payout_account;
            let Some(running) = available.get_mut(account) else { continue };
            after[i] = *running;
            if d.payout.state == PayoutState::Failed && released.contains(account) {
                *running = running.checked_sub(d.payout.debit()?)?;
            }
        }
        let events = Events;
        for (i, d) in decided.iter().enumerate() {
            events.payout(tx, &d.payout, after[i], now)?;
            for (_, batch) in completed.iter().filter(|(last, _)| *last == i) {
                events.bulk_payout(tx, batch, now)?;
            }
        }
        Ok(())
    }
}

/// The payout, locked, if it is still pending under the claim `lease` (`None`: no such payout,
/// or another claim took it since).
fn claimed(tx: &mut (impl PayoutFlow + ?Sized), id: &PayoutRef, lease: Timestamp) -> Result<Option<Payout>, ServiceError> {
    Ok(tx.lock_payout(id)?.filter(|p| p.state == PayoutState::Pending && p.next_action_at == Some(lease)))
}

/// Moves the locked payout with `event` (paid by `journal`, if any) and writes its row.
fn moved(
    tx: &mut (impl PayoutFlow + ?Sized),
    mut payout: Payout,
    event: PayoutEvent,
    journal: Option<Journal>,
    now: Timestamp,
) -> Result<Decided, ServiceError> {
    if let Some(journal) = &journal {
        payout.transaction_id = Some(journal.id.clone());
    }
    payout.apply(event, now).map_err(|e| ServiceError::InvalidState(e.to_string()))?;
    tx.update_payout(&payout)?;
    Ok(Decided { payout, journal })
}

/// Failures of posting that end the payout `processing_error` rather than being retried.
fn is_processing_failure(e: &ServiceError) -> bool {
    matches!(e, ServiceError::Store(StoreError::Ledger(_)) | ServiceError::InsufficientFunds | ServiceError::Internal(_))
}
