//! Test data of the console's people: users, invitations, sessions and audit entries.

use malipo_auth::{ConsoleSession, Organisation, Role, SessionStage, User};
use malipo_core::{AuditId, Mode, OrgId, Timestamp, UserId};
use malipo_service::{AuditEntry, Invitation, Store};

use crate::fixtures::{commit, digest};

/// An invited (not yet active) person of `org` with `email` (as typed) and `role`, invited at
/// `created_at`.
pub fn user(org: &Organisation, email: &str, role: Role, created_at: Timestamp) -> User {
    User {
        id: UserId::new(),
        org_id: org.id.clone(),
        email: email.to_owned(),
        name: String::new(),
        role,
        password_hash: None,
        totp_secret: None,
        totp_enabled_at: None,
        totp_last_step: 0,
        demo: false,
        created_at,
        activated_at: None,
        removed_at: None,
    }
}

/// `user` active since `when`, named "Wanjiru", with a password hash.
pub fn active(user: User, when: Timestamp) -> User {
    User {
        name: "Wanjiru".to_owned(),
        password_hash: Some("$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHQ$aGFzaGhhc2g".to_owned()),
        activated_at: Some(when),
        ..user
    }
}

/// Inserts `user` and returns it.
#[track_caller]
pub fn insert_user(store: &dyn Store, user: User) -> User {
    commit(store, |tx| Ok(tx.insert_user(&user)?));
    user
}

/// An unused invitation of `user` (by `invited_by`), sent at `created_at`, valid 72 hours, stored
/// under the digest of `token`.
pub fn invitation(user: &User, invited_by: Option<&UserId>, token: &str, created_at: Timestamp) -> Invitation {
    Invitation {
        digest: digest(token),
        user_id: user.id.clone(),
        invited_by: invited_by.cloned(),
        created_at,
        expires_at: created_at.plus_seconds(72 * 60 * 60),
        accepted_at: None,
    }
}

/// A new signed-in session of `user` at `now`, test mode, stored under the digest of `token`.
pub fn session(user: &User, token: &str, now: Timestamp) -> ConsoleSession {
    ConsoleSession::new(digest(token), user.id.clone(), SessionStage::Active, Mode::Test, now, "203.0.113.7".to_owned())
}

/// An audit entry of `action` by `user` (or an operator's command) in `org`, at `created_at`,
/// with a new time-ordered id.
pub fn audit_entry(org: Option<&OrgId>, user: Option<&User>, action: &str, created_at: Timestamp) -> AuditEntry {
    AuditEntry {
        id: AuditId::new(),
        org_id: org.cloned(),
        user_id: user.map(|u| u.id.clone()),
        actor: user.map_or_else(|| "operator command".to_owned(), |u| u.email.clone()),
        action: action.to_owned(),
        object_id: user.map(|u| u.id.to_string()),
        detail: format!("{action} at {}", created_at.as_micros()),
        ip: user.map(|_| "203.0.113.7".to_owned()),
        mode: user.map(|_| Mode::Test),
        created_at,
    }
}
