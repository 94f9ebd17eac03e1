//! The escaper every page goes through (configured in `askama.toml` for `.html` templates), so
//! that whatever a person typed (a reference, a name, a reason) is shown as text: HTML's special
//! characters are escaped, and bidirectional controls (U+202A-U+202E, U+2066-U+2069, the marks
//! U+200E, U+200F, U+061C) are written as visible `[U+202E]` instead of reordering what a person
//! reads (a "right-to-left override" can make `exe.txt` read as `txt.exe`).

use std::fmt::{self, Write};

/// HTML escaping with bidirectional controls made visible.
#[derive(Debug, Clone, Copy, Default)]
pub struct Html;

/// Whether `c` changes the direction of the text around it.
pub fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200E}' | '\u{200F}' | '\u{061C}')
}

impl askama::filters::Escaper for Html {
    fn write_escaped_str<W: Write>(&self, mut dest: W, string: &str) -> fmt::Result {
        for c in string.chars() {
            self.write_escaped_char(&mut dest, c)?;
        }
        Ok(())
    }

    fn write_escaped_char<W: Write>(&self, mut dest: W, c: char) -> fmt::Result {
        match c {
            '<' => dest.write_str("&lt;"),
            '>' => dest.write_str("&gt;"),
            '&' => dest.write_str("&amp;"),
            '"' => dest.write_str("&quot;"),
            '\'' => dest.write_str("&#x27;"),
            c if is_bidi_control(c) => write!(dest, "[U+{:04X}]", u32::from(c)),
            c => dest.write_char(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use askama::filters::Escaper;

    use super::Html;

    fn escaped(s: &str) -> String {
        let mut out = String::new();
        let _ = Html.write_escaped_str(&mut out, s);
        out
    }

    #[test]
    fn markup_and_direction_overrides_are_shown_as_text() {
        assert_eq!(escaped("<script>alert('x')</script>"), "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;");
        assert_eq!(escaped("a\"b&c"), "a&quot;b&amp;c");
        assert_eq!(escaped("invoice\u{202E}fdp.exe"), "invoice[U+202E]fdp.exe");
        assert_eq!(escaped("\u{2067}x\u{2069}"), "[U+2067]x[U+2069]");
        assert_eq!(escaped("Ñandú 100 KES"), "Ñandú 100 KES");
    }
}
