//! The use cases' commands: each state-changing use case takes one, parsed once at the edge
//! from the front end's raw input (plain text: the API's DTO converted, a console's HTML form)
//! by its [`Command::parse`], which reports every field's problem at once with the field names,
//! codes and messages of the API. One file per feature; each command beside its raw input.
//!
//! ```text
//! let command: CreateCharge = platform.parse(&principal, &NewCharge { .. })?;
//! platform.charges().create(&principal, &command, &idem, &answer)
//! ```

mod agents;
mod bulk;
mod charges;
mod context;
mod payment_requests;
mod payouts;
mod reversals;
mod sandbox;
mod transfers;
mod wallets;
mod webhooks;

pub use agents::{AgentCash, NewAgentCash};
pub use bulk::{ApproveBulkPayout, BulkInput, CreateBulkPayout, NewBulkPayout, NewRejection, RejectBulkPayout};
pub use charges::{CreateCharge, NewCharge};
pub use context::{Command, ParseContext};
pub use payment_requests::{CancelPaymentRequest, CreatePaymentRequest, NewPaymentRequest};
pub use payouts::{CreatePayout, NewPayout, PayoutLine};
pub use reversals::{CreateReversal, NewReversal, ReversalTarget};
pub use sandbox::{NewSandboxWallet, NewSimulation, SandboxWallet, Simulate, SimulateAction};
pub use transfers::{CreateTransfer, NewTransfer};
pub(crate) use wallets::check_id;
pub use wallets::{NewKyc, NewPin, NewPinReset, NewWallet, NewWalletLock, OpenWallet, RaiseKyc, ResetPinAttempts, SetPin, WalletLock};
pub use webhooks::{CreateEndpoint, EndpointTarget, Named, NewEndpoint, NewRedelivery, Redeliver, RotateCallbackSecret};
