//! Savepoints: diesel's nested transactions (`SAVEPOINT`, `ROLLBACK TO SAVEPOINT`).

use diesel::Connection;
use malipo_service::{Savepoint, ServiceError, Tx};

use crate::error::db_error;
use crate::tx::DieselTx;

/// Why a savepoint ended badly: its closure failed, or the database did.
enum Ended {
    Closure(ServiceError),
    Database(diesel::result::Error),
}

impl From<diesel::result::Error> for Ended {
    fn from(e: diesel::result::Error) -> Self {
        Ended::Database(e)
    }
}

impl Savepoint for DieselTx<'_> {
    fn savepoint(&mut self, f: &mut dyn FnMut(&mut dyn Tx) -> Result<(), ServiceError>) -> Result<(), ServiceError> {
        // What this transaction queued goes before the savepoint, which could undo it.
        self.flush_queued()?;
        let mut poisoned = false;
        let mut learned = None;
        let mut learned_ids = Vec::new();
        let known = self.known;
        let ended = self.conn.transaction::<_, Ended, _>(|conn| {
            // Its own endpoints read: what the savepoint reads or writes goes with it.
            let mut inner = DieselTx::new(conn, known);
            let done = f(&mut inner).map_err(Ended::Closure);
            poisoned = inner.poisoned;
            learned = Some(std::mem::take(&mut inner.learned));
            learned_ids = std::mem::take(&mut inner.learned_ids);
            done
        });
        // Endpoints the savepoint wrote are not in this transaction's list.
        self.endpoints.clear();
        match ended {
            // A failed posting inside went on unnoticed: the savepoint keeps its partial lines,
            // so the whole transaction must not commit. (On failure the savepoint undid them.)
            Ok(()) => {
                self.poisoned |= poisoned;
                // What the savepoint learned of accounts stays with what it kept.
                self.learned.extend(learned.unwrap_or_default());
                self.learned_ids.extend(learned_ids);
                Ok(())
            }
            Err(Ended::Closure(e)) => Err(e),
            Err(Ended::Database(e)) => Err(db_error(e).into()),
        }
    }
}
