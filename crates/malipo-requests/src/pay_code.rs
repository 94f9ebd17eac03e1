//! Pay codes: six random digits a customer types on the USSD menu. Unique among the open
//! requests of a mode (the database enforces it); a code reveals nothing about its merchant.

use std::fmt;

use rand::Rng;

/// How many digits a pay code has.
pub const PAY_CODE_DIGITS: usize = 6;

/// A merchant pay code: exactly six ASCII digits (a leading `0` is allowed).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
pub struct PayCode(String);

/// Text that is not six digits.
#[derive(Debug, thiserror::Error, PartialEq, Eq, Clone)]
#[error("a pay code is {PAY_CODE_DIGITS} digits")]
pub struct BadPayCode;

impl PayCode {
    /// A uniformly random code from the operating system's generator.
    pub fn random() -> Self {
        let n: u32 = rand::rngs::OsRng.gen_range(0..1_000_000);
        PayCode(format!("{n:06}"))
    }

    /// Reads a code.
    ///
    /// # Errors
    /// [`BadPayCode`] unless `s` is exactly six ASCII digits.
    pub fn parse(s: &str) -> Result<Self, BadPayCode> {
        if s.len() == PAY_CODE_DIGITS && s.bytes().all(|b| b.is_ascii_digit()) {
            Ok(PayCode(s.to_owned()))
        } else {
            Err(BadPayCode)
        }
    }

    /// The digits.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for PayCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn random_codes_are_six_digits_and_vary() {
        let codes: std::collections::BTreeSet<PayCode> = (0..200).map(|_| PayCode::random()).collect();
        assert!(codes.iter().all(|c| PayCode::parse(c.as_str()).as_ref() == Ok(c)));
        assert!(codes.len() > 150, "200 draws of a million gave only {} distinct codes", codes.len());
    }

    #[test]
    fn parse_takes_exactly_six_digits() {
        assert_eq!(PayCode::parse("012345").unwrap().as_str(), "012345");
        for bad in ["", "12345", "1234567", "12345a", "-12345", " 12345", "１２３４５６"] {
            assert_eq!(PayCode::parse(bad), Err(BadPayCode), "{bad:?}");
        }
    }
}
