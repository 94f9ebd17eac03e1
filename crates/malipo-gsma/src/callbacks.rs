//! Callbacks: the outcome of a request made with `X-Callback-URL`, `PUT` there once final. The
//! service keeps, claims and retries them (`malipo_service::Callbacks`); this renders each
//! attempt at send time: the final transaction (or batch) object as `GET` would answer it to
//! the caller that asked, or, for one that failed, the document's error object, signed with the
//! Standard Webhooks headers under the organisation's callback secret (`docs/gsma.md`).

use malipo_service::{CallbackJob, Platform, ServiceError};
use malipo_webhooks::signature_header;

use crate::objects::{self, Progress};
use crate::transactions;

/// The body of a callback: the object, or the error object of a failed one.
///
/// # Errors
/// [`ServiceError::NotFound`] for an object the caller can no longer read; storage failures.
pub fn callback_body(p: &Platform, job: &CallbackJob) -> Result<Vec<u8>, ServiceError> {
    let (who, reference) = (&job.principal, job.object_id.as_str());
    let failed = |progress: Progress, at: malipo_core::Timestamp| match progress {
        Progress::Failed(e) => serde_json::to_vec(&e.object(at.to_rfc3339())).ok(),
        _ => None,
    };
    let error = match reference.split_once('_').map(|(prefix, _)| prefix) {
        Some("ch") => p.charges().get(who, reference).map(|c| failed(objects::charge_progress(&c), c.updated_at))?,
        Some("wd") => p.agents().get_cash_out(who, reference).map(|c| failed(objects::charge_progress(&c), c.updated_at))?,
        Some("po") => p.payouts().get(who, reference).map(|po| failed(objects::payout_progress(&po), po.updated_at))?,
        Some("bp") => {
            let b = p.bulk_payouts().get(who, reference)?;
            return Ok(failed(objects::batch_progress(&b), b.updated_at).unwrap_or_else(|| to_json(&objects::batch(&b))));
        }
        _ => None,
    };
    match error {
        Some(body) => Ok(body),
        None => Ok(to_json(&transactions::find(p, who, reference)?)),
    }
}

fn to_json(value: &impl serde::Serialize) -> Vec<u8> {
    serde_json::to_vec(value).unwrap_or_default()
}

/// The headers of a callback attempt with `body`: the Standard Webhooks `webhook-id` (the
/// callback's id, the same on every attempt), `webhook-timestamp` and `webhook-signature`
/// (the current secret's, and the previous one's while it is valid), and the document's
/// `X-Date` and the request's `X-CorrelationID` when it sent one.
pub fn callback_headers(job: &CallbackJob, body: &[u8]) -> Vec<(String, String)> {
    let mut secrets = vec![&job.secret];
    secrets.extend(job.previous_secret.as_ref());
    let date = malipo_core::Timestamp::from_micros(job.timestamp.saturating_mul(1_000_000)).to_rfc3339();
    let mut headers = vec![
        ("webhook-id".to_owned(), job.id.clone()),
        ("webhook-timestamp".to_owned(), job.timestamp.to_string()),
        ("webhook-signature".to_owned(), signature_header(&secrets, &job.id, job.timestamp, body)),
        ("content-type".to_owned(), "application/json".to_owned()),
        ("x-date".to_owned(), date),
        ("user-agent".to_owned(), "Malipo-GSMA-Callbacks/1".to_owned()),
    ];
    if let Some(id) = &job.correlation_id {
        headers.push(("x-correlationid".to_owned(), id.clone()));
    }
    headers
}
