//! The ports: storage and webhook sending.
//!
//! Storage: Every use case runs as one closure inside [`Store::run`], which gives it a
//! [`Tx`]: all reads and writes of the closure commit together or not at all. `Tx` is composed of
//! one repository trait per feature (each in its own file, with the records it stores beside it),
//! so a new feature adds a file and a supertrait here rather than growing an old trait. Adapters
//! (in-memory, SQLite, PostgreSQL) implement every repository, and then `Tx` comes for free; the
//! shared contract suite in `malipo-store-contract` holds every adapter to the same behaviour.
//!
//! No transaction is ever held across an `.await`: callers run [`Store::run`] on a blocking thread.

mod auth;
mod callbacks;
mod chain;
mod charges;
mod endpoints;
mod idempotency;
mod ledger;
mod outbox;
mod payment_requests;
mod payouts;
mod people;
mod reversals;
mod sender;
mod ussd;
mod wallets;

pub use auth::{AuthRepo, TokenRecord};
pub use callbacks::{Callback, CallbackRepo, CallbackSecret, CallbackState};
pub use chain::{ChainRepo, UnsealedStats};
pub use charges::{ChargeDayTotal, ChargeRepo, Creation, DAY_MICROS};
pub use endpoints::EndpointRepo;
pub use idempotency::IdempotencyRepo;
pub use ledger::{AccountKey, LedgerRepo, PostingQuery, StatementLine};
pub use outbox::{EventsPage, OutboxRepo};
pub use payment_requests::PaymentRequestRepo;
pub use payouts::{BulkRepo, PayoutRepo};
pub use people::{AuditEntry, AuditFilter, AuditRepo, Invitation, SessionRepo, UserRepo};
pub use reversals::ReversalRepo;
#[cfg(any(test, feature = "mocks"))]
pub use sender::MockWebhookSender;
pub use sender::{DeliveryJob, SendOutcome, WebhookSender};
pub use ussd::{UssdRepo, UssdSession};
pub use wallets::{Wallet, WalletRepo, WalletState};

use malipo_core::{AccountId, Timestamp};
use malipo_ledger::Journal;
use malipo_webhooks::Event;

use crate::error::{ServiceError, StoreError};

/// Savepoints, part of the one transaction handle [`Tx`]: runs a closure inside the transaction
/// so that, when it fails, what it did is undone and the transaction goes on (SQL `SAVEPOINT` and
/// `ROLLBACK TO SAVEPOINT`). Workers use it to advance several items in one transaction, each as
/// it would go alone.
pub trait Savepoint {
    /// Runs `f`; on `Err`, undoes its writes and returns the error with the transaction still
    /// usable.
    ///
    /// # Errors
    /// Whatever `f` returns, or the failure to set or release the savepoint.
    fn savepoint(&mut self, f: &mut dyn FnMut(&mut dyn Tx) -> Result<(), ServiceError>) -> Result<(), ServiceError>;
}

/// Writes a transaction may hold back and send together, part of the one transaction handle
/// [`Tx`].
pub trait WriteQueue {
    /// From now on, this transaction may queue the journals it posts whole
    /// ([`LedgerRepo::post_journal_whole`], [`LedgerRepo::post_journals_whole`]) and the events
    /// it inserts ([`OutboxRepo::insert_event`], [`OutboxRepo::insert_events`]), and write
    /// them together: a journal's lines on one account with the others' that share its time by
    /// one update, the events by one insert. What is queued is written before any other call of
    /// [`LedgerRepo`], [`ChainRepo`] or [`ReversalRepo`] (journals) or of [`OutboxRepo`]
    /// (events), except the calls on one account that no queued journal touches
    /// ([`LedgerRepo::account`], [`LedgerRepo::account_with_debits_since`],
    /// [`LedgerRepo::hold`], [`LedgerRepo::release`]), before a savepoint, and at the latest
    /// before the commit: every read sees it, and nothing is lost. So a transaction that queues
    /// its journals and reads only other accounts in between writes them together at its end,
    /// and locks their accounts in the posting's one order (descending id), not in the order it
    /// queued them: two such transactions do not deadlock on those accounts. A refused line or
    /// a duplicate event then fails the call that writes the queue (or the commit), not the
    /// call that queued it: only for a caller whose
    /// transaction fails as a whole on such an error anyway (a chunk of charges or payouts, then
    /// advanced one by one). An adapter may write at once (the default).
    fn queue_writes(&mut self) {}
}

/// What a transaction that queues its writes ([`WriteQueue`]) holds back: adapters keep one
/// while queueing (`None` while writing at once).
#[derive(Debug, Default)]
pub struct QueuedWrites {
    journals: Vec<Journal>,
    events: Vec<Event>,
    due_callbacks: Vec<(String, Timestamp)>,
}

impl QueuedWrites {
    /// Adds journals after those waiting; returns how many wait.
    pub fn add_journals<'j>(&mut self, journals: impl IntoIterator<Item = &'j Journal>) -> usize {
        self.journals.extend(journals.into_iter().cloned());
        self.journals.len()
    }

    /// Adds events after those waiting; returns how many wait.
    pub fn add_events(&mut self, events: &[Event]) -> usize {
        self.events.extend_from_slice(events);
        self.events.len()
    }

    /// Adds an object whose waiting callbacks are due at `now` ([`CallbackRepo::callbacks_due`]);
    /// returns how many wait.
    pub fn add_due_callbacks(&mut self, object_id: &str, now: Timestamp) -> usize {
        self.due_callbacks.push((object_id.to_owned(), now));
        self.due_callbacks.len()
    }

    /// The objects waiting in `queued` to have their callbacks made due, in order, leaving none.
    pub fn take_due_callbacks(queued: &mut Option<Self>) -> Vec<(String, Timestamp)> {
        queued.as_mut().map(|q| std::mem::take(&mut q.due_callbacks)).unwrap_or_default()
    }

    /// Whether a waiting journal has a line on `account`.
    pub fn touches(queued: &Option<Self>, account: &AccountId) -> bool {
        queued.as_ref().is_some_and(|q| q.journals.iter().any(|j| j.lines.iter().any(|l| &l.account == account)))
    }

    /// The journals waiting in `queued`, in order, leaving none.
    pub fn take_journals(queued: &mut Option<Self>) -> Vec<Journal> {
        queued.as_mut().map(|q| std::mem::take(&mut q.journals)).unwrap_or_default()
    }

    /// The events waiting in `queued`, in order, leaving none.
    pub fn take_events(queued: &mut Option<Self>) -> Vec<Event> {
        queued.as_mut().map(|q| std::mem::take(&mut q.events)).unwrap_or_default()
    }
}

/// What moving a charge through its states touches: the charge, the payer's wallet and its
/// limits, the ledger, and the outbox that reports the move. The shared rules that move charges
/// (`lifecycle.rs`) are bound to it, not to the whole [`Tx`].
pub trait ChargeFlow: ChargeRepo + WalletRepo + LedgerRepo + DeliveryFlow {}

impl<T: ChargeRepo + WalletRepo + LedgerRepo + DeliveryFlow + ?Sized> ChargeFlow for T {}

/// What settling payouts touches: the payouts and their batches, the payees' wallets, the
/// ledger (its lines queued for hot accounts), and the outbox (`payouts/worker.rs`).
pub trait PayoutFlow: PayoutRepo + BulkRepo + WalletRepo + LedgerRepo + DeliveryFlow + WriteQueue {}

impl<T: PayoutRepo + BulkRepo + WalletRepo + LedgerRepo + DeliveryFlow + WriteQueue + ?Sized> PayoutFlow for T {}

/// What a reversal touches: the reversal, the charge or payout it gives back, the wallet it
/// credits, the ledger, and the outbox (`reversals.rs`).
pub trait ReversalFlow: ReversalRepo + ChargeRepo + PayoutRepo + WalletRepo + LedgerRepo + DeliveryFlow {}

impl<T: ReversalRepo + ChargeRepo + PayoutRepo + WalletRepo + LedgerRepo + DeliveryFlow + ?Sized> ReversalFlow for T {}

/// What reads across the money records touch (transactions, statements, reports).
pub trait ReportFlow: ChargeRepo + PayoutRepo + ReversalRepo + LedgerRepo + WalletRepo + AuthRepo {}

impl<T: ChargeRepo + PayoutRepo + ReversalRepo + LedgerRepo + WalletRepo + AuthRepo + ?Sized> ReportFlow for T {}

/// Who people are and what they did: people, sessions, organisations, the audit log.
pub trait PeopleFlow: UserRepo + SessionRepo + AuthRepo + AuditRepo {}

impl<T: UserRepo + SessionRepo + AuthRepo + AuditRepo + ?Sized> PeopleFlow for T {}

/// What advancing a chunk of charges in one transaction touches: what moving a charge touches,
/// its journals and events queued to be written together, and a savepoint per charge when one
/// of the chunk fails (`processing.rs`).
pub trait ChargeBatchFlow: ChargeFlow + WriteQueue + Savepoint {}

impl<T: ChargeFlow + WriteQueue + Savepoint + ?Sized> ChargeBatchFlow for T {}

/// What a payment request touches: the request, the merchant's name and accounts, and, when it
/// is paid, what moving money for a charge touches (`payment_requests`).
pub trait RequestFlow: PaymentRequestRepo + ChargeFlow + AuthRepo {}

impl<T: PaymentRequestRepo + ChargeFlow + AuthRepo + ?Sized> RequestFlow for T {}

/// What a USSD session's hops touch in the transaction that claims it: the session, and what
/// the reads and approvals done there touch (the caller's wallet, prompts, charges, payment
/// requests) (`ussd`).
pub trait UssdFlow: UssdRepo + RequestFlow {}

impl<T: UssdRepo + RequestFlow + ?Sized> UssdFlow for T {}

/// What opening an organisation touches: the organisation and its credential, its accounts,
/// and the audit log (`access.rs`).
pub trait OrgFlow: AuthRepo + LedgerRepo + AuditRepo {}

impl<T: AuthRepo + LedgerRepo + AuditRepo + ?Sized> OrgFlow for T {}

/// What reporting a change and sending the reports touch: the outbox's events, their
/// deliveries and attempts, the endpoints they go to, and the callbacks a request asked for
/// (`events.rs`, `webhooks/delivery.rs`, `callbacks.rs`).
pub trait DeliveryFlow: OutboxRepo + EndpointRepo + CallbackRepo {}

impl<T: OutboxRepo + EndpointRepo + CallbackRepo + ?Sized> DeliveryFlow for T {}

/// What sending callbacks touches: the callbacks, the organisation's callback secrets, and the
/// credentials whose requests asked for them (`callbacks.rs`).
pub trait CallbackFlow: CallbackRepo + AuthRepo {}

impl<T: CallbackRepo + AuthRepo + ?Sized> CallbackFlow for T {}

/// Every composed port above, so that the whole [`Tx`] narrows to each (`crate::views`).
pub trait AllViews:
    ChargeFlow
    + PayoutFlow
    + ReversalFlow
    + ReportFlow
    + PeopleFlow
    + ChargeBatchFlow
    + RequestFlow
    + UssdFlow
    + OrgFlow
    + DeliveryFlow
    + CallbackFlow
{
}

impl<T> AllViews for T where
    T: ChargeFlow
        + PayoutFlow
        + ReversalFlow
        + ReportFlow
        + PeopleFlow
        + ChargeBatchFlow
        + RequestFlow
        + UssdFlow
        + OrgFlow
        + DeliveryFlow
        + CallbackFlow
        + ?Sized
{
}

/// One database transaction: every feature's repository on the same connection. Methods take
/// `&mut self`; every method returns [`StoreError`]; reads of absent rows return `Ok(None)`.
pub trait Tx:
    AuthRepo
    + LedgerRepo
    + ChainRepo
    + WalletRepo
    + ChargeRepo
    + UssdRepo
    + IdempotencyRepo
    + EndpointRepo
    + OutboxRepo
    + CallbackRepo
    + PayoutRepo
    + BulkRepo
    + ReversalRepo
    + PaymentRequestRepo
    + UserRepo
    + SessionRepo
    + AuditRepo
    + Savepoint
    + WriteQueue
    + AllViews
{
}

impl<T> Tx for T where
    T: AuthRepo
        + LedgerRepo
        + ChainRepo
        + WalletRepo
        + ChargeRepo
        + UssdRepo
        + IdempotencyRepo
        + EndpointRepo
        + OutboxRepo
        + CallbackRepo
        + PayoutRepo
        + BulkRepo
        + ReversalRepo
        + PaymentRequestRepo
        + UserRepo
        + SessionRepo
        + AuditRepo
        + Savepoint
        + WriteQueue
        + AllViews
        + ?Sized
{
}

/// A database: runs closures as transactions.
pub trait Store: Send + Sync {
    /// Runs `f` in one transaction: commits when it returns `Ok`, rolls back on `Err`. When `f`
    /// (or the commit) fails with [`StoreError::Retry`], rolls back and runs `f` again, a bounded
    /// number of times. SQLite adapters start the transaction as a writer (`BEGIN IMMEDIATE`).
    ///
    /// # Errors
    /// Whatever `f` returns, or [`StoreError`] wrapped in [`ServiceError::Store`].
    fn run(&self, f: &mut dyn FnMut(&mut dyn Tx) -> Result<(), ServiceError>) -> Result<(), ServiceError>;

    /// Like [`Store::run`] for closures that only read (no writer lock on SQLite).
    ///
    /// # Errors
    /// As [`Store::run`].
    fn read(&self, f: &mut dyn FnMut(&mut dyn Tx) -> Result<(), ServiceError>) -> Result<(), ServiceError>;

    /// Runs `f` outside any explicit transaction (each statement commits on its own): for reads
    /// of a single statement on the hot path, such as resolving a bearer token.
    ///
    /// # Errors
    /// As [`Store::run`].
    fn query(&self, f: &mut dyn FnMut(&mut dyn Tx) -> Result<(), ServiceError>) -> Result<(), ServiceError>;

    /// Runs `f` outside any explicit transaction like [`Store::query`], for a few statements of
    /// which some write (a compare-and-swap that needs no transaction): each commits on its own.
    /// Where the store lets one writer at a time (SQLite), `f` takes its turn with the
    /// transactions of [`Store::run`], so that its writes never wait on the database's own lock.
    ///
    /// # Errors
    /// As [`Store::run`].
    fn autocommit(&self, f: &mut dyn FnMut(&mut dyn Tx) -> Result<(), ServiceError>) -> Result<(), ServiceError>;

    /// Whether the database answers and has every migration applied.
    ///
    /// # Errors
    /// [`StoreError::Unavailable`] otherwise.
    fn ready(&self) -> Result<(), StoreError>;

    /// Like [`Store::read`] for reads that may be a little stale (lists, statements, exports,
    /// reports): an adapter with a replica runs them there while it is up and within its lag
    /// bound, else on the primary. Never for a read that decides about money, or one whose caller
    /// expects to see their own write.
    ///
    /// # Errors
    /// As [`Store::read`].
    fn report(&self, f: &mut dyn FnMut(&mut dyn Tx) -> Result<(), ServiceError>) -> Result<(), ServiceError> {
        self.read(f)
    }

    /// The replica that [`Store::report`] reads from, when there is one.
    fn replica(&self) -> Option<ReplicaState> {
        None
    }

    /// The id of an account ([`LedgerRepo::account_id`]) for a caller outside any transaction:
    /// an adapter that remembers ids answers one it has seen without taking a connection.
    ///
    /// # Errors
    /// As [`Store::read`].
    fn account_id(&self, key: &AccountKey) -> Result<Option<AccountId>, ServiceError> {
        let mut id = None;
        self.read(&mut |tx| {
            id = tx.account_id(key)?;
            Ok(())
        })?;
        Ok(id)
    }

    /// Writes a new charge and its idempotency key in one transaction, or (a store that groups,
    /// [`crate::Grouping`]) in one with other creations arriving at the same moment, kept whole
    /// or not at all. How many creations the transaction this call ran committed (1 alone, a
    /// group's size for the call that ran the group's, 0 for a member of a group another call
    /// ran: summed over calls, the creations), or `None`, having written nothing, when the key is
    /// stored already.
    ///
    /// # Errors
    /// As [`Store::run`]; a charge the database refuses.
    fn create_charge(&self, creation: &Creation) -> Result<Option<usize>, ServiceError> {
        let (scope, key, record) = &creation.key;
        let mut stored = false;
        self.run(&mut |tx| {
            stored = tx.insert_key(scope, key, record)?;
            if stored {
                tx.insert_charge(&creation.charge)?;
            }
            Ok(())
        })?;
        Ok(stored.then_some(1))
    }
}

/// A replica's state as its adapter last measured it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReplicaState {
    /// How far behind the primary it is (`None`: not measured, or it does not answer).
    pub lag: Option<std::time::Duration>,
    /// The bound past which [`Store::report`] reads on the primary instead.
    pub max_lag: std::time::Duration,
    /// Whether [`Store::report`] reads there now.
    pub in_use: bool,
    /// Reads sent to the primary because the replica was down or behind, since start.
    pub fallbacks: u64,
}

/// Runs `f` as a write transaction and returns its value.
///
/// # Errors
/// As [`Store::run`].
pub fn write<T>(store: &dyn Store, mut f: impl FnMut(&mut dyn Tx) -> Result<T, ServiceError>) -> Result<T, ServiceError> {
    let mut out = None;
    store.run(&mut |tx| {
        out = Some(f(tx)?);
        Ok(())
    })?;
    out.ok_or_else(|| ServiceError::Internal("transaction produced no value".into()))
}

/// Runs `f` without an explicit transaction, its statements of which some write each
/// committing on its own ([`Store::autocommit`]), and returns its value.
///
/// # Errors
/// As [`Store::autocommit`].
pub fn autocommit<T>(store: &dyn Store, mut f: impl FnMut(&mut dyn Tx) -> Result<T, ServiceError>) -> Result<T, ServiceError> {
    let mut out = None;
    store.autocommit(&mut |tx| {
        out = Some(f(tx)?);
        Ok(())
    })?;
    out.ok_or_else(|| ServiceError::Internal("statements produced no value".into()))
}

/// Runs `f` without an explicit transaction (single-statement reads) and returns its value.
///
/// # Errors
/// As [`Store::query`].
pub fn query<T>(store: &dyn Store, mut f: impl FnMut(&mut dyn Tx) -> Result<T, ServiceError>) -> Result<T, ServiceError> {
    let mut out = None;
    store.query(&mut |tx| {
        out = Some(f(tx)?);
        Ok(())
    })?;
    out.ok_or_else(|| ServiceError::Internal("query produced no value".into()))
}

/// Runs `f` as a read that may be a little stale ([`Store::report`]: on a replica when there
/// is one) and returns its value.
///
/// # Errors
/// As [`Store::read`].
pub fn report<T>(store: &dyn Store, mut f: impl FnMut(&mut dyn Tx) -> Result<T, ServiceError>) -> Result<T, ServiceError> {
    let mut out = None;
    store.report(&mut |tx| {
        out = Some(f(tx)?);
        Ok(())
    })?;
    out.ok_or_else(|| ServiceError::Internal("transaction produced no value".into()))
}

/// Runs `f` as a read-only transaction and returns its value.
///
/// # Errors
/// As [`Store::read`].
pub fn read<T>(store: &dyn Store, mut f: impl FnMut(&mut dyn Tx) -> Result<T, ServiceError>) -> Result<T, ServiceError> {
    let mut out = None;
    store.read(&mut |tx| {
        out = Some(f(tx)?);
        Ok(())
    })?;
    out.ok_or_else(|| ServiceError::Internal("transaction produced no value".into()))
}
