//! A new reversal (`POST /reversals`), parsed.

use malipo_core::{ChargeRef, MinorUnit, PayoutRef, TransactionId};
use malipo_payouts::ReversalOriginal;

use super::context::{Command, ParseContext};
use crate::error::{FieldError, ServiceError};
use crate::validate::{check_amount, check_text};

/// The fields of a new reversal as received: exactly one of the three originals.
#[derive(Clone, Debug, Default)]
pub struct NewReversal {
    /// A charge (`ch_…`).
    pub charge_ref: Option<String>,
    /// A payout (`po_…`).
    pub payout_ref: Option<String>,
    /// A charge's or payout's ledger transaction (`tx_…`).
    pub transaction_id: Option<String>,
    /// Decimal text in major units; the whole remainder when left out.
    pub amount: Option<String>,
    /// Why (1 to 255 characters).
    pub reason: String,
}

/// What a reversal names: the original itself, or its ledger transaction (whose original the
/// use case looks up).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReversalTarget {
    /// A charge or a payout.
    Original(ReversalOriginal),
    /// A charge's or payout's transaction.
    Transaction(TransactionId),
}

/// A reversal to make, parsed from [`NewReversal`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CreateReversal {
    /// The original.
    pub target: ReversalTarget,
    /// How much, in the caller's currency; the whole remainder when `None`.
    pub amount: Option<MinorUnit>,
    /// 1 to 255 printable characters, not only spaces.
    pub reason: String,
}

impl Command for CreateReversal {
    type Raw = NewReversal;

    /// # Errors
    /// [`ServiceError::Validation`]: `reason`; not exactly one original (under `charge_ref`),
    /// or one that is no id of its kind; `amount`.
    fn parse(new: &NewReversal, ctx: &ParseContext<'_>) -> Result<Self, ServiceError> {
        let mut errors = Vec::new();
        check_text("reason", &new.reason, 255, false, &mut errors);
        let charge = |c: ChargeRef| ReversalTarget::Original(ReversalOriginal::Charge(c));
        let payout = |p: PayoutRef| ReversalTarget::Original(ReversalOriginal::Payout(p));
        // `Ok(None)`: not exactly one given (already reported); `Err(field)`: it does not parse.
        let target: Result<Option<ReversalTarget>, &str> = match (&new.charge_ref, &new.payout_ref, &new.transaction_id) {
            (Some(c), None, None) => ChargeRef::parse(c).map(|c| Some(charge(c))).map_err(|_| "charge_ref"),
            (None, Some(p), None) => PayoutRef::parse(p).map(|p| Some(payout(p))).map_err(|_| "payout_ref"),
            (None, None, Some(t)) => TransactionId::parse(t).map(|t| Some(ReversalTarget::Transaction(t))).map_err(|_| "transaction_id"),
            (None, None, None) => {
                errors.push(FieldError::new("charge_ref", "missing_field", "give one of charge_ref, payout_ref and transaction_id"));
                Ok(None)
            }
            _ => {
                errors.push(FieldError::new("charge_ref", "invalid_value", "give only one of charge_ref, payout_ref and transaction_id"));
                Ok(None)
            }
        };
        let target = target.unwrap_or_else(|field| {
            errors.push(FieldError::new(field, "invalid_value", format!("{field} is not a valid identifier")));
            None
        });
        let currency = ctx.home()?.currency;
        let amount = new.amount.as_deref().and_then(|a| check_amount("amount", a, currency, &mut errors));
        let (Some(target), true) = (target, errors.is_empty()) else {
            return Err(ServiceError::Validation(errors));
        };
        Ok(CreateReversal { target, amount, reason: new.reason.clone() })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use malipo_auth::OrgKind;
    use malipo_core::Mode;

    use super::*;
    use crate::commands::context::testing::{config, principal, Fixed};

    fn parse(new: &NewReversal) -> Result<CreateReversal, ServiceError> {
        let (countries, webhooks) = config();
        let merchant = principal(OrgKind::Merchant, Mode::Test);
        CreateReversal::parse(new, &ParseContext::new(&countries, &merchant, &webhooks, &Fixed))
    }

    fn fields(new: &NewReversal) -> Vec<(String, &'static str)> {
        match parse(new) {
            Err(ServiceError::Validation(errors)) => errors.into_iter().map(|e| (e.field, e.code)).collect(),
            other => panic!("expected field errors, got {other:?}"),
        }
    }

    #[test]
    fn every_field_error_is_reported_at_once() {
        let two = NewReversal {
            charge_ref: Some("ch_1".into()),
            payout_ref: Some("po_1".into()),
            amount: Some("0".into()),
            reason: " ".into(),
            ..NewReversal::default()
        };
        assert_eq!(
            fields(&two),
            [("reason".into(), "missing_field"), ("charge_ref".into(), "invalid_value"), ("amount".into(), "invalid_amount")]
        );
        let none = NewReversal { reason: "refund".into(), ..NewReversal::default() };
        assert_eq!(fields(&none), [("charge_ref".into(), "missing_field")]);
        let bad =
            NewReversal { payout_ref: Some("ch_1".into()), amount: Some("1.234".into()), reason: "r".into(), ..NewReversal::default() };
        assert_eq!(fields(&bad), [("payout_ref".into(), "invalid_value"), ("amount".into(), "invalid_amount")]);
    }

    #[test]
    fn a_transaction_or_an_original_is_named() {
        let by_tx = NewReversal { transaction_id: Some("tx_1".into()), reason: "r".into(), ..NewReversal::default() };
        let r = parse(&by_tx).unwrap();
        assert!(matches!(r.target, ReversalTarget::Transaction(_)));
        assert_eq!(r.amount, None, "the whole remainder");
        let part = NewReversal { charge_ref: Some("ch_1".into()), amount: Some("2.50".into()), ..by_tx };
        let r = parse(&NewReversal { transaction_id: None, ..part }).unwrap();
        assert_eq!(r.amount, Some(MinorUnit::new(250)));
    }
}
