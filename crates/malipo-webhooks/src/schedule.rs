//! The retry schedule: the Standard Webhooks intervals with ±10% jitter.

use std::time::Duration;

/// The schedule text was not a list of seconds.
#[derive(Debug, thiserror::Error, PartialEq, Eq, Clone)]
#[error("the retry schedule must be comma-separated seconds, starting with 0 (e.g. 0,5,300)")]
pub struct ScheduleError;

/// Seconds to wait before each attempt: entry 0 is the first attempt (at once), entry `n` the wait
/// after the `n`-th failed attempt. When the list is exhausted the delivery has failed for good.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RetrySchedule(Vec<u64>);

impl Default for RetrySchedule {
    /// At once, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h, 24 h.
    fn default() -> Self {
        RetrySchedule(vec![0, 5, 300, 1800, 7200, 18000, 36000, 50400, 72000, 86400])
    }
}

impl RetrySchedule {
    /// Parses `0,5,300,…` (`MALIPO_WEBHOOK_RETRY_SCHEDULE`).
    ///
    /// # Errors
    /// [`ScheduleError`] for an empty list or a non-number.
    pub fn parse(text: &str) -> Result<Self, ScheduleError> {
        let v: Vec<u64> = text.split(',').map(|s| s.trim().parse::<u64>().map_err(|_| ScheduleError)).collect::<Result<_, _>>()?;
        if v.is_empty() {
            return Err(ScheduleError);
        }
        Ok(RetrySchedule(v))
    }

    /// How many attempts a delivery gets in all.
    pub fn attempts(&self) -> usize {
        self.0.len()
    }

    /// The wait before the next attempt after `failed` failed attempts, jittered by
    /// `jitter` ∈ [-1, 1] times 10%; `None` when no attempts are left.
    pub fn delay_after(&self, failed: usize, jitter: f64) -> Option<Duration> {
        let base = *self.0.get(failed)?;
        let factor = 1.0 + 0.1 * jitter.clamp(-1.0, 1.0);
        Some(Duration::from_secs_f64(base as f64 * factor))
    }

    /// [`RetrySchedule::delay_after`] with random jitter.
    pub fn next_delay(&self, failed: usize) -> Option<Duration> {
        use rand::Rng;
        self.delay_after(failed, rand::thread_rng().gen_range(-1.0..=1.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_is_the_standard_webhooks_schedule() {
        let s = RetrySchedule::default();
        assert_eq!(s.attempts(), 10);
        assert_eq!(s, RetrySchedule::parse("0,5,300,1800,7200,18000,36000,50400,72000,86400").unwrap_or_default());
        assert_eq!(s.delay_after(0, 0.0), Some(Duration::ZERO));
        assert_eq!(s.delay_after(1, 0.0), Some(Duration::from_secs(5)));
        assert_eq!(s.delay_after(9, 0.0), Some(Duration::from_secs(86400)));
        assert_eq!(s.delay_after(10, 0.0), None, "exhausted after ten attempts");
    }

    #[test]
    fn jitter_stays_within_ten_percent() {
        let s = RetrySchedule::default();
        assert_eq!(s.delay_after(2, -1.0), Some(Duration::from_secs(270)));
        assert_eq!(s.delay_after(2, 1.0), Some(Duration::from_secs(330)));
        assert_eq!(s.delay_after(2, 7.0), Some(Duration::from_secs(330)), "clamped");
        for _ in 0..1000 {
            let d = s.next_delay(3).unwrap_or_default().as_secs_f64();
            assert!((1620.0..=1980.0).contains(&d), "{d}");
        }
    }

    #[test]
    fn bad_schedules_are_refused() {
        for bad in ["", "a", "0,,5", "0,-5", "1.5"] {
            assert_eq!(RetrySchedule::parse(bad), Err(ScheduleError), "{bad:?}");
        }
    }
}
