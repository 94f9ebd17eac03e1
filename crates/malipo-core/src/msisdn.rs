//! Phone numbers in international format: digits only, country code first, no `+`.

use std::fmt;

/// Why a phone number was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq, Clone)]
pub enum MsisdnError {
    /// Not 8 to 15 digits, or starts with 0.
    #[error("must be 8 to 15 digits in international format, without `+` and not starting with 0")]
    Syntax,
    /// The country code is not a configured country.
    #[error("the country code is not a supported country")]
    UnknownCountry,
    /// The length does not match the country's numbering plan.
    #[error("must be {expected} digits for this country")]
    Length {
        /// Digits expected for the country, country code included.
        expected: usize,
    },
}

/// A syntactically valid MSISDN (E.164 digits without `+`). Whether its country is served is
/// decided by the country configuration.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct Msisdn(String);

impl Msisdn {
    /// Checks the syntax: 8 to 15 ASCII digits, first not `0`.
    ///
    /// # Errors
    /// [`MsisdnError::Syntax`] otherwise.
    pub fn parse(s: &str) -> Result<Self, MsisdnError> {
        let ok = (8..=15).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_digit()) && !s.starts_with('0');
        if ok {
            Ok(Msisdn(s.to_owned()))
        } else {
            Err(MsisdnError::Syntax)
        }
    }

    /// The digits.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The last four digits (the sandbox's outcome selector).
    pub fn last_four(&self) -> &str {
        &self.0[self.0.len().saturating_sub(4)..]
    }
}

impl fmt::Display for Msisdn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_international_digits() {
        assert_eq!(Msisdn::parse("254712345678").map(|m| m.last_four().to_owned()), Ok("5678".into()));
    }

    #[test]
    fn refuses_bad_syntax() {
        for bad in ["", "+254712345678", "0712345678", "2547123456789012", "1234567", "25471234567a", "254 712345678"] {
            assert_eq!(Msisdn::parse(bad), Err(MsisdnError::Syntax), "{bad}");
        }
    }
}
