//! CSV files the console writes (exports a person opens in a spreadsheet): RFC 4180 quoting,
//! `\n` line ends (as the API's exports), and no field a spreadsheet would run as a formula.
//!
//! A field beginning with `=`, `+`, `-`, `@`, a tab or a carriage return is written with a `'`
//! in front (OWASP's advice on CSV injection), so `=HYPERLINK(...)` typed into a reason or a
//! failed sign-in's email is shown as text, never run. A plain number (`-1250.00`, `42`) is
//! left as it is: it cannot run as a formula, and a spreadsheet should still add it up.

/// Whether `s` is a plain decimal number: an optional `-`, digits, and optionally `.` and digits.
fn is_plain_number(s: &str) -> bool {
    let digits = s.strip_prefix('-').unwrap_or(s);
    let (whole, fraction) = digits.split_once('.').map_or((digits, None), |(w, f)| (w, Some(f)));
    !whole.is_empty()
        && whole.bytes().all(|b| b.is_ascii_digit())
        && fraction.is_none_or(|f| !f.is_empty() && f.bytes().all(|b| b.is_ascii_digit()))
}

/// One field as written: neutralised if a spreadsheet would run it, then quoted where RFC 4180
/// asks (a comma, a quote, a line break) or where spaces at either end would be lost.
pub fn field(value: &str) -> String {
    let risky = value.starts_with(['=', '+', '-', '@', '\t', '\r']) && !is_plain_number(value);
    let text = if risky { format!("'{value}") } else { value.to_owned() };
    let needs_quotes = text.contains([',', '"', '\r', '\n']) || text.starts_with(' ') || text.ends_with(' ');
    if needs_quotes {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text
    }
}

/// One record: its fields written by [`field`], separated by commas, ending with `\n`.
pub fn row<S: AsRef<str>>(fields: &[S]) -> String {
    let mut out = fields.iter().map(|f| field(f.as_ref())).collect::<Vec<_>>().join(",");
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::{field, row};

    #[test]
    fn formulas_are_written_as_text() {
        assert_eq!(field("=1+1"), "'=1+1");
        assert_eq!(field("+254700000000"), "'+254700000000");
        assert_eq!(field("-2+3"), "'-2+3");
        assert_eq!(field("@SUM(A1:A2)"), "'@SUM(A1:A2)");
        assert_eq!(field("\tx"), "'\tx");
        assert_eq!(field("\rx"), "\"'\rx\"");
        assert_eq!(field("=HYPERLINK(\"http://evil.example\",\"x\")"), "\"'=HYPERLINK(\"\"http://evil.example\"\",\"\"x\"\")\"");
        assert_eq!(field("a=b"), "a=b", "only the first character counts");
    }

    #[test]
    fn plain_numbers_stay_numbers() {
        assert_eq!(field("-1250.00"), "-1250.00");
        assert_eq!(field("42"), "42");
        assert_eq!(field("-"), "'-");
        assert_eq!(field("-1."), "'-1.");
        assert_eq!(field("-.5"), "'-.5");
    }

    #[test]
    fn fields_are_quoted_as_rfc_4180_asks() {
        assert_eq!(field("plain"), "plain");
        assert_eq!(field("a,b"), "\"a,b\"");
        assert_eq!(field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(field("two\nlines"), "\"two\nlines\"");
        assert_eq!(field(" padded "), "\" padded \"");
        assert_eq!(field(""), "");
        assert_eq!(row(&["a", "=b", "c,d"]), "a,'=b,\"c,d\"\n");
    }
}
