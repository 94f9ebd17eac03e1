//! Merchant payment requests.

use malipo_core::{Mode, Msisdn, OrgId, PaymentRequestId, Timestamp};
use malipo_requests::{PayCode, PaymentRequest, RequestFilter};

use crate::error::StoreError;

/// Payment requests: part of the one transaction handle [`super::Tx`].
pub trait PaymentRequestRepo {
    /// Inserts a request. The transaction stays usable after a refusal.
    ///
    /// # Errors
    /// [`StoreError::Duplicate`] if the id exists, or if the request is open and another open
    /// request of its mode has its pay code (the caller draws another code); [`StoreError::Other`]
    /// for a request the database's constraints refuse (unknown organisation or account, fields
    /// that do not fit the state, amounts out of range).
    fn insert_payment_request(&mut self, request: &PaymentRequest) -> Result<(), StoreError>;
    /// A request of an organisation in a mode (another organisation's or mode's is `None`).
    ///
    /// # Errors
    /// Storage failures.
    fn payment_request(&mut self, org_id: &OrgId, mode: Mode, id: &PaymentRequestId) -> Result<Option<PaymentRequest>, StoreError>;
    /// A request by id, locked for update until the transaction ends.
    ///
    /// # Errors
    /// Storage failures.
    fn lock_payment_request(&mut self, id: &PaymentRequestId) -> Result<Option<PaymentRequest>, StoreError>;
    /// The request a customer means by a pay code in a mode: the open one with that code; when
    /// none is open, the one with that code changed last (so the customer can be told it was
    /// paid, cancelled or expired); `None` when the code was never used. Not locked.
    ///
    /// # Errors
    /// Storage failures.
    fn payment_request_by_code(&mut self, mode: Mode, code: &PayCode) -> Result<Option<PaymentRequest>, StoreError>;
    /// Moves an open request on: overwrites state, paid_by_msisdn, transaction_id, paid_at and
    /// updated_at, only while the stored request is still `open` (one guarded statement).
    ///
    /// # Errors
    /// [`StoreError::Other`] when no open request has the id (it does not exist, or it has
    /// already left `open`), or the database's constraints refuse the new state;
    /// [`StoreError::Duplicate`] for a `transaction_id` another request has.
    fn update_payment_request(&mut self, request: &PaymentRequest) -> Result<(), StoreError>;
    /// An organisation's requests in a mode, newest first (by id, which is time-ordered), with
    /// ids strictly below `before` when given, at most `limit`.
    ///
    /// # Errors
    /// Storage failures.
    fn list_payment_requests(
        &mut self,
        org_id: &OrgId,
        mode: Mode,
        filter: &RequestFilter,
        before: Option<&PaymentRequestId>,
        limit: usize,
    ) -> Result<Vec<PaymentRequest>, StoreError>;
    /// The open requests addressed to a number in a mode, oldest first.
    ///
    /// # Errors
    /// Storage failures.
    fn open_payment_requests_for_payer(&mut self, mode: Mode, payer: &Msisdn) -> Result<Vec<PaymentRequest>, StoreError>;
    /// Locks up to `limit` open requests whose `expires_at <= now`, soonest expiry first (ties
    /// by id), until the transaction ends. Concurrent callers never get the same request
    /// (PostgreSQL: `FOR UPDATE SKIP LOCKED`; SQLite's writers are serialised).
    ///
    /// # Errors
    /// Storage failures.
    fn lock_due_payment_requests(&mut self, now: Timestamp, limit: usize) -> Result<Vec<PaymentRequest>, StoreError>;
}
