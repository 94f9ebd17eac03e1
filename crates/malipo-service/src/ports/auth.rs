//! Organisations, credentials and bearer tokens.

use malipo_auth::{AccessToken, Credential, Organisation};
use malipo_core::{OrgId, Timestamp, UserId};

use crate::error::StoreError;

/// A token with what is needed to authorise its requests.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenRecord {
    /// The token.
    pub token: AccessToken,
    /// Its organisation.
    pub org: Organisation,
    /// Whether its credential has been revoked (which revokes the token too).
    pub credential_revoked: bool,
    /// The person who created its credential in the console, if one did.
    pub credential_person: Option<UserId>,
}

/// Organisations, credentials and bearer tokens: part of the one transaction handle [`super::Tx`].
pub trait AuthRepo {
    /// Inserts an organisation.
    ///
    /// # Errors
    /// [`StoreError::Duplicate`] if the id exists.
    fn insert_org(&mut self, org: &Organisation) -> Result<(), StoreError>;
    /// An organisation by id.
    ///
    /// # Errors
    /// Storage failures.
    fn org(&mut self, id: &OrgId) -> Result<Option<Organisation>, StoreError>;
    /// An organisation's name. No use case renames an organisation, so an adapter may answer
    /// from what it read before, without a statement.
    ///
    /// # Errors
    /// Storage failures.
    fn org_name(&mut self, id: &OrgId) -> Result<Option<String>, StoreError> {
        Ok(self.org(id)?.map(|o| o.name))
    }
    /// The oldest organisation with this name.
    ///
    /// # Errors
    /// Storage failures.
    fn org_by_name(&mut self, name: &str) -> Result<Option<Organisation>, StoreError>;
    /// Organisations, newest first (by creation, then id), at most `limit`.
    ///
    /// # Errors
    /// Storage failures.
    fn orgs(&mut self, limit: usize) -> Result<Vec<Organisation>, StoreError>;
    /// Inserts a credential.
    ///
    /// # Errors
    /// [`StoreError::Duplicate`] if the client id exists.
    fn insert_credential(&mut self, credential: &Credential) -> Result<(), StoreError>;
    /// A credential by client id (revoked ones too).
    ///
    /// # Errors
    /// Storage failures.
    fn credential(&mut self, client_id: &str) -> Result<Option<Credential>, StoreError>;
    /// Marks a credential and all its tokens revoked; `false` if it does not exist or was revoked.
    ///
    /// # Errors
    /// Storage failures.
    fn revoke_credential(&mut self, client_id: &str, now: Timestamp) -> Result<bool, StoreError>;
    /// Replaces a credential's stored secret hash (an older format upgraded at a successful
    /// use) if it is still `old`; whether it was replaced.
    ///
    /// # Errors
    /// Storage failures.
    fn replace_secret_hash(&mut self, client_id: &str, old: &str, new: &str) -> Result<bool, StoreError>;
    /// Inserts an issued token.
    ///
    /// # Errors
    /// [`StoreError::Duplicate`] if the digest exists.
    fn insert_token(&mut self, token: &AccessToken) -> Result<(), StoreError>;
    /// A token by digest, with its organisation and its credential's revocation.
    ///
    /// # Errors
    /// Storage failures.
    fn token(&mut self, digest: &str) -> Result<Option<TokenRecord>, StoreError>;
    /// Revokes the token with this digest if it belongs to `client_id`; `false` otherwise.
    ///
    /// # Errors
    /// Storage failures.
    fn revoke_token(&mut self, digest: &str, client_id: &str, now: Timestamp) -> Result<bool, StoreError>;
    /// An organisation's credentials in both modes (revoked ones too), newest first.
    ///
    /// # Errors
    /// Storage failures.
    fn org_credentials(&mut self, org_id: &OrgId) -> Result<Vec<Credential>, StoreError>;
    /// Records that a credential got a token at `now` (its "last used").
    ///
    /// # Errors
    /// Storage failures.
    fn touch_credential(&mut self, client_id: &str, now: Timestamp) -> Result<(), StoreError>;
}
