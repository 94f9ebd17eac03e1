//! An agent's cash-in or cash-out (`POST /agents/cash-in`, `POST /agents/cash-out`), parsed.

use malipo_core::{MinorUnit, Msisdn};

use super::context::{checked, msisdn, Command, ParseContext};
use crate::error::ServiceError;
use crate::validate::check_amount;

/// The fields of a cash-in or cash-out as received (the amount as its exact decimal text).
#[derive(Clone, Debug, Default)]
pub struct NewAgentCash {
    /// The customer's number.
    pub customer_msisdn: String,
    /// Decimal text in major units.
    pub amount: String,
}

/// A cash-in or cash-out to make, parsed from [`NewAgentCash`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct AgentCash {
    /// The customer, a number of a served country (whose currency the use case compares with
    /// the agent's).
    pub customer: Msisdn,
    /// In the agent's currency.
    pub amount: MinorUnit,
}

impl Command for AgentCash {
    type Raw = NewAgentCash;

    /// # Errors
    /// [`ServiceError::Validation`]: `customer_msisdn`, `amount`.
    fn parse(new: &NewAgentCash, ctx: &ParseContext<'_>) -> Result<Self, ServiceError> {
        let currency = ctx.home()?.currency;
        let mut errors = Vec::new();
        let customer = msisdn(ctx.countries(), "customer_msisdn", &new.customer_msisdn, &mut errors);
        let amount = check_amount("amount", &new.amount, currency, &mut errors);
        checked(errors, customer.zip(amount).map(|((customer, _), amount)| AgentCash { customer, amount }))
    }
}
