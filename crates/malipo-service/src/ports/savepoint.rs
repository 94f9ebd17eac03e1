//! Savepoints: a part of a transaction that can fail alone.

use crate::error::ServiceError;

/// Part of the one transaction handle [`super::Tx`]: runs a closure inside the transaction so
/// that, when it fails, what it did is undone and the transaction goes on (SQL `SAVEPOINT` and
/// `ROLLBACK TO SAVEPOINT`). Workers use it to advance a batch of items in one transaction, each
/// as it would go alone.
pub trait Savepoint {
    /// Runs `f`; on `Err`, undoes its writes and returns the error with the transaction still
    /// usable.
    ///
    /// # Errors
    /// Whatever `f` returns, or the failure to set or release the savepoint.
    fn savepoint(&mut self, f: &mut dyn FnMut(&mut dyn super::Tx) -> Result<(), ServiceError>) -> Result<(), ServiceError>;
}
