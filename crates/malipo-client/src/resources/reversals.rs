//! Reversals (contract section 8): all or part of a completed charge or payout given back.

use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use crate::client::{new_key, Call};
use crate::operations as ops;
use crate::{Client, Error, List, Mode};

crate::names::names! {
    /// A reversal's state (a reversal is posted when created).
    ReversalState {
        Completed = "completed": "posted.",
    }
}

/// A reversal (always `completed`: it is posted when created).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[non_exhaustive]
pub struct Reversal {
    /// Its id, `rv_…`.
    pub reversal_id: String,
    /// `completed`.
    pub state: ReversalState,
    /// Test or live.
    pub mode: Mode,
    /// The reversed charge, for a charge reversal.
    pub charge_ref: Option<String>,
    /// The reversed payout, for a payout reversal.
    pub payout_ref: Option<String>,
    /// The reversed ledger transaction, for a transaction reversal.
    pub original_transaction_id: Option<String>,
    /// The amount given back.
    #[serde(with = "crate::amount")]
    pub amount: Decimal,
    /// The fee given back with it, in proportion.
    #[serde(with = "crate::amount")]
    pub fee_reversed: Decimal,
    /// The currency (ISO 4217).
    pub currency: String,
    /// Why.
    pub reason: String,
    /// Its own ledger transaction.
    pub transaction_id: Option<String>,
    /// RFC 3339, UTC.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}

/// What to reverse.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Original {
    /// A completed charge.
    Charge(String),
    /// A completed payout.
    Payout(String),
    /// A ledger transaction.
    Transaction(String),
}

/// A reversal to create (`POST /reversals`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct NewReversal {
    /// What is reversed.
    pub original: Original,
    /// How much (all of what is left when `None`).
    pub amount: Option<Decimal>,
    /// Why (required).
    pub reason: String,
}

impl NewReversal {
    /// A reversal of all of `original` that is left, for `reason`.
    pub fn new(original: Original, reason: impl Into<String>) -> Self {
        NewReversal { original, amount: None, reason: reason.into() }
    }

    /// Only `amount` of it.
    pub fn amount(mut self, amount: Decimal) -> Self {
        self.amount = Some(amount);
        self
    }
}

#[derive(Serialize)]
struct Body<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    charge_ref: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    payout_ref: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    transaction_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none", with = "crate::amount::option")]
    amount: Option<Decimal>,
    reason: &'a str,
}

/// The reversals of the client's merchant: `client.reversals()`.
#[derive(Debug, Clone, Copy)]
pub struct Reversals<'a> {
    pub(crate) client: &'a Client,
}

impl Reversals<'_> {
    /// Gives back all or part of a completed charge or payout (`createReversal`) under a new
    /// idempotency key.
    ///
    /// # Errors
    /// As every call ([`Error`]); `reversal_exceeds_original`, `invalid_state` (not completed),
    /// `insufficient_funds`.
    pub async fn create(&self, reversal: &NewReversal) -> Result<Reversal, Error> {
        self.create_with_key(reversal, &new_key()).await
    }

    /// [`Reversals::create`] under the caller's idempotency key.
    ///
    /// # Errors
    /// As [`Reversals::create`]; `idempotency_key_reused`.
    pub async fn create_with_key(&self, reversal: &NewReversal, key: &str) -> Result<Reversal, Error> {
        let (charge_ref, payout_ref, transaction_id) = match &reversal.original {
            Original::Charge(r) => (Some(r.as_str()), None, None),
            Original::Payout(r) => (None, Some(r.as_str()), None),
            Original::Transaction(r) => (None, None, Some(r.as_str())),
        };
        let body = Body { charge_ref, payout_ref, transaction_id, amount: reversal.amount, reason: &reversal.reason };
        self.client.json(&Call::json_body(ops::CREATE_REVERSAL, &[], Some(key), &body)?).await
    }

    /// One reversal (`getReversal`).
    ///
    /// # Errors
    /// As every call; `not_found`.
    pub async fn get(&self, reversal_id: &str) -> Result<Reversal, Error> {
        self.client.json(&Call::to(ops::GET_REVERSAL, &[reversal_id])).await
    }

    /// The reversals, newest first (`listReversals`).
    pub fn list(&self) -> List<Reversal> {
        List::new(self.client, Call::to(ops::LIST_REVERSALS, &[]))
    }
}
