//! Reads that may be stale, on a PostgreSQL replica (`MALIPO_DATABASE_READ_URL`).
//!
//! [`Store::report`](malipo_service::Store::report) runs on the replica's own pool while the
//! replica answers and is within the lag bound; otherwise, and when a read there fails as
//! unavailable, on the primary.
//!
//! The lag is measured by one thread per replica, on two connections of its own (so that it
//! never takes one of the requests'): every [`EVERY`] it reads the primary's WAL position
//! (`pg_current_wal_lsn()`) and then the replica's replayed position (`pg_last_wal_replay_lsn()`).
//! The replica is as fresh as the newest primary reading it has replayed: the lag is how long
//! ago that reading was taken (0 when it has replayed the one just taken). This holds when the
//! primary is idle too, where the replay timestamp (`pg_last_xact_replay_timestamp()`) would
//! grow without bound. A replica that is not in recovery (a promoted standby, or
//! `prefer-standby` landing on the primary) has no lag. The thread ends when its store is dropped.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use diesel::prelude::*;
use diesel::r2d2::ManageConnection;
use diesel::sql_types::{Bool, Text};
use malipo_service::{ReplicaState, ServiceError, StoreError, Tx};

use crate::{Access, DbConnection, DieselStore, Manager, Target};

/// How long a report waits for one of the replica's pooled connections before it reads on the
/// primary instead.
pub(crate) const CHECKOUT: Duration = Duration::from_millis(300);
/// How often the lag is measured.
pub(crate) const EVERY: Duration = Duration::from_millis(500);
/// How long the primary's readings are kept: a replica further behind counts as this far behind.
const KEPT: Duration = Duration::from_secs(120);
/// "Not measured" in [`Health::lag_ms`].
const UNKNOWN: u64 = u64::MAX;

/// The replica a store's reports read from.
pub(crate) struct Replica {
    /// The replica's pool (read transactions only).
    store: DieselStore,
    health: Arc<Health>,
    max_lag: Duration,
}

/// What the measuring thread and the readers share.
struct Health {
    /// Milliseconds behind the primary at the last measurement, or [`UNKNOWN`].
    lag_ms: AtomicU64,
    /// A read there failed as unavailable since the last measurement.
    failed: AtomicBool,
    /// Reads sent to the primary instead.
    fallbacks: AtomicU64,
}

impl DieselStore {
    /// This store with a replica at `url` (a PostgreSQL URL; a multi-host one with
    /// `target_session_attrs=prefer-standby` or `read-only`) for the reads that may be stale
    /// ([`Store::report`](malipo_service::Store::report)), used while it answers and is at most
    /// `max_lag` behind this store's database; its pool has `pool_size` connections (default 16)
    /// and this store's deadline.
    ///
    /// # Errors
    /// [`StoreError::Other`] for a URL that is not PostgreSQL's or a store that is not. A
    /// replica that cannot be reached is not an error: reports read on the primary meanwhile.
    pub fn with_replica(mut self, url: &str, pool_size: Option<u32>, max_lag: Duration) -> Result<Self, StoreError> {
        let Target::Postgres(primary) = &self.target else {
            return Err(StoreError::Other("a read replica needs PostgreSQL as the primary database".into()));
        };
        let target = Target::parse(url)?;
        if !matches!(target, Target::Postgres(_)) {
            return Err(StoreError::Other("the read replica's URL must be a PostgreSQL one".into()));
        }
        // A replica down at start is not an error: reports read on the primary until it answers.
        let store = DieselStore::open(url, pool_size, self.deadline, None)?;
        let primary = Manager { target: Target::Postgres(primary.clone()), deadline: self.deadline, checkpointed: false };
        let replica = Manager { target, deadline: self.deadline, checkpointed: false };
        self.replica = Some(Arc::new(Replica::open(store, primary, replica, max_lag)));
        Ok(self)
    }

    /// [`Store::report`](malipo_service::Store::report): on the replica when it is usable, else
    /// (or when it fails as unavailable) on the primary.
    pub(crate) fn report_on_replica(&self, f: &mut dyn FnMut(&mut dyn Tx) -> Result<(), ServiceError>) -> Result<(), ServiceError> {
        if let Some(replica) = &self.replica {
            if replica.usable() {
                match replica.store.transact(Access::Read, f) {
                    Err(ServiceError::Store(StoreError::Unavailable(e))) => {
                        tracing::warn!(error = %e, "the replica failed a read; reading on the primary");
                        replica.failed();
                    }
                    other => return other,
                }
            }
            replica.fell_back();
        }
        self.transact(Access::Read, f)
    }
}

impl Replica {
    fn open(store: DieselStore, primary: Manager, replica: Manager, max_lag: Duration) -> Self {
        let health = Arc::new(Health { lag_ms: AtomicU64::new(UNKNOWN), failed: AtomicBool::new(false), fallbacks: AtomicU64::new(0) });
        let weak = Arc::downgrade(&health);
        let spawned = std::thread::Builder::new().name("malipo-replica-lag".into()).spawn(move || measure(&weak, &primary, &replica));
        if let Err(e) = spawned {
            tracing::warn!(error = %e, "cannot start measuring the replica's lag; reports read on the primary");
        }
        Replica { store, health, max_lag }
    }

    /// Whether reports read here now.
    fn usable(&self) -> bool {
        let lag = self.health.lag_ms.load(Ordering::Relaxed);
        lag != UNKNOWN && u128::from(lag) <= self.max_lag.as_millis() && !self.health.failed.load(Ordering::Relaxed)
    }

    /// A read here failed as unavailable: reports read on the primary until the next good
    /// measurement.
    fn failed(&self) {
        self.health.failed.store(true, Ordering::Relaxed);
    }

    /// A report read on the primary instead.
    fn fell_back(&self) {
        self.health.fallbacks.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn state(&self) -> ReplicaState {
        let lag = self.health.lag_ms.load(Ordering::Relaxed);
        ReplicaState {
            lag: (lag != UNKNOWN).then(|| Duration::from_millis(lag)),
            max_lag: self.max_lag,
            in_use: self.usable(),
            fallbacks: self.health.fallbacks.load(Ordering::Relaxed),
        }
    }
}

#[derive(QueryableByName)]
struct Position {
    #[diesel(sql_type = Text)]
    lsn: String,
}

#[derive(QueryableByName)]
struct Replay {
    #[diesel(sql_type = Bool)]
    recovering: bool,
    #[diesel(sql_type = Text)]
    lsn: String,
}

/// The measuring loop: runs until the store's [`Health`] is gone.
fn measure(health: &Weak<Health>, primary: &Manager, replica: &Manager) {
    let mut readings: VecDeque<(Instant, u64)> = VecDeque::new();
    let mut on_primary: Option<DbConnection> = None;
    let mut on_replica: Option<DbConnection> = None;
    loop {
        let Some(shared) = health.upgrade() else { return };
        if let Some(lsn) = read_position(&mut on_primary, primary) {
            readings.push_back((Instant::now(), lsn));
        }
        while readings.front().is_some_and(|(at, _)| at.elapsed() > KEPT) {
            readings.pop_front();
        }
        let lag = match read_replay(&mut on_replica, replica) {
            None => None,
            Some(None) => Some(Duration::ZERO),
            Some(Some(replayed)) => Some(lag_of(&readings, replayed)),
        };
        let ms = lag.map_or(UNKNOWN, |l| u64::try_from(l.as_millis()).unwrap_or(UNKNOWN - 1));
        let was = shared.lag_ms.swap(ms, Ordering::Relaxed);
        if lag.is_some() {
            shared.failed.store(false, Ordering::Relaxed);
        }
        if (was == UNKNOWN) != (ms == UNKNOWN) {
            tracing::info!(lag_ms = ms, "replica {}", if ms == UNKNOWN { "does not answer" } else { "answers" });
        }
        drop(shared);
        std::thread::sleep(EVERY);
    }
}

/// How far behind the readings a replica that replayed up to `replayed` is: the age of the
/// newest reading it has replayed (0 if the newest), or of the oldest kept if none.
fn lag_of(readings: &VecDeque<(Instant, u64)>, replayed: u64) -> Duration {
    match readings.iter().rev().find(|(_, lsn)| *lsn <= replayed) {
        Some((at, _)) if readings.back().is_some_and(|(last, _)| last == at) => Duration::ZERO,
        Some((at, _)) => at.elapsed(),
        None => readings.front().map_or(KEPT, |(at, _)| at.elapsed().max(EVERY)),
    }
}

/// The primary's WAL position, reconnecting when needed; `None` when it does not answer.
fn read_position(conn: &mut Option<DbConnection>, manager: &Manager) -> Option<u64> {
    let c = connected(conn, manager)?;
    match diesel::sql_query("SELECT pg_current_wal_lsn()::text AS lsn").get_result::<Position>(c) {
        Ok(p) => parse_lsn(&p.lsn),
        Err(e) => {
            tracing::debug!(error = %e, "cannot read the primary's WAL position");
            *conn = None;
            None
        }
    }
}

/// The replica's replayed WAL position (`Some(None)`: not in recovery, so not behind); `None`
/// when it does not answer.
fn read_replay(conn: &mut Option<DbConnection>, manager: &Manager) -> Option<Option<u64>> {
    let c = connected(conn, manager)?;
    let sql = "SELECT pg_is_in_recovery() AS recovering, coalesce(pg_last_wal_replay_lsn()::text, '') AS lsn";
    match diesel::sql_query(sql).get_result::<Replay>(c) {
        Ok(r) if !r.recovering => Some(None),
        Ok(r) => parse_lsn(&r.lsn).map(Some),
        Err(e) => {
            tracing::debug!(error = %e, "cannot read the replica's replay position");
            *conn = None;
            None
        }
    }
}

fn connected<'a>(conn: &'a mut Option<DbConnection>, manager: &Manager) -> Option<&'a mut DbConnection> {
    if conn.is_none() {
        *conn = manager.connect().map_err(|e| tracing::debug!(error = %e, "cannot connect to measure the replica's lag")).ok();
    }
    conn.as_mut()
}

/// `16/B374D848` as one number.
fn parse_lsn(text: &str) -> Option<u64> {
    let (high, low) = text.split_once('/')?;
    let high = u64::from_str_radix(high, 16).ok()?;
    let low = u64::from_str_radix(low, 16).ok()?;
    Some((high << 32) | low)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn positions_parse_as_numbers_in_wal_order() {
        assert_eq!(parse_lsn("0/16B3748"), Some(0x16B_3748));
        assert_eq!(parse_lsn("16/B374D848"), Some((0x16 << 32) | 0xB374_D848));
        assert!(parse_lsn("1/0") > parse_lsn("0/FFFFFFFF"));
        assert_eq!(parse_lsn(""), None);
        assert_eq!(parse_lsn("x/1"), None);
    }

    #[test]
    fn the_lag_is_the_age_of_the_newest_reading_replayed() {
        let now = Instant::now();
        let readings: VecDeque<(Instant, u64)> =
            [(now.checked_sub(Duration::from_secs(3)).unwrap(), 10), (now.checked_sub(Duration::from_secs(1)).unwrap(), 20), (now, 30)]
                .into_iter()
                .collect();
        assert_eq!(lag_of(&readings, 30), Duration::ZERO, "replayed the newest reading");
        assert_eq!(lag_of(&readings, 40), Duration::ZERO);
        let one = lag_of(&readings, 25);
        assert!(one >= Duration::from_secs(1) && one < Duration::from_secs(2), "{one:?}");
        let three = lag_of(&readings, 9);
        assert!(three >= Duration::from_secs(3), "behind every reading: at least the oldest's age, {three:?}");
        assert_eq!(lag_of(&VecDeque::new(), 5), KEPT, "nothing read of the primary yet");
    }
}
