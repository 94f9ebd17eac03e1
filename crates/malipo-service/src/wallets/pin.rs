//! One PIN attempt counter for every channel (API, USSD, sandbox): a right PIN resets it, the
//! country's maximum locks the wallet and declines its pending prompts.

use malipo_auth::SecretHasher;
use malipo_core::{Mode, Msisdn};

use crate::core::Core;
use crate::error::{ServiceError, StoreError};
use crate::lifecycle::{Entered, Lifecycle};
use crate::limits::Limits;
use crate::ports::{read, write, WalletState};

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
            let Some(seen) = read(self.0.store(), |tx| Ok(tx.wallet(mode, msisdn)?))? else {
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
            let result = write(self.0.store(), |tx| {
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
                if right {
                    if wallet.pin_attempts != 0 || upgraded.is_some() {
                        wallet.pin_attempts = 0;
                        if let Some(new) = &upgraded {
                            wallet.pin_hash = Some(new.clone());
                        }
                        wallet.updated_at = now;
                        tx.update_wallet(&wallet)?;
                    }
                    return Ok(Some(PinCheck::Right));
                }
                let max = Limits(self.0).country(&wallet)?.max_pin_attempts;
                wallet.pin_attempts = wallet.pin_attempts.saturating_add(1);
                if wallet.pin_attempts >= max {
                    Lifecycle(self.0).lock_out(tx, &mut wallet, None, now, &mut entered)?;
                    return Ok(Some(PinCheck::LockedNow));
                }
                wallet.updated_at = now;
                tx.update_wallet(&wallet)?;
                Ok(Some(PinCheck::Wrong { attempts_left: max.saturating_sub(wallet.pin_attempts) }))
            })?;
            self.0.report(&entered);
            if let Some(result) = result {
                return Ok(result);
            }
        }
        Err(StoreError::Retry.into())
    }

    /// Replaces a wallet's PIN (the caller has just proved the current one) and resets the count.
    ///
    /// # Errors
    /// [`ServiceError::Validation`] for a weak or malformed PIN; [`ServiceError::WalletLocked`];
    /// [`ServiceError::NotFound`].
    pub(crate) fn replace_pin(&self, mode: Mode, msisdn: &Msisdn, new_pin: &str) -> Result<(), ServiceError> {
        let wallet = read(self.0.store(), |tx| Ok(tx.wallet(mode, msisdn)?))?.ok_or(ServiceError::NotFound)?;
        Limits(self.0)
            .country(&wallet)?
            .check_new_pin(new_pin)
            .map_err(|e| ServiceError::field("new_pin", "invalid_pin", e.to_string()))?;
        let hash = self.0.hasher.hash(new_pin).map_err(|e| ServiceError::Internal(e.to_string()))?;
        write(self.0.store(), |tx| {
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
