//! Charges (contract section 3): a payment prompt pushed to a customer's phone.

use std::time::{Duration, Instant};

use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use crate::client::{new_key, Call};
use crate::operations as ops;
use crate::{Client, Error, List, Mode};

crate::names::names! {
    /// Why a charge (or an agent's cash-out) failed, was declined or expired.
    ChargeFailure {
        DeclinedByCustomer = "declined_by_customer": "the payer declined the prompt.",
        PinAttemptsExceeded = "pin_attempts_exceeded": "too many wrong PINs; the wallet is locked.",
        Expired = "expired": "no answer within the charge's time to live.",
        PayerNotFound = "payer_not_found": "the number has no wallet.",
        WalletLocked = "wallet_locked": "the payer's wallet is locked.",
        LimitExceeded = "limit_exceeded": "a KYC tier or daily limit would be exceeded.",
        InsufficientFunds = "insufficient_funds": "the payer's wallet is short.",
        ProcessingError = "processing_error": "posting failed.",
    }
}

/// How often [`Charges::wait`] reads the charge.
const POLL: Duration = Duration::from_millis(250);

/// A charge's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ChargeState {
    /// The customer's phone has the prompt.
    Pending,
    /// The customer approved; the funds are reserved.
    Authorised,
    /// The money moved (final).
    Completed,
    /// The customer declined, or entered a wrong PIN too often (final).
    Declined,
    /// Nobody answered in time (final).
    Expired,
    /// Refused (no wallet, a limit, the funds, a locked wallet) or failed to post (final).
    Failed,
}

impl ChargeState {
    /// Whether nothing moves out of this state.
    pub fn is_final(self) -> bool {
        !matches!(self, ChargeState::Pending | ChargeState::Authorised)
    }

    /// The state as the API writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            ChargeState::Pending => "pending",
            ChargeState::Authorised => "authorised",
            ChargeState::Completed => "completed",
            ChargeState::Declined => "declined",
            ChargeState::Expired => "expired",
            ChargeState::Failed => "failed",
        }
    }
}

/// A charge.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[non_exhaustive]
pub struct Charge {
    /// Its id, `ch_…`.
    pub charge_ref: String,
    /// Where it is.
    pub state: ChargeState,
    /// Test or live.
    pub mode: Mode,
    /// The paying customer's number.
    pub payer_msisdn: String,
    /// The amount charged, in major units.
    #[serde(with = "crate::amount")]
    pub amount: Decimal,
    /// The currency (ISO 4217).
    pub currency: String,
    /// The fee the merchant pays out of the amount.
    #[serde(with = "crate::amount")]
    pub fee: Decimal,
    /// How much of it has been reversed.
    #[serde(with = "crate::amount")]
    pub amount_reversed: Decimal,
    /// The integrator's reference.
    pub reference: String,
    /// The integrator's description.
    pub description: Option<String>,
    /// Why it failed, declined or expired.
    pub failure_reason: Option<ChargeFailure>,
    /// The ledger transaction of a completed charge.
    pub transaction_id: Option<String>,
    /// RFC 3339, UTC.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    /// RFC 3339, UTC.
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
    /// When a pending charge expires (RFC 3339, UTC).
    #[serde(default, with = "time::serde::rfc3339::option")]
    pub expires_at: Option<OffsetDateTime>,
    /// When it completed (RFC 3339, UTC).
    #[serde(default, with = "time::serde::rfc3339::option")]
    pub completed_at: Option<OffsetDateTime>,
}

/// A charge to create (`POST /partner/stk`); it serializes as the request body without the key
/// (the amount a JSON number with its exact text, `250.00`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct NewCharge {
    /// The customer's number, international digits without `+`.
    pub payer_msisdn: String,
    /// The amount in major units.
    #[serde(with = "crate::amount")]
    pub amount: Decimal,
    /// The integrator's reference (1 to 64 printable characters).
    pub reference: String,
    /// Must equal the merchant's collection currency when given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub currency: Option<String>,
    /// At most 100 characters.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

impl NewCharge {
    /// A charge of `amount` to `payer_msisdn` under `reference`.
    pub fn new(payer_msisdn: impl Into<String>, amount: Decimal, reference: impl Into<String>) -> Self {
        NewCharge { payer_msisdn: payer_msisdn.into(), amount, reference: reference.into(), currency: None, description: None }
    }

    /// With a description.
    pub fn description(mut self, text: impl Into<String>) -> Self {
        self.description = Some(text.into());
        self
    }

    /// With the currency stated (checked against the merchant's).
    pub fn currency(mut self, code: impl Into<String>) -> Self {
        self.currency = Some(code.into());
        self
    }
}

#[derive(Serialize)]
struct StkBody<'a> {
    payer_msisdn: &'a str,
    /// A JSON number with the decimal's exact text.
    #[serde(with = "crate::amount")]
    amount: Decimal,
    reference: &'a str,
    idem: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    currency: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a str>,
}

/// Which charges a list holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ChargeFilter {
    /// Only charges in this state.
    pub state: Option<ChargeState>,
    /// Created at or after (RFC 3339).
    pub from: Option<String>,
    /// Created before (RFC 3339).
    pub to: Option<String>,
}

impl ChargeFilter {
    /// Only charges in `state`.
    pub fn state(mut self, state: ChargeState) -> Self {
        self.state = Some(state);
        self
    }
}

/// The charges of the client's merchant: `client.charges()`.
#[derive(Debug, Clone, Copy)]
pub struct Charges<'a> {
    pub(crate) client: &'a Client,
}

impl Charges<'_> {
    /// Pushes a payment prompt to the customer's phone (`createCharge`) under a new idempotency
    /// key: the charge, `pending`. Retried calls carry the same key, so the customer is charged
    /// once whatever the network does.
    ///
    /// # Errors
    /// As every call ([`Error`]); `validation_failed`, `currency_mismatch` for the request.
    pub async fn create(&self, charge: &NewCharge) -> Result<Charge, Error> {
        self.create_with_key(charge, &new_key()).await
    }

    /// [`Charges::create`] under the caller's idempotency key (1 to 255 visible ASCII
    /// characters): a second call with the same key and charge answers the same charge.
    ///
    /// # Errors
    /// As [`Charges::create`]; `idempotency_key_reused` for the same key with another charge.
    pub async fn create_with_key(&self, charge: &NewCharge, key: &str) -> Result<Charge, Error> {
        let body = StkBody {
            payer_msisdn: &charge.payer_msisdn,
            amount: charge.amount,
            reference: &charge.reference,
            idem: key,
            currency: charge.currency.as_deref(),
            description: charge.description.as_deref(),
        };
        self.client.json(&Call::json_body(ops::CREATE_CHARGE, &[], Some(key), &body)?).await
    }

    /// One charge (`getCharge`).
    ///
    /// # Errors
    /// As every call; `not_found`.
    pub async fn get(&self, charge_ref: &str) -> Result<Charge, Error> {
        self.client.json(&Call::to(ops::GET_CHARGE, &[charge_ref])).await
    }

    /// The newest charge with the integrator's `reference` (`getChargeStatus`).
    ///
    /// # Errors
    /// As every call; `not_found`.
    pub async fn by_reference(&self, reference: &str) -> Result<Charge, Error> {
        self.client.json(&Call::to(ops::GET_CHARGE_STATUS, &[]).query("reference", Some(reference))).await
    }

    /// Reads the charge every 250 ms until it is final (`completed`, `declined`, `expired` or
    /// `failed`) or `timeout` has passed since the call, and answers the last state read (so a
    /// charge still `pending` when the time is up is answered as it was then, not as an error).
    ///
    /// # Errors
    /// As [`Charges::get`], when a read fails (after the client's retries).
    pub async fn wait(&self, charge_ref: &str, timeout: Duration) -> Result<Charge, Error> {
        let deadline = Instant::now() + timeout;
        loop {
            let charge = self.get(charge_ref).await?;
            let left = deadline.saturating_duration_since(Instant::now());
            if charge.state.is_final() || left.is_zero() {
                return Ok(charge);
            }
            tokio::time::sleep(POLL.min(left)).await;
        }
    }

    /// The charges, newest first (`listCharges`).
    pub fn list(&self, filter: ChargeFilter) -> List<Charge> {
        let call = Call::to(ops::LIST_CHARGES, &[])
            .query("state", filter.state.map(ChargeState::as_str))
            .query("from", filter.from)
            .query("to", filter.to);
        List::new(self.client, call)
    }
}
