//! How fast due charges drain, as the backlog monitor ([`crate::backlog`]) measures it.

use malipo_core::Timestamp;

/// Seconds over which one drain rate is measured.
const DRAIN_WINDOW_SECONDS: f64 = 1.0;

/// How fast due charges drain, measured two ways; the prediction takes the faster.
#[derive(Debug, Default)]
pub(crate) struct Drain {
    /// While charge intake is refused: the window's start and the due count then. Nothing new is
    /// admitted, so the count falls only by the workers' work: the whole database's drain,
    /// whatever the number of instances.
    refused: Option<(Timestamp, u64)>,
    /// This instance's workers: the window's start, the charges they had claimed by then, and
    /// whether they were behind then.
    local: Option<(Timestamp, u64, bool)>,
    /// Charges drained per second while refusing (each window averaged with the one before).
    global_rate: Option<f64>,
    /// Charges this instance's workers claimed per second over windows in which they were behind
    /// at both ends (their capacity rather than the intake; with several instances, a share of
    /// the whole, so a prediction from it errs towards refusing; an instance without workers has
    /// none).
    local_rate: Option<f64>,
}

fn seconds_between(start: Timestamp, now: Timestamp) -> f64 {
    now.as_micros().saturating_sub(start.as_micros()) as f64 / 1e6
}

/// A new window's rate averaged with the estimate before. A window in which nothing drained
/// says nothing about the pace (an instance without workers, a count that other due work came
/// into): it is left out, and stalled workers are caught by the oldest wait instead.
fn averaged(before: Option<f64>, rate: f64) -> Option<f64> {
    if rate > 0.0 {
        Some(before.map_or(rate, |b| (b + rate) / 2.0))
    } else {
        before
    }
}

impl Drain {
    /// Takes a measurement: `refusing` as the gate was, `due` the due count, `busy` whether the
    /// workers are behind now, `claimed` this instance's workers' running count of claimed charges.
    /// Windows of at least [`DRAIN_WINDOW_SECONDS`] give rates.
    pub(crate) fn observe(&mut self, refusing: bool, now: Timestamp, due: u64, busy: bool, claimed: u64) {
        match self.refused {
            Some((start, due_then)) if refusing => {
                let seconds = seconds_between(start, now);
                if seconds >= DRAIN_WINDOW_SECONDS {
                    self.global_rate = averaged(self.global_rate, due_then.saturating_sub(due) as f64 / seconds);
                    self.refused = Some((now, due));
                }
            }
            None if refusing => self.refused = Some((now, due)),
            // Admitting: new charges would hide the drain.
            _ => self.refused = None,
        }
        match self.local {
            Some((start, claimed_then, busy_then)) => {
                let seconds = seconds_between(start, now);
                if seconds >= DRAIN_WINDOW_SECONDS {
                    if busy_then && busy {
                        self.local_rate = averaged(self.local_rate, claimed.saturating_sub(claimed_then) as f64 / seconds);
                    }
                    self.local = Some((now, claimed, busy));
                }
            }
            None => self.local = Some((now, claimed, busy)),
        }
    }

    /// Starts a window of the whole database's drain: charge intake has just been refused.
    pub(crate) fn start(&mut self, now: Timestamp, due: u64) {
        self.refused = Some((now, due));
    }

    /// Seconds `due` charges would take at the faster measured rate (none before a rate was
    /// measured; rates are never zero).
    pub(crate) fn predicted(&self, due: u64) -> Option<f64> {
        let rate = match (self.global_rate, self.local_rate) {
            (Some(global), Some(local)) => global.max(local),
            (global, local) => global.or(local)?,
        };
        Some(due as f64 / rate)
    }
}
