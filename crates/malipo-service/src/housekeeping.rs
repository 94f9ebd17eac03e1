//! Housekeeping: removing what is past its retention (idempotency keys, events and callbacks, USSD sessions,
//! console sessions and sign-in failure counts).

use crate::core::Core;
use crate::error::ServiceError;
use crate::ussd::SESSION_TIMEOUT_SECONDS;
use crate::views::{Delivering, OnKeys, OnSessions, OnUssd, View};

/// Events are kept at least this long.
pub const EVENT_RETENTION_SECONDS: i64 = 90 * 24 * 3600;
/// Idempotency keys are kept at least 24 hours; purged after 48.
pub const KEY_RETENTION_SECONDS: i64 = 48 * 3600;

/// Housekeeping.
pub struct Housekeeping<'a> {
    core: &'a Core,
}

impl<'a> Housekeeping<'a> {
    pub(crate) fn new(core: &'a Core) -> Self {
        Housekeeping { core }
    }

    /// Deletes events older than the retention period with their deliveries and attempts, and
    /// the settled callbacks as old; returns how many events.
    ///
    /// # Errors
    /// Storage failures.
    pub fn purge_events(&self) -> Result<u64, ServiceError> {
        let before = self.core.now().plus_seconds(-EVENT_RETENTION_SECONDS);
        Delivering::write(self.core.store(), |tx| {
            let events = tx.purge_events(before)?;
            tx.purge_callbacks(before)?;
            Ok(events)
        })
    }

    /// Deletes idempotency keys older than their retention.
    ///
    /// # Errors
    /// Storage failures.
    pub fn purge_keys(&self) -> Result<u64, ServiceError> {
        let before = self.core.now().plus_seconds(-KEY_RETENTION_SECONDS);
        OnKeys::write(self.core.store(), |tx| Ok(tx.purge_keys(before)?))
    }

    /// Deletes console sessions that have ended (expired, or idle for longer than they may be)
    /// and sign-in failure counts that no longer count; returns how many of each.
    ///
    /// # Errors
    /// Storage failures.
    pub fn purge_console(&self) -> Result<(usize, usize), ServiceError> {
        let now = self.core.now();
        let idle_before = now.plus_seconds(-malipo_auth::session::IDLE_SECONDS);
        let window_before = now.plus_seconds(-malipo_auth::session::FAILURE_WINDOW_SECONDS);
        OnSessions::write(self.core.store(), |tx| Ok((tx.purge_sessions(now, idle_before)?, tx.purge_failures(window_before, now)?)))
    }

    /// Deletes sessions idle for longer than they live (their answers are no longer replayed).
    ///
    /// # Errors
    /// Storage failures.
    pub fn purge_ussd_sessions(&self) -> Result<u64, ServiceError> {
        let before = self.core.now().plus_seconds(-SESSION_TIMEOUT_SECONDS);
        OnUssd::write(self.core.store(), |tx| Ok(tx.purge_ussd_sessions(before)?))
    }
}
