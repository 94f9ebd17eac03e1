//! Turning on the second factor, checking it (at sign-in and for step-up actions), and
//! recovery codes.

use std::net::IpAddr;

use malipo_auth::{generate_recovery_codes, is_recovery_code, normalise_recovery_code, SessionStage, TotpSecret, User};
use malipo_core::Timestamp;

use super::failures::Attempt;
use super::person::{entry, People, SignedIn};
use crate::error::ServiceError;
use crate::ports::{PeopleFlow, UserRepo};
use crate::views::{OnUsers, Staffing, View};

/// What the enrolment page shows: the secret as text and as the `otpauth://` URI of the QR code.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Enrolment {
    /// The setup key, base32 in groups of four.
    pub setup_key: String,
    /// `otpauth://totp/Malipo:<email>?secret=…&issuer=Malipo`.
    pub otpauth_uri: String,
}

/// The refusal of a wrong, replayed or missing authentication code, on the form's
/// "Authentication code" field (`code`).
pub fn wrong_code() -> ServiceError {
    ServiceError::field("code", "wrong_code", "The authentication code is wrong or was already used.")
}

/// The refusal of every authentication code, the right one included, after too many wrong ones:
/// on the form's "Authentication code" field, saying until when.
pub fn locked_code(until: Timestamp) -> ServiceError {
    let at = until.to_offset_datetime().time();
    ServiceError::field(
        "code",
        "locked",
        format!(
            "Too many wrong authentication codes: actions that ask for one must wait 15 minutes (until {:02}:{:02} UTC).",
            at.hour(),
            at.minute()
        ),
    )
}

impl People<'_> {
    fn secret_of(&self, user: &User) -> Result<Option<TotpSecret>, ServiceError> {
        user.totp_secret
            .as_deref()
            .map(|sealed| self.core.cipher.open(sealed).map(TotpSecret::from_bytes))
            .transpose()
            .map_err(|e| ServiceError::Internal(format!("cannot open a TOTP secret: {e}")))
    }

    /// Whether `code` is a right second factor of `user` now, using it up: a TOTP code newer
    /// than the last one accepted (recorded by a guarded update, so that two requests with one
    /// code accept it once), or one of their unused recovery codes.
    pub(super) fn second_factor_holds(
        &self,
        tx: &mut (impl UserRepo + ?Sized),
        user: &User,
        code: &str,
        now: Timestamp,
    ) -> Result<bool, ServiceError> {
        if !user.has_second_factor() {
            return Ok(false);
        }
        if is_recovery_code(code) {
            let digest = self.core.hasher.keyed_digest(&normalise_recovery_code(code));
            return Ok(tx.use_recovery_code(&user.id, &digest, now)?);
        }
        let Some(secret) = self.secret_of(user)? else { return Ok(false) };
        match secret.accept(code, now.as_micros().div_euclid(1_000_000), user.totp_last_step) {
            Some(step) => Ok(tx.advance_totp_step(&user.id, step)?),
            None => Ok(false),
        }
    }

    /// The enrolment page's secret: the one set earlier and not yet confirmed (so reloading the
    /// page keeps the QR code the person scanned), or a new one.
    ///
    /// # Errors
    /// [`ServiceError::InvalidState`] when the second factor is already on; storage failures.
    pub fn begin_enrolment(&self, who: &SignedIn) -> Result<Enrolment, ServiceError> {
        if who.user.has_second_factor() {
            return Err(ServiceError::InvalidState("two-factor authentication is already on".into()));
        }
        let secret = match self.secret_of(&who.user)? {
            Some(s) => s,
            None => {
                let s = TotpSecret::generate();
                let sealed = self.core.cipher.seal(s.as_bytes());
                if !OnUsers::write(self.core.store(), |tx| Ok(tx.set_totp_secret(&who.user.id, &sealed)?))? {
                    return Err(ServiceError::InvalidState("two-factor authentication is already on".into()));
                }
                s
            }
        };
        let otpauth_uri = secret.otpauth_uri(&who.user.email).map_err(|e| ServiceError::Internal(e.to_string()))?;
        Ok(Enrolment { setup_key: secret.setup_key(), otpauth_uri })
    }

    /// Turns the second factor on with a code from the app: every session of the person ends
    /// and a new one begins (a change of privilege), and ten recovery codes are issued, shown
    /// this once.
    ///
    /// # Errors
    /// [`wrong_code`]; [`ServiceError::InvalidState`] when no enrolment was begun or it is on;
    /// storage failures.
    pub fn confirm_enrolment(&self, who: &SignedIn, code: &str, ip: IpAddr) -> Result<(String, Vec<String>), ServiceError> {
        // As stored now: the secret was set after the page's session was read.
        let user = OnUsers::read(self.core.store(), |tx| Ok(tx.user(&who.user.id)?))?.ok_or(ServiceError::NotFound)?;
        if user.has_second_factor() {
            return Err(ServiceError::InvalidState("two-factor authentication is already on".into()));
        }
        let Some(secret) = self.secret_of(&user)? else {
            return Err(ServiceError::InvalidState("open the enrolment page first".into()));
        };
        let now = self.core.now();
        let Some(step) = secret.accept(code, now.as_micros().div_euclid(1_000_000), 0) else { return Err(wrong_code()) };
        let codes = generate_recovery_codes();
        let digests: Vec<String> = codes.iter().map(|c| self.core.hasher.keyed_digest(&normalise_recovery_code(c))).collect();
        let token = Staffing::write(self.core.store(), |tx| {
            if !tx.enable_totp(&who.user.id, step, now)? {
                return Err(ServiceError::InvalidState("two-factor authentication is already on".into()));
            }
            tx.replace_recovery_codes(&who.user.id, &digests, now)?;
            tx.delete_user_sessions(&who.user.id)?;
            let token = self.open_session(tx, &who.user, SessionStage::Active, who.session.mode, ip, now)?;
            tx.append_audit(&entry(&who.user, "two_factor.enabled", Some(who.user.id.to_string()), String::new(), ip, now))?;
            Ok(token)
        })?;
        Ok((token, codes))
    }

    /// A fresh second factor for a step-up action (creating or revoking an API key, rotating a
    /// webhook secret, changing a role, approving a batch): the code is used up. It is limited
    /// as the sign-in's second factor is, where those failures count ([`super::failures`]): past
    /// the limit every step-up is refused, the right code included, until the wait ends. Failed
    /// and refused attempts are audited.
    ///
    /// # Errors
    /// [`wrong_code`] (also when the person has no second factor, with a message saying so),
    /// [`locked_code`]; storage failures.
    pub fn step_up(&self, who: &SignedIn, code: &str, ip: IpAddr) -> Result<(), ServiceError> {
        if !who.user.has_second_factor() {
            return Err(ServiceError::field(
                "code",
                "two_factor_required",
                "This action asks for an authentication code: turn on two-factor authentication first.",
            ));
        }
        let now = self.core.now();
        let attempt = Attempt::new(&User::email_key(&who.user.email), ip, false);
        let audit = |tx: &mut dyn PeopleFlow, action: &str, detail: &str| {
            tx.append_audit(&entry(&who.user, action, Some(who.user.id.to_string()), detail.to_owned(), ip, now))
        };
        Staffing::write(self.core.store(), |tx| {
            let user = tx.user(&who.user.id)?.ok_or(ServiceError::NotFound)?;
            let counted = attempt.count(tx, now)?;
            if let Some(until) = counted.locked() {
                audit(tx, "step_up.locked", "refused: too many wrong codes")?;
                return Ok(Err(locked_code(until)));
            }
            if self.second_factor_holds(tx, &user, code, now)? {
                counted.succeeded(tx, now)?;
                return Ok(Ok(()));
            }
            let detail = if counted.locked_account(now) { "wrong code; step-up now waits 15 minutes" } else { "wrong code" };
            audit(tx, "step_up.failed", detail)?;
            Ok(Err(wrong_code()))
        })?
    }

    /// How many of the person's recovery codes are unused.
    ///
    /// # Errors
    /// Storage failures.
    pub fn recovery_codes_left(&self, who: &SignedIn) -> Result<usize, ServiceError> {
        OnUsers::read(self.core.store(), |tx| Ok(tx.recovery_codes_left(&who.user.id)?))
    }
}
