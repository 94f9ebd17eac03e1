//! Authentication: organisations' credentials (OAuth 2.0 client credentials), scopes, secret
//! hashing, and opaque bearer tokens stored only as SHA-256 digests; and the console's people:
//! roles and permissions, passwords (Argon2id), the second factor (TOTP and recovery codes),
//! sessions and the sign-in failure limits.

// Integers never meet `+ - *` unchecked here: money goes through `MinorUnit`'s checked
// operations, counters and times saturate or are checked (an overflow must not wrap silently).
#![cfg_attr(not(test), deny(clippy::arithmetic_side_effects))]

pub mod credential;
pub mod kind;
pub mod password;
pub mod person;
pub mod scope;
pub mod secret;
pub mod session;
pub mod totp;

pub use credential::{AccessToken, Credential, Need, OrgKind, Organisation, Principal, TOKEN_LIFETIME_SECONDS};
pub use password::{check_password, Busy, PasswordProblem, Passwords, MAX_PASSWORD_CHARS, MIN_PASSWORD_CHARS};
pub use person::{Permission, Role, UnknownRole, User};
pub use scope::{Scope, ScopeError, Scopes};
pub use secret::{bearer_token, generate_client_id, generate_secret, generate_token, token_digest, HashError, SecretHasher};
pub use session::{generate_session_token, source_address, ConsoleSession, Failures, SessionStage, Subject};
pub use totp::{generate_recovery_codes, is_recovery_code, normalise_recovery_code, TotpSecret};
