//! Malipo's use cases: each is one transaction over the storage port, pure otherwise.
//! Callers (HTTP handlers, workers, the CLI) run them on blocking threads.

pub mod access;
pub mod agents;
pub mod balances;
pub mod charges;
pub mod error;
pub mod idempotency;
pub mod platform;
pub mod ports;
pub mod processing;
pub mod sandbox;
pub mod ussd;
pub mod wallet;
pub mod wallets;
pub mod webhooks;

pub use access::{IssuedCredential, IssuedToken};
pub use agents::{CashIn, P2pTransfer};
pub use balances::Balance;
pub use charges::{NewCharge, Page};
pub use error::{FieldError, OAuthProblem, ServiceError, TokenProblem};
pub use idempotency::{Idem, IdemOutcome};
pub use platform::{NoObserver, Observer, Platform, ServiceConfig};
pub use ports::{query, read, write, AccountKey, StatementLine, Store, StoreError, TokenRecord, Tx};
pub use sandbox::SimulateAction;
pub use ussd::{UssdRequest, UssdSession};
pub use wallet::{Wallet, WalletState};
pub use wallets::{NewWallet, PinCheck, WalletDetails};
pub use webhooks::{
    charge_event_kind, DeliveryJob, EndpointWithSecret, EventDetail, EventRenderer, NoRenderer, Redelivery, SendOutcome, WebhookConfig,
};
