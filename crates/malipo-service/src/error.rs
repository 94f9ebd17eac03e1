//! The errors a use case can end with. Each front end words them in its own format (the API's
//! problem codes are the HTTP adapter's).

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
    /// The key's request was settled by a version before snapshots, which kept its front end's
    /// own answer: handed back to that front end as it was.
    #[error("this request was answered before, by an earlier version")]
    AnsweredEarlier(Earlier),
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

/// An answer an earlier version's front end kept with a key (opaque here: only that front end
/// reads it).
#[derive(Clone, PartialEq, Eq)]
pub struct Earlier(pub Vec<u8>);

impl std::fmt::Debug for Earlier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Earlier({} bytes)", self.0.len())
    }
}

impl ServiceError {
    /// What went wrong, for whoever made the request, whatever the front end (never an
    /// internal detail): a front end shows it beside its own code or title.
    pub fn message(&self) -> String {
        match self {
            ServiceError::NotFound => "no such object".into(),
            ServiceError::Validation(f) => f.iter().map(|f| f.message.clone()).collect::<Vec<_>>().join("; "),
            ServiceError::TestModeOnly => "this endpoint is only available with test credentials".into(),
            ServiceError::OAuth(OAuthProblem::InvalidClient) => "client authentication failed".into(),
            ServiceError::OAuth(OAuthProblem::InvalidScope(m)) => m.clone(),
            ServiceError::Store(StoreError::Unavailable(_) | StoreError::Retry) => "the database is unavailable; retry shortly".into(),
            ServiceError::Store(StoreError::Ledger(_)) if self.is_insufficient_funds() => "insufficient funds".into(),
            ServiceError::Store(_) | ServiceError::Internal(_) => "an internal error occurred; it has been logged".into(),
            other => other.to_string(),
        }
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
