//! The wire shapes of the Accounts group (contract section 4) that only it uses.

use malipo_ledger::Account;
use malipo_service::{Balance, NewTransfer, Page, StatementLine, Transfer};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use utoipa::ToSchema;

use crate::problem::ApiError;
use crate::routes::shared::StatementLineDto;
use crate::wire::{amount_text, money, time, DecimalAmount};

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

/// `POST /accounts/transfers` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TransferRequest {
    /// The account debited: `collection` or `payout`.
    #[schema(example = "collection", pattern = "^(collection|payout)$")]
    pub from: String,
    /// The account credited: `collection` or `payout`, not `from`.
    #[schema(example = "payout", pattern = "^(collection|payout)$")]
    pub to: String,
    /// Amount in major units: a JSON number or a numeric string.
    #[schema(value_type = DecimalAmount, example = "5000.00")]
    pub amount: Box<RawValue>,
}

impl TransferRequest {
    /// The use case's raw input.
    ///
    /// # Errors
    /// 400 when the amount is neither a number nor a string.
    pub fn into_new(self) -> Result<NewTransfer, ApiError> {
        Ok(NewTransfer { from: self.from, to: self.to, amount: amount_text("amount", &self.amount)? })
    }
}

/// A completed transfer between two of the organisation's accounts.
#[derive(Debug, Serialize, ToSchema)]
pub struct TransferDto {
    /// The ledger transaction (`tx_…`): it appears in both accounts' statements.
    pub transfer_id: String,
    /// `collection` or `payout`.
    pub from: &'static str,
    /// `collection` or `payout`.
    pub to: &'static str,
    /// What moved (two decimals).
    #[schema(value_type = f64, example = 5000.00)]
    pub amount: Box<RawValue>,
    /// ISO 4217.
    pub currency: String,
    /// `test` or `live`.
    pub mode: &'static str,
    /// RFC 3339 UTC.
    pub created_at: String,
}

impl From<&Transfer> for TransferDto {
    fn from(t: &Transfer) -> Self {
        TransferDto {
            transfer_id: t.transaction_id.to_string(),
            from: t.from.as_str(),
            to: t.to.as_str(),
            amount: money(t.amount, t.currency),
            currency: t.currency.to_string(),
            mode: t.mode.as_str(),
            created_at: time(t.created_at),
        }
    }
}

/// A page of an account's statement, oldest first.
#[derive(Debug, Serialize, ToSchema)]
pub struct StatementDto {
    /// `acc_…`.
    pub account_id: String,
    /// ISO 4217.
    pub currency: String,
    /// The postings, oldest first.
    pub data: Vec<StatementLineDto>,
    /// Whether more follow.
    pub has_more: bool,
    /// Pass as `cursor` for the next page.
    pub next_cursor: Option<String>,
}

impl StatementDto {
    /// The account and a page of its postings.
    pub fn new(account: &Account, page: &Page<StatementLine>) -> Self {
        StatementDto {
            account_id: account.id.to_string(),
            currency: account.currency.to_string(),
            data: page.data.iter().map(|l| StatementLineDto::new(l, account.currency)).collect(),
            has_more: page.has_more,
            next_cursor: page.next_cursor.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use malipo_core::{Currency, MinorUnit, Mode, TransactionId};
    use malipo_ledger::{AccountKind, JournalKind, Posting};

    use crate::extract::parse_json;
    use crate::testing::at;
    use crate::wire::amount_text;

    #[test]
    fn a_transfer_renders_the_contracts_fields() {
        let t = Transfer {
            transaction_id: TransactionId::from_trusted("tx_move1".into()),
            from: AccountKind::Collection,
            to: AccountKind::Payout,
            amount: MinorUnit::new(500_000),
            currency: Currency::KES,
            mode: Mode::Test,
            created_at: at(0),
        };
        assert_eq!(
            serde_json::to_string(&TransferDto::from(&t)).unwrap(),
            r#"{"transfer_id":"tx_move1","from":"collection","to":"payout","amount":5000.00,"currency":"KES","mode":"test","created_at":"2025-11-22T10:00:00Z"}"#
        );
        let r = parse_json::<TransferRequest>(br#"{"from":"collection","to":"payout","amount":"5000.00"}"#).unwrap().value;
        assert_eq!(
            (r.from.as_str(), r.to.as_str(), amount_text("amount", &r.amount).unwrap().as_str()),
            ("collection", "payout", "5000.00")
        );
    }

    #[test]
    fn a_statement_names_its_account_and_pages_oldest_first() {
        let account = Account::open(None, Mode::Test, AccountKind::Payout, Currency::KES, None, at(0));
        let line = |seq: i64, amount: i64, after: i64| StatementLine {
            seq,
            posting: Posting {
                journal_id: TransactionId::from_trusted(format!("tx_{seq}")),
                account: account.id.clone(),
                amount: MinorUnit::new(amount),
                fee: MinorUnit::ZERO,
                balance_after: MinorUnit::new(after),
                kind: JournalKind::Transfer,
                source_ref: format!("tx_{seq}"),
                created_at: at(seq),
            },
        };
        let page =
            Page { data: vec![line(1, 500_000, 500_000), line(2, -151_500, 348_500)], has_more: true, next_cursor: Some("2".into()) };
        let v = serde_json::to_value(StatementDto::new(&account, &page)).unwrap();
        assert_eq!(v["account_id"], account.id.as_str());
        assert_eq!(v["currency"], "KES");
        assert_eq!(v["data"][0]["transaction_id"], "tx_1");
        assert_eq!(v["data"][1]["amount"].to_string(), "-1515.00");
        assert_eq!(v["data"][1]["balance_after"].to_string(), "3485.00");
        assert_eq!((v["has_more"].as_bool(), v["next_cursor"].as_str()), (Some(true), Some("2")));
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, ["account_id", "currency", "data", "has_more", "next_cursor"]);
    }
}
