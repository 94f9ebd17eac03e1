//! Running an effect under an idempotency key: the key is claimed, the effect applied and the
//! response stored in one transaction, so a retry is settled exactly once.

use malipo_idempotency::{Decision, Fingerprint, IdempotencyKey, KeyScope, StoredResponse};

use crate::error::ServiceError;
use crate::platform::Platform;
use crate::ports::{write, Tx};

/// The key of a state-changing request and what it is bound to.
#[derive(Clone, Debug)]
pub struct Idem {
    /// Organisation + mode + operation.
    pub scope: KeyScope,
    /// The key.
    pub key: IdempotencyKey,
    /// The request's fingerprint.
    pub fingerprint: Fingerprint,
}

/// The answer to an idempotent request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdemOutcome {
    /// Status and exact body.
    pub response: StoredResponse,
    /// Whether this is a replay of an earlier answer.
    pub replayed: bool,
}

impl Platform {
    /// Runs `effect` once per key. A repeat with the same fingerprint replays the stored response;
    /// with another fingerprint it is refused. Errors from `effect` roll everything back, the key
    /// included, so a refused request writes nothing and may be retried.
    ///
    /// # Errors
    /// [`ServiceError::IdempotencyReused`], [`ServiceError::IdempotencyInProgress`], or the effect's.
    pub fn idempotent<T>(
        &self,
        idem: &Idem,
        mut effect: impl FnMut(&mut dyn Tx) -> Result<T, ServiceError>,
        render: &dyn Fn(&T) -> StoredResponse,
    ) -> Result<IdemOutcome, ServiceError> {
        let now = self.clock.now();
        write(self.store(), |tx| {
            if let Some(existing) = tx.claim_key(&idem.scope, &idem.key, &idem.fingerprint, now)? {
                return match existing.decide(&idem.fingerprint) {
                    Decision::Replay(response) => Ok(IdemOutcome { response, replayed: true }),
                    Decision::Reused => Err(ServiceError::IdempotencyReused),
                    Decision::InProgress => Err(ServiceError::IdempotencyInProgress),
                };
            }
            let value = effect(tx)?;
            let response = render(&value);
            tx.complete_key(&idem.scope, &idem.key, &response)?;
            Ok(IdemOutcome { response, replayed: false })
        })
    }
}
