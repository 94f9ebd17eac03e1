//! An async client for the Malipo payments API.
//!
//! It does the parts an integrator would otherwise get wrong by hand:
//!
//! - **Tokens**: the key pair is exchanged for a bearer token through the `oauth2` crate's client
//!   credentials grant; one token per [`Client`], shared by every clone and task, refreshed a
//!   minute before it expires (and once on a 401) by one task while the others wait. A test key
//!   pair works in the sandbox, a live one in live mode: nothing else to configure.
//! - **Retries that cannot pay twice**: every state-changing call carries an idempotency key
//!   (generated unless given) and every try of it sends the same key and body; network errors,
//!   408, 409 `idempotency_in_progress`, 429 and 503 (after their `Retry-After`) and other 5xx
//!   are retried with capped exponential backoff and jitter, by default for up to 20 tries and
//!   60 s in all ([`RetryPolicy`]); another 4xx never is.
//! - **Errors**: [`Error::Api`] carries the problem document ([`ApiError`]: status, [`ErrorCode`],
//!   detail, field errors, request id), transport failures apart; the error of a write carries
//!   the idempotency key it was sent under ([`Error::idempotency_key`]).
//! - **Lists** as pages or as one async stream of every item ([`List::stream`]).
//! - **Typed answers**: amounts are [`Decimal`]s that keep the text the API wrote (`250.00`),
//!   timestamps [`time::OffsetDateTime`]s, closed sets of names enums with an `Other` for a
//!   name this version does not know ([`TransactionKind`], [`DeliveryState`], ...).
//! - **No global feature forced on the program**: the client turns on no serde_json feature
//!   but `raw_value` (not `arbitrary_precision`, which would break the program's own
//!   `#[serde(flatten)]` structs holding an `f64`).
//! - **Waiting** for a final state: [`Charges::wait`], [`Payouts::wait`], [`BulkPayouts::wait`],
//!   each with a deadline.
//! - **Webhooks**: [`Webhooks::verify`] checks a delivery as Standard Webhooks says and reads
//!   its [`Event`]; [`Webhooks::check_parsed`] checks one that arrived already parsed, by its
//!   body `signature`; [`Event::object`] reads what it is about, typed ([`EventObject`]).
//! - **Every operation** of the API, group by group (`client.charges()`, `client.payouts()`,
//!   `client.bulk_payouts()`, `client.wallets()`, ...), from the table in [`operations`].
//!
//! ```no_run
//! use malipo_client::{Client, NewCharge};
//! use rust_decimal::Decimal;
//!
//! # async fn run() -> Result<(), malipo_client::Error> {
//! let client = Client::new("https://api.malipo.example", "ck_test_…", "cs_test_…")?;
//! let charge = client.charges().create(&NewCharge::new("254712345678", Decimal::new(25000, 2), "ORDER-1042")).await?;
//! println!("{} is {:?}", charge.charge_ref, charge.state);
//! # Ok(())
//! # }
//! ```
//!
//! # Retrying a write yourself
//!
//! When a state-changing call fails after the client's own retries (the server unreachable for
//! longer than the budget, say), it may or may not have been done. The one safe way to try it
//! again, now or later, is its `_with_key` form with the key of the error and the same request:
//! the server answers a key it has done with the same answer, and does it once.
//!
//! ```no_run
//! # use malipo_client::{Client, Error, NewCharge};
//! # async fn run(client: &Client, order: &NewCharge) -> Result<(), Error> {
//! let charge = match client.charges().create(order).await {
//!     Ok(charge) => charge,
//!     Err(e) => match e.idempotency_key() {
//!         // Not a refusal of the request itself: the same request, under the same key.
//!         Some(key) if !matches!(&e, Error::Api(p) if p.status < 500 && p.status != 429) => {
//!             let key = key.to_owned(); // keep it (a database, a queue) to retry later
//!             client.charges().create_with_key(order, &key).await?
//!         }
//!         _ => return Err(e),
//!     },
//! };
//! # let _ = charge; Ok(())
//! # }
//! ```
//!
//! A new call without the key (`create` again) is a new charge to the server: if the first was
//! done and only its answer lost, the customer is charged twice.
#![deny(missing_docs)]

mod amount;
mod client;
mod error;
mod names;
pub mod operations;
mod page;
mod resources;
mod token;
pub mod webhooks;

pub use client::{Client, ClientBuilder, RetryPolicy};
pub use error::{ApiError, Error, ErrorCode, FieldError, FieldErrorCode};
pub use page::{List, Page};
pub use resources::accounts::*;
pub use resources::agents::*;
pub use resources::bulk_payouts::*;
pub use resources::charges::*;
pub use resources::countries::*;
pub use resources::payment_requests::*;
pub use resources::payouts::*;
pub use resources::reversals::*;
pub use resources::sandbox::*;
pub use resources::transactions::*;
pub use resources::ussd::*;
pub use resources::wallets::*;
pub use resources::webhooks::*;
pub use webhooks::{Event, EventKind, EventObject, Headers, WebhookError, Webhooks};

/// The decimal type of every amount (`rust_decimal`'s), so that an integrator needs no
/// dependency of their own to name it.
pub use rust_decimal::Decimal;
/// The `serde_json` the client is built with (events' `data`, [`Webhooks::check_parsed`]).
pub use serde_json;
/// The `time` of every timestamp ([`time::OffsetDateTime`]).
pub use time;

/// Test (the sandbox) or live.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// The sandbox: simulated customers, no real money.
    Test,
    /// Real wallets and money.
    Live,
}

impl Client {
    /// Charges: payment prompts pushed to customers' phones.
    pub fn charges(&self) -> Charges<'_> {
        Charges { client: self }
    }

    /// Payouts: money paid to wallets.
    pub fn payouts(&self) -> Payouts<'_> {
        Payouts { client: self }
    }

    /// Reversals of completed charges and payouts.
    pub fn reversals(&self) -> Reversals<'_> {
        Reversals { client: self }
    }

    /// The merchant's accounts and balances.
    pub fn accounts(&self) -> Accounts<'_> {
        Accounts { client: self }
    }

    /// The ledger as the merchant sees it: transactions, the export, daily reconciliation.
    pub fn transactions(&self) -> Transactions<'_> {
        Transactions { client: self }
    }

    /// Webhook endpoints, and the events they are sent.
    pub fn webhooks(&self) -> WebhookEndpoints<'_> {
        WebhookEndpoints { client: self }
    }
}
