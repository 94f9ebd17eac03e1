//! Malipo's use cases: each is one transaction over the storage port, pure otherwise. Callers
//! (HTTP handlers, the web console, workers, the CLI) reach them through [`Platform`], one
//! feature at a time (`platform.charges()`, `platform.wallets()`, …), and run them on blocking
//! threads. A state-changing use case takes a typed command ([`commands`]) that the caller
//! parses first (`platform.parse(..)`), and an [`Answer`] to keep with its idempotency key.
//!
//! Modules import downwards only: `error` ← `ports` ← `core` ← shared rules (`events`,
//! `limits`, `customers`, `lifecycle`, …) ← `commands` ← features ← `platform`.

// Integers never meet `+ - *` unchecked here: money goes through `MinorUnit`'s checked
// operations, counters and times saturate or are checked (an overflow must not wrap silently).
#![cfg_attr(not(test), deny(clippy::arithmetic_side_effects))]

pub mod access;
pub mod accounts;
pub mod agents;
pub mod back_office;
pub mod backlog;
pub mod charges;
pub mod commands;
pub mod config;
mod core;
pub mod csv_files;
mod customers;
mod drain;
pub mod error;
mod events;
mod group;
pub mod housekeeping;
pub mod idempotency;
mod lifecycle;
mod limits;
mod needs;
mod p2p;
pub mod page;
pub mod payment_requests;
pub mod payouts;
pub mod people;
pub mod platform;
pub mod ports;
pub mod processing;
pub mod profile;
pub mod recorded;
pub mod reversals;
pub mod sandbox;
pub mod sealer;
pub mod snapshot;
pub mod transactions;
pub mod transfers;
pub mod ussd;
pub mod validate;
pub mod views;
pub mod wallets;
pub mod webhooks;

pub use access::{Access, IssuedCredential, IssuedToken};
pub use accounts::{Accounts, Balance, Funded, LedgerCheck};
pub use agents::{Agents, CashIn, CashInQuote};
pub use back_office::{BackOffice, LedgerHealth};
pub use backlog::{Backlog, BacklogReading, Intake};
pub use charges::{ChargeActivity, ChargeDay, ChargeDelivery, ChargeStep, Charges};
// Every command and raw input, and the parsing they share.
pub use commands::*;
pub use config::{ServiceConfig, WebhookConfig};
pub use core::{NoObserver, Observer};
pub use error::{Earlier, FieldError, OAuthProblem, ServiceError, StoreError, TokenProblem};
pub use events::{charge_event_kind, happened, Happened};
pub use group::Grouping;
pub use housekeeping::{Housekeeping, EVENT_RETENTION_SECONDS, KEY_RETENTION_SECONDS};
pub use idempotency::{Actor, CallbackTarget, Done, Idem, Keep, Subject};
pub use lifecycle::PIN_LOCKOUT_REASON;
pub use limits::WalletDetails;
pub use p2p::P2pTransfer;
pub use page::Page;
pub use payment_requests::PaymentRequests;
pub use payouts::bulk::BulkPayouts;
pub use payouts::worker::PayoutProcessing;
pub use payouts::Payouts;
pub use people::{Enrolment, InvitationView, Invited, Invitee, Inviter, People, SignIn, SignedIn};
pub use platform::Platform;
pub use ports::{
    autocommit, query, read, report, write, AccountKey, AuditEntry, AuditFilter, AuditRepo, AuthRepo, BulkRepo, Callback, CallbackRepo,
    CallbackSecret, CallbackState, ChainRepo, ChargeDayTotal, ChargeRepo, EndpointRepo, EventsPage, IdempotencyRepo, Invitation,
    LedgerRepo, OutboxRepo, PaymentRequestRepo, PayoutRepo, PostingQuery, QueuedWrites, ReplicaState, ReversalRepo, Savepoint, SessionRepo,
    StatementLine, Store, TokenRecord, Tx, UnsealedStats, UserRepo, UssdRepo, UssdSession, Wallet, WalletRepo, WalletState, WebhookSender,
    WriteQueue, DAY_MICROS,
};
pub use processing::Processing;
pub use profile::{Profile, Profiles};
pub use recorded::Recorded;
pub use reversals::Reversals;
pub use sandbox::Sandbox;
pub use sealer::{Sealer, SEAL_BATCH};
pub use transactions::{ExportRun, Reconciliation, TransactionFilter, Transactions};
pub use transfers::{Transfer, Transfers};
pub use ussd::{Ussd, UssdRequest, SESSION_TIMEOUT_SECONDS};
pub use wallets::{HolderName, PinCheck, Wallets};
pub use webhooks::{
    CallbackJob, CallbackSigning, Callbacks, Deliveries, DeliveryJob, EndpointWithSecret, EventDetail, Redelivery, SendOutcome, Webhooks,
};
