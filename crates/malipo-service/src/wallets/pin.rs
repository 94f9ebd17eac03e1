//! One PIN attempt counter for every channel (API, USSD, sandbox): a right PIN resets it, the
//! country's maximum locks the wallet and declines its pending prompts.

use malipo_auth::SecretHasher;
use malipo_core::{Mode, Msisdn, Timestamp};

use crate::core::Core;
use crate::error::{ServiceError, StoreError};
use crate::lifecycle::{Entered, Lifecycle};
use crate::limits::Limits;
use crate::ports::{ChargeFlow, Wallet, WalletState};
use crate::views::{Charging, OnWallets, View};

/// The result of checking a PIN (every check counts towards the lock).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PinCheck {
    /// Right: the count is reset.
    Right,
    /// Wrong, with the attempts left before the wallet locks.
    Wrong {
        /// Attempts left.
        attempts_left: u8,
    },
    /// Wrong, and the wallet is now locked (its pending prompts declined).
    LockedNow,
    /// The wallet was already locked: nothing was checked.
    Locked,
    /// The wallet has no PIN yet.
    NoPin,
    /// The number has no wallet in this mode.
    NoWallet,
}

/// What a right PIN guards, done in the check's transaction at the check's time.
pub(crate) type Guarded<'a, T> = dyn FnMut(&mut dyn ChargeFlow, &Wallet, Timestamp, &mut Entered) -> Result<T, ServiceError> + 'a;

/// Checks and replaces PINs.
pub(crate) struct Pins<'a>(pub(crate) &'a Core);

impl Pins<'_> {
    /// Checks a PIN entered on any channel, counting it: a right PIN resets the count; a wrong
    /// one adds one, and the country's maximum locks the wallet and declines every pending
    /// prompt of it with `pin_attempts_exceeded`. The slow hash runs outside any transaction.
    ///
    /// # Errors
    /// Storage failures.
    pub(crate) fn check_pin(&self, mode: Mode, msisdn: &Msisdn, pin: &str) -> Result<PinCheck, ServiceError> {
        for _ in 0..3 {
            let Some(seen) = OnWallets::read(self.0.store(), |tx| Ok(tx.wallet(mode, msisdn)?))? else {
                return Ok(PinCheck::NoWallet);
            };
            if seen.state == WalletState::Locked {
                return Ok(PinCheck::Locked);
            }
            let Some(hash) = seen.pin_hash.clone() else {
                return Ok(PinCheck::NoPin);
            };
            let right = self.0.hasher.verify(pin, Some(&hash));
            // A right PIN under an older (Argon2id) hash is stored again as a keyed hash.
            let upgraded = if right && SecretHasher::needs_rehash(&hash) {
                Some(self.0.hasher.hash(pin).map_err(|e| ServiceError::Internal(e.to_string()))?)
            } else {
                None
            };
            let mut entered = Entered::new();
            let result = Charging::write(self.0.store(), |tx| {
                entered.clear();
                let now = self.0.now();
                let Some(mut wallet) = tx.lock_wallet(mode, msisdn)? else {
                    return Ok(Some(PinCheck::NoWallet));
                };
                if wallet.state == WalletState::Locked {
                    return Ok(Some(PinCheck::Locked));
                }
                if wallet.pin_hash.as_deref() != Some(hash.as_str()) {
                    // The PIN changed while it was being checked: check again against the new one.
                    return Ok(None);
                }
                self.count(tx, &mut wallet, right, upgraded.as_deref(), now, &mut entered).map(Some)
            })?;
            self.0.report(&entered);
            if let Some(result) = result {
                return Ok(result);
            }
        }
        Err(StoreError::Retry.into())
    }

    /// Checks a PIN as [`Pins::check_pin`] does on the caller's transaction and, when it is right,
    /// runs `then` in it: the wallet's row locked once for the check and what it guards. A keyed
    /// hash is checked inside the transaction (microseconds); an older Argon2id hash is not (tens
    /// of milliseconds under the wallet's lock): `Ok(None)` before anything is written, and the
    /// caller checks with [`Pins::check_pin`] instead.
    ///
    /// # Errors
    /// Storage failures; `then`'s (the caller's transaction then must not commit).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn check_pin_in<T>(
        &self,
        tx: &mut dyn ChargeFlow,
        mode: Mode,
        msisdn: &Msisdn,
        pin: &str,
        now: Timestamp,
        entered: &mut Entered,
        then: &mut Guarded<'_, T>,
    ) -> Result<Option<(PinCheck, Option<T>)>, ServiceError> {
        let Some(mut wallet) = tx.lock_wallet(mode, msisdn)? else {
            return Ok(Some((PinCheck::NoWallet, None)));
        };
        if wallet.state == WalletState::Locked {
            return Ok(Some((PinCheck::Locked, None)));
        }
        let Some(hash) = wallet.pin_hash.clone() else {
            return Ok(Some((PinCheck::NoPin, None)));
        };
        if SecretHasher::needs_rehash(&hash) {
            return Ok(None);
        }
        let right = self.0.hasher.verify(pin, Some(&hash));
        let check = self.count(tx, &mut wallet, right, None, now, entered)?;
        if check != PinCheck::Right {
            return Ok(Some((check, None)));
        }
        let value = then(tx, &wallet, now, entered)?;
        Ok(Some((check, Some(value))))
    }

    /// Counts a checked PIN on the locked wallet: a right one resets the count (and stores an
    /// `upgraded` hash), a wrong one adds one and, at the country's maximum, locks the wallet and
    /// declines its pending prompts.
    fn count(
        &self,
        tx: &mut (impl ChargeFlow + ?Sized),
        wallet: &mut Wallet,
        right: bool,
        upgraded: Option<&str>,
        now: Timestamp,
        entered: &mut Entered,
    ) -> Result<PinCheck, ServiceError> {
        if right {
            if wallet.pin_attempts != 0 || upgraded.is_some() {
                wallet.pin_attempts = 0;
                if let Some(new) = upgraded {
                    wallet.pin_hash = Some(new.to_owned());
                }
                wallet.updated_at = now;
                tx.update_wallet(wallet)?;
            }
            return Ok(PinCheck::Right);
        }
        let max = Limits(self.0).country(wallet)?.max_pin_attempts;
        wallet.pin_attempts = wallet.pin_attempts.saturating_add(1);
        if wallet.pin_attempts >= max {
            Lifecycle(self.0).lock_out(tx, wallet, None, now, entered)?;
            return Ok(PinCheck::LockedNow);
        }
        wallet.updated_at = now;
        tx.update_wallet(wallet)?;
        Ok(PinCheck::Wrong { attempts_left: max.saturating_sub(wallet.pin_attempts) })
    }

    /// Replaces a wallet's PIN (the caller has just proved the current one) and resets the count.
    ///
    /// # Errors
    /// [`ServiceError::Validation`] for a weak or malformed PIN; [`ServiceError::WalletLocked`];
    /// [`ServiceError::NotFound`].
    pub(crate) fn replace_pin(&self, mode: Mode, msisdn: &Msisdn, new_pin: &str) -> Result<(), ServiceError> {
        let wallet = OnWallets::read(self.0.store(), |tx| Ok(tx.wallet(mode, msisdn)?))?.ok_or(ServiceError::NotFound)?;
        Limits(self.0)
            .country(&wallet)?
            .check_new_pin(new_pin)
            .map_err(|e| ServiceError::field("new_pin", "invalid_pin", e.to_string()))?;
        let hash = self.0.hasher.hash(new_pin).map_err(|e| ServiceError::Internal(e.to_string()))?;
        OnWallets::write(self.0.store(), |tx| {
            let now = self.0.now();
            let mut wallet = tx.lock_wallet(mode, msisdn)?.ok_or(ServiceError::NotFound)?;
            if wallet.state == WalletState::Locked {
                return Err(ServiceError::WalletLocked);
            }
            wallet.pin_hash = Some(hash.clone());
            wallet.pin_attempts = 0;
            wallet.updated_at = now;
            tx.update_wallet(&wallet)?;
            Ok(())
        })
    }
}
