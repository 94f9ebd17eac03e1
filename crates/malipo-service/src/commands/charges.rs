//! A new charge (`POST /partner/stk`), parsed.

use malipo_core::{Currency, MinorUnit, Msisdn};

use super::context::{checked, msisdn, Command, ParseContext};
use crate::error::{FieldError, ServiceError};
use crate::validate::{check_amount, check_optional_text, check_reference};

/// The fields of a new charge as received (the amount as its exact decimal text).
#[derive(Clone, Debug, Default)]
pub struct NewCharge {
    /// Customer phone number.
    pub payer_msisdn: String,
    /// Decimal text in major units.
    pub amount: String,
    /// Optional; must equal the merchant's collection currency.
    pub currency: Option<String>,
    /// The integrator's reference.
    pub reference: String,
    /// Optional text for the payer.
    pub description: Option<String>,
}

/// A charge to create, parsed from [`NewCharge`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CreateCharge {
    /// The payer, a number of a served country (whose currency the use case compares with the
    /// merchant's).
    pub payer: Msisdn,
    /// In the merchant's currency, at most its country's maximum charge.
    pub amount: MinorUnit,
    /// The currency the caller named, if any (compared with the merchant's by the use case).
    pub currency: Option<Currency>,
    /// 1 to 64 printable characters.
    pub reference: String,
    /// At most 100 printable characters (empty as given).
    pub description: Option<String>,
}

impl Command for CreateCharge {
    type Raw = NewCharge;

    /// # Errors
    /// [`ServiceError::Validation`]: `payer_msisdn`, `amount` (its form, or above the maximum
    /// single charge), `reference`, `description`, `currency` (its form).
    fn parse(new: &NewCharge, ctx: &ParseContext<'_>) -> Result<Self, ServiceError> {
        let merchant_country = ctx.home()?;
        let currency = merchant_country.currency;
        let mut errors = Vec::new();
        let payer = msisdn(ctx.countries(), "payer_msisdn", &new.payer_msisdn, &mut errors);
        let amount = check_amount("amount", &new.amount, currency, &mut errors);
        if let Some(a) = amount {
            if a > merchant_country.max_charge {
                errors.push(FieldError::new(
                    "amount",
                    "invalid_amount",
                    format!(
                        "amount exceeds the maximum single charge of {} {currency}",
                        currency.format_amount(merchant_country.max_charge)
                    ),
                ));
            }
        }
        check_reference("reference", &new.reference, &mut errors);
        check_optional_text("description", new.description.as_deref(), 100, &mut errors);
        let named = match new.currency.as_deref().map(Currency::new) {
            Some(Err(_)) => {
                errors.push(FieldError::new("currency", "invalid_currency", "currency must be a three-letter ISO 4217 code"));
                None
            }
            Some(Ok(c)) => Some(c),
            None => None,
        };
        let fields = payer.zip(amount).map(|((payer, _), amount)| CreateCharge {
            payer,
            amount,
            currency: named,
            reference: new.reference.clone(),
            description: new.description.clone(),
        });
        checked(errors, fields)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use malipo_auth::OrgKind;
    use malipo_core::Mode;

    use super::*;
    use crate::commands::context::testing::{config, principal, Fixed};

    fn parse(new: &NewCharge) -> Result<CreateCharge, ServiceError> {
        let (countries, webhooks) = config();
        let merchant = principal(OrgKind::Merchant, Mode::Test);
        CreateCharge::parse(new, &ParseContext::new(&countries, &merchant, &webhooks, &Fixed))
    }

    #[test]
    fn every_field_error_is_reported_at_once_in_the_fields_order() {
        let new = NewCharge {
            payer_msisdn: "07123".into(),
            amount: "10.001".into(),
            currency: Some("kes".into()),
            reference: String::new(),
            description: Some("x".repeat(101)),
        };
        let Err(ServiceError::Validation(errors)) = parse(&new) else { panic!("refused") };
        let got: Vec<(&str, &str)> = errors.iter().map(|e| (e.field.as_str(), e.code)).collect();
        assert_eq!(
            got,
            [
                ("payer_msisdn", "invalid_msisdn"),
                ("amount", "invalid_amount"),
                ("reference", "missing_field"),
                ("description", "too_long"),
                ("currency", "invalid_currency"),
            ]
        );
        assert_eq!(errors[3].message, "description must be at most 100 characters");
    }

    #[test]
    fn an_amount_above_the_maximum_charge_is_a_field_error() {
        let new =
            NewCharge { payer_msisdn: "254712345678".into(), amount: "250000.01".into(), reference: "R".into(), ..NewCharge::default() };
        let Err(ServiceError::Validation(errors)) = parse(&new) else { panic!("refused") };
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].message, "amount exceeds the maximum single charge of 250000.00 KES");
    }

    #[test]
    fn a_good_charge_is_typed() {
        let new = NewCharge {
            payer_msisdn: "256712345678".into(),
            amount: "250.5".into(),
            currency: Some("UGX".into()),
            reference: "ORDER-1".into(),
            description: Some(String::new()),
        };
        let c = parse(&new).unwrap();
        assert_eq!(
            (c.payer.as_str(), c.amount, c.currency.map(|c| c.as_str().to_owned())),
            ("256712345678", MinorUnit::new(25_050), Some("UGX".into()))
        );
        assert_eq!(c.description.as_deref(), Some(""), "kept as given");
    }
}
