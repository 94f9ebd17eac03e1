//! People's passwords: the policy (console contract section 2) and Argon2id hashing.
//!
//! A person's password is low in entropy, unlike an API secret, so it is stored as a slow,
//! memory-hard Argon2id hash. Hashing runs on a pool of one thread per core, so that however many
//! sign-ins arrive at once, at most that many hashes (and their memory) are in flight; and at most
//! [`Passwords::queue`] wait for one, so that a burst beyond what the cores can do answers "not
//! now" at once ([`Busy`]) instead of queueing requests until they time out.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::{Algorithm, Argon2, Params, Version};
use rand::rngs::OsRng;

use crate::secret::HashError;

/// The shortest password accepted, in characters.
pub const MIN_PASSWORD_CHARS: usize = 12;
/// The longest password accepted, in characters (Argon2id takes any length; a bound keeps a
/// megabyte-long "password" from costing more than a sign-in should).
pub const MAX_PASSWORD_CHARS: usize = 128;

/// Why a new password is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PasswordProblem {
    /// Fewer than [`MIN_PASSWORD_CHARS`].
    #[error("must be at least 12 characters")]
    TooShort,
    /// More than [`MAX_PASSWORD_CHARS`].
    #[error("must be at most 128 characters")]
    TooLong,
    /// On the list of common passwords, or the person's own email or name.
    #[error("is too common; choose one that is hard to guess")]
    Common,
    /// Guessed too soon: a pattern, a repetition, a keyboard walk, words that go together, or
    /// the person's own details with a little added.
    #[error("is too easy to guess; use a few unrelated words, or more characters with no pattern")]
    Guessable,
}

/// The least strength estimate accepted (zxcvbn's scale of 0-4): 3 stands for more than about
/// 10^8 guesses, far beyond what the sign-in's failure limits let anyone try online, and
/// costly offline against Argon2id.
const MIN_STRENGTH: zxcvbn::Score = zxcvbn::Score::Three;

/// Checks a new password against the policy: 12 to 128 characters, not a common password
/// (a list of about 100,000, compared case-insensitively), not the person's email or name
/// (`personal`), and a strength estimate (zxcvbn's, which sees patterns, repetitions, keyboard
/// walks, dates, dictionary words and the person's own details) of at least 3 of 4.
///
/// # Errors
/// The [`PasswordProblem`].
pub fn check_password(password: &str, personal: &[&str]) -> Result<(), PasswordProblem> {
    let chars = password.chars().count();
    if chars < MIN_PASSWORD_CHARS {
        return Err(PasswordProblem::TooShort);
    }
    if chars > MAX_PASSWORD_CHARS {
        return Err(PasswordProblem::TooLong);
    }
    let lower = password.to_lowercase();
    if passwords::analyzer::is_common_password(&lower) || passwords::analyzer::is_common_password(password) {
        return Err(PasswordProblem::Common);
    }
    if personal.iter().any(|p| !p.trim().is_empty() && p.trim().to_lowercase() == lower) {
        return Err(PasswordProblem::Common);
    }
    // The person's details, and their email's parts, as words a guesser would try first.
    let mut inputs: Vec<String> = Vec::new();
    for p in personal {
        inputs.push(p.trim().to_lowercase());
        inputs.extend(p.to_lowercase().split(|c: char| !c.is_alphanumeric()).filter(|w| w.chars().count() >= 3).map(str::to_owned));
    }
    let words: Vec<&str> = inputs.iter().map(String::as_str).collect();
    if zxcvbn::zxcvbn(password, &words).score() < MIN_STRENGTH {
        return Err(PasswordProblem::Guessable);
    }
    // The estimate scores words run together with punctuation as random characters: what is
    // left without the person's own words must be strong by itself.
    let without_personal = words.iter().fold(lower.clone(), |rest, w| rest.replace(w, ""));
    if without_personal != lower && zxcvbn::zxcvbn(&without_personal, &words).score() < MIN_STRENGTH {
        return Err(PasswordProblem::Guessable);
    }
    Ok(())
}

/// Too many passwords are being hashed already: try again in a moment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("too many sign-ins at once; try again in a moment")]
pub struct Busy;

/// Argon2id hashing of people's passwords, on a bounded pool.
#[derive(Clone)]
pub struct Passwords {
    argon: Argon2<'static>,
    pool: Arc<rayon::ThreadPool>,
    /// Hashes in flight or waiting.
    pending: Arc<AtomicUsize>,
    /// How many may be in flight or waiting at once.
    queue: usize,
    /// A hash of nothing anyone knows, verified for unknown emails so that a wrong email takes
    /// as long as a wrong password.
    decoy: String,
}

impl std::fmt::Debug for Passwords {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Passwords").field("params", self.argon.params()).finish_non_exhaustive()
    }
}

impl Passwords {
    /// OWASP's baseline for Argon2id: 19 MiB, 2 iterations, 1 lane (`docs/performance.md` has
    /// what a sign-in costs with it).
    ///
    /// # Errors
    /// [`HashError`] if the pool cannot start.
    pub fn new() -> Result<Self, HashError> {
        Self::with_params(19 * 1024, 2, 1)
    }

    /// Explicit parameters (memory KiB, iterations, lanes): tests use cheap ones.
    ///
    /// # Errors
    /// [`HashError`] if the parameters are refused or the pool cannot start.
    pub fn with_params(m_cost: u32, t_cost: u32, p_cost: u32) -> Result<Self, HashError> {
        let params = Params::new(m_cost, t_cost, p_cost, None).map_err(HashError::new)?;
        let argon = Argon2::new(Algorithm::Argon2id, Version::V0x13, params);
        let cores = std::thread::available_parallelism().map_or(2, std::num::NonZeroUsize::get);
        let pool =
            rayon::ThreadPoolBuilder::new().num_threads(cores).thread_name(|i| format!("password-{i}")).build().map_err(HashError::new)?;
        let salt = SaltString::generate(&mut OsRng);
        let decoy = argon.hash_password(crate::secret::generate_token().as_bytes(), &salt).map_err(HashError::new)?.to_string();
        Ok(Passwords { argon, pool: Arc::new(pool), pending: Arc::default(), queue: cores.saturating_mul(8), decoy })
    }

    /// The PHC string of `password` with a fresh salt.
    ///
    /// # Errors
    /// [`HashError`] (never for a policy-checked password in practice).
    pub fn hash(&self, password: &str) -> Result<String, HashError> {
        let salt = SaltString::generate(&mut OsRng);
        self.pool.install(|| self.argon.hash_password(password.as_bytes(), &salt).map(|h| h.to_string()).map_err(HashError::new))
    }

    /// How many hashes may be in flight or waiting at once (eight a core: each takes tens of
    /// milliseconds, so the last waits well under a second).
    pub fn queue(&self) -> usize {
        self.queue
    }

    /// [`Passwords::verify`], unless [`Passwords::queue`] hashes are in flight or waiting
    /// already.
    ///
    /// # Errors
    /// [`Busy`]: nothing was checked.
    pub fn try_verify(&self, password: &str, stored: Option<&str>) -> Result<bool, Busy> {
        if self.pending.fetch_add(1, Ordering::SeqCst) >= self.queue {
            self.pending.fetch_sub(1, Ordering::SeqCst);
            return Err(Busy);
        }
        let right = self.verify(password, stored);
        self.pending.fetch_sub(1, Ordering::SeqCst);
        Ok(right)
    }

    /// Whether `password` matches `stored`. `None` (no such person, or no password yet) verifies
    /// against a decoy hash all the same, so that it takes as long, and fails.
    pub fn verify(&self, password: &str, stored: Option<&str>) -> bool {
        let (hash, real) = match stored {
            Some(s) => (s, true),
            None => (self.decoy.as_str(), false),
        };
        let Ok(parsed) = PasswordHash::new(hash) else { return false };
        // A password over the maximum is compared all the same (it cannot match a stored one,
        // which passed the policy), so its answer takes no less time.
        let ok = self.pool.install(|| self.argon.verify_password(password.as_bytes(), &parsed).is_ok());
        ok && real
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_policy_bounds_length_and_refuses_common_and_personal_passwords() {
        assert_eq!(check_password("short", &[]), Err(PasswordProblem::TooShort));
        assert_eq!(check_password(&"x".repeat(129), &[]), Err(PasswordProblem::TooLong));
        assert_eq!(check_password("password1234", &[]), Err(PasswordProblem::Common));
        assert_eq!(check_password("PASSWORD1234", &[]), Err(PasswordProblem::Common), "case-insensitive");
        assert_eq!(check_password("amina@shop.example", &["Amina@Shop.example"]), Err(PasswordProblem::Common));
        assert_eq!(check_password("correct horse battery", &["a@b.c"]), Ok(()));
        assert_eq!(check_password("ñandú-kiboko-ñ", &[]), Ok(()), "characters, not bytes: 14");
        assert_eq!(check_password(&"é".repeat(11), &[]), Err(PasswordProblem::TooShort));
    }

    #[test]
    fn passwords_a_guesser_tries_early_are_refused_by_their_strength() {
        for weak in [
            "            ",
            "abcabcabcabc",
            "aaaaaaaaaaaa",
            "123456789012",
            "qwertyuiopas",
            "password2026!",
            "amina.njeri.2026",
            "dukaletu1234",
        ] {
            let problem = check_password(weak, &["amina.njeri@dukaletu.example", "Amina Njeri"]);
            assert!(matches!(problem, Err(PasswordProblem::Guessable | PasswordProblem::Common)), "{weak:?}: {problem:?}");
        }
        assert_eq!(check_password("abcabcabcabc", &[]), Err(PasswordProblem::Guessable));
        for strong in ["correct horse battery staple", "kiboko-mvua-taa-7Q", "a long enough passphrase"] {
            assert_eq!(check_password(strong, &["amina@shop.example", "Amina Njeri"]), Ok(()), "{strong:?}");
        }
    }

    #[test]
    fn hashes_verify_the_right_password_only_and_unknown_people_fail() {
        let p = Passwords::with_params(1024, 1, 1).unwrap_or_else(|e| panic!("{e}"));
        let stored = p.hash("correct horse battery").unwrap_or_else(|e| panic!("{e}"));
        assert!(stored.starts_with("$argon2id$v=19$m=1024,t=1,p=1$"), "{stored}");
        assert!(p.verify("correct horse battery", Some(&stored)));
        assert!(!p.verify("correct horse batterz", Some(&stored)));
        assert!(!p.verify("correct horse battery", None));
        assert!(!p.verify("anything", Some("not a hash")));
    }

    #[test]
    fn beyond_the_queue_a_verification_is_refused_at_once() {
        let p = Passwords::with_params(1024, 1, 1).unwrap_or_else(|e| panic!("{e}"));
        let stored = p.hash("correct horse battery").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(p.try_verify("correct horse battery", Some(&stored)), Ok(true));
        p.pending.store(p.queue(), Ordering::SeqCst);
        assert_eq!(p.try_verify("correct horse battery", Some(&stored)), Err(Busy), "full: refused without hashing");
        p.pending.store(p.queue() - 1, Ordering::SeqCst);
        assert_eq!(p.try_verify("correct horse battery", Some(&stored)), Ok(true), "one place left");
        assert_eq!(p.pending.load(Ordering::SeqCst), p.queue() - 1, "its place given back");
    }

    #[test]
    fn the_baseline_is_owasps() {
        let p = Passwords::new().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((p.argon.params().m_cost(), p.argon.params().t_cost(), p.argon.params().p_cost()), (19 * 1024, 2, 1));
    }
}
