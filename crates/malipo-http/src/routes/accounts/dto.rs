//! The wire shapes of the Accounts group (contract section 4) that only it uses.

use malipo_service::Balance;
use serde::Serialize;
use serde_json::value::RawValue;
use utoipa::ToSchema;

use crate::wire::{money, time};

/// An account with its balances (`GET /accounts`).
#[derive(Debug, Serialize, ToSchema)]
pub struct AccountDto {
    /// `acc_…`.
    pub account_id: String,
    /// `collection`, `payout`, `agent_float`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// `test` or `live`.
    pub mode: &'static str,
    /// ISO 4217.
    pub currency: String,
    /// Ledger balance (sum of postings).
    #[schema(value_type = f64)]
    pub balance: Box<RawValue>,
    /// Spendable: balance less reservations.
    #[schema(value_type = f64)]
    pub available: Box<RawValue>,
    /// Authorised but not yet completed into this account.
    #[schema(value_type = f64)]
    pub pending: Box<RawValue>,
    /// RFC 3339 UTC.
    pub created_at: String,
}

impl From<&Balance> for AccountDto {
    fn from(b: &Balance) -> Self {
        let c = b.account.currency;
        AccountDto {
            account_id: b.account.id.to_string(),
            kind: b.account.kind.as_str(),
            mode: b.account.mode.as_str(),
            currency: c.to_string(),
            balance: money(b.account.balance, c),
            available: money(b.account.available(), c),
            pending: money(b.pending, c),
            created_at: time(b.account.created_at),
        }
    }
}
