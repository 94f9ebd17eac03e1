//! The wire shapes of the API (contract sections 2–4, 10–12): serde + OpenAPI, converted from
//! domain types here and nowhere else.

use std::collections::BTreeMap;

use malipo_charges::Charge;
use malipo_core::{Currency, MinorUnit};
use malipo_countries::Country;
use malipo_service::{Balance, CashIn, EndpointWithSecret, EventDetail, IssuedToken, Redelivery, StatementLine, WalletDetails};
use malipo_webhooks::{Attempt, Delivery, Endpoint, Event};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use utoipa::ToSchema;

use crate::problem::ApiError;

/// An amount as a JSON number with at least two decimals (`250.00`), never through a float.
pub fn money(amount: MinorUnit, currency: Currency) -> Box<RawValue> {
    let text = currency.format_amount(amount);
    RawValue::from_string(text).unwrap_or_else(|_| RawValue::from_string("0.00".into()).unwrap_or_default())
}

/// The exact decimal text of an amount sent as a JSON number or numeric string.
///
/// # Errors
/// 400 `invalid_request` for other JSON types.
pub fn amount_text(field: &str, raw: &RawValue) -> Result<String, ApiError> {
    let text = raw.get().trim();
    if text.starts_with('"') {
        serde_json::from_str::<String>(text).map_err(|e| ApiError::InvalidRequest(format!("{field}: {e}")))
    } else if text.starts_with(|c: char| c == '-' || c.is_ascii_digit()) {
        Ok(text.to_owned())
    } else {
        Err(ApiError::InvalidRequest(format!("{field} must be a number or a numeric string")))
    }
}

/// `POST /oauth/token` response.
#[derive(Debug, Serialize, ToSchema)]
pub struct TokenResponse {
    /// The bearer token.
    pub access_token: String,
    /// Always `Bearer`.
    pub token_type: &'static str,
    /// Seconds until expiry (3600).
    pub expires_in: i64,
    /// Granted scopes, space-separated.
    pub scope: String,
    /// `test` or `live`.
    pub mode: &'static str,
}

impl From<IssuedToken> for TokenResponse {
    fn from(t: IssuedToken) -> Self {
        TokenResponse {
            access_token: t.access_token,
            token_type: "Bearer",
            expires_in: t.expires_in,
            scope: t.scopes.to_string(),
            mode: t.mode.as_str(),
        }
    }
}

/// `POST /oauth/token` JSON body (the seed's form).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TokenRequest {
    /// Optional here; when present must be `client_credentials`.
    pub grant_type: Option<String>,
    /// `ck_test_…` / `ck_live_…`.
    pub client_id: Option<String>,
    /// `cs_test_…` / `cs_live_…`.
    pub client_secret: Option<String>,
    /// A subset of the credential's scopes, space-separated.
    pub scope: Option<String>,
}

/// `POST /oauth/revoke` JSON body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RevokeRequest {
    /// The token to revoke.
    pub token: Option<String>,
    /// Ignored hint (RFC 7009).
    pub token_type_hint: Option<String>,
    /// Client id (when not using HTTP Basic).
    pub client_id: Option<String>,
    /// Client secret (when not using HTTP Basic).
    pub client_secret: Option<String>,
}

/// `POST /partner/stk` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct StkRequest {
    /// Customer phone number, international digits without `+`.
    #[schema(example = "254712345678")]
    pub payer_msisdn: String,
    /// Amount in major units: a JSON number or numeric string.
    #[schema(value_type = f64, example = 250.00)]
    pub amount: Box<RawValue>,
    /// The integrator's reference (1–64 characters).
    #[schema(example = "ORDER-1042")]
    pub reference: String,
    /// Idempotency key (1–255 visible ASCII).
    pub idem: String,
    /// Optional; must equal the merchant's collection currency.
    pub currency: Option<String>,
    /// Optional, at most 100 characters.
    pub description: Option<String>,
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
            created_at: c.created_at.to_rfc3339(),
            updated_at: c.updated_at.to_rfc3339(),
            expires_at: c.expires_at.to_rfc3339(),
            completed_at: c.completed_at.map(|t| t.to_rfc3339()),
        }
    }
}

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
            as_of: b.as_of.to_rfc3339(),
        }
    }
}

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
            created_at: b.account.created_at.to_rfc3339(),
        }
    }
}

/// `POST /sandbox/charges/{charge_ref}/simulate` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SimulateRequest {
    /// `approve`, `decline`, `wrong_pin`, `expire` or `fail`.
    pub action: String,
}

/// `POST /sandbox/wallets` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SandboxWalletRequest {
    /// The test customer's number.
    pub msisdn: String,
    /// Sets the balance (major units); new wallets start with 1,000,000.00.
    #[schema(value_type = Option<f64>)]
    pub balance: Option<Box<RawValue>>,
    /// Sets the KYC tier; test wallets start at the country's top tier.
    pub kyc_tier: Option<u8>,
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
            created_at: w.created_at.to_rfc3339(),
            updated_at: w.updated_at.to_rfc3339(),
        }
    }
}

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
            created_at: p.created_at.to_rfc3339(),
        }
    }
}

/// `POST /agents/cash-in` and `POST /agents/cash-out` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentCashRequest {
    /// The customer's number (a wallet in the agent's country).
    #[schema(example = "254712345678")]
    pub customer_msisdn: String,
    /// Amount in major units: a JSON number or numeric string.
    #[schema(value_type = f64, example = 500.00)]
    pub amount: Box<RawValue>,
}

/// A completed cash-in.
#[derive(Debug, Serialize, ToSchema)]
pub struct CashInDto {
    /// The ledger transaction (`tx_…`).
    pub transaction_id: String,
    /// Always `cash_in`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// Always `completed`: a cash-in happens at once.
    pub state: &'static str,
    /// `test` or `live`.
    pub mode: &'static str,
    /// The customer credited.
    pub customer_msisdn: String,
    /// What the customer received.
    #[schema(value_type = f64)]
    pub amount: Box<RawValue>,
    /// What the float paid on top (from configuration; usually zero).
    #[schema(value_type = f64)]
    pub fee: Box<RawValue>,
    /// ISO 4217.
    pub currency: String,
    /// The agent's float balance after it.
    #[schema(value_type = f64)]
    pub float_balance: Box<RawValue>,
    /// RFC 3339 UTC.
    pub created_at: String,
}

impl From<&CashIn> for CashInDto {
    fn from(c: &CashIn) -> Self {
        CashInDto {
            transaction_id: c.transaction_id.to_string(),
            kind: "cash_in",
            state: "completed",
            mode: c.mode.as_str(),
            customer_msisdn: c.customer_msisdn.to_string(),
            amount: money(c.amount, c.currency),
            fee: money(c.fee, c.currency),
            currency: c.currency.to_string(),
            float_balance: money(c.float_balance, c.currency),
            created_at: c.created_at.to_rfc3339(),
        }
    }
}

/// A cash-out: a prompt to the customer, with the states of a charge.
#[derive(Debug, Serialize, ToSchema)]
pub struct CashOutDto {
    /// `wd_…`.
    pub withdrawal_ref: String,
    /// `pending`, `authorised`, `completed`, `declined`, `expired`, `failed`.
    pub state: &'static str,
    /// `test` or `live`.
    pub mode: &'static str,
    /// The customer asked to approve it.
    pub customer_msisdn: String,
    /// What the agent hands over in cash (and the float receives).
    #[schema(value_type = f64)]
    pub amount: Box<RawValue>,
    /// Paid by the customer on top of the amount.
    #[schema(value_type = f64)]
    pub fee: Box<RawValue>,
    /// The agent's share of the fee, credited to the float.
    #[schema(value_type = f64)]
    pub agent_commission: Box<RawValue>,
    /// ISO 4217.
    pub currency: String,
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

impl From<&Charge> for CashOutDto {
    fn from(c: &Charge) -> Self {
        CashOutDto {
            withdrawal_ref: c.id.to_string(),
            state: c.state.as_str(),
            mode: c.mode.as_str(),
            customer_msisdn: c.payer_msisdn.to_string(),
            amount: money(c.amount, c.currency),
            fee: money(c.fee, c.currency),
            agent_commission: money(c.commission, c.currency),
            currency: c.currency.to_string(),
            failure_reason: c.failure_reason.map(|r| r.as_str()),
            transaction_id: c.transaction_id.as_ref().map(ToString::to_string),
            created_at: c.created_at.to_rfc3339(),
            updated_at: c.updated_at.to_rfc3339(),
            expires_at: c.expires_at.to_rfc3339(),
            completed_at: c.completed_at.map(|t| t.to_rfc3339()),
        }
    }
}

/// The fields of an Africa's Talking USSD callback (`POST /ussd`), as JSON or as a form.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UssdCallback {
    /// The gateway's session id (1–128 visible ASCII characters). Required.
    #[serde(rename = "sessionId")]
    #[schema(value_type = String, required = true, example = "ATUid_0f6bc1c1a8b3f5d2")]
    pub session_id: Option<String>,
    /// The dialled code.
    #[serde(rename = "serviceCode")]
    #[schema(example = "*384*1#")]
    pub service_code: Option<String>,
    /// The caller's number, international digits (a leading `+` is accepted). Required.
    #[serde(rename = "phoneNumber")]
    #[schema(value_type = String, required = true, example = "+254712345678")]
    pub phone_number: Option<String>,
    /// Every input of the session joined by `*` (empty or absent on the first request).
    #[schema(example = "1*254798765432")]
    pub text: Option<String>,
    /// The caller's network, if the gateway says.
    #[serde(rename = "networkCode")]
    #[schema(example = "63902")]
    pub network_code: Option<String>,
}

/// A configured identity document type.
#[derive(Debug, Serialize, ToSchema)]
pub struct IdTypeDto {
    /// The name used in requests, e.g. `national_id`.
    pub name: String,
    /// The regular expression an ID number must match in full (anchored).
    pub pattern: String,
    /// The KYC tier a wallet opened with this document gets.
    pub grants_tier: u8,
}

/// A KYC tier and its limits.
#[derive(Debug, Serialize, ToSchema)]
pub struct KycTierDto {
    /// Tier number; 0 is a wallet opened without an ID.
    pub tier: u8,
    /// Largest single movement.
    #[schema(value_type = f64)]
    pub per_transaction: Box<RawValue>,
    /// Largest total per local calendar day.
    #[schema(value_type = f64)]
    pub daily: Box<RawValue>,
    /// Largest wallet balance.
    #[schema(value_type = f64)]
    pub max_balance: Box<RawValue>,
    /// What a customer must present, for people.
    pub requirements: Vec<String>,
}

/// A fee band: the fee for amounts from `min` to `max` inclusive.
#[derive(Debug, Serialize, ToSchema)]
pub struct FeeBandDto {
    /// Smallest amount in the band.
    #[schema(value_type = f64)]
    pub min: Box<RawValue>,
    /// Largest amount in the band.
    #[schema(value_type = f64)]
    pub max: Box<RawValue>,
    /// The fee.
    #[schema(value_type = f64)]
    pub fee: Box<RawValue>,
    /// The part of the fee that goes to the agent (cash-out).
    #[schema(value_type = f64)]
    pub agent_commission: Box<RawValue>,
}

/// One operation's fees.
#[derive(Debug, Serialize, ToSchema)]
pub struct FeeScheduleDto {
    /// Who bears the fee: `payer` (pays amount + fee) or `payee` (receives amount − fee).
    pub paid_by: &'static str,
    /// Contiguous bands, ascending; amounts above the last band pay the last band's fee.
    pub bands: Vec<FeeBandDto>,
}

/// A served country's configuration.
#[derive(Debug, Serialize, ToSchema)]
pub struct CountryDto {
    /// ISO 3166-1 alpha-2.
    #[schema(example = "KE")]
    pub country: String,
    /// English name.
    #[schema(example = "Kenya")]
    pub name: String,
    /// E.164 country calling code, digits only.
    #[schema(example = "254")]
    pub dialling_code: String,
    /// Total digits of a number, the dialling code included.
    #[schema(example = 12)]
    pub msisdn_length: usize,
    /// ISO 4217 wallet currency.
    #[schema(example = "KES")]
    pub currency: String,
    /// ISO 4217 minor units of the currency.
    pub minor_units: u8,
    /// IANA time zone (daily limits follow its calendar day).
    #[schema(example = "Africa/Nairobi")]
    pub time_zone: String,
    /// The zone's fixed offset from UTC in minutes.
    #[schema(example = 180)]
    pub utc_offset_minutes: i32,
    /// Accepted identity documents.
    pub id_types: Vec<IdTypeDto>,
    /// Digits of a wallet PIN.
    pub pin_length: u8,
    /// Wrong PINs in a row after which the wallet locks.
    pub max_pin_attempts: u8,
    /// Largest single charge.
    #[schema(value_type = f64)]
    pub max_charge: Box<RawValue>,
    /// KYC tiers, ascending from 0.
    pub kyc_tiers: Vec<KycTierDto>,
    /// Fee schedules by operation (`charge`, `payout`, `p2p`, `cash_in`, `cash_out`,
    /// `payment_request`); an operation without a schedule is free.
    pub fees: BTreeMap<&'static str, FeeScheduleDto>,
}

impl From<&Country> for CountryDto {
    fn from(c: &Country) -> Self {
        let cur = c.currency;
        CountryDto {
            country: c.code.clone(),
            name: c.name.clone(),
            dialling_code: c.dialling_code.clone(),
            msisdn_length: c.msisdn_length,
            currency: cur.to_string(),
            minor_units: c.minor_units,
            time_zone: c.time_zone.clone(),
            utc_offset_minutes: c.utc_offset_minutes,
            id_types: c
                .id_types
                .iter()
                .map(|t| IdTypeDto { name: t.name.clone(), pattern: t.pattern.clone(), grants_tier: t.grants_tier })
                .collect(),
            pin_length: c.pin_length,
            max_pin_attempts: c.max_pin_attempts,
            max_charge: money(c.max_charge, cur),
            kyc_tiers: c
                .kyc_tiers
                .iter()
                .map(|t| KycTierDto {
                    tier: t.tier,
                    per_transaction: money(t.per_transaction, cur),
                    daily: money(t.daily, cur),
                    max_balance: money(t.max_balance, cur),
                    requirements: t.requirements.clone(),
                })
                .collect(),
            fees: c
                .fees
                .iter()
                .map(|(op, s)| {
                    let bands = s
                        .bands
                        .iter()
                        .map(|b| FeeBandDto {
                            min: money(b.min, cur),
                            max: money(b.max, cur),
                            fee: money(b.fee, cur),
                            agent_commission: money(b.agent_commission, cur),
                        })
                        .collect();
                    (op.as_str(), FeeScheduleDto { paid_by: s.paid_by.as_str(), bands })
                })
                .collect(),
        }
    }
}

/// Stored JSON text as a raw JSON value, emitted as written (numbers keep their form).
pub fn raw_json(bytes: &[u8]) -> Box<RawValue> {
    std::str::from_utf8(bytes)
        .ok()
        .and_then(|s| RawValue::from_string(s.to_owned()).ok())
        .unwrap_or_else(|| RawValue::from_string("{}".to_owned()).unwrap_or_default())
}

/// `POST /webhooks/endpoints` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EndpointCreateRequest {
    /// Where deliveries go: `https` in live mode (test mode also allows `http` and loopback).
    #[schema(example = "https://example.com/webhooks/malipo")]
    pub url: String,
    /// Event kinds to receive, or `["*"]` for every kind.
    #[schema(example = json!(["charge.completed", "charge.failed"]))]
    pub events: Vec<String>,
    /// Optional, at most 200 characters.
    pub description: Option<String>,
}

/// `POST /webhooks/endpoints/{endpoint_id}/rotate-secret` body: empty, or `{}`.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RotateSecretRequest {}

/// A webhook endpoint. `secret` appears only when the endpoint is created and at rotation.
#[derive(Debug, Serialize, ToSchema)]
pub struct EndpointDto {
    /// `we_…`.
    pub endpoint_id: String,
    /// Where deliveries go.
    pub url: String,
    /// The event kinds it receives (`["*"]`: every kind).
    pub events: Vec<String>,
    /// Optional description.
    pub description: Option<String>,
    /// The signing secret `whsec_…` (creation and rotation answers only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
    /// Whether deliveries are made.
    pub enabled: bool,
    /// Why it was disabled: `gone` (the receiver answered 410), `failing` (5 days of failures), `deleted`.
    pub disabled_reason: Option<String>,
    /// `test` or `live`.
    pub mode: &'static str,
    /// During a rotation: when the previous secret stops signing (RFC 3339 UTC).
    pub previous_secret_expires_at: Option<String>,
    /// Present and `true` on the answer to `DELETE`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub deleted: bool,
    /// RFC 3339 UTC.
    pub created_at: String,
    /// RFC 3339 UTC.
    pub updated_at: String,
}

impl From<&Endpoint> for EndpointDto {
    fn from(e: &Endpoint) -> Self {
        EndpointDto {
            endpoint_id: e.id.to_string(),
            url: e.url.clone(),
            events: e.events.to_list(),
            description: e.description.clone(),
            secret: None,
            enabled: e.enabled,
            disabled_reason: e.disabled_reason.clone(),
            mode: e.mode.as_str(),
            previous_secret_expires_at: e.previous_secret.as_ref().map(|(_, until)| until.to_rfc3339()),
            deleted: e.deleted_at.is_some(),
            created_at: e.created_at.to_rfc3339(),
            updated_at: e.updated_at.to_rfc3339(),
        }
    }
}

impl From<&EndpointWithSecret> for EndpointDto {
    fn from(e: &EndpointWithSecret) -> Self {
        EndpointDto { secret: Some(e.secret.clone()), ..EndpointDto::from(&e.endpoint) }
    }
}

/// An event, as kept for `GET /events` (at least 90 days).
#[derive(Debug, Serialize, ToSchema)]
pub struct EventDto {
    /// `evt_…` (the `webhook-id` of its deliveries).
    pub id: String,
    /// The kind, e.g. `charge.completed`.
    pub event: String,
    /// RFC 3339 UTC.
    pub created_at: String,
    /// `test` or `live`.
    pub mode: &'static str,
    /// The object's id (`ch_…`).
    pub object_id: String,
    /// The full object at the time of the event.
    #[schema(value_type = Object)]
    pub data: Box<RawValue>,
}

impl From<&Event> for EventDto {
    fn from(e: &Event) -> Self {
        EventDto {
            id: e.id.to_string(),
            event: e.kind.clone(),
            created_at: e.created_at.to_rfc3339(),
            mode: e.mode.as_str(),
            object_id: e.object_id.clone(),
            data: raw_json(&e.data),
        }
    }
}

/// One event to one endpoint.
#[derive(Debug, Serialize, ToSchema)]
pub struct DeliveryDto {
    /// `we_…`.
    pub endpoint_id: String,
    /// `pending`, `succeeded` or `failed`.
    pub state: &'static str,
    /// Attempts made so far.
    pub attempts: u32,
    /// When the next attempt is due (RFC 3339 UTC); null once settled.
    pub next_attempt_at: Option<String>,
    /// RFC 3339 UTC.
    pub created_at: String,
}

impl From<&Delivery> for DeliveryDto {
    fn from(d: &Delivery) -> Self {
        DeliveryDto {
            endpoint_id: d.endpoint_id.to_string(),
            state: d.state.as_str(),
            attempts: d.attempts,
            next_attempt_at: d.next_attempt_at.map(|t| t.to_rfc3339()),
            created_at: d.created_at.to_rfc3339(),
        }
    }
}

/// One HTTP attempt of a delivery.
#[derive(Debug, Serialize, ToSchema)]
pub struct AttemptDto {
    /// `we_…`.
    pub endpoint_id: String,
    /// RFC 3339 UTC.
    pub attempted_at: String,
    /// The receiver's HTTP status; null when no answer came.
    pub status: Option<u16>,
    /// Milliseconds until the answer or the failure.
    pub latency_ms: u32,
    /// What went wrong (timeout, refused connection, refused address, non-2xx status); null on success.
    pub error: Option<String>,
}

impl From<&Attempt> for AttemptDto {
    fn from(a: &Attempt) -> Self {
        AttemptDto {
            endpoint_id: a.endpoint_id.to_string(),
            attempted_at: a.attempted_at.to_rfc3339(),
            status: a.status,
            latency_ms: a.latency_ms,
            error: a.error.clone(),
        }
    }
}

/// An event with its deliveries and their attempts (`GET /events/{event_id}`).
#[derive(Debug, Serialize, ToSchema)]
pub struct EventDetailDto {
    /// `evt_…`.
    pub id: String,
    /// The kind, e.g. `charge.completed`.
    pub event: String,
    /// RFC 3339 UTC.
    pub created_at: String,
    /// `test` or `live`.
    pub mode: &'static str,
    /// The object's id (`ch_…`).
    pub object_id: String,
    /// The full object at the time of the event.
    #[schema(value_type = Object)]
    pub data: Box<RawValue>,
    /// One per endpoint it was queued for (and per redelivery), oldest first.
    pub deliveries: Vec<DeliveryDto>,
    /// Every attempt, oldest first.
    pub attempts: Vec<AttemptDto>,
}

impl From<&EventDetail> for EventDetailDto {
    fn from(d: &EventDetail) -> Self {
        let e = EventDto::from(&d.event);
        EventDetailDto {
            id: e.id,
            event: e.event,
            created_at: e.created_at,
            mode: e.mode,
            object_id: e.object_id,
            data: e.data,
            deliveries: d.deliveries.iter().map(DeliveryDto::from).collect(),
            attempts: d.attempts.iter().map(AttemptDto::from).collect(),
        }
    }
}

/// `POST /events/{event_id}/redeliver` body (may be empty).
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RedeliverRequest {
    /// Only this endpoint; otherwise every enabled endpoint subscribed to the event's kind.
    pub endpoint_id: Option<String>,
}

/// What a redelivery queued.
#[derive(Debug, Serialize, ToSchema)]
pub struct RedeliveryDto {
    /// `evt_…`.
    pub event_id: String,
    /// The endpoints it was queued for.
    pub endpoint_ids: Vec<String>,
}

impl From<&Redelivery> for RedeliveryDto {
    fn from(r: &Redelivery) -> Self {
        RedeliveryDto { event_id: r.event_id.to_string(), endpoint_ids: r.endpoint_ids.iter().map(ToString::to_string).collect() }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use malipo_core::{AccountId, Mode, Msisdn, Timestamp, TransactionId};
    use malipo_countries::Countries;
    use malipo_ledger::{Account, AccountKind, JournalKind, Posting};
    use malipo_service::{Wallet, WalletState};

    const TWO_COUNTRIES: &str = r#"
version = 1

[[countries]]
code = "KE"
name = "Kenya"
dialling_code = "254"
msisdn_length = 12
currency = "KES"
minor_units = 2
time_zone = "Africa/Nairobi"
utc_offset_minutes = 180
pin_length = 4
max_pin_attempts = 3
max_charge = "250000"

[[countries.id_types]]
name = "national_id"
pattern = '^[0-9]{7,8}$'
grants_tier = 1

[[countries.kyc_tiers]]
tier = 0
per_transaction = "5000"
daily = "10000"
max_balance = "20000"
requirements = ["registered SIM card"]

[[countries.kyc_tiers]]
tier = 1
per_transaction = "250000"
daily = "500000"
max_balance = "500000"
requirements = ["national ID"]

[countries.fees.charge]
paid_by = "payee"
bands = [
  { min = "0.01",   max = "200",    fee = "0" },
  { min = "200.01", max = "250000", fee = "2.5" },
]

[countries.fees.cash_out]
paid_by = "payer"
bands = [
  { min = "0.01",   max = "100",    fee = "11", agent_commission = "7" },
  { min = "100.01", max = "250000", fee = "29", agent_commission = "19.5" },
]

[[countries]]
code = "UG"
name = "Uganda"
dialling_code = "256"
msisdn_length = 12
currency = "UGX"
minor_units = 0
time_zone = "Africa/Kampala"
utc_offset_minutes = 180
pin_length = 5
max_pin_attempts = 4
max_charge = "5000000"
id_types = []
fees = {}

[[countries.kyc_tiers]]
tier = 0
per_transaction = "5000000"
daily = "7000000"
max_balance = "10000000"
requirements = []
"#;

    #[test]
    fn a_country_renders_every_field_with_two_decimal_amounts() {
        let countries = Countries::from_toml_str(TWO_COUNTRIES).unwrap();
        let ke = countries.get("KE").unwrap();
        let json = serde_json::to_string(&CountryDto::from(ke)).unwrap();
        assert!(json.starts_with(r#"{"country":"KE","name":"Kenya","dialling_code":"254","msisdn_length":12,"currency":"KES","minor_units":2,"time_zone":"Africa/Nairobi","utc_offset_minutes":180,"id_types":[{"name":"national_id","pattern":"^[0-9]{7,8}$","grants_tier":1}],"pin_length":4,"max_pin_attempts":3,"max_charge":250000.00,"#), "{json}");
        assert!(json.contains(r#""kyc_tiers":[{"tier":0,"per_transaction":5000.00,"daily":10000.00,"max_balance":20000.00,"requirements":["registered SIM card"]},{"tier":1,"#), "{json}");
        assert!(json.contains(r#""fees":{"cash_out":{"paid_by":"payer","bands":[{"min":0.01,"max":100.00,"fee":11.00,"agent_commission":7.00},{"min":100.01,"max":250000.00,"fee":29.00,"agent_commission":19.50}]},"charge":{"paid_by":"payee","bands":[{"min":0.01,"max":200.00,"fee":0.00,"agent_commission":0.00},{"min":200.01,"max":250000.00,"fee":2.50,"agent_commission":0.00}]}}}"#), "{json}");
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v["fees"].as_object().unwrap().len(), 2, "one key per configured operation");

        let ug = countries.get("UG").unwrap();
        let json = serde_json::to_string(&CountryDto::from(ug)).unwrap();
        assert!(json.contains(r#""currency":"UGX","minor_units":0,"#), "{json}");
        assert!(json.contains(r#""max_charge":5000000.00,"kyc_tiers":[{"tier":0,"per_transaction":5000000.00,"daily":7000000.00,"max_balance":10000000.00,"requirements":[]}],"fees":{}}"#), "{json}");
        assert!(json.contains(r#""id_types":[],"pin_length":5,"max_pin_attempts":4,"#), "{json}");
    }

    #[test]
    fn every_builtin_amount_has_exactly_two_decimals() {
        let countries = Countries::builtin().unwrap();
        let two = |v: &RawValue| {
            let t = v.get();
            let (int, frac) = t.split_once('.').unwrap_or((t, ""));
            assert!(frac.len() == 2 && !int.is_empty() && int.bytes().all(|b| b.is_ascii_digit()), "{t}");
        };
        for c in countries.all() {
            let dto = CountryDto::from(c);
            two(&dto.max_charge);
            for t in &dto.kyc_tiers {
                [&t.per_transaction, &t.daily, &t.max_balance].into_iter().for_each(|v| two(v));
            }
            for s in dto.fees.values() {
                for b in &s.bands {
                    [&b.min, &b.max, &b.fee, &b.agent_commission].into_iter().for_each(|v| two(v));
                }
            }
        }
    }

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
        use crate::extract::parse_json;
        assert!(matches!(parse_json::<SetPinRequest>(br#"{"new_pin":4071}"#), Err(ApiError::InvalidRequest(_))));
        assert!(matches!(parse_json::<SetPinRequest>(br#"{"new_pin":"4071","pin":"1"}"#), Err(ApiError::Fields(_))));
        let p = parse_json::<SetPinRequest>(br#"{"new_pin":"4071","current_pin":"9305"}"#).unwrap().value;
        assert_eq!((p.new_pin.as_str(), p.current_pin.as_deref()), ("4071", Some("9305")));
        assert!(matches!(
            parse_json::<RaiseKycRequest>(br#"{"tier":256,"id_type":"a","id_number":"b"}"#),
            Err(ApiError::InvalidRequest(_))
        ));
        assert!(matches!(parse_json::<WalletReasonRequest>(br#"{}"#), Err(ApiError::Fields(_))));
        let r = parse_json::<AgentCashRequest>(br#"{"customer_msisdn":"254712345678","amount":"500.00"}"#).unwrap().value;
        assert_eq!(amount_text("amount", &r.amount).unwrap(), "500.00");
        let r = parse_json::<AgentCashRequest>(br#"{"customer_msisdn":"254712345678","amount":500.5}"#).unwrap().value;
        assert_eq!(amount_text("amount", &r.amount).unwrap(), "500.5");
    }
}
