//! Rows of users, invitations, recovery codes, console sessions, sign-in failure counts and the
//! audit log.

use std::str::FromStr;

use diesel::prelude::*;
use malipo_auth::{ConsoleSession, Failures, Role, SessionStage, User};
use malipo_core::{AuditId, OrgId, Timestamp, UserId};
use malipo_service::{AuditEntry, Invitation, StoreError};

use super::columns::{corrupt, integer, mode, ts};
use crate::schema::{audit_log, console_sessions, invitations, recovery_codes, sign_in_failures, users};

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = users, check_for_backend(diesel::pg::Pg, diesel::sqlite::Sqlite))]
pub(crate) struct UserRow {
    pub(crate) id: String,
    pub(crate) org_id: String,
    pub(crate) email: String,
    pub(crate) email_key: String,
    pub(crate) name: String,
    pub(crate) role: String,
    pub(crate) password_hash: Option<String>,
    pub(crate) totp_secret: Option<Vec<u8>>,
    pub(crate) totp_enabled_at: Option<i64>,
    pub(crate) totp_last_step: i64,
    pub(crate) demo: bool,
    pub(crate) created_at: i64,
    pub(crate) activated_at: Option<i64>,
    pub(crate) removed_at: Option<i64>,
}

impl From<&User> for UserRow {
    fn from(u: &User) -> Self {
        UserRow {
            id: u.id.as_str().to_owned(),
            org_id: u.org_id.as_str().to_owned(),
            email: u.email.clone(),
            email_key: User::email_key(&u.email),
            name: u.name.clone(),
            role: u.role.as_str().to_owned(),
            password_hash: u.password_hash.clone(),
            totp_secret: u.totp_secret.clone(),
            totp_enabled_at: u.totp_enabled_at.map(Timestamp::as_micros),
            totp_last_step: u.totp_last_step,
            demo: u.demo,
            created_at: u.created_at.as_micros(),
            activated_at: u.activated_at.map(Timestamp::as_micros),
            removed_at: u.removed_at.map(Timestamp::as_micros),
        }
    }
}

impl TryFrom<UserRow> for User {
    type Error = StoreError;
    fn try_from(r: UserRow) -> Result<Self, StoreError> {
        Ok(User {
            role: Role::from_str(&r.role).map_err(|_| corrupt("role", &r.role))?,
            id: UserId::from_trusted(r.id),
            org_id: OrgId::from_trusted(r.org_id),
            email: r.email,
            name: r.name,
            password_hash: r.password_hash,
            totp_secret: r.totp_secret,
            totp_enabled_at: r.totp_enabled_at.map(ts),
            totp_last_step: r.totp_last_step,
            demo: r.demo,
            created_at: ts(r.created_at),
            activated_at: r.activated_at.map(ts),
            removed_at: r.removed_at.map(ts),
        })
    }
}

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = invitations, check_for_backend(diesel::pg::Pg, diesel::sqlite::Sqlite))]
pub(crate) struct InvitationRow {
    pub(crate) digest: String,
    pub(crate) user_id: String,
    pub(crate) invited_by: Option<String>,
    pub(crate) created_at: i64,
    pub(crate) expires_at: i64,
    pub(crate) accepted_at: Option<i64>,
}

impl From<&Invitation> for InvitationRow {
    fn from(i: &Invitation) -> Self {
        InvitationRow {
            digest: i.digest.clone(),
            user_id: i.user_id.as_str().to_owned(),
            invited_by: i.invited_by.as_ref().map(|u| u.as_str().to_owned()),
            created_at: i.created_at.as_micros(),
            expires_at: i.expires_at.as_micros(),
            accepted_at: i.accepted_at.map(Timestamp::as_micros),
        }
    }
}

impl From<InvitationRow> for Invitation {
    fn from(r: InvitationRow) -> Self {
        Invitation {
            digest: r.digest,
            user_id: UserId::from_trusted(r.user_id),
            invited_by: r.invited_by.map(UserId::from_trusted),
            created_at: ts(r.created_at),
            expires_at: ts(r.expires_at),
            accepted_at: r.accepted_at.map(ts),
        }
    }
}

/// A new, unused recovery code (only written: the codes are read by count and used by digest).
#[derive(Insertable)]
#[diesel(table_name = recovery_codes, check_for_backend(diesel::pg::Pg, diesel::sqlite::Sqlite))]
pub(crate) struct RecoveryCodeRow<'a> {
    pub(crate) user_id: &'a str,
    pub(crate) digest: &'a str,
    pub(crate) created_at: i64,
}

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = console_sessions, check_for_backend(diesel::pg::Pg, diesel::sqlite::Sqlite))]
pub(crate) struct SessionRow {
    pub(crate) digest: String,
    pub(crate) user_id: String,
    pub(crate) stage: String,
    pub(crate) mode: String,
    pub(crate) created_at: i64,
    pub(crate) last_seen_at: i64,
    pub(crate) expires_at: i64,
    pub(crate) ip: String,
}

impl From<&ConsoleSession> for SessionRow {
    fn from(s: &ConsoleSession) -> Self {
        SessionRow {
            digest: s.digest.clone(),
            user_id: s.user_id.as_str().to_owned(),
            stage: s.stage.as_str().to_owned(),
            mode: s.mode.as_str().to_owned(),
            created_at: s.created_at.as_micros(),
            last_seen_at: s.last_seen_at.as_micros(),
            expires_at: s.expires_at.as_micros(),
            ip: s.ip.clone(),
        }
    }
}

impl TryFrom<SessionRow> for ConsoleSession {
    type Error = StoreError;
    fn try_from(r: SessionRow) -> Result<Self, StoreError> {
        Ok(ConsoleSession {
            stage: SessionStage::parse(&r.stage).ok_or_else(|| corrupt("session stage", &r.stage))?,
            mode: mode(&r.mode)?,
            digest: r.digest,
            user_id: UserId::from_trusted(r.user_id),
            created_at: ts(r.created_at),
            last_seen_at: ts(r.last_seen_at),
            expires_at: ts(r.expires_at),
            ip: r.ip,
        })
    }
}

#[derive(Queryable, Selectable, Insertable, AsChangeset)]
#[diesel(table_name = sign_in_failures, check_for_backend(diesel::pg::Pg, diesel::sqlite::Sqlite))]
#[diesel(primary_key(subject), treat_none_as_null = true)]
pub(crate) struct FailuresRow {
    pub(crate) subject: String,
    pub(crate) window_start: i64,
    pub(crate) count: i32,
    pub(crate) locked_until: Option<i64>,
}

impl FailuresRow {
    pub(crate) fn new(subject: &str, f: &Failures) -> Result<Self, StoreError> {
        Ok(FailuresRow {
            subject: subject.to_owned(),
            window_start: f.window_start.as_micros(),
            count: integer("sign-in failure count", f.count)?,
            locked_until: f.locked_until.map(Timestamp::as_micros),
        })
    }
}

impl TryFrom<FailuresRow> for Failures {
    type Error = StoreError;
    fn try_from(r: FailuresRow) -> Result<Self, StoreError> {
        Ok(Failures {
            window_start: ts(r.window_start),
            count: u32::try_from(r.count).map_err(|_| corrupt("sign-in failure count", &r.count.to_string()))?,
            locked_until: r.locked_until.map(ts),
        })
    }
}

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = audit_log, check_for_backend(diesel::pg::Pg, diesel::sqlite::Sqlite))]
pub(crate) struct AuditRow {
    pub(crate) id: String,
    pub(crate) org_id: Option<String>,
    pub(crate) user_id: Option<String>,
    pub(crate) actor: String,
    pub(crate) action: String,
    pub(crate) object_id: Option<String>,
    pub(crate) detail: String,
    pub(crate) ip: Option<String>,
    pub(crate) mode: Option<String>,
    pub(crate) created_at: i64,
}

impl From<&AuditEntry> for AuditRow {
    fn from(e: &AuditEntry) -> Self {
        AuditRow {
            id: e.id.as_str().to_owned(),
            org_id: e.org_id.as_ref().map(|o| o.as_str().to_owned()),
            user_id: e.user_id.as_ref().map(|u| u.as_str().to_owned()),
            actor: e.actor.clone(),
            action: e.action.clone(),
            object_id: e.object_id.clone(),
            detail: e.detail.clone(),
            ip: e.ip.clone(),
            mode: e.mode.map(|m| m.as_str().to_owned()),
            created_at: e.created_at.as_micros(),
        }
    }
}

impl TryFrom<AuditRow> for AuditEntry {
    type Error = StoreError;
    fn try_from(r: AuditRow) -> Result<Self, StoreError> {
        Ok(AuditEntry {
            mode: r.mode.as_deref().map(mode).transpose()?,
            id: AuditId::from_trusted(r.id),
            org_id: r.org_id.map(OrgId::from_trusted),
            user_id: r.user_id.map(UserId::from_trusted),
            actor: r.actor,
            action: r.action,
            object_id: r.object_id,
            detail: r.detail,
            ip: r.ip,
            created_at: ts(r.created_at),
        })
    }
}
