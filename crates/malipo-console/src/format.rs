//! How money and times are shown: `KES 1,250.00`, and times in the organisation's country's
//! time zone with the zone named.

use malipo_core::{Currency, MinorUnit, Timestamp};
use malipo_countries::Country;

/// `KES 1,250.00`: the currency, thousands separated by commas, two decimals at least.
pub fn money(amount: MinorUnit, currency: Currency) -> String {
    format!("{currency} {}", grouped(&currency.format_amount(amount)))
}

/// An amount without its currency, grouped (`1,250.00`, `-3,000.00`).
pub fn amount(amount: MinorUnit, currency: Currency) -> String {
    grouped(&currency.format_amount(amount))
}

fn grouped(plain: &str) -> String {
    let (sign, digits) = plain.strip_prefix('-').map_or(("", plain), |rest| ("-", rest));
    let (whole, fraction) = digits.split_once('.').map_or((digits, None), |(w, f)| (w, Some(f)));
    let mut out = String::with_capacity(plain.len().saturating_add(8));
    for (i, c) in whole.chars().enumerate() {
        let left = whole.len().saturating_sub(i);
        if i > 0 && left % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    match fraction {
        Some(f) => format!("{sign}{out}.{f}"),
        None => format!("{sign}{out}"),
    }
}

/// `2026-11-28 14:05:09 Africa/Nairobi`: the country's local time, with the zone named.
pub fn time(at: Timestamp, country: &Country) -> String {
    let local = at.to_offset_datetime().to_offset(offset(country));
    let f = time::macros::format_description!("[year]-[month]-[day] [hour]:[minute]:[second]");
    format!("{} {}", local.format(f).unwrap_or_default(), country.time_zone)
}

/// The local date of `at` (`2026-11-28`).
pub fn date(at: Timestamp, country: &Country) -> String {
    let local = at.to_offset_datetime().to_offset(offset(country));
    let f = time::macros::format_description!("[year]-[month]-[day]");
    local.format(f).unwrap_or_default()
}

/// The country's fixed UTC offset.
pub fn offset(country: &Country) -> time::UtcOffset {
    time::UtcOffset::from_whole_seconds(country.utc_offset_minutes.saturating_mul(60)).unwrap_or(time::UtcOffset::UTC)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn money_has_its_currency_grouping_and_two_decimals() {
        let kes = Currency::new("KES").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(money(MinorUnit::new(125_000), kes), "KES 1,250.00");
        assert_eq!(money(MinorUnit::new(5), kes), "KES 0.05");
        assert_eq!(money(MinorUnit::new(-300_000_000), kes), "KES -3,000,000.00");
        assert_eq!(money(MinorUnit::new(99_999), kes), "KES 999.99");
        assert_eq!(grouped("100000"), "100,000");
    }
}
