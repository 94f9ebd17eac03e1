//! API key pairs made by people on the console's Developers page: listed, created (the secret
//! shown once) and revoked, each with a fresh second factor. A key pair created by a person
//! records them (`created_by`), and acts as them for maker/checker.

use std::net::IpAddr;

use malipo_auth::{Credential, Permission};
use malipo_core::Mode;

use super::person::{entry, People, SignedIn};
use crate::access::{Access, IssuedCredential};
use crate::error::ServiceError;
use crate::views::{OnAuth, Staffing, View};

impl People<'_> {
    /// The organisation's key pairs in both modes (revoked ones too), newest first.
    ///
    /// # Errors
    /// [`ServiceError::Forbidden`] unless the role manages API keys.
    pub fn keys(&self, who: &SignedIn) -> Result<Vec<Credential>, ServiceError> {
        who.require(Permission::ManageKeys)?;
        OnAuth::read(self.core.store(), |tx| Ok(tx.org_credentials(&who.org.id)?))
    }

    /// Creates a key pair in `mode` with the organisation kind's scopes (a step-up action:
    /// `code` is a fresh authentication code). Live keys are issued by an operator after review:
    /// until the organisation has one, a person may create test keys only.
    ///
    /// # Errors
    /// [`ServiceError::Forbidden`]; [`ServiceError::Validation`] on `code`;
    /// [`ServiceError::InvalidState`] for a live key before review.
    pub fn create_key(&self, who: &SignedIn, mode: Mode, code: &str, ip: IpAddr) -> Result<IssuedCredential, ServiceError> {
        who.require(Permission::ManageKeys)?;
        if mode == Mode::Live {
            let reviewed = OnAuth::read(self.core.store(), |tx| Ok(tx.org_credentials(&who.org.id)?))?
                .iter()
                .any(|c| c.mode == Mode::Live && c.created_by.is_none());
            if !reviewed {
                return Err(ServiceError::InvalidState(
                    "live keys are issued after review: an operator issues your organisation's first live key".into(),
                ));
            }
        }
        self.step_up(who, code, ip)?;
        let (mut credential, issued) = Access::new(self.core).new_credential(&who.org.id, mode, who.org.kind.default_scopes())?;
        credential.created_by = Some(who.user.id.clone());
        let now = self.core.now();
        Staffing::write(self.core.store(), |tx| {
            tx.insert_credential(&credential)?;
            let mut e = entry(&who.user, "api_key.created", Some(credential.client_id.clone()), format!("{mode} key pair"), ip, now);
            e.mode = Some(mode);
            tx.append_audit(&e)?;
            Ok(())
        })?;
        Ok(issued)
    }

    /// Revokes one of the organisation's key pairs and its tokens (a step-up action).
    ///
    /// # Errors
    /// [`ServiceError::Forbidden`]; [`ServiceError::Validation`] on `code`;
    /// [`ServiceError::NotFound`] (not the organisation's, or already revoked).
    pub fn revoke_key(&self, who: &SignedIn, client_id: &str, code: &str, ip: IpAddr) -> Result<(), ServiceError> {
        who.require(Permission::ManageKeys)?;
        let theirs = OnAuth::read(self.core.store(), |tx| Ok(tx.credential(client_id)?))?
            .filter(|c| c.org_id == who.org.id && c.revoked_at.is_none())
            .ok_or(ServiceError::NotFound)?;
        self.step_up(who, code, ip)?;
        let now = self.core.now();
        Staffing::write(self.core.store(), |tx| {
            if !tx.revoke_credential(&theirs.client_id, now)? {
                return Err(ServiceError::NotFound);
            }
            let mut e = entry(&who.user, "api_key.revoked", Some(theirs.client_id.clone()), format!("{} key pair", theirs.mode), ip, now);
            e.mode = Some(theirs.mode);
            tx.append_audit(&e)?;
            Ok(())
        })
    }
}
