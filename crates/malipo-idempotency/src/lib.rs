//! Idempotency keys (contract section 10): validation, request fingerprints, what a request did.
//! The key is claimed in the same database transaction as the effect it guards.

// Integers never meet `+ - *` unchecked here: money goes through `MinorUnit`'s checked
// operations, counters and times saturate or are checked (an overflow must not wrap silently).
#![cfg_attr(not(test), deny(clippy::arithmetic_side_effects))]

use malipo_core::{Mode, OrgId, Timestamp};
use sha2::{Digest, Sha256};

/// The key was missing or malformed.
#[derive(Debug, thiserror::Error, PartialEq, Eq, Clone)]
pub enum KeyError {
    /// Not 1–255 visible ASCII characters (or an RFC 8941 string of them).
    #[error("Idempotency-Key must be 1 to 255 visible ASCII characters")]
    Invalid,
    /// The body's key field is malformed (a field problem of the body, not of the header).
    #[error("idem must be 1 to 255 visible ASCII characters")]
    InvalidBody,
    /// The header and the body field `idem` differ.
    #[error("the Idempotency-Key header and the body field idem differ")]
    Conflicting,
}

/// A validated idempotency key.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct IdempotencyKey(String);

impl IdempotencyKey {
    /// Validates a raw key: 1 to 255 visible ASCII characters (`!` to `~`).
    ///
    /// # Errors
    /// [`KeyError::Invalid`].
    pub fn parse(raw: &str) -> Result<Self, KeyError> {
        let ok = (1..=255).contains(&raw.len()) && raw.bytes().all(|b| (0x21..=0x7e).contains(&b));
        if ok {
            Ok(IdempotencyKey(raw.to_owned()))
        } else {
            Err(KeyError::Invalid)
        }
    }

    /// Parses the `Idempotency-Key` header: a bare token or an RFC 8941 quoted string
    /// (`"abc"`, with `\"` and `\\` escapes).
    ///
    /// # Errors
    /// [`KeyError::Invalid`].
    pub fn from_header(value: &str) -> Result<Self, KeyError> {
        let value = value.trim_matches(' ');
        match value.strip_prefix('"') {
            None => Self::parse(value),
            Some(rest) => {
                let inner = rest.strip_suffix('"').ok_or(KeyError::Invalid)?;
                let mut out = String::with_capacity(inner.len());
                let mut chars = inner.chars();
                while let Some(c) = chars.next() {
                    match c {
                        '\\' => match chars.next() {
                            Some(e @ ('"' | '\\')) => out.push(e),
                            _ => return Err(KeyError::Invalid),
                        },
                        '"' => return Err(KeyError::Invalid),
                        c => out.push(c),
                    }
                }
                Self::parse(&out)
            }
        }
    }

    /// The key from the header and/or a body field: at least one, and equal when both.
    ///
    /// # Errors
    /// [`KeyError::Conflicting`], [`KeyError::Invalid`] (the header) or [`KeyError::InvalidBody`].
    /// `Ok(None)` when neither was given.
    pub fn from_header_or_body(header: Option<&str>, body: Option<&str>) -> Result<Option<Self>, KeyError> {
        let header = header.map(Self::from_header).transpose()?;
        let body = body.map(|b| Self::parse(b).map_err(|_| KeyError::InvalidBody)).transpose()?;
        match (header, body) {
            (Some(h), Some(b)) if h != b => Err(KeyError::Conflicting),
            (Some(h), _) => Ok(Some(h)),
            (None, b) => Ok(b),
        }
    }

    /// The key.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Where a key lives: organisation + mode + operation.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct KeyScope {
    /// The organisation.
    pub org_id: OrgId,
    /// The mode.
    pub mode: Mode,
    /// The operation, e.g. `POST /partner/stk`.
    pub operation: String,
}

/// SHA-256 (hex) of the method, path and canonical body of a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fingerprint(String);

impl Fingerprint {
    /// Fingerprints a request. `canonical_body` must already be canonical (e.g. JSON with sorted keys).
    pub fn of(method: &str, path: &str, canonical_body: &[u8]) -> Self {
        let mut h = Sha256::new();
        h.update(method.as_bytes());
        h.update(b"\n");
        h.update(path.as_bytes());
        h.update(b"\n");
        h.update(canonical_body);
        Fingerprint(hex::encode(h.finalize()))
    }

    /// Wraps a stored fingerprint.
    pub fn from_stored(s: String) -> Self {
        Fingerprint(s)
    }

    /// The hex digest.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// What a key's request did, kept with the key in the effect's own transaction, so that a
/// repeat is answered with the same result whatever has happened since.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The use case's result as the service snapshots it (a versioned format of the service's,
    /// which it reads back into the result on a repeat, for the front end to render again).
    Snapshot(Vec<u8>),
    /// What a version of Malipo before snapshots kept: a front end's own answer, handed back to
    /// that front end as it is. Written no more; read until such keys are purged.
    Earlier(Vec<u8>),
}

/// A key as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdempotencyRecord {
    /// The request it was claimed for.
    pub fingerprint: Fingerprint,
    /// What it did, once the effect committed (`None` while in flight).
    pub outcome: Option<Outcome>,
    /// When claimed.
    pub created_at: Timestamp,
}

/// What to do with a request whose key already has a record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Same request, finished: answer with what it did.
    Replay(Outcome),
    /// Same key, different request.
    Reused,
    /// Same request, still running.
    InProgress,
}

impl IdempotencyRecord {
    /// Decides how to answer a request with `fingerprint` that found this record.
    pub fn decide(&self, fingerprint: &Fingerprint) -> Decision {
        if &self.fingerprint != fingerprint {
            return Decision::Reused;
        }
        match &self.outcome {
            Some(o) => Decision::Replay(o.clone()),
            None => Decision::InProgress,
        }
    }
}

/// How long keys are kept at least.
pub const RETENTION_HOURS: i64 = 24;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_visible_ascii_up_to_255() {
        assert!(IdempotencyKey::parse("a").is_ok());
        assert!(IdempotencyKey::parse(&"k".repeat(255)).is_ok());
        assert!(IdempotencyKey::parse("~!#$%&'()*+,-./:;<=>?@[]^_`{|}").is_ok());
        for bad in [String::new(), "k".repeat(256), "has space".into(), "tab\t".into(), "é".into(), "\u{7f}".into()] {
            assert_eq!(IdempotencyKey::parse(&bad), Err(KeyError::Invalid), "{bad:?}");
        }
    }

    #[test]
    fn header_takes_tokens_and_sf_strings() {
        assert_eq!(IdempotencyKey::from_header("abc").map(|k| k.0), Ok("abc".into()));
        assert_eq!(IdempotencyKey::from_header("\"abc\"").map(|k| k.0), Ok("abc".into()));
        assert_eq!(IdempotencyKey::from_header(r#""a\"b\\c""#).map(|k| k.0), Ok(r#"a"b\c"#.into()));
        assert_eq!(IdempotencyKey::from_header("\"abc"), Err(KeyError::Invalid));
        assert_eq!(IdempotencyKey::from_header(r#""a\x""#), Err(KeyError::Invalid));
        assert_eq!(IdempotencyKey::from_header("\"\""), Err(KeyError::Invalid));
    }

    #[test]
    fn header_and_body_must_agree() {
        assert_eq!(IdempotencyKey::from_header_or_body(None, None), Ok(None));
        assert_eq!(IdempotencyKey::from_header_or_body(Some("a"), Some("a")).map(|k| k.map(|k| k.0)), Ok(Some("a".into())));
        assert_eq!(IdempotencyKey::from_header_or_body(Some("\"a\""), Some("a")).map(|k| k.map(|k| k.0)), Ok(Some("a".into())));
        assert_eq!(IdempotencyKey::from_header_or_body(Some("a"), Some("b")), Err(KeyError::Conflicting));
        assert_eq!(IdempotencyKey::from_header_or_body(None, Some("b")).map(|k| k.map(|k| k.0)), Ok(Some("b".into())));
    }

    #[test]
    fn fingerprints_cover_method_path_and_body() {
        let f = Fingerprint::of("POST", "/partner/stk", b"{}");
        assert_eq!(f, Fingerprint::of("POST", "/partner/stk", b"{}"));
        assert_ne!(f, Fingerprint::of("POST", "/partner/stk", b"{\"a\":1}"));
        assert_ne!(f, Fingerprint::of("POST", "/payouts", b"{}"));
        assert_ne!(f, Fingerprint::of("DELETE", "/partner/stk", b"{}"));
    }

    #[test]
    fn decisions() {
        let f = Fingerprint::of("POST", "/x", b"1");
        let done = IdempotencyRecord {
            fingerprint: f.clone(),
            outcome: Some(Outcome::Snapshot(b"ok".to_vec())),
            created_at: Timestamp::from_micros(0),
        };
        assert_eq!(done.decide(&f), Decision::Replay(Outcome::Snapshot(b"ok".to_vec())));
        assert_eq!(done.decide(&Fingerprint::of("POST", "/x", b"2")), Decision::Reused);
        let running = IdempotencyRecord { outcome: None, ..done };
        assert_eq!(running.decide(&f), Decision::InProgress);
    }
}
