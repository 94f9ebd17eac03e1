//! Sandbox helpers (contract section 11): a customer's answer to a test charge simulated, test
//! wallets created or topped up. Test key pairs only: a live one is refused with
//! `test_mode_only`.

use rust_decimal::Decimal;
use serde::Serialize;

use crate::client::{new_key, Call};
use crate::operations as ops;
use crate::{Charge, Client, Error, Wallet};

/// What the simulated customer does with a pending test charge.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum SimulatedAction {
    /// Approves with the right PIN: the charge completes (or fails without the funds).
    Approve,
    /// Declines: `declined`, `declined_by_customer`.
    Decline,
    /// Enters a wrong PIN: still pending, until the country's last attempt locks the wallet
    /// and declines its prompts (`pin_attempts_exceeded`).
    WrongPin,
    /// Does not answer: `expired`.
    Expire,
    /// The payment fails: `failed`.
    Fail,
}

impl SimulatedAction {
    /// The action as the API writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            SimulatedAction::Approve => "approve",
            SimulatedAction::Decline => "decline",
            SimulatedAction::WrongPin => "wrong_pin",
            SimulatedAction::Expire => "expire",
            SimulatedAction::Fail => "fail",
        }
    }
}

/// A test wallet to create or top up (`POST /sandbox/wallets`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SandboxWallet {
    /// The test customer's number, international digits without `+`.
    pub msisdn: String,
    /// Sets the balance (major units); a new wallet starts with 1,000,000.00, an existing one
    /// keeps its balance when `None`.
    pub balance: Option<Decimal>,
    /// Sets the KYC tier; a new test wallet starts at the country's top tier.
    pub kyc_tier: Option<u8>,
}

impl SandboxWallet {
    /// The test wallet of `msisdn`, created if absent, otherwise unchanged.
    pub fn new(msisdn: impl Into<String>) -> Self {
        SandboxWallet { msisdn: msisdn.into(), balance: None, kyc_tier: None }
    }

    /// Setting its balance to `balance` (not adding it).
    pub fn balance(mut self, balance: Decimal) -> Self {
        self.balance = Some(balance);
        self
    }

    /// Setting its KYC tier.
    pub fn kyc_tier(mut self, tier: u8) -> Self {
        self.kyc_tier = Some(tier);
        self
    }
}

#[derive(Serialize)]
struct WalletBody<'a> {
    msisdn: &'a str,
    /// A JSON number with the decimal's exact text.
    #[serde(skip_serializing_if = "Option::is_none", with = "crate::amount::option")]
    balance: Option<Decimal>,
    #[serde(skip_serializing_if = "Option::is_none")]
    kyc_tier: Option<u8>,
}

#[derive(Serialize)]
struct SimulateBody {
    action: SimulatedAction,
}

/// The sandbox helpers: `client.sandbox()`.
#[derive(Debug, Clone, Copy)]
pub struct Sandbox<'a> {
    pub(crate) client: &'a Client,
}

impl Client {
    /// The sandbox helpers (test key pairs with scope `payments`).
    pub fn sandbox(&self) -> Sandbox<'_> {
        Sandbox { client: self }
    }
}

impl Sandbox<'_> {
    /// Simulates the customer's answer to a pending test charge (`simulateCharge`) under a new
    /// idempotency key: the charge after the action. A retried call replays the first answer,
    /// so a `WrongPin` counts once however often the network makes the client try.
    ///
    /// # Errors
    /// As every call ([`Error`]); `test_mode_only` with a live key pair; `invalid_state` when
    /// the charge is final; `not_found`.
    pub async fn simulate(&self, charge_ref: &str, action: SimulatedAction) -> Result<Charge, Error> {
        self.simulate_with_key(charge_ref, action, &new_key()).await
    }

    /// [`Sandbox::simulate`] under the caller's idempotency key.
    ///
    /// # Errors
    /// As [`Sandbox::simulate`]; `idempotency_key_reused`.
    pub async fn simulate_with_key(&self, charge_ref: &str, action: SimulatedAction, key: &str) -> Result<Charge, Error> {
        self.client.json(&Call::json_body(ops::SIMULATE_CHARGE, &[charge_ref], Some(key), &SimulateBody { action })?).await
    }

    /// Creates a test wallet, or sets an existing one's balance or tier (`createSandboxWallet`),
    /// under a new idempotency key: the wallet.
    ///
    /// # Errors
    /// As every call; `test_mode_only` with a live key pair; `validation_failed`
    /// (`invalid_msisdn`, `invalid_amount`, an unknown `kyc_tier`).
    pub async fn wallet(&self, wallet: &SandboxWallet) -> Result<Wallet, Error> {
        self.wallet_with_key(wallet, &new_key()).await
    }

    /// [`Sandbox::wallet`] under the caller's idempotency key.
    ///
    /// # Errors
    /// As [`Sandbox::wallet`]; `idempotency_key_reused`.
    pub async fn wallet_with_key(&self, wallet: &SandboxWallet, key: &str) -> Result<Wallet, Error> {
        let body = WalletBody { msisdn: &wallet.msisdn, balance: wallet.balance, kyc_tier: wallet.kyc_tier };
        self.client.json(&Call::json_body(ops::CREATE_SANDBOX_WALLET, &[], Some(key), &body)?).await
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn bodies_are_what_the_server_takes() {
        let b = SimulateBody { action: SimulatedAction::WrongPin };
        assert_eq!(serde_json::to_string(&b).unwrap(), r#"{"action":"wrong_pin"}"#);
        let w = SandboxWallet::new("254700001009").balance(Decimal::new(15_025, 2));
        let body = WalletBody { msisdn: &w.msisdn, balance: w.balance, kyc_tier: w.kyc_tier };
        assert_eq!(serde_json::to_string(&body).unwrap(), r#"{"msisdn":"254700001009","balance":150.25}"#);
    }
}
