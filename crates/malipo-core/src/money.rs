//! Money: integer minor units with their currency. `rust_decimal` is used only to parse the
//! decimal text that arrives at the API edge; arithmetic is checked integer arithmetic.

use std::fmt;
use std::str::FromStr;

use rust_decimal::Decimal;

/// Why an amount or currency was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq, Clone)]
pub enum MoneyError {
    /// Not a plain decimal number (exponents, signs, NaN, spaces are refused).
    #[error("must be a decimal number such as 250 or 250.50")]
    Syntax,
    /// Zero or negative.
    #[error("must be greater than zero")]
    NotPositive,
    /// More decimals than the currency has minor units.
    #[error("has more decimals than {currency} allows ({minor_units})")]
    TooManyDecimals {
        /// The currency.
        currency: Currency,
        /// Its ISO 4217 minor units.
        minor_units: u8,
    },
    /// Too large to represent.
    #[error("is too large")]
    Overflow,
    /// Not a three-letter upper-case ISO 4217 code.
    #[error("must be a three-letter ISO 4217 code")]
    Currency,
}

/// An ISO 4217 currency code (kept as its code in snapshots).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[serde(into = "String", try_from = "String")]
pub struct Currency([u8; 3]);

impl From<Currency> for String {
    fn from(c: Currency) -> String {
        c.as_str().to_owned()
    }
}

impl TryFrom<String> for Currency {
    type Error = MoneyError;
    fn try_from(code: String) -> Result<Self, MoneyError> {
        Currency::new(&code)
    }
}

impl Currency {
    /// Kenyan shilling.
    pub const KES: Currency = Currency(*b"KES");

    /// Parses an upper-case three-letter code.
    ///
    /// # Errors
    /// [`MoneyError::Currency`] when the text is not three ASCII upper-case letters.
    pub fn new(code: &str) -> Result<Self, MoneyError> {
        let b = code.as_bytes();
        if b.len() == 3 && b.iter().all(u8::is_ascii_uppercase) {
            Ok(Currency([b[0], b[1], b[2]]))
        } else {
            Err(MoneyError::Currency)
        }
    }

    /// The code as text.
    pub fn as_str(&self) -> &str {
        // Only ASCII upper-case letters are ever stored.
        std::str::from_utf8(&self.0).unwrap_or("XXX")
    }

    /// ISO 4217 minor units of the currencies Malipo knows; 2 for any other.
    pub fn minor_units(&self) -> u8 {
        match &self.0 {
            b"UGX" | b"RWF" | b"JPY" | b"XOF" | b"XAF" | b"BIF" => 0,
            b"KWD" | b"BHD" | b"OMR" | b"TND" => 3,
            _ => 2,
        }
    }

    /// Parses an amount given in major units (`"250.50"`) into minor units of this currency.
    ///
    /// # Errors
    /// See [`MoneyError`].
    pub fn parse_amount(&self, text: &str) -> Result<MinorUnit, MoneyError> {
        parse_amount(text, *self)
    }

    /// Formats minor units as major units with at least two decimals (`25000` KES → `250.00`).
    pub fn format_amount(&self, amount: MinorUnit) -> String {
        format_amount(amount, *self)
    }
}

impl fmt::Debug for Currency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for Currency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Currency {
    type Err = MoneyError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Currency::new(s)
    }
}

/// An amount in the smallest unit of its currency. Signed, so that ledger postings can carry
/// direction; checked arithmetic only.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct MinorUnit(i64);

impl MinorUnit {
    /// Zero.
    pub const ZERO: MinorUnit = MinorUnit(0);

    /// Wraps a raw count of minor units.
    pub const fn new(v: i64) -> Self {
        MinorUnit(v)
    }

    /// The raw count.
    pub const fn get(self) -> i64 {
        self.0
    }

    /// `self + rhs`.
    ///
    /// # Errors
    /// [`MoneyError::Overflow`].
    pub fn checked_add(self, rhs: MinorUnit) -> Result<MinorUnit, MoneyError> {
        self.0.checked_add(rhs.0).map(MinorUnit).ok_or(MoneyError::Overflow)
    }

    /// `self - rhs`.
    ///
    /// # Errors
    /// [`MoneyError::Overflow`].
    pub fn checked_sub(self, rhs: MinorUnit) -> Result<MinorUnit, MoneyError> {
        self.0.checked_sub(rhs.0).map(MinorUnit).ok_or(MoneyError::Overflow)
    }

    /// `-self`.
    ///
    /// # Errors
    /// [`MoneyError::Overflow`] for `i64::MIN`.
    pub fn checked_neg(self) -> Result<MinorUnit, MoneyError> {
        self.0.checked_neg().map(MinorUnit).ok_or(MoneyError::Overflow)
    }

    /// `self * numerator / denominator`, rounded towards zero, computed without intermediate
    /// overflow (for shares such as the fee returned with a partial reversal).
    ///
    /// # Errors
    /// [`MoneyError::Overflow`] when the result does not fit, or `denominator` is zero.
    pub fn checked_mul_div(self, numerator: i64, denominator: i64) -> Result<MinorUnit, MoneyError> {
        i128::from(self.0)
            .checked_mul(i128::from(numerator))
            .and_then(|p| p.checked_div(i128::from(denominator)))
            .and_then(|q| i64::try_from(q).ok())
            .map(MinorUnit)
            .ok_or(MoneyError::Overflow)
    }

    /// The sum of amounts.
    ///
    /// # Errors
    /// [`MoneyError::Overflow`].
    pub fn checked_sum(amounts: impl IntoIterator<Item = MinorUnit>) -> Result<MinorUnit, MoneyError> {
        amounts.into_iter().try_fold(MinorUnit::ZERO, MinorUnit::checked_add)
    }

    /// `self + rhs`, held at the bounds of `i64` instead of overflowing: for figures that are
    /// shown or compared, never for money that moves.
    pub const fn saturating_add(self, rhs: MinorUnit) -> MinorUnit {
        MinorUnit(self.0.saturating_add(rhs.0))
    }

    /// `self - rhs`, held at the bounds of `i64`: for figures that are shown or compared, never
    /// for money that moves.
    pub const fn saturating_sub(self, rhs: MinorUnit) -> MinorUnit {
        MinorUnit(self.0.saturating_sub(rhs.0))
    }

    /// The minor units of `major` whole major units of `currency` (`1_000_000` KES →
    /// `100_000_000`).
    ///
    /// # Errors
    /// [`MoneyError::Overflow`].
    pub fn from_major(major: i64, currency: Currency) -> Result<MinorUnit, MoneyError> {
        10_i64
            .checked_pow(u32::from(currency.minor_units()))
            .and_then(|scale| major.checked_mul(scale))
            .map(MinorUnit)
            .ok_or(MoneyError::Overflow)
    }

    /// Whether strictly greater than zero.
    pub const fn is_positive(self) -> bool {
        self.0 > 0
    }
}

/// Parses a decimal amount in major units exactly. Accepts `250`, `250.5`, `250.50`; refuses
/// signs, exponents, spaces, `NaN`, empty parts (`.5`, `5.`), zero, and more decimals than the
/// currency's minor units.
///
/// # Errors
/// See [`MoneyError`].
pub fn parse_amount(text: &str, currency: Currency) -> Result<MinorUnit, MoneyError> {
    let (int, frac) = match text.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (text, None),
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(int) || frac.is_some_and(|f| !digits(f)) {
        return Err(MoneyError::Syntax);
    }
    let minor_units = currency.minor_units();
    // Decimals beyond the currency's (trailing zeros aside) are that, however many there are.
    if frac.is_some_and(|f| f.trim_end_matches('0').len() > usize::from(minor_units)) {
        return Err(MoneyError::TooManyDecimals { currency, minor_units });
    }
    let (int, frac) = (int.trim_start_matches('0'), frac.map_or("", |f| f.trim_end_matches('0')));
    if int.len() > 16 {
        return Err(MoneyError::Overflow);
    }
    let exact = format!("{}.{}", if int.is_empty() { "0" } else { int }, if frac.is_empty() { "0" } else { frac });
    let value = Decimal::from_str_exact(&exact).map_err(|_| MoneyError::Overflow)?;
    let value = value.normalize();
    if value.scale() > u32::from(minor_units) {
        return Err(MoneyError::TooManyDecimals { currency, minor_units });
    }
    if value.is_zero() {
        return Err(MoneyError::NotPositive);
    }
    let scaled = value.checked_mul(Decimal::from(10_i64.pow(u32::from(minor_units)))).ok_or(MoneyError::Overflow)?;
    let minor: i64 = scaled.trunc().try_into().map_err(|_| MoneyError::Overflow)?;
    // Keep amounts well inside i64 so sums of many never overflow (1e15 minor units).
    if minor > 1_000_000_000_000_000 {
        return Err(MoneyError::Overflow);
    }
    Ok(MinorUnit(minor))
}

/// Formats minor units as a decimal in major units with at least two decimals
/// (the seed's webhook rule): `25000` KES → `250.00`, `5000` UGX → `5000.00`, `-150` KES → `-1.50`.
#[allow(clippy::arithmetic_side_effects)] // i128 of an i64 times at most 10^2: cannot overflow
pub fn format_amount(amount: MinorUnit, currency: Currency) -> String {
    let minor_units = u32::from(currency.minor_units());
    let decimals = minor_units.max(2);
    let v = i128::from(amount.0) * 10_i128.pow(decimals - minor_units);
    let scale = 10_i128.pow(decimals);
    let sign = if v < 0 { "-" } else { "" };
    let abs = v.abs();
    format!("{sign}{}.{:0width$}", abs / scale, abs % scale, width = decimals as usize)
}

/// An amount for people: the currency code, then major units with thousands separators and the
/// currency's own minor units (`KES 1,234.50`, `UGX 5,000`, `RWF 12,000`).
#[allow(clippy::arithmetic_side_effects)] // u128 of an i64 by a power of ten up to 10^3: cannot overflow
pub fn display_amount(currency: Currency, amount: MinorUnit) -> String {
    let minor_units = u32::from(currency.minor_units());
    let scale = 10_u128.pow(minor_units);
    let value = i128::from(amount.get());
    let abs = value.unsigned_abs();
    let sign = if value < 0 { "-" } else { "" };
    let major = (abs / scale).to_string();
    let mut grouped = String::with_capacity(major.len() + major.len() / 3);
    for (i, digit) in major.chars().enumerate() {
        if i > 0 && (major.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(digit);
    }
    if minor_units == 0 {
        format!("{currency} {sign}{grouped}")
    } else {
        format!("{currency} {sign}{grouped}.{:0width$}", abs % scale, width = minor_units as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn kes(s: &str) -> Result<i64, MoneyError> {
        parse_amount(s, Currency::KES).map(MinorUnit::get)
    }

    fn ugx(s: &str) -> Result<i64, MoneyError> {
        parse_amount(s, Currency::new("UGX").unwrap_or(Currency::KES)).map(MinorUnit::get)
    }

    #[test]
    fn parses_plain_decimals() {
        assert_eq!(kes("250"), Ok(25000));
        assert_eq!(kes("250.5"), Ok(25050));
        assert_eq!(kes("250.50"), Ok(25050));
        assert_eq!(kes("0.01"), Ok(1));
        assert_eq!(kes("250.500"), Ok(25050), "trailing zeros within value are exact");
        assert_eq!(ugx("5000"), Ok(5000));
        assert_eq!(ugx("5000.0"), Ok(5000));
    }

    #[test]
    fn refuses_edge_cases() {
        assert_eq!(kes("0"), Err(MoneyError::NotPositive));
        assert_eq!(kes("0.00"), Err(MoneyError::NotPositive));
        for bad in ["-1", "+1", "1e3", "1E3", "NaN", "inf", "", " 1", "1 ", ".5", "5.", "1.2.3", "1,5", "0x10"] {
            assert_eq!(kes(bad), Err(MoneyError::Syntax), "{bad:?}");
        }
        assert!(matches!(kes("0.001"), Err(MoneyError::TooManyDecimals { minor_units: 2, .. })));
        assert!(matches!(ugx("1.5"), Err(MoneyError::TooManyDecimals { minor_units: 0, .. })));
        assert_eq!(kes("99999999999999999999"), Err(MoneyError::Overflow), "digits, only too many");
        assert_eq!(kes(&"9".repeat(400)), Err(MoneyError::Overflow));
        assert!(
            matches!(kes("100.0000000000000000000000000001"), Err(MoneyError::TooManyDecimals { .. })),
            "too many decimals, not too large"
        );
        assert!(matches!(kes(&format!("1.{}1", "0".repeat(400))), Err(MoneyError::TooManyDecimals { .. })));
        assert_eq!(kes(&format!("1.{}", "0".repeat(400))), Ok(100), "trailing zeros are exact");
        assert_eq!(kes(&format!("{}1", "0".repeat(40))), Ok(100), "leading zeros are exact");
        assert_eq!(kes("9999999999999999999"), Err(MoneyError::Overflow));
        assert_eq!(kes("10000000000000.01"), Err(MoneyError::Overflow));
    }

    #[test]
    fn formats_with_two_decimals() {
        assert_eq!(format_amount(MinorUnit::new(25000), Currency::KES), "250.00");
        assert_eq!(format_amount(MinorUnit::new(5), Currency::KES), "0.05");
        assert_eq!(format_amount(MinorUnit::new(-150), Currency::KES), "-1.50");
        let ugx = Currency::new("UGX").unwrap_or(Currency::KES);
        assert_eq!(format_amount(MinorUnit::new(5000), ugx), "5000.00");
        let kwd = Currency::new("KWD").unwrap_or(Currency::KES);
        assert_eq!(format_amount(MinorUnit::new(1500), kwd), "1.500");
    }

    #[test]
    fn currency_codes_are_validated() {
        assert!(Currency::new("KES").is_ok());
        for bad in ["kes", "KE", "KESH", "K3S", ""] {
            assert_eq!(Currency::new(bad), Err(MoneyError::Currency), "{bad}");
        }
    }

    #[test]
    fn shares_sums_and_major_units() {
        assert_eq!(MinorUnit::new(1000).checked_mul_div(250, 1000), Ok(MinorUnit::new(250)));
        assert_eq!(MinorUnit::new(7).checked_mul_div(1, 3), Ok(MinorUnit::new(2)), "rounds towards zero");
        assert_eq!(MinorUnit::new(i64::MAX).checked_mul_div(i64::MAX, i64::MAX), Ok(MinorUnit::new(i64::MAX)), "no intermediate overflow");
        assert_eq!(MinorUnit::new(i64::MAX).checked_mul_div(2, 1), Err(MoneyError::Overflow));
        assert_eq!(MinorUnit::new(5).checked_mul_div(1, 0), Err(MoneyError::Overflow));
        assert_eq!(MinorUnit::checked_sum([MinorUnit::new(2), MinorUnit::new(3)]), Ok(MinorUnit::new(5)));
        assert_eq!(MinorUnit::checked_sum([MinorUnit::new(i64::MAX), MinorUnit::new(1)]), Err(MoneyError::Overflow));
        assert_eq!(MinorUnit::new(i64::MAX).saturating_add(MinorUnit::new(1)), MinorUnit::new(i64::MAX));
        assert_eq!(MinorUnit::from_major(1_000_000, Currency::KES), Ok(MinorUnit::new(100_000_000)));
        let ugx = Currency::new("UGX").unwrap_or(Currency::KES);
        assert_eq!(MinorUnit::from_major(5000, ugx), Ok(MinorUnit::new(5000)));
        assert_eq!(MinorUnit::from_major(i64::MAX, Currency::KES), Err(MoneyError::Overflow));
    }

    #[test]
    fn checked_arithmetic_reports_overflow() {
        assert_eq!(MinorUnit::new(i64::MAX).checked_add(MinorUnit::new(1)), Err(MoneyError::Overflow));
        assert_eq!(MinorUnit::new(i64::MIN).checked_sub(MinorUnit::new(1)), Err(MoneyError::Overflow));
        assert_eq!(MinorUnit::new(i64::MIN).checked_neg(), Err(MoneyError::Overflow));
        assert_eq!(MinorUnit::new(2).checked_sub(MinorUnit::new(5)), Ok(MinorUnit::new(-3)));
    }

    proptest! {
        #[test]
        fn format_then_parse_round_trips(v in 1_i64..1_000_000_000_000) {
            let text = format_amount(MinorUnit::new(v), Currency::KES);
            prop_assert_eq!(kes(&text), Ok(v));
        }
    }
}
