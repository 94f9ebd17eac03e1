//! Field validation shared by the use cases: free text and amounts.

use malipo_core::{Currency, MinorUnit};
use unicode_properties::{GeneralCategory, UnicodeGeneralCategory};

use crate::error::FieldError;

/// A message as a sentence, as every front end shows one to people: capitalised, with a full
/// stop.
pub fn sentence(message: &str) -> String {
    let mut chars = message.chars();
    let mut out: String = chars.next().map(|c| c.to_uppercase().collect()).unwrap_or_default();
    out.push_str(chars.as_str());
    if !out.ends_with('.') {
        out.push('.');
    }
    out
}

/// Validates a free-text reference: 1 to 64 printable characters.
pub fn check_reference(field: &str, value: &str, errors: &mut Vec<FieldError>) {
    check_text(field, value, 64, true, errors);
}

/// Whether a character may not appear in text shown to people (statements, USSD screens,
/// dashboards): control characters, format characters (bidirectional overrides such as U+202E,
/// zero-width ones such as U+200B, which make one text display as another), line and
/// paragraph separators, and private-use characters.
pub fn is_hidden(c: char) -> bool {
    matches!(
        c.general_category(),
        GeneralCategory::Control
            | GeneralCategory::Format
            | GeneralCategory::LineSeparator
            | GeneralCategory::ParagraphSeparator
            | GeneralCategory::PrivateUse
            | GeneralCategory::Surrogate
    )
}

/// Validates free text shown to people: not empty (nor only spaces, unless `blank_allowed`), at
/// most `max_chars` characters, nothing [`is_hidden`]. Reports the first problem under `field`.
pub fn check_text(field: &str, value: &str, max_chars: usize, blank_allowed: bool, errors: &mut Vec<FieldError>) {
    let empty = if blank_allowed { value.is_empty() } else { value.trim().is_empty() };
    if empty {
        errors.push(FieldError::new(field, "missing_field", format!("{field} must not be empty")));
    } else if value.chars().count() > max_chars {
        errors.push(FieldError::new(field, "too_long", format!("{field} must be at most {max_chars} characters")));
    } else if let Some(c) = value.chars().find(|c| is_hidden(*c)) {
        errors.push(FieldError::new(
            field,
            "invalid_value",
            format!("{field} must be printable characters (it holds U+{:04X}, which is not shown as itself)", u32::from(c)),
        ));
    }
}

/// [`check_text`] for an optional text: absent or empty is fine.
pub fn check_optional_text(field: &str, value: Option<&str>, max_chars: usize, errors: &mut Vec<FieldError>) {
    if let Some(v) = value.filter(|v| !v.is_empty()) {
        check_text(field, v, max_chars, true, errors);
    }
}

/// Parses an amount in a currency, reporting problems under `field`.
pub fn check_amount(field: &str, text: &str, currency: Currency, errors: &mut Vec<FieldError>) -> Option<MinorUnit> {
    match currency.parse_amount(text) {
        Ok(v) => Some(v),
        Err(e) => {
            errors.push(FieldError::new(field, "invalid_amount", format!("{field} {e}")));
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problem(value: &str) -> Option<&'static str> {
        let mut errors = Vec::new();
        check_text("reference", value, 64, true, &mut errors);
        errors.first().map(|e| e.code)
    }

    #[test]
    fn text_that_displays_as_other_text_is_refused() {
        for hidden in [
            "ORDER\u{202E}1-REDRO",
            "ORD\u{200B}ER",
            "A\u{2066}B",
            "x\u{FEFF}",
            "a\u{2028}b",
            "a\u{2029}b",
            "a\u{E000}b",
            "tab\there",
            "nul\u{0}",
        ] {
            assert_eq!(problem(hidden), Some("invalid_value"), "{hidden:?}");
        }
        for fine in ["ORDER-1042", "Malipo Café", "Ünïcödé ✓", "Amina Otieno", "مرحبا", "订单 42", "🦀 crab"] {
            assert_eq!(problem(fine), None, "{fine:?}");
        }
        assert_eq!(problem(""), Some("missing_field"));
        assert_eq!(problem(&"x".repeat(65)), Some("too_long"));
    }
}
