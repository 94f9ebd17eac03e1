//! Generating and hashing secrets and tokens.

use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::{Algorithm, Argon2, Params, Version};
use base64::engine::general_purpose::STANDARD_NO_PAD as B64;
use base64::Engine;
use hmac::{Hmac, Mac};
use malipo_core::Mode;
use rand::distributions::Alphanumeric;
use rand::rngs::OsRng;
use rand::Rng;
use sha2::{Digest, Sha256};
use std::sync::Arc;

pub(crate) fn random_alnum(len: usize) -> String {
    OsRng.sample_iter(&Alphanumeric).take(len).map(char::from).collect()
}

/// A new client id: `ck_test_…` or `ck_live_…`.
pub fn generate_client_id(mode: Mode) -> String {
    format!("ck_{}_{}", mode, random_alnum(24))
}

/// A new client secret: `cs_test_…` or `cs_live_…` with 40 random alphanumerics (~238 bits).
pub fn generate_secret(mode: Mode) -> String {
    format!("cs_{}_{}", mode, random_alnum(40))
}

/// The token of an `Authorization` header's value, `Bearer <token>` (RFC 6750; the scheme in any
/// case), as every front door that takes bearer tokens reads it; `None` for any other value.
pub fn bearer_token(authorization: &str) -> Option<&str> {
    let (scheme, token) = authorization.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// A new opaque bearer token (~256 bits).
pub fn generate_token() -> String {
    format!("mlp_{}", random_alnum(43))
}

/// The digest under which a token is stored: a leaked database yields no usable token.
pub fn token_digest(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// The prefix of a keyed hash: `$malipo-hmac-sha256$v=1$<salt>$<mac>` (base64, no padding).
const KEYED: &str = "$malipo-hmac-sha256$v=1$";

/// Keyed, salted hashes of client secrets and PINs: HMAC-SHA256 under a server key that is not
/// in the database (derived from the configured key, see `SecretCipher::derive_key`).
///
/// A client secret carries ~238 random bits and needs no slow hash; a 4-digit PIN has 10,000
/// values, so no slow hash could protect it once the database leaks: the key does (a leaked
/// database without the key yields neither), and the PIN attempt counter protects it online.
/// Checking a keyed hash costs microseconds, so wrong secrets cannot be used to load the server.
///
/// Argon2id hashes stored before keyed hashes existed still verify (on a dedicated pool of one
/// thread per core, as they always did: each run allocates its memory cost, and confined to a
/// few threads that memory stays bounded); [`SecretHasher::needs_rehash`] tells the caller to
/// replace one at its next successful use.
#[derive(Clone)]
pub struct SecretHasher {
    key: [u8; 32],
    argon: Argon2<'static>,
    pool: Arc<rayon::ThreadPool>,
}

impl std::fmt::Debug for SecretHasher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SecretHasher").finish_non_exhaustive()
    }
}

/// Hashing failed (bad parameters; never the caller's input).
#[derive(Debug, thiserror::Error)]
#[error("secret hashing failed: {0}")]
pub struct HashError(String);

impl HashError {
    pub(crate) fn new(e: impl std::fmt::Display) -> Self {
        HashError(e.to_string())
    }
}

impl SecretHasher {
    /// Keyed hashes under `key`; stored Argon2id hashes verify with OWASP's baseline (19 MiB,
    /// 2 iterations, 1 lane) as they were made.
    ///
    /// # Errors
    /// [`HashError`] if the pool cannot start.
    pub fn new(key: [u8; 32]) -> Result<Self, HashError> {
        Self::with_params(key, 19 * 1024, 2, 1)
    }

    /// Explicit Argon2id parameters (memory KiB, iterations, lanes) for the stored hashes.
    ///
    /// # Errors
    /// [`HashError`] if the parameters are refused.
    pub fn with_params(key: [u8; 32], m_cost: u32, t_cost: u32, p_cost: u32) -> Result<Self, HashError> {
        let params = Params::new(m_cost, t_cost, p_cost, None).map_err(|e| HashError(e.to_string()))?;
        let argon = Argon2::new(Algorithm::Argon2id, Version::V0x13, params);
        let cores = std::thread::available_parallelism().map_or(2, std::num::NonZeroUsize::get);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(cores)
            .thread_name(|i| format!("argon2-{i}"))
            .build()
            .map_err(|e| HashError(e.to_string()))?;
        Ok(SecretHasher { key, argon, pool: Arc::new(pool) })
    }

    fn mac(&self, salt: &[u8], secret: &str) -> Hmac<Sha256> {
        // HMAC takes keys of any length: this cannot fail.
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.key).unwrap_or_else(|_| unreachable!("HMAC accepts any key length"));
        mac.update(salt);
        mac.update(secret.as_bytes());
        mac
    }

    /// A keyed hash with a fresh random 16-byte salt.
    ///
    /// # Errors
    /// Never in practice (the signature matches the stored-hash formats that could fail).
    pub fn hash(&self, secret: &str) -> Result<String, HashError> {
        let mut salt = [0_u8; 16];
        OsRng.fill(&mut salt);
        let tag = self.mac(&salt, secret).finalize().into_bytes();
        Ok(format!("{KEYED}{}${}", B64.encode(salt), B64.encode(tag)))
    }

    /// An Argon2id PHC string, the format stored before keyed hashes (for tests of the upgrade
    /// path and for reading old databases' fixtures).
    ///
    /// # Errors
    /// [`HashError`].
    pub fn hash_argon2id(&self, secret: &str) -> Result<String, HashError> {
        let salt = SaltString::generate(&mut OsRng);
        self.pool
            .install(|| self.argon.hash_password(secret.as_bytes(), &salt).map(|h| h.to_string()).map_err(|e| HashError(e.to_string())))
    }

    /// Whether `secret` matches the stored hash (keyed, or an older Argon2id one). `None` (an
    /// unknown client) computes a keyed hash all the same and fails.
    pub fn verify(&self, secret: &str, stored: Option<&str>) -> bool {
        let Some(stored) = stored else {
            let _ = self.mac(&[0; 16], secret).finalize();
            return false;
        };
        if let Some(rest) = stored.strip_prefix(KEYED) {
            let Some((salt, tag)) = rest.split_once('$') else { return false };
            let (Ok(salt), Ok(tag)) = (B64.decode(salt), B64.decode(tag)) else { return false };
            // Constant time (`Mac::verify_slice`).
            return self.mac(&salt, secret).verify_slice(&tag).is_ok();
        }
        PasswordHash::new(stored).map(|h| self.pool.install(|| self.argon.verify_password(secret.as_bytes(), &h).is_ok())).unwrap_or(false)
    }

    /// A deterministic keyed digest (hex HMAC-SHA256 under the server key) of a random value
    /// looked up by its digest, such as a recovery code: unlike a plain SHA-256, a leaked
    /// database without the key cannot be searched for codes offline.
    pub fn keyed_digest(&self, value: &str) -> String {
        hex::encode(self.mac(b"malipo: keyed digest v1", value).finalize().into_bytes())
    }

    /// A device token for the account of `email_key`: the value of the cookie a browser gets
    /// when its person signs in, which later proves that this browser signed in as them before
    /// (a random part and its keyed tag; nothing is stored).
    pub fn device_token(&self, email_key: &str) -> String {
        let nonce = random_alnum(22);
        let tag = self.mac(DEVICE, &format!("{email_key}\n{nonce}")).finalize().into_bytes();
        format!("mld_{nonce}.{}", B64.encode(tag))
    }

    /// Whether `token` is a device token this server made for the account of `email_key`
    /// (compared in constant time).
    pub fn trusts_device(&self, email_key: &str, token: &str) -> bool {
        let Some((nonce, tag)) = token.strip_prefix("mld_").and_then(|t| t.split_once('.')) else { return false };
        let Ok(tag) = B64.decode(tag) else { return false };
        self.mac(DEVICE, &format!("{email_key}\n{nonce}")).verify_slice(&tag).is_ok()
    }

    /// Whether a stored hash is of an older format, to be replaced by [`SecretHasher::hash`] at
    /// its next successful use.
    pub fn needs_rehash(stored: &str) -> bool {
        !stored.starts_with(KEYED)
    }
}

/// The salt of device tokens' tags.
const DEVICE: &[u8] = b"malipo: device v1";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bearer_token_is_read_from_its_header_in_any_case_and_nothing_else_is() {
        assert_eq!(bearer_token("Bearer mlp_abc"), Some("mlp_abc"));
        assert_eq!(bearer_token("bearer  mlp_abc "), Some("mlp_abc"));
        for other in ["Basic dXNlcjpwYXNz", "Bearer", "Bearer  ", "mlp_abc", ""] {
            assert_eq!(bearer_token(other), None, "{other:?}");
        }
    }

    #[test]
    fn a_device_token_is_trusted_for_its_account_only() {
        let h = SecretHasher::with_params([7; 32], 1024, 1, 1).unwrap_or_else(|e| panic!("{e}"));
        let t = h.device_token("amina@shop.example");
        assert!(t.starts_with("mld_"), "{t}");
        assert!(h.trusts_device("amina@shop.example", &t));
        assert!(!h.trusts_device("baraka@shop.example", &t), "another account");
        let other = SecretHasher::with_params([8; 32], 1024, 1, 1).unwrap_or_else(|e| panic!("{e}"));
        assert!(!other.trusts_device("amina@shop.example", &t), "another server key");
        let (nonce, _) = t.split_once('.').unwrap_or_default();
        assert!(!h.trusts_device("amina@shop.example", &format!("{nonce}.AAAA")), "a forged tag");
        assert!(!h.trusts_device("amina@shop.example", "mld_x"), "no tag");
        assert_ne!(t, h.device_token("amina@shop.example"), "a new nonce each time");
    }

    #[test]
    fn generated_credentials_have_the_contract_shape() {
        let id = generate_client_id(Mode::Test);
        let secret = generate_secret(Mode::Live);
        assert!(id.starts_with("ck_test_") && id.len() == 32);
        assert!(secret.starts_with("cs_live_") && secret.len() == 48);
        for s in [&id, &secret] {
            assert!(s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'), "{s}");
        }
        assert_ne!(generate_secret(Mode::Test), generate_secret(Mode::Test));
    }

    fn hasher(key: u8) -> SecretHasher {
        SecretHasher::with_params([key; 32], 1024, 1, 1).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn keyed_hashes_verify_only_the_right_secret_under_the_right_key() {
        let h = hasher(7);
        let stored = h.hash("cs_test_abc").unwrap_or_else(|e| panic!("{e}"));
        assert!(stored.starts_with("$malipo-hmac-sha256$v=1$"), "{stored}");
        assert!(!stored.contains("cs_test_abc"));
        assert_ne!(stored, h.hash("cs_test_abc").unwrap_or_default(), "salted");
        assert!(h.verify("cs_test_abc", Some(&stored)));
        assert!(!h.verify("cs_test_abd", Some(&stored)));
        assert!(!hasher(8).verify("cs_test_abc", Some(&stored)), "another server key verifies nothing");
        assert!(!h.verify("cs_test_abc", None), "unknown client never verifies");
        for broken in ["not a hash", "$malipo-hmac-sha256$v=1$", "$malipo-hmac-sha256$v=1$!!$!!", &stored[..stored.len() - 2]] {
            assert!(!h.verify("cs_test_abc", Some(broken)), "{broken}");
        }
        assert!(!SecretHasher::needs_rehash(&stored));
    }

    #[test]
    fn argon2id_hashes_still_verify_and_ask_to_be_replaced() {
        let h = hasher(7);
        let old = h.hash_argon2id("4826").unwrap_or_else(|e| panic!("{e}"));
        assert!(old.starts_with("$argon2id$"));
        assert!(h.verify("4826", Some(&old)) && !h.verify("4827", Some(&old)));
        assert!(hasher(9).verify("4826", Some(&old)), "an Argon2id hash does not depend on the key");
        assert!(SecretHasher::needs_rehash(&old));
        let name = h.pool.install(|| std::thread::current().name().map(str::to_owned));
        assert!(name.is_some_and(|n| n.starts_with("argon2-")), "Argon2id runs on the pool's threads");
    }

    #[test]
    fn token_digest_is_stable_sha256() {
        assert_eq!(token_digest("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        assert_ne!(generate_token(), generate_token());
    }
}
