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
        match self.conn.transaction::<_, Ended, _>(|conn| f(&mut DieselTx::new(conn)).map_err(Ended::Closure)) {
            Ok(()) => Ok(()),
            Err(Ended::Closure(e)) => Err(e),
            Err(Ended::Database(e)) => Err(db_error(e).into()),
        }
    }
}
