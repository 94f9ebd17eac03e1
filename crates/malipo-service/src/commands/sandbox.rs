//! The sandbox's commands (`POST /sandbox/charges/{charge_ref}/simulate`, `POST
//! /sandbox/wallets`), parsed; test mode only.

use malipo_core::{ChargeRef, MinorUnit, MoneyError, Msisdn};

use super::context::{test_mode_only, Command, ParseContext};
use crate::error::ServiceError;

/// What the simulated customer does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SimulateAction {
    /// Approve with the right PIN (the charge is then processed to completion at once).
    Approve,
    /// Decline the prompt.
    Decline,
    /// Enter a wrong PIN (counts towards the lock).
    WrongPin,
    /// Let it expire now.
    Expire,
    /// Fail it: a pending charge with `insufficient_funds`, an authorised one with `processing_error`.
    Fail,
}

impl std::str::FromStr for SimulateAction {
    type Err = ();
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s {
            "approve" => SimulateAction::Approve,
            "decline" => SimulateAction::Decline,
            "wrong_pin" => SimulateAction::WrongPin,
            "expire" => SimulateAction::Expire,
            "fail" => SimulateAction::Fail,
            _ => return Err(()),
        })
    }
}

/// A simulated answer to a test charge, as received.
#[derive(Clone, Debug, Default)]
pub struct NewSimulation {
    /// The charge (`ch_…`).
    pub charge_ref: String,
    /// `approve`, `decline`, `wrong_pin`, `expire` or `fail`.
    pub action: String,
}

/// A simulated answer, parsed from [`NewSimulation`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Simulate {
    /// The charge.
    pub charge: ChargeRef,
    /// What the customer does.
    pub action: SimulateAction,
}

impl Command for Simulate {
    type Raw = NewSimulation;

    /// # Errors
    /// [`ServiceError::TestModeOnly`]; [`ServiceError::Validation`] of `action`; then
    /// [`ServiceError::NotFound`] for text that is no charge id.
    fn parse(new: &NewSimulation, ctx: &ParseContext<'_>) -> Result<Self, ServiceError> {
        test_mode_only(ctx)?;
        let action = new
            .action
            .parse::<SimulateAction>()
            .map_err(|()| ServiceError::field("action", "invalid_value", "action must be approve, decline, wrong_pin, expire or fail"))?;
        let charge = ChargeRef::parse(&new.charge_ref).map_err(|_| ServiceError::NotFound)?;
        Ok(Simulate { charge, action })
    }
}

/// A test wallet to create or update, as received (the balance as its exact decimal text).
#[derive(Clone, Debug, Default)]
pub struct NewSandboxWallet {
    /// The number.
    pub msisdn: String,
    /// The balance to set, in major units.
    pub balance: Option<String>,
    /// The KYC tier to set.
    pub kyc_tier: Option<u8>,
}

/// A test wallet to create or update, parsed from [`NewSandboxWallet`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SandboxWallet {
    /// The number, of a served country (the wallet's).
    pub msisdn: Msisdn,
    /// The balance to set, in the number's currency (zero empties the wallet).
    pub balance: Option<MinorUnit>,
    /// A tier of the number's country.
    pub kyc_tier: Option<u8>,
}

impl Command for SandboxWallet {
    type Raw = NewSandboxWallet;

    /// The first problem only, as the API has always answered: `msisdn`, else `balance`, else
    /// `kyc_tier`.
    ///
    /// # Errors
    /// [`ServiceError::TestModeOnly`]; [`ServiceError::Validation`].
    fn parse(new: &NewSandboxWallet, ctx: &ParseContext<'_>) -> Result<Self, ServiceError> {
        test_mode_only(ctx)?;
        let (msisdn, country) = ctx
            .countries()
            .parse_msisdn(&new.msisdn)
            .map_err(|e| ServiceError::field("msisdn", "invalid_msisdn", format!("msisdn {e}")))?;
        let balance = new
            .balance
            .as_deref()
            .map(|t| match country.currency.parse_amount(t) {
                Ok(v) => Ok(v),
                // A syntactically valid zero empties the wallet.
                Err(MoneyError::NotPositive) => Ok(MinorUnit::ZERO),
                Err(e) => Err(ServiceError::field("balance", "invalid_amount", format!("balance {e}"))),
            })
            .transpose()?;
        if let Some(t) = new.kyc_tier {
            if country.tier(t).is_none() {
                return Err(ServiceError::field("kyc_tier", "invalid_value", format!("{} has no KYC tier {t}", country.code)));
            }
        }
        Ok(SandboxWallet { msisdn, balance, kyc_tier: new.kyc_tier })
    }
}
