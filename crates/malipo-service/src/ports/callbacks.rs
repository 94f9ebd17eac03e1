//! Callbacks: where a request asked for its outcome to be sent (the GSMA door's
//! `X-Callback-URL`), and the organisation's callback secrets.

use malipo_core::{Mode, OrgId, Timestamp};

use crate::error::StoreError;

/// Where a callback stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CallbackState {
    /// The object is not final yet.
    Waiting,
    /// Due at `next_attempt_at` (or leased until then).
    Pending,
    /// A receiver answered 2xx.
    Succeeded,
    /// The schedule ran out, or the credential that asked is gone.
    Failed,
}

impl CallbackState {
    /// The stored text.
    pub fn as_str(self) -> &'static str {
        match self {
            CallbackState::Waiting => "waiting",
            CallbackState::Pending => "pending",
            CallbackState::Succeeded => "succeeded",
            CallbackState::Failed => "failed",
        }
    }

    /// The state of its stored text.
    pub fn parse(text: &str) -> Option<Self> {
        Some(match text {
            "waiting" => CallbackState::Waiting,
            "pending" => CallbackState::Pending,
            "succeeded" => CallbackState::Succeeded,
            "failed" => CallbackState::Failed,
            _ => return None,
        })
    }
}

/// One request's callback: its outcome, sent to `url` once the object it made is final.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Callback {
    /// `cb_…`.
    pub id: String,
    /// The organisation that asked.
    pub org_id: OrgId,
    /// Its mode.
    pub mode: Mode,
    /// The credential that asked: the outcome is read as it would read it.
    pub client_id: String,
    /// The object the request made (`ch_…`, `po_…`, `bp_…`, `rv_…`, `tx_…`).
    pub object_id: String,
    /// Where to send it.
    pub url: String,
    /// The client's own id of the request (the GSMA door's `X-CorrelationID`), sent back with it.
    pub correlation_id: Option<String>,
    /// Where it stands.
    pub state: CallbackState,
    /// Attempts made.
    pub attempts: u32,
    /// When due (`Some` exactly while pending).
    pub next_attempt_at: Option<Timestamp>,
    /// The last attempt's HTTP status, if it had an answer.
    pub last_status: Option<u16>,
    /// The last failed attempt's error.
    pub last_error: Option<String>,
    /// When made.
    pub created_at: Timestamp,
    /// When last changed.
    pub updated_at: Timestamp,
}

/// An organisation's callback signing secret in a mode, sealed, with the previous one while it
/// still verifies after a rotation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallbackSecret {
    /// The organisation.
    pub org_id: OrgId,
    /// The mode.
    pub mode: Mode,
    /// The current secret, sealed.
    pub secret: Vec<u8>,
    /// The previous secret, sealed, and until when it is still sent.
    pub previous: Option<(Vec<u8>, Timestamp)>,
    /// When first made.
    pub created_at: Timestamp,
    /// When last rotated.
    pub updated_at: Timestamp,
}

/// Callbacks and callback secrets: part of the one transaction handle [`super::Tx`].
pub trait CallbackRepo {
    /// Inserts a callback.
    ///
    /// # Errors
    /// [`StoreError::Duplicate`] if the id exists.
    fn insert_callback(&mut self, callback: &Callback) -> Result<(), StoreError>;
    /// Makes the waiting callbacks of an object due at `now` (the object is final). One guarded
    /// update: a callback is made due once. A transaction that queues its writes
    /// ([`super::WriteQueue`]) may hold these back and make several objects' due by one update,
    /// before any other call of this trait, a savepoint and the commit.
    ///
    /// # Errors
    /// Storage failures.
    fn callbacks_due(&mut self, object_id: &str, now: Timestamp) -> Result<(), StoreError>;
    /// Claims up to `limit` pending callbacks due by `now`, oldest due first, by setting their
    /// `next_attempt_at` to `lease_until`, and returns them as claimed. Concurrent callers never
    /// claim the same one.
    ///
    /// # Errors
    /// Storage failures.
    fn claim_due_callbacks(&mut self, now: Timestamp, lease_until: Timestamp, limit: usize) -> Result<Vec<Callback>, StoreError>;
    /// The callbacks of `ids` that exist, locked for update until the transaction ends, in id order.
    ///
    /// # Errors
    /// Storage failures.
    fn lock_callbacks(&mut self, ids: &[String]) -> Result<Vec<Callback>, StoreError>;
    /// Overwrites a callback's mutable fields (state, attempts, next_attempt_at, last_status,
    /// last_error, updated_at).
    ///
    /// # Errors
    /// Storage failures; a missing callback.
    fn update_callback(&mut self, callback: &Callback) -> Result<(), StoreError>;
    /// The callbacks of an object of an organisation in a mode, oldest first.
    ///
    /// # Errors
    /// Storage failures.
    fn callbacks_of_object(&mut self, org_id: &OrgId, mode: Mode, object_id: &str) -> Result<Vec<Callback>, StoreError>;
    /// An organisation's callback secret in a mode.
    ///
    /// # Errors
    /// Storage failures.
    fn callback_secret(&mut self, org_id: &OrgId, mode: Mode) -> Result<Option<CallbackSecret>, StoreError>;
    /// Inserts an organisation's first callback secret in a mode.
    ///
    /// # Errors
    /// [`StoreError::Duplicate`] if it has one.
    fn insert_callback_secret(&mut self, secret: &CallbackSecret) -> Result<(), StoreError>;
    /// Overwrites an organisation's callback secret in a mode (secret, previous, updated_at).
    ///
    /// # Errors
    /// Storage failures; a missing secret.
    fn update_callback_secret(&mut self, secret: &CallbackSecret) -> Result<(), StoreError>;
    /// Deletes callbacks made before `before` that are no longer waiting or pending; returns how many.
    ///
    /// # Errors
    /// Storage failures.
    fn purge_callbacks(&mut self, before: Timestamp) -> Result<u64, StoreError>;
}
