//! Bulk payouts (`POST /bulk-payouts`, `…/approve`, `…/reject`), parsed.

use malipo_core::BulkPayoutId;
use malipo_payouts::{parse_bulk_csv, RawItem, MAX_BULK_ITEMS};

use super::context::{Command, ParseContext};
use super::payouts::{payout_line, PayoutLine};
use crate::error::{FieldError, ServiceError};
use crate::validate::{check_reference, check_text};

/// A bulk upload's items: JSON items already read, or a CSV file to read strictly.
#[derive(Clone, Debug)]
pub enum BulkInput {
    /// The JSON body's `items`.
    Items(Vec<RawItem>),
    /// A `text/csv` body.
    Csv(Vec<u8>),
}

/// A new bulk payout as received: the batch's reference and its items.
#[derive(Clone, Debug)]
pub struct NewBulkPayout {
    /// The batch's reference.
    pub reference: String,
    /// Its items.
    pub items: BulkInput,
}

/// A batch to create, parsed from [`NewBulkPayout`]: every item checked.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CreateBulkPayout {
    /// 1 to 64 printable characters.
    pub reference: String,
    /// 1 to [`MAX_BULK_ITEMS`] payouts, in the upload's order.
    pub items: Vec<PayoutLine>,
}

impl Command for CreateBulkPayout {
    type Raw = NewBulkPayout;

    /// # Errors
    /// [`ServiceError::Validation`]: `reference`; the CSV file's problems; `items` (none, or more
    /// than [`MAX_BULK_ITEMS`]); each item's (`items[N].field`).
    fn parse(new: &NewBulkPayout, ctx: &ParseContext<'_>) -> Result<Self, ServiceError> {
        let country = ctx.home()?;
        let mut errors = Vec::new();
        check_reference("reference", &new.reference, &mut errors);
        let read;
        let raw: &[RawItem] = match &new.items {
            BulkInput::Items(items) => items,
            BulkInput::Csv(bytes) => {
                read = parse_bulk_csv(bytes).unwrap_or_else(|problems| {
                    errors.extend(problems.into_iter().map(|p| FieldError::new(p.field, p.code, p.message)));
                    Vec::new()
                });
                &read
            }
        };
        if errors.is_empty() && raw.is_empty() {
            errors.push(FieldError::new("items", "too_few_items", "a bulk payout needs at least one item"));
        }
        if raw.len() > MAX_BULK_ITEMS {
            errors.push(FieldError::new("items", "too_many_items", format!("a bulk payout carries at most {MAX_BULK_ITEMS} items")));
        }
        let mut items = Vec::with_capacity(raw.len());
        if raw.len() <= MAX_BULK_ITEMS {
            for (n, item) in raw.iter().enumerate() {
                let fields = (item.payee_msisdn.as_str(), item.amount.as_str(), item.reference.as_str(), item.narration.as_deref());
                if let Some(line) = payout_line(ctx.countries(), country, &format!("items[{n}]."), fields, &mut errors) {
                    items.push(line);
                }
            }
        }
        if !errors.is_empty() {
            return Err(ServiceError::Validation(errors));
        }
        Ok(CreateBulkPayout { reference: new.reference.clone(), items })
    }
}

/// A batch to approve, named by its id (`bp_…`).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ApproveBulkPayout {
    /// The batch.
    pub batch: BulkPayoutId,
}

impl Command for ApproveBulkPayout {
    type Raw = str;

    /// # Errors
    /// [`ServiceError::NotFound`] for text that is no batch id.
    fn parse(batch_id: &str, _: &ParseContext<'_>) -> Result<Self, ServiceError> {
        Ok(ApproveBulkPayout { batch: BulkPayoutId::parse(batch_id).map_err(|_| ServiceError::NotFound)? })
    }
}

/// A checker's rejection of a batch as received.
#[derive(Clone, Debug, Default)]
pub struct NewRejection {
    /// The batch (`bp_…`).
    pub batch_id: String,
    /// Why (1 to 255 characters).
    pub reason: String,
}

/// A batch to reject, parsed from [`NewRejection`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct RejectBulkPayout {
    /// The batch.
    pub batch: BulkPayoutId,
    /// 1 to 255 printable characters, not only spaces.
    pub reason: String,
}

impl Command for RejectBulkPayout {
    type Raw = NewRejection;

    /// # Errors
    /// [`ServiceError::Validation`] of `reason`, then [`ServiceError::NotFound`] for text that
    /// is no batch id.
    fn parse(new: &NewRejection, _: &ParseContext<'_>) -> Result<Self, ServiceError> {
        let mut errors = Vec::new();
        check_text("reason", &new.reason, 255, false, &mut errors);
        if !errors.is_empty() {
            return Err(ServiceError::Validation(errors));
        }
        let batch = BulkPayoutId::parse(&new.batch_id).map_err(|_| ServiceError::NotFound)?;
        Ok(RejectBulkPayout { batch, reason: new.reason.clone() })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use malipo_auth::OrgKind;
    use malipo_core::Mode;

    use super::*;
    use crate::commands::context::testing::{config, principal, Fixed};

    fn parse(new: &NewBulkPayout) -> Result<CreateBulkPayout, ServiceError> {
        let (countries, webhooks) = config();
        let maker = principal(OrgKind::Corporate, Mode::Test);
        CreateBulkPayout::parse(new, &ParseContext::new(&countries, &maker, &webhooks, &Fixed))
    }

    fn item(payee: &str, amount: &str, reference: &str) -> RawItem {
        RawItem { payee_msisdn: payee.into(), amount: amount.into(), reference: reference.into(), narration: None }
    }

    #[test]
    fn every_item_error_is_reported_at_once_under_its_index() {
        let items = vec![
            item("254712345678", "10", "ok"),
            item("2547", "1.001", ""),
            item("254712345679", "5", "ok"),
            item("254712345670", "x", "ok"),
        ];
        let Err(ServiceError::Validation(errors)) = parse(&NewBulkPayout { reference: String::new(), items: BulkInput::Items(items) })
        else {
            panic!("refused")
        };
        let got: Vec<(&str, &str)> = errors.iter().map(|e| (e.field.as_str(), e.code)).collect();
        assert_eq!(
            got,
            [
                ("reference", "missing_field"),
                ("items[1].payee_msisdn", "invalid_msisdn"),
                ("items[1].amount", "invalid_amount"),
                ("items[1].reference", "missing_field"),
                ("items[3].amount", "invalid_amount"),
            ]
        );
    }

    #[test]
    fn a_csv_file_is_read_strictly_and_its_items_checked() {
        let csv = b"payee_msisdn,amount,reference,narration\n254712345678,1500.00,SALARY-1,November\n254712345679,2,SALARY-2,\n".to_vec();
        let batch = parse(&NewBulkPayout { reference: "PAYROLL".into(), items: BulkInput::Csv(csv) }).unwrap();
        assert_eq!(batch.items.len(), 2);
        assert_eq!(batch.items[0].payee.as_str(), "254712345678");
        let Err(ServiceError::Validation(errors)) = parse(&NewBulkPayout { reference: "P".into(), items: BulkInput::Items(Vec::new()) })
        else {
            panic!("refused")
        };
        assert_eq!(errors[0].code, "too_few_items");
    }
}
