//! Webhooks, the pure part: Standard Webhooks signing and verification, `whsec_` secrets, the
//! retry schedule with jitter, and the guard against private and metadata addresses.
//! No I/O: the delivery worker and the HTTP adapter use these.

// Integers never meet `+ - *` unchecked here: money goes through `MinorUnit`'s checked
// operations, counters and times saturate or are checked (an overflow must not wrap silently).
#![cfg_attr(not(test), deny(clippy::arithmetic_side_effects))]

pub mod cipher;
pub mod guard;
pub mod model;
pub mod schedule;
pub mod signing;

pub use cipher::{CipherError, SecretCipher};
pub use guard::{check_ip, check_url, is_forbidden_ip, UrlError, UrlPolicy};
pub use model::{Attempt, Delivery, DeliveryState, Endpoint, Event, EventFilter, FilterError, Summary, EVENT_KINDS};
pub use schedule::{RetrySchedule, ScheduleError};
pub use signing::{body_signature, sign, signature_header, Secret, SecretError, Verifier, VerifyError, TOLERANCE_SECONDS};
