//! Running an effect under an idempotency key: the key is claimed, the effect applied and the
//! response stored in one transaction, so a retry is settled exactly once.

use malipo_charges::Charge;
use malipo_idempotency::{Decision, Fingerprint, IdempotencyKey, IdempotencyRecord, KeyScope, StoredResponse};

use malipo_core::{AuditId, UserId};
use malipo_payouts::{BulkPayout, Payout, Reversal};
use malipo_requests::PaymentRequest;
use malipo_webhooks::Endpoint;

use crate::core::Core;
use crate::error::ServiceError;
use crate::error::StoreError;
use crate::group::Creation;
use crate::ports::{read, write, Answer, AuditEntry, Tx};

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
}

impl Subject for Charge {
    fn subject(&self) -> (String, String) {
        (self.id.to_string(), format!("{} {}", self.currency, self.currency.format_amount(self.amount)))
    }
}

impl Subject for Payout {
    fn subject(&self) -> (String, String) {
        let to = format!("{} {} to {}", self.currency, self.currency.format_amount(self.amount), self.payee_msisdn);
        (self.id.to_string(), to)
    }
}

impl Subject for BulkPayout {
    fn subject(&self) -> (String, String) {
        let total = format!("{} items, {} {}", self.item_count, self.currency, self.currency.format_amount(self.total_amount));
        (self.id.to_string(), total)
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
}

impl Subject for Endpoint {
    fn subject(&self) -> (String, String) {
        (self.id.to_string(), self.url.clone())
    }
}

/// The answer to an idempotent request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdemOutcome {
    /// Status and exact body.
    pub response: StoredResponse,
    /// Whether this is a replay of an earlier answer.
    pub replayed: bool,
}

impl Core {
    /// Runs `effect` once per key, in one transaction with the key: the effect is applied, the
    /// front end's answer to it made, and the key stored with the answer. A repeat with the same
    /// fingerprint replays the stored response; with another fingerprint it is refused. When a
    /// concurrent request stores the key first, this transaction rolls back and the request
    /// replays the winner's response. Errors from `effect` roll everything back, the key
    /// included, so a refused request writes nothing and may be retried.
    ///
    /// # Errors
    /// [`ServiceError::IdempotencyReused`], [`ServiceError::IdempotencyInProgress`], or the effect's.
    pub(crate) fn idempotent<T: Subject>(
        &self,
        idem: &Idem,
        mut effect: impl FnMut(&mut dyn Tx) -> Result<T, ServiceError>,
        answer: &dyn Answer<T>,
    ) -> Result<IdemOutcome, ServiceError> {
        let now = self.now();
        // First attempt: assume a new key (the common case) and skip the lookup; the insert at
        // the end detects a repeat. Later attempts look the key up first.
        let mut first_attempt = true;
        write(self.store(), |tx| {
            if !std::mem::take(&mut first_attempt) {
                if let Some(existing) = tx.idempotency_record(&idem.scope, &idem.key)? {
                    return decide(&existing, &idem.fingerprint);
                }
            }
            let value = match effect(tx) {
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
            let response = answer.answer(&value);
            let record = IdempotencyRecord { fingerprint: idem.fingerprint.clone(), response: Some(response.clone()), created_at: now };
            if tx.insert_key(&idem.scope, &idem.key, &record)? {
                Ok(IdemOutcome { response, replayed: false })
            } else {
                // The key exists: undo this effect and answer from the stored record.
                Err(StoreError::Retry.into())
            }
        })
    }

    /// [`Core::idempotent`] for a new charge, whole before its transaction: it may share the
    /// transaction (and its commit) with other creations arriving at the same moment (see
    /// [`crate::group`]). Whatever happens to a group, the answer is the one
    /// [`Core::idempotent`] would give: a group is kept whole or not at all, and a creation whose
    /// group was not kept runs alone.
    ///
    /// # Errors
    /// As [`Core::idempotent`].
    pub(crate) fn create_charge(&self, idem: &Idem, charge: &Charge, answer: &dyn Answer<Charge>) -> Result<IdemOutcome, ServiceError> {
        // A group writes keys and charges alone: a person's creation, with its audit entry, runs
        // the ordinary way.
        if self.group.enabled() && idem.actor.is_none() {
            let response = answer.answer(charge);
            let record =
                IdempotencyRecord { fingerprint: idem.fingerprint.clone(), response: Some(response.clone()), created_at: self.now() };
            let creation = Creation { charge: charge.clone(), key: (idem.scope.clone(), idem.key.clone(), record) };
            if self.group.submit(self.store(), &|n| self.observer.group_committed(n), creation)? {
                return Ok(IdemOutcome { response, replayed: false });
            }
        }
        self.idempotent(
            idem,
            |tx| {
                tx.insert_charge(charge)?;
                Ok(charge.clone())
            },
            answer,
        )
    }

    /// The answer already stored for this key, if any: for use cases whose checks before the
    /// effect must not run again on a retry (a PIN change re-checking a PIN that has changed).
    ///
    /// # Errors
    /// [`ServiceError::IdempotencyReused`], [`ServiceError::IdempotencyInProgress`], storage failures.
    pub(crate) fn stored_outcome(&self, idem: &Idem) -> Result<Option<IdemOutcome>, ServiceError> {
        match read(self.store(), |tx| Ok(tx.idempotency_record(&idem.scope, &idem.key)?))? {
            Some(existing) => decide(&existing, &idem.fingerprint).map(Some),
            None => Ok(None),
        }
    }
}

/// The answer to a request that found its key already stored.
fn decide(existing: &IdempotencyRecord, fingerprint: &Fingerprint) -> Result<IdemOutcome, ServiceError> {
    match existing.decide(fingerprint) {
        Decision::Replay(response) => Ok(IdemOutcome { response, replayed: true }),
        Decision::Reused => Err(ServiceError::IdempotencyReused),
        Decision::InProgress => Err(ServiceError::IdempotencyInProgress),
    }
}
