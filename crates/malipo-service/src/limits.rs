//! KYC tier limits on every movement touching a wallet: what a wallet may send and receive, and
//! what it has used of its daily limit. Callers hold the wallet's row lock (see
//! [`crate::customers`]) so that the figures read here cannot change before the movement.

use malipo_core::{MinorUnit, Mode, Timestamp};
use malipo_countries::{Country, KycTier, LimitBreach};
use malipo_ledger::Account;

use crate::core::Core;
use crate::error::ServiceError;
use crate::ports::{LedgerRepo, Wallet};

/// A wallet with its account, its tier's limits and what it has used of today's.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct WalletDetails {
    /// The wallet.
    pub wallet: Wallet,
    /// Its ledger account.
    pub account: Account,
    /// Its KYC tier.
    pub tier: KycTier,
    /// Debits (and reservations) on the country's current local day.
    pub daily_used: MinorUnit,
}

/// The `limit_exceeded` error for a breach, worded for people.
pub(crate) fn limit_error(breach: LimitBreach, country: &Country) -> ServiceError {
    let money = |m: MinorUnit| format!("{} {}", country.currency, country.currency.format_amount(m));
    ServiceError::LimitExceeded(match breach {
        LimitBreach::PerTransaction { limit } => format!("the amount is above the wallet's per-transaction limit of {}", money(limit)),
        LimitBreach::Daily { limit, used } => {
            format!("the wallet's daily limit of {} would be exceeded ({} used today)", money(limit), money(used))
        }
        LimitBreach::MaxBalance { limit } => format!("the wallet's balance would exceed its maximum of {}", money(limit)),
    })
}

/// The limits of wallets.
pub(crate) struct Limits<'a>(pub(crate) &'a Core);

impl<'a> Limits<'a> {
    /// The country of a wallet.
    ///
    /// # Errors
    /// [`ServiceError::Internal`] when the wallet's country is no longer configured.
    pub(crate) fn country(&self, wallet: &Wallet) -> Result<&'a Country, ServiceError> {
        self.0.country(&wallet.country)
    }

    /// The KYC tier of a wallet.
    fn tier(&self, wallet: &Wallet) -> Result<&'a KycTier, ServiceError> {
        let country = self.country(wallet)?;
        country.tier(wallet.kyc_tier).ok_or_else(|| ServiceError::Internal(format!("{} has no KYC tier {}", country.code, wallet.kyc_tier)))
    }

    fn account(tx: &mut (impl LedgerRepo + ?Sized), wallet: &Wallet) -> Result<Account, ServiceError> {
        tx.account(&wallet.account_id)?.ok_or_else(|| ServiceError::Internal("wallet without account".into()))
    }

    /// The wallet's account and what left the wallet on the country's current local day: posted
    /// debits plus reservations (one read).
    fn account_and_daily_used(
        &self,
        tx: &mut (impl LedgerRepo + ?Sized),
        wallet: &Wallet,
        now: Timestamp,
    ) -> Result<(Account, MinorUnit), ServiceError> {
        let (day_start, _) = self.country(wallet)?.local_day(now);
        let (account, posted) = tx
            .account_with_debits_since(&wallet.account_id, day_start)?
            .ok_or_else(|| ServiceError::Internal("wallet without account".into()))?;
        let used = posted.checked_add(account.held)?;
        Ok((account, used))
    }

    /// Whether the wallet may send `amount` with `debit` leaving it in all (amount plus any fee
    /// it pays). `Ok(Err(..))` is a refusal; `Err` a storage failure.
    ///
    /// # Errors
    /// Storage failures.
    pub(crate) fn check_debit(
        &self,
        tx: &mut (impl LedgerRepo + ?Sized),
        wallet: &Wallet,
        amount: MinorUnit,
        debit: MinorUnit,
        now: Timestamp,
    ) -> Result<Result<(), LimitBreach>, ServiceError> {
        let (_, used) = self.account_and_daily_used(tx, wallet, now)?;
        Ok(self.tier(wallet)?.check_debit(amount, debit, used))
    }

    /// [`Limits::check_debit`] for a wallet opened in the current transaction: nothing used yet.
    ///
    /// # Errors
    /// [`ServiceError::Internal`] when its tier is not configured.
    pub(crate) fn fresh_wallet_debit(
        &self,
        wallet: &Wallet,
        amount: MinorUnit,
        debit: MinorUnit,
    ) -> Result<Result<(), LimitBreach>, ServiceError> {
        Ok(self.tier(wallet)?.check_debit(amount, debit, MinorUnit::ZERO))
    }

    /// Whether the wallet may receive `amount`. The maximum balance is not applied to test
    /// wallets: the sandbox opens them with 1,000,000.00, above most tiers' maximum.
    ///
    /// # Errors
    /// Storage failures.
    pub(crate) fn check_credit(
        &self,
        tx: &mut (impl LedgerRepo + ?Sized),
        wallet: &Wallet,
        amount: MinorUnit,
    ) -> Result<Result<(), LimitBreach>, ServiceError> {
        let account = Self::account(tx, wallet)?;
        let after = account.balance.checked_add(amount)?;
        Ok(self.tier(wallet)?.check_credit(amount, after, wallet.mode == Mode::Live))
    }

    /// The wallet with its account, tier and today's use.
    ///
    /// # Errors
    /// Storage failures; [`ServiceError::Internal`] for a wallet without account or tier.
    pub(crate) fn details(
        &self,
        tx: &mut (impl LedgerRepo + ?Sized),
        wallet: &Wallet,
        now: Timestamp,
    ) -> Result<WalletDetails, ServiceError> {
        let (account, daily_used) = self.account_and_daily_used(tx, wallet, now)?;
        let tier = self.tier(wallet)?.clone();
        Ok(WalletDetails { wallet: wallet.clone(), account, tier, daily_used })
    }
}

impl crate::idempotency::Subject for WalletDetails {
    fn subject(&self) -> (String, String) {
        let w = &self.wallet;
        let reason = w.lock_reason.as_deref().map(|r| format!(": {r}")).unwrap_or_default();
        (w.msisdn.to_string(), format!("tier {}, {}{reason}", self.tier.tier, w.state.as_str()))
    }
}
