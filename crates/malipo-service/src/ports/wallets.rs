//! Customer wallets.

use std::str::FromStr;

use malipo_core::{AccountId, Currency, Mode, Msisdn, Timestamp};

use crate::error::StoreError;

/// Whether a wallet can move money.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum WalletState {
    /// Usable.
    Active,
    /// Locked by wrong PINs or by the operator.
    Locked,
}

impl WalletState {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            WalletState::Active => "active",
            WalletState::Locked => "locked",
        }
    }
}

impl FromStr for WalletState {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "active" => Ok(WalletState::Active),
            "locked" => Ok(WalletState::Locked),
            other => Err(format!("unknown wallet state `{other}`")),
        }
    }
}

/// A customer's wallet in one mode.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Wallet {
    /// The customer's number.
    pub msisdn: Msisdn,
    /// The mode.
    pub mode: Mode,
    /// Its ledger account.
    pub account_id: AccountId,
    /// ISO 3166 alpha-2 of the number's country.
    pub country: String,
    /// Its currency.
    pub currency: Currency,
    /// Active or locked.
    pub state: WalletState,
    /// KYC tier (0 = no ID).
    pub kyc_tier: u8,
    /// The PIN's keyed hash (or an older Argon2id hash, replaced at its next right PIN), once set.
    pub pin_hash: Option<String>,
    /// Consecutive wrong PINs.
    pub pin_attempts: u8,
    /// Given name.
    pub first_name: Option<String>,
    /// Family name.
    pub last_name: Option<String>,
    /// The identity document's type (one of the country's ID types), once given.
    pub id_type: Option<String>,
    /// The identity document's number, matching its type's pattern.
    pub id_number: Option<String>,
    /// Date of birth, `YYYY-MM-DD`.
    pub date_of_birth: Option<String>,
    /// Why the wallet is locked (`pin_attempts_exceeded` or the operator's reason).
    pub lock_reason: Option<String>,
    /// When opened.
    pub created_at: Timestamp,
    /// When last changed.
    pub updated_at: Timestamp,
}

/// Customer wallets: part of the one transaction handle [`super::Tx`].
pub trait WalletRepo {
    /// Inserts a wallet (its account must exist).
    ///
    /// # Errors
    /// [`StoreError::Duplicate`] if the (mode, msisdn) exists.
    fn insert_wallet(&mut self, wallet: &Wallet) -> Result<(), StoreError>;
    /// A wallet by mode and number.
    ///
    /// # Errors
    /// Storage failures.
    fn wallet(&mut self, mode: Mode, msisdn: &Msisdn) -> Result<Option<Wallet>, StoreError>;
    /// The wallet of a mode and country that holds this identity document, if any.
    ///
    /// # Errors
    /// Storage failures.
    fn wallet_by_document(&mut self, mode: Mode, country: &str, id_type: &str, id_number: &str) -> Result<Option<Wallet>, StoreError>;
    /// A wallet by mode and number, locked for update until the transaction ends.
    ///
    /// # Errors
    /// Storage failures.
    fn lock_wallet(&mut self, mode: Mode, msisdn: &Msisdn) -> Result<Option<Wallet>, StoreError>;
    /// Overwrites a wallet's mutable fields (state, KYC tier, PIN hash, attempts, names, ID,
    /// date of birth, lock reason, updated_at).
    ///
    /// # Errors
    /// Storage failures.
    fn update_wallet(&mut self, wallet: &Wallet) -> Result<(), StoreError>;
}
