//! The operator's wallet commands (`POST /wallets`, `/wallets/{msisdn}/pin`, `…/lock`,
//! `…/unlock`, `…/kyc`), parsed.

use malipo_core::{Msisdn, Timestamp};
use malipo_countries::Country;

use super::context::{checked, msisdn, Command, ParseContext};
use crate::error::{FieldError, ServiceError};
use crate::validate::check_text;

/// The fields of a new wallet as received.
#[derive(Clone, Debug, Default)]
pub struct NewWallet {
    /// The customer's number; its country is the wallet's.
    pub msisdn: String,
    /// Given name.
    pub first_name: String,
    /// Family name.
    pub last_name: String,
    /// One of the country's ID types.
    pub id_type: Option<String>,
    /// Must match the ID type's pattern.
    pub id_number: Option<String>,
    /// `YYYY-MM-DD`.
    pub date_of_birth: Option<String>,
}

/// A wallet to open, parsed from [`NewWallet`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct OpenWallet {
    /// The number, of a served country (the wallet's).
    pub msisdn: Msisdn,
    /// 1 to 64 printable characters, trimmed.
    pub first_name: String,
    /// 1 to 64 printable characters, trimmed.
    pub last_name: String,
    /// An identity document of the number's country: its type and a number matching the
    /// type's pattern (both or neither).
    pub id_type: Option<String>,
    /// See `id_type`.
    pub id_number: Option<String>,
    /// A real date written `YYYY-MM-DD`, from 1900 to today, as given.
    pub date_of_birth: Option<String>,
}

/// Checks an ID type and number against the country's configuration.
pub(crate) fn check_id(country: &Country, id_type: &str, id_number: &str, errors: &mut Vec<FieldError>) {
    match country.id_type(id_type) {
        None => {
            let names: Vec<&str> = country.id_types.iter().map(|t| t.name.as_str()).collect();
            errors.push(FieldError::new(
                "id_type",
                "invalid_value",
                format!("id_type must be one of {} for {}", names.join(", "), country.code),
            ));
        }
        Some(t) if !t.matches(id_number) => {
            errors.push(FieldError::new(
                "id_number",
                "invalid_value",
                format!("id_number does not match the {} pattern {}", t.name, t.pattern),
            ));
        }
        Some(_) => {}
    }
}

/// A date of birth: `YYYY-MM-DD`, a real date, not in the future.
fn check_date_of_birth(text: &str, now: Timestamp, errors: &mut Vec<FieldError>) {
    let format = time::macros::format_description!("[year]-[month]-[day]");
    match time::Date::parse(text, format) {
        Ok(d) if d > now.to_offset_datetime().date() => {
            errors.push(FieldError::new("date_of_birth", "invalid_value", "date_of_birth is in the future"));
        }
        Ok(d) if d.year() < 1900 => errors.push(FieldError::new("date_of_birth", "invalid_value", "date_of_birth is before 1900")),
        Ok(_) => {}
        Err(_) => errors.push(FieldError::new("date_of_birth", "invalid_value", "date_of_birth must be a date written YYYY-MM-DD")),
    }
}

impl Command for OpenWallet {
    type Raw = NewWallet;

    /// # Errors
    /// [`ServiceError::Validation`]: `msisdn`, `first_name`, `last_name`, `id_type` and
    /// `id_number`, `date_of_birth`.
    fn parse(new: &NewWallet, ctx: &ParseContext<'_>) -> Result<Self, ServiceError> {
        let mut errors = Vec::new();
        let parsed = msisdn(ctx.countries(), "msisdn", &new.msisdn, &mut errors);
        check_text("first_name", &new.first_name, 64, false, &mut errors);
        check_text("last_name", &new.last_name, 64, false, &mut errors);
        match (&new.id_type, &new.id_number, &parsed) {
            (Some(t), Some(n), Some((_, country))) => check_id(country, t, n, &mut errors),
            (Some(_), None, _) => errors.push(FieldError::new("id_number", "missing_field", "id_number is required with id_type")),
            (None, Some(_), _) => errors.push(FieldError::new("id_type", "missing_field", "id_type is required with id_number")),
            _ => {}
        }
        if let Some(d) = &new.date_of_birth {
            check_date_of_birth(d, ctx.now(), &mut errors);
        }
        let wallet = parsed.map(|(msisdn, _)| OpenWallet {
            msisdn,
            first_name: new.first_name.trim().to_owned(),
            last_name: new.last_name.trim().to_owned(),
            id_type: new.id_type.clone(),
            id_number: new.id_number.clone(),
            date_of_birth: new.date_of_birth.clone(),
        });
        checked(errors, wallet)
    }
}

/// Parses a wallet's number in a path: a number that is not one names no wallet.
fn wallet_number(msisdn: &str) -> Result<Msisdn, ServiceError> {
    Msisdn::parse(msisdn).map_err(|_| ServiceError::NotFound)
}

/// A wallet's PIN to set or change, as received.
#[derive(Clone, Default)]
pub struct NewPin {
    /// The wallet's number.
    pub msisdn: String,
    /// The new PIN.
    pub new_pin: String,
    /// The current PIN, required once the wallet has one.
    pub current_pin: Option<String>,
}

/// A PIN to set, parsed from [`NewPin`]. The PINs themselves are secrets checked by the use case
/// against the found wallet: its country's PIN rules, and the current PIN against its hash
/// (a wallet that does not exist is `not_found` before any PIN is looked at).
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SetPin {
    /// The wallet.
    pub wallet: Msisdn,
    /// The new PIN, as given.
    pub new_pin: String,
    /// The current PIN, as given.
    pub current_pin: Option<String>,
}

impl std::fmt::Debug for NewPin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NewPin").field("msisdn", &self.msisdn).finish_non_exhaustive()
    }
}

impl std::fmt::Debug for SetPin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SetPin").field("wallet", &self.wallet).finish_non_exhaustive()
    }
}

impl Command for SetPin {
    type Raw = NewPin;

    /// # Errors
    /// [`ServiceError::NotFound`] for a path that is no number.
    fn parse(new: &NewPin, _: &ParseContext<'_>) -> Result<Self, ServiceError> {
        Ok(SetPin { wallet: wallet_number(&new.msisdn)?, new_pin: new.new_pin.clone(), current_pin: new.current_pin.clone() })
    }
}

/// A wallet to lock or unlock, and why, as received.
#[derive(Clone, Debug, Default)]
pub struct NewWalletLock {
    /// The wallet's number.
    pub msisdn: String,
    /// Why (1 to 200 characters).
    pub reason: String,
}

/// A wallet to lock or unlock, parsed from [`NewWalletLock`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct WalletLock {
    /// The wallet.
    pub wallet: Msisdn,
    /// 1 to 200 printable characters, not only spaces, trimmed.
    pub reason: String,
}

impl Command for WalletLock {
    type Raw = NewWalletLock;

    /// # Errors
    /// [`ServiceError::NotFound`] for a path that is no number, then
    /// [`ServiceError::Validation`] of `reason`.
    fn parse(new: &NewWalletLock, _: &ParseContext<'_>) -> Result<Self, ServiceError> {
        let wallet = wallet_number(&new.msisdn)?;
        let mut errors = Vec::new();
        check_text("reason", &new.reason, 200, false, &mut errors);
        checked(errors, Some(WalletLock { wallet, reason: new.reason.trim().to_owned() }))
    }
}

/// A wallet's KYC tier to raise, as received.
#[derive(Clone, Debug, Default)]
pub struct NewKyc {
    /// The wallet's number.
    pub msisdn: String,
    /// The tier asked for.
    pub tier: u8,
    /// One of the wallet's country's ID types.
    pub id_type: String,
    /// Must match the ID type's pattern.
    pub id_number: String,
}

/// A KYC tier to raise, parsed from [`NewKyc`]. The tier and the document are checked by the use
/// case against the found wallet's country (a wallet that does not exist is `not_found` first).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct RaiseKyc {
    /// The wallet.
    pub wallet: Msisdn,
    /// The tier asked for.
    pub tier: u8,
    /// The document's type, as given.
    pub id_type: String,
    /// The document's number, as given.
    pub id_number: String,
}

impl Command for RaiseKyc {
    type Raw = NewKyc;

    /// # Errors
    /// [`ServiceError::NotFound`] for a path that is no number.
    fn parse(new: &NewKyc, _: &ParseContext<'_>) -> Result<Self, ServiceError> {
        Ok(RaiseKyc { wallet: wallet_number(&new.msisdn)?, tier: new.tier, id_type: new.id_type.clone(), id_number: new.id_number.clone() })
    }
}

/// A wallet whose failed PIN attempts to forget, as received.
#[derive(Clone, Debug, Default)]
pub struct NewPinReset {
    /// The wallet's number.
    pub msisdn: String,
}

/// A wallet whose failed PIN attempts to forget, parsed from [`NewPinReset`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ResetPinAttempts {
    /// The wallet.
    pub wallet: Msisdn,
}

impl Command for ResetPinAttempts {
    type Raw = NewPinReset;

    /// # Errors
    /// [`ServiceError::NotFound`] for a path that is no number.
    fn parse(new: &NewPinReset, _: &ParseContext<'_>) -> Result<Self, ServiceError> {
        Ok(ResetPinAttempts { wallet: wallet_number(&new.msisdn)? })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use malipo_auth::OrgKind;
    use malipo_core::Mode;

    use super::*;
    use crate::commands::context::testing::{config, principal, Fixed};

    #[test]
    fn every_field_error_of_a_new_wallet_is_reported_at_once() {
        let (countries, webhooks) = config();
        let operator = principal(OrgKind::Operator, Mode::Live);
        let ctx = ParseContext::new(&countries, &operator, &webhooks, &Fixed);
        let new = NewWallet {
            msisdn: "254712345678".into(),
            first_name: "  ".into(),
            last_name: "N".repeat(65),
            id_type: Some("passport_card".into()),
            id_number: Some("1".into()),
            date_of_birth: Some("2027-01-01".into()),
        };
        let Err(ServiceError::Validation(errors)) = OpenWallet::parse(&new, &ctx) else { panic!("refused") };
        let got: Vec<(&str, &str)> = errors.iter().map(|e| (e.field.as_str(), e.code)).collect();
        assert_eq!(
            got,
            [("first_name", "missing_field"), ("last_name", "too_long"), ("id_type", "invalid_value"), ("date_of_birth", "invalid_value")]
        );
        assert_eq!(errors[3].message, "date_of_birth is in the future");
        let fine = OpenWallet::parse(
            &NewWallet {
                first_name: " Amina ".into(),
                last_name: "Otieno".into(),
                id_type: None,
                id_number: None,
                date_of_birth: None,
                ..new
            },
            &ctx,
        )
        .unwrap();
        assert_eq!(fine.first_name, "Amina", "trimmed");
    }

    #[test]
    fn a_path_that_is_no_number_names_no_wallet() {
        let (countries, webhooks) = config();
        let operator = principal(OrgKind::Operator, Mode::Live);
        let ctx = ParseContext::new(&countries, &operator, &webhooks, &Fixed);
        let lock = |msisdn: &str, reason: &str| WalletLock::parse(&NewWalletLock { msisdn: msisdn.into(), reason: reason.into() }, &ctx);
        assert_eq!(lock("07x", ""), Err(ServiceError::NotFound), "before the reason");
        assert!(matches!(lock("254712345678", " "), Err(ServiceError::Validation(ref e)) if e[0].field == "reason"));
        assert_eq!(lock("254712345678", " stolen ").unwrap().reason, "stolen");
    }
}
