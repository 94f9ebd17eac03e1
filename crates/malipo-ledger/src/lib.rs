//! The double-entry ledger: accounts, balanced journals, reservations and the audit chain.
//! Pure rules; storage adapters apply them atomically and the database enforces them again.

pub mod account;
pub mod chain;
pub mod journal;
pub mod verify;

pub use account::{Account, AccountKind};
pub use chain::{chain_hash, GENESIS_HASH};
pub use journal::{Journal, JournalKind, JournalLine, LedgerError, Posting};
pub use verify::{verify, ChainedJournal, LedgerSnapshot, Violation};
