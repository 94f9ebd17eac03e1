//! Bulk payouts with maker/checker (contract section 6).

use malipo_auth::Principal;
use malipo_core::{BulkPayoutId, MinorUnit, PayoutRef, Timestamp};
use malipo_countries::FeeOperation;
use malipo_ledger::AccountKind;
use malipo_payouts::{BatchCounts, BatchEvent, BatchState, BulkPayout, BulkTransitionError, Payout, PayoutFailure, PayoutState};

use crate::agents::insufficient;
use crate::backlog::{Backlog, Intake};
use crate::commands::{ApproveBulkPayout, CreateBulkPayout, PayoutLine, RejectBulkPayout};
use crate::core::{org_account_id, Core};
use crate::error::ServiceError;
use crate::events::Events;
use crate::idempotency::{Done, Idem};
use crate::needs::{self, require};
use crate::page::{bad_cursor, Page};
use crate::ports::PayoutFlow;
use crate::views::{OnBulk, PayingOut, View};

fn transition_error(e: BulkTransitionError) -> ServiceError {
    match e {
        BulkTransitionError::MakerChecker => ServiceError::MakerChecker,
        e @ BulkTransitionError::InvalidState { .. } => ServiceError::InvalidState(e.to_string()),
    }
}

/// The bulk payout use cases.
pub struct BulkPayouts<'a> {
    core: &'a Core,
}

impl<'a> BulkPayouts<'a> {
    pub(crate) fn new(core: &'a Core) -> Self {
        BulkPayouts { core }
    }

    /// Stores the batch `awaiting_approval` with its items (each with its payout fee), exactly
    /// once per key. The principal is the maker (and the person behind it, if any, is recorded:
    /// that person can approve or reject it through no credential).
    ///
    /// # Errors
    /// Idempotency errors.
    pub fn create(&self, principal: &Principal, command: &CreateBulkPayout, idem: &Idem) -> Result<Done<BulkPayout>, ServiceError> {
        require(principal, &needs::UPLOAD_BULK)?;
        let country = self.core.country(&principal.country)?;
        let fees: Vec<MinorUnit> = command.items.iter().map(|line| country.fee(FeeOperation::Payout, line.amount)).collect();
        let total_amount = MinorUnit::checked_sum(command.items.iter().map(|line| line.amount))?;
        let total_fees = MinorUnit::checked_sum(fees.iter().copied())?;
        let item_count = u32::try_from(command.items.len()).map_err(|_| ServiceError::Internal("item count".into()))?;
        let now = self.core.now();
        self.core.idempotent(idem, PayingOut, |tx| {
            let account = org_account_id(tx, &principal.org_id, principal.mode, AccountKind::Payout)?;
            let batch = BulkPayout {
                id: BulkPayoutId::new(),
                org_id: principal.org_id.clone(),
                mode: principal.mode,
                reference: command.reference.clone(),
                currency: country.currency,
                item_count,
                total_amount,
                total_fees,
                payout_account: account.clone(),
                created_by: principal.client_id.clone(),
                created_by_person: principal.person.clone(),
                approved_by: None,
                approved_by_person: None,
                rejected_by: None,
                rejected_by_person: None,
                rejection_reason: None,
                state: BatchState::AwaitingApproval,
                counts: BatchCounts { pending: item_count, completed: 0, failed: 0 },
                created_at: now,
                approved_at: None,
                completed_at: None,
                updated_at: now,
            };
            tx.insert_batch(&batch)?;
            let items = command.items.iter().zip(&fees).zip(0u32..).map(|((line, fee), index)| item(&batch, line, *fee, index, now));
            tx.insert_payouts(&items.collect::<Vec<Payout>>())?;
            Ok(batch)
        })
    }

    /// The checker approves: reserves the whole total on the payout account and makes every
    /// item due for the payout worker.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`], [`ServiceError::MakerChecker`], [`ServiceError::InvalidState`],
    /// [`ServiceError::InsufficientFunds`], idempotency errors.
    pub fn approve(&self, principal: &Principal, command: &ApproveBulkPayout, idem: &Idem) -> Result<Done<BulkPayout>, ServiceError> {
        require(principal, &needs::APPROVE_BULK)?;
        let id = &command.batch;
        if let Some(replayed) = Backlog::new(self.core).take(Intake::Payout, idem)? {
            return Ok(replayed);
        }
        let now = self.core.now();
        self.core.idempotent(idem, PayingOut, |tx| {
            let mut batch = self.locked(tx, principal, id)?;
            batch
                .apply(BatchEvent::Approve { by: principal.client_id.clone(), person: principal.person.clone() }, now)
                .map_err(transition_error)?;
            // The whole total at once, on the locked account row: the items then only
            // release their share of it as they settle.
            tx.hold(&batch.payout_account, batch.total_debit()?).map_err(ServiceError::from).map_err(insufficient)?;
            tx.schedule_batch_items(&batch.id, now)?;
            tx.update_batch(&batch)?;
            Events.bulk_payout(tx, &batch, now)?;
            Ok(batch)
        })
    }

    fn locked(&self, tx: &mut (impl PayoutFlow + ?Sized), principal: &Principal, id: &BulkPayoutId) -> Result<BulkPayout, ServiceError> {
        match tx.lock_batch(id)? {
            Some(b) if b.org_id == principal.org_id && b.mode == principal.mode => Ok(b),
            _ => Err(ServiceError::NotFound),
        }
    }

    /// The checker rejects with a reason: no item is paid.
    ///
    /// # Errors
    /// As [`BulkPayouts::approve`] (without the funds).
    pub fn reject(&self, principal: &Principal, command: &RejectBulkPayout, idem: &Idem) -> Result<Done<BulkPayout>, ServiceError> {
        require(principal, &needs::APPROVE_BULK)?;
        let RejectBulkPayout { batch: id, reason } = command;
        let now = self.core.now();
        self.core.idempotent(idem, PayingOut, |tx| {
            let mut batch = self.locked(tx, principal, id)?;
            batch
                .apply(
                    BatchEvent::Reject { by: principal.client_id.clone(), person: principal.person.clone(), reason: reason.clone() },
                    now,
                )
                .map_err(transition_error)?;
            tx.fail_batch_items(&batch.id, PayoutFailure::BulkPayoutRejected, now)?;
            tx.update_batch(&batch)?;
            Events.bulk_payout(tx, &batch, now)?;
            Ok(batch)
        })
    }

    /// One of the principal's batches.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`].
    pub fn get(&self, principal: &Principal, id: &str) -> Result<BulkPayout, ServiceError> {
        require(principal, &needs::READ_BULK)?;
        let id = BulkPayoutId::parse(id).map_err(|_| ServiceError::NotFound)?;
        OnBulk::read(self.core.store(), |tx| Ok(tx.batch(&principal.org_id, principal.mode, &id)?))?.ok_or(ServiceError::NotFound)
    }

    /// The principal's batches, newest first.
    ///
    /// # Errors
    /// [`ServiceError::Validation`] for a bad cursor.
    pub fn list(&self, principal: &Principal, cursor: Option<&str>, limit: usize) -> Result<Page<BulkPayout>, ServiceError> {
        require(principal, &needs::READ_BULK)?;
        let before = cursor.map(|c| BulkPayoutId::parse(c).map_err(|_| bad_cursor("cursor"))).transpose()?;
        let data = OnBulk::report(self.core.store(), |tx| {
            Ok(tx.list_batches(&principal.org_id, principal.mode, before.as_ref(), limit.saturating_add(1))?)
        })?;
        Ok(Page::from_fetched(data, limit, |b| b.id.to_string()))
    }

    /// A batch's items (payouts) in the batch's order, of one state when given.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`] (batch), [`ServiceError::Validation`] for a bad cursor.
    pub fn items(
        &self,
        principal: &Principal,
        id: &str,
        state: Option<PayoutState>,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<Page<Payout>, ServiceError> {
        require(principal, &needs::READ_BULK)?;
        let id = BulkPayoutId::parse(id).map_err(|_| ServiceError::NotFound)?;
        let after = cursor.map(|c| c.parse::<u32>().map_err(|_| bad_cursor("cursor"))).transpose()?;
        let data = PayingOut::report(self.core.store(), |tx| {
            tx.batch(&principal.org_id, principal.mode, &id)?.ok_or(ServiceError::NotFound)?;
            Ok(tx.batch_items(&id, state, after, limit.saturating_add(1))?)
        })?;
        Ok(Page::from_fetched(data, limit, |p| p.bulk_index.unwrap_or_default().to_string()))
    }
}

/// An item of a new batch: a pending payout that waits (no `next_action_at`) for approval.
fn item(batch: &BulkPayout, c: &PayoutLine, fee: MinorUnit, index: u32, now: Timestamp) -> Payout {
    Payout {
        id: PayoutRef::new(),
        org_id: batch.org_id.clone(),
        mode: batch.mode,
        payee_msisdn: c.payee.clone(),
        amount: c.amount,
        fee,
        currency: batch.currency,
        amount_reversed: MinorUnit::ZERO,
        reference: c.reference.clone(),
        narration: c.narration.clone(),
        state: PayoutState::Pending,
        failure_reason: None,
        transaction_id: None,
        bulk_payout_id: Some(batch.id.clone()),
        bulk_index: Some(index),
        payout_account: batch.payout_account.clone(),
        created_at: now,
        updated_at: now,
        completed_at: None,
        next_action_at: None,
    }
}
