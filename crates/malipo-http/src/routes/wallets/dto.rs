//! The wire shapes of the Wallets group (contract section 11) that only it uses.

use malipo_service::{NewKyc, NewPin, NewWallet, NewWalletLock};
use serde::Deserialize;
use utoipa::ToSchema;

use crate::schema::{Msisdn, Name64, Reason200};

/// `POST /wallets` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct OpenWalletRequest {
    /// The customer's number; its country is the wallet's.
    #[schema(value_type = Msisdn)]
    pub msisdn: String,
    /// Given name (1–64 characters).
    #[schema(value_type = Name64, example = "Amina")]
    pub first_name: String,
    /// Family name (1–64 characters).
    #[schema(value_type = Name64, example = "Otieno")]
    pub last_name: String,
    /// One of the country's ID types (see `GET /config/countries`); with `id_number`.
    #[schema(example = "national_id")]
    pub id_type: Option<String>,
    /// Must match the ID type's pattern; with `id_type`.
    #[schema(example = "12345678")]
    pub id_number: Option<String>,
    /// `YYYY-MM-DD`.
    #[schema(example = "1990-04-12", format = Date)]
    pub date_of_birth: Option<String>,
}

impl OpenWalletRequest {
    /// The use case's raw input.
    pub fn into_new(self) -> NewWallet {
        NewWallet {
            msisdn: self.msisdn,
            first_name: self.first_name,
            last_name: self.last_name,
            id_type: self.id_type,
            id_number: self.id_number,
            date_of_birth: self.date_of_birth,
        }
    }
}

/// `POST /wallets/{msisdn}/pin` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SetPinRequest {
    /// The new PIN: the country's `pin_length` digits, as a string; weak PINs are refused.
    #[schema(example = "4071", pattern = "^[0-9]+$")]
    pub new_pin: String,
    /// Required to change an existing PIN; a wrong one counts as a failed attempt.
    pub current_pin: Option<String>,
}

impl SetPinRequest {
    /// The use case's raw input for the wallet `msisdn` (the path's).
    pub fn into_new(self, msisdn: String) -> NewPin {
        NewPin { msisdn, new_pin: self.new_pin, current_pin: self.current_pin }
    }
}

/// `POST /wallets/{msisdn}/lock` and `POST /wallets/{msisdn}/unlock` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WalletReasonRequest {
    /// Why (1–200 characters); kept as the lock reason.
    #[schema(value_type = Reason200, example = "customer reported the phone stolen")]
    pub reason: String,
}

impl WalletReasonRequest {
    /// The use case's raw input for the wallet `msisdn` (the path's).
    pub fn into_new(self, msisdn: String) -> NewWalletLock {
        NewWalletLock { msisdn, reason: self.reason }
    }
}

/// `POST /wallets/{msisdn}/kyc` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RaiseKycRequest {
    /// The new tier: above the current one, at most what the ID type grants.
    #[serde(deserialize_with = "crate::wire::whole_u8")]
    #[schema(example = 2, minimum = 0, maximum = 255)]
    pub tier: u8,
    /// One of the country's ID types.
    #[schema(example = "national_id")]
    pub id_type: String,
    /// Must match the ID type's pattern.
    #[schema(example = "12345678")]
    pub id_number: String,
}

impl RaiseKycRequest {
    /// The use case's raw input for the wallet `msisdn` (the path's).
    pub fn into_new(self, msisdn: String) -> NewKyc {
        NewKyc { msisdn, tier: self.tier, id_type: self.id_type, id_number: self.id_number }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use crate::extract::parse_json;
    use crate::problem::ApiError;

    #[test]
    fn request_bodies_refuse_unknown_fields_and_numeric_pins() {
        assert!(matches!(parse_json::<SetPinRequest>(br#"{"new_pin":4071}"#), Err(ApiError::InvalidRequest(_))));
        assert!(matches!(parse_json::<SetPinRequest>(br#"{"new_pin":"4071","pin":"1"}"#), Err(ApiError::Fields(_))));
        let p = parse_json::<SetPinRequest>(br#"{"new_pin":"4071","current_pin":"9305"}"#).unwrap().value;
        assert_eq!((p.new_pin.as_str(), p.current_pin.as_deref()), ("4071", Some("9305")));
        assert!(matches!(
            parse_json::<RaiseKycRequest>(br#"{"tier":256,"id_type":"a","id_number":"b"}"#),
            Err(ApiError::InvalidRequest(_))
        ));
        assert!(matches!(parse_json::<WalletReasonRequest>(br#"{}"#), Err(ApiError::Fields(_))));
    }
}
