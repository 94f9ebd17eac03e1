//! Callbacks: a request may ask for its outcome to be sent to a URL of its own (the GSMA door's
//! `X-Callback-URL`). The callback is written with the request's idempotency key, in the
//! transaction that makes the object ([`crate::Idem::callback`]); it waits until the object is
//! final (the moves that end an object make it due, in their transaction), then is claimed, sent and retried
//! on the webhooks' schedule until a 2xx, as a delivery is. What is sent is the front end's
//! rendering of the object as its caller would read it at send time, signed with the Standard
//! Webhooks headers under the organisation's callback secret (one per mode, sealed at rest).

use std::time::Duration;

use malipo_auth::Principal;
use malipo_core::{Mode, OrgId, Timestamp};
use malipo_webhooks::{Secret, UrlPolicy};

use serde::{Deserialize, Serialize};

use super::model::{next_attempt, open_secret, LEASE_MARGIN_SECONDS, ROTATION_OVERLAP_SECONDS};
use crate::commands::RotateCallbackSecret;
use crate::core::Core;
use crate::error::ServiceError;
use crate::idempotency::{Done, Idem, Subject};
use crate::needs::{self, require};
use crate::ports::{AuthRepo, Callback, CallbackRepo, CallbackSecret, CallbackState, SendOutcome};
use crate::views::{CallingBack, View};

/// One callback attempt to make: the object to render, as whom, where, and the secrets to sign
/// it with.
#[derive(Clone, Debug)]
pub struct CallbackJob {
    /// The callback (its id is the `webhook-id`).
    pub id: String,
    /// The claim's lease (the attempt is recorded against it).
    pub lease: Timestamp,
    /// Where to send.
    pub url: String,
    /// What the URL may reach.
    pub policy: UrlPolicy,
    /// The caller that asked, as it reads the object now.
    pub principal: Principal,
    /// The object the request made.
    pub object_id: String,
    /// The client's own id of the request, sent back.
    pub correlation_id: Option<String>,
    /// The signing time, Unix seconds (the `webhook-timestamp`).
    pub timestamp: i64,
    /// The organisation's current callback secret.
    pub secret: Secret,
    /// Its previous secret while that is still valid (the signature carries both).
    pub previous_secret: Option<Secret>,
    /// The send timeout.
    pub timeout: Duration,
}

/// The organisation's callback secret in the caller's mode, as a receiver needs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallbackSigning {
    /// `whsec_…`: verifies callbacks (Standard Webhooks).
    pub secret: String,
    /// Until when the previous secret still signs callbacks too, after a rotation.
    pub previous_expires_at: Option<Timestamp>,
    /// When the secret was made or last rotated.
    pub updated_at: Timestamp,
}

/// The callback sender's use cases, and the organisation's callback secret.
pub struct Callbacks<'a> {
    core: &'a Core,
}

impl<'a> Callbacks<'a> {
    pub(crate) fn new(core: &'a Core) -> Self {
        Callbacks { core }
    }

    fn open(&self, sealed: &[u8]) -> Result<Secret, ServiceError> {
        open_secret(&self.core.cipher, sealed)
    }

    /// The organisation's secret in a mode, made on first use.
    fn secret_of(
        &self,
        tx: &mut (impl CallbackRepo + ?Sized),
        org_id: &OrgId,
        mode: Mode,
        now: Timestamp,
    ) -> Result<CallbackSecret, ServiceError> {
        if let Some(s) = tx.callback_secret(org_id, mode)? {
            return Ok(s);
        }
        let made = CallbackSecret {
            org_id: org_id.clone(),
            mode,
            secret: self.core.cipher.seal(Secret::generate().as_bytes()),
            previous: None,
            created_at: now,
            updated_at: now,
        };
        tx.insert_callback_secret(&made)?;
        Ok(made)
    }

    fn signing(&self, s: &CallbackSecret) -> Result<CallbackSigning, ServiceError> {
        Ok(CallbackSigning {
            secret: self.open(&s.secret)?.to_whsec(),
            previous_expires_at: s.previous.as_ref().map(|(_, until)| *until),
            updated_at: s.updated_at,
        })
    }

    /// The organisation's callback secret in the caller's mode (made on first ask).
    ///
    /// # Errors
    /// [`ServiceError::Forbidden`]; storage failures.
    pub fn secret(&self, principal: &Principal) -> Result<CallbackSigning, ServiceError> {
        require(principal, &needs::MANAGE_CALLBACKS)?;
        let now = self.core.now();
        let stored = CallingBack::write(self.core.store(), |tx| self.secret_of(tx, &principal.org_id, principal.mode, now))?;
        self.signing(&stored)
    }

    /// Replaces the organisation's callback secret in the caller's mode, once per key; the
    /// previous one still signs callbacks (beside the new one) for 24 hours, so a receiver can
    /// switch over. A repeat answers the secret the first request made (kept sealed with the key).
    ///
    /// # Errors
    /// [`ServiceError::Forbidden`]; the idempotency errors; storage failures.
    pub fn rotate(&self, principal: &Principal, _: &RotateCallbackSecret, idem: &Idem) -> Result<Done<CallbackSigning>, ServiceError> {
        require(principal, &needs::MANAGE_CALLBACKS)?;
        let now = self.core.now();
        let sealed = self.core.cipher.seal(Secret::generate().as_bytes());
        let done = self.core.idempotent(idem, CallingBack, |tx| {
            let mut s = self.secret_of(tx, &principal.org_id, principal.mode, now)?;
            let old = std::mem::replace(&mut s.secret, sealed.clone());
            s.previous = Some((old, now.plus_seconds(ROTATION_OVERLAP_SECONDS)));
            s.updated_at = now;
            tx.update_callback_secret(&s)?;
            Ok(Rotated { sealed: s.secret, previous_expires_at: s.previous.map(|(_, until)| until), updated_at: now })
        })?;
        let signing = CallbackSigning {
            secret: self.open(&done.value.sealed)?.to_whsec(),
            previous_expires_at: done.value.previous_expires_at,
            updated_at: done.value.updated_at,
        };
        Ok(Done { value: signing, replayed: done.replayed })
    }

    /// The callbacks the caller's organisation asked for on an object, oldest first.
    ///
    /// # Errors
    /// [`ServiceError::Forbidden`]; storage failures.
    pub fn of_object(&self, principal: &Principal, object_id: &str) -> Result<Vec<Callback>, ServiceError> {
        require(principal, &needs::ANY_CREDENTIAL)?;
        CallingBack::read(self.core.store(), |tx| Ok(tx.callbacks_of_object(&principal.org_id, principal.mode, object_id)?))
    }

    /// Claims due callbacks and prepares each attempt (signed as of now). A callback whose
    /// credential has been revoked since is failed instead: nobody may read its object now.
    ///
    /// # Errors
    /// Storage failures.
    pub fn claim(&self, limit: usize) -> Result<Vec<CallbackJob>, ServiceError> {
        let now = self.core.now();
        let timeout = self.core.webhooks.timeout;
        let lease = now.plus_millis(i64::try_from(timeout.as_millis()).unwrap_or(i64::MAX)).plus_seconds(LEASE_MARGIN_SECONDS);
        CallingBack::write(self.core.store(), |tx| {
            let mut jobs = Vec::new();
            for mut callback in tx.claim_due_callbacks(now, lease, limit)? {
                let Some(principal) = principal_of(tx, &callback)? else {
                    callback.state = CallbackState::Failed;
                    callback.next_attempt_at = None;
                    callback.last_error = Some("the credential that asked for it is revoked".into());
                    callback.updated_at = now;
                    tx.update_callback(&callback)?;
                    continue;
                };
                let secret = self.secret_of(tx, &callback.org_id, callback.mode, now)?;
                // One callback whose secret cannot be opened (a key it was not sealed with) must
                // not hold up the rest of the batch: it is logged and comes due again after its
                // lease.
                let opened = self.open(&secret.secret).and_then(|current| {
                    let previous = match &secret.previous {
                        Some((sealed, until)) if *until > now => Some(self.open(sealed)?),
                        _ => None,
                    };
                    Ok((current, previous))
                });
                let (current, previous) = match opened {
                    Ok(both) => both,
                    Err(e) => {
                        tracing::error!(callback = %callback.id, error = %e, "cannot open the callback secret");
                        continue;
                    }
                };
                jobs.push(CallbackJob {
                    id: callback.id,
                    lease,
                    url: callback.url,
                    policy: self.core.webhooks.policy(callback.mode),
                    principal,
                    object_id: callback.object_id,
                    correlation_id: callback.correlation_id,
                    timestamp: now.as_unix_seconds(),
                    secret: current,
                    previous_secret: previous,
                    timeout,
                });
            }
            Ok(jobs)
        })
    }

    /// Records what an attempt got: a 2xx settles the callback; anything else is retried on the
    /// webhooks' schedule (or after `Retry-After` on 429 and 503, whichever is later) until the
    /// schedule runs out. An attempt whose lease has lapsed (another worker owns the callback
    /// now) changes nothing.
    ///
    /// # Errors
    /// Storage failures.
    pub fn record(&self, job: &CallbackJob, outcome: &SendOutcome) -> Result<(), ServiceError> {
        let now = self.core.now();
        CallingBack::write(self.core.store(), |tx| {
            let Some(mut callback) = tx.lock_callbacks(std::slice::from_ref(&job.id))?.pop() else { return Ok(()) };
            if callback.state != CallbackState::Pending || callback.next_attempt_at != Some(job.lease) {
                return Ok(());
            }
            callback.attempts = callback.attempts.saturating_add(1);
            callback.updated_at = now;
            match outcome {
                SendOutcome::Answered { status, .. } if (200..300).contains(status) => {
                    callback.state = CallbackState::Succeeded;
                    callback.next_attempt_at = None;
                    callback.last_status = Some(*status);
                    callback.last_error = None;
                }
                other => {
                    let retry_after = match other {
                        SendOutcome::Answered { status, retry_after } => {
                            callback.last_status = Some(*status);
                            callback.last_error = Some(format!("HTTP {status}"));
                            retry_after.filter(|_| matches!(status, 429 | 503))
                        }
                        SendOutcome::Failed(e) => {
                            callback.last_status = None;
                            callback.last_error = Some(e.clone());
                            None
                        }
                    };
                    match next_attempt(&self.core.webhooks.schedule, callback.attempts, retry_after, now) {
                        Some(at) => callback.next_attempt_at = Some(at),
                        None => {
                            callback.state = CallbackState::Failed;
                            callback.next_attempt_at = None;
                        }
                    }
                }
            }
            tx.update_callback(&callback)?;
            Ok(())
        })
    }
}

/// What a rotation made, as kept with its key: the new secret sealed, never in the open.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Rotated {
    sealed: Vec<u8>,
    previous_expires_at: Option<Timestamp>,
    updated_at: Timestamp,
}

impl Subject for Rotated {
    fn subject(&self) -> (String, String) {
        ("callback_secret".to_owned(), "rotated".to_owned())
    }
}

/// The caller a callback reads its object as: the credential that asked, with its scopes now;
/// `None` when it is revoked or gone.
fn principal_of(tx: &mut (impl AuthRepo + ?Sized), callback: &Callback) -> Result<Option<Principal>, ServiceError> {
    let Some(credential) = tx.credential(&callback.client_id)?.filter(|c| c.revoked_at.is_none() && c.org_id == callback.org_id) else {
        return Ok(None);
    };
    let Some(org) = tx.org(&credential.org_id)? else { return Ok(None) };
    Ok(Some(Principal {
        client_id: credential.client_id,
        org_id: org.id,
        org_kind: org.kind,
        country: org.country,
        mode: credential.mode,
        scopes: credential.scopes,
        person: credential.created_by,
        role: None,
    }))
}
