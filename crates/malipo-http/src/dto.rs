//! The wire shapes of the API (contract sections 2–4, 10–12): serde + OpenAPI, converted from
//! domain types here and nowhere else.

use malipo_charges::Charge;
use malipo_core::{Currency, MinorUnit};
use malipo_service::{Balance, EndpointWithSecret, EventDetail, IssuedToken, Redelivery, WalletView};
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
