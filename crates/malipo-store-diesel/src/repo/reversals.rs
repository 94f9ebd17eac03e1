//! [`ReversalRepo`] on the transaction's connection: reversals, and the journal a transaction id
//! names.

use std::str::FromStr;

use diesel::prelude::*;
use malipo_core::{Mode, OrgId, ReversalId, TransactionId};
use malipo_ledger::JournalKind;
use malipo_payouts::Reversal;
use malipo_service::{ReversalRepo, StoreError};

use crate::error::db_error;
use crate::rows::ReversalRow;
use crate::schema::{journals, reversals};
use crate::tx::{inserted, limit_i64, per_backend, DieselTx};
use crate::DbConnection;

impl ReversalRepo for DieselTx<'_> {
    fn insert_reversal(&mut self, reversal: &Reversal) -> Result<(), StoreError> {
        self.flush_journals()?;
        let row = ReversalRow::from(reversal);
        inserted(per_backend!(&mut *self.conn, |c| diesel::insert_into(reversals::table).values(&row).on_conflict_do_nothing().execute(c)))
    }

    fn reversal(&mut self, org_id: &OrgId, mode: Mode, id: &ReversalId) -> Result<Option<Reversal>, StoreError> {
        self.flush_journals()?;
        reversals::table
            .filter(reversals::id.eq(id.as_str()))
            .filter(reversals::org_id.eq(org_id.as_str()))
            .filter(reversals::mode.eq(mode.as_str()))
            .select(ReversalRow::as_select())
            .first(self.conn)
            .optional()
            .map_err(db_error)?
            .map(Reversal::try_from)
            .transpose()
    }

    fn list_reversals(
        &mut self,
        org_id: &OrgId,
        mode: Mode,
        before: Option<&ReversalId>,
        limit: usize,
    ) -> Result<Vec<Reversal>, StoreError> {
        self.flush_journals()?;
        let mut query =
            reversals::table.filter(reversals::org_id.eq(org_id.as_str())).filter(reversals::mode.eq(mode.as_str())).into_boxed();
        if let Some(before) = before {
            query = query.filter(reversals::id.lt(before.as_str()));
        }
        query
            .order(reversals::id.desc())
            .limit(limit_i64(limit))
            .select(ReversalRow::as_select())
            .load(self.conn)
            .map_err(db_error)?
            .into_iter()
            .map(Reversal::try_from)
            .collect()
    }

    fn journal_source(&mut self, mode: Mode, id: &TransactionId) -> Result<Option<(JournalKind, String)>, StoreError> {
        self.flush_journals()?;
        let found: Option<(String, String)> = journals::table
            .filter(journals::id.eq(id.as_str()))
            .filter(journals::mode.eq(mode.as_str()))
            .select((journals::kind, journals::source_ref))
            .first(self.conn)
            .optional()
            .map_err(db_error)?;
        found
            .map(|(kind, source)| {
                let kind =
                    JournalKind::from_str(&kind).map_err(|_| StoreError::Other(format!("stored journal kind `{kind}` does not parse")))?;
                Ok((kind, source))
            })
            .transpose()
    }
}
