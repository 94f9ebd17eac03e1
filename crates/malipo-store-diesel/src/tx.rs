//! The transaction handle: one connection inside a transaction begun by [`crate::DieselStore`].
//! Each feature's repository is implemented on it in `repo/<feature>.rs`.

use std::collections::HashMap;

use diesel::prelude::*;
use malipo_core::{AccountId, Currency, Mode, OrgId};
use malipo_ledger::AccountKind;
use malipo_service::{AccountKey, QueuedWrites, StoreError};
use malipo_webhooks::Endpoint;
use parking_lot::RwLock;

use crate::error::db_error;
use crate::DbConnection;

/// Runs the same diesel expression on the concrete connection of either variant, for the few
/// statements (`ON CONFLICT`, `RETURNING`) that diesel cannot build for the multi-backend.
macro_rules! per_backend {
    ($conn:expr, |$c:ident| $body:expr) => {
        match $conn {
            DbConnection::Pg($c) => $body,
            DbConnection::Sqlite($c) => $body,
        }
    };
}

/// The row `query` finds, selected as `$row`, locked for update until the transaction ends, and
/// parsed into `$domain`. SQLite takes no row lock: its writers are serialised by BEGIN
/// IMMEDIATE, so the row cannot change under the transaction.
macro_rules! locked_row {
    ($conn:expr, $query:expr, $row:ty => $domain:ty) => {{
        let query = $query;
        let found = match $conn {
            DbConnection::Pg(c) => query.select(<$row>::as_select()).for_update().first(c).optional(),
            DbConnection::Sqlite(c) => query.select(<$row>::as_select()).first(c).optional(),
        };
        found.map_err(db_error)?.map(<$domain>::try_from).transpose()
    }};
}

/// How many ids go into one `IN (…)` list.
pub(crate) const IN_CHUNK: usize = 500;

/// Most wallets' ledgers and kinds [`KnownAccounts`] keeps (the platform's and organisations'
/// accounts, a few per organisation, are always kept).
const KNOWN_WALLETS: usize = 100_000;

/// Most accounts' ids by key, and organisations' names, [`KnownAccounts`] keeps.
const KNOWN_KEYS: usize = 100_000;

/// What never changes once committed, kept so that a transaction need not read it again: the
/// ledger (mode and currency) and kind of accounts, so that a posting checks its lines without
/// reading the accounts each time; accounts' ids by their owner and kind; organisations' names.
/// Shared by a store's transactions, and told of accounts only what committed transactions saw
/// (a transaction keeps what it learns in [`DieselTx::learned`] and [`DieselTx::learned_ids`]
/// until its commit), so that an account whose opening was rolled back is never taken for one
/// that exists.
#[derive(Debug, Default)]
pub(crate) struct KnownAccounts {
    kinds: RwLock<Learned>,
    ids: RwLock<HashMap<AccountKey, AccountId>>,
    names: RwLock<HashMap<OrgId, String>>,
}

/// Accounts' ledgers and kinds by id.
pub(crate) type Learned = HashMap<String, (Mode, Currency, AccountKind)>;

/// Accounts' ids by key, as a transaction found them.
pub(crate) type LearnedIds = Vec<(AccountKey, AccountId)>;

impl KnownAccounts {
    /// What is known of the account `id`.
    pub(crate) fn get(&self, id: &str) -> Option<(Mode, Currency, AccountKind)> {
        self.kinds.read().get(id).copied()
    }

    /// Keeps what a committed transaction learned (wallets only while there is room).
    pub(crate) fn remember_all(&self, learned: Learned, ids: LearnedIds) {
        if !learned.is_empty() {
            let mut known = self.kinds.write();
            for (id, (mode, currency, kind)) in learned {
                if kind != AccountKind::Wallet || known.len() < KNOWN_WALLETS {
                    known.insert(id, (mode, currency, kind));
                }
            }
        }
        if !ids.is_empty() {
            let mut known = self.ids.write();
            if known.len() + ids.len() > KNOWN_KEYS {
                known.clear();
            }
            known.extend(ids);
        }
    }

    /// The id of the account `key` finds, if a committed transaction found it.
    pub(crate) fn id(&self, key: &AccountKey) -> Option<AccountId> {
        self.ids.read().get(key).cloned()
    }

    /// An organisation's name, if read before.
    pub(crate) fn name(&self, org: &OrgId) -> Option<String> {
        self.names.read().get(org).cloned()
    }

    /// Keeps an organisation's name (starting again when full: a read each, then).
    pub(crate) fn remember_name(&self, org: &OrgId, name: &str) {
        let mut names = self.names.write();
        if names.len() >= KNOWN_KEYS {
            names.clear();
        }
        names.insert(org.clone(), name.to_owned());
    }
}

/// One transaction's connection.
pub(crate) struct DieselTx<'c> {
    pub(crate) conn: &'c mut DbConnection,
    /// A posting without a savepoint of its own failed (`post_journal_whole`): some of its
    /// lines may be applied, so the transaction must not commit.
    pub(crate) poisoned: bool,
    /// The store's accounts known so far.
    pub(crate) known: &'c KnownAccounts,
    /// Accounts this transaction opened or read, told to `known` when it commits.
    pub(crate) learned: Learned,
    /// Accounts' ids this transaction found by key, told to `known` when it commits.
    pub(crate) learned_ids: LearnedIds,
    /// Endpoints of an organisation and mode read in this transaction (each event of a
    /// transaction, e.g. a charge authorised and completed, reads them once); forgotten when
    /// the transaction writes an endpoint.
    pub(crate) endpoints: HashMap<(String, Mode), Vec<Endpoint>>,
    /// Journals posted whole and events inserted, not yet written, when the transaction
    /// queues them (`WriteQueue::queue_writes`, `repo/queue.rs`); `None` when it writes at once.
    pub(crate) queued: Option<QueuedWrites>,
}

impl<'c> DieselTx<'c> {
    pub(crate) fn new(conn: &'c mut DbConnection, known: &'c KnownAccounts) -> Self {
        DieselTx {
            conn,
            poisoned: false,
            known,
            learned: Learned::new(),
            learned_ids: LearnedIds::new(),
            endpoints: HashMap::new(),
            queued: None,
        }
    }

    /// What is known of the account `id`, by the store or by this transaction.
    pub(crate) fn account_known(known: &KnownAccounts, learned: &Learned, id: &str) -> Option<(Mode, Currency, AccountKind)> {
        learned.get(id).copied().or_else(|| known.get(id))
    }
}

/// `Ok(())` when one row was inserted, [`StoreError::Duplicate`] when a unique constraint kept
/// it out (`INSERT … ON CONFLICT DO NOTHING` inserted nothing). The statement never fails on a
/// conflict, so a PostgreSQL transaction stays usable after a duplicate.
pub(crate) fn inserted(rows: QueryResult<usize>) -> Result<(), StoreError> {
    match rows.map_err(db_error)? {
        0 => Err(StoreError::Duplicate),
        _ => Ok(()),
    }
}

/// Whether a guarded write (its condition in its `WHERE` clause) changed a row.
pub(crate) fn happened(rows: QueryResult<usize>) -> Result<bool, StoreError> {
    Ok(rows.map_err(db_error)? > 0)
}

pub(crate) fn limit_i64(limit: usize) -> i64 {
    i64::try_from(limit).unwrap_or(i64::MAX)
}

pub(crate) use locked_row;
pub(crate) use per_backend;
