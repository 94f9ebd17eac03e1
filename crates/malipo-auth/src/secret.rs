//! Generating and hashing secrets and tokens.

use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::{Algorithm, Argon2, Params, Version};
use malipo_core::Mode;
use rand::distributions::Alphanumeric;
use rand::rngs::OsRng;
use rand::Rng;
use sha2::{Digest, Sha256};
use std::sync::Arc;

fn random_alnum(len: usize) -> String {
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

/// A new opaque bearer token (~256 bits).
pub fn generate_token() -> String {
    format!("mlp_{}", random_alnum(43))
}

/// The digest under which a token is stored: a leaked database yields no usable token.
pub fn token_digest(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// Argon2id hashing of client secrets (and, later, PINs).
///
/// Hashes run on a dedicated pool of one thread per core: running more at once only adds latency,
/// and each Argon2id run allocates its memory cost (19 MiB), which glibc keeps in the arena of the
/// thread that freed it. Confined to a few threads, that memory is bounded (measured: peak RSS
/// 287 MB when every blocking thread hashed under a burst of token requests; see
/// docs/performance.md).
#[derive(Clone)]
pub struct SecretHasher {
    argon: Argon2<'static>,
    dummy: String,
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

impl SecretHasher {
    /// OWASP's Argon2id baseline: 19 MiB, 2 iterations, 1 lane.
    ///
    /// # Errors
    /// [`HashError`] if the parameters are refused.
    pub fn new() -> Result<Self, HashError> {
        Self::with_params(19 * 1024, 2, 1)
    }

    /// Explicit parameters (memory KiB, iterations, lanes).
    ///
    /// # Errors
    /// [`HashError`] if the parameters are refused.
    pub fn with_params(m_cost: u32, t_cost: u32, p_cost: u32) -> Result<Self, HashError> {
        let params = Params::new(m_cost, t_cost, p_cost, None).map_err(|e| HashError(e.to_string()))?;
        let argon = Argon2::new(Algorithm::Argon2id, Version::V0x13, params);
        let cores = std::thread::available_parallelism().map_or(2, std::num::NonZeroUsize::get);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(cores)
            .thread_name(|i| format!("argon2-{i}"))
            .build()
            .map_err(|e| HashError(e.to_string()))?;
        let mut hasher = SecretHasher { argon, dummy: String::new(), pool: Arc::new(pool) };
        hasher.dummy = hasher.hash("malipo-dummy-secret-for-timing")?;
        Ok(hasher)
    }

    /// A PHC string (`$argon2id$v=19$…`) with a fresh random salt.
    ///
    /// # Errors
    /// [`HashError`].
    pub fn hash(&self, secret: &str) -> Result<String, HashError> {
        let salt = SaltString::generate(&mut OsRng);
        self.pool
            .install(|| self.argon.hash_password(secret.as_bytes(), &salt).map(|h| h.to_string()).map_err(|e| HashError(e.to_string())))
    }

    /// Whether `secret` matches the stored hash. `None` (an unknown client) still spends the same
    /// time on a dummy hash, so unknown and wrong secrets are indistinguishable by timing.
    pub fn verify(&self, secret: &str, stored: Option<&str>) -> bool {
        let (phc, real) = match stored {
            Some(s) => (s, true),
            None => (self.dummy.as_str(), false),
        };
        let ok = PasswordHash::new(phc)
            .map(|h| self.pool.install(|| self.argon.verify_password(secret.as_bytes(), &h).is_ok()))
            .unwrap_or(false);
        ok && real
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn hashes_verify_only_the_right_secret() {
        let h = SecretHasher::with_params(1024, 1, 1).unwrap_or_else(|e| panic!("{e}"));
        let stored = h.hash("cs_test_abc").unwrap_or_else(|e| panic!("{e}"));
        assert!(stored.starts_with("$argon2id$"));
        assert!(!stored.contains("cs_test_abc"));
        assert!(h.verify("cs_test_abc", Some(&stored)));
        assert!(!h.verify("cs_test_abd", Some(&stored)));
        assert!(!h.verify("cs_test_abc", None), "unknown client never verifies");
        assert!(!h.verify("x", Some("not a phc string")));
    }

    #[test]
    fn hashing_runs_on_the_dedicated_pool() {
        let h = SecretHasher::with_params(1024, 1, 1).unwrap_or_else(|e| panic!("{e}"));
        let threads: Vec<_> = (0..8)
            .map(|i| {
                let h = h.clone();
                std::thread::spawn(move || {
                    let stored = h.hash(&format!("s{i}")).unwrap_or_default();
                    h.verify(&format!("s{i}"), Some(&stored)) && !h.verify("other", Some(&stored))
                })
            })
            .collect();
        for t in threads {
            assert_eq!(t.join().ok(), Some(true));
        }
        let name = h.pool.install(|| std::thread::current().name().map(str::to_owned));
        assert!(name.is_some_and(|n| n.starts_with("argon2-")), "work runs on the pool's threads");
        assert!(h.pool.current_num_threads() >= 1);
    }

    #[test]
    fn token_digest_is_stable_sha256() {
        assert_eq!(token_digest("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        assert_ne!(generate_token(), generate_token());
    }
}
