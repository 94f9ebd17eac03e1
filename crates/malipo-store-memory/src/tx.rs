//! One transaction over the in-memory tables; each feature's repository is implemented on it in
//! `repo/<feature>.rs`, with the rules a database's constraints enforce.

use malipo_service::{QueuedWrites, StoreError};

use crate::state::State;

/// One transaction over a [`State`]: the draft copy of a write transaction, or the live state
/// of a read-only one (whose write methods then refuse).
pub(crate) struct MemoryTx<'a> {
    pub(crate) state: &'a mut State,
    read_only: bool,
    /// Journals posted whole and events inserted, not yet applied, when the transaction queues
    /// them (`WriteQueue::queue_writes`, `repo/queue.rs`), as the SQL adapters do; `None` when
    /// it writes at once.
    pub(crate) queued: Option<QueuedWrites>,
}

impl<'a> MemoryTx<'a> {
    /// A transaction over `state`.
    pub(crate) fn new(state: &'a mut State, read_only: bool) -> Self {
        MemoryTx { state, read_only, queued: None }
    }

    /// Whether writes are refused.
    pub(crate) fn read_only(&self) -> bool {
        self.read_only
    }

    /// The tables, for reading.
    pub(crate) fn r(&self) -> &State {
        self.state
    }

    /// The tables, for writing: refused in a read-only transaction (as PostgreSQL refuses
    /// writes in a `READ ONLY` transaction).
    pub(crate) fn w(&mut self) -> Result<&mut State, StoreError> {
        if self.read_only {
            return Err(StoreError::Other("write attempted in a read-only transaction".into()));
        }
        Ok(self.state)
    }
}

/// A foreign-key check: `Ok` when the referenced row exists.
pub(crate) fn foreign_key(exists: bool, what: &str) -> Result<(), StoreError> {
    if exists {
        Ok(())
    } else {
        Err(StoreError::Other(format!("foreign key violation: {what} does not exist")))
    }
}

/// A check constraint (named as in the SQL schema): `Ok` when it holds.
pub(crate) fn check(holds: bool, constraint: &str) -> Result<(), StoreError> {
    if holds {
        Ok(())
    } else {
        Err(StoreError::Other(format!("check violation: {constraint}")))
    }
}
