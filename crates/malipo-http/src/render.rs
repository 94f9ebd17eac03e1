//! The HTTP channel's forms of events, rendered at send (or read) time from the event's
//! snapshot: the `data` of each kind of event (the object as the API shows it), and each
//! delivery's request (contract section 12). An event written before events were snapshots
//! already holds the API's JSON, and is rendered as stored.

use malipo_service::{happened, DeliveryJob, Happened};
use malipo_webhooks::{body_signature, signature_header, Event};
use serde::Serialize;
use serde_json::value::RawValue;

use crate::routes::agents::dto::CashOutDto;
use crate::routes::bulk::dto::BulkPayoutDto;
use crate::routes::payment_requests::dto::PaymentRequestDto;
use crate::routes::reversals::dto::ReversalDto;
use crate::routes::shared::{ChargeDto, PayoutDto};
use crate::wire::money;

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

/// An event's `data` as the API shows it: rendered from its snapshot, or as stored for an
/// event written before events were snapshots.
pub fn event_data(event: &Event) -> Vec<u8> {
    match happened(event) {
        Some(h) => happened_data(&h),
        None => event.data.clone(),
    }
}

/// What happened, as the API shows it.
fn happened_data(happened: &Happened) -> Vec<u8> {
    match happened {
        Happened::Charge(charge) => json(&ChargeDto::from(charge)),
        Happened::CashOut(cash_out) => json(&CashOutDto::from(cash_out)),
        Happened::Payout { payout, payout_account_available } => json(&PayoutEventData {
            payout: PayoutDto::from(payout),
            payout_account_available: money(*payout_account_available, payout.currency),
        }),
        Happened::BulkPayout(batch) => json(&BulkPayoutDto::from(batch)),
        Happened::Reversal(reversal) => json(&ReversalDto::from(reversal)),
        Happened::PaymentRequest(request) => json(&PaymentRequestDto::from(request)),
    }
}

/// The HTTP request of one delivery attempt: its headers (`webhook-id`, `webhook-timestamp`,
/// `webhook-signature` by the current and any still valid previous secret, `content-type`,
/// `user-agent`) and its exact body (the envelope at the job's timestamp, with the body
/// `signature` over the event's summary).
pub fn webhook_request(job: &DeliveryJob) -> (Vec<(String, String)>, Vec<u8>) {
    let (event, ts) = (&job.event, job.timestamp);
    let s = &event.summary;
    let body_sig = body_signature(
        &job.secret,
        event.id.as_str(),
        ts,
        &event.kind,
        &event.object_id,
        s.amount.as_deref(),
        s.currency.as_deref(),
        s.state.as_deref(),
    );
    let body = delivery_body(event, ts, &body_sig);
    let mut secrets = vec![&job.secret];
    secrets.extend(job.previous_secret.as_ref());
    let headers = vec![
        ("webhook-id".to_owned(), event.id.to_string()),
        ("webhook-timestamp".to_owned(), ts.to_string()),
        ("webhook-signature".to_owned(), signature_header(&secrets, event.id.as_str(), ts, &body)),
        ("content-type".to_owned(), "application/json".to_owned()),
        ("user-agent".to_owned(), "Malipo-Webhooks/1".to_owned()),
    ];
    (headers, body)
}

/// The body of one delivery attempt: the envelope at `timestamp` with the body `signature`.
pub fn delivery_body(event: &Event, timestamp: i64, signature: &str) -> Vec<u8> {
    let data = raw(&event_data(event));
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use malipo_charges::{Charge, ChargeKind, ChargeState};
    use malipo_core::{AccountId, ChargeRef, Currency, EndpointId, EventId, MinorUnit, Mode, Msisdn, OrgId, Timestamp, WithdrawalRef};
    use malipo_service::snapshot;
    use malipo_webhooks::{Secret, UrlPolicy};

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

    /// An event as the service writes it: the snapshot of what happened, and its summary.
    fn event(happened: &Happened, kind: &str, object_id: &str) -> Event {
        Event {
            id: EventId::new(),
            org_id: OrgId::new(),
            mode: Mode::Test,
            kind: kind.into(),
            object_id: object_id.into(),
            data: snapshot::encode(happened).unwrap(),
            summary: happened.summary(),
            created_at: Timestamp::from_micros(1_763_805_600_000_000),
        }
    }

    #[test]
    fn charge_delivery_has_the_seed_fields_and_the_full_object() {
        let charge = completed(ChargeKind::Charge, ChargeRef::new(), 200, 0);
        let event = event(&Happened::Charge(charge.clone()), "charge.completed", charge.id.as_str());
        let body = String::from_utf8(delivery_body(&event, 1_763_805_600, "v1,abc")).unwrap();
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
    fn a_delivery_rendered_from_a_snapshot_is_the_body_of_the_apis_json_as_stored_before() {
        let charge = completed(ChargeKind::Charge, ChargeRef::new(), 200, 0);
        let event = event(&Happened::Charge(charge.clone()), "charge.completed", charge.id.as_str());
        // The same event as written before events were snapshots: the API's JSON, sent as stored.
        let older = Event { data: serde_json::to_vec(&ChargeDto::from(&charge)).unwrap(), ..event.clone() };
        assert_eq!(happened(&older), None);
        assert_eq!(event_data(&event), older.data);
        let body = delivery_body(&event, 1_763_805_600, "v1,abc");
        assert_eq!(String::from_utf8(body.clone()).unwrap(), String::from_utf8(delivery_body(&older, 1_763_805_600, "v1,abc")).unwrap());

        // The request: the body signed by the current secret, the headers by both secrets.
        let (secret, previous) = (Secret::generate(), Secret::generate());
        let job = |event: &Event| DeliveryJob {
            delivery_id: "dlv_x".into(),
            lease: event.created_at,
            event_id: event.id.clone(),
            endpoint_id: EndpointId::new(),
            url: "https://hooks.example.com/malipo".into(),
            policy: UrlPolicy::test(false),
            event: event.clone(),
            timestamp: 1_763_805_600,
            secret: secret.clone(),
            previous_secret: Some(previous.clone()),
            timeout: std::time::Duration::from_secs(15),
        };
        let (headers, body) = webhook_request(&job(&event));
        assert_eq!((headers.clone(), body.clone()), webhook_request(&job(&older)), "the same bytes either way");
        let s = &event.summary;
        let signature = body_signature(
            &secret,
            event.id.as_str(),
            1_763_805_600,
            "charge.completed",
            charge.id.as_str(),
            s.amount.as_deref(),
            s.currency.as_deref(),
            s.state.as_deref(),
        );
        assert_eq!(body, delivery_body(&event, 1_763_805_600, &signature));
        let names: Vec<&str> = headers.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["webhook-id", "webhook-timestamp", "webhook-signature", "content-type", "user-agent"]);
        assert_eq!(headers[0].1, event.id.as_str());
        assert_eq!(headers[1].1, "1763805600");
        assert_eq!(headers[2].1, signature_header(&[&secret, &previous], event.id.as_str(), 1_763_805_600, &body));
        assert_eq!(headers[2].1.matches("v1,").count(), 2, "{}", headers[2].1);
        assert_eq!((headers[3].1.as_str(), headers[4].1.as_str()), ("application/json", "Malipo-Webhooks/1"));
    }

    #[test]
    fn cash_out_delivery_is_the_generic_envelope_around_the_cash_out() {
        let id = ChargeRef::from_trusted(WithdrawalRef::new().into_string());
        let cash_out = completed(ChargeKind::CashOut, id, 3_300, 1_100);
        let event = event(&Happened::CashOut(cash_out.clone()), "cash_out.completed", cash_out.id.as_str());
        let summary = &event.summary;
        assert_eq!(summary.amount.as_deref(), Some("250.00"));
        assert_eq!(summary.currency.as_deref(), Some("KES"));
        assert_eq!(summary.state.as_deref(), Some("completed"));
        assert_eq!(summary.reference, None);
        let body = String::from_utf8(delivery_body(&event, 1_763_805_600, "v1,abc")).unwrap();
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
        let happened = Happened::Payout { payout: payout.clone(), payout_account_available: MinorUnit::new(1_234_550) };
        let event = event(&happened, "payout.completed", payout.id.as_str());
        let data = String::from_utf8(event_data(&event)).unwrap();
        let object = serde_json::to_string(&PayoutDto::from(&payout)).unwrap();
        assert_eq!(data, format!("{},\"payout_account_available\":12345.50}}", object.trim_end_matches('}')));
        let summary = &event.summary;
        assert_eq!(summary.amount.as_deref(), Some("1500.00"));
        assert_eq!(summary.currency.as_deref(), Some("KES"));
        assert_eq!(summary.state.as_deref(), Some("completed"));
        assert_eq!(summary.reference.as_deref(), Some("SALARY-11-007"));
        let body = String::from_utf8(delivery_body(&event, 1_763_805_600, "v1,abc")).unwrap();
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, ["created_at", "data", "event", "id", "mode", "signature", "timestamp"], "{body}");
        assert_eq!(v["data"]["payout_ref"], "po_payout1");
        assert!(body.contains("\"amount\":1500.00,") && body.contains("\"payout_account_available\":12345.50}"), "{body}");
    }

    #[test]
    fn batch_and_reversal_events_carry_their_objects() {
        let batch = crate::testing::batch();
        let e = event(&Happened::BulkPayout(batch.clone()), "bulk_payout.approved", batch.id.as_str());
        assert_eq!(event_data(&e), serde_json::to_vec(&BulkPayoutDto::from(&batch)).unwrap());
        let summary = &e.summary;
        assert_eq!(
            (summary.amount.as_deref(), summary.currency.as_deref(), summary.state.as_deref(), summary.reference.as_deref()),
            (Some("4500.00"), Some("KES"), Some("processing"), Some("PAYROLL-2025-11"))
        );
        let reversal = crate::testing::reversal();
        let e = event(&Happened::Reversal(reversal.clone()), "reversal.completed", reversal.id.as_str());
        assert_eq!(event_data(&e), serde_json::to_vec(&ReversalDto::from(&reversal)).unwrap());
        let summary = &e.summary;
        assert_eq!(
            (summary.amount.as_deref(), summary.currency.as_deref(), summary.state.as_deref(), summary.reference.clone()),
            (Some("500.00"), Some("KES"), Some("completed"), None)
        );
    }
}
