//! What every store of the process opened on one SQLite database file shares: the writer lock,
//! and the checkpointer that copies the write-ahead log into the database file.
//!
//! SQLite's own checkpoints run in the connection whose commit filled the log past
//! `wal_autocheckpoint` pages, right after that commit: inside the writer's turn, so every
//! queued writer waits for the copy and its two `fsync`s (the log, then the database file). The
//! pool's connections turn that off (`PRAGMA wal_autocheckpoint=0`) and one thread per file
//! checkpoints instead, on a connection of its own, every [`CHECKPOINT_EVERY`]: first outside
//! the writers' turn, a `PASSIVE` checkpoint, which never waits for nor holds up a reader or a
//! writer (writers append to the log meanwhile), and copies most of the log; then, once the log
//! holds [`RESTART_FRAMES`] or more, a second one in the writers' turn, which copies only what
//! came during the first, so that the log is copied whole and the next write starts it again
//! from its beginning (a log copied only while writers append is never whole, and grows without
//! end). A reader still reading an older part of the log keeps it from starting again; once the
//! log holds [`MAX_FRAMES`] anyway, that second checkpoint is a `RESTART`, which waits for such
//! readers up to [`RESTART_WAIT_MS`] (then gives up until the next pass), so the log stays short
//! however busy the readers are. `journal_size_limit` cuts the file back when the log starts
//! again. The last connection to close checkpoints and removes the log as before.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::{Arc, OnceLock, Weak};
use std::thread::JoinHandle;
use std::time::Duration;

use diesel::connection::SimpleConnection;
use diesel::sql_types::Integer;
use diesel::{Connection, QueryResult, QueryableByName, RunQueryDsl, SqliteConnection};
use parking_lot::Mutex;

/// How often the checkpointer copies the log into the database file. At 1,000 writes a second
/// of about eight pages each, the log holds about 3 MiB between passes.
const CHECKPOINT_EVERY: Duration = Duration::from_millis(100);

/// The log's length in pages from which a pass ends with a checkpoint in the writers' turn
/// (SQLite's own `wal_autocheckpoint` default).
const RESTART_FRAMES: i32 = 1000;

/// The log's length in pages from which the checkpoint in the writers' turn waits for readers
/// (16 MiB of 4 KiB pages).
const MAX_FRAMES: i32 = 4 * RESTART_FRAMES;

/// How long a `RESTART` checkpoint waits for readers, holding the writers' turn: the
/// checkpointer's busy timeout (a long read, such as an export, must not stop every writer).
const RESTART_WAIT_MS: u32 = 20;

/// Set on the pool's connections (after `journal_mode=WAL`): no checkpoint inside a commit; the
/// log file cut back to 64 MiB when it starts again from its beginning.
pub(crate) const SQLITE_CHECKPOINT_PRAGMAS: &str = "PRAGMA wal_autocheckpoint=0; PRAGMA journal_size_limit=67108864;";

/// One SQLite database file as the process's stores share it.
pub(crate) struct SqliteFile {
    /// Held for each write transaction of the process on the file.
    pub(crate) writer: Arc<Mutex<()>>,
    /// `None` for `:memory:` (no log) or when its connection could not be opened (the pool's
    /// connections then checkpoint as SQLite does by default).
    checkpointer: Option<Checkpointer>,
}

impl SqliteFile {
    /// The file's shared state, one per file in the process (every store opened on it shares
    /// it: the server's API and background pools). Kept while a store holds it; the
    /// checkpointer stops when the last store is dropped.
    pub(crate) fn open(path: &Path) -> Arc<SqliteFile> {
        static FILES: OnceLock<Mutex<HashMap<PathBuf, Weak<SqliteFile>>>> = OnceLock::new();
        if path.as_os_str() == ":memory:" {
            return Arc::new(SqliteFile { writer: Arc::default(), checkpointer: None });
        }
        let key = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        let mut files = FILES.get_or_init(Mutex::default).lock();
        if let Some(file) = files.get(&key).and_then(Weak::upgrade) {
            return file;
        }
        files.retain(|_, file| file.strong_count() > 0);
        let writer = Arc::new(Mutex::new(()));
        let file = Arc::new(SqliteFile { checkpointer: Checkpointer::start(&key, writer.clone()), writer });
        files.insert(key, Arc::downgrade(&file));
        file
    }

    /// Whether a checkpointer runs for the file (the pool's connections then leave
    /// checkpoints to it).
    pub(crate) fn checkpoints(&self) -> bool {
        self.checkpointer.is_some()
    }
}

/// The thread that checkpoints one file, stopped and joined on drop.
struct Checkpointer {
    stop: Option<Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Checkpointer {
    fn start(path: &Path, writer: Arc<Mutex<()>>) -> Option<Checkpointer> {
        let url = path.to_string_lossy().into_owned();
        let mut conn = match SqliteConnection::establish(&url).and_then(|mut c| {
            c.batch_execute(&format!("PRAGMA busy_timeout={RESTART_WAIT_MS};"))
                .map_err(|e| diesel::ConnectionError::BadConnection(e.to_string()))?;
            Ok(c)
        }) {
            Ok(conn) => conn,
            Err(error) => {
                tracing::warn!(%error, "cannot open the SQLite checkpointer's connection; commits checkpoint the log instead");
                return None;
            }
        };
        let (stop, stopped) = mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("sqlite-checkpoint".into())
            .spawn(move || {
                // A message or a dropped sender both mean stop.
                while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(CHECKPOINT_EVERY) {
                    if let Err(error) = pass(&mut conn, &writer) {
                        tracing::warn!(%error, "checkpointing the SQLite log failed; trying again");
                    }
                }
            })
            .ok()?;
        Some(Checkpointer { stop: Some(stop), thread: Some(thread) })
    }
}

/// Of what `PRAGMA wal_checkpoint` answers, the log's length in pages.
#[derive(QueryableByName)]
struct Checkpointed {
    #[diesel(sql_type = Integer)]
    log: i32,
}

/// One pass of the checkpointer (see the module's comment).
fn pass(conn: &mut SqliteConnection, writer: &Mutex<()>) -> QueryResult<()> {
    let checkpoint = |conn: &mut SqliteConnection, mode: &str| {
        diesel::sql_query(format!("PRAGMA wal_checkpoint({mode})")).get_result::<Checkpointed>(conn)
    };
    let log = checkpoint(conn, "PASSIVE")?.log;
    if log >= RESTART_FRAMES {
        let _turn = writer.lock();
        checkpoint(conn, if log >= MAX_FRAMES { "RESTART" } else { "PASSIVE" })?;
    }
    Ok(())
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
