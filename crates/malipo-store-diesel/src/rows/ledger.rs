//! Rows of accounts and the ledger.

use std::str::FromStr;

use diesel::prelude::*;
use malipo_core::{AccountId, MinorUnit, OrgId, TransactionId};
use malipo_ledger::{Account, AccountKind, JournalKind};
use malipo_service::StoreError;

use super::columns::{corrupt, currency, mode, ts};
use crate::schema::{accounts, deferred_lines, journals, postings};

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = accounts, check_for_backend(diesel::pg::Pg, diesel::sqlite::Sqlite))]
pub(crate) struct AccountRow {
    pub(crate) id: String,
    pub(crate) org_id: Option<String>,
    pub(crate) mode: String,
    pub(crate) kind: String,
    pub(crate) currency: String,
    pub(crate) balance: i64,
    pub(crate) held: i64,
    pub(crate) allow_negative: bool,
    pub(crate) owner_msisdn: Option<String>,
    pub(crate) created_at: i64,
}

impl From<&Account> for AccountRow {
    fn from(a: &Account) -> Self {
        AccountRow {
            id: a.id.as_str().to_owned(),
            org_id: a.org_id.as_ref().map(|o| o.as_str().to_owned()),
            mode: a.mode.as_str().to_owned(),
            kind: a.kind.as_str().to_owned(),
            currency: a.currency.as_str().to_owned(),
            balance: a.balance.get(),
            held: a.held.get(),
            allow_negative: a.kind.allows_negative(),
            owner_msisdn: a.owner_msisdn.clone(),
            created_at: a.created_at.as_micros(),
        }
    }
}

impl TryFrom<AccountRow> for Account {
    type Error = StoreError;
    fn try_from(r: AccountRow) -> Result<Self, StoreError> {
        Ok(Account {
            mode: mode(&r.mode)?,
            kind: account_kind(&r.kind)?,
            currency: currency(&r.currency)?,
            id: AccountId::from_trusted(r.id),
            org_id: r.org_id.map(OrgId::from_trusted),
            balance: MinorUnit::new(r.balance),
            held: MinorUnit::new(r.held),
            owner_msisdn: r.owner_msisdn,
            created_at: ts(r.created_at),
        })
    }
}

/// An account kind as stored.
pub(crate) fn account_kind(value: &str) -> Result<AccountKind, StoreError> {
    AccountKind::from_str(value).map_err(|_| corrupt("account kind", value))
}

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = journals, check_for_backend(diesel::pg::Pg, diesel::sqlite::Sqlite))]
pub(crate) struct JournalRow {
    pub(crate) id: String,
    pub(crate) mode: String,
    pub(crate) currency: String,
    pub(crate) kind: String,
    pub(crate) source_ref: String,
    pub(crate) created_at: i64,
    /// The chain entry: all three set once sealed, none before.
    pub(crate) seq: Option<i64>,
    pub(crate) prev_hash: Option<String>,
    pub(crate) hash: Option<String>,
}

impl JournalRow {
    pub(crate) fn journal_kind(&self) -> Result<JournalKind, StoreError> {
        JournalKind::from_str(&self.kind).map_err(|_| corrupt("journal kind", &self.kind))
    }

    pub(crate) fn transaction_id(&self) -> TransactionId {
        TransactionId::from_trusted(self.id.clone())
    }
}

/// A posting to insert (the id is assigned by the database).
#[derive(Insertable)]
#[diesel(table_name = postings, check_for_backend(diesel::pg::Pg, diesel::sqlite::Sqlite))]
pub(crate) struct NewPosting<'a> {
    pub(crate) journal_id: &'a str,
    pub(crate) line_no: i32,
    pub(crate) account_id: &'a str,
    pub(crate) amount: i64,
    pub(crate) balance_after: i64,
    pub(crate) created_at: i64,
    pub(crate) fee: i64,
}

/// A line waiting to be applied to a hot account (the id is assigned by the database).
#[derive(Insertable)]
#[diesel(table_name = deferred_lines, check_for_backend(diesel::pg::Pg, diesel::sqlite::Sqlite))]
pub(crate) struct NewDeferredLine<'a> {
    pub(crate) journal_id: &'a str,
    pub(crate) line_no: i32,
    pub(crate) account_id: &'a str,
    pub(crate) amount: i64,
    pub(crate) fee: i64,
    pub(crate) created_at: i64,
}

/// A waiting line as stored.
#[derive(Queryable, Selectable)]
#[diesel(table_name = deferred_lines, check_for_backend(diesel::pg::Pg, diesel::sqlite::Sqlite))]
pub(crate) struct DeferredLineRow {
    pub(crate) id: i64,
    pub(crate) journal_id: String,
    pub(crate) line_no: i32,
    pub(crate) account_id: String,
    pub(crate) amount: i64,
    pub(crate) fee: i64,
    pub(crate) created_at: i64,
}
