//! The document's error object, and the one table that maps Malipo's errors onto it
//! (`docs/gsma.md`, Errors). The document lists 400, 401, 404, 500 and 503 for every operation,
//! and nothing else: a refused scope is 401, a reused correlation id or a maker approving their
//! own batch 400 or 401, with the category that says which.

use actix_web::http::header::{self, HeaderValue};
use actix_web::http::StatusCode;
use actix_web::{HttpResponse, ResponseError};
use malipo_service::{FieldError, ServiceError, StoreError, TokenProblem};
use serde::Serialize;

/// The document's `errorCategory`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Category {
    /// A business rule refused the request.
    BusinessRule,
    /// A field is malformed or missing.
    Validation,
    /// The caller may not do this.
    Authorisation,
    /// The target resource is unknown.
    Identification,
    /// The provider failed.
    Internal,
    /// Not now: retry later.
    ServiceUnavailable,
}

/// One of the document's key/value pairs (`errorParameters`, `metadata`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Pair {
    /// The key.
    pub key: String,
    /// The value.
    pub value: String,
}

/// The document's error object, with the status and headers it is sent with.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{category:?}/{code}: {description}")]
pub struct GsmaError {
    /// The HTTP status (one the document lists).
    pub status: StatusCode,
    /// `errorCategory`.
    pub category: Category,
    /// `errorCode`, one of the document's harmonised codes.
    pub code: &'static str,
    /// `errordescription` (at most 256 characters).
    pub description: String,
    /// `errorParameters`: for a field's problem, the field and what is wrong with it.
    pub parameters: Vec<Pair>,
    /// Seconds to wait, sent as `Retry-After`.
    pub retry_after: Option<u64>,
    /// Sent with `WWW-Authenticate` (a missing or refused bearer token).
    pub challenge: Option<String>,
}

/// The document's error object as sent.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ErrorObject<'a> {
    /// See [`GsmaError::category`].
    pub error_category: Category,
    /// See [`GsmaError::code`].
    pub error_code: &'a str,
    /// See [`GsmaError::description`]; the document spells it in lower case.
    #[serde(rename = "errordescription")]
    pub error_description: &'a str,
    /// When it happened.
    pub error_date_time: String,
    /// See [`GsmaError::parameters`].
    #[serde(skip_serializing_if = "<[Pair]>::is_empty")]
    pub error_parameters: &'a [Pair],
}

impl GsmaError {
    fn new(status: StatusCode, category: Category, code: &'static str, description: impl Into<String>) -> Self {
        let mut description: String = description.into();
        if description.len() > 256 {
            let mut end = 253;
            while !description.is_char_boundary(end) {
                end -= 1;
            }
            description.truncate(end);
            description.push_str("...");
        }
        GsmaError { status, category, code, description, parameters: Vec::new(), retry_after: None, challenge: None }
    }

    /// A malformed request (400 `validation`/`formatError`).
    pub fn format(description: impl Into<String>) -> Self {
        GsmaError::new(StatusCode::BAD_REQUEST, Category::Validation, "formatError", description)
    }

    /// A malformed field (400 `validation`/`formatError`, the field in `errorParameters`).
    pub fn field(field: &str, description: impl Into<String>) -> Self {
        let description = description.into();
        GsmaError::format(description.clone()).with(field, &description)
    }

    /// A missing field (400 `validation`/`mandatoryValueNotSupplied`).
    pub fn missing(field: &str) -> Self {
        GsmaError::new(StatusCode::BAD_REQUEST, Category::Validation, "mandatoryValueNotSupplied", format!("{field} is required"))
            .with(field, "required")
    }

    /// An `offset` that is not a record's place, or beyond what a list reaches (400
    /// `validation`/`invalidOffset`, `offset` in `errorParameters`).
    pub fn invalid_offset(description: impl Into<String>) -> Self {
        let description = description.into();
        GsmaError::new(StatusCode::BAD_REQUEST, Category::Validation, "invalidOffset", description.clone()).with("offset", &description)
    }

    /// A transaction type this door does not take (400 `validation`/`transactionTypeError`).
    pub fn transaction_type(description: impl Into<String>) -> Self {
        GsmaError::new(StatusCode::BAD_REQUEST, Category::Validation, "transactionTypeError", description)
    }

    /// An unknown resource (404 `identification`/`genericError`).
    pub fn not_found(description: impl Into<String>) -> Self {
        GsmaError::new(StatusCode::NOT_FOUND, Category::Identification, "genericError", description)
    }

    /// No bearer token (401 `authorisation`/`clientAuthorisationError`).
    pub fn unauthenticated() -> Self {
        GsmaError {
            challenge: Some("Bearer realm=\"malipo\"".into()),
            ..GsmaError::new(
                StatusCode::UNAUTHORIZED,
                Category::Authorisation,
                "clientAuthorisationError",
                "send a bearer token from POST /api/v1/oauth/token",
            )
        }
    }

    /// Over the credential's request budget (503 `serviceUnavailable`/`rateLimitError`).
    pub fn rate_limited(retry_after: u64) -> Self {
        GsmaError {
            retry_after: Some(retry_after.max(1)),
            ..GsmaError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                Category::ServiceUnavailable,
                "rateLimitError",
                "too many requests for this credential; retry after the Retry-After seconds",
            )
        }
    }

    /// With one more key/value pair in `errorParameters`.
    #[must_use]
    pub fn with(mut self, key: &str, value: &str) -> Self {
        self.parameters.push(Pair { key: key.to_owned(), value: value.chars().take(256).collect() });
        self
    }

    /// The object as sent, dated `at` (RFC 3339).
    pub fn object(&self, at: String) -> ErrorObject<'_> {
        ErrorObject {
            error_category: self.category,
            error_code: self.code,
            error_description: &self.description,
            error_date_time: at,
            error_parameters: &self.parameters,
        }
    }
}

/// A field's name in the document's request for the name a use case's command gives it.
fn document_field(field: &str) -> String {
    match field {
        "payer_msisdn" | "customer_msisdn" => "debitParty".into(),
        "callback_url" => "X-Callback-URL".into(),
        "payee_msisdn" => "creditParty".into(),
        "reference" => "requestingOrganisationTransactionReference".into(),
        "description" | "narration" | "reason" => "descriptionText".into(),
        other => other.to_owned(),
    }
}

fn fields(errors: &[FieldError]) -> GsmaError {
    let first = errors.first();
    let code = if first.is_some_and(|f| f.code == "missing_field") { "mandatoryValueNotSupplied" } else { "formatError" };
    let description = first.map_or_else(|| "the request is not valid".to_owned(), |f| f.message.clone());
    let mut e = GsmaError::new(StatusCode::BAD_REQUEST, Category::Validation, code, description);
    for f in errors {
        e = e.with(&document_field(&f.field), &f.message);
    }
    e
}

impl From<ServiceError> for GsmaError {
    fn from(e: ServiceError) -> Self {
        use Category as C;
        use StatusCode as S;
        let message = e.message();
        match &e {
            ServiceError::NotFound => GsmaError::not_found(message),
            ServiceError::Validation(errors) => fields(errors),
            ServiceError::InvalidState(_) => GsmaError::new(S::BAD_REQUEST, C::BusinessRule, "incorrectState", message),
            ServiceError::InsufficientFunds => GsmaError::new(S::BAD_REQUEST, C::BusinessRule, "insufficientFunds", message),
            ServiceError::Store(StoreError::Ledger(_)) if e.is_insufficient_funds() => {
                GsmaError::new(S::BAD_REQUEST, C::BusinessRule, "insufficientFunds", "insufficient funds")
            }
            ServiceError::CurrencyMismatch(_) => GsmaError::new(S::BAD_REQUEST, C::Validation, "currencyNotSupported", message),
            ServiceError::LimitExceeded(_) => GsmaError::new(S::BAD_REQUEST, C::BusinessRule, "greaterThanTransactionMaxValue", message),
            ServiceError::WalletLocked => GsmaError::new(S::BAD_REQUEST, C::BusinessRule, "incorrectState", message),
            ServiceError::ReversalExceedsOriginal(_) => GsmaError::new(S::BAD_REQUEST, C::BusinessRule, "overPaymentNotAllowed", message),
            ServiceError::IdempotencyReused => GsmaError::new(
                S::BAD_REQUEST,
                C::Validation,
                "duplicateRequest",
                "this X-CorrelationID was used for another request; send a new one",
            ),
            ServiceError::IdempotencyInProgress => GsmaError {
                retry_after: Some(1),
                ..GsmaError::new(
                    S::SERVICE_UNAVAILABLE,
                    C::ServiceUnavailable,
                    "genericError",
                    "a request with this X-CorrelationID is still being processed",
                )
            },
            ServiceError::MakerChecker => GsmaError::new(S::UNAUTHORIZED, C::Authorisation, "requestingPartyAuthorisationError", message),
            ServiceError::Forbidden(_) | ServiceError::TestModeOnly => {
                GsmaError::new(S::UNAUTHORIZED, C::Authorisation, "clientAuthorisationError", message)
            }
            ServiceError::Token(p) => GsmaError {
                challenge: Some(format!("Bearer realm=\"malipo\", error=\"invalid_token\", error_description=\"{}\"", token_text(*p))),
                ..GsmaError::new(S::UNAUTHORIZED, C::Authorisation, "clientAuthorisationError", token_text(*p))
            },
            ServiceError::OAuth(_) => GsmaError::new(S::UNAUTHORIZED, C::Authorisation, "clientAuthorisationError", message),
            ServiceError::Busy { retry_after } => GsmaError {
                retry_after: Some(*retry_after),
                ..GsmaError::new(S::SERVICE_UNAVAILABLE, C::ServiceUnavailable, "genericError", message)
            },
            ServiceError::Store(StoreError::Unavailable(_) | StoreError::Retry) => GsmaError {
                retry_after: Some(1),
                ..GsmaError::new(S::SERVICE_UNAVAILABLE, C::ServiceUnavailable, "genericError", "the service is unavailable; retry")
            },
            // The details are logged by `error_response`, never sent.
            ServiceError::AnsweredEarlier(_) | ServiceError::Store(_) | ServiceError::Internal(_) => GsmaError {
                description: format!("internal error: {e}"),
                ..GsmaError::new(S::INTERNAL_SERVER_ERROR, C::Internal, "genericError", "internal error")
            },
        }
    }
}

fn token_text(p: TokenProblem) -> &'static str {
    match p {
        TokenProblem::Invalid => "The access token is invalid",
        TokenProblem::Expired => "The access token expired",
        TokenProblem::Revoked => "The access token was revoked",
    }
}

impl ResponseError for GsmaError {
    fn status_code(&self) -> StatusCode {
        self.status
    }

    fn error_response(&self) -> HttpResponse {
        let now = malipo_core::Timestamp::from_offset_datetime(std::time::SystemTime::now().into()).to_rfc3339();
        let mut object = self.object(now);
        if self.status.is_server_error() && self.category == Category::Internal {
            tracing::error!(error = %self.description, "GSMA request failed");
            object.error_description = "internal error";
        }
        let mut res = HttpResponse::build(self.status);
        if let Some(secs) = self.retry_after {
            res.insert_header((header::RETRY_AFTER, secs.to_string()));
        }
        if let Some(challenge) = self.challenge.as_deref().and_then(|c| HeaderValue::from_str(c).ok()) {
            res.insert_header((header::WWW_AUTHENTICATE, challenge));
        }
        res.json(object)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_error_uses_a_status_and_category_the_document_lists() {
        let all = [
            ServiceError::NotFound,
            ServiceError::Validation(vec![FieldError::new("payer_msisdn", "invalid_msisdn", "not a number")]),
            ServiceError::InvalidState("x".into()),
            ServiceError::InsufficientFunds,
            ServiceError::CurrencyMismatch("x".into()),
            ServiceError::LimitExceeded("x".into()),
            ServiceError::WalletLocked,
            ServiceError::MakerChecker,
            ServiceError::ReversalExceedsOriginal("x".into()),
            ServiceError::IdempotencyReused,
            ServiceError::IdempotencyInProgress,
            ServiceError::Forbidden("x".into()),
            ServiceError::TestModeOnly,
            ServiceError::Token(TokenProblem::Expired),
            ServiceError::Busy { retry_after: 3 },
            ServiceError::Store(StoreError::Unavailable("down".into())),
            ServiceError::Internal("bug".into()),
        ];
        for e in all {
            let g = GsmaError::from(e.clone());
            assert!([400, 401, 404, 500, 503].contains(&g.status.as_u16()), "{e:?} → {}", g.status);
            assert!(g.description.len() <= 256);
        }
        let maker = GsmaError::from(ServiceError::MakerChecker);
        assert_eq!((maker.status.as_u16(), maker.category), (401, Category::Authorisation));
        let reused = GsmaError::from(ServiceError::IdempotencyReused);
        assert_eq!((reused.status.as_u16(), reused.code), (400, "duplicateRequest"));
        let field = GsmaError::from(ServiceError::Validation(vec![FieldError::new("payer_msisdn", "invalid_msisdn", "not a number")]));
        assert_eq!(field.parameters, vec![Pair { key: "debitParty".into(), value: "not a number".into() }]);
    }

    #[test]
    fn an_internal_error_never_shows_its_details() {
        let e = GsmaError::from(ServiceError::Internal("connection to 10.0.0.5 refused".into()));
        let body = e.error_response();
        assert_eq!(body.status().as_u16(), 500);
        let bytes = actix_web::body::to_bytes(body.into_body());
        let text = futures_lite(bytes);
        assert!(!text.contains("10.0.0.5"), "{text}");
        assert!(text.contains("\"errorCategory\":\"internal\""), "{text}");
    }

    fn futures_lite<F: std::future::Future<Output = Result<actix_web::web::Bytes, E>>, E>(f: F) -> String {
        let rt = actix_web::rt::System::new();
        rt.block_on(async { f.await.map(|b| String::from_utf8_lossy(&b).into_owned()).unwrap_or_default() })
    }
}
