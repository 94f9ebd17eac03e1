//! Extractors: the authenticated principal, bounded bodies, JSON with the contract's error
//! rules, and idempotency keys.

use std::future::Future;
use std::pin::Pin;

use actix_web::dev::Payload;
use actix_web::http::header;
use actix_web::{web, FromRequest, HttpMessage, HttpRequest};
use futures_util::StreamExt;
use malipo_auth::{Principal, Scope};
use malipo_idempotency::{Fingerprint, IdempotencyKey, KeyError, KeyScope};
use malipo_service::Idem;
use serde::de::DeserializeOwned;

use crate::problem::{ApiError, ProblemField};
use crate::request_id::RateLimitInfo;
use crate::state::AppState;

/// Request bodies above this are refused with 413, unless the route sets its own [`BodyLimit`].
pub const BODY_LIMIT: usize = 64 * 1024;

/// A route's own body limit in bytes, in place of [`BODY_LIMIT`]: set as the resource's app
/// data (`resource(..).app_data(BodyLimit(n))`), where [`Body`] finds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BodyLimit(pub usize);

/// The caller, authenticated by bearer token and admitted by the rate limiter.
#[derive(Debug, Clone)]
pub struct Auth(pub Principal);

impl Auth {
    /// Refuses a token without `scope`.
    ///
    /// # Errors
    /// [`ApiError::InsufficientScope`].
    pub fn require(&self, scope: Scope) -> Result<&Principal, ApiError> {
        if self.0.scopes.contains(scope) {
            Ok(&self.0)
        } else {
            Err(ApiError::InsufficientScope(scope.as_str().into()))
        }
    }

    /// Refuses a token with none of `scopes`.
    ///
    /// # Errors
    /// [`ApiError::InsufficientScope`] naming them all.
    pub fn require_any(&self, scopes: &[Scope]) -> Result<&Principal, ApiError> {
        if scopes.iter().any(|&s| self.0.scopes.contains(s)) {
            Ok(&self.0)
        } else {
            Err(ApiError::InsufficientScope(scopes.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(" ").into()))
        }
    }
}

fn bearer(req: &HttpRequest) -> Result<String, ApiError> {
    let value = req.headers().get(header::AUTHORIZATION).ok_or(ApiError::Unauthorized)?;
    let value = value.to_str().map_err(|_| ApiError::Unauthorized)?;
    malipo_auth::bearer_token(value).map(str::to_owned).ok_or(ApiError::Unauthorized)
}

impl FromRequest for Auth {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, Self::Error>>>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let req = req.clone();
        Box::pin(async move {
            let token = bearer(&req)?;
            let state =
                req.app_data::<web::Data<AppState>>().ok_or_else(|| ApiError::InvalidRequest("server misconfigured".into()))?.clone();
            let platform = state.platform.clone();
            let principal = web::block(move || platform.access().authenticate(&token))
                .await
                .map_err(|e| ApiError::Service(malipo_service::ServiceError::Internal(e.to_string())))??;
            match state.rate_limits.check(principal.mode, &principal.client_id) {
                Ok((limit, remaining)) => {
                    req.extensions_mut().insert(RateLimitInfo { limit, remaining });
                }
                Err(refused) => {
                    // The refusal still states the credential's policy, with nothing left.
                    let limit = state.rate_limits.limit(principal.mode);
                    req.extensions_mut().insert(RateLimitInfo { limit, remaining: 0 });
                    return Err(ApiError::RateLimited(refused.0));
                }
            }
            Ok(Auth(principal))
        })
    }
}

/// The raw body, read up to the route's [`BodyLimit`], else [`BODY_LIMIT`].
#[derive(Debug, Clone)]
pub struct Body(pub web::Bytes);

impl FromRequest for Body {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, Self::Error>>>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let declared = req.headers().get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<usize>().ok());
        let limit = req.app_data::<BodyLimit>().map_or(BODY_LIMIT, |l| l.0);
        let mut payload = payload.take();
        Box::pin(async move {
            if declared.is_some_and(|n| n > limit) {
                return Err(ApiError::PayloadTooLarge(limit));
            }
            let mut buf = web::BytesMut::new();
            while let Some(chunk) = payload.next().await {
                let chunk = chunk.map_err(|e| ApiError::InvalidRequest(format!("could not read the body: {e}")))?;
                if buf.len() + chunk.len() > limit {
                    return Err(ApiError::PayloadTooLarge(limit));
                }
                buf.extend_from_slice(&chunk);
            }
            Ok(Body(buf.freeze()))
        })
    }
}

/// The media type of a request, lower-cased, without parameters.
pub fn media_type(req: &HttpRequest) -> Option<String> {
    let ct = req.headers().get(header::CONTENT_TYPE)?.to_str().ok()?;
    Some(ct.split(';').next().unwrap_or("").trim().to_ascii_lowercase())
}

/// Requires `Content-Type: application/json` (a charset parameter is accepted).
///
/// # Errors
/// [`ApiError::UnsupportedMediaType`].
pub fn require_json(req: &HttpRequest) -> Result<(), ApiError> {
    match media_type(req).as_deref() {
        Some("application/json") => Ok(()),
        other => Err(ApiError::UnsupportedMediaType(format!("Content-Type must be application/json, not {}", other.unwrap_or("absent")))),
    }
}

/// A parsed JSON body with its canonical form (sorted keys) for fingerprints.
#[derive(Debug)]
pub struct Parsed<T> {
    /// The request.
    pub value: T,
    /// Canonical JSON of the body.
    pub canonical: Vec<u8>,
}

/// The canonical form of a body for its fingerprint: keys sorted (serde_json's map), numbers
/// exact (they are parsed without a binary float) and plain decimals written without redundant
/// zeros, so `250`, `250.0` and `250.00` are one request and `250.01` another, whatever their
/// length.
fn canonical(value: serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match value {
        Value::Number(n) => {
            let text = n.to_string();
            match plain_decimal(&text) {
                Some(short) if short != text => serde_json::from_str(&short).map(Value::Number).unwrap_or(Value::Number(n)),
                _ => Value::Number(n),
            }
        }
        Value::Array(items) => Value::Array(items.into_iter().map(canonical).collect()),
        Value::Object(members) => Value::Object(members.into_iter().map(|(k, v)| (k, canonical(v))).collect()),
        other => other,
    }
}

/// A plain decimal (`-12.500`, no exponent) without leading zeros of its whole part and
/// trailing zeros of its fraction (`-12.5`); `None` for other number forms.
fn plain_decimal(text: &str) -> Option<String> {
    let (sign, digits) = text.strip_prefix('-').map_or(("", text), |rest| ("-", rest));
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
    let all_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty() || !all_digits(whole) || !all_digits(fraction) {
        return None;
    }
    let whole = whole.trim_start_matches('0');
    let fraction = fraction.trim_end_matches('0');
    let whole = if whole.is_empty() { "0" } else { whole };
    let sign = if whole == "0" && fraction.is_empty() { "" } else { sign };
    Some(if fraction.is_empty() { format!("{sign}{whole}") } else { format!("{sign}{whole}.{fraction}") })
}

/// Parses a JSON body: malformed JSON and wrong types are 400 `invalid_request`; unknown and
/// missing fields are 422 with `errors[]`.
///
/// # Errors
/// As above.
pub fn parse_json<T: DeserializeOwned>(body: &[u8]) -> Result<Parsed<T>, ApiError> {
    // The body is parsed once, into a tree; the request is read from the tree and the
    // fingerprint's canonical form made from it.
    let Tree(tree) = serde_json::from_slice(body).map_err(|e| ApiError::InvalidRequest(format!("malformed JSON: {e}")))?;
    if !tree.is_object() {
        return Err(ApiError::InvalidRequest("the body must be a JSON object".into()));
    }
    let value = serde_path_to_error::deserialize(&tree).map_err(|e| path_error("", e))?;
    let canonical = serde_json::to_vec(&canonical(tree)).map_err(|e| ApiError::InvalidRequest(e.to_string()))?;
    Ok(Parsed { value, canonical })
}

/// A JSON value read exactly as [`serde_json::Value`] reads it (numbers kept as written), except
/// that an object naming a key twice is refused, as reading it into a struct would be: a body
/// means one thing, never "whichever of the two a reader keeps".
struct Tree(serde_json::Value);

/// How serde_json (with `arbitrary_precision`) hands a number to a visitor: a map of one entry,
/// this key and the number's text. Pinned by the tests below.
const NUMBER_TOKEN: &str = "$serde_json::private::Number";

impl<'de> serde::Deserialize<'de> for Tree {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(TreeVisitor).map(Tree)
    }
}

struct TreeVisitor;

impl<'de> serde::de::Visitor<'de> for TreeVisitor {
    type Value = serde_json::Value;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Self::Value, E> {
        Ok(v.into())
    }

    fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
        Ok(v.into())
    }

    fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
        Ok(v.into())
    }

    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Self::Value, E> {
        serde_json::Number::from_f64(v).map(serde_json::Value::Number).ok_or_else(|| E::custom("a number that is not finite"))
    }

    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(v.into())
    }

    fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
        Ok(v.into())
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(serde_json::Value::Null)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut items = Vec::new();
        while let Some(Tree(item)) = seq.next_element()? {
            items.push(item);
        }
        Ok(serde_json::Value::Array(items))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        use serde::de::Error;
        let mut members = serde_json::Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if key == NUMBER_TOKEN && members.is_empty() {
                let text: String = map.next_value()?;
                return text.parse().map(serde_json::Value::Number).map_err(A::Error::custom);
            }
            if members.contains_key(&key) {
                return Err(A::Error::custom(format_args!("duplicate field `{key}`")));
            }
            let Tree(value) = map.next_value()?;
            members.insert(key, value);
        }
        Ok(serde_json::Value::Object(members))
    }
}

/// Reads a JSON object nested in a body (already parsed as JSON) by [`parse_json`]'s rules, with
/// fields named from `at` (`items[3]` gives `items[3].amount`).
///
/// # Errors
/// As [`parse_json`]; 400 when the value is not an object.
pub fn parse_nested<T: DeserializeOwned>(raw: &serde_json::value::RawValue, at: &str) -> Result<T, ApiError> {
    if !raw.get().trim_start().starts_with('{') {
        return Err(ApiError::InvalidRequest(format!("{at} must be a JSON object")));
    }
    let de = &mut serde_json::Deserializer::from_str(raw.get());
    serde_path_to_error::deserialize(de).map_err(|e| path_error(at, e))
}

/// The problem of a body that does not deserialize, its fields named under `at` (empty at the
/// top level): an unknown or missing field is 422 with `errors[]`, anything else 400.
fn path_error(at: &str, e: serde_path_to_error::Error<serde_json::Error>) -> ApiError {
    let join = |path: &str| match (at, path) {
        (_, "." | "") => at.to_owned(),
        ("", _) => path.to_owned(),
        _ => format!("{at}.{path}"),
    };
    let path = e.path().to_string();
    let inner = e.into_inner();
    let msg = inner.to_string();
    let msg = msg.split(" at line ").next().unwrap_or(&msg).to_owned();
    if let Some(rest) = msg.strip_prefix("unknown field `") {
        let name = rest.split('`').next().unwrap_or("").to_owned();
        // The path already ends with the unknown field's name.
        let field = if path == "." || path.is_empty() { join(&name) } else { join(&path) };
        ApiError::Fields(vec![ProblemField { field, code: "unknown_field".into(), message: format!("unknown field `{name}`") }])
    } else if let Some(rest) = msg.strip_prefix("missing field `") {
        let name = rest.split('`').next().unwrap_or("").to_owned();
        // The path is the object missing it.
        let field = if path == "." || path.is_empty() { join(&name) } else { format!("{}.{name}", join(&path)) };
        ApiError::Fields(vec![ProblemField { field: field.clone(), code: "missing_field".into(), message: format!("{field} is required") }])
    } else {
        let field = join(&path);
        let field = if field.is_empty() { String::new() } else { format!("{field}: ") };
        ApiError::InvalidRequest(format!("{field}{msg}"))
    }
}

/// A JSON body that may be left out: an empty (or blank) body counts as `{}` and needs no
/// `Content-Type`; any other body is [`require_json`] and [`parse_json`].
///
/// # Errors
/// As those two.
pub fn optional_json<T: DeserializeOwned + Default>(req: &HttpRequest, body: &Body) -> Result<Parsed<T>, ApiError> {
    if body.0.iter().all(u8::is_ascii_whitespace) {
        return Ok(Parsed { value: T::default(), canonical: b"{}".to_vec() });
    }
    require_json(req)?;
    parse_json::<T>(&body.0)
}

/// Builds the idempotency context of a state-changing request: the `Idempotency-Key` header or
/// the body's own key field (equal when both), scoped to the principal and `operation`.
///
/// # Errors
/// [`ApiError::IdempotencyKeyMissing`], or 400 for a malformed or conflicting key.
pub fn idem(req: &HttpRequest, principal: &Principal, operation: &str, body_key: Option<&str>, canonical: &[u8]) -> Result<Idem, ApiError> {
    let header = req.headers().get("idempotency-key").map(|v| v.to_str().unwrap_or("\u{0}"));
    let key = IdempotencyKey::from_header_or_body(header, body_key).map_err(|e| match e {
        KeyError::InvalidBody => {
            let (code, message) = match body_key.map_or(0, str::len) {
                0 => ("missing_field", "idem must not be empty"),
                256.. => ("too_long", "idem must be at most 255 characters"),
                _ => ("invalid_value", "idem must be 1 to 255 visible ASCII characters"),
            };
            ApiError::Fields(vec![ProblemField { field: "idem".into(), code: code.into(), message: message.into() }])
        }
        other => ApiError::InvalidRequest(other.to_string()),
    })?;
    let key = key.ok_or(ApiError::IdempotencyKeyMissing)?;
    Ok(Idem {
        scope: KeyScope { org_id: principal.org_id.clone(), mode: principal.mode, operation: operation.to_owned() },
        key,
        fingerprint: Fingerprint::of(req.method().as_str(), req.path(), canonical),
        actor: None,
        callback: None,
    })
}

#[cfg(test)]
mod canonical_tests {
    #![allow(clippy::unwrap_used)]

    use super::{canonical, plain_decimal, Tree};

    fn tree(text: &str) -> Result<serde_json::Value, String> {
        serde_json::from_str::<Tree>(text).map(|t| t.0).map_err(|e| e.to_string())
    }

    #[test]
    fn the_tree_is_serde_jsons_value_with_each_key_once() {
        for text in [
            r#"{"amount":250.00,"n":-3,"big":123456789012345678901234567890.5,"e":1e400,"s":"x\u0041","t":[true,null,{}],"o":{"a":{"b":[1.10]}}}"#,
            r#"{"amount":{"value":"1"}}"#,
            "[]",
            "0.10",
        ] {
            let expected: serde_json::Value = serde_json::from_str(text).unwrap();
            let got = tree(text).unwrap();
            assert_eq!(got, expected, "{text}");
            assert_eq!(got.to_string(), expected.to_string(), "numbers keep their text: {text}");
        }
        assert_eq!(tree(r#"{"n":250.00}"#).unwrap()["n"].to_string(), "250.00");
        assert_eq!(canonical(tree(r#"{"n":250.00}"#).unwrap()).to_string(), r#"{"n":250}"#);
        let twice = tree(r#"{"amount":1,"amount":2}"#).unwrap_err();
        assert!(twice.starts_with("duplicate field `amount`"), "{twice}");
        let nested = tree(r#"{"a":{"b":1,"c":2,"b":3}}"#).unwrap_err();
        assert!(nested.starts_with("duplicate field `b`"), "{nested}");
    }

    #[test]
    fn plain_decimals_lose_only_redundant_zeros() {
        for (text, short) in
            [("10", "10"), ("10.0", "10"), ("10.00", "10"), ("0010.500", "10.5"), ("-0.0", "0"), ("-1.50", "-1.5"), ("0.01", "0.01")]
        {
            assert_eq!(plain_decimal(text).as_deref(), Some(short), "{text}");
        }
        assert_eq!(plain_decimal(&format!("10.{}", "0".repeat(40))).as_deref(), Some("10"));
        assert_eq!(plain_decimal(&format!("10.{}1", "0".repeat(40))), Some(format!("10.{}1", "0".repeat(40))));
        for other in ["1e3", "1E-2", "-", ".5", "5."] {
            assert!(plain_decimal(other).is_none() || other == "5.", "{other}");
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Item {
        #[allow(dead_code)]
        amount: String,
    }

    fn fields(e: ApiError) -> Vec<(String, String)> {
        match e {
            ApiError::Fields(f) => f.into_iter().map(|f| (f.field, f.code)).collect(),
            other => panic!("expected field errors, got {other:?}"),
        }
    }

    #[test]
    fn nested_objects_name_their_fields_from_where_they_are() {
        let raw = |s: &str| serde_json::value::RawValue::from_string(s.to_owned()).unwrap();
        assert_eq!(fields(parse_nested::<Item>(&raw("{}"), "items[3]").unwrap_err()), [("items[3].amount".into(), "missing_field".into())]);
        let e = parse_nested::<Item>(&raw(r#"{"amount":"1","tip":2}"#), "items[0]").unwrap_err();
        assert_eq!(fields(e), [("items[0].tip".into(), "unknown_field".into())]);
        let e = parse_nested::<Item>(&raw(r#"{"amount":1}"#), "items[2]").unwrap_err();
        assert!(matches!(e, ApiError::InvalidRequest(ref m) if m.starts_with("items[2].amount: invalid type")), "{e:?}");
        assert!(
            matches!(parse_nested::<Item>(&raw("[]"), "items[1]"), Err(ApiError::InvalidRequest(ref m)) if m == "items[1] must be a JSON object")
        );
        // At the top level, as before.
        assert_eq!(fields(parse_json::<Item>(b"{}").unwrap_err()), [("amount".into(), "missing_field".into())]);
        assert_eq!(fields(parse_json::<Item>(br#"{"amount":"1","x":1}"#).unwrap_err()), [("x".into(), "unknown_field".into())]);
    }
}
