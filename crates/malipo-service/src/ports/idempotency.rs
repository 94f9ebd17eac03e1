//! Idempotency keys with their stored responses.

use malipo_core::Timestamp;
use malipo_idempotency::{IdempotencyKey, IdempotencyRecord, KeyScope};

use crate::error::StoreError;

/// Idempotency keys with their stored responses: part of the one transaction handle [`super::Tx`].
pub trait IdempotencyRepo {
    /// The record stored for a key, if any.
    ///
    /// # Errors
    /// Storage failures.
    fn idempotency_record(&mut self, scope: &KeyScope, key: &IdempotencyKey) -> Result<Option<IdempotencyRecord>, StoreError>;
    /// Stores a key with its record (fingerprint and response) unless the key exists, and says
    /// whether it was stored. `false` means another transaction holds the key: on PostgreSQL this
    /// first waits for a concurrent uncommitted insert of the same key to commit or roll back.
    ///
    /// # Errors
    /// Storage failures.
    fn insert_key(&mut self, scope: &KeyScope, key: &IdempotencyKey, record: &IdempotencyRecord) -> Result<bool, StoreError>;
    /// [`IdempotencyRepo::insert_key`] for several keys together (one statement where the
    /// database allows it); returns how many were stored. A key repeated in `keys` is stored
    /// once.
    ///
    /// # Errors
    /// Storage failures.
    fn insert_keys(&mut self, keys: &[(KeyScope, IdempotencyKey, IdempotencyRecord)]) -> Result<usize, StoreError>;
    /// Deletes keys created before `before`; returns how many.
    ///
    /// # Errors
    /// Storage failures.
    fn purge_keys(&mut self, before: Timestamp) -> Result<u64, StoreError>;
}
