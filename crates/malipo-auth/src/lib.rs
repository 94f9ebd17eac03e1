//! Authentication: organisations' credentials (OAuth 2.0 client credentials), scopes, secret
//! hashing with Argon2id, and opaque bearer tokens stored only as SHA-256 digests.

// Integers never meet `+ - *` unchecked here: money goes through `MinorUnit`'s checked
// operations, counters and times saturate or are checked (an overflow must not wrap silently).
#![cfg_attr(not(test), deny(clippy::arithmetic_side_effects))]

pub mod credential;
pub mod scope;
pub mod secret;

pub use credential::{AccessToken, Credential, OrgKind, Organisation, Principal, TOKEN_LIFETIME_SECONDS};
pub use scope::{Scope, ScopeError, Scopes};
pub use secret::{generate_client_id, generate_secret, generate_token, token_digest, SecretHasher};
