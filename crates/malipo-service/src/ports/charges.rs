//! Charges and cash-outs (prompts the payer answers).

use malipo_charges::{Charge, ChargeFilter};
use malipo_core::{ChargeRef, MinorUnit, Mode, Msisdn, OrgId, Timestamp};

use malipo_idempotency::{IdempotencyKey, IdempotencyRecord, KeyScope};

use crate::error::StoreError;

/// A new charge and its idempotency key with the record to store, written together
/// ([`super::Store::create_charge`]).
#[derive(Clone, Debug)]
pub struct Creation {
    /// The charge.
    pub charge: Charge,
    /// Its key, scoped, and the record a repeat is answered from.
    pub key: (KeyScope, IdempotencyKey, IdempotencyRecord),
}

/// How many charges were created on one day of a run of days and their amount, and how many of
/// them are completed now and their amount ([`ChargeRepo::charge_day_totals`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChargeDayTotal {
    /// The day: 0 for the run's first.
    pub day: u32,
    /// How many were created.
    pub count: u64,
    /// Their amounts' sum.
    pub amount: MinorUnit,
    /// How many of them are completed.
    pub completed: u64,
    /// The completed ones' amounts' sum.
    pub completed_amount: MinorUnit,
}

/// The length of a day of [`ChargeRepo::charge_day_totals`] (a country's local day: countries
/// keep one UTC offset all year).
pub const DAY_MICROS: i64 = 86_400_000_000;

/// Charges and cash-outs (prompts the payer answers): part of the one transaction handle [`super::Tx`].
pub trait ChargeRepo {
    /// Inserts a charge.
    ///
    /// # Errors
    /// [`StoreError::Duplicate`] if the id exists.
    fn insert_charge(&mut self, charge: &Charge) -> Result<(), StoreError>;
    /// Inserts charges together (one statement where the database allows it).
    ///
    /// # Errors
    /// [`StoreError::Duplicate`] if an id exists; then none of them was inserted where the
    /// adapter rolls back with the caller's transaction.
    fn insert_charges(&mut self, charges: &[Charge]) -> Result<(), StoreError>;
    /// A charge of an organisation in a mode (another organisation's or mode's is `None`).
    ///
    /// # Errors
    /// Storage failures.
    fn charge(&mut self, org_id: &OrgId, mode: Mode, id: &ChargeRef) -> Result<Option<Charge>, StoreError>;
    /// The most recently created charge (kind `charge`, never a cash-out) with this reference.
    ///
    /// # Errors
    /// Storage failures.
    fn latest_charge_by_reference(&mut self, org_id: &OrgId, mode: Mode, reference: &str) -> Result<Option<Charge>, StoreError>;
    /// A charge by id, locked for update until the transaction ends.
    ///
    /// # Errors
    /// Storage failures.
    fn lock_charge(&mut self, id: &ChargeRef) -> Result<Option<Charge>, StoreError>;
    /// Overwrites a charge's mutable fields (state, failure_reason, transaction_id, payer_account,
    /// amount_reversed, updated_at, completed_at, next_action_at).
    ///
    /// # Errors
    /// Storage failures.
    fn update_charge(&mut self, charge: &Charge) -> Result<(), StoreError>;
    /// An organisation's charges (kind `charge`, never cash-outs) in a mode, newest first (by id, which is time-ordered), with ids
    /// strictly below `before` when given, at most `limit`, passing `filter` (state, created
    /// `from` inclusive and `to` exclusive, reference, payer).
    ///
    /// # Errors
    /// Storage failures.
    fn list_charges(
        &mut self,
        org_id: &OrgId,
        mode: Mode,
        filter: &ChargeFilter,
        before: Option<&ChargeRef>,
        limit: usize,
    ) -> Result<Vec<Charge>, StoreError>;
    /// An organisation's charges (kind `charge`) in a mode created in the `days` days of
    /// [`DAY_MICROS`] from `from` (`from` inclusive, the last day's end exclusive), counted and
    /// summed by day, with the completed ones among them: one total per day that has charges,
    /// in no particular order. Reads the run's totals alone, never the organisation's other
    /// charges (the stores keep the totals as charges are written, or read an index by creation
    /// time).
    ///
    /// # Errors
    /// Storage failures.
    fn charge_day_totals(&mut self, org_id: &OrgId, mode: Mode, from: Timestamp, days: u32) -> Result<Vec<ChargeDayTotal>, StoreError>;
    /// Claims up to `limit` charges whose `next_action_at <= now`, oldest due first, by setting
    /// their `next_action_at` to `lease_until` (so a crashed worker's claims come due again), and
    /// returns their ids. Concurrent callers never claim the same charge (PostgreSQL:
    /// `FOR UPDATE SKIP LOCKED`).
    ///
    /// # Errors
    /// Storage failures.
    fn claim_due_charges(&mut self, now: Timestamp, lease_until: Timestamp, limit: usize) -> Result<Vec<ChargeRef>, StoreError>;
    /// Locks up to `limit` charges of `mode` whose `next_action_at <= now`, oldest due first
    /// (ties by id), for the rest of this transaction, and returns their ids: a claim for a worker
    /// that advances them in the same transaction, so nothing is leased (if it fails, the claim
    /// is rolled back with the work). Charges another transaction has locked are skipped
    /// (PostgreSQL: `FOR UPDATE SKIP LOCKED`; SQLite's writer holds the database).
    ///
    /// # Errors
    /// Storage failures.
    fn lock_due_charges(&mut self, mode: Mode, now: Timestamp, limit: usize) -> Result<Vec<ChargeRef>, StoreError>;
    /// When the charge that has waited longest for the workers came due: the earliest
    /// `next_action_at` at or before `now` (claimed charges are due at their lease's end).
    ///
    /// # Errors
    /// Storage failures.
    fn oldest_due_charge(&mut self, now: Timestamp) -> Result<Option<Timestamp>, StoreError>;
    /// How many charges come due at or before `until` (claimed charges at their lease's end), of
    /// every organisation and mode, counting at most `cap`: the work the workers have ahead.
    ///
    /// # Errors
    /// Storage failures.
    fn count_due_charges(&mut self, until: Timestamp, cap: usize) -> Result<u64, StoreError>;
    /// The `pending` charges and cash-outs whose payer is this number, in this mode, oldest first.
    ///
    /// # Errors
    /// Storage failures.
    fn pending_charges_of_payer(&mut self, mode: Mode, msisdn: &Msisdn) -> Result<Vec<Charge>, StoreError>;
}
