//! The second factor: TOTP (RFC 6238: 6 digits, 30 s, SHA-1, as every authenticator app
//! expects) and one-time recovery codes.
//!
//! A code is accepted within one step either side of the server's clock, and only once: each
//! person's last accepted step is stored, and a code of that step or an earlier one is refused
//! (RFC 6238 section 5.2), so a code seen over a shoulder or in a proxy log cannot be replayed.

use rand::rngs::OsRng;
use rand::seq::SliceRandom;
use rand::RngCore;
use totp_rs::{Algorithm, Builder, Totp};

/// The issuer shown in authenticator apps.
pub const ISSUER: &str = "Malipo";
/// Seconds per TOTP step.
pub const STEP_SECONDS: i64 = 30;
/// Recovery codes issued at enrolment.
pub const RECOVERY_CODES: usize = 10;

/// A TOTP secret: 20 random bytes (160 bits, RFC 4226's recommendation).
#[derive(Clone, PartialEq, Eq)]
pub struct TotpSecret(Vec<u8>);

impl std::fmt::Debug for TotpSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TotpSecret(..)")
    }
}

/// The secret could not make a TOTP (wrong length, or an account name with `:`).
#[derive(Debug, thiserror::Error)]
#[error("cannot make a TOTP: {0}")]
pub struct TotpError(String);

impl TotpSecret {
    /// A new random secret.
    pub fn generate() -> Self {
        let mut bytes = vec![0_u8; 20];
        OsRng.fill_bytes(&mut bytes);
        TotpSecret(bytes)
    }

    /// A secret read back from storage.
    pub fn from_bytes(bytes: Vec<u8>) -> Self {
        TotpSecret(bytes)
    }

    /// The secret a person typed from its setup key (base32, spaces and case ignored), as an
    /// authenticator app reads it.
    pub fn from_setup_key(key: &str) -> Option<Self> {
        let compact: String = key.chars().filter(|c| !c.is_whitespace()).map(|c| c.to_ascii_uppercase()).collect();
        base32::decode(base32::Alphabet::Rfc4648 { padding: false }, &compact).map(TotpSecret)
    }

    /// The raw bytes (to seal for storage).
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// The setup key as a person types it into an app: base32 without padding, in groups of
    /// four.
    pub fn setup_key(&self) -> String {
        let text = base32::encode(base32::Alphabet::Rfc4648 { padding: false }, &self.0);
        text.as_bytes().chunks(4).map(|c| String::from_utf8_lossy(c).into_owned()).collect::<Vec<_>>().join(" ")
    }

    fn totp(&self, account: &str) -> Result<Totp, TotpError> {
        Builder::new()
            .with_algorithm(Algorithm::SHA1)
            .with_digits(6)
            .with_skew(1)
            .with_step_duration(STEP_SECONDS.unsigned_abs())
            .with_secret(self.0.clone())
            .with_account_name(account.replace(':', ""))
            .with_issuer(Some(ISSUER))
            .build()
            .map_err(|e| TotpError(e.to_string()))
    }

    /// The `otpauth://totp/...` URI that the QR code carries.
    ///
    /// # Errors
    /// [`TotpError`].
    pub fn otpauth_uri(&self, account: &str) -> Result<String, TotpError> {
        self.totp(account)?.to_url().map_err(|e| TotpError(e.to_string()))
    }

    /// The step of `code` if it is right at `unix_seconds` (within one step either side) and
    /// newer than `last_step`, the last step this person's codes were accepted at.
    pub fn accept(&self, code: &str, unix_seconds: i64, last_step: i64) -> Option<i64> {
        let code: String = code.chars().filter(|c| !c.is_whitespace()).collect();
        if code.len() != 6 || !code.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let totp = self.totp("x").ok()?;
        let now = u64::try_from(unix_seconds).ok()?;
        let step = i64::try_from(totp.check(&code, now)?).ok()?;
        (step > last_step).then_some(step)
    }

    /// The code of the step holding `unix_seconds` (what an authenticator app shows then; tests
    /// and the browser journeys compute codes with it).
    ///
    /// # Errors
    /// [`TotpError`].
    pub fn code_at(&self, unix_seconds: i64) -> Result<String, TotpError> {
        Ok(self.totp("x")?.generate(u64::try_from(unix_seconds).unwrap_or(0)).to_string())
    }
}

/// Ten new recovery codes (`xxxxx-xxxxx`, about 49.5 random bits each, from an alphabet without
/// look-alike characters).
pub fn generate_recovery_codes() -> Vec<String> {
    const ALPHABET: &[u8] = b"abcdefghjkmnpqrstuvwxyz23456789";
    (0..RECOVERY_CODES)
        .map(|_| {
            let chars: String = (0..10).filter_map(|_| ALPHABET.choose(&mut OsRng)).map(|b| char::from(*b)).collect();
            format!("{}-{}", &chars[..5], &chars[5..])
        })
        .collect()
}

/// A recovery code as compared: lower case, without spaces and hyphens.
pub fn normalise_recovery_code(code: &str) -> String {
    code.chars().filter(|c| c.is_ascii_alphanumeric()).map(|c| c.to_ascii_lowercase()).collect()
}

/// Whether text typed in the "Authentication code" field looks like a recovery code rather
/// than a six-digit TOTP code.
pub fn is_recovery_code(code: &str) -> bool {
    normalise_recovery_code(code).len() == 10
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_code_is_accepted_within_one_step_and_only_once() {
        let s = TotpSecret::generate();
        let t = 1_764_000_015_i64;
        let code = s.code_at(t).unwrap_or_default();
        let step = s.accept(&code, t, 0);
        assert_eq!(step, Some(t / 30));
        assert_eq!(s.accept(&code, t, t / 30), None, "replayed in its own step");
        assert_eq!(s.accept(&code, t + 30, 0), Some(t / 30), "one step late is still accepted");
        assert_eq!(s.accept(&code, t + 60, 0), None, "two steps late is not");
        assert_eq!(s.accept(&code, t - 30, 0), Some(t / 30), "one step early is accepted");
        assert_eq!(s.accept(&format!("{} {}", &code[..3], &code[3..]), t, 0), Some(t / 30), "spaces are ignored");
        assert_eq!(s.accept("12345", t, 0), None);
        assert_eq!(s.accept("abcdef", t, 0), None);
        let next = s.code_at(t + 30).unwrap_or_default();
        assert_eq!(s.accept(&next, t + 30, t / 30), Some(t / 30 + 1), "the next step's code after this one");
    }

    #[test]
    fn rfc_6238_test_vector() {
        // RFC 6238 appendix B, SHA-1: the secret "12345678901234567890" at 59 s gives 94287082
        // (8 digits); six digits are its last six.
        let s = TotpSecret::from_bytes(b"12345678901234567890".to_vec());
        assert_eq!(s.code_at(59).unwrap_or_default(), "287082");
        assert_eq!(s.code_at(1_111_111_109).unwrap_or_default(), "081804");
    }

    #[test]
    fn the_uri_and_setup_key_carry_the_same_secret() {
        let s = TotpSecret::from_bytes(b"12345678901234567890".to_vec());
        assert_eq!(s.setup_key(), "GEZD GNBV GY3T QOJQ GEZD GNBV GY3T QOJQ");
        assert_eq!(TotpSecret::from_setup_key("gezd gnbv gy3t qojq GEZDGNBVGY3TQOJQ"), Some(s.clone()));
        let uri = s.otpauth_uri("amina@shop.example").unwrap_or_default();
        assert!(uri.starts_with("otpauth://totp/Malipo:amina%40shop.example?"), "{uri}");
        assert!(uri.contains("secret=GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ") && uri.contains("issuer=Malipo"), "{uri}");
    }

    #[test]
    fn recovery_codes_are_ten_distinct_and_normalise() {
        let codes = generate_recovery_codes();
        assert_eq!(codes.len(), 10);
        let mut unique = codes.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), 10);
        assert!(codes.iter().all(|c| c.len() == 11 && c.as_bytes()[5] == b'-'));
        assert_eq!(normalise_recovery_code(" ABCDE-fghjk "), "abcdefghjk");
        assert!(is_recovery_code("abcde-fghjk") && !is_recovery_code("123456"));
    }
}
