//! The checks every payout's fields go through, for a single payout and each bulk item alike.

use malipo_core::{Currency, MinorUnit, Msisdn};
use malipo_countries::{Country, FeeOperation};

use crate::core::Core;
use crate::error::{FieldError, ServiceError};
use crate::validate::{check_amount, check_optional_text, check_reference};

/// One payout's fields, checked: what a single payout and every bulk item go through.
pub(crate) struct CheckedPayout {
    pub(crate) payee: Msisdn,
    pub(crate) amount: MinorUnit,
    pub(crate) fee: MinorUnit,
    pub(crate) reference: String,
    pub(crate) narration: Option<String>,
}

/// Checks a payout's fields against the paying organisation's country; problems go to
/// `errors` with field names under `prefix` (`""` or `items[3].`).
pub(crate) fn check_payout(
    core: &Core,
    country: &Country,
    prefix: &str,
    (payee, amount, reference, narration): (&str, &str, &str, Option<&str>),
    errors: &mut Vec<FieldError>,
) -> Option<CheckedPayout> {
    let currency = country.currency;
    let field = |name: &str| format!("{prefix}{name}");
    let before = errors.len();
    let payee = match core.countries.parse_msisdn(payee) {
        Ok((m, c)) if c.currency == currency => Some(m),
        Ok((_, c)) => {
            errors.push(FieldError::new(
                field("payee_msisdn"),
                "currency_mismatch",
                format!("{} is a {} number; payouts of this organisation are in {currency}", field("payee_msisdn"), c.code),
            ));
            None
        }
        Err(e) => {
            errors.push(FieldError::new(field("payee_msisdn"), "invalid_msisdn", format!("{} {e}", field("payee_msisdn"))));
            None
        }
    };
    let amount = check_amount(&field("amount"), amount, currency, errors);
    check_reference(&field("reference"), reference, errors);
    check_optional_text(&field("narration"), narration, 100, errors);
    if errors.len() != before {
        return None;
    }
    let (payee, amount) = (payee?, amount?);
    Some(CheckedPayout {
        payee,
        amount,
        fee: country.fee(FeeOperation::Payout, amount),
        reference: reference.to_owned(),
        narration: narration.map(str::to_owned),
    })
}

/// The `currency` a request names, which must be the payout account's.
pub(crate) fn check_currency(given: Option<&str>, currency: Currency) -> Result<(), ServiceError> {
    match given {
        Some(c) if Currency::new(c).is_err() => {
            Err(ServiceError::field("currency", "invalid_currency", "currency must be a three-letter ISO 4217 code"))
        }
        Some(c) if c != currency.as_str() => {
            Err(ServiceError::CurrencyMismatch(format!("currency must be {currency}, the payout account's currency")))
        }
        _ => Ok(()),
    }
}
