//! Accounts and the double-entry ledger.

use malipo_core::{AccountId, Currency, MinorUnit, Mode, OrgId, Timestamp, TransactionId};
use malipo_ledger::{Account, AccountKind, Journal, JournalKind, LedgerSnapshot, Posting};

use crate::error::StoreError;

/// How to find one account.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
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

/// Which postings of one account to read (a statement page, a page of transactions, a run of an
/// export or of a day's report).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PostingQuery {
    /// The account.
    pub account: AccountId,
    /// Only postings after this `seq` (oldest first) or before it (newest first).
    pub cursor: Option<i64>,
    /// Only postings with `seq` above this, whatever the order: with `up_to`, a run of the
    /// account's history found by [`LedgerRepo::last_posting_before`], read along the account's
    /// index alone.
    pub after: Option<i64>,
    /// Only postings with `seq` at most this.
    pub up_to: Option<i64>,
    /// Newest first instead of ledger order.
    pub newest_first: bool,
    /// Posted at or after this time.
    pub from: Option<Timestamp>,
    /// Posted before this time.
    pub to: Option<Timestamp>,
    /// Only journals of these kinds (every kind when empty).
    pub kinds: Vec<JournalKind>,
    /// At most this many.
    pub limit: usize,
}

impl PostingQuery {
    /// The account's postings in ledger order, `limit` at a time, with no other condition.
    pub fn oldest_first(account: AccountId, limit: usize) -> Self {
        PostingQuery {
            account,
            cursor: None,
            after: None,
            up_to: None,
            newest_first: false,
            from: None,
            to: None,
            kinds: Vec::new(),
            limit,
        }
    }
}

/// Accounts and the double-entry ledger: part of the one transaction handle [`super::Tx`].
pub trait LedgerRepo {
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
    /// The id of an organisation's or the platform's account. An account's id never changes once
    /// it is opened, so an adapter may answer from what its committed transactions saw, without
    /// a statement.
    ///
    /// # Errors
    /// Storage failures.
    fn account_id(&mut self, key: &AccountKey) -> Result<Option<AccountId>, StoreError> {
        Ok(self.find_account(key)?.map(|a| a.id))
    }
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
    /// Posts a balanced journal: inserts it unsealed (no chain entry yet: the sealer,
    /// [`super::ChainRepo::seal_pending`], appends it to its ledger's audit chain after the
    /// commit, and nothing here waits for the chain), applies each line to its account's balance
    /// with the rule of `Journal::apply_line` (an account that may not go negative never ends
    /// below its `held`), and appends one posting per line with the balance after it. Locks
    /// accounts in a deterministic order.
    ///
    /// # Errors
    /// [`LedgerError::InsufficientFunds`], [`LedgerError::UnknownAccount`],
    /// [`LedgerError::Mismatch`] (as [`StoreError::Ledger`]); the caller's transaction then fails.
    /// [`StoreError::Duplicate`] when the journal's id exists, or when a `charge` or `payout`
    /// journal names a source (`source_ref`) that such a journal already paid: a charge or
    /// payout is posted once. Nothing of a refused journal is written.
    fn post_journal(&mut self, journal: &Journal) -> Result<(), StoreError>;
    /// As [`LedgerRepo::post_journal`], for a caller whose transaction fails with a failed
    /// posting (it propagates the error): the adapter may skip the savepoint that keeps the
    /// transaction usable after one (two round trips on PostgreSQL). A refused or failed journal
    /// may then have applied some of its lines, and the transaction is never committed: a
    /// closure that goes on and returns `Ok` is rolled back and fails.
    ///
    /// # Errors
    /// As [`LedgerRepo::post_journal`].
    fn post_journal_whole(&mut self, journal: &Journal) -> Result<(), StoreError> {
        self.post_journal(journal)
    }
    /// [`LedgerRepo::post_journal_whole`] of each journal in turn (the adapter may write their
    /// rows together).
    ///
    /// # Errors
    /// As [`LedgerRepo::post_journal_whole`].
    fn post_journals_whole(&mut self, journals: &[&Journal]) -> Result<(), StoreError> {
        journals.iter().try_for_each(|j| self.post_journal_whole(j))
    }
    /// Sum of `amount - fee` of `authorised` charges (kind `charge`) whose merchant account is `account`.
    ///
    /// # Errors
    /// Storage failures.
    fn pending_credits(&mut self, account: &AccountId) -> Result<MinorUnit, StoreError>;
    /// The account (as [`LedgerRepo::account`] reads it) and the total of its debits (negative
    /// postings, as a positive amount) posted at or after `since`, leaving out `sandbox_funding`
    /// journals (the sandbox setting a test balance is not the customer moving money): what a
    /// wallet's limits are checked on, read in one statement.
    ///
    /// # Errors
    /// Storage failures.
    fn account_with_debits_since(&mut self, id: &AccountId, since: Timestamp) -> Result<Option<(Account, MinorUnit)>, StoreError>;
    /// The account's postings that `query` selects: in ledger order (`seq` ascending) or newest
    /// first, each with its journal's kind and source and the fee recorded on it. An account's
    /// postings are in time order too: a posting is never stamped earlier than the one before
    /// it on the same account.
    ///
    /// # Errors
    /// Storage failures.
    fn account_postings(&mut self, query: &PostingQuery) -> Result<Vec<StatementLine>, StoreError>;
    /// The postings of one journal on any of `accounts`, in line order.
    ///
    /// # Errors
    /// Storage failures.
    fn journal_postings(&mut self, journal: &TransactionId, accounts: &[AccountId]) -> Result<Vec<StatementLine>, StoreError>;
    /// The account's last posting stamped before `at` (none when there is none): its
    /// `balance_after` is the balance at `at`, and its `seq` the cursor where postings from `at`
    /// on begin, so that a window's first page starts there instead of at the account's start.
    ///
    /// # Errors
    /// Storage failures.
    fn last_posting_before(&mut self, account: &AccountId, at: Timestamp) -> Result<Option<StatementLine>, StoreError>;
    /// Every account and journal (with its lines as stored, postings and waiting lines, in line
    /// order, and its chain entry once sealed) of one mode or all. Several statements: read it in
    /// a read-only transaction, which sees one snapshot.
    ///
    /// # Errors
    /// Storage failures.
    fn ledger_snapshot(&mut self, mode: Option<Mode>) -> Result<LedgerSnapshot, StoreError>;
    /// The part of the ledger these accounts reach: the accounts (those that exist) and every
    /// journal with a line on any of them, with all its lines (postings and waiting lines, in line
    /// order), oldest first. Several statements: read it in a read-only transaction.
    ///
    /// # Errors
    /// Storage failures.
    fn ledger_part(&mut self, accounts: &[AccountId]) -> Result<LedgerSnapshot, StoreError>;
    /// The accounts with lines waiting to be applied, at most `limit`, in descending id order (the order in which postings lock accounts). A line that needs no
    /// funds check on an account of a kind that defers lines (`AccountKind::defers_lines`) may
    /// be committed with its journal as a waiting line rather than a posting: it counts in the
    /// account's balance (every read of an account includes it) and in its journal's lines
    /// (snapshots, parts, the sealer), but is not yet among the account's postings.
    ///
    /// # Errors
    /// Storage failures.
    fn waiting_accounts(&mut self, limit: usize) -> Result<Vec<AccountId>, StoreError>;
    /// Applies every line waiting on the account, oldest first, under the account's lock: each
    /// becomes a posting with the balance after it, so that the account's postings (statements,
    /// transactions, reconciliation) include them. Returns how many. An adapter that posts every
    /// line at once has none and returns 0.
    ///
    /// # Errors
    /// [`LedgerError::UnknownAccount`]; storage failures.
    fn apply_waiting(&mut self, account: &AccountId) -> Result<usize, StoreError>;
}
