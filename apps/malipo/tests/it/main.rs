//! HTTP tests of the running app: each test starts the server on port 0 against a fresh
//! database (SQLite and PostgreSQL), and talks to it over loopback like an integrator would.
#![allow(clippy::unwrap_used, clippy::expect_used, unreachable_pub, dead_code)]

mod harness;

mod agents;
mod auth;
mod bulk;
mod charges;
mod cli;
mod config;
mod console;
mod crash;
mod errors;
mod failover;
mod gsma;
mod gsma_batches;
mod gsma_callbacks;
mod gsma_statements;
mod idempotency;
mod isolation;
mod lifecycle;
mod live;
mod logs;
mod ops;
mod payment_requests;
mod payouts;
mod races;
mod sandbox;
mod sdk;
mod sdk_accounts_agents;
mod sdk_bulk_requests;
mod sdk_events;
mod sdk_examples;
mod sdk_outage;
mod sdk_wallets_channels;
mod transactions;
mod ussd;
mod wallets;
mod webhooks_api;
mod webhooks_delivery;
