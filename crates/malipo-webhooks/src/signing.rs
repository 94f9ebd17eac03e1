//! Standard Webhooks signatures (standardwebhooks.com): `HMAC-SHA256(key, "{id}.{timestamp}.{body}")`,
//! base64, prefixed `v1,`; several space-separated during a secret rotation.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use hmac::{Hmac, Mac};
use rand::RngCore;
use sha2::Sha256;
use subtle::ConstantTimeEq;

type HmacSha256 = Hmac<Sha256>;

/// Receivers reject timestamps further than this from their clock.
pub const TOLERANCE_SECONDS: i64 = 5 * 60;

const PREFIX: &str = "whsec_";

/// The secret was not `whsec_` followed by base64 of 24 to 64 bytes.
#[derive(Debug, thiserror::Error, PartialEq, Eq, Clone)]
#[error("a webhook secret is `whsec_` followed by the base64 of 24 to 64 bytes")]
pub struct SecretError;

/// A signing secret: the key bytes behind `whsec_…`.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(Vec<u8>);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(…)")
    }
}

impl Secret {
    /// A new secret of 32 random bytes.
    pub fn generate() -> Self {
        let mut key = vec![0_u8; 32];
        rand::rngs::OsRng.fill_bytes(&mut key);
        Secret(key)
    }

    /// Parses `whsec_<base64>` (24 to 64 bytes of key).
    ///
    /// # Errors
    /// [`SecretError`].
    pub fn parse(text: &str) -> Result<Self, SecretError> {
        let key = B64.decode(text.strip_prefix(PREFIX).ok_or(SecretError)?).map_err(|_| SecretError)?;
        if (24..=64).contains(&key.len()) {
            Ok(Secret(key))
        } else {
            Err(SecretError)
        }
    }

    /// From raw key bytes (24 to 64).
    ///
    /// # Errors
    /// [`SecretError`].
    pub fn from_bytes(key: Vec<u8>) -> Result<Self, SecretError> {
        if (24..=64).contains(&key.len()) {
            Ok(Secret(key))
        } else {
            Err(SecretError)
        }
    }

    /// The key bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// `whsec_<base64>`, as shown to the integrator.
    pub fn to_whsec(&self) -> String {
        format!("{PREFIX}{}", B64.encode(&self.0))
    }

    fn mac(&self, parts: &[&[u8]]) -> [u8; 32] {
        // HMAC accepts keys of any length.
        let mut mac = <HmacSha256 as Mac>::new_from_slice(&self.0).unwrap_or_else(|_| unreachable_hmac());
        for p in parts {
            mac.update(p);
        }
        mac.finalize().into_bytes().into()
    }
}

#[allow(clippy::panic)]
fn unreachable_hmac() -> HmacSha256 {
    // `new_from_slice` never fails for HMAC; keep a total function without unwrap.
    <HmacSha256 as Mac>::new_from_slice(b"k").unwrap_or_else(|_| panic!("HMAC accepts any key length"))
}

/// `v1,<base64 HMAC-SHA256(key, "{id}.{timestamp}.{body}")>`.
pub fn sign(secret: &Secret, id: &str, timestamp: i64, body: &[u8]) -> String {
    let ts = timestamp.to_string();
    let mac = secret.mac(&[id.as_bytes(), b".", ts.as_bytes(), b".", body]);
    format!("v1,{}", B64.encode(mac))
}

/// The `webhook-signature` header: one signature per secret, space-separated (the current secret
/// and, during a rotation, the previous one).
pub fn signature_header(secrets: &[&Secret], id: &str, timestamp: i64, body: &[u8]) -> String {
    secrets.iter().map(|s| sign(s, id, timestamp, body)).collect::<Vec<_>>().join(" ")
}

/// The body member `signature` (contract section 12): the same algorithm over
/// `"{id}.{timestamp}.{event}.{object id}.{amount}.{currency}.{state}"`, empty parts for absent values.
#[allow(clippy::too_many_arguments)]
pub fn body_signature(
    secret: &Secret,
    id: &str,
    timestamp: i64,
    event: &str,
    object_id: &str,
    amount: Option<&str>,
    currency: Option<&str>,
    state: Option<&str>,
) -> String {
    let text = format!("{id}.{timestamp}.{event}.{object_id}.{}.{}.{}", amount.unwrap_or(""), currency.unwrap_or(""), state.unwrap_or(""));
    let mac = secret.mac(&[text.as_bytes()]);
    format!("v1,{}", B64.encode(mac))
}

/// Why a delivery did not verify.
#[derive(Debug, thiserror::Error, PartialEq, Eq, Clone, Copy)]
pub enum VerifyError {
    /// A header was missing or malformed.
    #[error("missing or malformed webhook headers")]
    Headers,
    /// The timestamp is more than five minutes from now.
    #[error("timestamp outside the tolerance window")]
    Timestamp,
    /// No signature matched.
    #[error("no matching signature")]
    Signature,
}

/// Verifies deliveries as a receiver would (and as the project's own tests do).
#[derive(Clone, Debug)]
pub struct Verifier {
    secret: Secret,
}

impl Verifier {
    /// A verifier for one endpoint secret.
    pub fn new(secret: Secret) -> Self {
        Verifier { secret }
    }

    /// Checks the headers against the raw body at `now` (Unix seconds): the timestamp within
    /// [`TOLERANCE_SECONDS`], and any `v1` signature equal, compared in constant time.
    ///
    /// # Errors
    /// [`VerifyError`].
    pub fn verify(&self, id: &str, timestamp: &str, signatures: &str, body: &[u8], now: i64) -> Result<(), VerifyError> {
        let ts: i64 = timestamp.trim().parse().map_err(|_| VerifyError::Headers)?;
        if id.is_empty() {
            return Err(VerifyError::Headers);
        }
        if now.saturating_sub(ts).saturating_abs() > TOLERANCE_SECONDS {
            return Err(VerifyError::Timestamp);
        }
        let expected = sign(&self.secret, id, ts, body);
        let found = signatures.split(' ').filter(|s| s.starts_with("v1,")).any(|s| bool::from(s.as_bytes().ct_eq(expected.as_bytes())));
        if found {
            Ok(())
        } else {
            Err(VerifyError::Signature)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // The Standard Webhooks specification's test vector.
    const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    const ID: &str = "msg_p5jXN8AQM9LWM0D4loKWxJek";
    const TS: i64 = 1_614_265_330;
    const BODY: &[u8] = br#"{"test": 2432232314}"#;
    const EXPECTED: &str = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";

    fn secret() -> Secret {
        Secret::parse(SECRET).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn standard_webhooks_test_vector() {
        assert_eq!(sign(&secret(), ID, TS, BODY), EXPECTED);
    }

    #[test]
    fn verifier_accepts_the_vector_within_five_minutes_only() {
        let v = Verifier::new(secret());
        assert_eq!(v.verify(ID, "1614265330", EXPECTED, BODY, TS + 300), Ok(()));
        assert_eq!(v.verify(ID, "1614265330", EXPECTED, BODY, TS - 300), Ok(()));
        assert_eq!(v.verify(ID, "1614265330", EXPECTED, BODY, TS + 301), Err(VerifyError::Timestamp));
        assert_eq!(v.verify(ID, "1614265330", EXPECTED, b"{\"test\": 2432232315}", TS), Err(VerifyError::Signature));
        assert_eq!(v.verify("msg_other", "1614265330", EXPECTED, BODY, TS), Err(VerifyError::Signature));
        assert_eq!(v.verify(ID, "soon", EXPECTED, BODY, TS), Err(VerifyError::Headers));
        assert_eq!(v.verify("", "1614265330", EXPECTED, BODY, TS), Err(VerifyError::Headers));
    }

    #[test]
    fn rotation_sends_both_signatures_and_either_verifies() {
        let old = secret();
        let new = Secret::generate();
        let header = signature_header(&[&new, &old], ID, TS, BODY);
        let parts: Vec<&str> = header.split(' ').collect();
        assert_eq!(parts.len(), 2);
        assert_eq!(parts[1], EXPECTED);
        assert_eq!(Verifier::new(old).verify(ID, "1614265330", &header, BODY, TS), Ok(()));
        assert_eq!(Verifier::new(new).verify(ID, "1614265330", &header, BODY, TS), Ok(()));
        assert_eq!(Verifier::new(Secret::generate()).verify(ID, "1614265330", &header, BODY, TS), Err(VerifyError::Signature));
    }

    #[test]
    fn secrets_are_whsec_base64_of_24_to_64_bytes() {
        let s = Secret::generate();
        assert_eq!(s.as_bytes().len(), 32);
        assert!(s.to_whsec().starts_with("whsec_"));
        assert_eq!(Secret::parse(&s.to_whsec()), Ok(s.clone()));
        assert_ne!(Secret::generate(), s);
        assert_eq!(Secret::parse("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"), Err(SecretError));
        assert_eq!(Secret::parse("whsec_!!!"), Err(SecretError));
        assert_eq!(Secret::parse(&format!("whsec_{}", B64.encode([0_u8; 23]))), Err(SecretError));
        assert_eq!(Secret::parse(&format!("whsec_{}", B64.encode([0_u8; 65]))), Err(SecretError));
        assert!(format!("{s:?}").contains('…'), "Debug never prints the key");
    }

    #[test]
    fn body_signature_covers_each_part() {
        let s = secret();
        let base = body_signature(&s, "evt_1", TS, "charge.completed", "ch_1", Some("250.00"), Some("KES"), Some("completed"));
        // Reproducible with any HMAC tool over the documented text.
        let direct = s.mac(&[b"evt_1.1614265330.charge.completed.ch_1.250.00.KES.completed"]);
        assert_eq!(base, format!("v1,{}", B64.encode(direct)));
        assert_ne!(base, body_signature(&s, "evt_1", TS, "charge.completed", "ch_1", Some("250.01"), Some("KES"), Some("completed")));
        assert_ne!(base, body_signature(&s, "evt_1", TS + 1, "charge.completed", "ch_1", Some("250.00"), Some("KES"), Some("completed")));
        let other = body_signature(&s, "evt_2", TS, "bulk_payout.approved", "bp_1", None, None, None);
        let direct = s.mac(&[b"evt_2.1614265330.bulk_payout.approved.bp_1..."]);
        assert_eq!(other, format!("v1,{}", B64.encode(direct)));
    }
}
