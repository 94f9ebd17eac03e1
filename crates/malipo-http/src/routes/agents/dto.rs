//! The wire shapes of the Agents group (contract section 11).

use malipo_charges::Charge;
use malipo_service::{CashIn, NewAgentCash};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use utoipa::ToSchema;

use crate::problem::ApiError;
use crate::schema::Msisdn;
use crate::wire::{amount_text, money, time, DecimalAmount};

/// `POST /agents/cash-in` and `POST /agents/cash-out` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentCashRequest {
    /// The customer's number (a wallet in the agent's country).
    #[schema(value_type = Msisdn)]
    pub customer_msisdn: String,
    /// Amount in major units: a JSON number or numeric string.
    #[schema(value_type = DecimalAmount, example = "500.00")]
    pub amount: Box<RawValue>,
}

impl AgentCashRequest {
    /// The use case's raw input.
    ///
    /// # Errors
    /// 400 when the amount is neither a number nor a string.
    pub fn into_new(self) -> Result<NewAgentCash, ApiError> {
        Ok(NewAgentCash { customer_msisdn: self.customer_msisdn, amount: amount_text("amount", &self.amount)? })
    }
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
            created_at: time(c.created_at),
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
            created_at: time(c.created_at),
            updated_at: time(c.updated_at),
            expires_at: time(c.expires_at),
            completed_at: c.completed_at.map(time),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use crate::extract::parse_json;
    use crate::wire::amount_text;

    #[test]
    fn the_amount_is_a_number_or_a_numeric_string() {
        let r = parse_json::<AgentCashRequest>(br#"{"customer_msisdn":"254712345678","amount":"500.00"}"#).unwrap().value;
        assert_eq!(amount_text("amount", &r.amount).unwrap(), "500.00");
        let r = parse_json::<AgentCashRequest>(br#"{"customer_msisdn":"254712345678","amount":500.5}"#).unwrap().value;
        assert_eq!(amount_text("amount", &r.amount).unwrap(), "500.5");
    }
}
