//! Webhook deliveries, verified as Standard Webhooks says: the signature over
//! `"{webhook-id}.{webhook-timestamp}.{raw body}"` with HMAC-SHA256 under the endpoint's secret
//! (any of the space-separated `v1,` signatures of a secret rotation may match, compared in
//! constant time), and the timestamp within a window of the receiver's clock (5 minutes).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use hmac::{Hmac, Mac};
use serde::Deserialize;
use sha2::Sha256;
use subtle::ConstantTimeEq;
use time::OffsetDateTime;

use rust_decimal::Decimal;

use crate::{BulkPayout, CashOut, Charge, Mode, PaymentRequest, Payout, Reversal};

/// How far a delivery's timestamp may be from the receiver's clock, either way.
pub const TOLERANCE: Duration = Duration::from_secs(5 * 60);

/// Why a delivery was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WebhookError {
    /// A `webhook-id`, `webhook-timestamp` or `webhook-signature` header is absent (or, for a
    /// parsed body, its `signature` member).
    #[error("the {0} header is missing")]
    MissingHeader(&'static str),
    /// The secret is not `whsec_` and base64.
    #[error("the secret is not a whsec_ secret")]
    BadSecret,
    /// The timestamp is not a number, or too far from now.
    #[error("the timestamp is outside the tolerance")]
    Timestamp,
    /// No signature matches.
    #[error("no signature matches")]
    Signature,
    /// Signed, but not an event this client can read.
    #[error("the body is not an event: {0}")]
    Body(String),
}

/// Header lookup, so that any framework's request verifies: implemented for `reqwest`'s (and
/// `http`'s) `HeaderMap`, for a slice of pairs, and for any `Fn(&str) -> Option<String>`.
pub trait Headers {
    /// The value of the header `name` (lower case), if present and text.
    fn header(&self, name: &str) -> Option<String>;
}

impl Headers for reqwest::header::HeaderMap {
    fn header(&self, name: &str) -> Option<String> {
        self.get(name).and_then(|v| v.to_str().ok()).map(str::to_owned)
    }
}

impl Headers for [(&str, &str)] {
    fn header(&self, name: &str) -> Option<String> {
        self.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| (*v).to_owned())
    }
}

impl<F: Fn(&str) -> Option<String>> Headers for F {
    fn header(&self, name: &str) -> Option<String> {
        self(name)
    }
}

/// Verifies deliveries for one endpoint's secrets.
#[derive(Clone)]
pub struct Webhooks {
    keys: Vec<Vec<u8>>,
    tolerance: Duration,
}

impl std::fmt::Debug for Webhooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Webhooks").field("keys", &self.keys.len()).field("tolerance", &self.tolerance).finish()
    }
}

impl Webhooks {
    /// A verifier for the endpoint secret `whsec_…`.
    ///
    /// # Errors
    /// [`WebhookError::BadSecret`].
    pub fn new(secret: &str) -> Result<Self, WebhookError> {
        Ok(Webhooks { keys: vec![key_of(secret)?], tolerance: TOLERANCE })
    }

    /// Also accepts deliveries signed with `secret` (during a rotation, the old and the new).
    ///
    /// # Errors
    /// [`WebhookError::BadSecret`].
    pub fn and(mut self, secret: &str) -> Result<Self, WebhookError> {
        self.keys.push(key_of(secret)?);
        Ok(self)
    }

    /// Verifies one delivery with `secret` and reads its event: the one-call form.
    ///
    /// # Errors
    /// [`WebhookError`]: refuse the delivery (answer 400), it was not sent by Malipo.
    pub fn verify<H: Headers + ?Sized>(secret: &str, headers: &H, body: &[u8]) -> Result<Event, WebhookError> {
        Webhooks::new(secret)?.check(headers, body)
    }

    /// Verifies one delivery and reads its event.
    ///
    /// # Errors
    /// [`WebhookError`].
    pub fn check<H: Headers + ?Sized>(&self, headers: &H, body: &[u8]) -> Result<Event, WebhookError> {
        self.check_at(headers, body, unix_now())
    }

    /// [`Webhooks::check`] with the receiver's clock at `now` (Unix seconds).
    ///
    /// # Errors
    /// [`WebhookError`].
    pub fn check_at<H: Headers + ?Sized>(&self, headers: &H, body: &[u8], now: i64) -> Result<Event, WebhookError> {
        let id = headers.header("webhook-id").ok_or(WebhookError::MissingHeader("webhook-id"))?;
        let stamp = headers.header("webhook-timestamp").ok_or(WebhookError::MissingHeader("webhook-timestamp"))?;
        let signatures = headers.header("webhook-signature").ok_or(WebhookError::MissingHeader("webhook-signature"))?;
        let at: i64 = stamp.trim().parse().map_err(|_| WebhookError::Timestamp)?;
        self.within_tolerance(at, now)?;
        let mut signed = Vec::with_capacity(id.len() + stamp.len() + body.len() + 2);
        signed.extend_from_slice(format!("{id}.{stamp}.").as_bytes());
        signed.extend_from_slice(body);
        let expected = self.macs(&signed);
        if !signatures.split_whitespace().any(|given| signs(&expected, given)) {
            return Err(WebhookError::Signature);
        }
        let mut event: Event = serde_json::from_slice(body).map_err(|e| WebhookError::Body(e.to_string()))?;
        // `data` once more as its text, for `Event::object` to read amounts as written.
        event.raw = RawData(serde_json::from_slice::<RawEnvelope>(body).ok().map(|e| e.data));
        if event.id != id {
            return Err(WebhookError::Body(format!("the body's id {} is not the webhook-id {id}", event.id)));
        }
        Ok(event)
    }
}

impl Webhooks {
    /// Verifies an event that arrived already parsed (a queue, a no-code tool: no raw body, no
    /// headers) by its body member `signature`: HMAC-SHA256 under the endpoint's secret over
    /// `"{id}.{timestamp}.{event}.{object id}.{amount}.{currency}.{state}"` (the object id is the
    /// top-level `charge_ref` of a `charge.*` event, else the id of `data`; amount, currency and
    /// state are the top-level ones of a charge event, else `data`'s, a bulk payout's amount its
    /// `total_amount`; absent parts empty), with the body's `timestamp` within the window. It covers
    /// those fields only: prefer [`Webhooks::check`] whenever the raw body is at hand.
    ///
    /// # Errors
    /// [`WebhookError`]; [`WebhookError::MissingHeader`]`("signature")` when the member is absent.
    pub fn check_parsed(&self, body: &serde_json::Value) -> Result<Event, WebhookError> {
        self.check_parsed_at(body, unix_now())
    }

    /// [`Webhooks::check_parsed`] with the receiver's clock at `now` (Unix seconds).
    ///
    /// # Errors
    /// [`WebhookError`].
    pub fn check_parsed_at(&self, body: &serde_json::Value, now: i64) -> Result<Event, WebhookError> {
        let given = body.get("signature").and_then(serde_json::Value::as_str).ok_or(WebhookError::MissingHeader("signature"))?;
        let at = body.get("timestamp").and_then(serde_json::Value::as_i64).ok_or(WebhookError::Timestamp)?;
        self.within_tolerance(at, now)?;
        let signed = signed_fields(body).ok_or_else(|| WebhookError::Body("not an event".to_owned()))?;
        if !signed.iter().any(|text| signs(&self.macs(text.as_bytes()), given)) {
            return Err(WebhookError::Signature);
        }
        let mut event: Event = serde_json::from_value(body.clone()).map_err(|e| WebhookError::Body(e.to_string()))?;
        event.raw = RawData(body.get("data").and_then(|data| serde_json::value::to_raw_value(data).ok()));
        Ok(event)
    }
}

/// The texts the body member `signature` may sign, or `None` when `body` is not an event: the
/// amount as the parsed number writes itself first, then, when it is not exactly the signed text
/// (a `Value` without serde_json's arbitrary precision holds `250.00` as `250.0`), the same value
/// written with 0 to 4 decimals.
fn signed_fields(body: &serde_json::Value) -> Option<Vec<String>> {
    let text = |v: Option<&serde_json::Value>| match v {
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(serde_json::Value::Number(n)) => n.to_string(),
        _ => String::new(),
    };
    let id = body.get("id")?.as_str()?;
    let at = body.get("timestamp")?.as_i64()?;
    let kind = body.get("event")?.as_str()?;
    let (object, id_key, amount_key) = match kind.split('.').next()? {
        "charge" => (body, "charge_ref", "amount"),
        "payout" => (body.get("data")?, "payout_ref", "amount"),
        "bulk_payout" => (body.get("data")?, "batch_id", "total_amount"),
        "reversal" => (body.get("data")?, "reversal_id", "amount"),
        "payment_request" => (body.get("data")?, "request_id", "amount"),
        "cash_out" => (body.get("data")?, "withdrawal_ref", "amount"),
        _ => return None,
    };
    let amount = object.get(amount_key);
    let mut amounts = vec![text(amount)];
    if let Some(serde_json::Value::Number(n)) = amount {
        if let Ok(value) = crate::amount::parse(&n.to_string()) {
            for decimals in 0..=4_u32 {
                let mut written = value;
                written.rescale(decimals);
                // The same value only: never a rounded one.
                if written == value && !amounts.contains(&written.to_string()) {
                    amounts.push(written.to_string());
                }
            }
        }
    }
    let (object_id, currency, state) = (text(object.get(id_key)), text(object.get("currency")), text(object.get("state")));
    Some(amounts.into_iter().map(|amount| format!("{id}.{at}.{kind}.{object_id}.{amount}.{currency}.{state}")).collect())
}

impl Webhooks {
    /// `at` (Unix seconds) is within the tolerance of `now`.
    fn within_tolerance(&self, at: i64, now: i64) -> Result<(), WebhookError> {
        let tolerance = i64::try_from(self.tolerance.as_secs()).unwrap_or(i64::MAX);
        if now.abs_diff(at) > tolerance.unsigned_abs() {
            return Err(WebhookError::Timestamp);
        }
        Ok(())
    }

    /// The HMAC of `message` under each secret held.
    fn macs(&self, message: &[u8]) -> Vec<Vec<u8>> {
        self.keys.iter().map(|k| hmac(k, message)).collect()
    }
}

/// Whether `given` (`v1,<base64>`) is one of the `expected` MACs, compared in constant time.
fn signs(expected: &[Vec<u8>], given: &str) -> bool {
    let Some(given) = given.strip_prefix("v1,").and_then(|s| STANDARD.decode(s).ok()) else { return false };
    expected.iter().any(|want| bool::from(want.as_slice().ct_eq(&given)))
}

/// The receiver's clock, Unix seconds.
fn unix_now() -> i64 {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    i64::try_from(now).unwrap_or(i64::MAX)
}

fn key_of(secret: &str) -> Result<Vec<u8>, WebhookError> {
    let encoded = secret.strip_prefix("whsec_").ok_or(WebhookError::BadSecret)?;
    STANDARD
        .decode(encoded)
        .map_err(|_| WebhookError::BadSecret)
        .and_then(|k| if k.is_empty() { Err(WebhookError::BadSecret) } else { Ok(k) })
}

fn hmac(key: &[u8], message: &[u8]) -> Vec<u8> {
    // HMAC takes a key of any length.
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(key) else { return Vec::new() };
    mac.update(message);
    mac.finalize().into_bytes().to_vec()
}

crate::names::names! {
    /// What an event reports.
    EventKind {
        ChargeAuthorised = "charge.authorised": "the payer approved; funds reserved.",
        ChargeCompleted = "charge.completed": "the charge was posted.",
        ChargeDeclined = "charge.declined": "the payer declined, or too many wrong PINs.",
        ChargeExpired = "charge.expired": "no answer within the time to live.",
        ChargeFailed = "charge.failed": "the payer could not pay, or posting failed.",
        PayoutCompleted = "payout.completed": "the payout was paid.",
        PayoutFailed = "payout.failed": "the payout failed.",
        BulkPayoutApproved = "bulk_payout.approved": "the checker approved the batch.",
        BulkPayoutRejected = "bulk_payout.rejected": "the checker rejected the batch.",
        BulkPayoutCompleted = "bulk_payout.completed": "every item of the batch is final.",
        ReversalCompleted = "reversal.completed": "a reversal was posted.",
        PaymentRequestPaid = "payment_request.paid": "a payment request was paid.",
        PaymentRequestExpired = "payment_request.expired": "a payment request expired unpaid.",
        CashOutCompleted = "cash_out.completed": "an agent's cash-out was posted.",
    }
}

/// A verified event.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[non_exhaustive]
pub struct Event {
    /// Its id, `evt_…`: the same on every retry of its delivery; deduplicate on it.
    pub id: String,
    /// What it reports.
    #[serde(rename = "event")]
    pub kind: EventKind,
    /// When it happened.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    /// Test or live.
    pub mode: Mode,
    /// Unix seconds of the event.
    pub timestamp: i64,
    /// The object it is about, whole (a charge, a payout, ...). Without serde_json's
    /// `arbitrary_precision` its numbers are `f64`s (`250.00` held as `250.0`): read the object
    /// with [`Event::object`], which keeps amounts as written.
    pub data: serde_json::Value,
    /// `data` as its text, when the event was verified from one ([`Webhooks::check`]).
    #[serde(skip)]
    raw: RawData,
}

/// `data` as it was written; never part of an event's equality.
#[derive(Debug, Clone, Default)]
struct RawData(Option<Box<serde_json::value::RawValue>>);

impl PartialEq for RawData {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

/// The one member of a body read a second time, as text.
#[derive(Deserialize)]
struct RawEnvelope {
    data: Box<serde_json::value::RawValue>,
}

/// The available balance member of a `payout.*` event's `data`.
#[derive(Deserialize)]
struct PayoutAvailable {
    #[serde(default, with = "crate::amount::option")]
    payout_account_available: Option<Decimal>,
}

/// What an event is about, typed by its kind ([`Event::object`]).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum EventObject {
    /// `charge.*`: the charge.
    Charge(Box<Charge>),
    /// `payout.*`: the payout, and the payout account's available balance right after it
    /// settled.
    Payout {
        /// The payout.
        payout: Box<Payout>,
        /// The payout account's available balance right after the payout settled.
        payout_account_available: Option<Decimal>,
    },
    /// `bulk_payout.*`: the batch with its counts.
    BulkPayout(Box<BulkPayout>),
    /// `reversal.completed`: the reversal.
    Reversal(Box<Reversal>),
    /// `payment_request.*`: the request.
    PaymentRequest(Box<PaymentRequest>),
    /// `cash_out.completed`: the cash-out.
    CashOut(Box<CashOut>),
    /// A kind this version of the client does not know: `data` as it came.
    Other(serde_json::Value),
}

impl Event {
    /// The charge of a `charge.*` event.
    pub fn charge(&self) -> Option<Charge> {
        match self.object() {
            Ok(EventObject::Charge(charge)) => Some(*charge),
            _ => None,
        }
    }

    /// The object the event is about, read as its kind says.
    ///
    /// # Errors
    /// [`WebhookError::Body`] when `data` is not the object its kind names.
    pub fn object(&self) -> Result<EventObject, WebhookError> {
        let raw = self.raw.0.as_deref();
        // From the text of `data` when the event was verified from one (amounts as written),
        // else from the parsed `data`.
        fn read<T: serde::de::DeserializeOwned>(
            raw: Option<&serde_json::value::RawValue>,
            data: &serde_json::Value,
        ) -> Result<Box<T>, WebhookError> {
            match raw {
                Some(raw) => serde_json::from_str(raw.get()),
                None => serde_json::from_value(data.clone()),
            }
            .map(Box::new)
            .map_err(|e| WebhookError::Body(e.to_string()))
        }
        let data = &self.data;
        Ok(match self.kind.as_str().split('.').next().unwrap_or_default() {
            _ if matches!(self.kind, EventKind::Other(_)) => EventObject::Other(data.clone()),
            "charge" => EventObject::Charge(read(raw, data)?),
            "payout" => EventObject::Payout {
                payout: read(raw, data)?,
                payout_account_available: read::<PayoutAvailable>(raw, data)?.payout_account_available,
            },
            "bulk_payout" => EventObject::BulkPayout(read(raw, data)?),
            "reversal" => EventObject::Reversal(read(raw, data)?),
            "payment_request" => EventObject::PaymentRequest(read(raw, data)?),
            "cash_out" => EventObject::CashOut(read(raw, data)?),
            _ => EventObject::Other(data.clone()),
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

    fn signed(secret: &str, id: &str, at: i64, body: &str) -> String {
        let key = key_of(secret).unwrap();
        format!("v1,{}", STANDARD.encode(hmac(&key, format!("{id}.{at}.{body}").as_bytes())))
    }

    fn body(id: &str) -> String {
        format!(
            r#"{{"id":"{id}","event":"charge.completed","created_at":"2026-11-22T10:00:00Z","mode":"test","timestamp":1763805600,"data":{{}}}}"#
        )
    }

    #[test]
    fn a_delivery_verifies_and_a_tampered_stale_or_foreign_one_does_not() {
        let (id, at) = ("evt_1", 1_763_805_600);
        let b = body(id);
        let sig = signed(SECRET, id, at, &b);
        let stamp = at.to_string();
        let headers = [("webhook-id", id), ("webhook-timestamp", stamp.as_str()), ("webhook-signature", sig.as_str())];
        let hooks = Webhooks::new(SECRET).unwrap();
        let event = hooks.check_at(&headers[..], b.as_bytes(), at + 10).unwrap();
        assert_eq!((event.id.as_str(), &event.kind, event.mode), (id, &EventKind::ChargeCompleted, Mode::Test));
        assert_eq!(event.kind.as_str(), "charge.completed");
        let tampered = b.replace("completed", "declined!");
        assert_eq!(hooks.check_at(&headers[..], tampered.as_bytes(), at), Err(WebhookError::Signature));
        assert_eq!(hooks.check_at(&headers[..], b.as_bytes(), at + 301), Err(WebhookError::Timestamp));
        assert_eq!(hooks.check_at(&headers[..], b.as_bytes(), at - 301), Err(WebhookError::Timestamp));
        let other = Webhooks::new("whsec_b3RoZXIgc2VjcmV0IG9mIDI0IGJ5dGVz").unwrap();
        assert_eq!(other.check_at(&headers[..], b.as_bytes(), at), Err(WebhookError::Signature));
        assert_eq!(hooks.check_at(&headers[..2], b.as_bytes(), at), Err(WebhookError::MissingHeader("webhook-signature")));
    }

    #[test]
    fn any_signature_of_a_rotation_and_any_secret_held_verifies() {
        let (id, at) = ("evt_2", 1_763_805_600);
        let b = body(id);
        let old = "whsec_b2xkIHNlY3JldCBvZiBzb21lIGJ5dGVz";
        let both = format!("{} {}", signed(old, id, at, &b), signed(SECRET, id, at, &b));
        let stamp = at.to_string();
        let headers = [("webhook-id", id), ("webhook-timestamp", stamp.as_str()), ("webhook-signature", both.as_str())];
        assert!(Webhooks::new(SECRET).unwrap().check_at(&headers[..], b.as_bytes(), at).is_ok(), "the new secret's signature");
        assert!(Webhooks::new(old).unwrap().check_at(&headers[..], b.as_bytes(), at).is_ok(), "the old secret's signature");
        let only_old = signed(old, id, at, &b);
        let headers = [("webhook-id", id), ("webhook-timestamp", stamp.as_str()), ("webhook-signature", only_old.as_str())];
        let receiver = Webhooks::new(SECRET).unwrap().and(old).unwrap();
        assert!(receiver.check_at(&headers[..], b.as_bytes(), at).is_ok(), "a receiver holding both secrets");
        assert_eq!(Webhooks::new("not-a-secret").unwrap_err(), WebhookError::BadSecret);
    }

    /// The worked example of `docs/webhooks.md` ("The body `signature` member"), with its inputs.
    #[test]
    fn the_body_signature_of_the_documented_example_verifies_and_a_changed_field_does_not() {
        let body = r#"{"id":"evt_019aaa7c3a9c7d2e8f1b4c5d6e7f8091","event":"charge.completed","created_at":"2025-11-22T09:59:59.871204Z","mode":"test","timestamp":1763805600,"charge_ref":"ch_019aaa7c36f87a1b9c2d3e4f5a6b7c8d","amount":250.00,"currency":"KES","state":"completed","reference":"ORDER-1042","data":{"charge_ref":"ch_019aaa7c36f87a1b9c2d3e4f5a6b7c8d","state":"completed","amount":250.00},"signature":"v1,9Oid7Lp5dZikESPInzy4Gk7jk6+TZKdV6R6vuYm6LOM="}"#;
        let parsed: serde_json::Value = serde_json::from_str(body).unwrap();
        let hooks = Webhooks::new(SECRET).unwrap();
        let event = hooks.check_parsed_at(&parsed, 1_763_805_600 + 60).unwrap();
        assert_eq!((event.id.as_str(), &event.kind), ("evt_019aaa7c3a9c7d2e8f1b4c5d6e7f8091", &EventKind::ChargeCompleted));
        assert_eq!(hooks.check_parsed_at(&parsed, 1_763_805_600 + 301).unwrap_err(), WebhookError::Timestamp);
        let mut changed = parsed.clone();
        changed["amount"] = serde_json::from_str("2500.00").unwrap();
        assert_eq!(hooks.check_parsed_at(&changed, 1_763_805_600).unwrap_err(), WebhookError::Signature);
        let mut changed = parsed.clone();
        changed["state"] = "declined".into();
        assert_eq!(hooks.check_parsed_at(&changed, 1_763_805_600).unwrap_err(), WebhookError::Signature);
        let mut unsigned = parsed;
        unsigned.as_object_mut().unwrap().remove("signature");
        assert_eq!(hooks.check_parsed_at(&unsigned, 1_763_805_600).unwrap_err(), WebhookError::MissingHeader("signature"));
    }

    /// The documented example as an integrator's `Value` holds it without serde_json's
    /// arbitrary precision: the amount an `f64`, `250.0`.
    #[test]
    fn the_documented_example_verifies_when_its_amount_is_an_f64() {
        let body = r#"{"id":"evt_019aaa7c3a9c7d2e8f1b4c5d6e7f8091","event":"charge.completed","created_at":"2025-11-22T09:59:59.871204Z","mode":"test","timestamp":1763805600,"charge_ref":"ch_019aaa7c36f87a1b9c2d3e4f5a6b7c8d","amount":250.00,"currency":"KES","state":"completed","reference":"ORDER-1042","data":{"charge_ref":"ch_019aaa7c36f87a1b9c2d3e4f5a6b7c8d","state":"completed","amount":250.00},"signature":"v1,9Oid7Lp5dZikESPInzy4Gk7jk6+TZKdV6R6vuYm6LOM="}"#;
        let mut parsed: serde_json::Value = serde_json::from_str(body).unwrap();
        parsed["amount"] = serde_json::json!(250.0_f64);
        assert_eq!(parsed["amount"].to_string(), "250.0");
        let hooks = Webhooks::new(SECRET).unwrap();
        let event = hooks.check_parsed_at(&parsed, 1_763_805_600).unwrap();
        assert_eq!(event.kind, EventKind::ChargeCompleted);
        // The same value only: another amount written with 0 to 4 decimals still fails.
        for other in [250.001_f64, 25.0, 2500.0] {
            let mut changed = parsed.clone();
            changed["amount"] = serde_json::json!(other);
            assert_eq!(hooks.check_parsed_at(&changed, 1_763_805_600).unwrap_err(), WebhookError::Signature, "{other}");
        }
        let mut text = parsed.clone();
        text["amount"] = "250".into();
        assert_eq!(hooks.check_parsed_at(&text, 1_763_805_600).unwrap_err(), WebhookError::Signature, "a string is as written");
    }

    #[test]
    fn the_object_of_a_verified_delivery_keeps_its_amounts_as_written() {
        let (id, at) = ("evt_3", 1_763_805_600);
        let b = format!(
            r#"{{"id":"{id}","event":"payout.completed","created_at":"2026-11-22T10:00:00Z","mode":"test","timestamp":{at},"data":{{"payout_ref":"po_1","state":"completed","mode":"test","payee_msisdn":"254712345678","amount":250.00,"currency":"KES","fee":10.00,"reference":"R","narration":null,"failure_reason":null,"transaction_id":"tx_1","bulk_payout_id":null,"amount_reversed":0.00,"created_at":"2026-11-22T09:59:58Z","updated_at":"2026-11-22T10:00:00Z","completed_at":"2026-11-22T10:00:00Z","payout_account_available":1000.50}}}}"#
        );
        let sig = signed(SECRET, id, at, &b);
        let stamp = at.to_string();
        let headers = [("webhook-id", id), ("webhook-timestamp", stamp.as_str()), ("webhook-signature", sig.as_str())];
        let event = Webhooks::new(SECRET).unwrap().check_at(&headers[..], b.as_bytes(), at).unwrap();
        let EventObject::Payout { payout, payout_account_available } = event.object().unwrap() else { panic!("not a payout") };
        assert_eq!((payout.amount.to_string(), payout.fee.to_string()), ("250.00".to_owned(), "10.00".to_owned()));
        assert_eq!(payout_account_available.map(|a| a.to_string()).as_deref(), Some("1000.50"));
        assert_eq!(payout.completed_at.map(|t| t.unix_timestamp()), Some(1_763_805_600 + 365 * 86_400));
        assert_eq!(event.created_at.unix_timestamp(), 1_763_805_600 + 365 * 86_400);
    }

    #[test]
    fn every_event_kind_reads_as_itself() {
        assert_eq!(EventKind::NAMES.len(), 14, "the contract's kinds");
        for name in EventKind::NAMES {
            let kind = EventKind::from(*name);
            assert!(!matches!(kind, EventKind::Other(_)), "{name}");
            assert_eq!(kind.as_str(), *name);
        }
        assert_eq!(EventKind::from("charge.teleported"), EventKind::Other("charge.teleported".into()));
    }
}
