//! What an integrator's program sees when it depends on malipo-client: serde_json without
//! `arbitrary_precision`, its own `#[serde(flatten)]` structs with `f64`s working, and the
//! client's amounts keeping their text (`250.00`) all the same. Exits non-zero on the first
//! check that fails.

use std::collections::BTreeMap;

use malipo_client::{Charge, NewCharge, Payout, Reversal, Transaction, Webhooks};
use rust_decimal::Decimal;

type Failure = Box<dyn std::error::Error>;

/// An integrator's own type: a flattened map of `f64`s, which `arbitrary_precision` breaks
/// ("invalid type: map, expected f64").
#[derive(Debug, serde::Deserialize)]
struct Reading {
    #[allow(dead_code)]
    name: String,
    #[serde(flatten)]
    values: BTreeMap<String, f64>,
}

fn check(what: &str, ok: bool) -> Result<(), Failure> {
    if ok {
        println!("ok: {what}");
        Ok(())
    } else {
        Err(format!("FAILED: {what}").into())
    }
}

const CHARGE: &str = r#"{"charge_ref":"ch_1","state":"completed","mode":"test","payer_msisdn":"254712345678",
    "amount":250.00,"currency":"KES","fee":2.50,"amount_reversed":0.00,"reference":"ORDER-1042",
    "description":null,"failure_reason":null,"transaction_id":"tx_1","created_at":"2025-11-22T09:59:59.871204Z",
    "updated_at":"2025-11-22T10:00:00Z","expires_at":null,"completed_at":"2025-11-22T10:00:00Z"}"#;

const PAYOUT: &str = r#"{"payout_ref":"po_1","state":"completed","mode":"test","payee_msisdn":"254712345678",
    "amount":250.00,"currency":"KES","fee":10.00,"reference":"R","narration":null,"failure_reason":null,
    "transaction_id":"tx_2","bulk_payout_id":null,"amount_reversed":0.00,"created_at":"2025-11-22T10:00:00Z",
    "updated_at":"2025-11-22T10:00:00Z","completed_at":"2025-11-22T10:00:00Z"}"#;

const REVERSAL: &str = r#"{"reversal_id":"rv_1","state":"completed","mode":"test","charge_ref":"ch_1",
    "payout_ref":null,"original_transaction_id":null,"amount":250.00,"fee_reversed":2.50,"currency":"KES",
    "reason":"returned","transaction_id":"tx_3","created_at":"2025-11-22T10:00:00Z"}"#;

const TRANSACTION: &str = r#"{"transaction_id":"tx_1","type":"charge","source_ref":"ch_1","account":"collection",
    "amount":250.00,"fee":2.50,"net":247.50,"currency":"KES","balance_after":247.50,"created_at":"2025-11-22T10:00:00Z"}"#;

/// The worked example of docs/webhooks.md ("The body `signature` member").
const EXAMPLE: &str = r#"{"id":"evt_019aaa7c3a9c7d2e8f1b4c5d6e7f8091","event":"charge.completed","created_at":"2025-11-22T09:59:59.871204Z","mode":"test","timestamp":1763805600,"charge_ref":"ch_019aaa7c36f87a1b9c2d3e4f5a6b7c8d","amount":250.00,"currency":"KES","state":"completed","reference":"ORDER-1042","data":{"charge_ref":"ch_019aaa7c36f87a1b9c2d3e4f5a6b7c8d","state":"completed","amount":250.00},"signature":"v1,9Oid7Lp5dZikESPInzy4Gk7jk6+TZKdV6R6vuYm6LOM="}"#;
const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

fn main() -> Result<(), Failure> {
    let number = serde_json::from_str::<serde_json::Value>("250.00")?.to_string();
    check(&format!("serde_json's arbitrary_precision is off in this program (250.00 reads as {number})"), number == "250.0")?;

    let reading: Result<Reading, _> = serde_json::from_str(r#"{"name":"t","celsius":21.5,"kelvin":294.65}"#);
    check(&format!("a #[serde(flatten)] struct of f64s parses ({:?})", reading.as_ref().map(|r| &r.values)), reading.is_ok())?;

    let charge: Charge = serde_json::from_str(CHARGE)?;
    check(
        &format!("a charge keeps amount 250.00 and fee 2.50 ({}, {})", charge.amount, charge.fee),
        charge.amount.to_string() == "250.00" && charge.fee.to_string() == "2.50",
    )?;
    let payout: Payout = serde_json::from_str(PAYOUT)?;
    check(&format!("a payout keeps amount 250.00 ({})", payout.amount), payout.amount.to_string() == "250.00")?;
    let reversal: Reversal = serde_json::from_str(REVERSAL)?;
    check(&format!("a reversal keeps amount 250.00 ({})", reversal.amount), reversal.amount.to_string() == "250.00")?;
    let transaction: Transaction = serde_json::from_str(TRANSACTION)?;
    check(
        &format!("a transaction keeps amount 250.00 and net 247.50 ({}, {})", transaction.amount, transaction.net),
        transaction.amount.to_string() == "250.00" && transaction.net.to_string() == "247.50",
    )?;

    let body = serde_json::to_string(&NewCharge::new("254712345678", Decimal::new(25_000, 2), "ORDER-1042"))?;
    check(&format!("a NewCharge sends its amount as the JSON number 250.00 ({body})"), body.contains(r#""amount":250.00"#))?;

    let parsed: serde_json::Value = serde_json::from_str(EXAMPLE)?;
    let event = Webhooks::new(SECRET)?.check_parsed_at(&parsed, 1_763_805_600 + 60);
    check(&format!("the documented example verifies from a plain Value ({:?})", event.as_ref().map(|e| e.kind.as_str())), event.is_ok())?;

    println!("the standalone program agrees");
    Ok(())
}
