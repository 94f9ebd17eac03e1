//! The wire shapes more than one group answers with: the list envelope, the charge (charges,
//! sandbox, events), the balance (accounts, agents' float), the wallet (wallets, sandbox), the
//! statement line (wallets, accounts) and the payout (payouts, bulk payouts' items, events).

use malipo_charges::Charge;
use malipo_core::Currency;
use malipo_payouts::Payout;
use malipo_service::{Balance, StatementLine, WalletDetails};
use serde::Serialize;
use serde_json::value::RawValue;
use utoipa::ToSchema;

use crate::wire::{money, time};

/// A page of a list.
#[derive(Debug, Serialize, ToSchema)]
pub struct ListDto<T> {
    /// The items.
    pub data: Vec<T>,
    /// Whether more follow.
    pub has_more: bool,
    /// Pass as `cursor` for the next page.
    pub next_cursor: Option<String>,
}

/// A charge.
#[derive(Debug, Serialize, ToSchema)]
pub struct ChargeDto {
    /// `ch_…`.
    pub charge_ref: String,
    /// `pending`, `authorised`, `completed`, `declined`, `expired`, `failed`.
    pub state: &'static str,
    /// `test` or `live`.
    pub mode: &'static str,
    /// The payer.
    pub payer_msisdn: String,
    /// Amount (two decimals).
    #[schema(value_type = f64)]
    pub amount: Box<RawValue>,
    /// ISO 4217.
    pub currency: String,
    /// The merchant's fee.
    #[schema(value_type = f64)]
    pub fee: Box<RawValue>,
    /// Sum of reversals.
    #[schema(value_type = f64)]
    pub amount_reversed: Box<RawValue>,
    /// The integrator's reference.
    pub reference: String,
    /// Optional description.
    pub description: Option<String>,
    /// Why it ended, when not completed.
    pub failure_reason: Option<&'static str>,
    /// The ledger transaction once completed.
    pub transaction_id: Option<String>,
    /// RFC 3339 UTC.
    pub created_at: String,
    /// RFC 3339 UTC.
    pub updated_at: String,
    /// RFC 3339 UTC.
    pub expires_at: String,
    /// RFC 3339 UTC.
    pub completed_at: Option<String>,
}

impl From<&Charge> for ChargeDto {
    fn from(c: &Charge) -> Self {
        ChargeDto {
            charge_ref: c.id.to_string(),
            state: c.state.as_str(),
            mode: c.mode.as_str(),
            payer_msisdn: c.payer_msisdn.to_string(),
            amount: money(c.amount, c.currency),
            currency: c.currency.to_string(),
            fee: money(c.fee, c.currency),
            amount_reversed: money(c.amount_reversed, c.currency),
            reference: c.reference.clone(),
            description: c.description.clone(),
            failure_reason: c.failure_reason.map(|r| r.as_str()),
            transaction_id: c.transaction_id.as_ref().map(ToString::to_string),
            created_at: time(c.created_at),
            updated_at: time(c.updated_at),
            expires_at: time(c.expires_at),
            completed_at: c.completed_at.map(time),
        }
    }
}

/// `GET /partner/balance` and `GET /agents/float` response.
#[derive(Debug, Serialize, ToSchema)]
pub struct BalanceDto {
    /// `collection`, `payout` or `agent_float`.
    pub account: &'static str,
    /// `acc_…`.
    pub account_id: String,
    /// ISO 4217.
    pub currency: String,
    /// Spendable.
    #[schema(value_type = f64)]
    pub available: Box<RawValue>,
    /// Authorised but not yet completed into this account.
    #[schema(value_type = f64)]
    pub pending: Box<RawValue>,
    /// RFC 3339 UTC.
    pub as_of: String,
    /// The organisation's country (ISO 3166-1 alpha-2).
    pub country: String,
    /// The country's time zone (IANA, e.g. `Africa/Nairobi`): reports and limits count its days.
    pub time_zone: String,
}

impl From<&Balance> for BalanceDto {
    fn from(b: &Balance) -> Self {
        let c = b.account.currency;
        BalanceDto {
            account: b.account.kind.as_str(),
            account_id: b.account.id.to_string(),
            currency: c.to_string(),
            available: money(b.account.available(), c),
            pending: money(b.pending, c),
            as_of: time(b.as_of),
            country: b.country.clone(),
            time_zone: b.time_zone.clone(),
        }
    }
}

/// Limits of a wallet's KYC tier.
#[derive(Debug, Serialize, ToSchema)]
pub struct WalletLimitsDto {
    /// Largest single movement.
    #[schema(value_type = f64)]
    pub per_transaction: Box<RawValue>,
    /// Largest total per local calendar day.
    #[schema(value_type = f64)]
    pub daily: Box<RawValue>,
    /// Used today (debits and reservations since the country's local midnight).
    #[schema(value_type = f64)]
    pub daily_used: Box<RawValue>,
    /// Largest balance.
    #[schema(value_type = f64)]
    pub max_balance: Box<RawValue>,
}

/// A customer's wallet.
#[derive(Debug, Serialize, ToSchema)]
pub struct WalletDto {
    /// The number, international digits without `+`.
    #[schema(example = "254712345678")]
    pub msisdn: String,
    /// `test` or `live`.
    pub mode: &'static str,
    /// `active` or `locked`.
    pub state: &'static str,
    /// KYC tier (0: opened without an ID).
    pub kyc_tier: u8,
    /// ISO 4217.
    pub currency: String,
    /// Balance.
    #[schema(value_type = f64)]
    pub balance: Box<RawValue>,
    /// Spendable: balance less reservations.
    #[schema(value_type = f64)]
    pub available: Box<RawValue>,
    /// The tier's limits and today's use.
    pub limits: WalletLimitsDto,
    /// Whether a PIN is set.
    pub pin_set: bool,
    /// Given name.
    pub first_name: Option<String>,
    /// Family name.
    pub last_name: Option<String>,
    /// The identity document's type, once given.
    pub id_type: Option<String>,
    /// The identity document's number, once given.
    pub id_number: Option<String>,
    /// `YYYY-MM-DD`.
    pub date_of_birth: Option<String>,
    /// Why the wallet is locked (`pin_attempts_exceeded` or the operator's reason); null when active.
    pub lock_reason: Option<String>,
    /// RFC 3339 UTC.
    pub created_at: String,
    /// RFC 3339 UTC.
    pub updated_at: String,
}

impl From<&WalletDetails> for WalletDto {
    fn from(d: &WalletDetails) -> Self {
        let w = &d.wallet;
        let c = w.currency;
        WalletDto {
            msisdn: w.msisdn.to_string(),
            mode: w.mode.as_str(),
            state: w.state.as_str(),
            kyc_tier: w.kyc_tier,
            currency: c.to_string(),
            balance: money(d.account.balance, c),
            available: money(d.account.available(), c),
            limits: WalletLimitsDto {
                per_transaction: money(d.tier.per_transaction, c),
                daily: money(d.tier.daily, c),
                daily_used: money(d.daily_used, c),
                max_balance: money(d.tier.max_balance, c),
            },
            pin_set: w.pin_hash.is_some(),
            first_name: w.first_name.clone(),
            last_name: w.last_name.clone(),
            id_type: w.id_type.clone(),
            id_number: w.id_number.clone(),
            date_of_birth: w.date_of_birth.clone(),
            lock_reason: w.lock_reason.clone(),
            created_at: time(w.created_at),
            updated_at: time(w.updated_at),
        }
    }
}

/// One line of a statement (an account's or a wallet's): one posting, oldest first.
#[derive(Debug, Serialize, ToSchema)]
pub struct StatementLineDto {
    /// The ledger transaction (`tx_…`).
    pub transaction_id: String,
    /// What moved the money: `charge`, `payout`, `reversal`, `transfer` (also the operator
    /// funding the account), `payment_request`, `cash_in`, `cash_out`, `p2p`, `fee`, and on a
    /// test wallet `sandbox_funding`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The object that caused it (e.g. `ch_…`, `po_…`, `wd_…`, a number).
    pub source_ref: String,
    /// Signed: what the account or wallet moved by (positive in, negative out).
    #[schema(value_type = f64)]
    pub amount: Box<RawValue>,
    /// The account's or wallet's balance right after it.
    #[schema(value_type = f64)]
    pub balance_after: Box<RawValue>,
    /// RFC 3339 UTC.
    pub created_at: String,
}

impl StatementLineDto {
    /// A line in the account's or wallet's currency.
    pub fn new(line: &StatementLine, currency: Currency) -> Self {
        let p = &line.posting;
        StatementLineDto {
            transaction_id: p.journal_id.to_string(),
            kind: malipo_ledger::transaction_type(p.kind),
            source_ref: p.source_ref.clone(),
            amount: money(p.amount, currency),
            balance_after: money(p.balance_after, currency),
            created_at: time(p.created_at),
        }
    }
}

/// A payout (also an item of a bulk payout, with `bulk_payout_id` set).
#[derive(Debug, Serialize, ToSchema)]
pub struct PayoutDto {
    /// `po_…`.
    pub payout_ref: String,
    /// `pending`, `completed` or `failed`.
    pub state: &'static str,
    /// `test` or `live`.
    pub mode: &'static str,
    /// The payee, international digits without `+`.
    #[schema(example = "254712345678")]
    pub payee_msisdn: String,
    /// What the payee receives (two decimals).
    #[schema(value_type = f64, example = 1500.00)]
    pub amount: Box<RawValue>,
    /// ISO 4217.
    pub currency: String,
    /// The country's payout fee, paid by the organisation on top of the amount.
    #[schema(value_type = f64)]
    pub fee: Box<RawValue>,
    /// The integrator's reference.
    pub reference: String,
    /// Text for the payee.
    pub narration: Option<String>,
    /// Why it failed: `payee_not_found`, `wallet_locked`, `limit_exceeded`,
    /// `bulk_payout_rejected`, `processing_error`.
    pub failure_reason: Option<&'static str>,
    /// The ledger transaction once completed (`tx_…`).
    pub transaction_id: Option<String>,
    /// The batch (`bp_…`) of a bulk payout's item.
    pub bulk_payout_id: Option<String>,
    /// Sum of reversals against it.
    #[schema(value_type = f64)]
    pub amount_reversed: Box<RawValue>,
    /// RFC 3339 UTC.
    pub created_at: String,
    /// RFC 3339 UTC.
    pub updated_at: String,
    /// RFC 3339 UTC.
    pub completed_at: Option<String>,
}

impl From<&Payout> for PayoutDto {
    fn from(p: &Payout) -> Self {
        let c = p.currency;
        PayoutDto {
            payout_ref: p.id.to_string(),
            state: p.state.as_str(),
            mode: p.mode.as_str(),
            payee_msisdn: p.payee_msisdn.to_string(),
            amount: money(p.amount, c),
            currency: c.to_string(),
            fee: money(p.fee, c),
            reference: p.reference.clone(),
            narration: p.narration.clone(),
            failure_reason: p.failure_reason.map(|r| r.as_str()),
            transaction_id: p.transaction_id.as_ref().map(ToString::to_string),
            bulk_payout_id: p.bulk_payout_id.as_ref().map(ToString::to_string),
            amount_reversed: money(p.amount_reversed, c),
            created_at: time(p.created_at),
            updated_at: time(p.updated_at),
            completed_at: p.completed_at.map(time),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use malipo_core::{AccountId, MinorUnit, Mode, Msisdn, Timestamp, TransactionId};
    use malipo_countries::Countries;
    use malipo_ledger::{Account, AccountKind, JournalKind, Posting};
    use malipo_payouts::{PayoutFailure, PayoutState};
    use malipo_service::{Wallet, WalletState};

    use crate::testing::{payout, TWO_COUNTRIES};

    fn details() -> WalletDetails {
        let t = Timestamp::from_micros(1_763_805_600_000_000);
        let mut account = Account::open(None, Mode::Test, AccountKind::Wallet, Currency::KES, Some("254712345678".into()), t);
        account.balance = MinorUnit::new(1_250_050);
        account.held = MinorUnit::new(50);
        let wallet = Wallet {
            msisdn: Msisdn::parse("254712345678").unwrap(),
            mode: Mode::Test,
            account_id: account.id.clone(),
            country: "KE".into(),
            currency: Currency::KES,
            state: WalletState::Locked,
            kyc_tier: 1,
            pin_hash: Some("$argon2id$...".into()),
            pin_attempts: 3,
            first_name: Some("Amina".into()),
            last_name: Some("Otieno".into()),
            id_type: Some("national_id".into()),
            id_number: Some("12345678".into()),
            date_of_birth: Some("1990-04-12".into()),
            lock_reason: Some("pin_attempts_exceeded".into()),
            created_at: t,
            updated_at: Timestamp::from_micros(1_763_805_660_000_000),
        };
        let tier = Countries::from_toml_str(TWO_COUNTRIES).unwrap().get("KE").unwrap().tier(1).unwrap().clone();
        WalletDetails { wallet, account, tier, daily_used: MinorUnit::new(120_000) }
    }

    #[test]
    fn a_wallet_renders_its_limits_and_todays_use() {
        let json = serde_json::to_string(&WalletDto::from(&details())).unwrap();
        assert!(json.contains(r#""msisdn":"254712345678","mode":"test","state":"locked","kyc_tier":1,"currency":"KES","balance":12500.50,"available":12500.00,"limits":{"per_transaction":250000.00,"daily":500000.00,"daily_used":1200.00,"max_balance":500000.00},"pin_set":true,"first_name":"Amina","last_name":"Otieno","id_type":"national_id","id_number":"12345678","date_of_birth":"1990-04-12","lock_reason":"pin_attempts_exceeded","#), "{json}");
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v["created_at"], "2025-11-22T10:00:00Z");
        assert_eq!(v["updated_at"], "2025-11-22T10:01:00Z");
        assert!(!json.contains("argon2"), "the PIN hash never leaves");
        assert!(v.get("pin_attempts").is_none());
    }

    #[test]
    fn a_statement_line_is_signed() {
        let t = Timestamp::from_micros(1_763_805_600_000_000);
        let line = StatementLine {
            seq: 7,
            posting: Posting {
                journal_id: TransactionId::new(),
                account: AccountId::new(),
                amount: MinorUnit::new(-2_900),
                fee: MinorUnit::ZERO,
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
    fn a_payout_renders_every_field_of_the_contract_in_order() {
        let json = serde_json::to_string(&PayoutDto::from(&payout())).unwrap();
        assert_eq!(
            json,
            concat!(
                r#"{"payout_ref":"po_payout1","state":"completed","mode":"test","payee_msisdn":"254712345678","amount":1500.00,"#,
                r#""currency":"KES","fee":15.00,"reference":"SALARY-11-007","narration":"November salary","failure_reason":null,"#,
                r#""transaction_id":"tx_paid1","bulk_payout_id":"bp_batch1","amount_reversed":500.00,"#,
                r#""created_at":"2025-11-22T10:00:00Z","updated_at":"2025-11-22T10:00:02Z","completed_at":"2025-11-22T10:00:02Z"}"#
            )
        );
    }

    #[test]
    fn a_failed_single_payout_writes_its_nulls() {
        let mut p = payout();
        p.state = PayoutState::Failed;
        p.failure_reason = Some(PayoutFailure::PayeeNotFound);
        p.narration = None;
        p.transaction_id = None;
        p.bulk_payout_id = None;
        p.amount_reversed = MinorUnit::ZERO;
        p.completed_at = None;
        let v = serde_json::to_value(PayoutDto::from(&p)).unwrap();
        assert_eq!(v["state"], "failed");
        assert_eq!(v["failure_reason"], "payee_not_found");
        for null in ["narration", "transaction_id", "bulk_payout_id", "completed_at"] {
            assert!(v[null].is_null() && v.as_object().unwrap().contains_key(null), "{null}");
        }
        assert!(serde_json::to_string(&PayoutDto::from(&p)).unwrap().contains(r#""amount_reversed":0.00,"#));
        assert_eq!(v.as_object().unwrap().len(), 16, "exactly the contract's fields: {v}");
    }
}
