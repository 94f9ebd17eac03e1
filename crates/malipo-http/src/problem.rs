//! The one error format: RFC 9457 problem documents, built in this one place.

use std::borrow::Cow;

use actix_web::http::header::{self, HeaderValue};
use actix_web::http::StatusCode;
use actix_web::{HttpResponse, ResponseError};
use malipo_service::{FieldError, OAuthProblem, ServiceError, StoreError, TokenProblem};
use serde::Serialize;
use utoipa::ToSchema;

use crate::request_id::current_request_id;

/// One field's problem.
#[derive(Debug, Clone, Serialize, ToSchema, PartialEq, Eq)]
pub struct ProblemField {
    /// The field, e.g. `amount`.
    pub field: String,
    /// Stable code, e.g. `invalid_amount`.
    pub code: String,
    /// Human-readable.
    pub message: String,
}

/// An RFC 9457 problem document.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Problem {
    /// `urn:malipo:problem:<code>`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Short summary of the problem type.
    pub title: String,
    /// The HTTP status.
    pub status: u16,
    /// What went wrong here.
    pub detail: String,
    /// Stable, documented code.
    pub code: String,
    /// The request's id (also in `X-Request-Id`).
    pub request_id: String,
    /// Field problems, when there are any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub errors: Option<Vec<ProblemField>>,
    /// RFC 6749 error code (token and revoke endpoints only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// RFC 6749 error description (token and revoke endpoints only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_description: Option<String>,
}

/// How the client authenticated at the token endpoint (decides `WWW-Authenticate`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientAuth {
    /// HTTP Basic.
    Basic,
    /// Body parameters.
    Body,
}

/// Every error an endpoint can answer with.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// A use case refused.
    #[error(transparent)]
    Service(#[from] ServiceError),
    /// Malformed JSON or form, wrong types, bad query parameter.
    #[error("{0}")]
    InvalidRequest(String),
    /// Field problems found at the edge (unknown or missing fields).
    #[error("validation failed")]
    Fields(Vec<ProblemField>),
    /// A state-changing call without a key.
    #[error("an Idempotency-Key header is required")]
    IdempotencyKeyMissing,
    /// No bearer token.
    #[error("a bearer token is required")]
    Unauthorized,
    /// Token valid, scope missing (several, space-separated, when any one of them would do).
    #[error("{}", insufficient_scope(.0))]
    InsufficientScope(Cow<'static, str>),
    /// Unknown route.
    #[error("no such resource")]
    NotFound,
    /// Known route, wrong method (with the methods it allows).
    #[error("method not allowed; this resource allows {0}")]
    MethodNotAllowed(&'static str),
    /// Body too large.
    #[error("the request body exceeds {0} bytes")]
    PayloadTooLarge(usize),
    /// Wrong content type.
    #[error("{0}")]
    UnsupportedMediaType(String),
    /// Over the rate limit.
    #[error("rate limit exceeded; retry after {0} s")]
    RateLimited(u64),
    /// Any other error of the token and revoke endpoints (a body too large, a wrong media type,
    /// the database unavailable): the same status and code, in those endpoints' format.
    #[error("{0}")]
    AtTokenEndpoint(Box<ApiError>),
    /// RFC 6749 errors of the token and revoke endpoints.
    #[error("{description}")]
    OAuth {
        /// `invalid_request`, `invalid_client`, `unsupported_grant_type`, `invalid_scope`.
        code: &'static str,
        /// `error_description`.
        description: String,
        /// Set when the client used HTTP Basic (adds `WWW-Authenticate: Basic`).
        auth: Option<ClientAuth>,
    },
}

impl ApiError {
    /// An error of the token or revoke endpoint, in their format: `application/json` with
    /// `error` (the code) and `error_description`, `Cache-Control: no-store`.
    pub fn at_token_endpoint(self) -> Self {
        match self {
            e @ (ApiError::OAuth { .. } | ApiError::Service(ServiceError::OAuth(_)) | ApiError::AtTokenEndpoint(_)) => e,
            other => ApiError::AtTokenEndpoint(Box::new(other)),
        }
    }

    /// The error itself, out of the token endpoint's wrapper.
    fn inner(&self) -> &ApiError {
        match self {
            ApiError::AtTokenEndpoint(e) => e.inner(),
            other => other,
        }
    }

    /// An RFC 6749 `invalid_request`.
    pub fn oauth_invalid_request(description: impl Into<String>) -> Self {
        ApiError::OAuth { code: "invalid_request", description: description.into(), auth: None }
    }

    fn parts(&self) -> (StatusCode, &'static str, &'static str, String) {
        use StatusCode as S;
        let d = self.to_string();
        match self {
            ApiError::InvalidRequest(_) => (S::BAD_REQUEST, "invalid_request", "Invalid request", d),
            ApiError::Fields(f) => {
                let detail = f.iter().map(|f| f.message.clone()).collect::<Vec<_>>().join("; ");
                (S::UNPROCESSABLE_ENTITY, "validation_failed", "Request validation failed", detail)
            }
            ApiError::IdempotencyKeyMissing => (S::BAD_REQUEST, "idempotency_key_missing", "Idempotency key missing", d),
            ApiError::Unauthorized => (S::UNAUTHORIZED, "unauthorized", "Unauthorized", d),
            ApiError::InsufficientScope(_) => (S::FORBIDDEN, "insufficient_scope", "Insufficient scope", d),
            ApiError::NotFound => (S::NOT_FOUND, "not_found", "Not found", d),
            ApiError::MethodNotAllowed(_) => (S::METHOD_NOT_ALLOWED, "method_not_allowed", "Method not allowed", d),
            ApiError::PayloadTooLarge(_) => (S::PAYLOAD_TOO_LARGE, "payload_too_large", "Payload too large", d),
            ApiError::UnsupportedMediaType(_) => (S::UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type", "Unsupported media type", d),
            ApiError::RateLimited(_) => (S::TOO_MANY_REQUESTS, "rate_limited", "Too many requests", d),
            ApiError::OAuth { code, .. } => {
                let status = if *code == "invalid_client" { S::UNAUTHORIZED } else { S::BAD_REQUEST };
                (status, code, "Token request refused", d)
            }
            ApiError::Service(e) => service_parts(e),
            ApiError::AtTokenEndpoint(e) => e.parts(),
        }
    }

    fn fields(&self) -> Option<Vec<ProblemField>> {
        match self.inner() {
            ApiError::Fields(f) => Some(f.clone()),
            ApiError::Service(ServiceError::Validation(f)) => Some(f.iter().map(to_problem_field).collect()),
            _ => None,
        }
    }

    /// The problem document of this error.
    pub fn problem(&self) -> Problem {
        let (status, code, title, detail) = self.parts();
        let oauth = matches!(self, ApiError::OAuth { .. } | ApiError::AtTokenEndpoint(_));
        Problem {
            kind: format!("urn:malipo:problem:{code}"),
            title: title.to_owned(),
            status: status.as_u16(),
            detail: detail.clone(),
            code: code.to_owned(),
            request_id: current_request_id(),
            errors: self.fields(),
            error: oauth.then(|| code.to_owned()),
            error_description: oauth.then_some(detail),
        }
    }
}

fn insufficient_scope(scopes: &str) -> String {
    if scopes.contains(' ') {
        let list = scopes.split(' ').map(|s| format!("`{s}`")).collect::<Vec<_>>().join(", ");
        format!("this token lacks a scope this call needs: one of {list}")
    } else {
        format!("this token lacks the `{scopes}` scope")
    }
}

fn to_problem_field(f: &FieldError) -> ProblemField {
    ProblemField { field: f.field.clone(), code: f.code.to_owned(), message: f.message.clone() }
}

/// The contract's code and title of a use case's error.
pub fn service_code(e: &ServiceError) -> (&'static str, &'static str) {
    match e {
        ServiceError::NotFound => ("not_found", "Not found"),
        ServiceError::Validation(_) => ("validation_failed", "Request validation failed"),
        ServiceError::InvalidState(_) => ("invalid_state", "Invalid state"),
        ServiceError::InsufficientFunds => ("insufficient_funds", "Insufficient funds"),
        ServiceError::CurrencyMismatch(_) => ("currency_mismatch", "Currency mismatch"),
        ServiceError::LimitExceeded(_) => ("limit_exceeded", "Limit exceeded"),
        ServiceError::WalletLocked => ("wallet_locked", "Wallet locked"),
        ServiceError::MakerChecker => ("maker_checker_violation", "Maker-checker violation"),
        ServiceError::ReversalExceedsOriginal(_) => ("reversal_exceeds_original", "Reversal exceeds the original"),
        ServiceError::IdempotencyReused => ("idempotency_key_reused", "Idempotency key reused"),
        ServiceError::IdempotencyInProgress | ServiceError::AnsweredEarlier(_) => ("idempotency_in_progress", "Request in progress"),
        ServiceError::Forbidden(_) => ("insufficient_scope", "Forbidden"),
        ServiceError::TestModeOnly => ("test_mode_only", "Test mode only"),
        ServiceError::Token(_) => ("invalid_token", "Invalid token"),
        ServiceError::OAuth(OAuthProblem::InvalidClient) => ("invalid_client", "Token request refused"),
        ServiceError::OAuth(OAuthProblem::InvalidScope(_)) => ("invalid_scope", "Token request refused"),
        ServiceError::Store(StoreError::Unavailable(_) | StoreError::Retry) | ServiceError::Busy { .. } => {
            ("unavailable", "Service unavailable")
        }
        ServiceError::Store(StoreError::Ledger(_)) if e.is_insufficient_funds() => ("insufficient_funds", "Insufficient funds"),
        ServiceError::Store(_) | ServiceError::Internal(_) => ("internal_error", "Internal error"),
    }
}

fn service_parts(e: &ServiceError) -> (StatusCode, &'static str, &'static str, String) {
    use StatusCode as S;
    let (code, title) = service_code(e);
    let status = match code {
        "not_found" => S::NOT_FOUND,
        "invalid_state" | "idempotency_in_progress" => S::CONFLICT,
        "maker_checker_violation" | "test_mode_only" | "insufficient_scope" => S::FORBIDDEN,
        "invalid_token" | "invalid_client" => S::UNAUTHORIZED,
        "invalid_scope" => S::BAD_REQUEST,
        "unavailable" => S::SERVICE_UNAVAILABLE,
        "internal_error" => S::INTERNAL_SERVER_ERROR,
        _ => S::UNPROCESSABLE_ENTITY,
    };
    let detail = match e {
        ServiceError::Token(p) => token_description(*p).into(),
        _ => e.message(),
    };
    (status, code, title, detail)
}

fn token_description(p: TokenProblem) -> &'static str {
    match p {
        TokenProblem::Invalid => "The access token is invalid",
        TokenProblem::Expired => "The access token expired",
        TokenProblem::Revoked => "The access token was revoked",
    }
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        self.parts().0
    }

    fn error_response(&self) -> HttpResponse {
        let problem = self.problem();
        let status = self.status_code();
        if status.is_server_error() {
            tracing::error!(error = %self, request_id = %problem.request_id, "request failed");
        }
        let oauth_endpoint =
            matches!(self, ApiError::OAuth { .. } | ApiError::Service(ServiceError::OAuth(_)) | ApiError::AtTokenEndpoint(_));
        let mut res = HttpResponse::build(status);
        res.content_type(if oauth_endpoint { "application/json" } else { "application/problem+json" });
        match self.inner() {
            ApiError::Unauthorized => {
                res.insert_header((header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer realm=\"malipo\"")));
            }
            ApiError::Service(ServiceError::Token(p)) => {
                let v = format!("Bearer realm=\"malipo\", error=\"invalid_token\", error_description=\"{}\"", token_description(*p));
                res.insert_header((header::WWW_AUTHENTICATE, v));
            }
            ApiError::InsufficientScope(scope) => {
                let v = format!("Bearer realm=\"malipo\", error=\"insufficient_scope\", scope=\"{scope}\"");
                res.insert_header((header::WWW_AUTHENTICATE, v));
            }
            ApiError::OAuth { auth: Some(ClientAuth::Basic), code: "invalid_client", .. } => {
                res.insert_header((header::WWW_AUTHENTICATE, "Basic realm=\"malipo\""));
            }
            ApiError::Service(ServiceError::IdempotencyInProgress) => {
                res.insert_header((header::RETRY_AFTER, "1"));
            }
            ApiError::MethodNotAllowed(allow) => {
                res.insert_header((header::ALLOW, *allow));
            }
            ApiError::RateLimited(secs) => {
                res.insert_header((header::RETRY_AFTER, secs.to_string()));
            }
            ApiError::Service(ServiceError::Store(StoreError::Unavailable(_) | StoreError::Retry)) => {
                res.insert_header((header::RETRY_AFTER, "1"));
            }
            ApiError::Service(ServiceError::Busy { retry_after }) => {
                res.insert_header((header::RETRY_AFTER, retry_after.to_string()));
            }
            _ => {}
        }
        if oauth_endpoint {
            res.insert_header((header::CACHE_CONTROL, "no-store"));
        }
        res.json(problem)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn money_out_refusals_have_their_own_codes() {
        for (e, status, code) in [
            (ServiceError::MakerChecker, 403, "maker_checker_violation"),
            (ServiceError::ReversalExceedsOriginal("only 50.00 of ch_x is left to reverse".into()), 422, "reversal_exceeds_original"),
        ] {
            let p = ApiError::Service(e).problem();
            assert_eq!((p.status, p.code.as_str(), p.kind.as_str()), (status, code, format!("urn:malipo:problem:{code}").as_str()));
            assert!(p.errors.is_none() && p.error.is_none());
        }
        let p = ApiError::Service(ServiceError::ReversalExceedsOriginal("only 50.00 of ch_x is left to reverse".into())).problem();
        assert_eq!(p.detail, "only 50.00 of ch_x is left to reverse");
    }
}
