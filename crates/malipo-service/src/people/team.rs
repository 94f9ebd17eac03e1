//! Invitations, accepting one, and the team: roles, removal, requiring two-factor.

use std::net::IpAddr;

use malipo_auth::{check_password, generate_session_token, token_digest, Permission, Role, SessionStage, User};
use malipo_core::{Mode, OrgId, Timestamp, UserId};

use super::person::{entry, People, SignedIn};
use crate::error::{FieldError, ServiceError, StoreError};
use crate::ports::{AuditEntry, Invitation};
use crate::validate::check_text;
use crate::views::{OnAuth, OnUsers, Staffing, View};

/// An invitation link is valid this long.
pub const INVITATION_SECONDS: i64 = 72 * 60 * 60;

/// Who sends an invitation.
#[derive(Clone, Copy, Debug)]
pub enum Inviter<'a> {
    /// An operator's command (`malipo user invite`): the first person of an organisation.
    Operator,
    /// A person of the organisation, on the Team page (their role must manage the team).
    Member(&'a SignedIn, IpAddr),
    /// An operator in the console's back office, into any organisation (their role must manage
    /// organisations; checked by [`crate::back_office::BackOffice::invite`]).
    BackOffice(&'a SignedIn, IpAddr),
}

/// Who is invited, as typed.
#[derive(Clone, Debug, Default)]
pub struct Invitee {
    /// Their email.
    pub email: String,
    /// Their role (`admin`, `finance`, …).
    pub role: String,
    /// Their name, if known (they may change it when they accept).
    pub name: Option<String>,
}

/// A sent invitation: the one-time token of its link (shown this once).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Invited {
    /// The new person.
    pub user_id: UserId,
    /// The token of the link (`/console/invite/{token}`).
    pub token: String,
    /// When the link stops working.
    pub expires_at: Timestamp,
}

/// What the invitation page shows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InvitationView {
    /// The invited email.
    pub email: String,
    /// The name given at the invitation, if any.
    pub name: String,
    /// The role.
    pub role: Role,
    /// The organisation's name.
    pub org_name: String,
    /// Whether the role requires two-factor authentication (enrolment follows).
    pub requires_two_factor: bool,
}

/// Checks a new password and its confirmation, adding errors on `new_password` and
/// `confirm_password`.
pub(super) fn check_new_password(new: &str, confirm: &str, user: &User, errors: &mut Vec<FieldError>) {
    if let Err(problem) = check_password(new, &[&user.email, &user.name]) {
        errors.push(FieldError::new("new_password", "weak_password", format!("The password {problem}.")));
    }
    if new != confirm {
        errors.push(FieldError::new("confirm_password", "mismatch", "The passwords do not match."));
    }
}

impl People<'_> {
    /// Invites a person into `org_id` with a role: creates them (inactive) and a one-time link
    /// valid 72 hours.
    ///
    /// # Errors
    /// [`ServiceError::Validation`] (`email`, `role`, `name`; an email already in the
    /// organisation, or for an operator someone's elsewhere), [`ServiceError::NotFound`] (no
    /// such organisation), [`ServiceError::Forbidden`] (a member whose role does not manage the
    /// team, or of another organisation).
    pub fn invite(&self, by: Inviter<'_>, org_id: &OrgId, invitee: &Invitee) -> Result<Invited, ServiceError> {
        if let Inviter::BackOffice(who, _) = by {
            who.require(Permission::Organisations)?;
        }
        if let Inviter::Member(who, _) = by {
            who.require(Permission::ManageTeam)?;
            if &who.org.id != org_id {
                return Err(ServiceError::Forbidden("people are invited into their inviter's organisation".into()));
            }
        }
        let org = OnAuth::read(self.core.store(), |tx| Ok(tx.org(org_id)?))?.ok_or(ServiceError::NotFound)?;
        let mut errors = Vec::new();
        if !User::valid_email(&invitee.email) {
            errors.push(FieldError::new("email", "invalid_email", "Enter an email address like name@example.com."));
        }
        let role = match invitee.role.parse::<Role>() {
            Ok(r) if r.fits(org.kind) => Some(r),
            _ => {
                let names: Vec<&str> = Role::for_kind(org.kind).iter().map(|r| r.as_str()).collect();
                errors.push(FieldError::new("role", "invalid_role", format!("Choose one of: {}.", names.join(", "))));
                None
            }
        };
        let name = invitee.name.as_deref().map(str::trim).unwrap_or_default();
        if !name.is_empty() {
            check_text("name", name, 100, false, &mut errors);
        }
        let (Some(role), true) = (role, errors.is_empty()) else { return Err(ServiceError::Validation(errors)) };
        // An operator is told when the email is someone's elsewhere already (their invitation
        // could never be accepted); a member of an organisation is not: to them an invitation
        // answers the same whether or not the address is used on the platform.
        if matches!(by, Inviter::Operator | Inviter::BackOffice(..)) {
            let key = User::email_key(&invitee.email);
            let joined = OnUsers::read(self.core.store(), |tx| Ok(tx.user_by_email(&key)?))?.filter(|u| u.activated_at.is_some());
            if joined.is_some_and(|u| u.org_id != org.id) {
                return Err(ServiceError::field("email", "taken", "This email already belongs to someone."));
            }
        }
        let now = self.core.now();
        let token = generate_session_token();
        let user = User {
            id: UserId::new(),
            org_id: org.id.clone(),
            email: invitee.email.trim().to_owned(),
            name: name.to_owned(),
            role,
            password_hash: None,
            totp_secret: None,
            totp_enabled_at: None,
            totp_last_step: 0,
            demo: false,
            created_at: now,
            activated_at: None,
            removed_at: None,
        };
        let invitation = Invitation {
            digest: token_digest(&token),
            user_id: user.id.clone(),
            invited_by: match by {
                Inviter::Member(who, _) | Inviter::BackOffice(who, _) => Some(who.user.id.clone()),
                Inviter::Operator => None,
            },
            created_at: now,
            expires_at: now.plus_seconds(INVITATION_SECONDS),
            accepted_at: None,
        };
        Staffing::write(self.core.store(), |tx| {
            match tx.insert_user(&user) {
                // Only within the organisation: its own team, which its admins see anyway.
                Err(StoreError::Duplicate) => {
                    return Err(ServiceError::field("email", "taken", "This email is already in this team (or was invited to it)."));
                }
                other => other?,
            }
            tx.insert_invitation(&invitation)?;
            let detail = format!("{} as {role}", user.email);
            let record = match by {
                Inviter::Member(who, ip) => entry(&who.user, "user.invited", Some(user.id.to_string()), detail.clone(), ip, now),
                Inviter::BackOffice(who, ip) => {
                    entry(&who.user, "user.invited", Some(user.id.to_string()), format!("{detail} into {}", org.id), ip, now)
                }
                Inviter::Operator => AuditEntry {
                    id: malipo_core::AuditId::new(),
                    org_id: Some(org.id.clone()),
                    user_id: None,
                    actor: "operator command".into(),
                    action: "user.invited".into(),
                    object_id: Some(user.id.to_string()),
                    detail: detail.clone(),
                    ip: None,
                    mode: None,
                    created_at: now,
                },
            };
            tx.append_audit(&record)?;
            Ok(())
        })?;
        Ok(Invited { user_id: user.id, token, expires_at: invitation.expires_at })
    }

    /// The invitation behind a link's token, if it is unused and unexpired (and its email is not
    /// someone's already: then it can no longer be accepted).
    ///
    /// # Errors
    /// [`ServiceError::NotFound`] otherwise.
    pub fn invitation(&self, token: &str) -> Result<InvitationView, ServiceError> {
        let now = self.core.now();
        Staffing::read(self.core.store(), |tx| {
            let Some(inv) = tx.invitation(&token_digest(token))?.filter(|i| i.accepted_at.is_none() && now < i.expires_at) else {
                return Ok(None);
            };
            let Some(user) = tx.user(&inv.user_id)?.filter(|u| u.removed_at.is_none()) else { return Ok(None) };
            if tx.user_by_email(&User::email_key(&user.email))?.is_some_and(|u| u.activated_at.is_some() && u.id != user.id) {
                return Ok(None);
            }
            let Some(org) = tx.org(&user.org_id)? else { return Ok(None) };
            let requires_two_factor = user.role.requires_two_factor() || tx.org_requires_two_factor(&org.id)?;
            Ok(Some(InvitationView { email: user.email, name: user.name, role: user.role, org_name: org.name, requires_two_factor }))
        })?
        .ok_or(ServiceError::NotFound)
    }

    /// Accepts an invitation: the person sets their name and password, and is signed in (a new
    /// session's token is returned; where two-factor is required, the console shows enrolment
    /// before anything else). The link works once.
    ///
    /// # Errors
    /// [`ServiceError::Validation`] (`name`, `new_password`, `confirm_password`),
    /// [`ServiceError::NotFound`] (used, expired or unknown link).
    pub fn accept_invitation(&self, token: &str, name: &str, password: &str, confirm: &str, ip: IpAddr) -> Result<String, ServiceError> {
        let passwords = self.passwords()?;
        let now = self.core.now();
        let digest = token_digest(token);
        let invited = OnUsers::read(self.core.store(), |tx| {
            let Some(inv) = tx.invitation(&digest)?.filter(|i| i.accepted_at.is_none() && now < i.expires_at) else { return Ok(None) };
            Ok(tx.user(&inv.user_id)?)
        })?
        .ok_or(ServiceError::NotFound)?;
        let mut errors = Vec::new();
        check_text("name", name.trim(), 100, false, &mut errors);
        check_new_password(password, confirm, &User { name: name.trim().to_owned(), ..invited.clone() }, &mut errors);
        if !errors.is_empty() {
            return Err(ServiceError::Validation(errors));
        }
        let hash = passwords.hash(password).map_err(|e| ServiceError::Internal(e.to_string()))?;
        Staffing::write(self.core.store(), |tx| {
            if !tx.accept_invitation(&digest, now)? {
                return Err(ServiceError::NotFound);
            }
            // An email another person accepted first (in another organisation) is theirs: this
            // link no longer works, as a used one does not.
            match tx.activate_user(&invited.id, name.trim(), &hash, now) {
                Ok(true) => {}
                Ok(false) | Err(StoreError::Duplicate) => return Err(ServiceError::NotFound),
                Err(e) => return Err(e.into()),
            }
            let token = self.open_session(tx, &invited, SessionStage::Active, Mode::Test, ip, now)?;
            tx.append_audit(&entry(&invited, "user.joined", Some(invited.id.to_string()), String::new(), ip, now))?;
            Ok(token)
        })
    }

    /// The organisation's people, oldest first (removed ones left out).
    ///
    /// # Errors
    /// [`ServiceError::Forbidden`] unless the role manages the team.
    pub fn team(&self, who: &SignedIn) -> Result<Vec<User>, ServiceError> {
        who.require(Permission::ManageTeam)?;
        let all = OnUsers::read(self.core.store(), |tx| Ok(tx.users_of_org(&who.org.id)?))?;
        Ok(all.into_iter().filter(|u| u.removed_at.is_none()).collect())
    }

    fn colleague(&self, who: &SignedIn, id: &str) -> Result<User, ServiceError> {
        who.require(Permission::ManageTeam)?;
        let id = UserId::parse(id).map_err(|_| ServiceError::NotFound)?;
        let user = OnUsers::read(self.core.store(), |tx| Ok(tx.user(&id)?))?;
        user.filter(|u| u.org_id == who.org.id && u.removed_at.is_none()).ok_or(ServiceError::NotFound)
    }

    /// Changes a colleague's role (a step-up action: `code` is a fresh authentication code).
    /// Their sessions end, so that their next one carries the new role's privileges.
    ///
    /// # Errors
    /// [`ServiceError::Validation`] (`code`, `role`), [`ServiceError::Forbidden`],
    /// [`ServiceError::NotFound`], [`ServiceError::InvalidState`] (one's own role).
    pub fn change_role(&self, who: &SignedIn, user_id: &str, role: &str, code: &str, ip: IpAddr) -> Result<(), ServiceError> {
        let target = self.colleague(who, user_id)?;
        let role = role.parse::<Role>().ok().filter(|r| r.fits(who.org.kind)).ok_or_else(|| {
            let names: Vec<&str> = Role::for_kind(who.org.kind).iter().map(|r| r.as_str()).collect();
            ServiceError::field("role", "invalid_role", format!("Choose one of: {}.", names.join(", ")))
        })?;
        if target.id == who.user.id {
            return Err(ServiceError::InvalidState("you cannot change your own role; ask another admin".into()));
        }
        self.step_up(who, code, ip)?;
        let now = self.core.now();
        Staffing::write(self.core.store(), |tx| {
            tx.set_role(&target.id, role)?;
            tx.delete_user_sessions(&target.id)?;
            let detail = format!("{}: {} to {role}", target.email, target.role);
            tx.append_audit(&entry(&who.user, "user.role_changed", Some(target.id.to_string()), detail, ip, now))?;
            Ok(())
        })
    }

    /// Removes a colleague from the organisation: they sign in no more, and their sessions end.
    ///
    /// # Errors
    /// [`ServiceError::Forbidden`], [`ServiceError::NotFound`], [`ServiceError::InvalidState`]
    /// (oneself).
    pub fn remove(&self, who: &SignedIn, user_id: &str, ip: IpAddr) -> Result<(), ServiceError> {
        let target = self.colleague(who, user_id)?;
        if target.id == who.user.id {
            return Err(ServiceError::InvalidState("you cannot remove yourself; ask another admin".into()));
        }
        let now = self.core.now();
        Staffing::write(self.core.store(), |tx| {
            if tx.remove_user(&target.id, now)? {
                tx.delete_user_sessions(&target.id)?;
                tx.append_audit(&entry(&who.user, "user.removed", Some(target.id.to_string()), target.email.clone(), ip, now))?;
            }
            Ok(())
        })
    }

    /// Requires (or stops requiring) two-factor authentication of everyone in the organisation.
    ///
    /// # Errors
    /// [`ServiceError::Forbidden`].
    pub fn require_two_factor(&self, who: &SignedIn, on: bool, ip: IpAddr) -> Result<(), ServiceError> {
        who.require(Permission::ManageTeam)?;
        let now = self.core.now();
        Staffing::write(self.core.store(), |tx| {
            tx.set_org_requires_two_factor(&who.org.id, on)?;
            let detail = if on { "on" } else { "off" }.to_owned();
            tx.append_audit(&entry(&who.user, "team.two_factor_required", Some(who.org.id.to_string()), detail, ip, now))?;
            Ok(())
        })
    }

    /// The demo user of a first start: an admin of `org_id` with this email and password, active
    /// at once, needing no second factor. Nothing happens if the email exists.
    ///
    /// # Errors
    /// Storage failures.
    pub fn ensure_demo_user(&self, org_id: &OrgId, email: &str, name: &str, password: &str) -> Result<bool, ServiceError> {
        let hash = self.passwords()?.hash(password).map_err(|e| ServiceError::Internal(e.to_string()))?;
        let now = self.core.now();
        let user = User {
            id: UserId::new(),
            org_id: org_id.clone(),
            email: email.to_owned(),
            name: name.to_owned(),
            role: Role::Admin,
            password_hash: Some(hash),
            totp_secret: None,
            totp_enabled_at: None,
            totp_last_step: 0,
            demo: true,
            created_at: now,
            activated_at: Some(now),
            removed_at: None,
        };
        OnUsers::write(self.core.store(), |tx| match tx.insert_user(&user) {
            Ok(()) => Ok(true),
            Err(StoreError::Duplicate) => Ok(false),
            Err(e) => Err(e.into()),
        })
    }
}
