//! Accounts (contract section 4): the organisation's accounts, balances, statements, and
//! transfers between its own accounts.

use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use crate::client::{new_key, Call};
use crate::operations as ops;
use crate::{AccountType, Client, Error, List, Mode, StatementLine};

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

crate::names::names! {
    /// What kind of organisation a key pair acts for.
    OrganisationKind {
        Merchant = "merchant": "collects charges and pays out.",
        Corporate = "corporate": "pays out (bulk payouts).",
        Agent = "agent": "cash-in and cash-out against a float.",
        Operator = "operator": "runs the wallets.",
        Gateway = "gateway": "a USSD gateway.",
    }
}

/// The organisation a key pair acts for (`GET /organisation`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[non_exhaustive]
pub struct Organisation {
    /// `org_…`.
    pub id: String,
    /// What kind of organisation.
    pub kind: OrganisationKind,
    /// Its name.
    pub name: String,
    /// ISO 3166-1 alpha-2.
    pub country: String,
    /// The country's IANA time zone: the day of reconciliation reports and daily limits.
    pub time_zone: String,
    /// ISO 4217: the currency of every amount of the organisation.
    pub currency: String,
    /// The credential's mode.
    pub mode: Mode,
    /// The token's scopes, space-separated.
    pub scope: String,
}

/// An account's balance (`GET /partner/balance`, and an agent's float).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[non_exhaustive]
pub struct Balance {
    /// `collection`, `payout`, or an agent's `agent_float`.
    pub account: String,
    /// Its id, `acc_…`.
    pub account_id: String,
    /// The currency (ISO 4217).
    pub currency: String,
    /// Spendable now.
    #[serde(with = "crate::amount")]
    pub available: Decimal,
    /// Authorised but not yet completed into the account.
    #[serde(with = "crate::amount")]
    pub pending: Decimal,
    /// When it was read (RFC 3339, UTC).
    #[serde(with = "time::serde::rfc3339")]
    pub as_of: OffsetDateTime,
    /// The organisation's country (ISO 3166-1 alpha-2).
    pub country: String,
    /// The country's time zone (IANA, e.g. `Africa/Nairobi`): reports and limits count its
    /// days ([`Transactions::today`](crate::Transactions::today)).
    pub time_zone: String,
}

/// One of the organisation's accounts with its balances (`GET /accounts`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[non_exhaustive]
pub struct Account {
    /// Its id, `acc_…`.
    pub account_id: String,
    /// `collection`, `payout`, `agent_float`, ...
    #[serde(rename = "type")]
    pub kind: AccountType,
    /// Test or live.
    pub mode: Mode,
    /// The currency (ISO 4217).
    pub currency: String,
    /// The ledger balance.
    #[serde(with = "crate::amount")]
    pub balance: Decimal,
    /// Spendable now.
    #[serde(with = "crate::amount")]
    pub available: Decimal,
    /// Authorised but not yet completed into the account.
    #[serde(with = "crate::amount")]
    pub pending: Decimal,
    /// RFC 3339, UTC.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}

/// A transfer between two of the organisation's own accounts (`POST /accounts/transfers`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct NewTransfer {
    /// The account debited.
    #[serde(serialize_with = "kind_text")]
    pub from: AccountKind,
    /// The account credited.
    #[serde(serialize_with = "kind_text")]
    pub to: AccountKind,
    /// The amount in major units (sent as a JSON number with its exact text).
    #[serde(with = "crate::amount")]
    pub amount: Decimal,
}

impl NewTransfer {
    /// `amount` from `from` to `to`.
    pub fn new(from: AccountKind, to: AccountKind, amount: Decimal) -> Self {
        NewTransfer { from, to, amount }
    }
}

fn kind_text<S: serde::Serializer>(kind: &AccountKind, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(kind.as_str())
}

/// A completed transfer.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[non_exhaustive]
pub struct Transfer {
    /// The ledger transaction's id, `tx_…` (in both accounts' statements).
    pub transfer_id: String,
    /// The account debited.
    pub from: AccountType,
    /// The account credited.
    pub to: AccountType,
    /// The amount moved.
    #[serde(with = "crate::amount")]
    pub amount: Decimal,
    /// The currency (ISO 4217).
    pub currency: String,
    /// Test or live.
    pub mode: Mode,
    /// RFC 3339, UTC.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}

/// Which lines of a statement (`from` inclusive, `to` exclusive; RFC 3339).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct StatementFilter {
    /// Posted at or after.
    pub from: Option<String>,
    /// Posted before.
    pub to: Option<String>,
}

impl StatementFilter {
    /// Lines posted in `[from, to)`.
    pub fn between(from: impl Into<String>, to: impl Into<String>) -> Self {
        StatementFilter { from: Some(from.into()), to: Some(to.into()) }
    }
}

/// The organisation's accounts: `client.accounts()`.
#[derive(Debug, Clone, Copy)]
pub struct Accounts<'a> {
    pub(crate) client: &'a Client,
}

#[derive(Deserialize)]
struct AccountList {
    data: Vec<Account>,
}

impl Accounts<'_> {
    /// Which organisation the key pair acts for: its country, time zone and currency, and the
    /// credential's mode and scopes (`getOrganisation`).
    ///
    /// # Errors
    /// As every call ([`Error`]).
    pub async fn organisation(&self) -> Result<Organisation, Error> {
        self.client.json(&Call::to(ops::GET_ORGANISATION, &[])).await
    }

    /// The balance of one account (`getBalance`).
    ///
    /// # Errors
    /// As every call ([`Error`]).
    pub async fn balance(&self, account: AccountKind) -> Result<Balance, Error> {
        self.client.json(&Call::to(ops::GET_BALANCE, &[]).query("account", Some(account.as_str()))).await
    }

    /// Every account of the organisation in the client's mode, with its balances
    /// (`listAccounts`; one page).
    ///
    /// # Errors
    /// As every call.
    pub async fn list(&self) -> Result<Vec<Account>, Error> {
        let page: AccountList = self.client.json(&Call::to(ops::LIST_ACCOUNTS, &[])).await?;
        Ok(page.data)
    }

    /// An account's postings, oldest first (`getAccountStatement`).
    pub fn statement(&self, account_id: &str, filter: StatementFilter) -> List<StatementLine> {
        let call = Call::to(ops::GET_ACCOUNT_STATEMENT, &[account_id]).query("from", filter.from).query("to", filter.to);
        List::new(self.client, call)
    }

    /// Moves money between two of the organisation's own accounts (`createTransfer`) under a
    /// new idempotency key.
    ///
    /// # Errors
    /// As every call; `insufficient_funds` when `from` is short.
    pub async fn transfer(&self, transfer: &NewTransfer) -> Result<Transfer, Error> {
        self.transfer_with_key(transfer, &new_key()).await
    }

    /// [`Accounts::transfer`] under the caller's idempotency key.
    ///
    /// # Errors
    /// As [`Accounts::transfer`]; `idempotency_key_reused`.
    pub async fn transfer_with_key(&self, transfer: &NewTransfer, key: &str) -> Result<Transfer, Error> {
        self.client.json(&Call::json_body(ops::CREATE_TRANSFER, &[], Some(key), transfer)?).await
    }
}
