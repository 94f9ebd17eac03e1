//! [`ReversalRepo`] over the in-memory tables.

use malipo_core::{Mode, OrgId, ReversalId, TransactionId};
use malipo_ledger::JournalKind;
use malipo_payouts::{Reversal, ReversalOriginal};
use malipo_service::{ReversalRepo, StoreError};

use crate::tx::{check, foreign_key, MemoryTx};

impl ReversalRepo for MemoryTx<'_> {
    fn insert_reversal(&mut self, reversal: &Reversal) -> Result<(), StoreError> {
        self.flush_journals()?;
        let s = self.w()?;
        if s.reversals.contains_key(&reversal.id) || s.reversal_transactions.contains(&reversal.transaction_id) {
            return Err(StoreError::Duplicate);
        }
        foreign_key(s.orgs.contains_key(&reversal.org_id), "the reversal's organisation")?;
        match &reversal.original {
            ReversalOriginal::Charge(c) => foreign_key(s.charges.contains_key(c), "the reversed charge")?,
            ReversalOriginal::Payout(p) => foreign_key(s.payouts.contains_key(p), "the reversed payout")?,
        }
        check(reversal.amount.get() > 0, "reversals_amount_check")?;
        check(reversal.fee_reversed.get() >= 0, "reversals_fee_reversed_check")?;
        s.reversal_transactions.insert(reversal.transaction_id.clone());
        s.reversals.insert(reversal.id.clone(), reversal.clone());
        Ok(())
    }

    fn reversal(&mut self, org_id: &OrgId, mode: Mode, id: &ReversalId) -> Result<Option<Reversal>, StoreError> {
        self.flush_journals()?;
        Ok(self.r().reversals.get(id).filter(|r| &r.org_id == org_id && r.mode == mode).cloned())
    }

    fn list_reversals(
        &mut self,
        org_id: &OrgId,
        mode: Mode,
        before: Option<&ReversalId>,
        limit: usize,
    ) -> Result<Vec<Reversal>, StoreError> {
        self.flush_journals()?;
        let s = self.r();
        let below = match before {
            Some(b) => s.reversals.range::<ReversalId, _>(..b),
            None => s.reversals.range::<ReversalId, _>(..),
        };
        Ok(below.rev().map(|(_, r)| r).filter(|r| &r.org_id == org_id && r.mode == mode).take(limit).cloned().collect())
    }

    fn journal_source(&mut self, mode: Mode, id: &TransactionId) -> Result<Option<(JournalKind, String)>, StoreError> {
        self.flush_journals()?;
        Ok(self.r().journals.iter().map(|cj| &cj.journal).find(|j| &j.id == id && j.mode == mode).map(|j| (j.kind, j.source_ref.clone())))
    }
}
