//! Accounts (contract section 4): the merchant's balances.

use rust_decimal::Decimal;
use serde::Deserialize;

use crate::client::Call;
use crate::operations as ops;
use crate::{Client, Error};

/// Which of the merchant's accounts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AccountKind {
    /// Where charges land.
    Collection,
    /// What payouts are paid from.
    Payout,
}

impl AccountKind {
    /// The kind as the API writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            AccountKind::Collection => "collection",
            AccountKind::Payout => "payout",
        }
    }
}

/// An account's balance (`GET /partner/balance`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[non_exhaustive]
pub struct Balance {
    /// `collection` or `payout`.
    pub account: String,
    /// Its id, `acc_…`.
    pub account_id: String,
    /// The currency (ISO 4217).
    pub currency: String,
    /// Spendable now.
    pub available: Decimal,
    /// Authorised but not yet completed into the account.
    pub pending: Decimal,
    /// When it was read (RFC 3339, UTC).
    pub as_of: String,
}

/// The merchant's accounts: `client.accounts()`.
#[derive(Debug, Clone, Copy)]
pub struct Accounts<'a> {
    pub(crate) client: &'a Client,
}

impl Accounts<'_> {
    /// The balance of one account (`getBalance`).
    ///
    /// # Errors
    /// As every call ([`Error`]).
    pub async fn balance(&self, account: AccountKind) -> Result<Balance, Error> {
        self.client.json(&Call::to(ops::GET_BALANCE, &[]).query("account", Some(account.as_str()))).await
    }
}
