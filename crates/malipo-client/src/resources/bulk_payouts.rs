//! Bulk payouts with maker/checker (contract section 6): a maker (a key pair with scope
//! `bulk:create`) uploads a batch of payouts as JSON or as a CSV file; a checker (another key
//! pair, scope `bulk:approve`) approves it, and every item is paid as a payout, or rejects it.

use std::time::{Duration, Instant};

use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use tokio::io::{AsyncRead, AsyncReadExt};

use crate::client::{new_key, Call};
use crate::operations as ops;
use crate::{Client, Error, List, Mode, Payout, PayoutState};

/// How often [`BulkPayouts::wait`] reads the batch.
const POLL: Duration = Duration::from_millis(100);

/// A bulk payout's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum BulkPayoutState {
    /// Uploaded; nothing reserved or paid until a checker approves or rejects it.
    AwaitingApproval,
    /// Approved: the total and fees reserved, the items being paid.
    Processing,
    /// Every item completed or failed (final).
    Completed,
    /// Rejected by a checker: no item paid (final).
    Rejected,
}

impl BulkPayoutState {
    /// The state as the API writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            BulkPayoutState::AwaitingApproval => "awaiting_approval",
            BulkPayoutState::Processing => "processing",
            BulkPayoutState::Completed => "completed",
            BulkPayoutState::Rejected => "rejected",
        }
    }

    /// Whether the batch will not change again (`completed` or `rejected`).
    pub fn is_final(self) -> bool {
        matches!(self, BulkPayoutState::Completed | BulkPayoutState::Rejected)
    }
}

/// How many of a batch's items are in each state; the three always add up to `item_count`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Deserialize)]
#[non_exhaustive]
pub struct BulkPayoutCounts {
    /// Not paid or failed yet (every item before approval).
    pub pending: u32,
    /// Paid.
    pub completed: u32,
    /// Failed, or never paid because the batch was rejected.
    pub failed: u32,
}

/// A bulk payout batch.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[non_exhaustive]
pub struct BulkPayout {
    /// Its id, `bp_…`.
    pub batch_id: String,
    /// Where it is.
    pub state: BulkPayoutState,
    /// Test or live.
    pub mode: Mode,
    /// The batch's reference.
    pub reference: String,
    /// The payout account's currency (ISO 4217).
    pub currency: String,
    /// How many items it has (fixed at creation).
    pub item_count: u32,
    /// The sum of the items' amounts (fixed at creation).
    #[serde(with = "crate::amount")]
    pub total_amount: Decimal,
    /// The sum of the items' payout fees (fixed at creation); approval reserves
    /// `total_amount + total_fees`.
    #[serde(with = "crate::amount")]
    pub total_fees: Decimal,
    /// The maker: a client id, or the `usr_` id of a person who made it in the console.
    pub created_by: String,
    /// The checker who approved it.
    pub approved_by: Option<String>,
    /// The checker who rejected it.
    pub rejected_by: Option<String>,
    /// The checker's reason, once rejected.
    pub rejection_reason: Option<String>,
    /// Its items by state.
    pub counts: BulkPayoutCounts,
    /// RFC 3339, UTC.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    /// When it was approved (RFC 3339, UTC).
    #[serde(default, with = "time::serde::rfc3339::option")]
    pub approved_at: Option<OffsetDateTime>,
    /// When its last item settled, or when it was rejected (RFC 3339, UTC).
    #[serde(default, with = "time::serde::rfc3339::option")]
    pub completed_at: Option<OffsetDateTime>,
}

/// One payout of a batch to create.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct BulkPayoutItem {
    /// The payee's number, international digits without `+`.
    pub payee_msisdn: String,
    /// The amount in major units (sent as a JSON number with its exact text).
    #[serde(with = "crate::amount")]
    pub amount: Decimal,
    /// The item's reference (1 to 64 characters).
    pub reference: String,
    /// The text the payee sees (at most 100 characters).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub narration: Option<String>,
}

impl BulkPayoutItem {
    /// A payout of `amount` to `payee_msisdn` under `reference`.
    pub fn new(payee_msisdn: impl Into<String>, amount: Decimal, reference: impl Into<String>) -> Self {
        BulkPayoutItem { payee_msisdn: payee_msisdn.into(), amount, reference: reference.into(), narration: None }
    }

    /// With the text the payee sees.
    pub fn narration(mut self, text: impl Into<String>) -> Self {
        self.narration = Some(text.into());
        self
    }
}

/// A batch to create as JSON (`POST /bulk-payouts`): 1 to 10,000 items.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct NewBulkPayout {
    /// The batch's reference (1 to 64 characters).
    pub reference: String,
    /// Its payouts, in the order they are listed and paid.
    pub items: Vec<BulkPayoutItem>,
}

impl NewBulkPayout {
    /// An empty batch under `reference`: add its items with [`NewBulkPayout::item`].
    pub fn new(reference: impl Into<String>) -> Self {
        NewBulkPayout { reference: reference.into(), items: Vec::new() }
    }

    /// With one more item, after the others.
    pub fn item(mut self, item: BulkPayoutItem) -> Self {
        self.items.push(item);
        self
    }

    /// With more items, after the others.
    pub fn items(mut self, items: impl IntoIterator<Item = BulkPayoutItem>) -> Self {
        self.items.extend(items);
        self
    }
}

#[derive(Serialize)]
struct RejectBody<'a> {
    reason: &'a str,
}

/// The bulk payouts of the client's organisation: `client.bulk_payouts()`.
#[derive(Debug, Clone, Copy)]
pub struct BulkPayouts<'a> {
    pub(crate) client: &'a Client,
}

impl BulkPayouts<'_> {
    /// Uploads a batch as JSON (`createBulkPayout`, the maker: scope `bulk:create`) under a new
    /// idempotency key. Every item is checked first: one bad item refuses the whole batch, with
    /// one field error per problem named `items[N].field` (N from 0). The batch is answered
    /// `awaiting_approval`; nothing is reserved or paid until a checker approves it.
    ///
    /// # Errors
    /// As every call ([`Error`]); `validation_failed` (see [`crate::ApiError::errors`]),
    /// `currency_mismatch`.
    pub async fn create(&self, batch: &NewBulkPayout) -> Result<BulkPayout, Error> {
        self.create_with_key(batch, &new_key()).await
    }

    /// [`BulkPayouts::create`] under the caller's idempotency key.
    ///
    /// # Errors
    /// As [`BulkPayouts::create`]; `idempotency_key_reused`.
    pub async fn create_with_key(&self, batch: &NewBulkPayout, key: &str) -> Result<BulkPayout, Error> {
        self.client.json(&Call::json_body(ops::CREATE_BULK_PAYOUT, &[], Some(key), batch)?).await
    }

    /// Uploads a batch as a CSV file (`createBulkPayout` with `text/csv`, the maker) under a new
    /// idempotency key: RFC 4180, UTF-8, at most 5 MiB, with the header
    /// `payee_msisdn,amount,reference,narration`; `reference` is the batch's. A bad row refuses
    /// the whole file, with a field error named `items[N]` or `items[N].field` (N the 0-based
    /// data row).
    ///
    /// The file is read from `csv` to its end, into memory, once, before anything is sent:
    /// every retry of the upload must send the same bytes under the same idempotency key, which
    /// a reader consumed by the first try could not give again.
    ///
    /// # Errors
    /// [`Error::Io`] when `csv` cannot be read; otherwise as [`BulkPayouts::create`], and
    /// `payload_too_large` above 5 MiB.
    pub async fn upload_csv(&self, reference: &str, csv: impl AsyncRead + Unpin) -> Result<BulkPayout, Error> {
        self.upload_csv_with_key(reference, csv, &new_key()).await
    }

    /// [`BulkPayouts::upload_csv`] under the caller's idempotency key (the key covers the
    /// reference and the file's bytes).
    ///
    /// # Errors
    /// As [`BulkPayouts::upload_csv`]; `idempotency_key_reused`.
    pub async fn upload_csv_with_key(&self, reference: &str, mut csv: impl AsyncRead + Unpin, key: &str) -> Result<BulkPayout, Error> {
        let mut bytes = Vec::new();
        csv.read_to_end(&mut bytes).await.map_err(|e| Error::io(e).with_key(Some(key)))?;
        let call = Call::keyed(ops::CREATE_BULK_PAYOUT, &[], key).body("text/csv", bytes).query("reference", Some(reference));
        self.client.json(&call).await
    }

    /// Approves a batch (`approveBulkPayout`, the checker: scope `bulk:approve`, a key pair
    /// other than the maker's, and not one acting for the person who made it) under a new
    /// idempotency key: `total_amount + total_fees` is reserved on the payout account at once
    /// and the batch answered `processing`; its items are then paid one by one (see
    /// [`BulkPayouts::wait`]).
    ///
    /// # Errors
    /// As every call ([`Error`]); `maker_checker_violation`, `insufficient_funds`,
    /// `invalid_state` (approved already, rejected or completed), `not_found`.
    pub async fn approve(&self, batch_id: &str) -> Result<BulkPayout, Error> {
        self.approve_with_key(batch_id, &new_key()).await
    }

    /// [`BulkPayouts::approve`] under the caller's idempotency key.
    ///
    /// # Errors
    /// As [`BulkPayouts::approve`]; `idempotency_key_reused`.
    pub async fn approve_with_key(&self, batch_id: &str, key: &str) -> Result<BulkPayout, Error> {
        self.client.json(&Call::keyed(ops::APPROVE_BULK_PAYOUT, &[batch_id], key)).await
    }

    /// Rejects a batch for `reason` (`rejectBulkPayout`, the checker, as for approval) under a
    /// new idempotency key: no item is paid, and every item fails with `bulk_payout_rejected`.
    ///
    /// # Errors
    /// As every call ([`Error`]); `maker_checker_violation`, `invalid_state`, `not_found`,
    /// `validation_failed` for an empty reason or one over 255 characters.
    pub async fn reject(&self, batch_id: &str, reason: &str) -> Result<BulkPayout, Error> {
        self.reject_with_key(batch_id, reason, &new_key()).await
    }

    /// [`BulkPayouts::reject`] under the caller's idempotency key.
    ///
    /// # Errors
    /// As [`BulkPayouts::reject`]; `idempotency_key_reused`.
    pub async fn reject_with_key(&self, batch_id: &str, reason: &str, key: &str) -> Result<BulkPayout, Error> {
        self.client.json(&Call::json_body(ops::REJECT_BULK_PAYOUT, &[batch_id], Some(key), &RejectBody { reason })?).await
    }

    /// One batch with its counts (`getBulkPayout`; scope `bulk:create`, `bulk:approve` or
    /// `payouts`).
    ///
    /// # Errors
    /// As every call; `not_found`.
    pub async fn get(&self, batch_id: &str) -> Result<BulkPayout, Error> {
        self.client.json(&Call::to(ops::GET_BULK_PAYOUT, &[batch_id])).await
    }

    /// The batches, newest first (`listBulkPayouts`; the API takes no filter).
    pub fn list(&self) -> List<BulkPayout> {
        List::new(self.client, Call::to(ops::LIST_BULK_PAYOUTS, &[]))
    }

    /// A batch's items, payouts with `bulk_payout_id` set, in the batch's order
    /// (`listBulkPayoutItems`), only those in `state` when given.
    pub fn items(&self, batch_id: &str, state: Option<PayoutState>) -> List<Payout> {
        let call = Call::to(ops::LIST_BULK_PAYOUT_ITEMS, &[batch_id]).query("state", state.map(PayoutState::as_str));
        List::new(self.client, call)
    }

    /// Reads the batch every 100 ms until it is final (`completed` or `rejected`) or `deadline`
    /// has passed since the call, and answers the last state read (so a batch still
    /// `processing` when the time is up is answered as it was then, not as an error).
    ///
    /// # Errors
    /// As [`BulkPayouts::get`], when a read fails (after the client's retries).
    pub async fn wait(&self, batch_id: &str, deadline: Duration) -> Result<BulkPayout, Error> {
        let started = Instant::now();
        loop {
            let batch = self.get(batch_id).await?;
            if batch.state.is_final() || started.elapsed() + POLL > deadline {
                return Ok(batch);
            }
            tokio::time::sleep(POLL).await;
        }
    }
}

impl Client {
    /// Bulk payouts: batches uploaded by a maker and approved or rejected by a checker.
    pub fn bulk_payouts(&self) -> BulkPayouts<'_> {
        BulkPayouts { client: self }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// A reader that fails.
    struct Broken;

    impl AsyncRead for Broken {
        fn poll_read(
            self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
            _: &mut tokio::io::ReadBuf<'_>,
        ) -> std::task::Poll<std::io::Result<()>> {
            std::task::Poll::Ready(Err(std::io::Error::other("the disk is gone")))
        }
    }

    #[tokio::test]
    async fn a_csv_that_cannot_be_read_is_an_io_error_and_nothing_is_sent() {
        // Port 9 (discard) on loopback: were anything sent, it would be a transport error.
        let client = Client::new("http://127.0.0.1:9", "ck_test_x", "cs_test_x").unwrap();
        let failed = client.bulk_payouts().upload_csv("R", Broken).await.unwrap_err();
        assert!(matches!(&failed, Error::Io { source, .. } if source.to_string() == "the disk is gone"), "{failed:?}");
    }

    #[test]
    fn a_batch_is_sent_with_exact_amounts_and_without_absent_narrations() {
        let batch = NewBulkPayout::new("PAYROLL-11")
            .item(BulkPayoutItem::new("254712345678", Decimal::new(150_010, 2), "S-1").narration("November"))
            .item(BulkPayoutItem::new("254712345679", Decimal::new(1, 1), "S-2"));
        assert_eq!(
            serde_json::to_string(&batch).unwrap(),
            concat!(
                r#"{"reference":"PAYROLL-11","items":[{"payee_msisdn":"254712345678","amount":1500.10,"reference":"S-1","#,
                r#""narration":"November"},{"payee_msisdn":"254712345679","amount":0.1,"reference":"S-2"}]}"#
            )
        );
    }

    #[test]
    fn a_batch_reads_every_member_the_server_writes() {
        let json = concat!(
            r#"{"batch_id":"bp_batch1","state":"awaiting_approval","mode":"test","reference":"PAYROLL-2025-11","currency":"KES","#,
            r#""item_count":3,"total_amount":4500.00,"total_fees":45.00,"created_by":"ck_test_maker","approved_by":null,"#,
            r#""rejected_by":null,"rejection_reason":null,"counts":{"pending":3,"completed":0,"failed":0},"#,
            r#""created_at":"2025-11-22T10:00:00Z","approved_at":null,"completed_at":null}"#
        );
        let b: BulkPayout = serde_json::from_str(json).unwrap();
        assert_eq!(
            (b.state, b.item_count, b.total_amount, b.total_fees),
            (BulkPayoutState::AwaitingApproval, 3, Decimal::new(450_000, 2), Decimal::new(4_500, 2))
        );
        assert_eq!(b.counts, BulkPayoutCounts { pending: 3, completed: 0, failed: 0 });
        assert!(!b.state.is_final() && BulkPayoutState::Rejected.is_final());
    }
}
