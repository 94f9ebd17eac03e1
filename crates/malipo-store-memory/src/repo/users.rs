//! [`UserRepo`] over the in-memory tables: users, recovery codes, invitations and organisations'
//! console settings, with the guards, unique emails and constraints of the SQL schema.

use malipo_auth::{Role, User};
use malipo_core::{OrgId, Timestamp, UserId};
use malipo_service::{Invitation, StoreError, UserRepo};

use crate::state::RecoveryCode;
use crate::tx::{check, foreign_key, MemoryTx};

/// The check constraints of the `users` table.
fn check_user(u: &User) -> Result<(), StoreError> {
    check(u.id.as_str().starts_with(UserId::PREFIX), "users_id_prefix_check")?;
    check(u.totp_last_step >= 0, "users_totp_last_step_check")?;
    check(u.totp_enabled_at.is_none() || u.totp_secret.is_some(), "users_totp_check")?;
    check(u.activated_at.is_none() || u.password_hash.is_some(), "users_activated_check")
}

/// The check constraints of the `invitations` table.
fn check_invitation(i: &Invitation) -> Result<(), StoreError> {
    check(i.expires_at > i.created_at, "invitations_expires_at_check")?;
    check(i.accepted_at.is_none_or(|t| t < i.expires_at), "invitations_accepted_at_check")
}

impl MemoryTx<'_> {
    /// Changes user `id` with `change` if it finds the user as its guard wants (it answers
    /// whether it changed anything); the result must still hold the table's constraints.
    fn change_user(&mut self, id: &UserId, change: impl FnOnce(&mut User) -> bool) -> Result<bool, StoreError> {
        let s = self.w()?;
        let Some(stored) = s.users.get(id) else { return Ok(false) };
        let mut user = stored.clone();
        if !change(&mut user) {
            return Ok(false);
        }
        check_user(&user)?;
        s.users.insert(id.clone(), user);
        Ok(true)
    }
}

impl UserRepo for MemoryTx<'_> {
    fn insert_user(&mut self, user: &User) -> Result<(), StoreError> {
        let s = self.w()?;
        let key = User::email_key(&user.email);
        let in_org = s.users.values().any(|u| u.org_id == user.org_id && User::email_key(&u.email) == key);
        let joined = user.activated_at.is_some() && s.user_emails.contains_key(&key);
        if s.users.contains_key(&user.id) || in_org || joined {
            return Err(StoreError::Duplicate);
        }
        foreign_key(s.orgs.contains_key(&user.org_id), "the user's organisation")?;
        check_user(user)?;
        if user.activated_at.is_some() {
            s.user_emails.insert(key, user.id.clone());
        }
        s.users.insert(user.id.clone(), user.clone());
        Ok(())
    }

    fn user(&mut self, id: &UserId) -> Result<Option<User>, StoreError> {
        Ok(self.r().users.get(id).cloned())
    }

    fn user_by_email(&mut self, email_key: &str) -> Result<Option<User>, StoreError> {
        let s = self.r();
        if let Some(joined) = s.user_emails.get(email_key).and_then(|id| s.users.get(id)) {
            return Ok(Some(joined.clone()));
        }
        let waiting = s.users.values().filter(|u| User::email_key(&u.email) == email_key);
        Ok(waiting.min_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id))).cloned())
    }

    fn users_of_org(&mut self, org_id: &OrgId) -> Result<Vec<User>, StoreError> {
        let mut people: Vec<User> = self.r().users.values().filter(|u| &u.org_id == org_id).cloned().collect();
        people.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        Ok(people)
    }

    fn activate_user(&mut self, id: &UserId, name: &str, password_hash: &str, now: Timestamp) -> Result<bool, StoreError> {
        // Not yet active, and not removed: a person removed before accepting stays out.
        let invited = self.r().users.get(id).filter(|u| u.activated_at.is_none() && u.removed_at.is_none());
        let Some(key) = invited.map(|u| User::email_key(&u.email)) else { return Ok(false) };
        // The unique index of accepted emails: another person accepted this email first.
        if self.r().user_emails.contains_key(&key) {
            return Err(StoreError::Duplicate);
        }
        let activated = self.change_user(id, |u| {
            u.name = name.to_owned();
            u.password_hash = Some(password_hash.to_owned());
            u.activated_at = Some(now);
            true
        })?;
        self.w()?.user_emails.insert(key, id.clone());
        Ok(activated)
    }

    fn set_password(&mut self, id: &UserId, password_hash: &str) -> Result<bool, StoreError> {
        self.change_user(id, |u| {
            u.password_hash = Some(password_hash.to_owned());
            true
        })
    }

    fn set_totp_secret(&mut self, id: &UserId, sealed: &[u8]) -> Result<bool, StoreError> {
        self.change_user(id, |u| {
            let not_on = u.totp_enabled_at.is_none();
            if not_on {
                u.totp_secret = Some(sealed.to_vec());
            }
            not_on
        })
    }

    fn enable_totp(&mut self, id: &UserId, step: i64, now: Timestamp) -> Result<bool, StoreError> {
        self.change_user(id, |u| {
            let enrolling = u.totp_secret.is_some() && u.totp_enabled_at.is_none();
            if enrolling {
                u.totp_enabled_at = Some(now);
                u.totp_last_step = step;
            }
            enrolling
        })
    }

    fn advance_totp_step(&mut self, id: &UserId, step: i64) -> Result<bool, StoreError> {
        self.change_user(id, |u| {
            let later = u.totp_last_step < step;
            if later {
                u.totp_last_step = step;
            }
            later
        })
    }

    fn set_role(&mut self, id: &UserId, role: Role) -> Result<bool, StoreError> {
        self.change_user(id, |u| {
            u.role = role;
            true
        })
    }

    fn remove_user(&mut self, id: &UserId, now: Timestamp) -> Result<bool, StoreError> {
        self.change_user(id, |u| {
            let present = u.removed_at.is_none();
            if present {
                u.removed_at = Some(now);
            }
            present
        })
    }

    fn replace_recovery_codes(&mut self, id: &UserId, digests: &[String], _now: Timestamp) -> Result<(), StoreError> {
        let s = self.w()?;
        s.recovery_codes.retain(|(user, _), _| user != id);
        if digests.is_empty() {
            return Ok(());
        }
        foreign_key(s.users.contains_key(id), "the recovery codes' user")?;
        for digest in digests {
            let fresh = RecoveryCode { used_at: None };
            if s.recovery_codes.insert((id.clone(), digest.clone()), fresh).is_some() {
                return Err(StoreError::Duplicate);
            }
        }
        Ok(())
    }

    fn use_recovery_code(&mut self, id: &UserId, digest: &str, now: Timestamp) -> Result<bool, StoreError> {
        let s = self.w()?;
        match s.recovery_codes.get_mut(&(id.clone(), digest.to_owned())) {
            Some(code) if code.used_at.is_none() => {
                code.used_at = Some(now);
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    fn recovery_codes_left(&mut self, id: &UserId) -> Result<usize, StoreError> {
        Ok(self.r().recovery_codes.iter().filter(|((user, _), code)| user == id && code.used_at.is_none()).count())
    }

    fn insert_invitation(&mut self, invitation: &Invitation) -> Result<(), StoreError> {
        let s = self.w()?;
        if s.invitations.contains_key(&invitation.digest) {
            return Err(StoreError::Duplicate);
        }
        foreign_key(s.users.contains_key(&invitation.user_id), "the invited user")?;
        foreign_key(invitation.invited_by.as_ref().is_none_or(|by| s.users.contains_key(by)), "the inviting user")?;
        check_invitation(invitation)?;
        s.invitations.insert(invitation.digest.clone(), invitation.clone());
        Ok(())
    }

    fn invitation(&mut self, digest: &str) -> Result<Option<Invitation>, StoreError> {
        Ok(self.r().invitations.get(digest).cloned())
    }

    fn accept_invitation(&mut self, digest: &str, now: Timestamp) -> Result<bool, StoreError> {
        let s = self.w()?;
        match s.invitations.get_mut(digest) {
            Some(invitation) if invitation.accepted_at.is_none() && invitation.expires_at > now => {
                invitation.accepted_at = Some(now);
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    fn org_requires_two_factor(&mut self, org_id: &OrgId) -> Result<bool, StoreError> {
        Ok(self.r().require_two_factor.get(org_id).copied().unwrap_or(false))
    }

    fn set_org_requires_two_factor(&mut self, org_id: &OrgId, on: bool) -> Result<(), StoreError> {
        let s = self.w()?;
        foreign_key(s.orgs.contains_key(org_id), "the settings' organisation")?;
        s.require_two_factor.insert(org_id.clone(), on);
        Ok(())
    }
}
