//! What goes wrong, as pages: a problem the API would answer 4xx shows the same problem's
//! message; a failure shows an error page with the request id and nothing internal.

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, ResponseError};
use malipo_service::{ServiceError, StoreError};

use crate::chrome::{current_request_id, error_page};

/// A console request that did not end in its page.
#[derive(Debug, thiserror::Error)]
pub enum ConsoleError {
    /// No live session: to the sign-in page, then back to `next`.
    #[error("sign in first")]
    SignIn {
        /// Where to return after signing in.
        next: String,
    },
    /// The person must turn on two-factor authentication before anything else.
    #[error("turn on two-factor authentication first")]
    Enrol,
    /// Their role may not do this.
    #[error("{0}")]
    Forbidden(String),
    /// A state-changing request without its CSRF token, or from another origin.
    #[error("this form did not come from this console, or it expired")]
    Csrf,
    /// No such page or object (or another organisation's, or the other mode's).
    #[error("not found")]
    NotFound,
    /// A form or query that cannot be read at all.
    #[error("{0}")]
    BadForm(String),
    /// The database or the background work cannot take this now.
    #[error("unavailable")]
    Unavailable(u64),
    /// A problem the API would answer with a 4xx, shown with its message.
    #[error("{0}")]
    Service(ServiceError),
    /// A failure (logged, never shown).
    #[error("internal: {0}")]
    Internal(String),
}

impl From<ServiceError> for ConsoleError {
    fn from(e: ServiceError) -> Self {
        match e {
            ServiceError::Forbidden(m) => ConsoleError::Forbidden(m),
            ServiceError::NotFound => ConsoleError::NotFound,
            ServiceError::Busy { retry_after } => ConsoleError::Unavailable(retry_after),
            ServiceError::Store(StoreError::Unavailable(_) | StoreError::Retry) => ConsoleError::Unavailable(1),
            ServiceError::Store(e) => ConsoleError::Internal(e.to_string()),
            ServiceError::Internal(m) => ConsoleError::Internal(m),
            other => ConsoleError::Service(other),
        }
    }
}

/// A service problem's title and message, as the API words them (the message as a sentence).
pub fn problem_text(e: &ServiceError) -> (&'static str, String) {
    let message = e.message();
    let mut chars = message.chars();
    let detail = chars.next().map(|c| c.to_uppercase().chain(chars).collect::<String>()).unwrap_or_default();
    (title(e), if detail.ends_with('.') { detail } else { format!("{detail}.") })
}

/// The title of a problem's page: the API's problem title.
fn title(e: &ServiceError) -> &'static str {
    match e {
        ServiceError::NotFound => "Not found",
        ServiceError::Validation(_) => "Request validation failed",
        ServiceError::InvalidState(_) => "Invalid state",
        ServiceError::InsufficientFunds => "Insufficient funds",
        ServiceError::Store(StoreError::Ledger(_)) if e.is_insufficient_funds() => "Insufficient funds",
        ServiceError::CurrencyMismatch(_) => "Currency mismatch",
        ServiceError::LimitExceeded(_) => "Limit exceeded",
        ServiceError::WalletLocked => "Wallet locked",
        ServiceError::MakerChecker => "Maker-checker violation",
        ServiceError::ReversalExceedsOriginal(_) => "Reversal exceeds the original",
        ServiceError::IdempotencyReused => "Idempotency key reused",
        ServiceError::IdempotencyInProgress | ServiceError::AnsweredEarlier(_) => "Request in progress",
        ServiceError::Forbidden(_) => "Forbidden",
        ServiceError::TestModeOnly => "Test mode only",
        ServiceError::Token(_) => "Invalid token",
        ServiceError::OAuth(_) => "Token request refused",
        ServiceError::Busy { .. } | ServiceError::Store(StoreError::Unavailable(_) | StoreError::Retry) => "Service unavailable",
        ServiceError::Store(_) | ServiceError::Internal(_) => "Internal error",
    }
}

impl ResponseError for ConsoleError {
    fn status_code(&self) -> StatusCode {
        match self {
            ConsoleError::SignIn { .. } | ConsoleError::Enrol => StatusCode::SEE_OTHER,
            ConsoleError::Forbidden(_) | ConsoleError::Csrf => StatusCode::FORBIDDEN,
            ConsoleError::NotFound => StatusCode::NOT_FOUND,
            ConsoleError::BadForm(_) => StatusCode::BAD_REQUEST,
            ConsoleError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            ConsoleError::Service(ServiceError::InvalidState(_) | ServiceError::IdempotencyInProgress) => StatusCode::CONFLICT,
            ConsoleError::Service(ServiceError::MakerChecker | ServiceError::TestModeOnly) => StatusCode::FORBIDDEN,
            ConsoleError::Service(_) => StatusCode::UNPROCESSABLE_ENTITY,
            ConsoleError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn error_response(&self) -> HttpResponse {
        let request_id = current_request_id();
        let (title, message) = match self {
            ConsoleError::SignIn { next } => {
                let to = format!("/console/login?next={}", crate::chrome::url_encode(next));
                return HttpResponse::SeeOther().insert_header(("Location", to)).finish();
            }
            ConsoleError::Enrol => return HttpResponse::SeeOther().insert_header(("Location", "/console/enrol")).finish(),
            ConsoleError::Forbidden(m) => ("Not allowed", format!("Your role may not do this: {m}.")),
            ConsoleError::Csrf => {
                ("Form refused", "This form did not come from this console, or it expired. Go back, reload the page and try again.".into())
            }
            ConsoleError::NotFound => ("Not found", "There is no such page or object here.".into()),
            ConsoleError::BadForm(m) => ("Bad request", format!("The request could not be read: {m}.")),
            ConsoleError::Unavailable(_) => ("Busy", "The service cannot take this just now. Try again in a moment.".into()),
            ConsoleError::Service(e) => problem_text(e),
            ConsoleError::Internal(m) => {
                tracing::error!(request_id = %request_id, error = %m, "console request failed");
                ("Something went wrong", "The error has been logged. Quote the request id below if you contact support.".into())
            }
        };
        let mut response = error_page(self.status_code(), title, message);
        if let ConsoleError::Unavailable(s) = self {
            if let Ok(v) = actix_web::http::header::HeaderValue::from_str(&s.max(&1).to_string()) {
                response.headers_mut().insert(actix_web::http::header::RETRY_AFTER, v);
            }
        }
        response
    }
}
