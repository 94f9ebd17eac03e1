//! Signing in with a password and a second factor, sessions, signing out, and changing the
//! password.
//!
//! **Failure limits, checked then counted under a lock** ([`super::failures`]): every attempt
//! (a password, or a second-factor code) counts against its account at its address, its
//! address, and its account as a whole (unless the browser signed in as the account's person
//! before) before anything is checked; an unknown email locks as a known one does (which tells
//! nothing about which emails exist).
//!
//! **The same answer in the same time.** A wrong email and a wrong password take the same path:
//! the same two transactions and one Argon2id verification (of a decoy hash when there is no
//! such person).

use std::net::IpAddr;

use malipo_auth::{token_digest, SessionStage, User, MAX_PASSWORD_CHARS};
use malipo_core::{Mode, Timestamp};

use super::failures::{Attempt, Counted};
use super::person::{entry, People, SignedIn};
use crate::error::ServiceError;
use crate::views::{OnSessions, Staffing, View};

/// The outcome of a sign-in step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SignIn {
    /// Signed in: the new session's token (for the cookie), and a device token for the
    /// browser to keep (it signed in as this person: [`People::sign_in`]'s `device`).
    SignedIn {
        /// The session token.
        token: String,
        /// The device token.
        device: String,
    },
    /// The password was right; the second factor is awaited under this short-lived token.
    SecondFactor {
        /// The pending session's token.
        token: String,
    },
    /// Wrong email, password or code (one answer for all).
    Refused,
    /// Too many failures for this account from this address, from this address, or for this
    /// account from everywhere (from a browser it has not signed in from): it waits until then.
    Locked {
        /// When the lock ends.
        until: Timestamp,
    },
}

impl People<'_> {
    /// An attempt at the account of `email_key` from `ip`, trusted when `device` is the
    /// account's device token.
    fn attempt(&self, email_key: &str, ip: IpAddr, device: Option<&str>) -> Attempt {
        let trusted = device.is_some_and(|d| self.core.hasher.trusts_device(email_key, d));
        Attempt::new(email_key, ip, trusted)
    }

    /// Step one of signing in: email and password from `ip`, in a browser that may carry a
    /// device token (`device`: the one a sign-in as this person gave it before).
    ///
    /// # Errors
    /// [`ServiceError::Busy`] when too many passwords are being checked already (nothing is
    /// counted); storage failures. A refusal is [`SignIn::Refused`] or [`SignIn::Locked`].
    pub fn sign_in(&self, email: &str, password: &str, ip: IpAddr, device: Option<&str>) -> Result<SignIn, ServiceError> {
        let passwords = self.passwords()?;
        let now = self.core.now();
        let key = User::email_key(email);
        let attempt = self.attempt(&key, ip, device);
        if let Some(until) = attempt.already_locked(self.core.store(), now)? {
            return Ok(SignIn::Locked { until });
        }
        let (counted, user) = Staffing::write(self.core.store(), |tx| {
            let counted = attempt.count(tx, now)?;
            let user = match counted {
                Counted::Yes(_) => tx.user_by_email(&key)?.filter(User::is_active),
                Counted::Locked(_) => None,
            };
            Ok((counted, user))
        })?;
        if let Some(until) = counted.locked() {
            return Ok(SignIn::Locked { until });
        }
        // Long input is cut before hashing: a stored password is at most the maximum.
        let typed: String = password.chars().take(MAX_PASSWORD_CHARS.saturating_add(1)).collect();
        let Ok(right) = passwords.try_verify(&typed, user.as_ref().and_then(|u| u.password_hash.as_deref())) else {
            // Not checked: the attempt is given back, and the person asked to retry shortly.
            OnSessions::write(self.core.store(), |tx| counted.not_judged(tx, now))?;
            return Err(ServiceError::Busy { retry_after: 1 });
        };
        Staffing::write(self.core.store(), |tx| match (&user, right) {
            (Some(user), true) => {
                counted.succeeded(tx, now)?;
                let stage = if user.has_second_factor() { SessionStage::SecondFactor } else { SessionStage::Active };
                let token = self.open_session(tx, user, stage, Mode::Test, ip, now)?;
                let action = if stage == SessionStage::Active { "sign_in" } else { "sign_in.password" };
                tx.append_audit(&entry(user, action, Some(user.id.to_string()), String::new(), ip, now))?;
                Ok(match stage {
                    SessionStage::Active => SignIn::SignedIn { token, device: self.core.hasher.device_token(&key) },
                    SessionStage::SecondFactor => SignIn::SecondFactor { token },
                })
            }
            _ => {
                let mut failed = match &user {
                    Some(u) => entry(u, "sign_in.failed", Some(u.id.to_string()), "wrong password".into(), ip, now),
                    None => {
                        let mut e = entry(&anonymous(&key), "sign_in.failed", None, "unknown email".into(), ip, now);
                        e.org_id = None;
                        e.user_id = None;
                        e
                    }
                };
                if counted.locked_account(now) {
                    failed.detail.push_str("; the account now waits 15 minutes at this address");
                }
                tx.append_audit(&failed)?;
                Ok(SignIn::Refused)
            }
        })
    }

    /// Step two: the second factor (a TOTP code, or a recovery code once) under the pending
    /// session's token, counted as step one is. On success the pending session ends and a new
    /// one (a new token) begins.
    ///
    /// # Errors
    /// Storage failures.
    pub fn verify_second_factor(&self, pending_token: &str, code: &str, ip: IpAddr, device: Option<&str>) -> Result<SignIn, ServiceError> {
        let now = self.core.now();
        let digest = token_digest(pending_token);
        Staffing::write(self.core.store(), |tx| {
            let Some(pending) = tx.session(&digest)?.filter(|s| s.stage == SessionStage::SecondFactor && s.is_live(now)) else {
                return Ok(SignIn::Refused);
            };
            let Some(user) = tx.user(&pending.user_id)?.filter(User::is_active) else { return Ok(SignIn::Refused) };
            let key = User::email_key(&user.email);
            let counted = self.attempt(&key, ip, device).count(tx, now)?;
            if let Some(until) = counted.locked() {
                tx.append_audit(&entry(&user, "sign_in.locked", Some(user.id.to_string()), "authentication code".into(), ip, now))?;
                return Ok(SignIn::Locked { until });
            }
            if !self.second_factor_holds(tx, &user, code, now)? {
                tx.append_audit(&entry(&user, "sign_in.failed", Some(user.id.to_string()), "wrong authentication code".into(), ip, now))?;
                return Ok(SignIn::Refused);
            }
            counted.succeeded(tx, now)?;
            tx.delete_session(&digest)?;
            let token = self.open_session(tx, &user, SessionStage::Active, pending.mode, ip, now)?;
            tx.append_audit(&entry(&user, "sign_in", Some(user.id.to_string()), "with the second factor".into(), ip, now))?;
            Ok(SignIn::SignedIn { token, device: self.core.hasher.device_token(&key) })
        })
    }

    /// The signed-in person behind a session token, if the session is live (not ended, not idle
    /// for 30 minutes, under 12 hours old) and its person still belongs to the organisation.
    /// Records the request (at most once a minute).
    ///
    /// # Errors
    /// Storage failures.
    pub fn session(&self, token: &str) -> Result<Option<SignedIn>, ServiceError> {
        let now = self.core.now();
        let digest = token_digest(token);
        let found = Staffing::read(self.core.store(), |tx| {
            let Some(session) = tx.session(&digest)?.filter(|s| s.stage == SessionStage::Active && s.is_live(now)) else {
                return Ok(None);
            };
            let Some(user) = tx.user(&session.user_id)?.filter(User::is_active) else { return Ok(None) };
            let Some(org) = tx.org(&user.org_id)? else { return Ok(None) };
            let org_requires_two_factor = tx.org_requires_two_factor(&org.id)?;
            Ok(Some((session, user, org, org_requires_two_factor)))
        })?;
        let Some((session, user, org, org_requires_two_factor)) = found else { return Ok(None) };
        if session.needs_touch(now) {
            OnSessions::write(self.core.store(), |tx| Ok(tx.touch_session(&digest, now)?))?;
        }
        let csrf_token = self.core.hasher.keyed_digest(&format!("csrf:{digest}"));
        Ok(Some(SignedIn { session, user, org, org_requires_two_factor, csrf_token }))
    }

    /// Ends one session (signing out on one browser ends it on every instance at once).
    ///
    /// # Errors
    /// Storage failures.
    pub fn sign_out(&self, who: &SignedIn, ip: IpAddr) -> Result<(), ServiceError> {
        let now = self.core.now();
        Staffing::write(self.core.store(), |tx| {
            tx.delete_session(&who.session.digest)?;
            tx.append_audit(&entry(&who.user, "sign_out", Some(who.user.id.to_string()), String::new(), ip, now))?;
            Ok(())
        })
    }

    /// Ends every session of the person, this one included.
    ///
    /// # Errors
    /// Storage failures.
    pub fn sign_out_everywhere(&self, who: &SignedIn, ip: IpAddr) -> Result<usize, ServiceError> {
        let now = self.core.now();
        Staffing::write(self.core.store(), |tx| {
            let ended = tx.delete_user_sessions(&who.user.id)?;
            tx.append_audit(&entry(&who.user, "sign_out.everywhere", Some(who.user.id.to_string()), format!("{ended} sessions"), ip, now))?;
            Ok(ended)
        })
    }

    /// Switches the mode the session shows and acts on ("Test mode").
    ///
    /// # Errors
    /// Storage failures.
    pub fn set_mode(&self, who: &SignedIn, mode: Mode) -> Result<(), ServiceError> {
        OnSessions::write(self.core.store(), |tx| Ok(tx.set_session_mode(&who.session.digest, mode)?)).map(|_| ())
    }

    /// Changes the password (the current one is asked; a wrong one counts as a failed sign-in).
    /// Every session of the person ends; the new session's token is returned.
    ///
    /// # Errors
    /// [`ServiceError::Validation`] on `current_password`, `new_password` or `confirm_password`;
    /// storage failures.
    pub fn change_password(&self, who: &SignedIn, current: &str, new: &str, confirm: &str, ip: IpAddr) -> Result<String, ServiceError> {
        let passwords = self.passwords()?;
        let now = self.core.now();
        let mut errors = Vec::new();
        super::team::check_new_password(new, confirm, &who.user, &mut errors);
        let attempt = Attempt::new(&User::email_key(&who.user.email), ip, false);
        let counted = OnSessions::write(self.core.store(), |tx| attempt.count(tx, now))?;
        if let Some(until) = counted.locked() {
            return Err(ServiceError::field(
                "current_password",
                "locked",
                format!("too many failed attempts; try again after {}", until.to_rfc3339()),
            ));
        }
        let Ok(right) = passwords.try_verify(current, who.user.password_hash.as_deref()) else {
            OnSessions::write(self.core.store(), |tx| counted.not_judged(tx, now))?;
            return Err(ServiceError::Busy { retry_after: 1 });
        };
        if !right {
            errors.insert(0, crate::error::FieldError::new("current_password", "wrong_password", "The current password is wrong."));
        } else if !errors.is_empty() {
            // The right password with a refused new one: not a failed attempt.
            OnSessions::write(self.core.store(), |tx| counted.succeeded(tx, now))?;
        }
        if !errors.is_empty() {
            return Err(ServiceError::Validation(errors));
        }
        let hash = passwords.hash(new).map_err(|e| ServiceError::Internal(e.to_string()))?;
        Staffing::write(self.core.store(), |tx| {
            counted.succeeded(tx, now)?;
            tx.set_password(&who.user.id, &hash)?;
            tx.delete_user_sessions(&who.user.id)?;
            let token = self.open_session(tx, &who.user, SessionStage::Active, who.session.mode, ip, now)?;
            tx.append_audit(&entry(&who.user, "password.changed", Some(who.user.id.to_string()), String::new(), ip, now))?;
            Ok(token)
        })
    }
}

/// A stand-in for an unknown email in the audit log.
fn anonymous(email_key: &str) -> User {
    User {
        id: malipo_core::UserId::from_trusted(String::new()),
        org_id: malipo_core::OrgId::from_trusted(String::new()),
        email: email_key.chars().take(254).collect(),
        name: String::new(),
        role: malipo_auth::Role::Viewer,
        password_hash: None,
        totp_secret: None,
        totp_enabled_at: None,
        totp_last_step: 0,
        demo: false,
        created_at: Timestamp::from_micros(0),
        activated_at: None,
        removed_at: None,
    }
}
