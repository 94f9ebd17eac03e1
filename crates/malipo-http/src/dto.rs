//! The wire shapes of the API (contract sections 2–4, 10, 11): serde + OpenAPI, converted from
//! domain types here and nowhere else.

use malipo_charges::Charge;
use malipo_core::{Currency, MinorUnit};
use malipo_service::{Balance, IssuedToken, WalletView};
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

/// `GET /partner/balance` response.
#[derive(Debug, Serialize, ToSchema)]
pub struct BalanceDto {
    /// `collection` or `payout`.
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
    /// Used today.
    #[schema(value_type = f64)]
    pub daily_used: Box<RawValue>,
    /// Largest balance.
    #[schema(value_type = f64)]
    pub max_balance: Box<RawValue>,
}

/// A wallet.
#[derive(Debug, Serialize, ToSchema)]
pub struct WalletDto {
    /// The number.
    pub msisdn: String,
    /// `test` or `live`.
    pub mode: &'static str,
    /// `active` or `locked`.
    pub state: &'static str,
    /// KYC tier.
    pub kyc_tier: u8,
    /// ISO 4217.
    pub currency: String,
    /// Balance.
    #[schema(value_type = f64)]
    pub balance: Box<RawValue>,
    /// Spendable: balance less reservations.
    #[schema(value_type = f64)]
    pub available: Box<RawValue>,
    /// The tier's limits.
    pub limits: Option<WalletLimitsDto>,
    /// Whether a PIN is set.
    pub pin_set: bool,
    /// RFC 3339 UTC.
    pub created_at: String,
}

impl WalletDto {
    /// From a wallet, its account and its country's tier.
    pub fn new(view: &WalletView, tier: Option<&malipo_countries::KycTier>) -> Self {
        let c = view.wallet.currency;
        WalletDto {
            msisdn: view.wallet.msisdn.to_string(),
            mode: view.wallet.mode.as_str(),
            state: view.wallet.state.as_str(),
            kyc_tier: view.wallet.kyc_tier,
            currency: c.to_string(),
            balance: money(view.account.balance, c),
            available: money(view.account.available(), c),
            limits: tier.map(|t| WalletLimitsDto {
                per_transaction: money(t.per_transaction, c),
                daily: money(t.daily, c),
                daily_used: money(MinorUnit::ZERO, c),
                max_balance: money(t.max_balance, c),
            }),
            pin_set: view.wallet.pin_hash.is_some(),
            created_at: view.wallet.created_at.to_rfc3339(),
        }
    }
}
