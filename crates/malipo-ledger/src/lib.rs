//! The double-entry ledger: accounts, balanced journals, reservations and the audit chain.
//! Pure rules; storage adapters apply them atomically and the database enforces them again.

// Integers never meet `+ - *` unchecked here: money goes through `MinorUnit`'s checked
// operations, counters and times saturate or are checked (an overflow must not wrap silently).
#![cfg_attr(not(test), deny(clippy::arithmetic_side_effects))]

pub mod account;
pub mod chain;
pub mod journal;
pub mod recon;
pub mod verify;

pub use account::{Account, AccountKind};
pub use chain::{chain_hash, GENESIS_HASH};
pub use journal::{Journal, JournalFee, JournalKind, JournalLine, LedgerError, Posting};
pub use recon::{kinds_of_type, transaction_type, DayReport, DayTotals, Transaction, TypeTotals, TRANSACTION_TYPES};
pub use verify::{verify, verify_part, ChainLink, ChainedJournal, LedgerSnapshot, Violation};
