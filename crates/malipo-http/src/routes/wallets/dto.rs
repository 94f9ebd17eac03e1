//! The wire shapes of the Wallets group (contract section 11) that only it uses.

use malipo_core::Currency;
use malipo_service::StatementLine;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use utoipa::ToSchema;

use crate::wire::{money, time};

/// `POST /wallets` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct OpenWalletRequest {
    /// The customer's number; its country is the wallet's.
    #[schema(example = "254712345678")]
    pub msisdn: String,
    /// Given name (1–64 characters).
    #[schema(example = "Amina")]
    pub first_name: String,
    /// Family name (1–64 characters).
    #[schema(example = "Otieno")]
    pub last_name: String,
    /// One of the country's ID types (see `GET /config/countries`); with `id_number`.
    #[schema(example = "national_id")]
    pub id_type: Option<String>,
    /// Must match the ID type's pattern; with `id_type`.
    #[schema(example = "12345678")]
    pub id_number: Option<String>,
    /// `YYYY-MM-DD`.
    #[schema(example = "1990-04-12")]
    pub date_of_birth: Option<String>,
}

/// `POST /wallets/{msisdn}/pin` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SetPinRequest {
    /// The new PIN: the country's `pin_length` digits, as a string; weak PINs are refused.
    #[schema(example = "4071")]
    pub new_pin: String,
    /// Required to change an existing PIN; a wrong one counts as a failed attempt.
    pub current_pin: Option<String>,
}

/// `POST /wallets/{msisdn}/lock` and `POST /wallets/{msisdn}/unlock` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WalletReasonRequest {
    /// Why (1–200 characters); kept as the lock reason.
    #[schema(example = "customer reported the phone stolen")]
    pub reason: String,
}

/// `POST /wallets/{msisdn}/kyc` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RaiseKycRequest {
    /// The new tier: above the current one, at most what the ID type grants.
    #[schema(example = 2)]
    pub tier: u8,
    /// One of the country's ID types.
    #[schema(example = "national_id")]
    pub id_type: String,
    /// Must match the ID type's pattern.
    #[schema(example = "12345678")]
    pub id_number: String,
}

/// One line of a wallet's statement.
#[derive(Debug, Serialize, ToSchema)]
pub struct StatementLineDto {
    /// The ledger transaction (`tx_…`).
    pub transaction_id: String,
    /// What moved the money: `charge`, `payout`, `reversal`, `transfer`, `payment_request`,
    /// `cash_in`, `cash_out`, `p2p`, `fee`, `funding`, `sandbox_funding`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The object that caused it (e.g. `ch_…`, `wd_…`, a number).
    pub source_ref: String,
    /// Signed: positive into the wallet, negative out of it.
    #[schema(value_type = f64)]
    pub amount: Box<RawValue>,
    /// The wallet's balance right after it.
    #[schema(value_type = f64)]
    pub balance_after: Box<RawValue>,
    /// RFC 3339 UTC.
    pub created_at: String,
}

impl StatementLineDto {
    /// A line in the wallet's currency.
    pub fn new(line: &StatementLine, currency: Currency) -> Self {
        let p = &line.posting;
        StatementLineDto {
            transaction_id: p.journal_id.to_string(),
            kind: p.kind.as_str(),
            source_ref: p.source_ref.clone(),
            amount: money(p.amount, currency),
            balance_after: money(p.balance_after, currency),
            created_at: time(p.created_at),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use malipo_core::{AccountId, MinorUnit, Timestamp, TransactionId};
    use malipo_ledger::{JournalKind, Posting};

    use crate::extract::parse_json;
    use crate::problem::ApiError;

    #[test]
    fn a_statement_line_is_signed() {
        let t = Timestamp::from_micros(1_763_805_600_000_000);
        let line = StatementLine {
            seq: 7,
            posting: Posting {
                journal_id: TransactionId::new(),
                account: AccountId::new(),
                amount: MinorUnit::new(-2_900),
                balance_after: MinorUnit::new(97_100),
                kind: JournalKind::CashOut,
                source_ref: "wd_x".into(),
                created_at: t,
            },
        };
        let json = serde_json::to_string(&StatementLineDto::new(&line, Currency::KES)).unwrap();
        assert!(
            json.contains(
                r#""type":"cash_out","source_ref":"wd_x","amount":-29.00,"balance_after":971.00,"created_at":"2025-11-22T10:00:00Z"}"#
            ),
            "{json}"
        );
    }

    #[test]
    fn request_bodies_refuse_unknown_fields_and_numeric_pins() {
        assert!(matches!(parse_json::<SetPinRequest>(br#"{"new_pin":4071}"#), Err(ApiError::InvalidRequest(_))));
        assert!(matches!(parse_json::<SetPinRequest>(br#"{"new_pin":"4071","pin":"1"}"#), Err(ApiError::Fields(_))));
        let p = parse_json::<SetPinRequest>(br#"{"new_pin":"4071","current_pin":"9305"}"#).unwrap().value;
        assert_eq!((p.new_pin.as_str(), p.current_pin.as_deref()), ("4071", Some("9305")));
        assert!(matches!(
            parse_json::<RaiseKycRequest>(br#"{"tier":256,"id_type":"a","id_number":"b"}"#),
            Err(ApiError::InvalidRequest(_))
        ));
        assert!(matches!(parse_json::<WalletReasonRequest>(br#"{}"#), Err(ApiError::Fields(_))));
    }
}
