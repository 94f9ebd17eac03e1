//! A transfer between an organisation's own accounts (`POST /accounts/transfers`), parsed.

use malipo_core::MinorUnit;
use malipo_ledger::AccountKind;

use super::context::{Command, ParseContext};
use crate::error::{FieldError, ServiceError};
use crate::validate::check_amount;

/// The fields of a transfer as received (the amount as its exact decimal text).
#[derive(Clone, Debug, Default)]
pub struct NewTransfer {
    /// `collection` or `payout`.
    pub from: String,
    /// `collection` or `payout`, not `from`.
    pub to: String,
    /// Decimal text in major units.
    pub amount: String,
}

/// A transfer to make, parsed from [`NewTransfer`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CreateTransfer {
    /// The account debited.
    pub from: AccountKind,
    /// The account credited (not `from`).
    pub to: AccountKind,
    /// In the organisation's currency.
    pub amount: MinorUnit,
}

/// The accounts a transfer may name.
fn transfer_account(field: &str, value: &str, errors: &mut Vec<FieldError>) -> Option<AccountKind> {
    match value {
        "collection" => Some(AccountKind::Collection),
        "payout" => Some(AccountKind::Payout),
        _ => {
            errors.push(FieldError::new(field, "invalid_value", format!("{field} must be collection or payout")));
            None
        }
    }
}

impl Command for CreateTransfer {
    type Raw = NewTransfer;

    /// # Errors
    /// [`ServiceError::Validation`]: `from`, `to` (either account, or the same as `from`),
    /// `amount`.
    fn parse(new: &NewTransfer, ctx: &ParseContext<'_>) -> Result<Self, ServiceError> {
        let currency = ctx.home()?.currency;
        let mut errors = Vec::new();
        let from = transfer_account("from", &new.from, &mut errors);
        let to = transfer_account("to", &new.to, &mut errors);
        let amount = check_amount("amount", &new.amount, currency, &mut errors);
        if from.is_some() && from == to {
            errors.push(FieldError::new("to", "invalid_value", "to must differ from from"));
        }
        let (Some(from), Some(to), Some(amount), true) = (from, to, amount, errors.is_empty()) else {
            return Err(ServiceError::Validation(errors));
        };
        Ok(CreateTransfer { from, to, amount })
    }
}
