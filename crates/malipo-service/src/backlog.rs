//! Backpressure: while the background work falls behind, new charges and payouts are refused
//! with "not now" (503 `unavailable` and `Retry-After`) rather than accepted and left to expire.
//!
//! The work that falls behind is the due work the workers claim: charges to decide, complete or
//! expire, and payouts to pay. Each kind's backlog is the age of its item that has waited longest
//! since it came due. A monitor (every instance runs one) measures both a few times a second with
//! one index read per table ([`Backlog::measure`]); intake is refused once an age passes the
//! configured bound, and admitted again once the workers have brought it under half the bound,
//! so that the gate does not flap. The bound sits well under the charge time-to-live: a charge
//! whose prompt is due to expire is due work too, so a backlog older than the time-to-live is
//! what expires charges of customers who would have approved.
//!
//! The age alone closes the gate late: by the time the oldest charge has waited the bound, the
//! charges admitted behind it may take far longer to drain (at full speed intake can admit charges
//! many times faster than the workers complete them, so the oldest wait would go on growing long
//! after the gate closed). So the monitor also counts the charges due now or within the bound, and
//! measures how fast they drain: from how fast this instance's workers claim charges while charges
//! are due (their capacity), and, once the gate has been closed, from how fast the count fell while
//! nothing new was admitted (the whole database's drain, whatever the number of instances). The
//! charge gate closes as soon as the count would take longer than the bound to drain at that rate
//! (the fall while refusing once measured: it is what a closed gate waits for; the workers' pace
//! before), and opens once both that prediction and the oldest wait are back under half the bound.
//!
//! Between two measurements (a quarter of a second) an open gate would admit whatever arrives: at
//! full speed a quarter of a second of intake can be seconds of the workers' work, enough to carry
//! the oldest wait past the bound after every reopening. So each instance also counts the charges
//! it admits after a measurement, and refuses the one that would make the measured count plus those
//! take longer than the bound: the gate closes at the charge that crosses it, not at the next
//! measurement. (Other instances' admissions are seen at the next measurement.) Before the workers'
//! pace was ever measured (an instance that has just started), a rate is assumed
//! ([`crate::drain::ASSUMED_RATE`]), or their pace while keeping up if higher.
//!
//! The two kinds share the workers, but only charges expire. So a charge backlog refuses both
//! new charges and new payouts (more payouts would take the workers the charges need), while a
//! payout backlog (a large approved batch, whose payouts queue on their one payout account)
//! refuses new payouts only: one organisation's batch does not turn every merchant's customers
//! away. A charge backlog that the payouts cause closes the charge gate by itself.
//!
//! The measurement is of the shared database, so every instance refuses together, whichever
//! instance's workers are short.

use std::sync::atomic::{AtomicBool, Ordering};

use malipo_core::Timestamp;

use crate::core::Core;
use crate::error::ServiceError;
use crate::idempotency::{Done, Idem};
use crate::views::{Reporting, View};

/// What one measurement found.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BacklogReading {
    /// Seconds the oldest due charge has waited (0 when none is due).
    pub charges_seconds: f64,
    /// Seconds the oldest due payout has waited (0 when none is due).
    pub payouts_seconds: f64,
    /// Whether new charges (and with them new payouts) are refused from now on.
    pub refusing: bool,
    /// Whether new payouts are refused from now on (for either backlog).
    pub refusing_payouts: bool,
    /// Charges due now or within the bound (counted up to [`COUNT_CAP`]).
    pub charges_due: u64,
    /// Seconds the due charges would take to drain at the last measured rate (before any was
    /// measured, the assumed one; 0 when none is due).
    pub predicted_seconds: f64,
}

/// How long the oldest due charge must have waited for the workers to count as behind (their
/// idle pause is 100 ms): while they keep up, the charges they claim are the arrivals, not their
/// pace, and a pace measured then would close the gate on a burst they could drain at once.
const BEHIND_MICROS: i64 = 500_000;

/// Due charges counted at most (the prediction is then at least this many over the rate).
pub const COUNT_CAP: usize = 100_000;

/// The kinds of new work the gate admits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Intake {
    /// A charge or a cash-out.
    Charge,
    /// A payout or the approval of a batch of them.
    Payout,
}

/// Measuring the backlog and admitting new work.
pub struct Backlog<'a> {
    core: &'a Core,
}

/// Seconds as whole microseconds (saturating).
fn micros(seconds: f64) -> i64 {
    if seconds >= i64::MAX as f64 / 1e6 {
        i64::MAX
    } else {
        (seconds * 1e6) as i64
    }
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
        let gate = &self.core.backlog;
        let bound_seconds = self.core.config.max_backlog_seconds;
        let horizon = now.plus_seconds(bound_seconds.max(0));
        // Reset before the read: a charge admitted from here on is counted again until the next
        // measurement, even if this read sees it (erring towards refusing); one admitted before
        // whose creation commits after the read is counted by neither (at most a creation
        // group's worth).
        gate.admitted.store(0, Ordering::Relaxed);
        let (charge, payout, due) = Reporting::read(self.core.store(), |tx| {
            let due = if bound_seconds > 0 { tx.count_due_charges(horizon, COUNT_CAP)? } else { 0 };
            Ok((tx.oldest_due_charge(now)?, tx.oldest_due_payout(now)?, due))
        })?;
        let (charges, payouts) = (waited(now, charge), waited(now, payout));
        gate.payouts_micros.store(payouts, Ordering::Relaxed);
        let mut drain = gate.drain.lock().map_err(|_| ServiceError::Internal("backlog drain lock poisoned".into()))?;
        // Refusing since the last measurement: it closed the gate, or a charge admitted since did
        // (which closes it without measuring). The drain while refusing is measured from a
        // measurement that found the gate closed, so a gate an admission closed starts a window now.
        let was_refusing = gate.refusing.load(Ordering::Relaxed);
        let measured_refusing = drain.refusing_then && was_refusing;
        // The workers are behind when the oldest due charge has waited longer than a pass of
        // theirs takes: only then do their claims measure their pace rather than the arrivals.
        let behind = charges >= BEHIND_MICROS;
        drain.observe(measured_refusing, now, due, behind, gate.claimed.load(Ordering::Relaxed));
        let predicted = drain.predicted(due);
        gate.due.store(due, Ordering::Relaxed);
        gate.rate_bits.store(drain.rate().to_bits(), Ordering::Relaxed);
        // The charges' pressure: the oldest wait, or the predicted one if that is longer.
        let pressure = charges.max(micros(predicted));
        gate.charges_micros.store(pressure, Ordering::Relaxed);
        let refusing = self.crossed(&gate.refusing, pressure);
        drain.refusing_then = refusing;
        if refusing && !measured_refusing {
            // From now on nothing new comes in: the drain is measured from here.
            drain.start(now, due);
        }
        drop(drain);
        let payouts_behind = self.crossed(&gate.refusing_payouts, payouts);
        if gate.refusing.swap(refusing, Ordering::Relaxed) != refusing {
            tracing::warn!(
                backlog_seconds = charges as f64 / 1e6,
                predicted_seconds = predicted,
                charges_due = due,
                refusing,
                "charge backlog crossed its bound"
            );
        }
        if gate.refusing_payouts.swap(payouts_behind, Ordering::Relaxed) != payouts_behind {
            tracing::warn!(backlog_seconds = payouts as f64 / 1e6, refusing = payouts_behind, "payout backlog crossed its bound");
        }
        Ok(BacklogReading {
            charges_seconds: charges as f64 / 1e6,
            payouts_seconds: payouts as f64 / 1e6,
            refusing,
            refusing_payouts: refusing || payouts_behind,
            charges_due: due,
            predicted_seconds: predicted,
        })
    }

    /// Whether a lane whose oldest item has waited `age` microseconds refuses: over the bound,
    /// yes; at half of it or under, no; in between, as it was (`was`).
    fn crossed(&self, was: &AtomicBool, age: i64) -> bool {
        let bound = self.core.config.max_backlog_seconds.saturating_mul(1_000_000);
        if bound <= 0 {
            false
        } else if age > bound {
            true
        } else if age <= bound / 2 {
            false
        } else {
            was.load(Ordering::Relaxed)
        }
    }

    /// Admits new due work, or refuses it while its backlog (for a payout, either backlog) is
    /// over its bound, or when a new charge would take it over (the due charges of the last
    /// measurement and those admitted since, at the measured rate). Counts nothing: the check
    /// made before a request costs anything ([`Backlog::take`] admits and counts).
    ///
    /// # Errors
    /// [`ServiceError::Busy`] with the seconds to wait.
    pub fn admit(&self, intake: Intake) -> Result<(), ServiceError> {
        let gate = &self.core.backlog;
        let mut age = None;
        if gate.refusing.load(Ordering::Relaxed) {
            age = Some(gate.charges_micros.load(Ordering::Relaxed));
        } else if intake == Intake::Charge {
            age = self.overflowing();
        }
        if intake == Intake::Payout && gate.refusing_payouts.load(Ordering::Relaxed) {
            age = age.max(Some(gate.payouts_micros.load(Ordering::Relaxed)));
        }
        let Some(age) = age else { return Ok(()) };
        // Suggest waiting for about the excess over half the bound (where intake resumes),
        // between 1 and 30 seconds.
        let half = self.core.config.max_backlog_seconds.saturating_mul(500_000);
        let excess = age.saturating_sub(half).max(0) / 1_000_000;
        Err(ServiceError::Busy { retry_after: excess.clamp(1, 30).unsigned_abs() })
    }

    /// [`Backlog::admit`] for new work under `idem`, counting an admitted charge until the next
    /// measurement: what the service does right before it creates due work. A request the gate
    /// refuses is first looked up by its key: the stored answer of a request already settled is
    /// returned whatever the load (it is no new work, and the one a client retries most just
    /// when the service is catching up), so only a key without an answer hears "not now".
    ///
    /// # Errors
    /// As [`Backlog::admit`], or the stored record's ([`ServiceError::IdempotencyReused`],
    /// [`ServiceError::IdempotencyInProgress`]).
    pub(crate) fn take<T: serde::de::DeserializeOwned>(&self, intake: Intake, idem: &Idem) -> Result<Option<Done<T>>, ServiceError> {
        if let Err(refused) = self.admit(intake) {
            return self.core.stored_outcome(idem)?.map(Some).ok_or(refused);
        }
        if intake == Intake::Charge {
            self.core.backlog.admitted.fetch_add(1, Ordering::Relaxed);
        }
        Ok(None)
    }

    /// The predicted wait in microseconds, when one more charge would take the charges due at
    /// the last measurement and those admitted since past the bound: the gate is then closed
    /// until a measurement opens it (none before the first measurement).
    fn overflowing(&self) -> Option<i64> {
        let gate = &self.core.backlog;
        let bound = self.core.config.max_backlog_seconds.saturating_mul(1_000_000);
        let rate = f64::from_bits(gate.rate_bits.load(Ordering::Relaxed));
        if bound <= 0 || rate <= 0.0 {
            return None;
        }
        let due = gate.due.load(Ordering::Relaxed).saturating_add(gate.admitted.load(Ordering::Relaxed)).saturating_add(1);
        let wait = micros(due as f64 / rate);
        if wait <= bound {
            return None;
        }
        gate.charges_micros.fetch_max(wait, Ordering::Relaxed);
        if !gate.refusing.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                predicted_seconds = wait as f64 / 1e6,
                charges_due = due,
                "charges admitted since the last measurement crossed the backlog bound"
            );
        }
        Some(wait)
    }
}
