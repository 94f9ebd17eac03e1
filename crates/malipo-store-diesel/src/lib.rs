//! The diesel storage adapter: implements [`malipo_service::Store`] on PostgreSQL and SQLite with
//! one code base.
//!
//! - One connection type, [`DbConnection`] (a diesel `MultiConnection`), whose variant is chosen
//!   from the URL scheme: `postgres://` / `postgresql://` or `sqlite://PATH`.
//! - An r2d2 pool of them; SQLite connections get WAL, a busy timeout, `synchronous=NORMAL` and
//!   foreign keys on connect.
//! - Embedded migrations (`migrations/postgres`, `migrations/sqlite`), run by
//!   [`DieselStore::migrate`].
//! - [`Store::run`] runs a closure in one transaction (PostgreSQL `READ COMMITTED`, SQLite
//!   `BEGIN IMMEDIATE`) and reruns it on transient conflicts (serialization failures, deadlocks,
//!   a busy SQLite database).
//! - SQLite's writers of one process queue on one in-process lock per database file (shared by
//!   every pool of the process on that file) before `BEGIN IMMEDIATE`: a writer is woken as the
//!   one before it finishes, instead of polling SQLite's file lock in sleeps of 1 to 100 ms (its
//!   busy handler). Other processes on the file (the CLI) still wait in the busy handler.
//! - SQLite's log is copied into the database file by one thread per file (`sqlite_file`), not
//!   by the commit that filled it, inside the writers' turn.
//!
//! Queries are written once with the diesel DSL for both backends; they branch on the
//! connection's variant only where the SQL differs (`ON CONFLICT`, `RETURNING`, row locks).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use diesel::connection::{SimpleConnection, TransactionManager};
use diesel::prelude::*;
use diesel::r2d2::{HandleError, ManageConnection, Pool, PooledConnection, R2D2Connection};
use diesel_migrations::{embed_migrations, EmbeddedMigrations, MigrationHarness};
use malipo_service::{ServiceError, Store, StoreError, Tx};

mod cached;
mod claim;
mod deadline;
mod error;
mod literal;
mod replica;
mod repo;
mod rows;
mod schema;
mod sqlite_file;
mod tx;
mod txn;

#[cfg(feature = "testing")]
mod inspect;
#[cfg(feature = "testing")]
pub mod testing;

pub use crate::deadline::DEFAULT_DEADLINE;
use crate::error::db_error;
use crate::sqlite_file::{SqliteFile, SQLITE_CHECKPOINT_PRAGMAS};
use crate::tx::{DieselTx, KnownAccounts};
use crate::txn::{backoff, begin, finish_failed, mark_broken, must_roll_back, rollback};

const PG_MIGRATIONS: EmbeddedMigrations = embed_migrations!("../../migrations/postgres");
const SQLITE_MIGRATIONS: EmbeddedMigrations = embed_migrations!("../../migrations/sqlite");

/// Pool size when none is given.
const DEFAULT_PG_POOL: u32 = 16;
/// Pool size when none is given (SQLite has one writer at a time anyway).
const DEFAULT_SQLITE_POOL: u32 = 8;
/// How long a caller waits for a pooled connection before the database counts as unavailable:
/// with the database down, an API call answers 503 (with `Retry-After`) within about this long
/// instead of holding the client; under overload it says "not now" the same way.
const CHECKOUT_TIMEOUT: Duration = Duration::from_millis(1500);
/// How long a readiness check may take in all (probes time out after 1 to 3 seconds).
const READY_TIMEOUT: Duration = Duration::from_millis(800);
/// A failure slower than this is a server that does not answer, not a pooled connection it had
/// ended (which fails at once): the call gives up rather than wait as long on the next one.
const SLOW_FAILURE: Duration = Duration::from_millis(100);
/// How many times [`Store::run`] runs a closure that keeps hitting transient conflicts.
const MAX_ATTEMPTS: u32 = 8;

/// How long a SQLite writer waits for the process's writer lock (as long as the busy timeout).
const WRITER_WAIT: Duration = Duration::from_secs(5);

/// Set on every new SQLite connection (the busy timeout first, so that switching to WAL waits for
/// a writer instead of failing). `temp_store=MEMORY` keeps the statement journal of a savepoint
/// (the worker's one per charge) in memory: on a file, past 64 KiB, its pages were written with a
/// system call each, inside the writer's lock.
const SQLITE_PRAGMAS: &str = "PRAGMA busy_timeout=5000; PRAGMA journal_mode=WAL; \
                              PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON; PRAGMA temp_store=MEMORY;";

/// A connection to either database. Queries written with the diesel DSL run on both; code that
/// needs backend-specific SQL matches on the variant.
#[derive(diesel::MultiConnection)]
pub enum DbConnection {
    /// PostgreSQL.
    Pg(diesel::PgConnection),
    /// SQLite.
    Sqlite(diesel::SqliteConnection),
}

/// Which database a [`DieselStore`] talks to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Backend {
    /// PostgreSQL.
    Postgres,
    /// SQLite.
    Sqlite,
}

impl Backend {
    /// `postgres` or `sqlite`.
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Postgres => "postgres",
            Backend::Sqlite => "sqlite",
        }
    }
}

impl std::fmt::Display for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where the pool's connections go.
#[derive(Clone, Debug)]
enum Target {
    Postgres(String),
    Sqlite(PathBuf),
    /// Refuses every connection (a store whose database is gone; see `testing`).
    #[cfg_attr(not(feature = "testing"), allow(dead_code))]
    Closed(Backend),
}

impl Target {
    fn backend(&self) -> Backend {
        match self {
            Target::Postgres(_) => Backend::Postgres,
            Target::Sqlite(_) => Backend::Sqlite,
            Target::Closed(b) => *b,
        }
    }

    /// Parses a database URL by its scheme.
    fn parse(url: &str) -> Result<Self, StoreError> {
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            // libpq waits for a host that does not answer as long as the OS lets it (minutes).
            if url.contains("connect_timeout=") {
                return Ok(Target::Postgres(url.to_owned()));
            }
            let joint = if url.contains('?') { '&' } else { '?' };
            return Ok(Target::Postgres(format!("{url}{joint}connect_timeout=2")));
        }
        if let Some(path) = url.strip_prefix("sqlite://") {
            if path.is_empty() {
                return Err(StoreError::Other("sqlite:// URL without a file path".into()));
            }
            return Ok(Target::Sqlite(PathBuf::from(path)));
        }
        let scheme = url.split_once("://").map_or("(none)", |(s, _)| s);
        Err(StoreError::Other(format!("unsupported database URL scheme `{scheme}`: use postgres://, postgresql:// or sqlite://PATH")))
    }
}

/// Opens connections of one variant (never tries one backend and then the other).
#[derive(Debug)]
struct Manager {
    target: Target,
    /// PostgreSQL: every statement's deadline (`deadline`).
    deadline: Duration,
    /// SQLite: the file's checkpointer copies the log, not the connections' commits.
    checkpointed: bool,
}

impl ManageConnection for Manager {
    type Connection = DbConnection;
    type Error = diesel::r2d2::Error;

    fn connect(&self) -> Result<DbConnection, Self::Error> {
        match &self.target {
            Target::Postgres(url) => {
                let mut conn = diesel::PgConnection::establish(url).map_err(diesel::r2d2::Error::ConnectionError)?;
                error::ensure_english_messages(&mut conn).map_err(diesel::r2d2::Error::ConnectionError)?;
                conn.batch_execute(&deadline::session_settings(self.deadline)).map_err(diesel::r2d2::Error::QueryError)?;
                if let Some(socket) = deadline::socket_of(&mut conn) {
                    conn.set_instrumentation(deadline::Watch::new(socket, self.deadline));
                }
                Ok(DbConnection::Pg(conn))
            }
            Target::Sqlite(path) => {
                let path = path.to_string_lossy();
                let mut conn = diesel::SqliteConnection::establish(&path).map_err(diesel::r2d2::Error::ConnectionError)?;
                conn.batch_execute(SQLITE_PRAGMAS).map_err(diesel::r2d2::Error::QueryError)?;
                if self.checkpointed {
                    conn.batch_execute(SQLITE_CHECKPOINT_PRAGMAS).map_err(diesel::r2d2::Error::QueryError)?;
                }
                Ok(DbConnection::Sqlite(conn))
            }
            Target::Closed(_) => {
                Err(diesel::r2d2::Error::ConnectionError(diesel::ConnectionError::BadConnection("the store is closed".into())))
            }
        }
    }

    fn is_valid(&self, conn: &mut DbConnection) -> Result<(), Self::Error> {
        conn.ping().map_err(diesel::r2d2::Error::QueryError)
    }

    fn has_broken(&self, conn: &mut DbConnection) -> bool {
        std::thread::panicking() || conn.is_broken()
    }
}

/// Reports the pool's connection failures through `tracing`.
#[derive(Debug)]
struct TracingErrorHandler;

impl HandleError<diesel::r2d2::Error> for TracingErrorHandler {
    fn handle_error(&self, error: diesel::r2d2::Error) {
        tracing::warn!(%error, "database connection failed");
    }
}

/// Whether a transaction may write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Access {
    Write,
    Read,
}

/// The diesel store: a pool of connections to one PostgreSQL or SQLite database. Cheap to clone
/// (the pool is shared).
#[derive(Clone)]
pub struct DieselStore {
    pool: Pool<Manager>,
    backend: Backend,
    /// SQLite: the database file as the process's stores share it (its writer lock, held for
    /// each write transaction, and its checkpointer).
    sqlite: Option<Arc<SqliteFile>>,
    /// Accounts' ledgers and kinds seen so far (shared by clones).
    known: Arc<KnownAccounts>,
    /// Where the connections go, and every PostgreSQL statement's deadline.
    target: Target,
    deadline: Duration,
    /// Where [`Store::report`] reads (`replica`).
    replica: Option<Arc<replica::Replica>>,
}

impl std::fmt::Debug for DieselStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DieselStore").field("backend", &self.backend).finish_non_exhaustive()
    }
}

impl DieselStore {
    /// Connects to `url` (`postgres://…`, `postgresql://…` or `sqlite://PATH`, creating PATH's
    /// parent directories) with a pool of `pool_size` connections (default 16 for PostgreSQL,
    /// 8 for SQLite). Does not run migrations (see [`DieselStore::migrate`]).
    ///
    /// # Errors
    /// [`StoreError::Other`] for an unsupported URL; [`StoreError::Unavailable`] when the
    /// database cannot be opened.
    pub fn connect(url: &str, pool_size: Option<u32>) -> Result<Self, StoreError> {
        Self::connect_with_deadline(url, pool_size, DEFAULT_DEADLINE)
    }

    /// [`DieselStore::connect`] with every PostgreSQL statement's deadline (see `deadline`):
    /// the server cancels a statement that takes longer, and a server that does not answer
    /// within half a second more loses the connection. A PostgreSQL URL without a
    /// `connect_timeout` gets one of 2 seconds (per host of a multi-host URL).
    ///
    /// # Errors
    /// As [`DieselStore::connect`].
    pub fn connect_with_deadline(url: &str, pool_size: Option<u32>, deadline: Duration) -> Result<Self, StoreError> {
        Self::open(url, pool_size, deadline, Some(CHECKOUT_TIMEOUT))
    }

    /// [`DieselStore::connect_with_deadline`] with the pool's checkout timeout; without one, the
    /// pool opens its connections in the background only (a database down now is not an error)
    /// and a checkout waits [`replica::CHECKOUT`] (where another database can answer instead).
    fn open(url: &str, pool_size: Option<u32>, deadline: Duration, probe_now: Option<Duration>) -> Result<Self, StoreError> {
        let target = Target::parse(url)?;
        let backend = target.backend();
        let mut size = pool_size.unwrap_or(match backend {
            Backend::Postgres => DEFAULT_PG_POOL,
            Backend::Sqlite => DEFAULT_SQLITE_POOL,
        });
        let mut in_memory = false;
        if let Target::Sqlite(path) = &target {
            in_memory = path.as_os_str() == ":memory:";
            if in_memory {
                // Every connection would open its own empty database.
                size = 1;
            } else if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
                std::fs::create_dir_all(parent)
                    .map_err(|e| StoreError::Unavailable(format!("cannot create directory {}: {e}", parent.display())))?;
            }
        }
        let probe = Manager { target, deadline, checkpointed: false };
        // Open one connection first so that an unreachable database fails at once, with the
        // driver's own message, rather than after the pool's checkout timeout.
        if probe_now.is_some() {
            drop(probe.connect().map_err(|e| StoreError::Unavailable(e.to_string()))?);
        }
        // After that first connection, so that the file exists and its path is canonical.
        let sqlite = match &probe.target {
            Target::Sqlite(path) => Some(SqliteFile::open(path)),
            _ => None,
        };
        let target = probe.target.clone();
        let manager = Manager { target: probe.target, deadline, checkpointed: sqlite.as_ref().is_some_and(|f| f.checkpoints()) };
        let mut builder = Pool::builder()
            .max_size(size.max(1))
            .min_idle(Some(1))
            .connection_timeout(probe_now.unwrap_or(replica::CHECKOUT))
            // A dead connection is found on use and discarded (see `begin`): no ping
            // round trip on every checkout.
            .test_on_check_out(false)
            .error_handler(Box::new(TracingErrorHandler));
        if in_memory {
            builder = builder.idle_timeout(None).max_lifetime(None);
        }
        // Unchecked: the probe has just connected, and a second connection may take longer than
        // the checkout's timeout (libpq tries each host of a multi-host URL for up to its
        // `connect_timeout`); the pool opens its connections in the background.
        let pool = builder.build_unchecked(manager);
        Ok(DieselStore { pool, backend, sqlite, known: Arc::default(), target, deadline, replica: None })
    }

    /// A store that refuses every connection (used to drop a test database's pool first).
    #[cfg(feature = "testing")]
    fn closed(backend: Backend) -> Self {
        let pool = Pool::builder()
            .max_size(1)
            .min_idle(Some(0))
            .connection_timeout(Duration::from_millis(10))
            .error_handler(Box::new(diesel::r2d2::NopErrorHandler))
            .build_unchecked(Manager { target: Target::Closed(backend), deadline: DEFAULT_DEADLINE, checkpointed: false });
        let (target, deadline) = (Target::Closed(backend), DEFAULT_DEADLINE);
        DieselStore { pool, backend, sqlite: None, known: Arc::default(), target, deadline, replica: None }
    }

    /// Which database this store talks to.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// Applies the embedded migrations that are not applied yet; returns how many were applied.
    ///
    /// # Errors
    /// [`StoreError::Unavailable`] when no connection can be had; [`StoreError::Other`] when a
    /// migration fails.
    pub fn migrate(&self) -> Result<usize, StoreError> {
        let mut conn = self.connection()?;
        // Without the statements' deadline (a migration may rewrite a large table); the
        // connection is not pooled again with its deadline lifted.
        let applied = deadline::suspended(|| match &mut *conn {
            DbConnection::Pg(c) => c
                .batch_execute("SET statement_timeout = 0")
                .map_err(|e| Box::new(e) as Box<dyn std::error::Error + Send + Sync>)
                .and_then(|()| c.run_pending_migrations(PG_MIGRATIONS).map(|v| v.len())),
            DbConnection::Sqlite(c) => c.run_pending_migrations(SQLITE_MIGRATIONS).map(|v| v.len()),
        });
        if self.backend == Backend::Postgres {
            mark_broken(&mut conn);
        }
        let applied = match applied {
            Ok(n) => n,
            Err(e) => {
                // A SQLite migration that runs outside diesel's transaction (`metadata.toml`)
                // may have stopped inside its own, with foreign keys off: closing the connection
                // rolls that back, and the pool must not hand it out again.
                mark_broken(&mut conn);
                return Err(StoreError::Other(format!("migration failed: {e}")));
            }
        };
        if applied > 0 {
            tracing::info!(applied, backend = %self.backend, "applied database migrations");
        }
        Ok(applied)
    }

    /// Runs one SQL statement outside any transaction and returns the number of rows it
    /// affected. For tests that need to write what the API never would.
    ///
    /// # Errors
    /// The database's refusal, mapped as in [`Store::run`].
    #[cfg(feature = "testing")]
    pub fn raw_execute(&self, sql: &str) -> Result<usize, StoreError> {
        let mut conn = self.connection()?;
        diesel::sql_query(sql).execute(&mut *conn).map_err(db_error)
    }

    /// Whether a write transaction of this process holds the SQLite database's writer lock
    /// now (always false on PostgreSQL). For tests of the lock's sharing.
    #[cfg(feature = "testing")]
    pub fn sqlite_writer_busy(&self) -> bool {
        self.sqlite.as_ref().is_some_and(|file| file.writer.is_locked())
    }

    fn connection(&self) -> Result<PooledConnection<Manager>, StoreError> {
        self.pool.get().map_err(|e| StoreError::Unavailable(e.to_string()))
    }

    /// Runs `f` in transactions until it succeeds, fails for good, or runs out of attempts.
    fn transact(&self, access: Access, f: &mut dyn FnMut(&mut dyn Tx) -> Result<(), ServiceError>) -> Result<(), ServiceError> {
        let mut attempt = 1;
        loop {
            match self.attempt(access, f) {
                Err(ServiceError::Store(StoreError::Retry)) if attempt < MAX_ATTEMPTS => {
                    tracing::debug!(attempt, backend = %self.backend, "transient conflict; running the transaction again");
                    std::thread::sleep(backoff(attempt));
                    attempt += 1;
                }
                Err(ServiceError::Store(StoreError::Retry)) => {
                    tracing::warn!(attempts = attempt, backend = %self.backend, "transaction kept conflicting; giving up");
                    return Err(ServiceError::Store(StoreError::Retry));
                }
                other => return other,
            }
        }
    }

    /// Runs `f` on a pooled connection outside any explicit transaction; with `Access::Write`,
    /// in turn with the writers where they take turns (SQLite's writer lock, taken before the
    /// connection as in [`DieselStore::attempt`]), since a statement of `f` may write.
    fn outside(&self, access: Access, f: &mut dyn FnMut(&mut dyn Tx) -> Result<(), ServiceError>) -> Result<(), ServiceError> {
        let mut attempt = 1;
        loop {
            let writing = match (&self.sqlite, access) {
                (Some(file), Access::Write) => match file.writer.try_lock_for(WRITER_WAIT) {
                    Some(guard) => Some(guard),
                    None if attempt < MAX_ATTEMPTS => {
                        attempt += 1;
                        continue;
                    }
                    None => return Err(StoreError::Retry.into()),
                },
                _ => None,
            };
            let mut pooled = self.connection()?;
            let started = std::time::Instant::now();
            let mut tx = DieselTx::new(&mut pooled, &self.known);
            let result = f(&mut tx).and_then(|()| Ok(tx.flush_queued()?));
            if matches!(result, Err(ServiceError::Store(StoreError::Unavailable(_)))) {
                // A connection that died while idle in the pool: the pool discards it.
                mark_broken(&mut pooled);
            }
            drop(pooled);
            drop(writing);
            match result {
                // As in `begin`: only a connection that failed at once is worth replacing.
                Err(ServiceError::Store(StoreError::Unavailable(_))) if attempt < MAX_ATTEMPTS && started.elapsed() <= SLOW_FAILURE => {
                    attempt += 1;
                }
                Err(ServiceError::Store(StoreError::Retry)) if attempt < MAX_ATTEMPTS => {
                    std::thread::sleep(backoff(attempt));
                    attempt += 1;
                }
                other => return other,
            }
        }
    }

    /// A pooled connection with a transaction begun on it. Connections that died while idle in
    /// the pool (a restarted server) are discarded and the next one is tried.
    fn begin(&self, access: Access) -> Result<PooledConnection<Manager>, StoreError> {
        let mut last = String::new();
        for _ in 0..=self.pool.max_size() {
            let mut pooled = self.connection()?;
            let started = std::time::Instant::now();
            match begin(&mut pooled, access).map_err(db_error) {
                Ok(()) => return Ok(pooled),
                Err(StoreError::Unavailable(message)) => {
                    mark_broken(&mut pooled);
                    // A connection the server had ended fails at once; a server that does not
                    // answer fails at its deadline, and the next connection would wait as long.
                    if started.elapsed() > SLOW_FAILURE {
                        return Err(StoreError::Unavailable(message));
                    }
                    last = message;
                }
                Err(other) => return Err(other),
            }
        }
        Err(StoreError::Unavailable(last))
    }

    /// One run of `f` in one transaction.
    fn attempt(&self, access: Access, f: &mut dyn FnMut(&mut dyn Tx) -> Result<(), ServiceError>) -> Result<(), ServiceError> {
        // Taken before the connection (a queued writer holds none of the pool's) and released
        // after it is back in the pool (locals drop in reverse order). Waiting as long as
        // SQLite's busy timeout ends as its busy error does: a transient conflict.
        let _writing = match (&self.sqlite, access) {
            (Some(file), Access::Write) => Some(file.writer.try_lock_for(WRITER_WAIT).ok_or(StoreError::Retry)?),
            _ => None,
        };
        let mut pooled = self.begin(access)?;
        let conn: &mut DbConnection = &mut pooled;
        let mut tx = DieselTx::new(conn, &self.known);
        // Writes queued by the closure are made before the commit (or fail it).
        let result = f(&mut tx).and_then(|()| Ok(tx.flush_queued()?));
        let poisoned = tx.poisoned;
        let learned = std::mem::take(&mut tx.learned);
        let learned_ids = std::mem::take(&mut tx.learned_ids);
        match result {
            Ok(()) if poisoned => {
                // A posting without a savepoint failed and the closure went on: its lines may be
                // partly applied.
                rollback(conn);
                Err(StoreError::Other("a posting failed inside the transaction, which was rolled back".into()).into())
            }
            Ok(()) if must_roll_back(conn) => {
                // The closure went on after a failed statement: PostgreSQL has aborted the
                // transaction and would answer COMMIT with a silent ROLLBACK.
                rollback(conn);
                Err(StoreError::Other("a statement failed inside the transaction, which was rolled back".into()).into())
            }
            Ok(()) => match <DbConnection as Connection>::TransactionManager::commit_transaction(conn) {
                Ok(()) => {
                    // What this transaction saw of accounts is the store's to know only now that
                    // the accounts it opened exist.
                    self.known.remember_all(learned, learned_ids);
                    Ok(())
                }
                Err(e) => {
                    let e = db_error(e);
                    finish_failed(conn, &e);
                    Err(e.into())
                }
            },
            Err(e) => {
                if let ServiceError::Store(store_error) = &e {
                    finish_failed(conn, store_error);
                } else {
                    rollback(conn);
                }
                Err(e)
            }
        }
    }
}

impl Store for DieselStore {
    fn run(&self, f: &mut dyn FnMut(&mut dyn Tx) -> Result<(), ServiceError>) -> Result<(), ServiceError> {
        self.transact(Access::Write, f)
    }

    fn read(&self, f: &mut dyn FnMut(&mut dyn Tx) -> Result<(), ServiceError>) -> Result<(), ServiceError> {
        self.transact(Access::Read, f)
    }

    fn query(&self, f: &mut dyn FnMut(&mut dyn Tx) -> Result<(), ServiceError>) -> Result<(), ServiceError> {
        self.outside(Access::Read, f)
    }

    fn autocommit(&self, f: &mut dyn FnMut(&mut dyn Tx) -> Result<(), ServiceError>) -> Result<(), ServiceError> {
        self.outside(Access::Write, f)
    }

    fn report(&self, f: &mut dyn FnMut(&mut dyn Tx) -> Result<(), ServiceError>) -> Result<(), ServiceError> {
        self.report_on_replica(f)
    }

    fn replica(&self) -> Option<malipo_service::ReplicaState> {
        self.replica.as_ref().map(|r| r.state())
    }

    fn account_id(&self, key: &malipo_service::AccountKey) -> Result<Option<malipo_core::AccountId>, ServiceError> {
        match self.known.id(key) {
            Some(id) => Ok(Some(id)),
            None => malipo_service::ports::read(self, |tx| Ok(tx.account_id(key)?)),
        }
    }

    fn ready(&self) -> Result<(), StoreError> {
        let unavailable = |e: &dyn std::fmt::Display| StoreError::Unavailable(e.to_string());
        // Like `begin`: skip pooled connections that died while idle; all within READY_TIMEOUT
        // (a server that does not answer included: the ping's deadline is what is left).
        let until = std::time::Instant::now() + READY_TIMEOUT;
        let mut conn = loop {
            let left = until.saturating_duration_since(std::time::Instant::now());
            let mut conn = self.pool.get_timeout(left).map_err(|e| unavailable(&e))?;
            match deadline::within(left.max(Duration::from_millis(100)), || conn.ping()).map_err(db_error) {
                Ok(()) => break conn,
                Err(e) => {
                    mark_broken(&mut conn);
                    if std::time::Instant::now() >= until {
                        return Err(e);
                    }
                }
            }
        };
        let pending = match &mut *conn {
            DbConnection::Pg(c) => c.has_pending_migration(PG_MIGRATIONS),
            DbConnection::Sqlite(c) => c.has_pending_migration(SQLITE_MIGRATIONS),
        }
        .map_err(|e| unavailable(&e))?;
        if pending {
            return Err(StoreError::Unavailable("database migrations are pending".into()));
        }
        Ok(())
    }
}
