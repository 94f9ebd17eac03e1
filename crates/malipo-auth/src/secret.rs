//! Generating and hashing secrets and tokens.

use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::{Algorithm, Argon2, Params, Version};
use malipo_core::Mode;
use rand::distributions::Alphanumeric;
use rand::rngs::OsRng;
use rand::Rng;
use sha2::{Digest, Sha256};
use std::sync::{Arc, Condvar, Mutex, PoisonError};

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

/// Bounds how many hashes run at once. Each Argon2id run holds its memory cost (19 MiB) and a
/// core; running more at once than there are cores only adds memory (glibc keeps each thread's
/// freed blocks in its own arena) and latency.
#[derive(Debug)]
struct Permits {
    free: Mutex<usize>,
    freed: Condvar,
}

impl Permits {
    fn new(n: usize) -> Self {
        Permits { free: Mutex::new(n.max(1)), freed: Condvar::new() }
    }

    fn run<T>(&self, f: impl FnOnce() -> T) -> T {
        {
            let mut free = self.free.lock().unwrap_or_else(PoisonError::into_inner);
            while *free == 0 {
                free = self.freed.wait(free).unwrap_or_else(PoisonError::into_inner);
            }
            *free -= 1;
        }
        let out = f();
        *self.free.lock().unwrap_or_else(PoisonError::into_inner) += 1;
        self.freed.notify_one();
        out
    }
}

/// Argon2id hashing of client secrets (and, later, PINs), at most one hash per core at a time.
#[derive(Clone)]
pub struct SecretHasher {
    argon: Argon2<'static>,
    dummy: String,
    permits: Arc<Permits>,
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
        let mut hasher = SecretHasher { argon, dummy: String::new(), permits: Arc::new(Permits::new(cores)) };
        hasher.dummy = hasher.hash("malipo-dummy-secret-for-timing")?;
        Ok(hasher)
    }

    /// A PHC string (`$argon2id$v=19$…`) with a fresh random salt.
    ///
    /// # Errors
    /// [`HashError`].
    pub fn hash(&self, secret: &str) -> Result<String, HashError> {
        let salt = SaltString::generate(&mut OsRng);
        self.permits.run(|| self.argon.hash_password(secret.as_bytes(), &salt).map(|h| h.to_string()).map_err(|e| HashError(e.to_string())))
    }

    /// Whether `secret` matches the stored hash. `None` (an unknown client) still spends the same
    /// time on a dummy hash, so unknown and wrong secrets are indistinguishable by timing.
    pub fn verify(&self, secret: &str, stored: Option<&str>) -> bool {
        let (phc, real) = match stored {
            Some(s) => (s, true),
            None => (self.dummy.as_str(), false),
        };
        let ok =
            PasswordHash::new(phc).map(|h| self.permits.run(|| self.argon.verify_password(secret.as_bytes(), &h).is_ok())).unwrap_or(false);
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
    fn concurrent_hashing_is_bounded() {
        let permits = Arc::new(Permits::new(2));
        let running = Arc::new(Mutex::new((0_usize, 0_usize)));
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let (permits, running) = (permits.clone(), running.clone());
                std::thread::spawn(move || {
                    permits.run(|| {
                        {
                            let mut r = running.lock().unwrap_or_else(PoisonError::into_inner);
                            r.0 += 1;
                            r.1 = r.1.max(r.0);
                        }
                        std::thread::sleep(std::time::Duration::from_millis(20));
                        running.lock().unwrap_or_else(PoisonError::into_inner).0 -= 1;
                    });
                })
            })
            .collect();
        for t in threads {
            assert!(t.join().is_ok());
        }
        let (now, peak) = *running.lock().unwrap_or_else(PoisonError::into_inner);
        assert_eq!((now, peak), (0, 2), "never more than two at once, and both permits used");
    }

    #[test]
    fn token_digest_is_stable_sha256() {
        assert_eq!(token_digest("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        assert_ne!(generate_token(), generate_token());
    }
}
