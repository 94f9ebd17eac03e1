//! Malipo's use cases: each is one transaction over the storage port, pure otherwise.
//! Callers (HTTP handlers, workers, the CLI) run them on blocking threads.

pub mod error;
pub mod ports;
pub mod wallet;

pub use error::{FieldError, OAuthProblem, ServiceError, TokenProblem};
pub use ports::{read, write, AccountKey, Store, StoreError, TokenRecord, Tx};
pub use wallet::{Wallet, WalletState};
