//! Who calls and what they sent: the bearer token's principal (the same OAuth tokens as the
//! REST API; test keys select the sandbox), the body with the document's optional integrity
//! headers checked, and the idempotency context of `X-CorrelationID`.
//!
//! Of the headers the document marks optional: `X-CorrelationID` keys idempotency (a UUID);
//! `X-Content-Hash`, when sent, must be the SHA-256 of the body; `X-Date`, when sent, must be a
//! date-time; `X-API-Key`,
//! `X-Client-Id`, `X-User-Bearer`, `X-User-Credential-*`, `X-Channel` and the
//! account-holding-institution headers are accepted and ignored (the bearer token is the
//! credential).

use std::future::Future;
use std::pin::Pin;

use actix_web::dev::Payload;
use actix_web::http::header;
use actix_web::{web, FromRequest, HttpRequest};
use malipo_auth::Principal;
use malipo_idempotency::{Fingerprint, IdempotencyKey, KeyScope};
use malipo_service::{CallbackTarget, Idem};
use serde::de::DeserializeOwned;
use sha2::{Digest, Sha256};

use crate::error::GsmaError;
use crate::Gsma;

/// The largest body the door reads.
pub const BODY_LIMIT: usize = 256 * 1024;

/// A request's body, read up to its route's limit ([`BODY_LIMIT`] unless the route sets its own);
/// a larger or broken one is the document's error (the document lists no 413).
pub struct Body(pub web::Bytes);

impl FromRequest for Body {
    type Error = GsmaError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, Self::Error>>>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let read = web::Bytes::from_request(req, payload);
        Box::pin(async move {
            read.await
                .map(Body)
                .map_err(|e| GsmaError::format(format!("the body could not be read (at most {} KiB): {e}", BODY_LIMIT / 1024)))
        })
    }
}

/// The caller: the principal of a valid bearer token, within its request budget.
pub struct Caller(pub Principal);

impl FromRequest for Caller {
    type Error = GsmaError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, Self::Error>>>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let req = req.clone();
        Box::pin(async move {
            let token = bearer(&req).ok_or_else(GsmaError::unauthenticated)?;
            let gsma = door(&req)?;
            let platform = gsma.platform.clone();
            let principal = crate::run(&platform, move |p| p.access().authenticate(&token)).await?;
            (gsma.admit)(&principal).map_err(GsmaError::rate_limited)?;
            Ok(Caller(principal))
        })
    }
}

fn bearer(req: &HttpRequest) -> Option<String> {
    let value = req.headers().get(header::AUTHORIZATION)?.to_str().ok()?;
    malipo_auth::bearer_token(value).map(str::to_owned)
}

/// The door's settings, registered by [`crate::configure`].
///
/// # Errors
/// 500 when the door is not configured (a wiring bug).
pub fn door(req: &HttpRequest) -> Result<web::Data<Gsma>, GsmaError> {
    req.app_data::<web::Data<Gsma>>()
        .cloned()
        .ok_or_else(|| GsmaError::from(malipo_service::ServiceError::Internal("the GSMA door is not configured".into())))
}

/// A header's text, if sent (a header that is not text is malformed).
///
/// # Errors
/// 400 `formatError` for a header that is not visible ASCII.
pub fn header_text<'r>(req: &'r HttpRequest, name: &str) -> Result<Option<&'r str>, GsmaError> {
    match req.headers().get(name) {
        None => Ok(None),
        Some(v) => v.to_str().map(|s| Some(s.trim())).map_err(|_| GsmaError::field(name, format!("{name} must be text"))),
    }
}

/// Checks the optional `X-Date` (a date-time) and `X-Content-Hash` (the body's SHA-256, hex).
///
/// # Errors
/// 400 `formatError` naming the header.
pub fn check_headers(req: &HttpRequest, body: &[u8]) -> Result<(), GsmaError> {
    if let Some(date) = header_text(req, "X-Date")? {
        if malipo_core::Timestamp::parse_rfc3339(date).is_err() {
            return Err(GsmaError::field("X-Date", "X-Date must be an RFC 3339 date-time"));
        }
    }
    if let Some(hash) = header_text(req, "X-Content-Hash")? {
        let actual = hex::encode(Sha256::digest(body));
        if !hash.eq_ignore_ascii_case(&actual) {
            return Err(GsmaError::field("X-Content-Hash", "X-Content-Hash is not the SHA-256 of the body"));
        }
    }
    Ok(())
}

/// A JSON body of any shape (after [`check_headers`]), with its canonical form (keys sorted, no
/// spaces) for the idempotency fingerprint: the document's patch bodies are arrays.
///
/// # Errors
/// 400 `formatError`: not sent as JSON, not JSON.
pub fn json_tree(req: &HttpRequest, body: &[u8]) -> Result<(serde_json::Value, Vec<u8>), GsmaError> {
    check_headers(req, body)?;
    let media = header_text(req, "content-type")?.unwrap_or("");
    if !media.split(';').next().is_some_and(|m| m.trim().eq_ignore_ascii_case("application/json")) {
        return Err(GsmaError::format("the body must be JSON, sent with Content-Type: application/json"));
    }
    let tree: serde_json::Value = serde_json::from_slice(body).map_err(|e| GsmaError::format(format!("malformed JSON: {e}")))?;
    // serde_json's map keeps its keys sorted, so this is the same for the same body.
    let canonical = serde_json::to_vec(&tree).unwrap_or_default();
    Ok((tree, canonical))
}

/// A JSON object body read as `T` (after [`check_headers`]), with its canonical form (keys
/// sorted, no spaces) for the idempotency fingerprint. Fields the door does not use are ignored,
/// as the document allows.
///
/// # Errors
/// 400 `formatError`: not JSON, not an object, a field of the wrong type; a missing field
/// `mandatoryValueNotSupplied`.
pub fn json<T: DeserializeOwned>(req: &HttpRequest, body: &[u8]) -> Result<(T, Vec<u8>), GsmaError> {
    let (tree, canonical) = json_tree(req, body)?;
    if !tree.is_object() {
        return Err(GsmaError::format("the body must be a JSON object"));
    }
    let value = serde_json::from_value::<T>(tree).map_err(|e| {
        let text = e.to_string();
        match text.strip_prefix("missing field `").and_then(|r| r.split('`').next()) {
            Some(field) => GsmaError::missing(field),
            None => GsmaError::format(text),
        }
    })?;
    Ok((value, canonical))
}

/// The idempotency context of a state-changing call: the key is `X-CorrelationID` (a UUID),
/// scoped to the caller's organisation, mode and `operation`; the fingerprint covers the method,
/// the path, the body and the callback URL. An `X-Callback-URL` asks for the outcome to be
/// `PUT` there once final (the use case checks the address and writes it with the key). Without `X-CorrelationID` the request is its own,
/// under a fresh key: the document makes the header optional, and such a request is not
/// idempotent (`docs/gsma.md`).
///
/// # Errors
/// 400 `formatError` for an `X-CorrelationID` that is not a UUID.
pub fn correlation(
    req: &HttpRequest,
    principal: &Principal,
    operation: &str,
    canonical: &[u8],
) -> Result<(Idem, Option<String>), GsmaError> {
    let sent = header_text(req, "X-CorrelationID")?;
    let key = match sent {
        Some(id) => {
            uuid::Uuid::try_parse(id).map_err(|_| GsmaError::field("X-CorrelationID", "X-CorrelationID must be a UUID"))?;
            id.to_ascii_lowercase()
        }
        None => uuid::Uuid::new_v4().to_string(),
    };
    let key = IdempotencyKey::parse(&key).map_err(|_| GsmaError::field("X-CorrelationID", "X-CorrelationID must be a UUID"))?;
    let callback = header_text(req, "X-Callback-URL")?.unwrap_or("");
    let mut material = canonical.to_vec();
    material.extend_from_slice(b"\ncallback:");
    material.extend_from_slice(callback.as_bytes());
    let idem = Idem {
        scope: KeyScope { org_id: principal.org_id.clone(), mode: principal.mode, operation: operation.to_owned() },
        key,
        fingerprint: Fingerprint::of(req.method().as_str(), req.path(), &material),
        actor: None,
        callback: (!callback.is_empty()).then(|| CallbackTarget {
            url: callback.to_owned(),
            client_id: principal.client_id.clone(),
            correlation_id: sent.map(str::to_ascii_lowercase),
        }),
    };
    Ok((idem, sent.map(str::to_ascii_lowercase)))
}
