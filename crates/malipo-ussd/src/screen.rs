//! Screens and the limits of the USSD channel, and the display of amounts.

pub use malipo_core::money::display_amount;

/// Longest response, in characters, the `CON `/`END ` prefix included.
pub const MAX_SCREEN_CHARS: usize = 182;

/// Longest single input hop, in characters; a longer hop is invalid input.
pub const MAX_HOP_CHARS: usize = 40;

/// Longest whole input `text`, in characters; beyond it the session is ended (see
/// [`text_too_long`]).
pub const MAX_TEXT_CHARS: usize = 640;

/// The `CON `/`END ` prefix, in characters.
const PREFIX_CHARS: usize = 4;

/// Whether the gateway's whole input `text` is too long to go on with: the service ends the
/// session instead of calling the menu (the menu also ends it, see [`crate::Menu::input`]).
pub fn text_too_long(text: &str) -> bool {
    text.chars().count() > MAX_TEXT_CHARS
}

/// The input hops of the gateway's `text` (split on `*`); none for the empty text of a
/// session's first request.
pub fn split_hops(text: &str) -> Vec<&str> {
    if text.is_empty() {
        Vec::new()
    } else {
        text.split('*').collect()
    }
}

/// One response of the menu.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Screen {
    /// The text shown, without the `CON `/`END ` prefix.
    pub text: String,
    /// Whether the session ends with this screen (`END`) rather than waiting for input (`CON`).
    pub end: bool,
}

impl Screen {
    /// A screen waiting for more input (`CON`).
    pub fn con(text: impl Into<String>) -> Self {
        Screen { text: text.into(), end: false }
    }

    /// A screen ending the session (`END`).
    pub fn end(text: impl Into<String>) -> Self {
        Screen { text: text.into(), end: true }
    }

    /// Whether the rendered screen fits in [`MAX_SCREEN_CHARS`] without truncation.
    pub fn fits(&self) -> bool {
        PREFIX_CHARS.saturating_add(self.text.chars().count()) <= MAX_SCREEN_CHARS
    }

    /// The response body: `CON {text}` or `END {text}`, at most [`MAX_SCREEN_CHARS`] characters
    /// (cut on a character boundary as a last resort; the menu's own screens always fit).
    pub fn render(&self) -> String {
        let prefix = if self.end { "END " } else { "CON " };
        let mut out = String::with_capacity(prefix.len().saturating_add(self.text.len()));
        out.push_str(prefix);
        out.extend(self.text.chars().take(MAX_SCREEN_CHARS - PREFIX_CHARS));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use malipo_core::{Currency, MinorUnit};

    fn currency(code: &str) -> Currency {
        Currency::new(code).unwrap_or_else(|e| panic!("{code}: {e}"))
    }

    #[test]
    fn amounts_have_separators_and_the_currency_minor_units() {
        let kes = Currency::KES;
        let cases = [
            (1, "KES 0.01"),
            (5, "KES 0.05"),
            (100, "KES 1.00"),
            (25_000, "KES 250.00"),
            (123_450, "KES 1,234.50"),
            (100_000_000, "KES 1,000,000.00"),
            (1_000_000_000_000, "KES 10,000,000,000.00"),
            (0, "KES 0.00"),
            (-150, "KES -1.50"),
            (-123_456_789, "KES -1,234,567.89"),
        ];
        for (minor, text) in cases {
            assert_eq!(display_amount(kes, MinorUnit::new(minor)), text, "{minor}");
        }
        let ugx = currency("UGX");
        assert_eq!(display_amount(ugx, MinorUnit::new(5_000)), "UGX 5,000");
        assert_eq!(display_amount(ugx, MinorUnit::new(999)), "UGX 999");
        assert_eq!(display_amount(ugx, MinorUnit::new(1_000)), "UGX 1,000");
        assert_eq!(display_amount(ugx, MinorUnit::new(100_000)), "UGX 100,000");
        assert_eq!(display_amount(currency("RWF"), MinorUnit::new(12_000)), "RWF 12,000");
        assert_eq!(display_amount(currency("KWD"), MinorUnit::new(1_234_500)), "KWD 1,234.500");
        assert_eq!(display_amount(kes, MinorUnit::new(i64::MIN)), "KES -92,233,720,368,547,758.08");
        assert_eq!(display_amount(kes, MinorUnit::new(i64::MAX)), "KES 92,233,720,368,547,758.07");
    }

    #[test]
    fn render_adds_the_prefix_and_never_exceeds_the_limit() {
        assert_eq!(Screen::con("Hello").render(), "CON Hello");
        assert_eq!(Screen::end("Bye").render(), "END Bye");
        let exact = "x".repeat(MAX_SCREEN_CHARS - 4);
        assert!(Screen::con(exact.clone()).fits());
        assert_eq!(Screen::con(exact.clone()).render().chars().count(), MAX_SCREEN_CHARS);
        let long = Screen::end("é".repeat(500));
        assert!(!long.fits());
        let rendered = long.render();
        assert_eq!(rendered.chars().count(), MAX_SCREEN_CHARS);
        assert!(rendered.starts_with("END éé"));
        let over = format!("{exact}yz");
        assert_eq!(Screen::con(over).render(), format!("CON {exact}"));
    }

    #[test]
    fn text_length_and_hops() {
        assert!(!text_too_long(""));
        assert!(!text_too_long(&"1".repeat(MAX_TEXT_CHARS)));
        assert!(text_too_long(&"1".repeat(MAX_TEXT_CHARS + 1)));
        assert!(!text_too_long(&"é".repeat(MAX_TEXT_CHARS)), "counted in characters");
        assert_eq!(split_hops(""), Vec::<&str>::new());
        assert_eq!(split_hops("1"), ["1"]);
        assert_eq!(split_hops("1*254712345678*"), ["1", "254712345678", ""]);
        assert_eq!(split_hops("*"), ["", ""]);
    }
}
