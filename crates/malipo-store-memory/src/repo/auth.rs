//! [`AuthRepo`] over the in-memory tables.

use malipo_auth::{AccessToken, Credential, Organisation};
use malipo_core::{OrgId, Timestamp};
use malipo_service::{AuthRepo, StoreError, TokenRecord};

use crate::tx::{foreign_key, MemoryTx};

impl AuthRepo for MemoryTx<'_> {
    fn insert_org(&mut self, org: &Organisation) -> Result<(), StoreError> {
        let s = self.w()?;
        if s.orgs.contains_key(&org.id) {
            return Err(StoreError::Duplicate);
        }
        s.orgs.insert(org.id.clone(), org.clone());
        Ok(())
    }

    fn org(&mut self, id: &OrgId) -> Result<Option<Organisation>, StoreError> {
        Ok(self.r().orgs.get(id).cloned())
    }

    fn org_by_name(&mut self, name: &str) -> Result<Option<Organisation>, StoreError> {
        Ok(self.r().orgs.values().filter(|o| o.name == name).min_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id))).cloned())
    }

    fn orgs(&mut self, limit: usize) -> Result<Vec<Organisation>, StoreError> {
        let mut all: Vec<Organisation> = self.r().orgs.values().cloned().collect();
        all.sort_by(|a, b| (b.created_at, &b.id).cmp(&(a.created_at, &a.id)));
        all.truncate(limit);
        Ok(all)
    }

    fn insert_credential(&mut self, credential: &Credential) -> Result<(), StoreError> {
        let s = self.w()?;
        if s.credentials.contains_key(&credential.client_id) {
            return Err(StoreError::Duplicate);
        }
        foreign_key(s.orgs.contains_key(&credential.org_id), "the credential's organisation")?;
        foreign_key(credential.created_by.as_ref().is_none_or(|u| s.users.contains_key(u)), "the credential's creator")?;
        s.credentials.insert(credential.client_id.clone(), credential.clone());
        Ok(())
    }

    fn credential(&mut self, client_id: &str) -> Result<Option<Credential>, StoreError> {
        Ok(self.r().credentials.get(client_id).cloned())
    }

    fn revoke_credential(&mut self, client_id: &str, now: Timestamp) -> Result<bool, StoreError> {
        let s = self.w()?;
        let Some(credential) = s.credentials.get_mut(client_id) else {
            return Ok(false);
        };
        if credential.revoked_at.is_some() {
            return Ok(false);
        }
        credential.revoked_at = Some(now);
        for token in s.tokens.values_mut().filter(|t| t.client_id == client_id && t.revoked_at.is_none()) {
            token.revoked_at = Some(now);
        }
        Ok(true)
    }

    fn replace_secret_hash(&mut self, client_id: &str, old: &str, new: &str) -> Result<bool, StoreError> {
        let s = self.w()?;
        match s.credentials.get_mut(client_id) {
            Some(credential) if credential.secret_hash == old => {
                credential.secret_hash = new.to_owned();
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    fn insert_token(&mut self, token: &AccessToken) -> Result<(), StoreError> {
        let s = self.w()?;
        if s.tokens.contains_key(&token.digest) {
            return Err(StoreError::Duplicate);
        }
        foreign_key(s.credentials.contains_key(&token.client_id), "the token's credential")?;
        s.tokens.insert(token.digest.clone(), token.clone());
        Ok(())
    }

    fn token(&mut self, digest: &str) -> Result<Option<TokenRecord>, StoreError> {
        let s = self.r();
        let Some(token) = s.tokens.get(digest) else {
            return Ok(None);
        };
        let org =
            s.orgs.get(&token.org_id).ok_or_else(|| StoreError::Other(format!("token's organisation {} is missing", token.org_id)))?;
        let credential = s
            .credentials
            .get(&token.client_id)
            .ok_or_else(|| StoreError::Other(format!("token's credential {} is missing", token.client_id)))?;
        Ok(Some(TokenRecord {
            token: token.clone(),
            org: org.clone(),
            credential_revoked: credential.revoked_at.is_some(),
            credential_person: credential.created_by.clone(),
        }))
    }

    fn revoke_token(&mut self, digest: &str, client_id: &str, now: Timestamp) -> Result<bool, StoreError> {
        let s = self.w()?;
        match s.tokens.get_mut(digest) {
            Some(token) if token.client_id == client_id => {
                // Revoking twice keeps the first revocation time (RFC 7009: still a success).
                token.revoked_at.get_or_insert(now);
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    fn org_credentials(&mut self, org_id: &OrgId) -> Result<Vec<Credential>, StoreError> {
        let mut found: Vec<Credential> = self.r().credentials.values().filter(|c| &c.org_id == org_id).cloned().collect();
        found.sort_by(|a, b| (b.created_at, &b.client_id).cmp(&(a.created_at, &a.client_id)));
        Ok(found)
    }

    fn touch_credential(&mut self, client_id: &str, now: Timestamp) -> Result<(), StoreError> {
        if let Some(credential) = self.w()?.credentials.get_mut(client_id) {
            // "Last used" never goes back.
            credential.last_used_at = Some(credential.last_used_at.map_or(now, |t| t.max(now)));
        }
        Ok(())
    }
}
