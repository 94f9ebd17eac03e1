//! Agents (contract section 11): cash put into a customer's wallet and taken out of it at an
//! agent, against the agent's float.

use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use crate::client::{new_key, Call};
use crate::operations as ops;
use crate::{Balance, ChargeState, Client, Error, Mode, TransactionKind};

/// A cash-in or a cash-out to make (`POST /agents/cash-in`, `POST /agents/cash-out`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct AgentCash {
    /// The customer's number, international digits without `+`.
    pub customer_msisdn: String,
    /// The amount in major units (sent as a JSON number with its exact text).
    #[serde(with = "crate::amount")]
    pub amount: Decimal,
}

impl AgentCash {
    /// `amount` for the customer `customer_msisdn`.
    pub fn new(customer_msisdn: impl Into<String>, amount: Decimal) -> Self {
        AgentCash { customer_msisdn: customer_msisdn.into(), amount }
    }
}

crate::names::names! {
    /// A cash-in's state (a cash-in is posted at once).
    CashInState {
        Completed = "completed": "posted.",
    }
}

/// A completed cash-in: the agent's float moved to the customer's wallet at once.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[non_exhaustive]
pub struct CashIn {
    /// The ledger transaction, `tx_…`.
    pub transaction_id: String,
    /// `cash_in`.
    #[serde(rename = "type")]
    pub kind: TransactionKind,
    /// `completed`.
    pub state: CashInState,
    /// Test or live.
    pub mode: Mode,
    /// The customer credited.
    pub customer_msisdn: String,
    /// The amount credited.
    #[serde(with = "crate::amount")]
    pub amount: Decimal,
    /// The fee.
    #[serde(with = "crate::amount")]
    pub fee: Decimal,
    /// The currency (ISO 4217).
    pub currency: String,
    /// The agent's float right after it.
    #[serde(with = "crate::amount")]
    pub float_balance: Decimal,
    /// RFC 3339, UTC.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}

/// A cash-out (withdrawal): a prompt to the customer, states as a charge's; on approval the
/// wallet pays the agent's float.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[non_exhaustive]
pub struct CashOut {
    /// Its id, `wd_…`.
    pub withdrawal_ref: String,
    /// Where it is (the states of a charge).
    pub state: ChargeState,
    /// Test or live.
    pub mode: Mode,
    /// The customer asked to approve it.
    pub customer_msisdn: String,
    /// The cash handed over.
    #[serde(with = "crate::amount")]
    pub amount: Decimal,
    /// The customer's fee.
    #[serde(with = "crate::amount")]
    pub fee: Decimal,
    /// The agent's share of the fee.
    #[serde(with = "crate::amount")]
    pub agent_commission: Decimal,
    /// The currency (ISO 4217).
    pub currency: String,
    /// Why it did not complete.
    pub failure_reason: Option<crate::ChargeFailure>,
    /// The ledger transaction of a completed cash-out.
    pub transaction_id: Option<String>,
    /// RFC 3339, UTC.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    /// RFC 3339, UTC.
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
    /// When the prompt expires (RFC 3339, UTC).
    #[serde(with = "time::serde::rfc3339")]
    pub expires_at: OffsetDateTime,
    /// When it completed (RFC 3339, UTC).
    #[serde(default, with = "time::serde::rfc3339::option")]
    pub completed_at: Option<OffsetDateTime>,
}

/// The agent's side: `client.agents()` (scope `agent`).
#[derive(Debug, Clone, Copy)]
pub struct Agents<'a> {
    pub(crate) client: &'a Client,
}

impl Client {
    /// Agents: cash-in, cash-out and the float (an agent's key pair).
    pub fn agents(&self) -> Agents<'_> {
        Agents { client: self }
    }
}

impl Agents<'_> {
    /// Credits a customer's wallet from the agent's float at once (`createCashIn`) under a new
    /// idempotency key.
    ///
    /// # Errors
    /// As every call ([`Error`]); `insufficient_funds` (the float), `limit_exceeded` (the
    /// customer's KYC limits).
    pub async fn cash_in(&self, cash: &AgentCash) -> Result<CashIn, Error> {
        self.cash_in_with_key(cash, &new_key()).await
    }

    /// [`Agents::cash_in`] under the caller's idempotency key.
    ///
    /// # Errors
    /// As [`Agents::cash_in`]; `idempotency_key_reused`.
    pub async fn cash_in_with_key(&self, cash: &AgentCash, key: &str) -> Result<CashIn, Error> {
        self.client.json(&Call::json_body(ops::CREATE_CASH_IN, &[], Some(key), cash)?).await
    }

    /// Asks the customer to approve a withdrawal (`createCashOut`) under a new idempotency key:
    /// answered `pending`; follow it with [`Agents::cash_out`].
    ///
    /// # Errors
    /// As every call.
    pub async fn create_cash_out(&self, cash: &AgentCash) -> Result<CashOut, Error> {
        self.create_cash_out_with_key(cash, &new_key()).await
    }

    /// [`Agents::create_cash_out`] under the caller's idempotency key.
    ///
    /// # Errors
    /// As [`Agents::create_cash_out`]; `idempotency_key_reused`.
    pub async fn create_cash_out_with_key(&self, cash: &AgentCash, key: &str) -> Result<CashOut, Error> {
        self.client.json(&Call::json_body(ops::CREATE_CASH_OUT, &[], Some(key), cash)?).await
    }

    /// One cash-out (`getCashOut`).
    ///
    /// # Errors
    /// As every call; `not_found`.
    pub async fn cash_out(&self, withdrawal_ref: &str) -> Result<CashOut, Error> {
        self.client.json(&Call::to(ops::GET_CASH_OUT, &[withdrawal_ref])).await
    }

    /// The agent's float (`getAgentFloat`).
    ///
    /// # Errors
    /// As every call.
    pub async fn float(&self) -> Result<Balance, Error> {
        self.client.json(&Call::to(ops::GET_AGENT_FLOAT, &[])).await
    }
}
