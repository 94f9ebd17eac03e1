//! Wallets and KYC (contract section 11): the operator's back office over customers' wallets
//! (a key pair with scope `wallets`): open, read, PINs, lock and unlock, KYC, the statement.

use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use crate::client::{new_key, Call};
use crate::operations as ops;
use crate::{Client, Error, List, Mode, TransactionKind};

/// A wallet's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum WalletState {
    /// It pays and is paid.
    Active,
    /// Locked by the operator or by too many wrong PINs: it neither pays nor is paid.
    Locked,
}

impl WalletState {
    /// The state as the API writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            WalletState::Active => "active",
            WalletState::Locked => "locked",
        }
    }
}

/// A wallet's KYC tier limits and today's use of them.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[non_exhaustive]
pub struct WalletLimits {
    /// The largest single movement.
    #[serde(with = "crate::amount")]
    pub per_transaction: Decimal,
    /// The largest total per local calendar day.
    #[serde(with = "crate::amount")]
    pub daily: Decimal,
    /// Used today (debits and reservations since the country's local midnight).
    #[serde(with = "crate::amount")]
    pub daily_used: Decimal,
    /// The largest balance.
    #[serde(with = "crate::amount")]
    pub max_balance: Decimal,
}

/// A customer's wallet.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[non_exhaustive]
pub struct Wallet {
    /// Its number, international digits without `+`.
    pub msisdn: String,
    /// Test or live.
    pub mode: Mode,
    /// Active or locked.
    pub state: WalletState,
    /// The KYC tier (0: opened without an ID).
    pub kyc_tier: u8,
    /// The currency (ISO 4217), the number's country's.
    pub currency: String,
    /// The balance, in major units.
    #[serde(with = "crate::amount")]
    pub balance: Decimal,
    /// Spendable: the balance less reservations.
    #[serde(with = "crate::amount")]
    pub available: Decimal,
    /// The tier's limits and today's use.
    pub limits: WalletLimits,
    /// Whether a PIN is set.
    pub pin_set: bool,
    /// Given name.
    pub first_name: Option<String>,
    /// Family name.
    pub last_name: Option<String>,
    /// The identity document's type, once given.
    pub id_type: Option<String>,
    /// The identity document's number, once given.
    pub id_number: Option<String>,
    /// `YYYY-MM-DD`.
    pub date_of_birth: Option<String>,
    /// Why it is locked (`pin_attempts_exceeded` or the operator's reason); `None` when active.
    pub lock_reason: Option<String>,
    /// RFC 3339, UTC.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    /// RFC 3339, UTC.
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

/// A wallet to open (`POST /wallets`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct NewWallet {
    /// The customer's number, international digits without `+`; its country is the wallet's.
    pub msisdn: String,
    /// Given name (1 to 64 characters).
    pub first_name: String,
    /// Family name (1 to 64 characters).
    pub last_name: String,
    /// One of the country's ID types (`national_id`, ...); with `id_number`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id_type: Option<String>,
    /// Must match the ID type's pattern; with `id_type`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id_number: Option<String>,
    /// `YYYY-MM-DD`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub date_of_birth: Option<String>,
}

impl NewWallet {
    /// A wallet for `msisdn` in the customer's name, without an ID (KYC tier 0).
    pub fn new(msisdn: impl Into<String>, first_name: impl Into<String>, last_name: impl Into<String>) -> Self {
        NewWallet {
            msisdn: msisdn.into(),
            first_name: first_name.into(),
            last_name: last_name.into(),
            id_type: None,
            id_number: None,
            date_of_birth: None,
        }
    }

    /// With an identity document: the tier follows from its type.
    pub fn id(mut self, id_type: impl Into<String>, id_number: impl Into<String>) -> Self {
        self.id_type = Some(id_type.into());
        self.id_number = Some(id_number.into());
        self
    }

    /// With a date of birth (`YYYY-MM-DD`).
    pub fn date_of_birth(mut self, date: impl Into<String>) -> Self {
        self.date_of_birth = Some(date.into());
        self
    }
}

/// An identity document that raises a wallet's KYC tier (`POST /wallets/{msisdn}/kyc`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct KycSubmission {
    /// The new tier: above the current one, at most what the ID type grants.
    pub tier: u8,
    /// One of the country's ID types.
    pub id_type: String,
    /// Must match the ID type's pattern.
    pub id_number: String,
}

impl KycSubmission {
    /// Tier `tier` on the document `id_type` number `id_number`.
    pub fn new(tier: u8, id_type: impl Into<String>, id_number: impl Into<String>) -> Self {
        KycSubmission { tier, id_type: id_type.into(), id_number: id_number.into() }
    }
}

/// One line of a statement, a wallet's or an account's: one posting to it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[non_exhaustive]
pub struct StatementLine {
    /// The ledger transaction, `tx_…`.
    pub transaction_id: String,
    /// What moved the money (on a test wallet also `sandbox_funding`).
    #[serde(rename = "type")]
    pub kind: TransactionKind,
    /// The object that caused it (a `ch_…`, `po_…`, `wd_…`, a number, ...).
    pub source_ref: String,
    /// Signed: what the wallet or account moved by (money in positive).
    #[serde(with = "crate::amount")]
    pub amount: Decimal,
    /// Its balance right after it.
    #[serde(with = "crate::amount")]
    pub balance_after: Decimal,
    /// RFC 3339, UTC.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}

/// The PIN body: no `Debug`, so that a PIN never reaches a log.
#[derive(Serialize)]
struct PinBody<'a> {
    new_pin: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    current_pin: Option<&'a str>,
}

#[derive(Serialize)]
struct ReasonBody<'a> {
    reason: &'a str,
}

/// Customers' wallets, for an operator's back office: `client.wallets()`.
#[derive(Debug, Clone, Copy)]
pub struct Wallets<'a> {
    pub(crate) client: &'a Client,
}

impl Client {
    /// Wallets and KYC: the operator's back office (scope `wallets`).
    pub fn wallets(&self) -> Wallets<'_> {
        Wallets { client: self }
    }
}

impl Wallets<'_> {
    /// Opens a wallet in the number's country with a zero balance (`openWallet`), under a new
    /// idempotency key. The KYC tier follows from the ID given (0 without one).
    ///
    /// # Errors
    /// As every call ([`Error`]); `invalid_state` when the number already has a wallet in this
    /// mode; `validation_failed` (`invalid_msisdn`, `already_registered`, ...).
    pub async fn open(&self, wallet: &NewWallet) -> Result<Wallet, Error> {
        self.open_with_key(wallet, &new_key()).await
    }

    /// [`Wallets::open`] under the caller's idempotency key.
    ///
    /// # Errors
    /// As [`Wallets::open`]; `idempotency_key_reused`.
    pub async fn open_with_key(&self, wallet: &NewWallet, key: &str) -> Result<Wallet, Error> {
        self.client.json(&Call::json_body(ops::OPEN_WALLET, &[], Some(key), wallet)?).await
    }

    /// One wallet: state, tier, balance, limits and today's use of them (`getWallet`).
    ///
    /// # Errors
    /// As every call; `not_found`.
    pub async fn get(&self, msisdn: &str) -> Result<Wallet, Error> {
        self.client.json(&Call::to(ops::GET_WALLET, &[msisdn])).await
    }

    /// Sets the wallet's first PIN (`current_pin` `None`), or changes it given the current one
    /// (`setWalletPin`), under a new idempotency key. The PINs are sent in the body only, and
    /// never appear in any `Debug` output or error of the client.
    ///
    /// # Errors
    /// As every call; `validation_failed` with a field error `weak_pin` or `invalid_pin` on
    /// `new_pin`, `missing_field` or `wrong_pin` on `current_pin` (a wrong one counts as a failed
    /// attempt); `wallet_locked` (also when this attempt locked it); `not_found`.
    pub async fn set_pin(&self, msisdn: &str, new_pin: &str, current_pin: Option<&str>) -> Result<Wallet, Error> {
        self.set_pin_with_key(msisdn, new_pin, current_pin, &new_key()).await
    }

    /// [`Wallets::set_pin`] under the caller's idempotency key: a retry of a change that
    /// succeeded replays it without checking the (since changed) current PIN again.
    ///
    /// # Errors
    /// As [`Wallets::set_pin`]; `idempotency_key_reused`.
    pub async fn set_pin_with_key(&self, msisdn: &str, new_pin: &str, current_pin: Option<&str>, key: &str) -> Result<Wallet, Error> {
        let body = PinBody { new_pin, current_pin };
        self.client.json(&Call::json_body(ops::SET_WALLET_PIN, &[msisdn], Some(key), &body)?).await
    }

    /// Locks a wallet for `reason` (`lockWallet`), under a new idempotency key: it can no
    /// longer pay or be paid, and its pending prompts fail with `wallet_locked`.
    ///
    /// # Errors
    /// As every call; `invalid_state` when already locked; `not_found`.
    pub async fn lock(&self, msisdn: &str, reason: &str) -> Result<Wallet, Error> {
        self.lock_with_key(msisdn, reason, &new_key()).await
    }

    /// [`Wallets::lock`] under the caller's idempotency key.
    ///
    /// # Errors
    /// As [`Wallets::lock`]; `idempotency_key_reused`.
    pub async fn lock_with_key(&self, msisdn: &str, reason: &str, key: &str) -> Result<Wallet, Error> {
        self.client.json(&Call::json_body(ops::LOCK_WALLET, &[msisdn], Some(key), &ReasonBody { reason })?).await
    }

    /// Unlocks a wallet for `reason` and resets its PIN attempt count (`unlockWallet`), under a
    /// new idempotency key.
    ///
    /// # Errors
    /// As every call; `invalid_state` when not locked; `not_found`.
    pub async fn unlock(&self, msisdn: &str, reason: &str) -> Result<Wallet, Error> {
        self.unlock_with_key(msisdn, reason, &new_key()).await
    }

    /// [`Wallets::unlock`] under the caller's idempotency key.
    ///
    /// # Errors
    /// As [`Wallets::unlock`]; `idempotency_key_reused`.
    pub async fn unlock_with_key(&self, msisdn: &str, reason: &str, key: &str) -> Result<Wallet, Error> {
        self.client.json(&Call::json_body(ops::UNLOCK_WALLET, &[msisdn], Some(key), &ReasonBody { reason })?).await
    }

    /// Raises a wallet's KYC tier on an identity document (`submitWalletKyc`), under a new
    /// idempotency key: the wallet at its new tier, with the tier's limits.
    ///
    /// # Errors
    /// As every call; `invalid_state` when the tier is not above the current one;
    /// `validation_failed` (a tier the document does not grant, a bad ID number,
    /// `already_registered`); `not_found`.
    pub async fn kyc(&self, msisdn: &str, kyc: &KycSubmission) -> Result<Wallet, Error> {
        self.kyc_with_key(msisdn, kyc, &new_key()).await
    }

    /// [`Wallets::kyc`] under the caller's idempotency key.
    ///
    /// # Errors
    /// As [`Wallets::kyc`]; `idempotency_key_reused`.
    pub async fn kyc_with_key(&self, msisdn: &str, kyc: &KycSubmission, key: &str) -> Result<Wallet, Error> {
        self.client.json(&Call::json_body(ops::SUBMIT_WALLET_KYC, &[msisdn], Some(key), kyc)?).await
    }

    /// The wallet's statement, oldest first (`listWalletTransactions`).
    pub fn transactions(&self, msisdn: &str) -> List<StatementLine> {
        List::new(self.client, Call::to(ops::LIST_WALLET_TRANSACTIONS, &[msisdn]))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_wallet_reads_as_the_server_writes_it() {
        let text = r#"{"msisdn":"254712345678","mode":"test","state":"locked","kyc_tier":1,"currency":"KES",
            "balance":1234.50,"available":1000.00,"limits":{"per_transaction":150000.00,"daily":300000.00,
            "daily_used":0.00,"max_balance":300000.00},"pin_set":true,"first_name":"Amina","last_name":"Otieno",
            "id_type":"national_id","id_number":"12345678","date_of_birth":null,"lock_reason":"stolen",
            "created_at":"2025-01-01T00:00:00Z","updated_at":"2025-01-01T00:00:00Z"}"#;
        let w: Wallet = serde_json::from_str(text).unwrap();
        assert_eq!(
            (w.state, w.kyc_tier, w.balance, w.available),
            (WalletState::Locked, 1, Decimal::new(123_450, 2), Decimal::new(1000, 0))
        );
        assert_eq!(w.limits.per_transaction, Decimal::new(150_000, 0));
        assert_eq!(w.lock_reason.as_deref(), Some("stolen"));
    }

    #[test]
    fn request_bodies_are_what_the_server_takes() {
        let w = NewWallet::new("254712345678", "Amina", "Otieno").id("national_id", "12345678");
        assert_eq!(
            serde_json::to_string(&w).unwrap(),
            r#"{"msisdn":"254712345678","first_name":"Amina","last_name":"Otieno","id_type":"national_id","id_number":"12345678"}"#
        );
        let p = PinBody { new_pin: "4826", current_pin: None };
        assert_eq!(serde_json::to_string(&p).unwrap(), r#"{"new_pin":"4826"}"#);
        assert_eq!(
            serde_json::to_string(&KycSubmission::new(2, "kra_pin", "A123456789Z")).unwrap(),
            r#"{"tier":2,"id_type":"kra_pin","id_number":"A123456789Z"}"#
        );
    }
}
