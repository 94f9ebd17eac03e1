//! The asynchronous pattern: `GET /requeststates/{serverCorrelationId}` (polling), `GET
//! /responses/{clientCorrelationId}` (the link to what a request made, for a client that missed
//! the answer), and `GET /heartbeat`.

use actix_web::{web, HttpResponse};
use malipo_auth::Principal;
use malipo_charges::Charge;
use malipo_idempotency::IdempotencyKey;
use malipo_payouts::{BulkPayout, Payout, Reversal};
use malipo_service::{CashIn, Intake, Platform, ServiceError, Transfer};
use serde::Serialize;

use crate::batches;
use crate::caller::Caller;
use crate::error::GsmaError;
use crate::objects::{self, Progress, RequestState};
use crate::{run, Gsma, BASE};

/// The request state of the request that made `reference`.
fn state_of(p: &Platform, principal: &Principal, reference: &str) -> Result<RequestState, ServiceError> {
    let callback = || -> Result<bool, ServiceError> { Ok(!p.callbacks().of_object(principal, reference)?.is_empty()) };
    let state = match reference.split_once('_').map(|(prefix, _)| prefix) {
        Some("ch") => {
            let c = p.charges().get(principal, reference)?;
            objects::request_state(reference, objects::charge_progress(&c), Some(c.expires_at), c.updated_at, callback()?)
        }
        Some("wd") => {
            let c = p.agents().get_cash_out(principal, reference)?;
            objects::request_state(reference, objects::charge_progress(&c), Some(c.expires_at), c.updated_at, callback()?)
        }
        Some("po") => {
            let po = p.payouts().get(principal, reference)?;
            objects::request_state(reference, objects::payout_progress(&po), None, po.updated_at, callback()?)
        }
        Some("rv") => {
            let r = p.reversals().get(principal, reference)?;
            objects::request_state(reference, Progress::Completed, None, r.created_at, callback()?)
        }
        Some("tx") => {
            let t = p.transactions().get(principal, reference, None)?;
            objects::request_state(reference, Progress::Completed, None, t.created_at, callback()?)
        }
        Some("bp") => {
            let b = p.bulk_payouts().get(principal, reference)?;
            objects::request_state(reference, objects::batch_progress(&b), None, b.updated_at, callback()?)
        }
        _ => return Err(ServiceError::NotFound),
    };
    Ok(state)
}

/// Whether an error only says this caller has no such object (or may not read its kind).
fn absent(e: &ServiceError) -> bool {
    matches!(e, ServiceError::NotFound | ServiceError::Forbidden(_))
}

/// `GET /requeststates/{serverCorrelationId}`: the state of the request whose answer gave this
/// id (the UUID of the object it made).
///
/// # Errors
/// 404 when the caller made no such request.
pub async fn request_state(caller: Caller, path: web::Path<String>, gsma: web::Data<Gsma>) -> Result<HttpResponse, GsmaError> {
    let (principal, id) = (caller.0, path.into_inner());
    let candidates = objects::references_of(&id).ok_or_else(|| GsmaError::not_found("no such request state"))?;
    let state = run(&gsma.platform, move |p| {
        for reference in &candidates {
            match state_of(p, &principal, reference) {
                Err(e) if absent(&e) => {}
                found => return found,
            }
        }
        Err(ServiceError::NotFound)
    })
    .await?;
    Ok(HttpResponse::Ok().json(state))
}

/// The document's `responseResponse`.
#[derive(Serialize)]
struct Link {
    link: String,
}

/// What a request with this correlation id made, by operation.
fn made(p: &Platform, principal: &Principal, key: &IdempotencyKey) -> Result<Option<String>, ServiceError> {
    let recorded = p.recorded();
    let transaction = |kind: &str| format!("GSMA POST /transactions/type/{kind}");
    if let Some(c) = recorded.made::<Charge>(principal, &transaction("merchantpay"), key)? {
        return Ok(Some(c.id.to_string()));
    }
    if let Some(po) = recorded.made::<Payout>(principal, &transaction("disbursement"), key)? {
        return Ok(Some(po.id.to_string()));
    }
    if let Some(cash) = recorded.made::<CashIn>(principal, &transaction("deposit"), key)? {
        return Ok(Some(cash.transaction_id.to_string()));
    }
    if let Some(c) = recorded.made::<Charge>(principal, &transaction("withdrawal"), key)? {
        return Ok(Some(c.id.to_string()));
    }
    if let Some(t) = recorded.made::<Transfer>(principal, &transaction("transfer"), key)? {
        return Ok(Some(t.transaction_id.to_string()));
    }
    if let Some(r) = recorded.made::<Reversal>(principal, "GSMA POST /transactions/reversals", key)? {
        return Ok(Some(r.id.to_string()));
    }
    for operation in [batches::CREATE, batches::APPROVE] {
        if let Some(b) = recorded.made::<BulkPayout>(principal, operation, key)? {
            return Ok(Some(b.id.to_string()));
        }
    }
    Ok(None)
}

/// `GET /responses/{clientCorrelationId}`: the link to the object the caller's request with
/// this `X-CorrelationID` made (`/transactions/{transactionReference}`, or
/// `/batchtransactions/{batchId}` for a batch it created or approved), the way back to an
/// answer whose callback never came.
///
/// # Errors
/// 404 when no request of the caller's organisation carried this id (or it made nothing);
/// 503 while it is still running.
pub async fn response(caller: Caller, path: web::Path<String>, gsma: web::Data<Gsma>) -> Result<HttpResponse, GsmaError> {
    let principal = caller.0;
    let id = path.into_inner().to_ascii_lowercase();
    uuid::Uuid::try_parse(&id).map_err(|_| GsmaError::not_found("no request carried this X-CorrelationID"))?;
    let key = IdempotencyKey::parse(&id).map_err(|_| GsmaError::not_found("no request carried this X-CorrelationID"))?;
    let reference = run(&gsma.platform, move |p| made(p, &principal, &key)).await?;
    let reference = reference.ok_or_else(|| GsmaError::not_found("no request carried this X-CorrelationID"))?;
    let resource = if reference.starts_with("bp_") { "batchtransactions" } else { "transactions" };
    Ok(HttpResponse::Ok().json(Link { link: format!("{BASE}/{resource}/{reference}") }))
}

/// The document's `responseHeartbeat`.
#[derive(Clone, Copy, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Beat {
    service_status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    delay: Option<u64>,
}

/// How long a heartbeat is answered again before the database is asked anew.
const BEAT_FRESH: std::time::Duration = std::time::Duration::from_secs(1);

/// `GET /heartbeat` (no token needed): `available`; `degraded` while the service refuses new
/// payments to catch up with its due work, with the expected `delay` in milliseconds;
/// `unavailable` when the database does not answer. Read at most once a second.
///
/// # Errors
/// None of its own: every state is a 200 answer.
pub async fn heartbeat(gsma: web::Data<Gsma>) -> Result<HttpResponse, GsmaError> {
    let cached = *gsma.beat.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((_, beat)) = cached.filter(|(at, _)| at.elapsed() < BEAT_FRESH) {
        return Ok(HttpResponse::Ok().json(beat));
    }
    let reading = run(&gsma.platform, |p| {
        p.store().ready().map_err(ServiceError::Store)?;
        Ok(p.backlog().admit(Intake::Charge).err())
    })
    .await;
    let beat = match reading {
        Ok(None) => Beat { service_status: "available", delay: None },
        Ok(Some(ServiceError::Busy { retry_after })) => Beat { service_status: "degraded", delay: Some(retry_after.saturating_mul(1000)) },
        Ok(Some(_)) => Beat { service_status: "degraded", delay: None },
        Err(_) => Beat { service_status: "unavailable", delay: None },
    };
    *gsma.beat.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some((std::time::Instant::now(), beat));
    Ok(HttpResponse::Ok().json(beat))
}
