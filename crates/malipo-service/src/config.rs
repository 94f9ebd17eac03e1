//! Tunables of the use cases and of webhook delivery.

use std::time::Duration;

use malipo_core::Mode;
use malipo_webhooks::{RetrySchedule, UrlPolicy};

/// Tunables of the use cases.
#[derive(Clone, Debug)]
pub struct ServiceConfig {
    /// Pending prompts expire after this many seconds.
    pub charge_ttl_seconds: i64,
    /// The sandbox approves test charges after this many milliseconds.
    pub sandbox_approval_delay_ms: i64,
    /// A worker's claim on a charge or payout lapses after this many seconds (crash recovery).
    pub worker_lease_seconds: i64,
    /// Payouts the worker settles in one transaction (at least 1). More amortise each commit;
    /// fewer hold the shared rows (the payout account, the ledger's chain head; on SQLite the
    /// one writer lock) for less time at once.
    pub payout_settle_chunk: usize,
    /// Due charges the worker advances in one transaction, with a savepoint each only when one of
    /// them fails (1: each in transactions of its own). More amortise each commit; fewer hold the rows every charge
    /// shares (a merchant's collection account, the sandbox's funding) for less time at once.
    pub charge_settle_chunk: usize,
    /// New charges and payouts are refused while the oldest due item has waited longer than
    /// this many seconds, until it is back under half of it (0: never refused). See
    /// [`crate::backlog`].
    pub max_backlog_seconds: i64,
}

impl Default for ServiceConfig {
    fn default() -> Self {
        ServiceConfig {
            charge_ttl_seconds: 90,
            sandbox_approval_delay_ms: 2000,
            worker_lease_seconds: 30,
            payout_settle_chunk: 1,
            charge_settle_chunk: 1,
            max_backlog_seconds: 10,
        }
    }
}

/// Tunables of webhook delivery.
#[derive(Clone, Debug)]
pub struct WebhookConfig {
    /// Waits between attempts.
    pub schedule: RetrySchedule,
    /// A delivery succeeds on a 2xx within this time.
    pub timeout: Duration,
    /// Let live endpoints use private addresses.
    pub allow_private: bool,
}

impl Default for WebhookConfig {
    fn default() -> Self {
        WebhookConfig { schedule: RetrySchedule::default(), timeout: Duration::from_secs(15), allow_private: false }
    }
}

impl WebhookConfig {
    /// The URL policy of a mode.
    pub fn policy(&self, mode: Mode) -> UrlPolicy {
        match mode {
            Mode::Live => UrlPolicy::live(self.allow_private),
            Mode::Test => UrlPolicy::test(self.allow_private),
        }
    }
}
