//! Rows of payouts and bulk payout batches.

use std::str::FromStr;

use diesel::prelude::*;
use malipo_core::{AccountId, BulkPayoutId, MinorUnit, Msisdn, OrgId, PayoutRef, Timestamp, TransactionId, UserId};
use malipo_payouts::{BatchCounts, BatchState, BulkPayout, Payout, PayoutFailure, PayoutState};
use malipo_service::StoreError;

use super::columns::{corrupt, currency, integer, mode, ts};
use crate::schema::{bulk_payouts, payouts};

/// How many columns a payout row binds in an `INSERT` (every field of [`PayoutRow`]: `None` is
/// bound as `NULL`, never written as `DEFAULT`, so that SQLite takes many rows per statement).
pub(crate) const PAYOUT_COLUMNS: usize = 20;

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = payouts, check_for_backend(diesel::pg::Pg, diesel::sqlite::Sqlite))]
#[diesel(treat_none_as_default_value = false)]
pub(crate) struct PayoutRow {
    pub(crate) id: String,
    pub(crate) org_id: String,
    pub(crate) mode: String,
    pub(crate) payee_msisdn: String,
    pub(crate) amount: i64,
    pub(crate) fee: i64,
    pub(crate) currency: String,
    pub(crate) amount_reversed: i64,
    pub(crate) reference: String,
    pub(crate) narration: Option<String>,
    pub(crate) state: String,
    pub(crate) failure_reason: Option<String>,
    pub(crate) transaction_id: Option<String>,
    pub(crate) bulk_payout_id: Option<String>,
    pub(crate) bulk_index: Option<i32>,
    pub(crate) payout_account: String,
    pub(crate) created_at: i64,
    pub(crate) updated_at: i64,
    pub(crate) completed_at: Option<i64>,
    pub(crate) next_action_at: Option<i64>,
}

impl TryFrom<&Payout> for PayoutRow {
    type Error = StoreError;
    fn try_from(p: &Payout) -> Result<Self, StoreError> {
        Ok(PayoutRow {
            id: p.id.as_str().to_owned(),
            org_id: p.org_id.as_str().to_owned(),
            mode: p.mode.as_str().to_owned(),
            payee_msisdn: p.payee_msisdn.as_str().to_owned(),
            amount: p.amount.get(),
            fee: p.fee.get(),
            currency: p.currency.as_str().to_owned(),
            amount_reversed: p.amount_reversed.get(),
            reference: p.reference.clone(),
            narration: p.narration.clone(),
            state: p.state.as_str().to_owned(),
            failure_reason: p.failure_reason.map(|r| r.as_str().to_owned()),
            transaction_id: p.transaction_id.as_ref().map(|t| t.as_str().to_owned()),
            bulk_payout_id: p.bulk_payout_id.as_ref().map(|b| b.as_str().to_owned()),
            bulk_index: p.bulk_index.map(|i| integer("bulk index", i)).transpose()?,
            payout_account: p.payout_account.as_str().to_owned(),
            created_at: p.created_at.as_micros(),
            updated_at: p.updated_at.as_micros(),
            completed_at: p.completed_at.map(Timestamp::as_micros),
            next_action_at: p.next_action_at.map(Timestamp::as_micros),
        })
    }
}

/// A stored `INTEGER` count or index back as `u32`.
fn unsigned(what: &str, value: i32) -> Result<u32, StoreError> {
    u32::try_from(value).map_err(|_| corrupt(what, &value.to_string()))
}

impl TryFrom<PayoutRow> for Payout {
    type Error = StoreError;
    fn try_from(r: PayoutRow) -> Result<Self, StoreError> {
        let failure_reason = match &r.failure_reason {
            Some(f) => Some(PayoutFailure::from_str(f).map_err(|_| corrupt("payout failure reason", f))?),
            None => None,
        };
        Ok(Payout {
            mode: mode(&r.mode)?,
            payee_msisdn: Msisdn::parse(&r.payee_msisdn).map_err(|_| corrupt("msisdn", &r.payee_msisdn))?,
            currency: currency(&r.currency)?,
            state: PayoutState::from_str(&r.state).map_err(|_| corrupt("payout state", &r.state))?,
            failure_reason,
            bulk_index: r.bulk_index.map(|i| unsigned("bulk index", i)).transpose()?,
            id: PayoutRef::from_trusted(r.id),
            org_id: OrgId::from_trusted(r.org_id),
            amount: MinorUnit::new(r.amount),
            fee: MinorUnit::new(r.fee),
            amount_reversed: MinorUnit::new(r.amount_reversed),
            reference: r.reference,
            narration: r.narration,
            transaction_id: r.transaction_id.map(TransactionId::from_trusted),
            bulk_payout_id: r.bulk_payout_id.map(BulkPayoutId::from_trusted),
            payout_account: AccountId::from_trusted(r.payout_account),
            created_at: ts(r.created_at),
            updated_at: ts(r.updated_at),
            completed_at: r.completed_at.map(ts),
            next_action_at: r.next_action_at.map(ts),
        })
    }
}

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = bulk_payouts, check_for_backend(diesel::pg::Pg, diesel::sqlite::Sqlite))]
pub(crate) struct BulkPayoutRow {
    pub(crate) id: String,
    pub(crate) org_id: String,
    pub(crate) mode: String,
    pub(crate) reference: String,
    pub(crate) currency: String,
    pub(crate) item_count: i32,
    pub(crate) total_amount: i64,
    pub(crate) total_fees: i64,
    pub(crate) payout_account: String,
    pub(crate) created_by: String,
    pub(crate) approved_by: Option<String>,
    pub(crate) rejected_by: Option<String>,
    pub(crate) rejection_reason: Option<String>,
    pub(crate) state: String,
    pub(crate) pending_count: i32,
    pub(crate) completed_count: i32,
    pub(crate) failed_count: i32,
    pub(crate) created_at: i64,
    pub(crate) approved_at: Option<i64>,
    pub(crate) completed_at: Option<i64>,
    pub(crate) updated_at: i64,
    pub(crate) created_by_person: Option<String>,
    pub(crate) approved_by_person: Option<String>,
    pub(crate) rejected_by_person: Option<String>,
}

impl TryFrom<&BulkPayout> for BulkPayoutRow {
    type Error = StoreError;
    fn try_from(b: &BulkPayout) -> Result<Self, StoreError> {
        Ok(BulkPayoutRow {
            id: b.id.as_str().to_owned(),
            org_id: b.org_id.as_str().to_owned(),
            mode: b.mode.as_str().to_owned(),
            reference: b.reference.clone(),
            currency: b.currency.as_str().to_owned(),
            item_count: integer("item count", b.item_count)?,
            total_amount: b.total_amount.get(),
            total_fees: b.total_fees.get(),
            payout_account: b.payout_account.as_str().to_owned(),
            created_by: b.created_by.clone(),
            approved_by: b.approved_by.clone(),
            rejected_by: b.rejected_by.clone(),
            rejection_reason: b.rejection_reason.clone(),
            state: b.state.as_str().to_owned(),
            pending_count: integer("pending count", b.counts.pending)?,
            completed_count: integer("completed count", b.counts.completed)?,
            failed_count: integer("failed count", b.counts.failed)?,
            created_at: b.created_at.as_micros(),
            approved_at: b.approved_at.map(Timestamp::as_micros),
            completed_at: b.completed_at.map(Timestamp::as_micros),
            updated_at: b.updated_at.as_micros(),
            created_by_person: b.created_by_person.as_ref().map(|u| u.as_str().to_owned()),
            approved_by_person: b.approved_by_person.as_ref().map(|u| u.as_str().to_owned()),
            rejected_by_person: b.rejected_by_person.as_ref().map(|u| u.as_str().to_owned()),
        })
    }
}

impl TryFrom<BulkPayoutRow> for BulkPayout {
    type Error = StoreError;
    fn try_from(r: BulkPayoutRow) -> Result<Self, StoreError> {
        Ok(BulkPayout {
            mode: mode(&r.mode)?,
            currency: currency(&r.currency)?,
            state: BatchState::from_str(&r.state).map_err(|_| corrupt("bulk payout state", &r.state))?,
            item_count: unsigned("item count", r.item_count)?,
            counts: BatchCounts {
                pending: unsigned("pending count", r.pending_count)?,
                completed: unsigned("completed count", r.completed_count)?,
                failed: unsigned("failed count", r.failed_count)?,
            },
            id: BulkPayoutId::from_trusted(r.id),
            org_id: OrgId::from_trusted(r.org_id),
            reference: r.reference,
            total_amount: MinorUnit::new(r.total_amount),
            total_fees: MinorUnit::new(r.total_fees),
            payout_account: AccountId::from_trusted(r.payout_account),
            created_by: r.created_by,
            created_by_person: r.created_by_person.map(UserId::from_trusted),
            approved_by: r.approved_by,
            approved_by_person: r.approved_by_person.map(UserId::from_trusted),
            rejected_by: r.rejected_by,
            rejected_by_person: r.rejected_by_person.map(UserId::from_trusted),
            rejection_reason: r.rejection_reason,
            created_at: ts(r.created_at),
            approved_at: r.approved_at.map(ts),
            completed_at: r.completed_at.map(ts),
            updated_at: ts(r.updated_at),
        })
    }
}
