//! USSD sessions.

use malipo_core::{Mode, Msisdn, OrgId, Timestamp};

use crate::error::StoreError;

/// A USSD session as stored between hops (keyed by the gateway organisation, mode and the
/// gateway's `sessionId`). It holds no PIN: the menu state never contains one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UssdSession {
    /// The gateway organisation.
    pub org_id: OrgId,
    /// The gateway credential's mode.
    pub mode: Mode,
    /// The gateway's `sessionId`.
    pub session_id: String,
    /// The caller.
    pub msisdn: Msisdn,
    /// The menu state, as JSON.
    pub state: String,
    /// How many input hops have been handled.
    pub hops: u32,
    /// The last answer, replayed when the gateway repeats a request; empty while a request of
    /// the session is being handled.
    pub last_screen: String,
    /// When the session began.
    pub created_at: Timestamp,
    /// When it last moved (sessions expire [`SESSION_TIMEOUT_SECONDS`] after this).
    pub updated_at: Timestamp,
}

/// USSD sessions: part of the one transaction handle [`super::Tx`].
pub trait UssdRepo {
    /// A USSD session of a gateway organisation, locked for update until the transaction ends.
    ///
    /// # Errors
    /// Storage failures.
    fn ussd_session(&mut self, org_id: &OrgId, mode: Mode, session_id: &str) -> Result<Option<UssdSession>, StoreError>;
    /// A USSD session as last committed, without locking it (for [`UssdRepo::swap_ussd_session`]
    /// outside a transaction).
    ///
    /// # Errors
    /// Storage failures.
    fn peek_ussd_session(&mut self, org_id: &OrgId, mode: Mode, session_id: &str) -> Result<Option<UssdSession>, StoreError>;
    /// Writes `next` over the session `seen` (same key) only if the stored one is still `seen`:
    /// the same hops, update time and last screen; with `seen` `None`, inserts `next` only if
    /// its key is free. Answers whether it wrote: a compare-and-swap, one statement.
    ///
    /// # Errors
    /// Storage failures.
    fn swap_ussd_session(&mut self, seen: Option<&UssdSession>, next: &UssdSession) -> Result<bool, StoreError>;
    /// Inserts or overwrites a USSD session.
    ///
    /// # Errors
    /// Storage failures.
    fn put_ussd_session(&mut self, session: &UssdSession) -> Result<(), StoreError>;
    /// Deletes sessions last updated before `before`; returns how many.
    ///
    /// # Errors
    /// Storage failures.
    fn purge_ussd_sessions(&mut self, before: Timestamp) -> Result<u64, StoreError>;
}
