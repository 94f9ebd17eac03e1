//! Charges: the payment prompt an integrator pushes to a customer's phone, and its state machine.
//! Pure: the state machine decides, the service layer stores.

pub mod charge;
pub mod sandbox;
pub mod state;

pub use charge::{Charge, ChargeFilter, ChargeKind};
pub use sandbox::SandboxOutcome;
pub use state::{ChargeEvent, ChargeState, FailureReason, TransitionError};
