//! Rows of charges.

use std::str::FromStr;

use diesel::prelude::*;
use malipo_charges::{Charge, ChargeKind, ChargeState, FailureReason};
use malipo_core::{AccountId, ChargeRef, MinorUnit, Msisdn, OrgId, Timestamp, TransactionId};
use malipo_service::StoreError;

use super::columns::{corrupt, currency, mode, ts};
use crate::schema::charges;

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = charges, check_for_backend(diesel::pg::Pg, diesel::sqlite::Sqlite))]
pub(crate) struct ChargeRow {
    pub(crate) id: String,
    pub(crate) org_id: String,
    pub(crate) mode: String,
    pub(crate) payer_msisdn: String,
    pub(crate) amount: i64,
    pub(crate) fee: i64,
    pub(crate) currency: String,
    pub(crate) amount_reversed: i64,
    pub(crate) reference: String,
    pub(crate) description: Option<String>,
    pub(crate) state: String,
    pub(crate) failure_reason: Option<String>,
    pub(crate) transaction_id: Option<String>,
    pub(crate) merchant_account: String,
    pub(crate) payer_account: Option<String>,
    pub(crate) created_at: i64,
    pub(crate) updated_at: i64,
    pub(crate) expires_at: i64,
    pub(crate) completed_at: Option<i64>,
    pub(crate) next_action_at: Option<i64>,
    pub(crate) kind: String,
    pub(crate) commission: i64,
}

impl From<&Charge> for ChargeRow {
    fn from(c: &Charge) -> Self {
        ChargeRow {
            id: c.id.as_str().to_owned(),
            org_id: c.org_id.as_str().to_owned(),
            mode: c.mode.as_str().to_owned(),
            payer_msisdn: c.payer_msisdn.as_str().to_owned(),
            amount: c.amount.get(),
            fee: c.fee.get(),
            currency: c.currency.as_str().to_owned(),
            amount_reversed: c.amount_reversed.get(),
            reference: c.reference.clone(),
            description: c.description.clone(),
            state: c.state.as_str().to_owned(),
            failure_reason: c.failure_reason.map(|r| r.as_str().to_owned()),
            transaction_id: c.transaction_id.as_ref().map(|t| t.as_str().to_owned()),
            merchant_account: c.merchant_account.as_str().to_owned(),
            payer_account: c.payer_account.as_ref().map(|a| a.as_str().to_owned()),
            created_at: c.created_at.as_micros(),
            updated_at: c.updated_at.as_micros(),
            expires_at: c.expires_at.as_micros(),
            completed_at: c.completed_at.map(Timestamp::as_micros),
            next_action_at: c.next_action_at.map(Timestamp::as_micros),
            kind: c.kind.as_str().to_owned(),
            commission: c.commission.get(),
        }
    }
}

impl TryFrom<ChargeRow> for Charge {
    type Error = StoreError;
    fn try_from(r: ChargeRow) -> Result<Self, StoreError> {
        let failure_reason = match &r.failure_reason {
            Some(f) => Some(FailureReason::from_str(f).map_err(|_| corrupt("failure reason", f))?),
            None => None,
        };
        Ok(Charge {
            mode: mode(&r.mode)?,
            payer_msisdn: Msisdn::parse(&r.payer_msisdn).map_err(|_| corrupt("msisdn", &r.payer_msisdn))?,
            currency: currency(&r.currency)?,
            state: ChargeState::from_str(&r.state).map_err(|_| corrupt("charge state", &r.state))?,
            failure_reason,
            kind: ChargeKind::from_str(&r.kind).map_err(|_| corrupt("charge kind", &r.kind))?,
            commission: MinorUnit::new(r.commission),
            id: ChargeRef::from_trusted(r.id),
            org_id: OrgId::from_trusted(r.org_id),
            amount: MinorUnit::new(r.amount),
            fee: MinorUnit::new(r.fee),
            amount_reversed: MinorUnit::new(r.amount_reversed),
            reference: r.reference,
            description: r.description,
            transaction_id: r.transaction_id.map(TransactionId::from_trusted),
            merchant_account: AccountId::from_trusted(r.merchant_account),
            payer_account: r.payer_account.map(AccountId::from_trusted),
            created_at: ts(r.created_at),
            updated_at: ts(r.updated_at),
            expires_at: ts(r.expires_at),
            completed_at: r.completed_at.map(ts),
            next_action_at: r.next_action_at.map(ts),
        })
    }
}
