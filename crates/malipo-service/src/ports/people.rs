//! People who use the console: users, invitations, recovery codes, sessions, the sign-in failure
//! counts and the audit log.

use malipo_auth::{ConsoleSession, Failures, Role, User};
use malipo_core::{AuditId, Mode, OrgId, Timestamp, UserId};

use crate::error::StoreError;

/// A one-time invitation link, stored by the digest of its token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Invitation {
    /// SHA-256 hex of the token in the link.
    pub digest: String,
    /// The invited person (created, not yet active).
    pub user_id: UserId,
    /// Who invited them (`None`: an operator's command).
    pub invited_by: Option<UserId>,
    /// When sent.
    pub created_at: Timestamp,
    /// When the link stops working (72 hours after it was sent).
    pub expires_at: Timestamp,
    /// When used (a link works once).
    pub accepted_at: Option<Timestamp>,
}

/// One action a person took, as the audit log keeps it (append-only).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuditEntry {
    /// `aud_…` (time-ordered).
    pub id: AuditId,
    /// The organisation acted in (`None` when unknown, e.g. a failed sign-in of an unknown email).
    pub org_id: Option<OrgId>,
    /// The person (`None` when unknown, or an operator's command).
    pub user_id: Option<UserId>,
    /// Who, as shown: the person's email, or `operator command`.
    pub actor: String,
    /// What, e.g. `sign_in`, `sign_in.failed`, `reversal.created`, `user.invited`.
    pub action: String,
    /// The object touched (`rv_…`, `usr_…`, `ck_test_…`), if any.
    pub object_id: Option<String>,
    /// A short description (amounts, reasons, roles).
    pub detail: String,
    /// The source address.
    pub ip: Option<String>,
    /// The mode the action was taken in, where it has one.
    pub mode: Option<Mode>,
    /// When.
    pub created_at: Timestamp,
}

/// Which audit entries to list.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AuditFilter {
    /// Only this organisation's (`None`: every organisation's, for operators).
    pub org_id: Option<OrgId>,
    /// Only this person's.
    pub user_id: Option<UserId>,
    /// Only actions starting with this (e.g. `sign_in`).
    pub action: Option<String>,
    /// At or after.
    pub from: Option<Timestamp>,
    /// Before.
    pub to: Option<Timestamp>,
}

/// Users, invitations, recovery codes and organisations' console settings: part of the one
/// transaction handle [`super::Tx`]. Every change is a guarded update that says whether it
/// happened, so that two requests racing on one person change it once.
pub trait UserRepo {
    /// Inserts a user.
    ///
    /// # Errors
    /// [`StoreError::Duplicate`] if the id or the email (case-insensitively) exists.
    fn insert_user(&mut self, user: &User) -> Result<(), StoreError>;
    /// A user by id.
    ///
    /// # Errors
    /// Storage failures.
    fn user(&mut self, id: &UserId) -> Result<Option<User>, StoreError>;
    /// A user by email as compared ([`User::email_key`]).
    ///
    /// # Errors
    /// Storage failures.
    fn user_by_email(&mut self, email_key: &str) -> Result<Option<User>, StoreError>;
    /// An organisation's people (removed ones too), oldest first.
    ///
    /// # Errors
    /// Storage failures.
    fn users_of_org(&mut self, org_id: &OrgId) -> Result<Vec<User>, StoreError>;
    /// Activates an invited user with their name and password hash, if not yet active.
    ///
    /// # Errors
    /// Storage failures.
    fn activate_user(&mut self, id: &UserId, name: &str, password_hash: &str, now: Timestamp) -> Result<bool, StoreError>;
    /// Replaces a user's password hash.
    ///
    /// # Errors
    /// Storage failures.
    fn set_password(&mut self, id: &UserId, password_hash: &str) -> Result<bool, StoreError>;
    /// Sets the TOTP secret (sealed) of a user whose second factor is not on yet.
    ///
    /// # Errors
    /// Storage failures.
    fn set_totp_secret(&mut self, id: &UserId, sealed: &[u8]) -> Result<bool, StoreError>;
    /// Turns the second factor on, if a secret is set and it is not on yet, with the step of the
    /// code that confirmed it.
    ///
    /// # Errors
    /// Storage failures.
    fn enable_totp(&mut self, id: &UserId, step: i64, now: Timestamp) -> Result<bool, StoreError>;
    /// Records `step` as the last step a code was accepted at, if it is later than the stored
    /// one: `false` means the code was already used (a replay, or a concurrent use).
    ///
    /// # Errors
    /// Storage failures.
    fn advance_totp_step(&mut self, id: &UserId, step: i64) -> Result<bool, StoreError>;
    /// Changes a user's role.
    ///
    /// # Errors
    /// Storage failures.
    fn set_role(&mut self, id: &UserId, role: Role) -> Result<bool, StoreError>;
    /// Removes a user from their organisation, if not removed yet.
    ///
    /// # Errors
    /// Storage failures.
    fn remove_user(&mut self, id: &UserId, now: Timestamp) -> Result<bool, StoreError>;
    /// Replaces a user's recovery codes by these (keyed digests), all unused.
    ///
    /// # Errors
    /// Storage failures.
    fn replace_recovery_codes(&mut self, id: &UserId, digests: &[String], now: Timestamp) -> Result<(), StoreError>;
    /// Uses one of a user's recovery codes, if it exists and is unused.
    ///
    /// # Errors
    /// Storage failures.
    fn use_recovery_code(&mut self, id: &UserId, digest: &str, now: Timestamp) -> Result<bool, StoreError>;
    /// How many of a user's recovery codes are unused.
    ///
    /// # Errors
    /// Storage failures.
    fn recovery_codes_left(&mut self, id: &UserId) -> Result<usize, StoreError>;
    /// Inserts an invitation.
    ///
    /// # Errors
    /// [`StoreError::Duplicate`] if the digest exists.
    fn insert_invitation(&mut self, invitation: &Invitation) -> Result<(), StoreError>;
    /// An invitation by the digest of its token.
    ///
    /// # Errors
    /// Storage failures.
    fn invitation(&mut self, digest: &str) -> Result<Option<Invitation>, StoreError>;
    /// Marks an invitation used, if it is unused and not expired at `now`.
    ///
    /// # Errors
    /// Storage failures.
    fn accept_invitation(&mut self, digest: &str, now: Timestamp) -> Result<bool, StoreError>;
    /// Whether an organisation requires two-factor authentication of everyone.
    ///
    /// # Errors
    /// Storage failures.
    fn org_requires_two_factor(&mut self, org_id: &OrgId) -> Result<bool, StoreError>;
    /// Sets whether an organisation requires two-factor authentication of everyone.
    ///
    /// # Errors
    /// Storage failures.
    fn set_org_requires_two_factor(&mut self, org_id: &OrgId, on: bool) -> Result<(), StoreError>;
}

/// Console sessions and sign-in failure counts: part of the one transaction handle
/// [`super::Tx`]. Kept in the database, so that every instance honours a session and ending one
/// ends it everywhere at once.
pub trait SessionRepo {
    /// Inserts a session.
    ///
    /// # Errors
    /// [`StoreError::Duplicate`] if the digest exists.
    fn insert_session(&mut self, session: &ConsoleSession) -> Result<(), StoreError>;
    /// A session by the digest of its token (live or not: the caller judges).
    ///
    /// # Errors
    /// Storage failures.
    fn session(&mut self, digest: &str) -> Result<Option<ConsoleSession>, StoreError>;
    /// Records a request of the session at `now`.
    ///
    /// # Errors
    /// Storage failures.
    fn touch_session(&mut self, digest: &str, now: Timestamp) -> Result<(), StoreError>;
    /// Sets the mode a session shows and acts on.
    ///
    /// # Errors
    /// Storage failures.
    fn set_session_mode(&mut self, digest: &str, mode: Mode) -> Result<bool, StoreError>;
    /// Ends a session.
    ///
    /// # Errors
    /// Storage failures.
    fn delete_session(&mut self, digest: &str) -> Result<bool, StoreError>;
    /// Ends every session of a user; returns how many.
    ///
    /// # Errors
    /// Storage failures.
    fn delete_user_sessions(&mut self, user_id: &UserId) -> Result<usize, StoreError>;
    /// Deletes sessions that ended before `before` (expired, or idle since); returns how many.
    ///
    /// # Errors
    /// Storage failures.
    fn purge_sessions(&mut self, ended_before: Timestamp, idle_before: Timestamp) -> Result<usize, StoreError>;
    /// The failure count of a subject as last committed, without a lock (`None` when it has
    /// none): a cheap first look that refuses a locked subject before anything is locked.
    ///
    /// # Errors
    /// Storage failures.
    fn failures(&mut self, subject: &str) -> Result<Option<Failures>, StoreError>;
    /// The failure count of a subject ([`malipo_auth::Subject::key`]), locked until the
    /// transaction ends (created with no failures when absent), so that concurrent attempts
    /// count one after the other.
    ///
    /// # Errors
    /// Storage failures.
    fn lock_failures(&mut self, subject: &str, now: Timestamp) -> Result<Failures, StoreError>;
    /// Stores a subject's failure count.
    ///
    /// # Errors
    /// Storage failures.
    fn put_failures(&mut self, subject: &str, failures: &Failures) -> Result<(), StoreError>;
    /// Forgets a subject's failures.
    ///
    /// # Errors
    /// Storage failures.
    fn clear_failures(&mut self, subject: &str) -> Result<(), StoreError>;
    /// Forgets the failure counts that no longer count at `now`: their window began before
    /// `window_before` and they are not locked at `now`. Returns how many.
    ///
    /// # Errors
    /// Storage failures.
    fn purge_failures(&mut self, window_before: Timestamp, now: Timestamp) -> Result<usize, StoreError>;
}

/// The audit log: part of the one transaction handle [`super::Tx`]. Append-only: the database
/// refuses to change or delete an entry.
pub trait AuditRepo {
    /// Appends an entry.
    ///
    /// # Errors
    /// [`StoreError::Duplicate`] if the id exists.
    fn append_audit(&mut self, entry: &AuditEntry) -> Result<(), StoreError>;
    /// Entries matching `filter`, newest first, before the entry `before` if given, at most
    /// `limit`.
    ///
    /// # Errors
    /// Storage failures.
    fn audit_entries(&mut self, filter: &AuditFilter, before: Option<&AuditId>, limit: usize) -> Result<Vec<AuditEntry>, StoreError>;
}
