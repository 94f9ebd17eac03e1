//! Savepoints: the closure works on a copy of the transaction's tables, kept only on success.

use malipo_service::{Savepoint, ServiceError, Tx};

use crate::tx::MemoryTx;

impl Savepoint for MemoryTx<'_> {
    fn savepoint(&mut self, f: &mut dyn FnMut(&mut dyn Tx) -> Result<(), ServiceError>) -> Result<(), ServiceError> {
        // What this transaction queued goes before the savepoint, which could undo it.
        self.flush_queued()?;
        let mut draft = self.state.clone();
        f(&mut MemoryTx::new(&mut draft, self.read_only()))?;
        *self.state = draft;
        Ok(())
    }
}
