//! Running an effect under an idempotency key: the key is claimed, the effect applied and a
//! snapshot of its result stored in one transaction, so a retry is settled exactly once and
//! given the same result.

use malipo_charges::Charge;
use malipo_idempotency::{Decision, Fingerprint, IdempotencyKey, IdempotencyRecord, KeyScope, Outcome};
use serde::de::DeserializeOwned;
use serde::Serialize;

use malipo_core::{AuditId, EventId, Mode, OrgId, Timestamp, UserId};
use malipo_payouts::{BulkPayout, Payout, Reversal};
use malipo_requests::PaymentRequest;
use malipo_webhooks::{check_url, Endpoint};

use crate::core::Core;
use crate::error::{Earlier, ServiceError, StoreError};
use crate::ports::{write, AuditEntry, Callback, CallbackState, Creation};
use crate::snapshot;
use crate::views::{Charging, OnKeys, View};

/// The key of a state-changing request and what it is bound to.
#[derive(Clone, Debug)]
pub struct Idem {
    /// Organisation + mode + operation.
    pub scope: KeyScope,
    /// The key.
    pub key: IdempotencyKey,
    /// The request's fingerprint.
    pub fingerprint: Fingerprint,
    /// The person acting, when a person acts (the console): the action is recorded in the audit
    /// log in its own transaction, so an action is never without its entry nor an entry without
    /// its action.
    pub actor: Option<Actor>,
    /// Where the request asked for its outcome to be sent once what it made is final (the
    /// GSMA door's `X-Callback-URL`): written with the key, in the effect's transaction, so a
    /// request that made something never loses its callback (`crate::callbacks`).
    pub callback: Option<CallbackTarget>,
}

/// Where a request's outcome is to be sent, and the credential that asked (the outcome is read
/// as it would read it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallbackTarget {
    /// The receiver's URL.
    pub url: String,
    /// The credential's `client_id` (the principal's).
    pub client_id: String,
    /// The client's own id of the request, sent back with the outcome.
    pub correlation_id: Option<String>,
}

/// A person acting through an idempotent use case, for the audit log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Actor {
    /// The person.
    pub user_id: UserId,
    /// Their email (the log's "who").
    pub email: String,
    /// Where from.
    pub ip: String,
    /// What, e.g. `reversal.created`.
    pub action: String,
}

/// What an idempotent use case made or changed, as the audit log names it: the object's id and
/// a short description.
pub trait Subject {
    /// The object's id (`rv_…`, `po_…`) and a short description (amounts, states).
    fn subject(&self) -> (String, String);

    /// Whether the object is final as made (a callback for it is due at once), else it becomes
    /// due when a later move ends it.
    fn is_final(&self) -> bool {
        true
    }
}

impl Subject for Charge {
    fn subject(&self) -> (String, String) {
        (self.id.to_string(), format!("{} {}", self.currency, self.currency.format_amount(self.amount)))
    }

    fn is_final(&self) -> bool {
        self.state.is_final()
    }
}

impl Subject for Payout {
    fn subject(&self) -> (String, String) {
        let to = format!("{} {} to {}", self.currency, self.currency.format_amount(self.amount), self.payee_msisdn);
        (self.id.to_string(), to)
    }

    fn is_final(&self) -> bool {
        self.state.is_final()
    }
}

impl Subject for BulkPayout {
    fn subject(&self) -> (String, String) {
        let total = format!("{} items, {} {}", self.item_count, self.currency, self.currency.format_amount(self.total_amount));
        (self.id.to_string(), total)
    }

    fn is_final(&self) -> bool {
        matches!(self.state, malipo_payouts::BatchState::Completed | malipo_payouts::BatchState::Rejected)
    }
}

impl Subject for Reversal {
    fn subject(&self) -> (String, String) {
        let original = match &self.original {
            malipo_payouts::ReversalOriginal::Charge(c) => c.to_string(),
            malipo_payouts::ReversalOriginal::Payout(p) => p.to_string(),
        };
        let what = format!("{} {} of {original}: {}", self.currency, self.currency.format_amount(self.amount), self.reason);
        (self.id.to_string(), what)
    }
}

impl Subject for PaymentRequest {
    fn subject(&self) -> (String, String) {
        (self.id.to_string(), format!("{} {}, {}", self.currency, self.currency.format_amount(self.amount), self.state.as_str()))
    }

    fn is_final(&self) -> bool {
        self.state.is_final()
    }
}

impl Subject for Endpoint {
    fn subject(&self) -> (String, String) {
        (self.id.to_string(), self.url.clone())
    }
}

/// What an idempotent use case did: its result, and whether this request repeated one already
/// settled under its key (the result is then as it was the first time, whatever has happened
/// since). A front end renders it: the same result, the same answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Done<T> {
    /// The result.
    pub value: T,
    /// Whether it is a repeat's.
    pub replayed: bool,
}

impl<T> Done<T> {
    /// The result of a first request.
    pub(crate) fn new(value: T) -> Self {
        Done { value, replayed: false }
    }

    /// The same outcome with another value (the same repeat or not).
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Done<U> {
        Done { value: f(self.value), replayed: self.replayed }
    }
}

/// What a use case's result must be to run under a key: described in the audit log, and kept
/// as a snapshot ([`crate::snapshot`]).
pub trait Keep: Subject + Serialize + DeserializeOwned {}

impl<T: Subject + Serialize + DeserializeOwned> Keep for T {}

impl Core {
    /// Runs `effect` once per key, in one transaction with the key: the effect is applied and the
    /// key stored with a snapshot of its result. A repeat with the same fingerprint is given that
    /// result again; with another fingerprint it is refused. When a concurrent request stores the
    /// key first, this transaction rolls back and the request is given the winner's result.
    /// Errors from `effect` roll everything back, the key included, so a refused request writes
    /// nothing and may be retried.
    ///
    /// # Errors
    /// [`ServiceError::IdempotencyReused`], [`ServiceError::IdempotencyInProgress`],
    /// [`ServiceError::AnsweredEarlier`], or the effect's.
    pub(crate) fn idempotent<V: View, T: Keep>(
        &self,
        idem: &Idem,
        _view: V,
        mut effect: impl for<'a> FnMut(&'a mut V::Of<'a>) -> Result<T, ServiceError>,
    ) -> Result<Done<T>, ServiceError> {
        let now = self.now();
        if let Some(target) = &idem.callback {
            checked_callback_url(self, idem.scope.mode, &target.url)?;
        }
        // First attempt: assume a new key (the common case) and skip the lookup; the insert at
        // the end detects a repeat. Later attempts look the key up first.
        let mut first_attempt = true;
        write(self.store(), |tx| {
            if !std::mem::take(&mut first_attempt) {
                if let Some(existing) = tx.idempotency_record(&idem.scope, &idem.key)? {
                    return decide(&existing, &idem.fingerprint);
                }
            }
            let value = match effect(V::narrow(tx)) {
                Ok(v) => v,
                // A repeat whose effect would now be refused (the charge has moved on, the
                // endpoint is deleted) still answers as the first request did. Store errors are
                // excluded: they may have aborted the transaction.
                Err(e) if !matches!(e, ServiceError::Store(_)) => {
                    return match tx.idempotency_record(&idem.scope, &idem.key)? {
                        Some(existing) => decide(&existing, &idem.fingerprint),
                        None => Err(e),
                    };
                }
                Err(e) => return Err(e),
            };
            if let Some(actor) = &idem.actor {
                let (object, detail) = value.subject();
                tx.append_audit(&AuditEntry {
                    id: AuditId::new(),
                    org_id: Some(idem.scope.org_id.clone()),
                    user_id: Some(actor.user_id.clone()),
                    actor: actor.email.clone(),
                    action: actor.action.clone(),
                    object_id: Some(object),
                    detail,
                    ip: Some(actor.ip.clone()),
                    mode: Some(idem.scope.mode),
                    created_at: now,
                })?;
            }
            if let Some(target) = &idem.callback {
                let made = (&idem.scope.org_id, idem.scope.mode, target.client_id.as_str());
                tx.insert_callback(&new_callback(made, value.subject().0, target, value.is_final(), now))?;
            }
            let record = record(&idem.fingerprint, &value, now)?;
            if tx.insert_key(&idem.scope, &idem.key, &record)? {
                Ok(Done::new(value))
            } else {
                // The key exists: undo this effect and answer from the stored record.
                Err(StoreError::Retry.into())
            }
        })
    }

    /// [`Core::idempotent`] for a new charge, whole before its transaction: the store writes it
    /// with its key ([`crate::ports::Store::create_charge`], which may share the transaction with
    /// other creations); a key stored already is answered from its record.
    ///
    /// # Errors
    /// As [`Core::idempotent`].
    pub(crate) fn create_charge(&self, idem: &Idem, charge: &Charge) -> Result<Done<Charge>, ServiceError> {
        // A person's creation, with its audit entry, and one with a callback write more than the
        // charge and its key.
        if idem.actor.is_none() && idem.callback.is_none() {
            let record = record(&idem.fingerprint, charge, self.now())?;
            let creation = Creation { charge: charge.clone(), key: (idem.scope.clone(), idem.key.clone(), record) };
            match self.store().create_charge(&creation)? {
                Some(members) => {
                    if members > 1 {
                        self.observer.group_committed(members);
                    }
                    return Ok(Done::new(charge.clone()));
                }
                None => {
                    if let Some(done) = self.stored_outcome(idem)? {
                        return Ok(done);
                    }
                }
            }
        }
        self.idempotent(idem, Charging, |tx| {
            tx.insert_charge(charge)?;
            Ok(charge.clone())
        })
    }

    /// The result already stored for this key, if any: for use cases whose checks before the
    /// effect must not run again on a retry (a PIN change re-checking a PIN that has changed),
    /// and for new work the service cannot take now (a repeat is no new work).
    ///
    /// # Errors
    /// [`ServiceError::IdempotencyReused`], [`ServiceError::IdempotencyInProgress`],
    /// [`ServiceError::AnsweredEarlier`], storage failures.
    pub(crate) fn stored_outcome<T: DeserializeOwned>(&self, idem: &Idem) -> Result<Option<Done<T>>, ServiceError> {
        match OnKeys::read(self.store(), |tx| Ok(tx.idempotency_record(&idem.scope, &idem.key)?))? {
            Some(existing) => decide(&existing, &idem.fingerprint).map(Some),
            None => Ok(None),
        }
    }
}

/// The callback a request asked for, refused when its URL may not be reached in the mode.
///
/// # Errors
/// [`ServiceError::Validation`] naming `callback_url`.
fn checked_callback_url(core: &Core, mode: Mode, url: &str) -> Result<(), ServiceError> {
    if url.len() > 2048 {
        return Err(ServiceError::field("callback_url", "invalid_value", "the callback URL is longer than 2048 characters"));
    }
    check_url(url, core.webhooks.policy(mode))
        .map(|_| ())
        .map_err(|e| ServiceError::field("callback_url", "invalid_value", format!("the callback URL is refused: {e}")))
}

/// A new callback for what a request made (due at once when it is final already).
pub(crate) fn new_callback(
    principal: (&OrgId, Mode, &str),
    object_id: String,
    target: &CallbackTarget,
    final_now: bool,
    now: Timestamp,
) -> Callback {
    let (org_id, mode, client_id) = principal;
    Callback {
        id: format!("cb_{}", EventId::new().as_str().trim_start_matches(EventId::PREFIX)),
        org_id: org_id.clone(),
        mode,
        client_id: client_id.to_owned(),
        object_id,
        url: target.url.clone(),
        correlation_id: target.correlation_id.clone(),
        state: if final_now { CallbackState::Pending } else { CallbackState::Waiting },
        attempts: 0,
        next_attempt_at: final_now.then_some(now),
        last_status: None,
        last_error: None,
        created_at: now,
        updated_at: now,
    }
}

/// The record a key is stored with: the request's fingerprint and a snapshot of `value`.
pub(crate) fn record<T: Serialize>(
    fingerprint: &Fingerprint,
    value: &T,
    now: malipo_core::Timestamp,
) -> Result<IdempotencyRecord, ServiceError> {
    Ok(IdempotencyRecord { fingerprint: fingerprint.clone(), outcome: Some(Outcome::Snapshot(snapshot::encode(value)?)), created_at: now })
}

/// The outcome of a request that found its key already stored.
fn decide<T: DeserializeOwned>(existing: &IdempotencyRecord, fingerprint: &Fingerprint) -> Result<Done<T>, ServiceError> {
    match existing.decide(fingerprint) {
        Decision::Replay(Outcome::Snapshot(kept)) => Ok(Done { value: snapshot::decode(&kept)?, replayed: true }),
        Decision::Replay(Outcome::Earlier(answer)) => Err(ServiceError::AnsweredEarlier(Earlier(answer))),
        Decision::Reused => Err(ServiceError::IdempotencyReused),
        Decision::InProgress => Err(ServiceError::IdempotencyInProgress),
    }
}
