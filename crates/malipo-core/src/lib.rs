//! Malipo's shared vocabulary: money in integer minor units, currencies, prefixed identifiers,
//! modes, phone numbers and timestamps. Pure: no I/O, no framework types.

// Integers never meet `+ - *` unchecked here: money goes through `MinorUnit`'s checked
// operations, counters and times saturate or are checked (an overflow must not wrap silently).
#![cfg_attr(not(test), deny(clippy::arithmetic_side_effects))]

pub mod id;
pub mod mode;
pub mod money;
pub mod msisdn;
pub mod time;

pub use id::*;
pub use mode::Mode;
pub use money::{Currency, MinorUnit, MoneyError};
pub use msisdn::{Msisdn, MsisdnError};
pub use time::{Clock, SystemClock, Timestamp};
