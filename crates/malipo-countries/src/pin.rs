//! PIN policy: the format of a wallet PIN (the country's number of ASCII digits) and the PINs
//! refused as too easy to guess when a customer chooses a new one.

use crate::Country;

/// The most common four-digit PINs, refused as new PINs. Applied only to PINs of their length.
const COMMON_PINS: [&str; 20] = [
    "1234", "1111", "0000", "1212", "7777", "1004", "2000", "4444", "2222", "6969", "9999", "3333", "5555", "6666", "1122", "1313", "8888",
    "4321", "2001", "1010",
];

/// Why a new PIN is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PinError {
    /// Not exactly the country's PIN length in ASCII digits (the length is carried).
    #[error("PIN must be exactly {0} digits")]
    Format(u8),
    /// Well-formed but too easy to guess (see [`is_weak_pin`]).
    #[error("PIN is too easy to guess")]
    Weak,
}

impl Country {
    /// Whether `pin` has this country's PIN format: exactly [`Country::pin_length`] ASCII digits.
    /// This is all that is checked of a PIN entered to authorise something.
    pub fn is_pin_format(&self, pin: &str) -> bool {
        pin.len() == usize::from(self.pin_length) && pin.bytes().all(|b| b.is_ascii_digit())
    }

    /// Checks a PIN a customer chooses: the format first, then [`is_weak_pin`].
    ///
    /// # Errors
    /// [`PinError::Format`] when `pin` is not exactly `pin_length` ASCII digits;
    /// [`PinError::Weak`] when it is too easy to guess.
    pub fn check_new_pin(&self, pin: &str) -> Result<(), PinError> {
        if !self.is_pin_format(pin) {
            return Err(PinError::Format(self.pin_length));
        }
        if is_weak_pin(pin) {
            return Err(PinError::Weak);
        }
        Ok(())
    }
}

/// Whether a PIN is too easy to guess:
/// - one digit repeated (`0000`, `7777`);
/// - an ascending or descending run of consecutive digits, without wrapping (`0123`, `6789`,
///   `9876`, `4321`; `8901` is not a run);
/// - a two-digit pair repeated (`1212`, `2525`) for PINs of four or more (even) digits;
/// - one of the twenty most common PINs (`1004`, `2000`, `1122`, …), for PINs of their length.
///
/// Meant for strings of ASCII digits; the empty string and single characters count as weak.
pub fn is_weak_pin(pin: &str) -> bool {
    let b = pin.as_bytes();
    let repeated = b.windows(2).all(|w| w[0] == w[1]);
    let digits = b.iter().all(u8::is_ascii_digit);
    let ascending = digits && b.windows(2).all(|w| w[1].checked_sub(w[0]) == Some(1));
    let descending = digits && b.windows(2).all(|w| w[0].checked_sub(w[1]) == Some(1));
    let pair_repeated = b.len() >= 4 && b.len().is_multiple_of(2) && b.iter().enumerate().all(|(i, c)| *c == b[i % 2]);
    repeated || ascending || descending || pair_repeated || COMMON_PINS.contains(&pin)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Countries;

    fn kenya() -> Country {
        let countries = Countries::builtin().unwrap_or_else(|e| panic!("builtin countries file: {e}"));
        let Some(ke) = countries.get("KE").cloned() else { panic!("Kenya is built in") };
        ke
    }

    #[test]
    fn good_pins_are_accepted() {
        let ke = kenya();
        assert_eq!(ke.pin_length, 4);
        for pin in ["4826", "7391", "0582", "1357", "9035", "2468", "1243", "8901"] {
            assert_eq!(ke.check_new_pin(pin), Ok(()), "{pin}");
            assert!(!is_weak_pin(pin), "{pin}");
            assert!(ke.is_pin_format(pin), "{pin}");
        }
    }

    #[test]
    fn format_is_exactly_the_country_length_in_ascii_digits() {
        let ke = kenya();
        for bad in ["", "482", "48261", "48a6", "4 26", " 4826", "4826 ", "+482", "-482", "48.6", "４８２６", "٤٨٢٦", "4826\n"] {
            assert_eq!(ke.check_new_pin(bad), Err(PinError::Format(4)), "{bad:?}");
            assert!(!ke.is_pin_format(bad), "{bad:?}");
        }
        assert_eq!(PinError::Format(4).to_string(), "PIN must be exactly 4 digits");
        assert_eq!(PinError::Weak.to_string(), "PIN is too easy to guess");
    }

    #[test]
    fn format_is_checked_before_weakness() {
        let ke = kenya();
        assert_eq!(ke.check_new_pin("111"), Err(PinError::Format(4)));
        assert_eq!(ke.check_new_pin("12345"), Err(PinError::Format(4)));
    }

    #[test]
    fn one_digit_repeated_is_weak() {
        let ke = kenya();
        for d in '0'..='9' {
            let pin: String = std::iter::repeat_n(d, 4).collect();
            assert_eq!(ke.check_new_pin(&pin), Err(PinError::Weak), "{pin}");
        }
        assert!(is_weak_pin("777777"));
        assert!(is_weak_pin("7"));
        assert!(is_weak_pin(""));
    }

    #[test]
    fn runs_of_consecutive_digits_are_weak_without_wrapping() {
        let ke = kenya();
        for pin in ["0123", "1234", "2345", "3456", "4567", "5678", "6789", "9876", "8765", "7654", "6543", "5432", "4321", "3210"] {
            assert_eq!(ke.check_new_pin(pin), Err(PinError::Weak), "{pin}");
        }
        for not_a_run in ["8901", "9012", "7890", "1098", "0987", "2109", "1235", "1232", "3453"] {
            assert_eq!(ke.check_new_pin(not_a_run), Ok(()), "{not_a_run}");
        }
        assert!(is_weak_pin("123456"));
        assert!(is_weak_pin("987654"));
        assert!(!is_weak_pin("abcd"), "runs are of digits only");
    }

    #[test]
    fn repeated_pairs_are_weak() {
        let ke = kenya();
        for pin in ["1212", "2525", "9090", "0101", "4747", "6969", "1313", "1010"] {
            assert_eq!(ke.check_new_pin(pin), Err(PinError::Weak), "{pin}");
        }
        assert!(is_weak_pin("abab"));
        assert!(is_weak_pin("252525"), "six digits");
        assert!(!is_weak_pin("25252"), "odd length is not a pair repeated");
        assert!(!is_weak_pin("2552"));
        assert!(!is_weak_pin("2522"));
    }

    #[test]
    fn common_pins_are_weak() {
        let ke = kenya();
        for pin in COMMON_PINS {
            assert_eq!(ke.check_new_pin(pin), Err(PinError::Weak), "{pin}");
            assert!(is_weak_pin(pin), "{pin}");
        }
        // Not caught by the pattern rules: only the list refuses them.
        for pin in ["1004", "2000", "1122", "2001"] {
            assert_eq!(ke.check_new_pin(pin), Err(PinError::Weak), "{pin}");
        }
    }

    #[test]
    fn the_common_list_applies_only_to_pins_of_its_length() {
        let mut six = kenya();
        six.pin_length = 6;
        assert_eq!(six.check_new_pin("100400"), Ok(()));
        assert_eq!(six.check_new_pin("200100"), Ok(()));
        assert_eq!(six.check_new_pin("482613"), Ok(()));
        assert_eq!(six.check_new_pin("1004"), Err(PinError::Format(6)));
        assert_eq!(six.check_new_pin("112200"), Ok(()));
        assert_eq!(six.check_new_pin("123456"), Err(PinError::Weak));
        assert_eq!(six.check_new_pin("000000"), Err(PinError::Weak));
        assert_eq!(six.check_new_pin("121212"), Err(PinError::Weak));
        assert!(!is_weak_pin("10042"));
    }
}
