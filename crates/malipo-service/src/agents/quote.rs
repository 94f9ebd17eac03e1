//! What a cash-in would do, read before the agent confirms it (the console's confirmation page):
//! the customer's registered name, the amount and the fee, and whether the rules that the
//! cash-in itself applies (the wallet's state, its tier's limits, the float) would refuse it.
//! Advisory: [`Agents::cash_in`] checks the same rules again under the wallet's row lock.

use malipo_auth::Principal;
use malipo_core::{Currency, MinorUnit, Mode, Msisdn};
use malipo_countries::FeeOperation;

use super::{customer_country, Agents};
use crate::commands::AgentCash;
use crate::error::ServiceError;
use crate::limits::{limit_error, Limits};
use crate::ports::{read, WalletState};

/// A cash-in as it would be made now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CashInQuote {
    /// The customer.
    pub customer_msisdn: Msisdn,
    /// Their registered name (`None`: no name registered, or a test wallet opened on first use).
    pub customer_name: Option<String>,
    /// What the customer would receive.
    pub amount: MinorUnit,
    /// What the agent would pay on top.
    pub fee: MinorUnit,
    /// The currency.
    pub currency: Currency,
    /// What the cash-in would be refused for now (`wallet_locked`, `limit_exceeded`,
    /// `insufficient_funds`), if anything.
    pub refusal: Option<ServiceError>,
}

impl Agents<'_> {
    /// What [`Agents::cash_in`] of `command` would do now, in one read.
    ///
    /// # Errors
    /// [`ServiceError::CurrencyMismatch`], [`ServiceError::Validation`] (`customer_msisdn`
    /// without a wallet, in live mode), [`ServiceError::InvalidState`] (no float).
    pub fn quote_cash_in(&self, principal: &Principal, command: &AgentCash) -> Result<CashInQuote, ServiceError> {
        let currency = self.core.country(&principal.country)?.currency;
        let AgentCash { customer, amount } = command;
        let (country, amount) = (customer_country(self.core, currency, customer)?, *amount);
        let fee = country.fee(FeeOperation::CashIn, amount);
        read(self.core.store(), |tx| {
            let float = self.float_of(tx, principal)?;
            let mut quote = CashInQuote { customer_msisdn: customer.clone(), customer_name: None, amount, fee, currency, refusal: None };
            match tx.wallet(principal.mode, customer)? {
                // A test wallet is opened on first use, with the top tier and no name.
                None if principal.mode == Mode::Test => {}
                None => {
                    return Err(ServiceError::field("customer_msisdn", "wallet_not_found", "customer_msisdn has no Malipo wallet"));
                }
                Some(wallet) => {
                    let name = [wallet.first_name.as_deref(), wallet.last_name.as_deref()]
                        .into_iter()
                        .flatten()
                        .map(str::trim)
                        .filter(|n| !n.is_empty())
                        .collect::<Vec<_>>()
                        .join(" ");
                    quote.customer_name = Some(name).filter(|n| !n.is_empty());
                    if wallet.state == WalletState::Locked {
                        quote.refusal = Some(ServiceError::WalletLocked);
                    } else if let Err(breach) = Limits(self.core).check_credit(tx, &wallet, amount)? {
                        quote.refusal = Some(limit_error(breach, country));
                    }
                }
            }
            if quote.refusal.is_none() && float.available() < amount.checked_add(fee)? {
                quote.refusal = Some(ServiceError::InsufficientFunds);
            }
            Ok(quote)
        })
    }
}
