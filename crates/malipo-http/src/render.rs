//! The wire forms of events: the `data` of each kind of event (the object as the API shows
//! it), and the body of each delivery (contract section 12).

use malipo_charges::Charge;
use malipo_core::MinorUnit;
use malipo_payouts::{BulkPayout, Payout, Reversal};
use malipo_requests::PaymentRequest;
use malipo_service::EventRenderer;
use malipo_webhooks::{Event, Summary};
use serde::Serialize;
use serde_json::value::RawValue;

use crate::routes::agents::dto::CashOutDto;
use crate::routes::bulk::dto::BulkPayoutDto;
use crate::routes::payment_requests::dto::PaymentRequestDto;
use crate::routes::reversals::dto::ReversalDto;
use crate::routes::shared::{ChargeDto, PayoutDto};
use crate::wire::money;

/// Renders events as the API's JSON.
#[derive(Debug, Default, Clone, Copy)]
pub struct JsonEvents;

/// A `charge.*` delivery: the seed's fields at the top level, then the envelope.
#[derive(Serialize)]
struct ChargeEnvelope<'a> {
    id: &'a str,
    event: &'a str,
    created_at: String,
    mode: &'a str,
    timestamp: i64,
    charge_ref: &'a str,
    amount: Option<&'a RawValue>,
    currency: Option<&'a str>,
    state: Option<&'a str>,
    reference: Option<&'a str>,
    data: &'a RawValue,
    signature: &'a str,
}

/// Any other delivery (`cash_out.completed`, `payout.*`, ...): the envelope around the full object.
#[derive(Serialize)]
struct Envelope<'a> {
    id: &'a str,
    event: &'a str,
    created_at: String,
    mode: &'a str,
    timestamp: i64,
    data: &'a RawValue,
    signature: &'a str,
}

/// A `payout.*` event's `data`: the payout, then the payout account's available balance right
/// after it settled.
#[derive(Serialize)]
struct PayoutEventData {
    #[serde(flatten)]
    payout: PayoutDto,
    payout_account_available: Box<RawValue>,
}

fn json<T: Serialize>(value: &T) -> Vec<u8> {
    serde_json::to_vec(value).unwrap_or_else(|_| b"{}".to_vec())
}

fn raw(bytes: &[u8]) -> Box<RawValue> {
    std::str::from_utf8(bytes)
        .ok()
        .and_then(|s| RawValue::from_string(s.to_owned()).ok())
        .unwrap_or_else(|| RawValue::from_string("{}".to_owned()).unwrap_or_default())
}

impl EventRenderer for JsonEvents {
    fn charge(&self, charge: &Charge) -> (Vec<u8>, Summary) {
        let data = serde_json::to_vec(&ChargeDto::from(charge)).unwrap_or_else(|_| b"{}".to_vec());
        let summary = Summary {
            amount: Some(charge.currency.format_amount(charge.amount)),
            currency: Some(charge.currency.to_string()),
            state: Some(charge.state.as_str().to_owned()),
            reference: Some(charge.reference.clone()),
        };
        (data, summary)
    }

    fn cash_out(&self, cash_out: &Charge) -> (Vec<u8>, Summary) {
        let data = serde_json::to_vec(&CashOutDto::from(cash_out)).unwrap_or_else(|_| b"{}".to_vec());
        let summary = Summary {
            amount: Some(cash_out.currency.format_amount(cash_out.amount)),
            currency: Some(cash_out.currency.to_string()),
            state: Some(cash_out.state.as_str().to_owned()),
            reference: None,
        };
        (data, summary)
    }

    fn payout(&self, payout: &Payout, payout_account_available: MinorUnit) -> (Vec<u8>, Summary) {
        let data =
            PayoutEventData { payout: PayoutDto::from(payout), payout_account_available: money(payout_account_available, payout.currency) };
        let summary = Summary {
            amount: Some(payout.currency.format_amount(payout.amount)),
            currency: Some(payout.currency.to_string()),
            state: Some(payout.state.as_str().to_owned()),
            reference: Some(payout.reference.clone()),
        };
        (json(&data), summary)
    }

    fn bulk_payout(&self, batch: &BulkPayout) -> (Vec<u8>, Summary) {
        let summary = Summary {
            amount: Some(batch.currency.format_amount(batch.total_amount)),
            currency: Some(batch.currency.to_string()),
            state: Some(batch.state.as_str().to_owned()),
            reference: Some(batch.reference.clone()),
        };
        (json(&BulkPayoutDto::from(batch)), summary)
    }

    fn payment_request(&self, request: &PaymentRequest) -> (Vec<u8>, Summary) {
        let summary = Summary {
            amount: Some(request.currency.format_amount(request.amount)),
            currency: Some(request.currency.to_string()),
            state: Some(request.state.as_str().to_owned()),
            reference: Some(request.reference.clone()),
        };
        (json(&PaymentRequestDto::from(request)), summary)
    }

    fn reversal(&self, reversal: &Reversal) -> (Vec<u8>, Summary) {
        let summary = Summary {
            amount: Some(reversal.currency.format_amount(reversal.amount)),
            currency: Some(reversal.currency.to_string()),
            state: Some("completed".to_owned()),
            reference: None,
        };
        (json(&ReversalDto::from(reversal)), summary)
    }

    fn delivery_body(&self, event: &Event, timestamp: i64, signature: &str) -> Vec<u8> {
        let data = raw(&event.data);
        let created_at = event.created_at.to_rfc3339();
        let body = if event.kind.starts_with("charge.") {
            let amount = event.summary.amount.as_deref().and_then(|a| RawValue::from_string(a.to_owned()).ok());
            serde_json::to_vec(&ChargeEnvelope {
                id: event.id.as_str(),
                event: &event.kind,
                created_at,
                mode: event.mode.as_str(),
                timestamp,
                charge_ref: &event.object_id,
                amount: amount.as_deref(),
                currency: event.summary.currency.as_deref(),
                state: event.summary.state.as_deref(),
                reference: event.summary.reference.as_deref(),
                data: &data,
                signature,
            })
        } else {
            serde_json::to_vec(&Envelope {
                id: event.id.as_str(),
                event: &event.kind,
                created_at,
                mode: event.mode.as_str(),
                timestamp,
                data: &data,
                signature,
            })
        };
        body.unwrap_or_else(|_| b"{}".to_vec())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use malipo_charges::{ChargeKind, ChargeState};
    use malipo_core::{AccountId, ChargeRef, Currency, EventId, MinorUnit, Mode, Msisdn, OrgId, Timestamp, WithdrawalRef};

    fn completed(kind: ChargeKind, id: ChargeRef, fee: i64, commission: i64) -> Charge {
        let t = Timestamp::from_micros(1_763_805_600_000_000);
        Charge {
            id,
            kind,
            org_id: OrgId::new(),
            mode: Mode::Test,
            payer_msisdn: Msisdn::parse("254712345678").unwrap(),
            amount: MinorUnit::new(25_000),
            fee: MinorUnit::new(fee),
            commission: MinorUnit::new(commission),
            currency: Currency::KES,
            amount_reversed: MinorUnit::ZERO,
            reference: "ORDER-1042".into(),
            description: None,
            state: ChargeState::Completed,
            failure_reason: None,
            transaction_id: None,
            merchant_account: AccountId::new(),
            payer_account: None,
            created_at: t,
            updated_at: t,
            expires_at: t,
            completed_at: Some(t),
            next_action_at: None,
        }
    }

    fn event(charge: &Charge, kind: &str, (data, summary): (Vec<u8>, Summary)) -> Event {
        Event {
            id: EventId::new(),
            org_id: charge.org_id.clone(),
            mode: Mode::Test,
            kind: kind.into(),
            object_id: charge.id.to_string(),
            data,
            summary,
            created_at: charge.created_at,
        }
    }

    #[test]
    fn charge_delivery_has_the_seed_fields_and_the_full_object() {
        let charge = completed(ChargeKind::Charge, ChargeRef::new(), 200, 0);
        let event = event(&charge, "charge.completed", JsonEvents.charge(&charge));
        let body = String::from_utf8(JsonEvents.delivery_body(&event, 1_763_805_600, "v1,abc")).unwrap();
        assert!(body.contains("\"amount\":250.00,"), "two decimals at the top level: {body}");
        assert!(body.contains("\"event\":\"charge.completed\""), "{body}");
        assert!(body.contains("\"timestamp\":1763805600"), "{body}");
        assert!(body.contains("\"signature\":\"v1,abc\""), "{body}");
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(v["id"], event.id.as_str());
        assert_eq!(v["charge_ref"], charge.id.as_str());
        assert_eq!(v["currency"], "KES");
        assert_eq!(v["state"], "completed");
        assert_eq!(v["reference"], "ORDER-1042");
        assert_eq!(v["data"]["charge_ref"], charge.id.as_str());
        assert_eq!(v["data"]["fee"].to_string(), "2.00");
        assert!(body.contains("\"fee\":2.00"), "data keeps the API's number form");
    }

    #[test]
    fn cash_out_delivery_is_the_generic_envelope_around_the_cash_out() {
        let id = ChargeRef::from_trusted(WithdrawalRef::new().into_string());
        let cash_out = completed(ChargeKind::CashOut, id, 3_300, 1_100);
        let (data, summary) = JsonEvents.cash_out(&cash_out);
        assert_eq!(summary.amount.as_deref(), Some("250.00"));
        assert_eq!(summary.currency.as_deref(), Some("KES"));
        assert_eq!(summary.state.as_deref(), Some("completed"));
        assert_eq!(summary.reference, None);
        let event = event(&cash_out, "cash_out.completed", (data, summary));
        let body = String::from_utf8(JsonEvents.delivery_body(&event, 1_763_805_600, "v1,abc")).unwrap();
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, ["created_at", "data", "event", "id", "mode", "signature", "timestamp"], "{body}");
        assert_eq!(v["event"], "cash_out.completed");
        assert_eq!(v["data"]["withdrawal_ref"], cash_out.id.as_str());
        assert!(cash_out.id.as_str().starts_with("wd_"));
        assert_eq!(v["data"]["customer_msisdn"], "254712345678");
        assert_eq!(v["data"]["state"], "completed");
        assert!(body.contains("\"amount\":250.00,\"fee\":33.00,\"agent_commission\":11.00,"), "{body}");
        assert!(v["data"].get("charge_ref").is_none() && v["data"].get("reference").is_none());
    }

    #[test]
    fn a_payout_event_carries_the_payout_and_the_payout_accounts_balance() {
        let payout = crate::testing::payout();
        let (data, summary) = JsonEvents.payout(&payout, MinorUnit::new(1_234_550));
        let data = String::from_utf8(data).unwrap();
        let object = serde_json::to_string(&PayoutDto::from(&payout)).unwrap();
        assert_eq!(data, format!("{},\"payout_account_available\":12345.50}}", object.trim_end_matches('}')));
        assert_eq!(summary.amount.as_deref(), Some("1500.00"));
        assert_eq!(summary.currency.as_deref(), Some("KES"));
        assert_eq!(summary.state.as_deref(), Some("completed"));
        assert_eq!(summary.reference.as_deref(), Some("SALARY-11-007"));
        let event = Event {
            id: EventId::new(),
            org_id: payout.org_id.clone(),
            mode: Mode::Test,
            kind: "payout.completed".into(),
            object_id: payout.id.to_string(),
            data: data.into_bytes(),
            summary,
            created_at: payout.created_at,
        };
        let body = String::from_utf8(JsonEvents.delivery_body(&event, 1_763_805_600, "v1,abc")).unwrap();
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, ["created_at", "data", "event", "id", "mode", "signature", "timestamp"], "{body}");
        assert_eq!(v["data"]["payout_ref"], "po_payout1");
        assert!(body.contains("\"amount\":1500.00,") && body.contains("\"payout_account_available\":12345.50}"), "{body}");
    }

    #[test]
    fn batch_and_reversal_events_carry_their_objects() {
        let batch = crate::testing::batch();
        let (data, summary) = JsonEvents.bulk_payout(&batch);
        assert_eq!(data, serde_json::to_vec(&BulkPayoutDto::from(&batch)).unwrap());
        assert_eq!(
            (summary.amount.as_deref(), summary.currency.as_deref(), summary.state.as_deref(), summary.reference.as_deref()),
            (Some("4500.00"), Some("KES"), Some("processing"), Some("PAYROLL-2025-11"))
        );
        let reversal = crate::testing::reversal();
        let (data, summary) = JsonEvents.reversal(&reversal);
        assert_eq!(data, serde_json::to_vec(&ReversalDto::from(&reversal)).unwrap());
        assert_eq!(
            (summary.amount.as_deref(), summary.currency.as_deref(), summary.state.as_deref(), summary.reference),
            (Some("500.00"), Some("KES"), Some("completed"), None)
        );
    }
}
