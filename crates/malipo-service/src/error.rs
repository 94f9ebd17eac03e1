//! The errors a use case can end with. The HTTP adapter maps each to the one problem format.

use malipo_core::MoneyError;
use malipo_ledger::LedgerError;

/// What a storage adapter can report.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum StoreError {
    /// A unique constraint refused the write.
    #[error("duplicate")]
    Duplicate,
    /// A ledger rule refused the write (the database's constraints say the same).
    #[error(transparent)]
    Ledger(#[from] LedgerError),
    /// A transient conflict (serialization failure, deadlock, busy database): [`Store::run`]
    /// retries the whole closure a bounded number of times.
    #[error("transient conflict")]
    Retry,
    /// The database cannot be reached.
    #[error("database unavailable: {0}")]
    Unavailable(String),
    /// Anything else (never shown to API callers).
    #[error("storage failure: {0}")]
    Other(String),
}

/// One field's problem, reported in `errors[]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldError {
    /// The field, e.g. `amount` or `items[3].amount`.
    pub field: String,
    /// A stable code: `invalid_msisdn`, `invalid_amount`, `missing_field`, `unknown_field`, `too_long`, ….
    pub code: &'static str,
    /// Human-readable.
    pub message: String,
}

impl FieldError {
    /// A field error.
    pub fn new(field: impl Into<String>, code: &'static str, message: impl Into<String>) -> Self {
        FieldError { field: field.into(), code, message: message.into() }
    }
}

/// Why a bearer token was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TokenProblem {
    /// Unknown or malformed.
    Invalid,
    /// Past its lifetime.
    Expired,
    /// Revoked (or its credential was).
    Revoked,
}

/// Why a token request was refused (RFC 6749 §5.2).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OAuthProblem {
    /// Unknown client or wrong secret (indistinguishable).
    InvalidClient,
    /// More scopes than the credential has, or unknown ones.
    InvalidScope(String),
}

/// The outcome of a use case that did not succeed.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum ServiceError {
    /// Absent, or another organisation's or mode's.
    #[error("not found")]
    NotFound,
    /// Field validation failed.
    #[error("validation failed")]
    Validation(Vec<FieldError>),
    /// The object's state forbids the operation.
    #[error("{0}")]
    InvalidState(String),
    /// The paying account is short.
    #[error("insufficient funds")]
    InsufficientFunds,
    /// The currency differs from the account's.
    #[error("{0}")]
    CurrencyMismatch(String),
    /// A KYC tier or daily limit would be exceeded.
    #[error("{0}")]
    LimitExceeded(String),
    /// The wallet is locked.
    #[error("wallet locked")]
    WalletLocked,
    /// The checker of a bulk payout is its maker.
    #[error("the credential that created a bulk payout cannot approve or reject it")]
    MakerChecker,
    /// Reversals would exceed the original's amount.
    #[error("{0}")]
    ReversalExceedsOriginal(String),
    /// The key was used for a different request.
    #[error("idempotency key reused with a different request")]
    IdempotencyReused,
    /// The key's first request is still running.
    #[error("a request with this idempotency key is still being processed")]
    IdempotencyInProgress,
    /// The person's role may not do this (the console checks first; the use case again).
    #[error("{0}")]
    Forbidden(String),
    /// A sandbox helper called with a live credential.
    #[error("only available in test mode")]
    TestModeOnly,
    /// Bearer token refused.
    #[error("invalid token")]
    Token(TokenProblem),
    /// Token request refused.
    #[error("token request refused")]
    OAuth(OAuthProblem),
    /// The background work is behind: new charges and payouts wait until it catches up.
    #[error("the service is catching up with its due work; retry after {retry_after} s")]
    Busy {
        /// Seconds to wait.
        retry_after: u64,
    },
    /// Storage failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A bug or broken invariant (details are logged, never shown).
    #[error("internal error: {0}")]
    Internal(String),
}

/// How a refusal reads to whoever made the request, whatever the front end: its stable code
/// (the contract's error codes), a short title, and what went wrong. The API shows it as a
/// problem document (with an HTTP status chosen by the code), the console as a page's message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProblemText {
    /// The stable code, e.g. `insufficient_funds`.
    pub code: &'static str,
    /// A short summary of the problem's kind.
    pub title: &'static str,
    /// What went wrong here (never an internal detail).
    pub detail: String,
}

impl ServiceError {
    /// The refusal's code, title and detail.
    pub fn problem_text(&self) -> ProblemText {
        let d = self.to_string();
        let (code, title, detail) = match self {
            ServiceError::NotFound => ("not_found", "Not found", "no such object".into()),
            ServiceError::Validation(f) => {
                ("validation_failed", "Request validation failed", f.iter().map(|f| f.message.clone()).collect::<Vec<_>>().join("; "))
            }
            ServiceError::InvalidState(_) => ("invalid_state", "Invalid state", d),
            ServiceError::InsufficientFunds => ("insufficient_funds", "Insufficient funds", d),
            ServiceError::CurrencyMismatch(_) => ("currency_mismatch", "Currency mismatch", d),
            ServiceError::LimitExceeded(_) => ("limit_exceeded", "Limit exceeded", d),
            ServiceError::WalletLocked => ("wallet_locked", "Wallet locked", d),
            ServiceError::MakerChecker => ("maker_checker_violation", "Maker-checker violation", d),
            ServiceError::ReversalExceedsOriginal(_) => ("reversal_exceeds_original", "Reversal exceeds the original", d),
            ServiceError::IdempotencyReused => ("idempotency_key_reused", "Idempotency key reused", d),
            ServiceError::IdempotencyInProgress => ("idempotency_in_progress", "Request in progress", d),
            ServiceError::Forbidden(_) => ("insufficient_scope", "Forbidden", d),
            ServiceError::TestModeOnly => {
                ("test_mode_only", "Test mode only", "this endpoint is only available with test credentials".into())
            }
            ServiceError::Token(_) => ("invalid_token", "Invalid token", d),
            ServiceError::OAuth(OAuthProblem::InvalidClient) => {
                ("invalid_client", "Token request refused", "client authentication failed".into())
            }
            ServiceError::OAuth(OAuthProblem::InvalidScope(m)) => ("invalid_scope", "Token request refused", m.clone()),
            ServiceError::Store(StoreError::Unavailable(_) | StoreError::Retry) => {
                ("unavailable", "Service unavailable", "the database is unavailable; retry shortly".into())
            }
            ServiceError::Busy { .. } => ("unavailable", "Service unavailable", d),
            ServiceError::Store(StoreError::Ledger(_)) if self.is_insufficient_funds() => {
                ("insufficient_funds", "Insufficient funds", "insufficient funds".into())
            }
            ServiceError::Store(_) | ServiceError::Internal(_) => {
                ("internal_error", "Internal error", "an internal error occurred; it has been logged".into())
            }
        };
        ProblemText { code, title, detail }
    }
}

impl From<MoneyError> for ServiceError {
    /// Amounts are bounded where they enter (at most 10^15 minor units), so an overflow of their
    /// arithmetic is a bug, never a caller's mistake.
    fn from(e: MoneyError) -> Self {
        ServiceError::Internal(format!("amount arithmetic: {e}"))
    }
}

impl From<LedgerError> for ServiceError {
    fn from(e: LedgerError) -> Self {
        match e {
            LedgerError::InsufficientFunds(_) => ServiceError::InsufficientFunds,
            other => ServiceError::Internal(other.to_string()),
        }
    }
}

impl ServiceError {
    /// A single-field validation error.
    pub fn field(field: impl Into<String>, code: &'static str, message: impl Into<String>) -> Self {
        ServiceError::Validation(vec![FieldError::new(field, code, message)])
    }

    /// Whether the store reported insufficient funds.
    pub fn is_insufficient_funds(&self) -> bool {
        matches!(self, ServiceError::InsufficientFunds | ServiceError::Store(StoreError::Ledger(LedgerError::InsufficientFunds(_))))
    }
}
