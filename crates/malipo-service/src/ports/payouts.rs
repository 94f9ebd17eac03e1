//! Payouts and bulk payout batches.

use malipo_core::{BulkPayoutId, Mode, OrgId, PayoutRef, Timestamp};
use malipo_payouts::{BulkPayout, Payout, PayoutFailure, PayoutFilter, PayoutState};

use crate::error::StoreError;

/// Payouts (single, and the items of bulk batches): part of the one transaction handle [`super::Tx`].
pub trait PayoutRepo {
    /// Inserts payouts (one, or every item of a batch in as few statements as the database allows).
    /// All or nothing: a refused call stores none of `payouts`, and the transaction stays usable.
    ///
    /// # Errors
    /// [`StoreError::Duplicate`] if an id, a (batch, index) or a `transaction_id` exists (or
    /// appears twice in `payouts`); [`StoreError::Other`] for a payout the database's
    /// constraints refuse (unknown organisation, account or batch; fields that do not fit the
    /// state).
    fn insert_payouts(&mut self, payouts: &[Payout]) -> Result<(), StoreError>;
    /// A payout of an organisation in a mode (another organisation's or mode's is `None`).
    ///
    /// # Errors
    /// Storage failures.
    fn payout(&mut self, org_id: &OrgId, mode: Mode, id: &PayoutRef) -> Result<Option<Payout>, StoreError>;
    /// A payout by id, locked for update until the transaction ends.
    ///
    /// # Errors
    /// Storage failures.
    fn lock_payout(&mut self, id: &PayoutRef) -> Result<Option<Payout>, StoreError>;
    /// Overwrites a payout's mutable fields (state, failure_reason, transaction_id,
    /// amount_reversed, updated_at, completed_at, next_action_at).
    ///
    /// # Errors
    /// Storage failures (a database constraint refusing the state, e.g. `amount_reversed`
    /// above `amount`, is [`StoreError::Other`], as is a payout that does not exist);
    /// [`StoreError::Duplicate`] for a `transaction_id` another payout has.
    fn update_payout(&mut self, payout: &Payout) -> Result<(), StoreError>;
    /// An organisation's payouts in a mode, newest first (by id, which is time-ordered), with ids
    /// strictly below `before` when given, at most `limit`.
    ///
    /// # Errors
    /// Storage failures.
    fn list_payouts(
        &mut self,
        org_id: &OrgId,
        mode: Mode,
        filter: &PayoutFilter,
        before: Option<&PayoutRef>,
        limit: usize,
    ) -> Result<Vec<Payout>, StoreError>;
    /// A batch's items in the batch's order (`bulk_index`), of one state when given, with index
    /// strictly above `after` when given, at most `limit`.
    ///
    /// # Errors
    /// Storage failures.
    fn batch_items(
        &mut self,
        batch: &BulkPayoutId,
        state: Option<PayoutState>,
        after: Option<u32>,
        limit: usize,
    ) -> Result<Vec<Payout>, StoreError>;
    /// Claims up to `limit` payouts whose `next_action_at <= now`, oldest due first, by setting
    /// their `next_action_at` to `lease_until` (so a crashed worker's claims come due again), and
    /// returns their ids (ties by id). Concurrent callers never claim the same payout
    /// (PostgreSQL: `FOR UPDATE SKIP LOCKED`).
    ///
    /// # Errors
    /// Storage failures.
    fn claim_due_payouts(&mut self, now: Timestamp, lease_until: Timestamp, limit: usize) -> Result<Vec<PayoutRef>, StoreError>;
    /// When the payout that has waited longest for the workers came due (as
    /// [`super::ChargeRepo::oldest_due_charge`]).
    ///
    /// # Errors
    /// Storage failures.
    fn oldest_due_payout(&mut self, now: Timestamp) -> Result<Option<Timestamp>, StoreError>;
    /// Makes every pending item of a batch due at `at` (approval), in one statement. Returns
    /// how many. Only `next_action_at` changes (not `updated_at`).
    ///
    /// # Errors
    /// Storage failures.
    fn schedule_batch_items(&mut self, batch: &BulkPayoutId, at: Timestamp) -> Result<u64, StoreError>;
    /// Fails every pending item of a batch with `reason` at `now` (rejection), in one
    /// statement: state `failed`, `failure_reason`, `updated_at = now`, nothing due. Returns
    /// how many.
    ///
    /// # Errors
    /// Storage failures.
    fn fail_batch_items(&mut self, batch: &BulkPayoutId, reason: PayoutFailure, now: Timestamp) -> Result<u64, StoreError>;
}

/// Bulk payout batches: part of the one transaction handle [`super::Tx`].
pub trait BulkRepo {
    /// Inserts a batch.
    ///
    /// # Errors
    /// [`StoreError::Duplicate`] if the id exists.
    fn insert_batch(&mut self, batch: &BulkPayout) -> Result<(), StoreError>;
    /// A batch of an organisation in a mode.
    ///
    /// # Errors
    /// Storage failures.
    fn batch(&mut self, org_id: &OrgId, mode: Mode, id: &BulkPayoutId) -> Result<Option<BulkPayout>, StoreError>;
    /// A batch by id, locked for update until the transaction ends.
    ///
    /// # Errors
    /// Storage failures.
    fn lock_batch(&mut self, id: &BulkPayoutId) -> Result<Option<BulkPayout>, StoreError>;
    /// Overwrites a batch's mutable fields (state, approved_by, approved_at, rejected_by,
    /// rejection_reason, counts, completed_at, updated_at).
    ///
    /// # Errors
    /// Storage failures; [`StoreError::Other`] for a batch that does not exist or a state the
    /// database's constraints refuse (e.g. the maker as checker, counts not summing to the
    /// item count).
    fn update_batch(&mut self, batch: &BulkPayout) -> Result<(), StoreError>;
    /// An organisation's batches in a mode, newest first, with ids strictly below `before`
    /// when given, at most `limit`.
    ///
    /// # Errors
    /// Storage failures.
    fn list_batches(
        &mut self,
        org_id: &OrgId,
        mode: Mode,
        before: Option<&BulkPayoutId>,
        limit: usize,
    ) -> Result<Vec<BulkPayout>, StoreError>;
}
