//! Route handlers, one module per group of the contract (`<group>/mod.rs` with its handlers, its
//! route table and its OpenAPI list; `<group>/dto.rs` with the wire shapes only it uses), the
//! wire shapes several groups share, and the operational endpoints.

pub mod accounts;
pub mod agents;
pub mod auth;
pub mod bulk;
pub mod channels;
pub mod charges;
pub mod ops;
pub mod organisation;
pub mod payment_requests;
pub mod payouts;
pub mod reversals;
pub mod shared;
pub mod transactions;
pub mod wallets;
pub mod webhooks;
