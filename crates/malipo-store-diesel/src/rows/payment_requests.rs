//! Rows of merchant payment requests.

use std::str::FromStr;

use diesel::prelude::*;
use malipo_core::{AccountId, MinorUnit, Msisdn, OrgId, PaymentRequestId, Timestamp, TransactionId};
use malipo_requests::{PayCode, PaymentRequest, RequestState};
use malipo_service::StoreError;

use super::columns::{corrupt, currency, mode, ts};
use crate::schema::payment_requests;

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = payment_requests, check_for_backend(diesel::pg::Pg, diesel::sqlite::Sqlite))]
#[diesel(treat_none_as_default_value = false)]
pub(crate) struct PaymentRequestRow {
    pub(crate) id: String,
    pub(crate) org_id: String,
    pub(crate) mode: String,
    pub(crate) pay_code: String,
    pub(crate) state: String,
    pub(crate) amount: i64,
    pub(crate) fee: i64,
    pub(crate) currency: String,
    pub(crate) reference: String,
    pub(crate) description: Option<String>,
    pub(crate) payer_msisdn: Option<String>,
    pub(crate) paid_by_msisdn: Option<String>,
    pub(crate) transaction_id: Option<String>,
    pub(crate) merchant_account: String,
    pub(crate) expires_at: i64,
    pub(crate) created_at: i64,
    pub(crate) updated_at: i64,
    pub(crate) paid_at: Option<i64>,
}

impl From<&PaymentRequest> for PaymentRequestRow {
    fn from(r: &PaymentRequest) -> Self {
        PaymentRequestRow {
            id: r.id.as_str().to_owned(),
            org_id: r.org_id.as_str().to_owned(),
            mode: r.mode.as_str().to_owned(),
            pay_code: r.pay_code.as_str().to_owned(),
            state: r.state.as_str().to_owned(),
            amount: r.amount.get(),
            fee: r.fee.get(),
            currency: r.currency.as_str().to_owned(),
            reference: r.reference.clone(),
            description: r.description.clone(),
            payer_msisdn: r.payer_msisdn.as_ref().map(|m| m.as_str().to_owned()),
            paid_by_msisdn: r.paid_by_msisdn.as_ref().map(|m| m.as_str().to_owned()),
            transaction_id: r.transaction_id.as_ref().map(|t| t.as_str().to_owned()),
            merchant_account: r.merchant_account.as_str().to_owned(),
            expires_at: r.expires_at.as_micros(),
            created_at: r.created_at.as_micros(),
            updated_at: r.updated_at.as_micros(),
            paid_at: r.paid_at.map(Timestamp::as_micros),
        }
    }
}

fn msisdn(value: Option<String>) -> Result<Option<Msisdn>, StoreError> {
    value.map(|m| Msisdn::parse(&m).map_err(|_| corrupt("msisdn", &m))).transpose()
}

impl TryFrom<PaymentRequestRow> for PaymentRequest {
    type Error = StoreError;
    fn try_from(r: PaymentRequestRow) -> Result<Self, StoreError> {
        Ok(PaymentRequest {
            mode: mode(&r.mode)?,
            currency: currency(&r.currency)?,
            pay_code: PayCode::parse(&r.pay_code).map_err(|_| corrupt("pay code", &r.pay_code))?,
            state: RequestState::from_str(&r.state).map_err(|_| corrupt("payment request state", &r.state))?,
            payer_msisdn: msisdn(r.payer_msisdn)?,
            paid_by_msisdn: msisdn(r.paid_by_msisdn)?,
            id: PaymentRequestId::from_trusted(r.id),
            org_id: OrgId::from_trusted(r.org_id),
            amount: MinorUnit::new(r.amount),
            fee: MinorUnit::new(r.fee),
            reference: r.reference,
            description: r.description,
            transaction_id: r.transaction_id.map(TransactionId::from_trusted),
            merchant_account: AccountId::from_trusted(r.merchant_account),
            expires_at: ts(r.expires_at),
            created_at: ts(r.created_at),
            updated_at: ts(r.updated_at),
            paid_at: r.paid_at.map(ts),
        })
    }
}
