//! The signed-in person and the people use cases' shared parts.

use std::net::IpAddr;
use std::sync::Arc;

use malipo_auth::{
    generate_session_token, token_digest, ConsoleSession, Organisation, Passwords, Permission, Principal, SessionStage, User,
};
use malipo_core::{Mode, Timestamp};

use crate::core::Core;
use crate::error::ServiceError;
use crate::ports::{AuditEntry, SessionRepo};

/// A signed-in person: their session, themselves and their organisation.
#[derive(Clone, Debug)]
pub struct SignedIn {
    /// The session.
    pub session: ConsoleSession,
    /// The person.
    pub user: User,
    /// Their organisation.
    pub org: Organisation,
    /// Whether the organisation requires two-factor authentication of everyone.
    pub org_requires_two_factor: bool,
    /// The session's CSRF token: every state-changing form carries it.
    pub csrf_token: String,
}

impl SignedIn {
    /// The person as a caller of the use cases: their organisation, the session's mode, their
    /// role's scopes, and themselves (their `usr_` id stands where a client id would).
    pub fn principal(&self) -> Principal {
        Principal {
            client_id: self.user.id.to_string(),
            org_id: self.org.id.clone(),
            org_kind: self.org.kind,
            country: self.org.country.clone(),
            mode: self.session.mode,
            scopes: self.user.role.scopes(self.org.kind),
            person: Some(self.user.id.clone()),
            role: Some(self.user.role),
        }
    }

    /// Whether their role may do `what` (the one table, [`malipo_auth::Role::may`]).
    pub fn may(&self, what: Permission) -> bool {
        self.user.role.may(self.org.kind, what)
    }

    /// Whether they must turn on two-factor authentication before anything else.
    pub fn must_enrol(&self) -> bool {
        self.user.must_enrol(self.org_requires_two_factor)
    }

    /// The mode every page shows and acts on.
    pub fn mode(&self) -> Mode {
        self.session.mode
    }

    /// Refuses unless their role may do `what` (and they have enrolled where they must).
    ///
    /// # Errors
    /// [`ServiceError::Forbidden`].
    pub fn require(&self, what: Permission) -> Result<(), ServiceError> {
        if self.must_enrol() {
            return Err(ServiceError::Forbidden("turn on two-factor authentication first".into()));
        }
        if self.may(what) {
            Ok(())
        } else {
            Err(ServiceError::Forbidden(format!("a {} may not do this", self.user.role)))
        }
    }
}

/// The console's people use cases.
pub struct People<'a> {
    pub(super) core: &'a Core,
}

impl<'a> People<'a> {
    pub(crate) fn new(core: &'a Core) -> Self {
        People { core }
    }

    pub(super) fn passwords(&self) -> Result<&Arc<Passwords>, ServiceError> {
        self.core.passwords.as_ref().ok_or_else(|| ServiceError::Internal("password hashing is not configured".into()))
    }

    /// A new session of `user` in `stage` (the session's token and record), written by `tx`.
    pub(super) fn open_session(
        &self,
        tx: &mut (impl SessionRepo + ?Sized),
        user: &User,
        stage: SessionStage,
        mode: Mode,
        ip: IpAddr,
        now: Timestamp,
    ) -> Result<String, ServiceError> {
        let token = generate_session_token();
        let session = ConsoleSession::new(token_digest(&token), user.id.clone(), stage, mode, now, ip.to_string());
        tx.insert_session(&session)?;
        Ok(token)
    }
}

/// An audit entry of `user`'s action at `now` (the organisation is the user's).
pub(crate) fn entry(user: &User, action: &str, object_id: Option<String>, detail: String, ip: IpAddr, now: Timestamp) -> AuditEntry {
    AuditEntry {
        id: malipo_core::AuditId::new(),
        org_id: Some(user.org_id.clone()),
        user_id: Some(user.id.clone()),
        actor: user.email.clone(),
        action: action.to_owned(),
        object_id,
        detail,
        ip: Some(ip.to_string()),
        mode: None,
        created_at: now,
    }
}
