//! Charges: the payment prompt an integrator pushes to a customer's phone, and its state machine.
//! Pure: the state machine decides, the service layer stores.

// Integers never meet `+ - *` unchecked here: money goes through `MinorUnit`'s checked
// operations, counters and times saturate or are checked (an overflow must not wrap silently).
#![cfg_attr(not(test), deny(clippy::arithmetic_side_effects))]

pub mod charge;
pub mod sandbox;
pub mod state;

pub use charge::{Charge, ChargeFilter, ChargeKind};
pub use sandbox::SandboxOutcome;
pub use state::{ChargeEvent, ChargeState, FailureReason, TransitionError};
