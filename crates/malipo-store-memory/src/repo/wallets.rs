//! [`WalletRepo`] over the in-memory tables.

use malipo_core::{Mode, Msisdn};
use malipo_service::{StoreError, Wallet, WalletRepo};

use crate::state::State;
use crate::tx::{check, foreign_key, MemoryTx};

/// The check constraints and unique identity document of the `wallets` table.
fn check_wallet(s: &State, w: &Wallet) -> Result<(), StoreError> {
    check(w.id_type.is_none() == w.id_number.is_none(), "wallets_id_check")?;
    check((w.state == malipo_service::WalletState::Locked) == w.lock_reason.is_some(), "wallets_lock_reason_check")?;
    if w.id_number.is_some() {
        let taken = s.wallets.values().any(|o| {
            o.msisdn != w.msisdn && o.mode == w.mode && o.country == w.country && o.id_type == w.id_type && o.id_number == w.id_number
        });
        if taken {
            return Err(StoreError::Duplicate);
        }
    }
    Ok(())
}

impl WalletRepo for MemoryTx<'_> {
    fn insert_wallet(&mut self, wallet: &Wallet) -> Result<(), StoreError> {
        let s = self.w()?;
        let key = (wallet.mode, wallet.msisdn.clone());
        if s.wallets.contains_key(&key) || s.wallets.values().any(|w| w.account_id == wallet.account_id) {
            return Err(StoreError::Duplicate);
        }
        foreign_key(s.accounts.contains_key(&wallet.account_id), "the wallet's account")?;
        check_wallet(s, wallet)?;
        s.wallets.insert(key, wallet.clone());
        Ok(())
    }

    fn wallet(&mut self, mode: Mode, msisdn: &Msisdn) -> Result<Option<Wallet>, StoreError> {
        Ok(self.r().wallets.get(&(mode, msisdn.clone())).cloned())
    }

    fn wallet_by_document(&mut self, mode: Mode, country: &str, id_type: &str, id_number: &str) -> Result<Option<Wallet>, StoreError> {
        Ok(self
            .r()
            .wallets
            .values()
            .find(|w| {
                w.mode == mode && w.country == country && w.id_type.as_deref() == Some(id_type) && w.id_number.as_deref() == Some(id_number)
            })
            .cloned())
    }

    fn lock_wallet(&mut self, mode: Mode, msisdn: &Msisdn) -> Result<Option<Wallet>, StoreError> {
        // The whole store is locked for the transaction already.
        self.wallet(mode, msisdn)
    }

    fn update_wallet(&mut self, wallet: &Wallet) -> Result<(), StoreError> {
        let s = self.w()?;
        // Like an UPDATE that matches no row: nothing to do.
        let Some(current) = s.wallets.get(&(wallet.mode, wallet.msisdn.clone())) else {
            return Ok(());
        };
        let mut updated = current.clone();
        {
            let stored = &mut updated;
            stored.state = wallet.state;
            stored.kyc_tier = wallet.kyc_tier;
            stored.pin_hash.clone_from(&wallet.pin_hash);
            stored.pin_attempts = wallet.pin_attempts;
            stored.first_name.clone_from(&wallet.first_name);
            stored.last_name.clone_from(&wallet.last_name);
            stored.id_type.clone_from(&wallet.id_type);
            stored.id_number.clone_from(&wallet.id_number);
            stored.date_of_birth.clone_from(&wallet.date_of_birth);
            stored.lock_reason.clone_from(&wallet.lock_reason);
            stored.updated_at = wallet.updated_at;
        }
        check_wallet(s, &updated)?;
        s.wallets.insert((wallet.mode, wallet.msisdn.clone()), updated);
        Ok(())
    }
}
