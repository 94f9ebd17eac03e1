//! Reversals, and finding the original a transaction id names.

use malipo_core::{Mode, OrgId, ReversalId, TransactionId};
use malipo_ledger::JournalKind;
use malipo_payouts::Reversal;

use crate::error::StoreError;

/// Reversals: part of the one transaction handle [`super::Tx`].
pub trait ReversalRepo {
    /// Inserts a reversal.
    ///
    /// # Errors
    /// [`StoreError::Duplicate`] if the id or the `transaction_id` exists;
    /// [`StoreError::Other`] if the reversed charge or payout does not exist.
    fn insert_reversal(&mut self, reversal: &Reversal) -> Result<(), StoreError>;
    /// A reversal of an organisation in a mode.
    ///
    /// # Errors
    /// Storage failures.
    fn reversal(&mut self, org_id: &OrgId, mode: Mode, id: &ReversalId) -> Result<Option<Reversal>, StoreError>;
    /// An organisation's reversals in a mode, newest first, with ids strictly below `before`
    /// when given, at most `limit`.
    ///
    /// # Errors
    /// Storage failures.
    fn list_reversals(
        &mut self,
        org_id: &OrgId,
        mode: Mode,
        before: Option<&ReversalId>,
        limit: usize,
    ) -> Result<Vec<Reversal>, StoreError>;
    /// The kind and source object (`ch_…`, `po_…`, …) of a journal of this mode.
    ///
    /// # Errors
    /// Storage failures.
    fn journal_source(&mut self, mode: Mode, id: &TransactionId) -> Result<Option<(JournalKind, String)>, StoreError>;
}
