//! The storage port. Every use case runs as one closure inside [`Store::run`], which gives it a
//! [`Tx`]: all reads and writes of the closure commit together or not at all. Adapters
//! (in-memory, SQLite, PostgreSQL) implement both traits; the shared contract suite in
//! `malipo-store-contract` holds every adapter to the same behaviour.
//!
//! No transaction is ever held across an `.await`: callers run [`Store::run`] on a blocking thread.

use malipo_auth::{AccessToken, Credential, Organisation};
use malipo_charges::{Charge, ChargeFilter};
use malipo_core::{AccountId, ChargeRef, Currency, EndpointId, EventId, MinorUnit, Mode, Msisdn, OrgId, Timestamp};
use malipo_idempotency::{IdempotencyKey, IdempotencyRecord, KeyScope};
use malipo_ledger::{Account, AccountKind, Journal, LedgerError, LedgerSnapshot, Posting};
use malipo_webhooks::{Attempt, Delivery, Endpoint, Event};

use crate::error::ServiceError;
use crate::ussd::UssdSession;
use crate::wallet::Wallet;

/// What a storage adapter can report.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum StoreError {
    /// A unique constraint refused the write.
    #[error("duplicate")]
    Duplicate,
    /// A ledger rule refused the write (the database's constraints say the same).
    #[error(transparent)]
    Ledger(#[from] LedgerError),
    /// A transient conflict (serialization failure, deadlock, busy database): [`Store::run`]
    /// retries the whole closure a bounded number of times.
    #[error("transient conflict")]
    Retry,
    /// The database cannot be reached.
    #[error("database unavailable")]
    Unavailable(String),
    /// Anything else (never shown to API callers).
    #[error("storage failure: {0}")]
    Other(String),
}

/// How to find one account.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AccountKey {
    /// An organisation's account of a kind (collection, payout, agent float) in a mode.
    Org {
        /// The owner.
        org_id: OrgId,
        /// The mode.
        mode: Mode,
        /// The kind.
        kind: AccountKind,
    },
    /// A platform account (revenue, issuance, sandbox funding) of a mode and currency.
    System {
        /// The mode.
        mode: Mode,
        /// The currency.
        currency: Currency,
        /// The kind.
        kind: AccountKind,
    },
}

/// One line of an account's statement: a posting and its position in the account's history.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatementLine {
    /// Increases with every posting (the statement cursor).
    pub seq: i64,
    /// The posting.
    pub posting: Posting,
}

/// A token with what is needed to authorise its requests.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenRecord {
    /// The token.
    pub token: AccessToken,
    /// Its organisation.
    pub org: Organisation,
    /// Whether its credential has been revoked (which revokes the token too).
    pub credential_revoked: bool,
}

/// One database transaction. Methods take `&mut self` and run on the transaction's connection.
/// Every method returns [`StoreError`]; reads of absent rows return `Ok(None)`.
pub trait Tx {
    // ----- organisations, credentials, tokens -----

    /// Inserts an organisation.
    ///
    /// # Errors
    /// [`StoreError::Duplicate`] if the id exists.
    fn insert_org(&mut self, org: &Organisation) -> Result<(), StoreError>;
    /// An organisation by id.
    ///
    /// # Errors
    /// Storage failures.
    fn org(&mut self, id: &OrgId) -> Result<Option<Organisation>, StoreError>;
    /// The oldest organisation with this name.
    ///
    /// # Errors
    /// Storage failures.
    fn org_by_name(&mut self, name: &str) -> Result<Option<Organisation>, StoreError>;
    /// Inserts a credential.
    ///
    /// # Errors
    /// [`StoreError::Duplicate`] if the client id exists.
    fn insert_credential(&mut self, credential: &Credential) -> Result<(), StoreError>;
    /// A credential by client id (revoked ones too).
    ///
    /// # Errors
    /// Storage failures.
    fn credential(&mut self, client_id: &str) -> Result<Option<Credential>, StoreError>;
    /// Marks a credential and all its tokens revoked; `false` if it does not exist or was revoked.
    ///
    /// # Errors
    /// Storage failures.
    fn revoke_credential(&mut self, client_id: &str, now: Timestamp) -> Result<bool, StoreError>;
    /// Inserts an issued token.
    ///
    /// # Errors
    /// [`StoreError::Duplicate`] if the digest exists.
    fn insert_token(&mut self, token: &AccessToken) -> Result<(), StoreError>;
    /// A token by digest, with its organisation and its credential's revocation.
    ///
    /// # Errors
    /// Storage failures.
    fn token(&mut self, digest: &str) -> Result<Option<TokenRecord>, StoreError>;
    /// Revokes the token with this digest if it belongs to `client_id`; `false` otherwise.
    ///
    /// # Errors
    /// Storage failures.
    fn revoke_token(&mut self, digest: &str, client_id: &str, now: Timestamp) -> Result<bool, StoreError>;

    // ----- accounts and the ledger -----

    /// Inserts an account (balance and held as given, normally zero).
    ///
    /// # Errors
    /// [`StoreError::Duplicate`] if an account with the same id, or the same
    /// (org, mode, kind) / (system kind, mode, currency) / (wallet msisdn, mode), exists.
    fn insert_account(&mut self, account: &Account) -> Result<(), StoreError>;
    /// An account by id.
    ///
    /// # Errors
    /// Storage failures.
    fn account(&mut self, id: &AccountId) -> Result<Option<Account>, StoreError>;
    /// An organisation's or the platform's account.
    ///
    /// # Errors
    /// Storage failures.
    fn find_account(&mut self, key: &AccountKey) -> Result<Option<Account>, StoreError>;
    /// An organisation's accounts in a mode, oldest first.
    ///
    /// # Errors
    /// Storage failures.
    fn org_accounts(&mut self, org_id: &OrgId, mode: Mode) -> Result<Vec<Account>, StoreError>;
    /// Reserves `amount` of the account's available balance (`balance - held`).
    ///
    /// # Errors
    /// [`LedgerError::InsufficientFunds`] (as [`StoreError::Ledger`]) when available is smaller
    /// (accounts that allow negative balances never refuse); [`LedgerError::UnknownAccount`].
    fn hold(&mut self, account: &AccountId, amount: MinorUnit) -> Result<(), StoreError>;
    /// Releases a reservation.
    ///
    /// # Errors
    /// [`LedgerError::ReleaseExceedsHold`]; [`LedgerError::UnknownAccount`].
    fn release(&mut self, account: &AccountId, amount: MinorUnit) -> Result<(), StoreError>;
    /// Posts a balanced journal: appends it to its ledger's audit chain (mode + currency; next
    /// `seq`, `prev_hash`, `hash` by `malipo_ledger::chain_hash`), applies each line to its
    /// account's balance with the rule of `Journal::apply_line` (an account that may not go
    /// negative never ends below its `held`), and appends one posting per line with the balance
    /// after it. Locks accounts in a deterministic order.
    ///
    /// # Errors
    /// [`LedgerError::InsufficientFunds`], [`LedgerError::UnknownAccount`],
    /// [`LedgerError::Mismatch`] (as [`StoreError::Ledger`]); the caller's transaction then fails.
    fn post_journal(&mut self, journal: &Journal) -> Result<(), StoreError>;
    /// Sum of `amount - fee` of `authorised` charges (kind `charge`) whose merchant account is `account`.
    ///
    /// # Errors
    /// Storage failures.
    fn pending_credits(&mut self, account: &AccountId) -> Result<MinorUnit, StoreError>;
    /// Total of the account's debits (negative postings, as a positive amount) posted at or after
    /// `since`, leaving out `sandbox_funding` journals (the sandbox setting a test balance is not
    /// the customer moving money).
    ///
    /// # Errors
    /// Storage failures.
    fn debits_since(&mut self, account: &AccountId, since: Timestamp) -> Result<MinorUnit, StoreError>;
    /// The account's postings, oldest first, with `seq` strictly above `after` when given, at most `limit`.
    ///
    /// # Errors
    /// Storage failures.
    fn account_postings(&mut self, account: &AccountId, after: Option<i64>, limit: usize) -> Result<Vec<StatementLine>, StoreError>;
    /// Every account and journal (with its lines as stored postings, in line order) of one mode or all.
    ///
    /// # Errors
    /// Storage failures.
    fn ledger_snapshot(&mut self, mode: Option<Mode>) -> Result<LedgerSnapshot, StoreError>;

    // ----- wallets -----

    /// Inserts a wallet (its account must exist).
    ///
    /// # Errors
    /// [`StoreError::Duplicate`] if the (mode, msisdn) exists.
    fn insert_wallet(&mut self, wallet: &Wallet) -> Result<(), StoreError>;
    /// A wallet by mode and number.
    ///
    /// # Errors
    /// Storage failures.
    fn wallet(&mut self, mode: Mode, msisdn: &Msisdn) -> Result<Option<Wallet>, StoreError>;
    /// The wallet of a mode and country that holds this identity document, if any.
    ///
    /// # Errors
    /// Storage failures.
    fn wallet_by_document(&mut self, mode: Mode, country: &str, id_type: &str, id_number: &str) -> Result<Option<Wallet>, StoreError>;
    /// A wallet by mode and number, locked for update until the transaction ends.
    ///
    /// # Errors
    /// Storage failures.
    fn lock_wallet(&mut self, mode: Mode, msisdn: &Msisdn) -> Result<Option<Wallet>, StoreError>;
    /// Overwrites a wallet's mutable fields (state, KYC tier, PIN hash, attempts, names, ID,
    /// date of birth, lock reason, updated_at).
    ///
    /// # Errors
    /// Storage failures.
    fn update_wallet(&mut self, wallet: &Wallet) -> Result<(), StoreError>;

    // ----- charges -----

    /// Inserts a charge.
    ///
    /// # Errors
    /// [`StoreError::Duplicate`] if the id exists.
    fn insert_charge(&mut self, charge: &Charge) -> Result<(), StoreError>;
    /// A charge of an organisation in a mode (another organisation's or mode's is `None`).
    ///
    /// # Errors
    /// Storage failures.
    fn charge(&mut self, org_id: &OrgId, mode: Mode, id: &ChargeRef) -> Result<Option<Charge>, StoreError>;
    /// The most recently created charge (kind `charge`, never a cash-out) with this reference.
    ///
    /// # Errors
    /// Storage failures.
    fn latest_charge_by_reference(&mut self, org_id: &OrgId, mode: Mode, reference: &str) -> Result<Option<Charge>, StoreError>;
    /// A charge by id, locked for update until the transaction ends.
    ///
    /// # Errors
    /// Storage failures.
    fn lock_charge(&mut self, id: &ChargeRef) -> Result<Option<Charge>, StoreError>;
    /// Overwrites a charge's mutable fields (state, failure_reason, transaction_id, payer_account,
    /// amount_reversed, updated_at, completed_at, next_action_at).
    ///
    /// # Errors
    /// Storage failures.
    fn update_charge(&mut self, charge: &Charge) -> Result<(), StoreError>;
    /// An organisation's charges (kind `charge`, never cash-outs) in a mode, newest first (by id, which is time-ordered), with ids
    /// strictly below `before` when given, at most `limit`.
    ///
    /// # Errors
    /// Storage failures.
    fn list_charges(
        &mut self,
        org_id: &OrgId,
        mode: Mode,
        filter: &ChargeFilter,
        before: Option<&ChargeRef>,
        limit: usize,
    ) -> Result<Vec<Charge>, StoreError>;
    /// Claims up to `limit` charges whose `next_action_at <= now`, oldest due first, by setting
    /// their `next_action_at` to `lease_until` (so a crashed worker's claims come due again), and
    /// returns their ids. Concurrent callers never claim the same charge (PostgreSQL:
    /// `FOR UPDATE SKIP LOCKED`).
    ///
    /// # Errors
    /// Storage failures.
    fn claim_due_charges(&mut self, now: Timestamp, lease_until: Timestamp, limit: usize) -> Result<Vec<ChargeRef>, StoreError>;
    /// The `pending` charges and cash-outs whose payer is this number, in this mode, oldest first.
    ///
    /// # Errors
    /// Storage failures.
    fn pending_charges_of_payer(&mut self, mode: Mode, msisdn: &Msisdn) -> Result<Vec<Charge>, StoreError>;

    // ----- USSD sessions -----

    /// A USSD session of a gateway organisation, locked for update until the transaction ends.
    ///
    /// # Errors
    /// Storage failures.
    fn ussd_session(&mut self, org_id: &OrgId, mode: Mode, session_id: &str) -> Result<Option<UssdSession>, StoreError>;
    /// Inserts or overwrites a USSD session.
    ///
    /// # Errors
    /// Storage failures.
    fn put_ussd_session(&mut self, session: &UssdSession) -> Result<(), StoreError>;
    /// Deletes sessions last updated before `before`; returns how many.
    ///
    /// # Errors
    /// Storage failures.
    fn purge_ussd_sessions(&mut self, before: Timestamp) -> Result<u64, StoreError>;

    // ----- idempotency -----

    /// The record stored for a key, if any.
    ///
    /// # Errors
    /// Storage failures.
    fn idempotency_record(&mut self, scope: &KeyScope, key: &IdempotencyKey) -> Result<Option<IdempotencyRecord>, StoreError>;
    /// Stores a key with its record (fingerprint and response) unless the key exists, and says
    /// whether it was stored. `false` means another transaction holds the key: on PostgreSQL this
    /// first waits for a concurrent uncommitted insert of the same key to commit or roll back.
    ///
    /// # Errors
    /// Storage failures.
    fn insert_key(&mut self, scope: &KeyScope, key: &IdempotencyKey, record: &IdempotencyRecord) -> Result<bool, StoreError>;
    // ----- webhooks: endpoints, the event outbox, deliveries -----

    /// Inserts an endpoint.
    ///
    /// # Errors
    /// [`StoreError::Duplicate`] if the id exists.
    fn insert_endpoint(&mut self, endpoint: &Endpoint) -> Result<(), StoreError>;
    /// An endpoint by id, deleted ones included (the caller checks ownership and deletion).
    ///
    /// # Errors
    /// Storage failures.
    fn endpoint(&mut self, id: &EndpointId) -> Result<Option<Endpoint>, StoreError>;
    /// An organisation's endpoints in a mode that are not deleted, oldest first.
    ///
    /// # Errors
    /// Storage failures.
    fn list_endpoints(&mut self, org_id: &OrgId, mode: Mode) -> Result<Vec<Endpoint>, StoreError>;
    /// Overwrites an endpoint's mutable fields (url, description, events, enabled, secret,
    /// previous_secret, disabled_reason, failing_since, deleted_at, updated_at).
    ///
    /// # Errors
    /// Storage failures.
    fn update_endpoint(&mut self, endpoint: &Endpoint) -> Result<(), StoreError>;
    /// Inserts an event.
    ///
    /// # Errors
    /// [`StoreError::Duplicate`] if the id exists.
    fn insert_event(&mut self, event: &Event) -> Result<(), StoreError>;
    /// An event of an organisation in a mode.
    ///
    /// # Errors
    /// Storage failures.
    fn event(&mut self, org_id: &OrgId, mode: Mode, id: &EventId) -> Result<Option<Event>, StoreError>;
    /// An organisation's events in a mode, oldest first (by id, which is time-ordered), with ids
    /// strictly above `after` when given, of one kind when given, at most `limit`.
    ///
    /// # Errors
    /// Storage failures.
    fn list_events(
        &mut self,
        org_id: &OrgId,
        mode: Mode,
        kind: Option<&str>,
        after: Option<&EventId>,
        limit: usize,
    ) -> Result<Vec<Event>, StoreError>;
    /// Inserts a delivery.
    ///
    /// # Errors
    /// [`StoreError::Duplicate`] if the id exists.
    fn insert_delivery(&mut self, delivery: &Delivery) -> Result<(), StoreError>;
    /// A delivery by id, locked for update until the transaction ends.
    ///
    /// # Errors
    /// Storage failures.
    fn lock_delivery(&mut self, id: &str) -> Result<Option<Delivery>, StoreError>;
    /// Overwrites a delivery's mutable fields (state, attempts, next_attempt_at, updated_at).
    ///
    /// # Errors
    /// Storage failures.
    fn update_delivery(&mut self, delivery: &Delivery) -> Result<(), StoreError>;
    /// Claims up to `limit` pending deliveries whose `next_attempt_at <= now`, oldest due first,
    /// by setting `next_attempt_at` to `lease_until`, and returns their ids. Concurrent callers
    /// never claim the same delivery (PostgreSQL: `FOR UPDATE SKIP LOCKED`).
    ///
    /// # Errors
    /// Storage failures.
    fn claim_due_deliveries(&mut self, now: Timestamp, lease_until: Timestamp, limit: usize) -> Result<Vec<String>, StoreError>;
    /// The deliveries of an event, oldest first.
    ///
    /// # Errors
    /// Storage failures.
    fn deliveries_of_event(&mut self, event_id: &EventId) -> Result<Vec<Delivery>, StoreError>;
    /// The pending deliveries to an endpoint.
    ///
    /// # Errors
    /// Storage failures.
    fn pending_deliveries_of_endpoint(&mut self, endpoint_id: &EndpointId) -> Result<Vec<Delivery>, StoreError>;
    /// Appends an attempt.
    ///
    /// # Errors
    /// Storage failures.
    fn insert_attempt(&mut self, attempt: &Attempt) -> Result<(), StoreError>;
    /// The attempts of an event, oldest first.
    ///
    /// # Errors
    /// Storage failures.
    fn attempts_of_event(&mut self, event_id: &EventId) -> Result<Vec<Attempt>, StoreError>;
    /// Deletes events created before `before` with their deliveries and attempts; returns how
    /// many events.
    ///
    /// # Errors
    /// Storage failures.
    fn purge_events(&mut self, before: Timestamp) -> Result<u64, StoreError>;

    /// Deletes keys created before `before`; returns how many.
    ///
    /// # Errors
    /// Storage failures.
    fn purge_keys(&mut self, before: Timestamp) -> Result<u64, StoreError>;
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

    /// Whether the database answers and has every migration applied.
    ///
    /// # Errors
    /// [`StoreError::Unavailable`] otherwise.
    fn ready(&self) -> Result<(), StoreError>;
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
