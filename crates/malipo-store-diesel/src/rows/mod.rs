//! Storage rows and their conversion to and from the domain types, one file per feature. Rows
//! hold only plain column values; everything is parsed back into domain types here, at the edge,
//! and a value that does not parse is reported as `StoreError::Other` (the database holds
//! something no release wrote).

mod auth;
mod callbacks;
mod charges;
mod columns;
mod endpoints;
mod idempotency;
mod ledger;
mod outbox;
mod payment_requests;
mod payouts;
mod people;
mod reversals;
mod ussd;
mod wallets;

pub(crate) use auth::*;
pub(crate) use callbacks::*;
pub(crate) use charges::*;
pub(crate) use columns::{currency, mode};
pub(crate) use endpoints::*;
pub(crate) use idempotency::*;
pub(crate) use ledger::*;
pub(crate) use outbox::*;
pub(crate) use payment_requests::*;
pub(crate) use payouts::*;
pub(crate) use people::*;
pub(crate) use reversals::*;
pub(crate) use ussd::*;
pub(crate) use wallets::*;
