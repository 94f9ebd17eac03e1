//! Rows of wallets.

use std::str::FromStr;

use diesel::prelude::*;
use malipo_core::{AccountId, Msisdn};
use malipo_service::{StoreError, Wallet, WalletState};

use super::columns::{corrupt, currency, mode, ts};
use crate::schema::wallets;

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = wallets, check_for_backend(diesel::pg::Pg, diesel::sqlite::Sqlite))]
pub(crate) struct WalletRow {
    pub(crate) mode: String,
    pub(crate) msisdn: String,
    pub(crate) account_id: String,
    pub(crate) country: String,
    pub(crate) currency: String,
    pub(crate) state: String,
    pub(crate) kyc_tier: i32,
    pub(crate) pin_hash: Option<String>,
    pub(crate) pin_attempts: i32,
    pub(crate) first_name: Option<String>,
    pub(crate) last_name: Option<String>,
    pub(crate) created_at: i64,
    pub(crate) updated_at: i64,
    pub(crate) id_type: Option<String>,
    pub(crate) id_number: Option<String>,
    pub(crate) date_of_birth: Option<String>,
    pub(crate) lock_reason: Option<String>,
}

impl From<&Wallet> for WalletRow {
    fn from(w: &Wallet) -> Self {
        WalletRow {
            mode: w.mode.as_str().to_owned(),
            msisdn: w.msisdn.as_str().to_owned(),
            account_id: w.account_id.as_str().to_owned(),
            country: w.country.clone(),
            currency: w.currency.as_str().to_owned(),
            state: w.state.as_str().to_owned(),
            kyc_tier: i32::from(w.kyc_tier),
            pin_hash: w.pin_hash.clone(),
            pin_attempts: i32::from(w.pin_attempts),
            first_name: w.first_name.clone(),
            last_name: w.last_name.clone(),
            created_at: w.created_at.as_micros(),
            updated_at: w.updated_at.as_micros(),
            id_type: w.id_type.clone(),
            id_number: w.id_number.clone(),
            date_of_birth: w.date_of_birth.clone(),
            lock_reason: w.lock_reason.clone(),
        }
    }
}

impl TryFrom<WalletRow> for Wallet {
    type Error = StoreError;
    fn try_from(r: WalletRow) -> Result<Self, StoreError> {
        Ok(Wallet {
            msisdn: Msisdn::parse(&r.msisdn).map_err(|_| corrupt("msisdn", &r.msisdn))?,
            mode: mode(&r.mode)?,
            currency: currency(&r.currency)?,
            state: WalletState::from_str(&r.state).map_err(|_| corrupt("wallet state", &r.state))?,
            kyc_tier: u8::try_from(r.kyc_tier).map_err(|_| corrupt("KYC tier", &r.kyc_tier.to_string()))?,
            pin_attempts: u8::try_from(r.pin_attempts).map_err(|_| corrupt("PIN attempts", &r.pin_attempts.to_string()))?,
            account_id: AccountId::from_trusted(r.account_id),
            country: r.country,
            pin_hash: r.pin_hash,
            first_name: r.first_name,
            last_name: r.last_name,
            id_type: r.id_type,
            id_number: r.id_number,
            date_of_birth: r.date_of_birth,
            lock_reason: r.lock_reason,
            created_at: ts(r.created_at),
            updated_at: ts(r.updated_at),
        })
    }
}
