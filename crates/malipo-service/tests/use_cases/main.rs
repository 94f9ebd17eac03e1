//! Unit tests of the use cases' rules (fees, state moves, limits, lockout, the webhook retry
//! schedule) over the in-memory store, with the clock swapped for a mockall
//! double: no database, no HTTP, no sleeping. The same rules run against SQLite and PostgreSQL
//! in the app's HTTP suite; these say which rule broke, in milliseconds.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

mod authorization;
mod charges;
mod console_reads;
mod groups;
mod money_out;
mod payment_requests;
mod people;
mod snapshots;
mod transactions;
mod wallets;
mod webhooks;
