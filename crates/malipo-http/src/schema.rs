//! OpenAPI schemas of request fields whose rules their Rust types do not say: free text as the
//! use cases check it (`malipo_service::validate`), phone numbers, identifiers and idempotency
//! keys. A DTO field names one with `#[schema(value_type = Reference)]` (`Option<Text100>` when
//! optional), a parameter takes `pattern = ...` from the constants here; amounts use
//! [`crate::wire::DecimalAmount`]. The document lists them all as components.
//!
//! The text patterns are computed from the same predicates the use cases apply
//! ([`is_hidden`], [`char::is_whitespace`]), so the document cannot drift from the checks.

use std::sync::OnceLock;

use malipo_service::validate::is_hidden;
use utoipa::openapi::schema::{ObjectBuilder, Type};
use utoipa::openapi::{Object, RefOr, Schema};

/// A phone number as every request takes it: digits, country code first, 8 to 15 digits, no
/// leading 0 (the country must also be configured, else 422 `invalid_msisdn`).
pub const MSISDN: &str = "^[1-9][0-9]{7,14}$";

/// An `Idempotency-Key` header: a bare token of 1 to 255 visible ASCII characters (not starting
/// with `"`), or an RFC 8941 quoted string holding one (`\"` and `\\` escaped).
pub const IDEMPOTENCY_KEY_HEADER: &str = r#"^([!#-~][!-~]{0,254}|"([!#-\[\]-~]|\\["\\]){1,255}")$"#;

/// An idempotency key given in a body field (`idem`): 1 to 255 visible ASCII characters.
pub const IDEMPOTENCY_KEY: &str = "^[!-~]{1,255}$";

/// The common `limit` parameter's bounds.
pub const LIMIT_MIN: u32 = 1;
/// See [`LIMIT_MIN`].
pub const LIMIT_MAX: u32 = 100;

/// `[lo-hi]` ranges of the characters for which `pred` holds, as a regular expression class body
/// (`\uXXXX` escapes in the Basic Multilingual Plane, the characters themselves above it, which
/// every regular expression dialect reads alike).
fn class_of(pred: impl Fn(char) -> bool) -> String {
    let mut out = String::new();
    let mut run: Option<(char, char)> = None;
    let push = |(lo, hi): (char, char), out: &mut String| {
        let one = |c: char| if u32::from(c) <= 0xFFFF { format!("\\u{:04X}", u32::from(c)) } else { c.to_string() };
        out.push_str(&one(lo));
        if hi != lo {
            out.push('-');
            out.push_str(&one(hi));
        }
    };
    for c in (0..=u32::from(char::MAX)).filter_map(char::from_u32) {
        if pred(c) {
            run = match run {
                Some((lo, hi)) if u32::from(hi).checked_add(1) == Some(u32::from(c)) => Some((lo, c)),
                Some(done) => {
                    push(done, &mut out);
                    Some((c, c))
                }
                None => Some((c, c)),
            };
        }
    }
    if let Some(done) = run {
        push(done, &mut out);
    }
    out
}

/// Characters free text may not hold ([`is_hidden`]).
fn hidden() -> &'static str {
    static CLASS: OnceLock<String> = OnceLock::new();
    CLASS.get_or_init(|| class_of(is_hidden))
}

/// Text of printable characters only.
pub fn printable_pattern() -> String {
    format!("^[^{}]*$", hidden())
}

/// Printable text with at least one character that is not white space.
pub fn non_blank_pattern() -> String {
    static SPACE: OnceLock<String> = OnceLock::new();
    let space = SPACE.get_or_init(|| class_of(|c| c.is_whitespace() && !is_hidden(c)));
    let h = hidden();
    format!("^[^{h}]*[^{h}{space}][^{h}]*$")
}

fn string(min: usize, max: usize, pattern: String, description: &str) -> RefOr<Schema> {
    let min = (min > 0).then_some(min);
    inline(
        ObjectBuilder::new()
            .schema_type(Type::String)
            .min_length(min)
            .max_length(Some(max))
            .pattern(Some(pattern))
            .description(Some(description))
            .build(),
    )
}

/// Declares a documentation type for a text field: `value_type = Name` on a `String` field,
/// `value_type = Option<Name>` on an optional one.
macro_rules! text_schema {
    ($(#[$doc:meta])* $name:ident, $min:expr, $max:expr, $pattern:expr, $description:expr) => {
        $(#[$doc])*
        pub struct $name;

        impl utoipa::PartialSchema for $name {
            fn schema() -> RefOr<Schema> {
                string($min, $max, $pattern, $description)
            }
        }

        impl utoipa::ToSchema for $name {}
    };
}

text_schema!(
    /// A reference: 1 to 64 printable characters.
    Reference, 1, 64, printable_pattern(), "1 to 64 printable characters"
);
text_schema!(
    /// Optional text of up to 100 printable characters (descriptions, narrations).
    Text100, 0, 100, printable_pattern(), "At most 100 printable characters"
);
text_schema!(
    /// Optional text of up to 200 printable characters.
    Text200, 0, 200, printable_pattern(), "At most 200 printable characters"
);
text_schema!(
    /// A name: 1 to 64 printable characters, not only white space.
    Name64, 1, 64, non_blank_pattern(), "1 to 64 printable characters, not only white space"
);
text_schema!(
    /// A reason: 1 to 200 printable characters, not only white space.
    Reason200, 1, 200, non_blank_pattern(), "1 to 200 printable characters, not only white space"
);
text_schema!(
    /// A reason: 1 to 255 printable characters, not only white space.
    Reason255, 1, 255, non_blank_pattern(), "1 to 255 printable characters, not only white space"
);

/// A phone number ([`MSISDN`]).
pub struct Msisdn;

impl utoipa::PartialSchema for Msisdn {
    fn schema() -> RefOr<Schema> {
        let description = "International digits without `+`: country code first, 8 to 15 digits; the country must be configured \
                           and the length its numbering plan's (else 422 invalid_msisdn)";
        inline(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .pattern(Some(MSISDN))
                .description(Some(description))
                .examples(["254712345678"])
                .build(),
        )
    }
}

impl utoipa::ToSchema for Msisdn {}

/// An idempotency key in a body field ([`IDEMPOTENCY_KEY`]).
pub struct IdempotencyKey;

impl utoipa::PartialSchema for IdempotencyKey {
    fn schema() -> RefOr<Schema> {
        let o = ObjectBuilder::new().schema_type(Type::String).pattern(Some(IDEMPOTENCY_KEY));
        inline(o.description(Some("1 to 255 visible ASCII characters")).build())
    }
}

impl utoipa::ToSchema for IdempotencyKey {}

/// An event kind a webhook endpoint subscribes to, or `*` for every kind.
pub struct EventKind;

impl utoipa::PartialSchema for EventKind {
    fn schema() -> RefOr<Schema> {
        let kinds = malipo_webhooks::EVENT_KINDS.iter().copied().chain(["*"]);
        inline(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .enum_values(Some(kinds))
                .description(Some("An event kind, or `*` for every kind"))
                .build(),
        )
    }
}

impl utoipa::ToSchema for EventKind {}

/// An event kind (the `type` filter of `GET /events`).
pub struct EventType;

impl utoipa::PartialSchema for EventType {
    fn schema() -> RefOr<Schema> {
        inline(ObjectBuilder::new().schema_type(Type::String).enum_values(Some(malipo_webhooks::EVENT_KINDS)).build())
    }
}

impl utoipa::ToSchema for EventType {}

/// A schema as a reference-or-inline value (for code that builds documents).
pub fn inline(o: Object) -> RefOr<Schema> {
    RefOr::T(Schema::Object(o))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn the_hidden_class_covers_what_the_use_cases_refuse() {
        let class = hidden();
        assert!(class.starts_with("\\u0000-\\u001F\\u007F-\\u009F\\u00AD"), "{}", &class[..40]);
        for c in ["\\u200B-\\u200F", "\\u2028-\\u202E", "\\uE000-\\uF8FF", "\\uFEFF"] {
            assert!(class.contains(c), "{c} in {class}");
        }
        assert!(class.contains('\u{F0000}') && class.contains('\u{E0001}'), "astral ranges are written as characters");
        assert!(!class.contains("\\u0020") && !class.contains("\\u00E9"));
    }

    #[test]
    fn blank_text_is_spaces_the_use_cases_trim() {
        let p = non_blank_pattern();
        assert!(p.contains("\\u0020\\u00A0\\u1680\\u2000-\\u200A\\u202F\\u205F\\u3000"), "{p}");
    }
}
