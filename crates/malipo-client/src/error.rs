//! One error type: the API's problem documents apart from transport failures.

use std::time::Duration;

use serde::Deserialize;

/// Everything a call can fail with.
///
/// Every error of a state-changing call (a write) carries the idempotency key the client sent it
/// under, given or generated: [`Error::idempotency_key`]. Whatever the error, the one safe way to
/// try the write again is the `_with_key` form of the same call with that key and the same
/// request: the server answers a key it has already done with the same answer, so the write is
/// made at most once. A new call without the key may make it twice (the first may have been
/// done, its answer lost).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The API answered with a problem document (after any retries); the key is
    /// [`ApiError::idempotency_key`].
    #[error("{0}")]
    Api(Box<ApiError>),
    /// The request did not get an answer (after any retries): connection refused or reset, a
    /// timeout, a body cut short. A write may or may not have been done.
    #[error("transport: {source}")]
    Transport {
        /// What failed.
        #[source]
        source: reqwest::Error,
        /// The key of the write.
        idempotency_key: Option<String>,
    },
    /// The token endpoint refused the key pair or could not be reached.
    #[error("token: {message}")]
    Token {
        /// What went wrong.
        message: String,
        /// The key of the write.
        idempotency_key: Option<String>,
    },
    /// A successful answer whose body is not what the contract says (a write was done).
    #[error("unexpected response: {message}")]
    Decode {
        /// What is wrong with it.
        message: String,
        /// The key of the write.
        idempotency_key: Option<String>,
    },
    /// The client was configured with something unusable (a base URL that is not one), or a
    /// request could not be built (nothing was sent).
    #[error("configuration: {message}")]
    Config {
        /// What is unusable.
        message: String,
        /// The key of the write.
        idempotency_key: Option<String>,
    },
    /// The caller's own reader or writer failed: the CSV file of an upload, the destination
    /// of an export.
    #[error("i/o: {source}")]
    Io {
        /// What failed.
        #[source]
        source: std::io::Error,
        /// The key of the write.
        idempotency_key: Option<String>,
    },
}

impl Error {
    /// The API's error code, when the API answered.
    pub fn code(&self) -> Option<&ErrorCode> {
        match self {
            Error::Api(e) => Some(&e.code),
            _ => None,
        }
    }

    /// The idempotency key of the failed call, when it was a write (`None` for a read): the
    /// key the client generated or was given. Retry with the call's `_with_key` form and this
    /// key (and the same request) to make the write at most once.
    pub fn idempotency_key(&self) -> Option<&str> {
        match self {
            Error::Api(e) => e.idempotency_key.as_deref(),
            Error::Transport { idempotency_key, .. }
            | Error::Token { idempotency_key, .. }
            | Error::Decode { idempotency_key, .. }
            | Error::Config { idempotency_key, .. }
            | Error::Io { idempotency_key, .. } => idempotency_key.as_deref(),
        }
    }

    /// This error as the error of a call under `key` (kept when it already has one).
    pub(crate) fn with_key(mut self, key: Option<&str>) -> Self {
        let Some(key) = key else { return self };
        let slot = match &mut self {
            Error::Api(e) => &mut e.idempotency_key,
            Error::Transport { idempotency_key, .. }
            | Error::Token { idempotency_key, .. }
            | Error::Decode { idempotency_key, .. }
            | Error::Config { idempotency_key, .. }
            | Error::Io { idempotency_key, .. } => idempotency_key,
        };
        slot.get_or_insert_with(|| key.to_owned());
        self
    }

    pub(crate) fn transport(source: reqwest::Error) -> Self {
        Error::Transport { source, idempotency_key: None }
    }

    pub(crate) fn token(message: impl Into<String>) -> Self {
        Error::Token { message: message.into(), idempotency_key: None }
    }

    pub(crate) fn decode(message: impl Into<String>) -> Self {
        Error::Decode { message: message.into(), idempotency_key: None }
    }

    pub(crate) fn config(message: impl Into<String>) -> Self {
        Error::Config { message: message.into(), idempotency_key: None }
    }

    pub(crate) fn io(source: std::io::Error) -> Self {
        Error::Io { source, idempotency_key: None }
    }
}

/// A problem document (RFC 9457) as the API sends it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ApiError {
    /// The HTTP status.
    pub status: u16,
    /// The stable code (`validation_failed`, `insufficient_funds`, ...).
    pub code: ErrorCode,
    /// The short, human-readable summary.
    pub title: String,
    /// What went wrong with this request, for people.
    pub detail: Option<String>,
    /// The problems of individual fields (`validation_failed`).
    pub errors: Vec<FieldError>,
    /// The request's id, to quote to support.
    pub request_id: Option<String>,
    /// How long the API asked to wait before trying again (429, 503, 409 in progress).
    pub retry_after: Option<Duration>,
    /// The idempotency key of the call, when it was a write ([`Error::idempotency_key`]).
    pub idempotency_key: Option<String>,
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.status, self.code.as_str())?;
        // A validation failure's detail is its field errors' messages joined: each is shown
        // once, with its field.
        let repeats = !self.errors.is_empty() && self.errors.iter().all(|e| self.detail.as_deref().is_some_and(|d| d.contains(&e.message)));
        let mut sep = ": ";
        if let Some(detail) = self.detail.as_deref().filter(|_| !repeats) {
            write!(f, "{sep}{detail}")?;
            sep = "; ";
        }
        for e in &self.errors {
            write!(f, "{sep}{}: {}", e.field, e.message)?;
            sep = "; ";
        }
        Ok(())
    }
}

crate::names::names! {
    /// A field error's code (contract section 9), and any other as [`FieldErrorCode::Other`].
    FieldErrorCode {
        InvalidMsisdn = "invalid_msisdn": "not a number of a served country.",
        InvalidAmount = "invalid_amount": "not a positive amount in the currency's minor units, or above a maximum.",
        InvalidCurrency = "invalid_currency": "not the currency expected.",
        InvalidValue = "invalid_value": "a value the field does not take.",
        InvalidUrl = "invalid_url": "a URL the mode refuses.",
        InvalidPin = "invalid_pin": "not a PIN of the country's length.",
        InvalidHeader = "invalid_header": "a malformed header.",
        InvalidCursor = "invalid_cursor": "a cursor the API did not give.",
        InvalidEncoding = "invalid_encoding": "not UTF-8.",
        UnknownField = "unknown_field": "a field the request does not take.",
        MissingField = "missing_field": "a required field is absent.",
        TooLong = "too_long": "longer than the field allows.",
        TooFewItems = "too_few_items": "a list with too few items.",
        TooManyItems = "too_many_items": "a list with too many items.",
        WeakPin = "weak_pin": "a PIN too easy to guess.",
        WrongPin = "wrong_pin": "the current PIN is wrong.",
        AlreadyRegistered = "already_registered": "the identity document belongs to another wallet.",
    }
}

/// One field's problem in a `validation_failed` answer.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[non_exhaustive]
pub struct FieldError {
    /// The request field (`amount`, `payer_msisdn`, ...).
    pub field: String,
    /// Its code.
    pub code: FieldErrorCode,
    /// For people.
    pub message: String,
}

#[derive(Deserialize)]
struct Problem {
    #[serde(default)]
    title: String,
    #[serde(default)]
    detail: Option<String>,
    #[serde(default)]
    code: Option<String>,
    /// The token endpoint's RFC 6749 code.
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    errors: Vec<FieldError>,
    #[serde(default)]
    request_id: Option<String>,
}

impl ApiError {
    /// The problem of an answer with status `status`, its body and `Retry-After` header.
    pub(crate) fn parse(status: u16, body: &[u8], retry_after: Option<Duration>) -> Self {
        match serde_json::from_slice::<Problem>(body) {
            Ok(p) => ApiError {
                status,
                code: ErrorCode::from(p.code.or(p.error).unwrap_or_default().as_str()),
                title: p.title,
                detail: p.detail,
                errors: p.errors,
                request_id: p.request_id,
                retry_after,
                idempotency_key: None,
            },
            Err(_) => ApiError {
                status,
                code: ErrorCode::Other(format!("http_{status}")),
                title: String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned(),
                detail: None,
                errors: Vec::new(),
                request_id: None,
                retry_after,
                idempotency_key: None,
            },
        }
    }
}

crate::names::names! {
    /// The contract's error codes (section 9), and any other as [`ErrorCode::Other`].
    ErrorCode {
        InvalidRequest = "invalid_request": "Malformed JSON or form, wrong types, a bad query parameter.",
        IdempotencyKeyMissing = "idempotency_key_missing": "A state-changing call without a key.",
        Unauthorized = "unauthorized": "No or unusable credentials.",
        InvalidToken = "invalid_token": "An expired, revoked or unknown bearer token.",
        InvalidClient = "invalid_client": "The key pair was refused.",
        InvalidScope = "invalid_scope": "A token asked for scopes the key pair lacks.",
        InsufficientScope = "insufficient_scope": "The token lacks the operation's scope.",
        MakerCheckerViolation = "maker_checker_violation": "The maker of a bulk payout may not approve it.",
        TestModeOnly = "test_mode_only": "A sandbox operation called with a live key pair.",
        NotFound = "not_found": "Absent, or another organisation's or mode's.",
        MethodNotAllowed = "method_not_allowed": "The path does not take this method.",
        IdempotencyInProgress = "idempotency_in_progress": "The same key is still being processed.",
        InvalidState = "invalid_state": "The object's state forbids the operation.",
        PayloadTooLarge = "payload_too_large": "The body is too large.",
        UnsupportedMediaType = "unsupported_media_type": "The body's media type is not accepted.",
        ValidationFailed = "validation_failed": "Fields are wrong: see `errors`.",
        IdempotencyKeyReused = "idempotency_key_reused": "The key was used for a different request.",
        InsufficientFunds = "insufficient_funds": "The account lacks the funds.",
        CurrencyMismatch = "currency_mismatch": "The currency is not the account's.",
        LimitExceeded = "limit_exceeded": "A KYC tier or daily limit would be exceeded.",
        ReversalExceedsOriginal = "reversal_exceeds_original": "More would be reversed than was charged.",
        WalletLocked = "wallet_locked": "The wallet is locked.",
        RateLimited = "rate_limited": "Too many requests: wait `retry_after`.",
        InternalError = "internal_error": "The server failed.",
        Unavailable = "unavailable": "The service cannot answer now: wait `retry_after`.",
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_validation_failure_shows_each_message_once() {
        let body = br#"{"title":"Request validation failed","status":422,"code":"validation_failed",
            "detail":"amount has more decimals than KES allows; payer_msisdn is not a number",
            "errors":[{"field":"amount","code":"invalid_amount","message":"amount has more decimals than KES allows"},
                      {"field":"payer_msisdn","code":"invalid_msisdn","message":"payer_msisdn is not a number"}]}"#;
        let e = ApiError::parse(422, body, None);
        assert_eq!(e.errors[0].code, FieldErrorCode::InvalidAmount);
        assert_eq!(
            e.to_string(),
            "422 validation_failed: amount: amount has more decimals than KES allows; payer_msisdn: payer_msisdn is not a number"
        );
        let other = br#"{"title":"t","status":422,"code":"validation_failed","detail":"2 problems",
            "errors":[{"field":"x","code":"teleport","message":"no"}]}"#;
        let e = ApiError::parse(422, other, None);
        assert_eq!(e.errors[0].code, FieldErrorCode::Other("teleport".to_owned()));
        assert_eq!(e.to_string(), "422 validation_failed: 2 problems; x: no");
        let plain = ApiError::parse(404, br#"{"title":"Not found","code":"not_found","detail":"no such charge"}"#, None);
        assert_eq!(plain.to_string(), "404 not_found: no such charge");
    }
}
