//! How fast due charges drain, as the backlog monitor ([`crate::backlog`]) measures it.

use malipo_core::Timestamp;

/// Seconds over which one drain rate is measured.
const DRAIN_WINDOW_SECONDS: f64 = 1.0;

/// Charges a second the workers are assumed to drain before their pace was ever measured (an
/// instance that has just started): without it, the first burst after a start is admitted until
/// its oldest charge has waited the whole bound, however many arrived meanwhile, and a burst can
/// be many times what the workers finish within the bound. Set below what the smallest
/// deployment drains, so that it can only close the gate early, for the second or two until a
/// pace is measured; whatever the workers did while keeping up raises it.
pub(crate) const ASSUMED_RATE: f64 = 200.0;

/// How fast due charges drain, measured two ways; the prediction takes the drain measured while
/// refusing when there is one.
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
    /// The most this instance's workers claimed per second over a window in which they were not
    /// behind (so they claimed what arrived, not what they could): a floor of their capacity,
    /// used with [`ASSUMED_RATE`] only until a pace is measured.
    keeping_up: f64,
    /// Whether the last measurement left the gate closed.
    pub(crate) refusing_then: bool,
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
                    // A window that emptied the count says only that the drain was at least
                    // that fast: left out, or a short backlog would pass for a slow drain.
                    if due > 0 {
                        self.global_rate = averaged(self.global_rate, due_then.saturating_sub(due) as f64 / seconds);
                    }
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
                    let rate = claimed.saturating_sub(claimed_then) as f64 / seconds;
                    if busy_then && busy {
                        self.local_rate = averaged(self.local_rate, rate);
                    } else {
                        self.keeping_up = self.keeping_up.max(rate);
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

    /// Charges a second the due charges drain at: the whole database's drain while intake was
    /// refused if it was measured (what a closed gate waits for, whatever the number of
    /// instances), else this instance's workers' pace, or before either the larger of
    /// [`ASSUMED_RATE`] and the workers' pace while keeping up (never zero). The workers' pace
    /// while intake is admitted overstates the drain behind a closed gate: the flood of refused
    /// requests that a closed gate answers takes CPU the workers then lack, so a gate closed on
    /// that pace closes too late, and the backlog behind it takes longer than the bound to drain.
    pub(crate) fn rate(&self) -> f64 {
        match (self.global_rate, self.local_rate) {
            (Some(rate), _) | (None, Some(rate)) => rate,
            (None, None) => ASSUMED_RATE.max(self.keeping_up),
        }
    }

    /// Seconds `due` charges would take at [`Drain::rate`].
    pub(crate) fn predicted(&self, due: u64) -> f64 {
        due as f64 / self.rate()
    }
}
