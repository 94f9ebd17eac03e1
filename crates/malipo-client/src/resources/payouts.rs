//! Payouts (contract section 5): money paid from the merchant's payout account to a wallet.

use std::time::{Duration, Instant};

use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use crate::client::{new_key, Call};
use crate::operations as ops;
use crate::{Client, Error, List, Mode};

crate::names::names! {
    /// Why a payout failed.
    PayoutFailure {
        PayeeNotFound = "payee_not_found": "the number has no wallet.",
        WalletLocked = "wallet_locked": "the payee's wallet is locked.",
        LimitExceeded = "limit_exceeded": "the payee's KYC tier or balance limit would be exceeded.",
        BulkPayoutRejected = "bulk_payout_rejected": "its batch was rejected by the checker.",
        ProcessingError = "processing_error": "posting failed.",
    }
}

/// How often [`Payouts::wait`] reads the payout.
const POLL: Duration = Duration::from_millis(250);

/// A payout's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum PayoutState {
    /// Reserved on the payout account; not paid yet.
    Pending,
    /// The payee's wallet was credited (final).
    Completed,
    /// Not paid; the reservation released (final).
    Failed,
}

impl PayoutState {
    /// Whether nothing moves out of this state (`completed` or `failed`).
    pub fn is_final(self) -> bool {
        self != PayoutState::Pending
    }

    /// The state as the API writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            PayoutState::Pending => "pending",
            PayoutState::Completed => "completed",
            PayoutState::Failed => "failed",
        }
    }
}

/// A payout.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[non_exhaustive]
pub struct Payout {
    /// Its id, `po_…`.
    pub payout_ref: String,
    /// Where it is.
    pub state: PayoutState,
    /// Test or live.
    pub mode: Mode,
    /// The payee's number.
    pub payee_msisdn: String,
    /// The amount paid, in major units.
    #[serde(with = "crate::amount")]
    pub amount: Decimal,
    /// The currency (ISO 4217).
    pub currency: String,
    /// The fee the merchant pays on top of the amount.
    #[serde(with = "crate::amount")]
    pub fee: Decimal,
    /// The integrator's reference.
    pub reference: String,
    /// The text the payee sees.
    pub narration: Option<String>,
    /// Why it failed.
    pub failure_reason: Option<PayoutFailure>,
    /// The ledger transaction of a completed payout.
    pub transaction_id: Option<String>,
    /// The bulk payout it is an item of.
    pub bulk_payout_id: Option<String>,
    /// How much of it has been reversed.
    #[serde(with = "crate::amount")]
    pub amount_reversed: Decimal,
    /// RFC 3339, UTC.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    /// RFC 3339, UTC.
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
    /// When it completed (RFC 3339, UTC).
    #[serde(default, with = "time::serde::rfc3339::option")]
    pub completed_at: Option<OffsetDateTime>,
}

/// A payout to create (`POST /payouts`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct NewPayout {
    /// The payee's number, international digits without `+`.
    pub payee_msisdn: String,
    /// The amount in major units (sent as a JSON number with its exact text).
    #[serde(with = "crate::amount")]
    pub amount: Decimal,
    /// The integrator's reference.
    pub reference: String,
    /// Must equal the payout account's currency when given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub currency: Option<String>,
    /// The text the payee sees.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub narration: Option<String>,
}

impl NewPayout {
    /// A payout of `amount` to `payee_msisdn` under `reference`.
    pub fn new(payee_msisdn: impl Into<String>, amount: Decimal, reference: impl Into<String>) -> Self {
        NewPayout { payee_msisdn: payee_msisdn.into(), amount, reference: reference.into(), currency: None, narration: None }
    }

    /// With the text the payee sees.
    pub fn narration(mut self, text: impl Into<String>) -> Self {
        self.narration = Some(text.into());
        self
    }
}

/// Which payouts a list holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PayoutFilter {
    /// Only payouts in this state.
    pub state: Option<PayoutState>,
    /// Created at or after (RFC 3339).
    pub from: Option<String>,
    /// Created before (RFC 3339).
    pub to: Option<String>,
    /// Only the items of this bulk payout.
    pub bulk_payout_id: Option<String>,
}

/// The payouts of the client's merchant: `client.payouts()`.
#[derive(Debug, Clone, Copy)]
pub struct Payouts<'a> {
    pub(crate) client: &'a Client,
}

impl Payouts<'_> {
    /// Pays a wallet (`createPayout`) under a new idempotency key: the amount and fee are
    /// reserved at once and the payout answered `pending`.
    ///
    /// # Errors
    /// As every call ([`Error`]); `insufficient_funds` when the payout account is short.
    pub async fn create(&self, payout: &NewPayout) -> Result<Payout, Error> {
        self.create_with_key(payout, &new_key()).await
    }

    /// [`Payouts::create`] under the caller's idempotency key.
    ///
    /// # Errors
    /// As [`Payouts::create`]; `idempotency_key_reused`.
    pub async fn create_with_key(&self, payout: &NewPayout, key: &str) -> Result<Payout, Error> {
        self.client.json(&Call::json_body(ops::CREATE_PAYOUT, &[], Some(key), payout)?).await
    }

    /// One payout (`getPayout`).
    ///
    /// # Errors
    /// As every call; `not_found`.
    pub async fn get(&self, payout_ref: &str) -> Result<Payout, Error> {
        self.client.json(&Call::to(ops::GET_PAYOUT, &[payout_ref])).await
    }

    /// Reads the payout (`po_…`, the `payout_ref`) every 250 ms until it is final (`completed`
    /// or `failed`) or `timeout` has passed since the call, and answers the last state read (so
    /// a payout still `pending` when the time is up is answered as it was then, not as an error).
    ///
    /// # Errors
    /// As [`Payouts::get`], when a read fails (after the client's retries).
    pub async fn wait(&self, payout_ref: &str, timeout: Duration) -> Result<Payout, Error> {
        let deadline = Instant::now() + timeout;
        loop {
            let payout = self.get(payout_ref).await?;
            let left = deadline.saturating_duration_since(Instant::now());
            if payout.state.is_final() || left.is_zero() {
                return Ok(payout);
            }
            tokio::time::sleep(POLL.min(left)).await;
        }
    }

    /// The payouts, newest first (`listPayouts`).
    pub fn list(&self, filter: PayoutFilter) -> List<Payout> {
        let call = Call::to(ops::LIST_PAYOUTS, &[])
            .query("state", filter.state.map(PayoutState::as_str))
            .query("from", filter.from)
            .query("to", filter.to)
            .query("bulk_payout_id", filter.bulk_payout_id);
        List::new(self.client, call)
    }
}
