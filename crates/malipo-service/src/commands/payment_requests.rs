//! Merchant payment requests (`POST /biz/request`, `…/cancel`), parsed.

use malipo_core::{MinorUnit, Msisdn, PaymentRequestId};
use malipo_requests::{DEFAULT_EXPIRES_IN_SECONDS, EXPIRES_IN_SECONDS};

use super::context::{msisdn, Command, ParseContext};
use crate::error::{FieldError, ServiceError};
use crate::validate::{check_amount, check_optional_text, check_reference};

/// The fields of a new payment request as received (the amount as its exact decimal text).
#[derive(Clone, Debug, Default)]
pub struct NewPaymentRequest {
    /// Decimal text in major units.
    pub amount: String,
    /// The merchant's reference.
    pub reference: String,
    /// Optional text (at most 100 characters).
    pub description: Option<String>,
    /// Optional: the customer it is addressed to.
    pub payer_msisdn: Option<String>,
    /// Optional: seconds until it expires (60 to 604,800; default 86,400).
    pub expires_in: Option<i64>,
}

/// A payment request to create, parsed from [`NewPaymentRequest`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CreatePaymentRequest {
    /// In the merchant's currency, at most its country's maximum charge.
    pub amount: MinorUnit,
    /// 1 to 64 printable characters.
    pub reference: String,
    /// At most 100 printable characters (empty as given).
    pub description: Option<String>,
    /// The customer it is addressed to, a number of a served country (whose currency the use
    /// case compares with the merchant's).
    pub payer: Option<Msisdn>,
    /// Seconds until it expires, within [`EXPIRES_IN_SECONDS`].
    pub expires_in: i64,
}

impl Command for CreatePaymentRequest {
    type Raw = NewPaymentRequest;

    /// # Errors
    /// [`ServiceError::Validation`]: `amount` (its form, or above the maximum single payment),
    /// `reference`, `description`, `payer_msisdn`, `expires_in`.
    fn parse(new: &NewPaymentRequest, ctx: &ParseContext<'_>) -> Result<Self, ServiceError> {
        let country = ctx.home()?;
        let currency = country.currency;
        let mut errors = Vec::new();
        let amount = check_amount("amount", &new.amount, currency, &mut errors);
        if amount.is_some_and(|a| a > country.max_charge) {
            let max = currency.format_amount(country.max_charge);
            errors.push(FieldError::new(
                "amount",
                "invalid_amount",
                format!("amount exceeds the maximum single payment of {max} {currency}"),
            ));
        }
        check_reference("reference", &new.reference, &mut errors);
        check_optional_text("description", new.description.as_deref(), 100, &mut errors);
        let payer = new.payer_msisdn.as_deref().and_then(|m| msisdn(ctx.countries(), "payer_msisdn", m, &mut errors));
        let expires_in = new.expires_in.unwrap_or(DEFAULT_EXPIRES_IN_SECONDS);
        if !EXPIRES_IN_SECONDS.contains(&expires_in) {
            let (min, max) = (EXPIRES_IN_SECONDS.start(), EXPIRES_IN_SECONDS.end());
            errors.push(FieldError::new("expires_in", "invalid_value", format!("expires_in must be {min} to {max} seconds")));
        }
        let Some(amount) = amount.filter(|_| errors.is_empty()) else {
            return Err(ServiceError::Validation(errors));
        };
        Ok(CreatePaymentRequest {
            amount,
            reference: new.reference.clone(),
            description: new.description.clone(),
            payer: payer.map(|(m, _)| m),
            expires_in,
        })
    }
}

/// A payment request to cancel, named by its id (`pr_…`).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CancelPaymentRequest {
    /// The request.
    pub request: PaymentRequestId,
}

impl Command for CancelPaymentRequest {
    type Raw = str;

    /// # Errors
    /// [`ServiceError::NotFound`] for text that is no payment request id.
    fn parse(request_id: &str, _: &ParseContext<'_>) -> Result<Self, ServiceError> {
        Ok(CancelPaymentRequest { request: PaymentRequestId::parse(request_id).map_err(|_| ServiceError::NotFound)? })
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
    fn every_field_error_is_reported_at_once() {
        let (countries, webhooks) = config();
        let merchant = principal(OrgKind::Merchant, Mode::Live);
        let ctx = ParseContext::new(&countries, &merchant, &webhooks, &Fixed);
        let new = NewPaymentRequest {
            amount: "250000.01".into(),
            reference: "r".repeat(65),
            description: Some("a\u{200B}b".into()),
            payer_msisdn: Some("0712345678".into()),
            expires_in: Some(59),
        };
        let Err(ServiceError::Validation(errors)) = CreatePaymentRequest::parse(&new, &ctx) else { panic!("refused") };
        let got: Vec<(&str, &str)> = errors.iter().map(|e| (e.field.as_str(), e.code)).collect();
        assert_eq!(
            got,
            [
                ("amount", "invalid_amount"),
                ("reference", "too_long"),
                ("description", "invalid_value"),
                ("payer_msisdn", "invalid_msisdn"),
                ("expires_in", "invalid_value"),
            ]
        );
        assert_eq!(errors[4].message, "expires_in must be 60 to 604800 seconds");
        let fine = CreatePaymentRequest::parse(
            &NewPaymentRequest { amount: "5".into(), reference: "INV".into(), ..NewPaymentRequest::default() },
            &ctx,
        );
        assert_eq!(fine.unwrap().expires_in, DEFAULT_EXPIRES_IN_SECONDS);
        assert_eq!(CancelPaymentRequest::parse("ch_1", &ctx), Err(ServiceError::NotFound));
    }
}
