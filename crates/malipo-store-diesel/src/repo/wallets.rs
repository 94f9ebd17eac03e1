//! [`WalletRepo`] on the transaction's connection: wallets.

use diesel::prelude::*;
use malipo_core::{Mode, Msisdn};
use malipo_service::{StoreError, Wallet, WalletRepo};

use crate::cached::written;
use crate::error::db_error;
use crate::rows::WalletRow;
use crate::schema::wallets;
use crate::tx::{inserted, locked_row, DieselTx};
use crate::DbConnection;

impl WalletRepo for DieselTx<'_> {
    fn insert_wallet(&mut self, wallet: &Wallet) -> Result<(), StoreError> {
        let row = WalletRow::from(wallet);
        inserted(written!(&mut *self.conn, diesel::insert_into(wallets::table).values(&row).on_conflict_do_nothing()))
    }

    fn wallet(&mut self, mode: Mode, msisdn: &Msisdn) -> Result<Option<Wallet>, StoreError> {
        wallets::table
            .find((mode.as_str(), msisdn.as_str()))
            .select(WalletRow::as_select())
            .first(self.conn)
            .optional()
            .map_err(db_error)?
            .map(Wallet::try_from)
            .transpose()
    }

    fn wallet_by_document(&mut self, mode: Mode, country: &str, id_type: &str, id_number: &str) -> Result<Option<Wallet>, StoreError> {
        wallets::table
            .filter(wallets::mode.eq(mode.as_str()))
            .filter(wallets::country.eq(country))
            .filter(wallets::id_type.eq(id_type))
            .filter(wallets::id_number.eq(id_number))
            .select(WalletRow::as_select())
            .first(self.conn)
            .optional()
            .map_err(db_error)?
            .map(Wallet::try_from)
            .transpose()
    }

    fn lock_wallet(&mut self, mode: Mode, msisdn: &Msisdn) -> Result<Option<Wallet>, StoreError> {
        locked_row!(&mut *self.conn, wallets::table.find((mode.as_str(), msisdn.as_str())), WalletRow => Wallet)
    }

    fn update_wallet(&mut self, wallet: &Wallet) -> Result<(), StoreError> {
        let row = WalletRow::from(wallet);
        let updated = written!(
            &mut *self.conn,
            diesel::update(wallets::table.find((row.mode.as_str(), row.msisdn.as_str()))).set((
                wallets::state.eq(&row.state),
                wallets::kyc_tier.eq(row.kyc_tier),
                wallets::pin_hash.eq(&row.pin_hash),
                wallets::pin_attempts.eq(row.pin_attempts),
                wallets::first_name.eq(&row.first_name),
                wallets::last_name.eq(&row.last_name),
                wallets::id_type.eq(&row.id_type),
                wallets::id_number.eq(&row.id_number),
                wallets::date_of_birth.eq(&row.date_of_birth),
                wallets::lock_reason.eq(&row.lock_reason),
                wallets::updated_at.eq(row.updated_at),
            ))
        )
        .map_err(db_error)?;
        if updated == 0 {
            return Err(StoreError::Other(format!("no {} wallet {} to update", row.mode, row.msisdn)));
        }
        Ok(())
    }
}
