//! What a request made under an idempotency key, read back by the key: for a front end whose
//! clients fetch an answer they missed by the id they sent with the request (the GSMA door's
//! `GET /responses/{clientCorrelationId}`).

use malipo_auth::Principal;
use malipo_idempotency::{IdempotencyKey, KeyScope, Outcome};

use crate::core::Core;
use crate::error::ServiceError;
use crate::idempotency::Keep;
use crate::needs::{self, require};
use crate::snapshot;
use crate::views::{OnKeys, View};

/// Requests read back by their idempotency keys.
pub struct Recorded<'a> {
    core: &'a Core,
}

impl<'a> Recorded<'a> {
    pub(crate) fn new(core: &'a Core) -> Self {
        Recorded { core }
    }

    /// What the principal's organisation made, in its mode, under `key` with `operation` (the
    /// operation name the front end gave the request's idempotency context), if it did: the
    /// result as the request was first answered. The key is the organisation's own, so any of
    /// its credentials may ask; what the result names is read with that object's own rules.
    ///
    /// # Errors
    /// [`ServiceError::IdempotencyInProgress`] while the request is still running;
    /// [`ServiceError::Internal`] for a result of another type than `T`.
    pub fn made<T: Keep>(&self, principal: &Principal, operation: &str, key: &IdempotencyKey) -> Result<Option<T>, ServiceError> {
        require(principal, &needs::ANY_CREDENTIAL)?;
        let scope = KeyScope { org_id: principal.org_id.clone(), mode: principal.mode, operation: operation.to_owned() };
        let record = OnKeys::read(self.core.store(), |tx| Ok(tx.idempotency_record(&scope, key)?))?;
        match record.map(|r| r.outcome) {
            None | Some(Some(Outcome::Earlier(_))) => Ok(None),
            Some(None) => Err(ServiceError::IdempotencyInProgress),
            Some(Some(Outcome::Snapshot(kept))) => snapshot::decode(&kept).map(Some),
        }
    }
}
