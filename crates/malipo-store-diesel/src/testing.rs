//! Fresh, migrated, self-deleting databases for tests (feature `testing`).
//!
//! Tests must fail, never skip, when PostgreSQL is missing: [`TestDatabase::postgres`] panics
//! with a message saying where it looked.

#![allow(clippy::expect_used)]

use diesel::connection::SimpleConnection;
use diesel::{Connection, PgConnection};
use malipo_service::{ServiceError, Store, StoreError, Tx};

use crate::DieselStore;

/// The server [`TestDatabase::postgres`] creates its databases on, unless
/// `MALIPO_TEST_POSTGRES_URL` says otherwise.
pub const DEFAULT_POSTGRES_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";

/// A fresh, migrated database that deletes itself on drop.
pub struct TestDatabase {
    /// The database's URL (`postgres://…/malipo_t_…` or `sqlite://…/malipo.db`).
    pub url: String,
    /// A store connected to it.
    pub store: DieselStore,
    /// PostgreSQL: the server's URL and the database's name, to drop it.
    postgres: Option<(String, String)>,
    /// SQLite: the directory holding the file, deleted on drop.
    _dir: Option<tempfile::TempDir>,
}

impl std::fmt::Debug for TestDatabase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestDatabase").field("url", &self.url).finish_non_exhaustive()
    }
}

/// `url` with its database name replaced by `name` (keeping any `?query`).
fn with_database(url: &str, name: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((b, q)) => (b, format!("?{q}")),
        None => (url, String::new()),
    };
    let authority_start = base.find("://").map_or(0, |i| i + 3);
    let server = match base[authority_start..].find('/') {
        Some(slash) => &base[..authority_start + slash],
        None => base,
    };
    format!("{server}/{name}{query}")
}

impl TestDatabase {
    /// Runs raw SQL (a forger's statement, or one the schema must refuse) and returns the rows it
    /// changed.
    ///
    /// # Panics
    /// When the database refuses it.
    #[track_caller]
    pub fn run(&self, sql: &str) -> usize {
        self.store.raw_execute(sql).unwrap_or_else(|e| panic!("`{sql}` failed: {e:?}"))
    }

    /// Checks that the database refuses raw SQL (a constraint or trigger holds).
    ///
    /// # Panics
    /// When the database accepts it.
    #[track_caller]
    pub fn refused(&self, sql: &str) {
        let result = self.store.raw_execute(sql);
        assert!(result.is_err(), "the database accepted `{sql}`: {result:?}");
    }

    /// `CREATE DATABASE malipo_t_<uuid>` on the server at `MALIPO_TEST_POSTGRES_URL` (default
    /// [`DEFAULT_POSTGRES_URL`]), migrated. Dropped with `DROP DATABASE … WITH (FORCE)` (best
    /// effort).
    ///
    /// # Panics
    /// When the server cannot be reached or the database cannot be created or migrated.
    pub fn postgres() -> Self {
        let admin_url = std::env::var("MALIPO_TEST_POSTGRES_URL").unwrap_or_else(|_| DEFAULT_POSTGRES_URL.to_owned());
        let mut admin = PgConnection::establish(&admin_url).unwrap_or_else(|e| {
            panic!(
                "TestDatabase::postgres: cannot reach PostgreSQL at {admin_url} ({e}). Start a server there \
                 or point MALIPO_TEST_POSTGRES_URL at one; these tests do not skip without it."
            )
        });
        let name = format!("malipo_t_{}", uuid::Uuid::new_v4().simple());
        admin
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .unwrap_or_else(|e| panic!("TestDatabase::postgres: CREATE DATABASE {name} failed: {e}"));
        drop(admin);
        let url = with_database(&admin_url, &name);
        // From here on, a failure must still drop the database: build the value first.
        let mut db = TestDatabase {
            url: url.clone(),
            store: DieselStore::closed(crate::Backend::Postgres),
            postgres: Some((admin_url, name)),
            _dir: None,
        };
        db.store = DieselStore::connect(&url, None).unwrap_or_else(|e| panic!("TestDatabase::postgres: cannot connect to {url}: {e}"));
        db.store.migrate().unwrap_or_else(|e| panic!("TestDatabase::postgres: migrations failed: {e}"));
        db
    }

    /// A SQLite file in a fresh temporary directory (deleted on drop), migrated.
    ///
    /// # Panics
    /// When the directory or database cannot be created or migrated.
    pub fn sqlite() -> Self {
        let dir =
            tempfile::Builder::new().prefix("malipo-test-").tempdir().expect("TestDatabase::sqlite: cannot create a temporary directory");
        let url = format!("sqlite://{}", dir.path().join("malipo.db").display());
        let store = DieselStore::connect(&url, None).unwrap_or_else(|e| panic!("TestDatabase::sqlite: cannot open {url}: {e}"));
        store.migrate().unwrap_or_else(|e| panic!("TestDatabase::sqlite: migrations failed: {e}"));
        TestDatabase { url, store, postgres: None, _dir: Some(dir) }
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        // Close this pool's connections first (clones of the store keep theirs: FORCE ends them).
        let backend = self.store.backend();
        drop(std::mem::replace(&mut self.store, DieselStore::closed(backend)));
        if let Some((admin_url, name)) = &self.postgres {
            let dropped = PgConnection::establish(admin_url)
                .map_err(|e| e.to_string())
                .and_then(|mut c| c.batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")).map_err(|e| e.to_string()));
            if let Err(e) = dropped {
                eprintln!("TestDatabase: could not drop database {name}: {e}");
            }
        }
    }
}

impl Store for TestDatabase {
    fn run(&self, f: &mut dyn FnMut(&mut dyn Tx) -> Result<(), ServiceError>) -> Result<(), ServiceError> {
        self.store.run(f)
    }

    fn read(&self, f: &mut dyn FnMut(&mut dyn Tx) -> Result<(), ServiceError>) -> Result<(), ServiceError> {
        self.store.read(f)
    }

    fn query(&self, f: &mut dyn FnMut(&mut dyn Tx) -> Result<(), ServiceError>) -> Result<(), ServiceError> {
        self.store.query(f)
    }

    fn autocommit(&self, f: &mut dyn FnMut(&mut dyn Tx) -> Result<(), ServiceError>) -> Result<(), ServiceError> {
        self.store.autocommit(f)
    }

    fn ready(&self) -> Result<(), StoreError> {
        self.store.ready()
    }

    fn report(&self, f: &mut dyn FnMut(&mut dyn Tx) -> Result<(), ServiceError>) -> Result<(), ServiceError> {
        self.store.report(f)
    }

    fn replica(&self) -> Option<malipo_service::ReplicaState> {
        self.store.replica()
    }

    fn account_id(&self, key: &malipo_service::AccountKey) -> Result<Option<malipo_core::AccountId>, ServiceError> {
        self.store.account_id(key)
    }
}

/// Runs each named test function (taking a `&TestDatabase`) once on a fresh SQLite database and
/// once on a fresh PostgreSQL database, as `sqlite::name` and `postgres::name`.
#[macro_export]
macro_rules! on_both_backends {
    ($($case:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[test]
                fn $case() {
                    super::$case(&$crate::testing::TestDatabase::sqlite());
                }
            )*
        }
        mod postgres {
            $(
                #[test]
                fn $case() {
                    super::$case(&$crate::testing::TestDatabase::postgres());
                }
            )*
        }
    };
}

#[cfg(test)]
mod tests {
    use super::with_database;

    #[test]
    fn database_names_replace_the_path() {
        assert_eq!(with_database("postgres://u@h:5432/postgres", "x"), "postgres://u@h:5432/x");
        assert_eq!(with_database("postgres://u@h:5432", "x"), "postgres://u@h:5432/x");
        assert_eq!(with_database("postgresql://u:p@h/db?sslmode=disable", "x"), "postgresql://u:p@h/x?sslmode=disable");
    }
}
