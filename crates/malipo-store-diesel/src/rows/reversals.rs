//! Rows of reversals.

use diesel::prelude::*;
use malipo_core::{ChargeRef, MinorUnit, OrgId, PayoutRef, ReversalId, TransactionId};
use malipo_payouts::{Reversal, ReversalOriginal};
use malipo_service::StoreError;

use super::columns::{corrupt, currency, mode, ts};
use crate::schema::reversals;

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = reversals, check_for_backend(diesel::pg::Pg, diesel::sqlite::Sqlite))]
pub(crate) struct ReversalRow {
    pub(crate) id: String,
    pub(crate) org_id: String,
    pub(crate) mode: String,
    pub(crate) charge_ref: Option<String>,
    pub(crate) payout_ref: Option<String>,
    pub(crate) original_transaction_id: String,
    pub(crate) amount: i64,
    pub(crate) fee_reversed: i64,
    pub(crate) currency: String,
    pub(crate) reason: String,
    pub(crate) transaction_id: String,
    pub(crate) created_at: i64,
}

impl From<&Reversal> for ReversalRow {
    fn from(r: &Reversal) -> Self {
        let (charge_ref, payout_ref) = match &r.original {
            ReversalOriginal::Charge(c) => (Some(c.as_str().to_owned()), None),
            ReversalOriginal::Payout(p) => (None, Some(p.as_str().to_owned())),
        };
        ReversalRow {
            id: r.id.as_str().to_owned(),
            org_id: r.org_id.as_str().to_owned(),
            mode: r.mode.as_str().to_owned(),
            charge_ref,
            payout_ref,
            original_transaction_id: r.original_transaction_id.as_str().to_owned(),
            amount: r.amount.get(),
            fee_reversed: r.fee_reversed.get(),
            currency: r.currency.as_str().to_owned(),
            reason: r.reason.clone(),
            transaction_id: r.transaction_id.as_str().to_owned(),
            created_at: r.created_at.as_micros(),
        }
    }
}

impl TryFrom<ReversalRow> for Reversal {
    type Error = StoreError;
    fn try_from(r: ReversalRow) -> Result<Self, StoreError> {
        let original = match (r.charge_ref, r.payout_ref) {
            (Some(c), None) => ReversalOriginal::Charge(ChargeRef::from_trusted(c)),
            (None, Some(p)) => ReversalOriginal::Payout(PayoutRef::from_trusted(p)),
            _ => return Err(corrupt("reversal original of reversal", &r.id)),
        };
        Ok(Reversal {
            mode: mode(&r.mode)?,
            currency: currency(&r.currency)?,
            original,
            id: ReversalId::from_trusted(r.id),
            org_id: OrgId::from_trusted(r.org_id),
            original_transaction_id: TransactionId::from_trusted(r.original_transaction_id),
            amount: MinorUnit::new(r.amount),
            fee_reversed: MinorUnit::new(r.fee_reversed),
            reason: r.reason,
            transaction_id: TransactionId::from_trusted(r.transaction_id),
            created_at: ts(r.created_at),
        })
    }
}
