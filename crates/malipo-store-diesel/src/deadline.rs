//! A deadline on every PostgreSQL statement, on both sides of the connection.
//!
//! - The server's: each connection sets `statement_timeout` to the deadline (a statement that
//!   runs or waits for a lock longer is cancelled by the server, SQLSTATE 57014, and the
//!   connection stays usable) and `idle_in_transaction_session_timeout` (a transaction left open
//!   by a client that stopped is ended and its locks released).
//! - The client's, for a server that stops answering at all (a frozen primary, a host gone from
//!   the network): its kernel may still acknowledge every packet, so neither TCP keepalives nor
//!   `tcp_user_timeout` fire, and libpq waits for an answer forever. Each connection's statements
//!   are watched by [`Watch`] (a diesel `Instrumentation`): a statement still unanswered a grace
//!   after the deadline has its socket shut down by one watchdog thread, libpq's wait returns
//!   with a closed connection, and the pool discards the connection (`txn::finish_failed`).
//!
//! The client's deadline needs the connection's socket, found once at connect time by the
//! addresses the server reports (`inet_client_port()`); a connection over a Unix socket (a local
//! server) has only the server's deadline.

use std::collections::{HashMap, HashSet};
use std::os::fd::RawFd;
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

use diesel::connection::{Instrumentation, InstrumentationEvent};
use diesel::prelude::*;
use nix::sys::socket::{getpeername, getsockname, shutdown, Shutdown, SockaddrStorage};

/// The deadline when none is configured (`MALIPO_DB_DEADLINE_MS`).
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(3);
/// How long after the server's deadline the client gives up on a server that does not answer.
const GRACE: Duration = Duration::from_millis(500);

thread_local! {
    /// Whether a statement of this thread's connection was cut off by the watchdog (read and
    /// cleared by `error::db_error`, on the same thread, to say so).
    static FIRED: std::cell::Cell<Option<Duration>> = const { std::cell::Cell::new(None) };
    /// Whether this thread's statements run without the client's deadline (migrations).
    static SUSPENDED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// A shorter client deadline for this thread's statements (a readiness check).
    static SHORTER: std::cell::Cell<Option<Duration>> = const { std::cell::Cell::new(None) };
}

/// Runs `f` with the client's deadline at most `limit` on this thread (a readiness check, whose
/// caller gives up sooner than a statement's deadline).
pub(crate) fn within<T>(limit: Duration, f: impl FnOnce() -> T) -> T {
    struct Restore(Option<Duration>);
    impl Drop for Restore {
        fn drop(&mut self) {
            SHORTER.with(|s| s.set(self.0));
        }
    }
    let _restore = Restore(SHORTER.with(|s| s.replace(Some(limit))));
    f()
}

/// Whether the last statement of this thread was cut off by its deadline (and how long that
/// was); clears the mark.
pub(crate) fn take_fired() -> Option<Duration> {
    FIRED.with(std::cell::Cell::take)
}

/// Runs `f` without the client's deadline on this thread (long statements: migrations).
pub(crate) fn suspended<T>(f: impl FnOnce() -> T) -> T {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            SUSPENDED.with(|s| s.set(self.0));
        }
    }
    let _restore = Restore(SUSPENDED.with(|s| s.replace(true)));
    f()
}

/// The statements `SET` on every new connection for the server's side of `deadline`.
pub(crate) fn session_settings(deadline: Duration) -> String {
    let ms = deadline.as_millis();
    let idle = ms.saturating_mul(4).max(10_000);
    format!("SET statement_timeout = {ms}; SET idle_in_transaction_session_timeout = {idle}")
}

/// The socket of `conn` in this process: the one whose local address is the client address the
/// server sees and whose peer is the server's port. `None` over a Unix socket, or when the
/// process's descriptors cannot be read.
pub(crate) fn socket_of(conn: &mut PgConnection) -> Option<RawFd> {
    #[derive(QueryableByName)]
    struct Ends {
        #[diesel(sql_type = diesel::sql_types::Nullable<diesel::sql_types::Integer>)]
        client_port: Option<i32>,
        #[diesel(sql_type = diesel::sql_types::Nullable<diesel::sql_types::Integer>)]
        server_port: Option<i32>,
    }
    let ends: Ends =
        diesel::sql_query("SELECT inet_client_port() AS client_port, inet_server_port() AS server_port").get_result(conn).ok()?;
    let (client, server) = (u16::try_from(ends.client_port?).ok()?, u16::try_from(ends.server_port?).ok()?);
    let mut found = None;
    for entry in std::fs::read_dir("/proc/self/fd").ok()?.flatten() {
        let Some(fd) = entry.file_name().to_str().and_then(|n| n.parse::<RawFd>().ok()) else { continue };
        // A descriptor closed meanwhile (or not a socket) makes these fail, which skips it.
        let local = getsockname::<SockaddrStorage>(fd).ok().as_ref().and_then(port);
        let peer = getpeername::<SockaddrStorage>(fd).ok().as_ref().and_then(port);
        if local == Some(client) && peer == Some(server) {
            if found.is_some() {
                // Two candidates (a connection to ourselves?): no client deadline rather than
                // the wrong socket's.
                return None;
            }
            found = Some(fd);
        }
    }
    found
}

/// The port of an IPv4 or IPv6 address.
fn port(address: &SockaddrStorage) -> Option<u16> {
    address.as_sockaddr_in().map(|a| a.port()).or_else(|| address.as_sockaddr_in6().map(|a| a.port()))
}

/// Watches one connection's statements (a diesel `Instrumentation`).
pub(crate) struct Watch {
    socket: RawFd,
    /// The server's address, as the socket's peer: when a statement of one connection to it is
    /// cut off, the other connections opened to it before then are cut off at their next
    /// statement at once, rather than each waiting out its own deadline.
    peer: Option<String>,
    /// When it was opened, in the watchdog's sequence.
    born: u64,
    limit: Duration,
    /// The armed deadline's id, and how long it was.
    armed: Option<(u64, Duration)>,
}

impl Watch {
    /// Watches the connection on `socket`, whose statements the server cancels after `deadline`.
    pub(crate) fn new(socket: RawFd, deadline: Duration) -> Self {
        let peer = getpeername::<SockaddrStorage>(socket).ok().map(|a| a.to_string());
        Watch { socket, peer, born: watchdog().now(), limit: deadline.saturating_add(GRACE), armed: None }
    }

    fn disarm(&mut self) {
        if let Some((id, limit)) = self.armed.take() {
            if watchdog().disarm(id) {
                FIRED.with(|f| f.set(Some(limit)));
            }
        }
    }
}

impl Instrumentation for Watch {
    fn on_connection_event(&mut self, event: InstrumentationEvent<'_>) {
        match event {
            InstrumentationEvent::StartQuery { .. } => {
                self.disarm();
                if !SUSPENDED.with(std::cell::Cell::get) {
                    let limit = SHORTER.with(std::cell::Cell::get).map_or(self.limit, |l| l.min(self.limit));
                    self.armed = watchdog().arm(self, Instant::now() + limit).map(|id| (id, limit));
                }
            }
            InstrumentationEvent::FinishQuery { .. } => self.disarm(),
            _ => {}
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        if let Some((id, _)) = self.armed.take() {
            watchdog().disarm(id);
        }
    }
}

/// The armed deadlines of the process, and the thread that enforces them.
struct Watchdog {
    state: Mutex<State>,
    wake: Condvar,
}

#[derive(Default)]
struct State {
    next: u64,
    armed: HashMap<u64, (RawFd, Instant, Option<String>)>,
    /// Per server (the peer's address): the sequence number of the last statement cut off;
    /// connections to it born before are cut off at their next statement.
    stale: HashMap<String, u64>,
    fired: HashSet<u64>,
    /// Until when the thread sleeps: an arm that expires later needs no wake-up (the common
    /// case, every deadline being as long), so a statement costs no system call here.
    sleeping_until: Option<Instant>,
}

fn watchdog() -> &'static Watchdog {
    static DOG: OnceLock<Arc<Watchdog>> = OnceLock::new();
    DOG.get_or_init(|| {
        let dog = Arc::new(Watchdog { state: Mutex::new(State::default()), wake: Condvar::new() });
        let run = Arc::clone(&dog);
        std::thread::Builder::new()
            .name("db-deadline".into())
            .spawn(move || run.enforce())
            .unwrap_or_else(|e| panic!("cannot start the database deadline thread: {e}"));
        dog
    })
}

impl Watchdog {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The current sequence number.
    fn now(&self) -> u64 {
        self.lock().next
    }

    /// Arms `watch`'s deadline at `until`; `None` when its server stopped answering another
    /// connection opened after this one (its socket is shut down now, so the statement fails at
    /// once and the pool opens a fresh connection).
    fn arm(&self, watch: &Watch, until: Instant) -> Option<u64> {
        let mut s = self.lock();
        if watch.peer.as_ref().and_then(|p| s.stale.get(p)).is_some_and(|cut| *cut > watch.born) {
            let _ = shutdown(watch.socket, Shutdown::Both);
            return None;
        }
        s.next = s.next.wrapping_add(1);
        let id = s.next;
        s.armed.insert(id, (watch.socket, until, watch.peer.clone()));
        let wake = s.sleeping_until.is_none_or(|t| until < t);
        drop(s);
        if wake {
            self.wake.notify_one();
        }
        Some(id)
    }

    /// Removes a deadline; whether it had fired. Once this returns, the watchdog no longer
    /// touches the socket (it shuts sockets down only under the same lock).
    fn disarm(&self, id: u64) -> bool {
        let mut s = self.lock();
        s.armed.remove(&id);
        s.fired.remove(&id)
    }

    fn enforce(&self) {
        let mut s = self.lock();
        loop {
            let now = Instant::now();
            let due: Vec<u64> = s.armed.iter().filter(|(_, (_, until, _))| *until <= now).map(|(id, _)| *id).collect();
            for id in due {
                if let Some((socket, _, peer)) = s.armed.remove(&id) {
                    // The connection owning `socket` is inside a statement (armed and not yet
                    // disarmed, under this lock), so the descriptor is still its own.
                    let _ = shutdown(socket, Shutdown::Both);
                    s.fired.insert(id);
                    if let Some(peer) = peer {
                        let cut = s.next;
                        s.stale.insert(peer, cut);
                    }
                    tracing::warn!(socket, "a database statement outlived its deadline; its connection is closed");
                }
            }
            let next = s.armed.values().map(|(_, until, _)| *until).min();
            s.sleeping_until = next;
            let wait = next.map_or(Duration::from_secs(3600), |until| until.saturating_duration_since(Instant::now()));
            s = self.wake.wait_timeout(s, wait).unwrap_or_else(std::sync::PoisonError::into_inner).0;
        }
    }
}
