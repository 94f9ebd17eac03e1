//! Money out: payouts, bulk payout batches with maker/checker, reversals, and the strict CSV
//! reading of a bulk file. Pure: the state machines decide, the service layer stores.

// Integers never meet `+ - *` unchecked here: money goes through `MinorUnit`'s checked
// operations, counters saturate or are checked (an overflow must not wrap silently).
#![cfg_attr(not(test), deny(clippy::arithmetic_side_effects))]

pub mod batch;
pub mod bulk_csv;
pub mod payout;
pub mod reversal;

pub use batch::{BatchCounts, BatchEvent, BatchState, BulkPayout, BulkTransitionError};
pub use bulk_csv::{parse_bulk_csv, CsvProblem, RawItem, MAX_BULK_ITEMS};
pub use payout::{Payout, PayoutEvent, PayoutFailure, PayoutFilter, PayoutState, PayoutTransitionError};
pub use reversal::{fee_share, Reversal, ReversalOriginal};
