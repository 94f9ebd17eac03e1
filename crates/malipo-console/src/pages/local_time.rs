//! Times as a person of an organisation reads them: in their organisation's country's time zone
//! (UTC for an organisation whose country is not served), and the calendar dates they type into
//! filters read in that zone.

use malipo_core::Timestamp;
use malipo_countries::Country;
use malipo_service::SignedIn;

use crate::{format, Console};

/// The clock of one person's organisation.
#[derive(Clone, Debug)]
pub struct LocalTime {
    country: Option<Country>,
}

impl LocalTime {
    /// The time zone of `who`'s organisation.
    pub fn of(console: &Console, who: &SignedIn) -> Self {
        LocalTime { country: console.platform.countries().get(&who.org.country).cloned() }
    }

    /// `2026-11-28 14:05:09 Africa/Nairobi`.
    pub fn time(&self, at: Timestamp) -> String {
        match &self.country {
            Some(c) => format::time(at, c),
            None => {
                let f = time::macros::format_description!("[year]-[month]-[day] [hour]:[minute]:[second]");
                format!("{} UTC", at.to_offset_datetime().format(f).unwrap_or_default())
            }
        }
    }

    fn offset(&self) -> time::UtcOffset {
        self.country.as_ref().map_or(time::UtcOffset::UTC, format::offset)
    }

    /// The local date of `at` (`2026-11-28`), as a date input shows it.
    pub fn date(&self, at: Timestamp) -> String {
        let f = time::macros::format_description!("[year]-[month]-[day]");
        at.to_offset_datetime().to_offset(self.offset()).format(f).unwrap_or_default()
    }

    /// The start of local day `date` (`YYYY-MM-DD`); `None` if it is not a date.
    pub fn day_start(&self, date: &str) -> Option<Timestamp> {
        let f = time::macros::format_description!("[year]-[month]-[day]");
        let day = time::Date::parse(date.trim(), f).ok()?;
        Some(Timestamp::from_offset_datetime(day.midnight().assume_offset(self.offset())))
    }

    /// The end of local day `date` (the start of the next), exclusive.
    pub fn day_end(&self, date: &str) -> Option<Timestamp> {
        let f = time::macros::format_description!("[year]-[month]-[day]");
        let next = time::Date::parse(date.trim(), f).ok()?.next_day()?;
        Some(Timestamp::from_offset_datetime(next.midnight().assume_offset(self.offset())))
    }
}
