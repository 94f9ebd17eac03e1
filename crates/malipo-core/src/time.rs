//! Timestamps as integer microseconds since the Unix epoch (UTC), the precision both databases keep.

use std::fmt;

/// A UTC instant with microsecond precision (microseconds in snapshots).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct Timestamp(i64);

impl Timestamp {
    /// From microseconds since the Unix epoch.
    pub const fn from_micros(micros: i64) -> Self {
        Timestamp(micros)
    }

    /// Microseconds since the Unix epoch.
    pub const fn as_micros(self) -> i64 {
        self.0
    }

    /// Whole seconds since the Unix epoch (floor).
    pub const fn as_unix_seconds(self) -> i64 {
        self.0.div_euclid(1_000_000)
    }

    /// This instant plus `millis` milliseconds (saturating).
    pub const fn plus_millis(self, millis: i64) -> Self {
        Timestamp(self.0.saturating_add(millis.saturating_mul(1000)))
    }

    /// This instant plus `secs` seconds (saturating).
    pub const fn plus_seconds(self, secs: i64) -> Self {
        Timestamp(self.0.saturating_add(secs.saturating_mul(1_000_000)))
    }

    /// The current time, truncated to microseconds.
    pub fn now() -> Self {
        Self::from_offset_datetime(::time::OffsetDateTime::now_utc())
    }

    /// From a `time` value, truncated to microseconds.
    pub fn from_offset_datetime(t: ::time::OffsetDateTime) -> Self {
        let nanos = t.unix_timestamp_nanos();
        Timestamp(i64::try_from(nanos.div_euclid(1000)).unwrap_or(i64::MAX))
    }

    /// As a `time` value in UTC.
    pub fn to_offset_datetime(self) -> ::time::OffsetDateTime {
        ::time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(self.0).saturating_mul(1000))
            .unwrap_or(::time::OffsetDateTime::UNIX_EPOCH)
    }

    /// RFC 3339 in UTC with a `Z` suffix, e.g. `2026-11-22T10:00:00.123456Z` (fraction only when non-zero).
    pub fn to_rfc3339(self) -> String {
        let t = self.to_offset_datetime();
        let micros = self.0.rem_euclid(1_000_000);
        let base = format!("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}", t.year(), u8::from(t.month()), t.day(), t.hour(), t.minute(), t.second());
        if micros == 0 {
            format!("{base}Z")
        } else {
            format!("{base}.{micros:06}Z")
        }
    }

    /// Parses an RFC 3339 timestamp with any offset.
    ///
    /// # Errors
    /// When the text is not RFC 3339.
    pub fn parse_rfc3339(s: &str) -> Result<Self, ::time::error::Parse> {
        let t = ::time::OffsetDateTime::parse(s, &::time::format_description::well_known::Rfc3339)?;
        Ok(Self::from_offset_datetime(t))
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_rfc3339())
    }
}

/// A source of the current time, so that domain logic can be tested at fixed instants.
pub trait Clock: Send + Sync {
    /// The current instant.
    fn now(&self) -> Timestamp;
}

/// The system's wall clock.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        Timestamp::now()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_round_trip_keeps_microseconds() {
        let t = Timestamp::from_micros(1_763_805_600_123_456);
        assert_eq!(t.to_rfc3339(), "2025-11-22T10:00:00.123456Z");
        assert_eq!(Timestamp::parse_rfc3339(&t.to_rfc3339()).ok(), Some(t));
    }

    #[test]
    fn whole_seconds_have_no_fraction() {
        let t = Timestamp::from_micros(1_763_805_600_000_000);
        assert_eq!(t.to_rfc3339(), "2025-11-22T10:00:00Z");
        assert_eq!(t.as_unix_seconds(), 1_763_805_600);
    }

    #[test]
    fn offsets_are_normalised_to_utc() {
        let t = Timestamp::parse_rfc3339("2026-11-22T13:00:00+03:00").ok();
        assert_eq!(t.map(|t| t.to_rfc3339()), Some("2026-11-22T10:00:00Z".to_owned()));
    }
}
