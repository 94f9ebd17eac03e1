//! A new payout (`POST /payouts`), and the fields every payout has, single or in a batch.

use malipo_core::{Currency, MinorUnit, Msisdn};
use malipo_countries::{Countries, Country};

use super::context::{Command, ParseContext};
use crate::error::{FieldError, ServiceError};
use crate::validate::{check_amount, check_optional_text, check_reference};

/// The fields of a new payout as received (the amount as its exact decimal text).
#[derive(Clone, Debug, Default)]
pub struct NewPayout {
    /// The payee's number.
    pub payee_msisdn: String,
    /// Decimal text in major units.
    pub amount: String,
    /// The integrator's reference.
    pub reference: String,
    /// Optional; must equal the payout account's currency.
    pub currency: Option<String>,
    /// Optional text for the payee (at most 100 characters).
    pub narration: Option<String>,
}

/// One payout's fields, checked: a single payout's, and each item's of a bulk payout.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct PayoutLine {
    /// The payee, a number of a country of the paying organisation's currency.
    pub payee: Msisdn,
    /// In the paying organisation's currency.
    pub amount: MinorUnit,
    /// 1 to 64 printable characters.
    pub reference: String,
    /// At most 100 printable characters (empty as given).
    pub narration: Option<String>,
}

/// A payout to create, parsed from [`NewPayout`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CreatePayout {
    /// Payee, amount, reference and narration.
    pub line: PayoutLine,
    /// The currency the caller named, if any (compared with the payout account's by the use
    /// case).
    pub currency: Option<Currency>,
}

/// Checks a payout's fields against the paying organisation's country; problems go to `errors`
/// with field names under `prefix` (`""` or `items[3].`).
pub(crate) fn payout_line(
    countries: &Countries,
    country: &Country,
    prefix: &str,
    (payee, amount, reference, narration): (&str, &str, &str, Option<&str>),
    errors: &mut Vec<FieldError>,
) -> Option<PayoutLine> {
    let currency = country.currency;
    let field = |name: &str| format!("{prefix}{name}");
    let before = errors.len();
    let payee = match countries.parse_msisdn(payee) {
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
    Some(PayoutLine { payee: payee?, amount: amount?, reference: reference.to_owned(), narration: narration.map(str::to_owned) })
}

impl Command for CreatePayout {
    type Raw = NewPayout;

    /// # Errors
    /// [`ServiceError::Validation`]: `payee_msisdn` (its form, or a number of another
    /// currency), `amount`, `reference`, `narration`; then, only when those are right,
    /// `currency` (its form).
    fn parse(new: &NewPayout, ctx: &ParseContext<'_>) -> Result<Self, ServiceError> {
        let country = ctx.home()?;
        let mut errors = Vec::new();
        let fields = (new.payee_msisdn.as_str(), new.amount.as_str(), new.reference.as_str(), new.narration.as_deref());
        let line = payout_line(ctx.countries(), country, "", fields, &mut errors);
        let Some(line) = line.filter(|_| errors.is_empty()) else {
            return Err(ServiceError::Validation(errors));
        };
        // The currency's form is looked at once the payout's own fields are right.
        let currency = new
            .currency
            .as_deref()
            .map(|c| {
                Currency::new(c)
                    .map_err(|_| ServiceError::field("currency", "invalid_currency", "currency must be a three-letter ISO 4217 code"))
            })
            .transpose()?;
        Ok(CreatePayout { line, currency })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use malipo_auth::OrgKind;
    use malipo_core::Mode;

    use super::*;
    use crate::commands::context::testing::{config, principal, Fixed};

    fn parse(new: &NewPayout) -> Result<CreatePayout, ServiceError> {
        let (countries, webhooks) = config();
        let corporate = principal(OrgKind::Corporate, Mode::Live);
        CreatePayout::parse(new, &ParseContext::new(&countries, &corporate, &webhooks, &Fixed))
    }

    fn fields(e: ServiceError) -> Vec<(String, &'static str)> {
        match e {
            ServiceError::Validation(errors) => errors.into_iter().map(|e| (e.field, e.code)).collect(),
            other => panic!("expected field errors, got {other:?}"),
        }
    }

    #[test]
    fn every_field_error_is_reported_at_once_and_the_currency_after_them() {
        let new = NewPayout {
            payee_msisdn: "256712345678".into(),
            amount: "-1".into(),
            reference: "R\u{202E}".into(),
            currency: Some("K".into()),
            narration: Some("n".repeat(101)),
        };
        assert_eq!(
            fields(parse(&new).unwrap_err()),
            [
                ("payee_msisdn".into(), "currency_mismatch"),
                ("amount".into(), "invalid_amount"),
                ("reference".into(), "invalid_value"),
                ("narration".into(), "too_long"),
            ]
        );
        let fine = NewPayout { payee_msisdn: "254712345678".into(), amount: "1".into(), reference: "R".into(), ..new };
        assert_eq!(fields(parse(&NewPayout { narration: None, ..fine.clone() }).unwrap_err()), [("currency".into(), "invalid_currency")]);
        let other = parse(&NewPayout { narration: None, currency: Some("UGX".into()), ..fine }).unwrap();
        assert_eq!(other.currency.map(|c| c.as_str().to_owned()).as_deref(), Some("UGX"), "compared by the use case");
        assert_eq!(other.line.amount, MinorUnit::new(100));
    }
}
