//! Backpressure: while the background work falls behind, new charges and payouts are refused
//! with "not now" (503 `unavailable` and `Retry-After`) rather than accepted and left to expire.
//!
//! The work that falls behind is the due work the workers claim: charges to decide, complete or
//! expire, and payouts to pay. Its backlog is the age of the item that has waited longest since
//! it came due. A monitor (every instance runs one) measures it a few times a second with one
//! index read per table ([`Backlog::measure`]); intake is refused once the age passes the
//! configured bound, and admitted again once the workers have brought it under half the bound,
//! so that the gate does not flap. The bound sits well under the charge time-to-live: a charge
//! whose prompt is due to expire is due work too, so a backlog older than the time-to-live is
//! what expires charges of customers who would have approved.
//!
//! The measurement is of the shared database, so every instance refuses together, whichever
//! instance's workers are short.

use std::sync::atomic::Ordering;

use malipo_core::Timestamp;

use crate::core::Core;
use crate::error::ServiceError;
use crate::ports::read;

/// What one measurement found.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BacklogReading {
    /// Seconds the oldest due charge has waited (0 when none is due).
    pub charges_seconds: f64,
    /// Seconds the oldest due payout has waited (0 when none is due).
    pub payouts_seconds: f64,
    /// Whether new charges and payouts are refused from now on.
    pub refusing: bool,
}

/// Measuring the backlog and admitting new work.
pub struct Backlog<'a> {
    core: &'a Core,
}

fn waited(now: Timestamp, due: Option<Timestamp>) -> i64 {
    due.map_or(0, |d| now.as_micros().saturating_sub(d.as_micros()).max(0))
}

impl<'a> Backlog<'a> {
    pub(crate) fn new(core: &'a Core) -> Self {
        Backlog { core }
    }

    /// Measures the backlog and opens or closes the gate accordingly.
    ///
    /// # Errors
    /// Storage failures (the gate keeps its last state).
    pub fn measure(&self) -> Result<BacklogReading, ServiceError> {
        let now = self.core.now();
        let (charge, payout) = read(self.core.store(), |tx| Ok((tx.oldest_due_charge(now)?, tx.oldest_due_payout(now)?)))?;
        let (charges, payouts) = (waited(now, charge), waited(now, payout));
        let age = charges.max(payouts);
        let gate = &self.core.backlog;
        gate.age_micros.store(age, Ordering::Relaxed);
        let bound = self.core.config.max_backlog_seconds.saturating_mul(1_000_000);
        let refusing = if bound <= 0 {
            false
        } else if age > bound {
            true
        } else if age <= bound / 2 {
            false
        } else {
            gate.refusing.load(Ordering::Relaxed)
        };
        if gate.refusing.swap(refusing, Ordering::Relaxed) != refusing {
            tracing::warn!(backlog_seconds = age as f64 / 1e6, refusing, "background work backlog crossed its bound");
        }
        Ok(BacklogReading { charges_seconds: charges as f64 / 1e6, payouts_seconds: payouts as f64 / 1e6, refusing })
    }

    /// Admits new due work (a charge or a payout), or refuses it while the backlog is over its
    /// bound.
    ///
    /// # Errors
    /// [`ServiceError::Busy`] with the seconds to wait.
    pub fn admit(&self) -> Result<(), ServiceError> {
        let gate = &self.core.backlog;
        if !gate.refusing.load(Ordering::Relaxed) {
            return Ok(());
        }
        // Suggest waiting for about the excess over half the bound (where intake resumes),
        // between 1 and 30 seconds.
        let age = gate.age_micros.load(Ordering::Relaxed);
        let half = self.core.config.max_backlog_seconds.saturating_mul(500_000);
        let excess = age.saturating_sub(half).max(0) / 1_000_000;
        Err(ServiceError::Busy { retry_after: excess.clamp(1, 30).unsigned_abs() })
    }
}
