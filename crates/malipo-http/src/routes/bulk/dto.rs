//! The wire shapes of the Bulk payouts group (contract section 6); its items are payouts
//! (`routes::shared::PayoutDto`).

use malipo_payouts::{BatchCounts, BulkPayout};
use malipo_service::NewRejection;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use utoipa::ToSchema;

use crate::schema::{Msisdn, Reason255, Reference, Text100};
use crate::wire::{money, time, DecimalAmount};

/// `POST /bulk-payouts` JSON body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BulkRequest {
    /// The batch's reference (1–64 characters).
    #[schema(value_type = Reference, example = "PAYROLL-2025-11")]
    pub reference: String,
    /// 1 to 10,000 payouts; each is read and checked on its own, and every bad one is reported
    /// (`items[N].field`, N from 0).
    #[schema(value_type = Vec<BulkItemRequest>, min_items = 1, max_items = 10000)]
    pub items: Vec<Box<RawValue>>,
}

/// One item of a JSON bulk payout: the fields of a payout.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BulkItemRequest {
    /// The payee's number, international digits without `+`.
    #[schema(value_type = Msisdn)]
    pub payee_msisdn: String,
    /// Amount in major units: a JSON number or a numeric string.
    #[schema(value_type = DecimalAmount, example = "1500.00")]
    pub amount: Box<RawValue>,
    /// The item's reference (1–64 characters).
    #[schema(value_type = Reference, example = "SALARY-11-007")]
    pub reference: String,
    /// Optional text for the payee (at most 100 characters).
    #[schema(value_type = Option<Text100>, example = "November salary")]
    pub narration: Option<String>,
}

/// `POST /bulk-payouts/{batch_id}/approve` body: none, or an empty object.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ApproveRequest {}

/// `POST /bulk-payouts/{batch_id}/reject` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RejectRequest {
    /// Why (1–255 characters); kept as the batch's `rejection_reason`.
    #[schema(value_type = Reason255, example = "wrong month")]
    pub reason: String,
}

impl RejectRequest {
    /// The use case's raw input for the batch `batch_id` (the path's).
    pub fn into_new(self, batch_id: String) -> NewRejection {
        NewRejection { batch_id, reason: self.reason }
    }
}

/// How many of a batch's items are in each state; always sums to `item_count`.
#[derive(Debug, Serialize, ToSchema)]
pub struct BatchCountsDto {
    /// Not yet paid or failed (every item before approval).
    pub pending: u32,
    /// Paid.
    pub completed: u32,
    /// Failed, or never paid because the batch was rejected.
    pub failed: u32,
}

impl From<BatchCounts> for BatchCountsDto {
    fn from(c: BatchCounts) -> Self {
        BatchCountsDto { pending: c.pending, completed: c.completed, failed: c.failed }
    }
}

/// A bulk payout batch.
#[derive(Debug, Serialize, ToSchema)]
pub struct BulkPayoutDto {
    /// `bp_…`.
    pub batch_id: String,
    /// `awaiting_approval`, `processing`, `completed` or `rejected`.
    pub state: &'static str,
    /// `test` or `live`.
    pub mode: &'static str,
    /// The batch's reference.
    pub reference: String,
    /// ISO 4217: the payout account's currency.
    pub currency: String,
    /// Fixed at creation.
    pub item_count: u32,
    /// Sum of the items' amounts, fixed at creation.
    #[schema(value_type = f64, example = 4500.00)]
    pub total_amount: Box<RawValue>,
    /// Sum of the items' payout fees, fixed at creation (approval reserves total_amount + total_fees).
    #[schema(value_type = f64)]
    pub total_fees: Box<RawValue>,
    /// The maker's client id.
    pub created_by: String,
    /// The checker's client id, once approved.
    pub approved_by: Option<String>,
    /// The checker's client id, once rejected.
    pub rejected_by: Option<String>,
    /// The checker's reason, once rejected.
    pub rejection_reason: Option<String>,
    /// Items by state.
    pub counts: BatchCountsDto,
    /// RFC 3339 UTC.
    pub created_at: String,
    /// RFC 3339 UTC.
    pub approved_at: Option<String>,
    /// RFC 3339 UTC: when the last item settled, or when rejected.
    pub completed_at: Option<String>,
}

impl From<&BulkPayout> for BulkPayoutDto {
    fn from(b: &BulkPayout) -> Self {
        BulkPayoutDto {
            batch_id: b.id.to_string(),
            state: b.state.as_str(),
            mode: b.mode.as_str(),
            reference: b.reference.clone(),
            currency: b.currency.to_string(),
            item_count: b.item_count,
            total_amount: money(b.total_amount, b.currency),
            total_fees: money(b.total_fees, b.currency),
            created_by: b.created_by.clone(),
            approved_by: b.approved_by.clone(),
            rejected_by: b.rejected_by.clone(),
            rejection_reason: b.rejection_reason.clone(),
            counts: b.counts.into(),
            created_at: time(b.created_at),
            approved_at: b.approved_at.map(time),
            completed_at: b.completed_at.map(time),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use malipo_payouts::BatchState;

    use crate::extract::parse_json;
    use crate::problem::ApiError;
    use crate::testing::{at, batch};

    #[test]
    fn a_batch_renders_every_field_of_the_contract_in_order() {
        assert_eq!(
            serde_json::to_string(&BulkPayoutDto::from(&batch())).unwrap(),
            concat!(
                r#"{"batch_id":"bp_batch1","state":"processing","mode":"live","reference":"PAYROLL-2025-11","currency":"KES","#,
                r#""item_count":3,"total_amount":4500.00,"total_fees":45.00,"created_by":"ck_live_maker","approved_by":"ck_live_checker","#,
                r#""rejected_by":null,"rejection_reason":null,"counts":{"pending":1,"completed":1,"failed":1},"#,
                r#""created_at":"2025-11-22T10:00:00Z","approved_at":"2025-11-22T10:01:00Z","completed_at":null}"#
            )
        );
    }

    #[test]
    fn a_rejected_batch_names_its_checker_and_reason() {
        let mut b = batch();
        b.state = BatchState::Rejected;
        b.approved_by = None;
        b.approved_at = None;
        b.rejected_by = Some("ck_live_checker".into());
        b.rejection_reason = Some("wrong month".into());
        b.completed_at = Some(at(60));
        let json = serde_json::to_string(&BulkPayoutDto::from(&b)).unwrap();
        assert!(json.contains(r#""state":"rejected","#), "{json}");
        assert!(json.contains(r#""approved_by":null,"rejected_by":"ck_live_checker","rejection_reason":"wrong month","#), "{json}");
        assert!(json.contains(r#""approved_at":null,"completed_at":"2025-11-22T10:01:00Z"}"#), "{json}");
    }

    #[test]
    fn approval_takes_nothing_or_an_empty_object_and_rejection_a_reason() {
        assert!(parse_json::<ApproveRequest>(b"{}").is_ok());
        assert!(matches!(parse_json::<ApproveRequest>(br#"{"note":"ok"}"#), Err(ApiError::Fields(_))));
        assert_eq!(parse_json::<RejectRequest>(br#"{"reason":"wrong month"}"#).unwrap().value.reason, "wrong month");
        let e = parse_json::<RejectRequest>(b"{}").unwrap_err();
        assert!(matches!(e, ApiError::Fields(ref f) if f[0].field == "reason" && f[0].code == "missing_field"), "{e:?}");
    }
}
