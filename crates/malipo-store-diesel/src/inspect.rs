//! What tests read of a store's connections (the `testing` feature): the statements kept
//! prepared, and SQLite's pragmas.

use diesel::prelude::*;
use malipo_service::StoreError;

use crate::error::db_error;
use crate::{DbConnection, DieselStore};

impl DieselStore {
    /// The statements one pooled connection keeps prepared, on PostgreSQL (its
    /// `pg_prepared_statements`; with a pool of one, the connection every transaction used). For
    /// tests that check which statements are kept (`cached.rs`). Empty on SQLite.
    ///
    /// # Errors
    /// As [`Store::run`].
    #[cfg(feature = "testing")]
    pub fn prepared_statements(&self) -> Result<Vec<String>, StoreError> {
        #[derive(QueryableByName)]
        struct Prepared {
            #[diesel(sql_type = diesel::sql_types::Text)]
            statement: String,
        }
        let mut conn = self.connection()?;
        let rows: Vec<Prepared> = match &mut *conn {
            DbConnection::Pg(c) => diesel::sql_query("SELECT statement FROM pg_prepared_statements").load(c).map_err(db_error)?,
            DbConnection::Sqlite(_) => Vec::new(),
        };
        Ok(rows.into_iter().map(|r| r.statement).collect())
    }

    /// The rows of a SQLite pragma as text, read on a pooled connection (`compile_options`,
    /// `temp_store`, ...; `name` is a pragma's name, written by the test). Empty on PostgreSQL.
    ///
    /// # Errors
    /// As [`Store::run`].
    #[cfg(feature = "testing")]
    pub fn sqlite_pragma(&self, name: &str) -> Result<Vec<String>, StoreError> {
        #[derive(QueryableByName)]
        struct Value {
            #[diesel(sql_type = diesel::sql_types::Text)]
            value: String,
        }
        let mut conn = self.connection()?;
        let rows: Vec<Value> = match &mut *conn {
            DbConnection::Pg(_) => Vec::new(),
            DbConnection::Sqlite(c) => {
                diesel::sql_query(format!("SELECT CAST({name} AS TEXT) AS value FROM pragma_{name}")).load(c).map_err(db_error)?
            }
        };
        Ok(rows.into_iter().map(|r| r.value).collect())
    }
}
