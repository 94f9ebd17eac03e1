//! [`PayoutRepo`] and [`BulkRepo`] on the transaction's connection: payouts (single ones and the
//! items of batches) and bulk payout batches.

use diesel::prelude::*;
use malipo_core::{BulkPayoutId, Mode, OrgId, PayoutRef, Timestamp};
use malipo_payouts::{BulkPayout, Payout, PayoutFailure, PayoutFilter, PayoutState};
use malipo_service::{BulkRepo, PayoutRepo, StoreError};

use crate::claim::DueRows;
use crate::error::{db_error, Fail};
use crate::rows::{BulkPayoutRow, PayoutRow, PAYOUT_COLUMNS};
use crate::schema::{bulk_payouts, payouts};
use crate::tx::{inserted, limit_i64, locked_row, per_backend, DieselTx};
use crate::DbConnection;

/// Pending payouts come due for the payout worker (an item of a batch once it is approved).
const DUE_PAYOUTS: DueRows = DueRows { table: "payouts", id: "id", due: "next_action_at", filter: None };

/// The most bind parameters one statement may carry: PostgreSQL's protocol counts them in 16
/// bits; SQLite's default `SQLITE_MAX_VARIABLE_NUMBER` (since 3.32).
const PG_MAX_BINDS: usize = 65_535;
const SQLITE_MAX_BINDS: usize = 32_766;

/// A count of changed rows as the port's `u64`.
fn count(rows: usize) -> u64 {
    u64::try_from(rows).unwrap_or(u64::MAX)
}

/// Inserts payout rows in as few multi-row statements as the backend's bind limit allows, and
/// fails with [`StoreError::Duplicate`] when a unique key kept any row out (run in a savepoint,
/// so that the rows of earlier statements are undone with it).
fn insert_payout_rows(conn: &mut DbConnection, rows: &[PayoutRow]) -> Result<(), Fail> {
    let per_statement = match conn {
        DbConnection::Pg(_) => PG_MAX_BINDS / PAYOUT_COLUMNS,
        DbConnection::Sqlite(_) => SQLITE_MAX_BINDS / PAYOUT_COLUMNS,
    };
    let mut stored = 0;
    for chunk in rows.chunks(per_statement) {
        stored += per_backend!(&mut *conn, |c| diesel::insert_into(payouts::table).values(chunk).on_conflict_do_nothing().execute(c))?;
    }
    if stored != rows.len() {
        return Err(Fail(StoreError::Duplicate));
    }
    Ok(())
}

impl PayoutRepo for DieselTx<'_> {
    fn insert_payouts(&mut self, payouts: &[Payout]) -> Result<(), StoreError> {
        if payouts.is_empty() {
            return Ok(());
        }
        let rows = payouts.iter().map(PayoutRow::try_from).collect::<Result<Vec<_>, _>>()?;
        self.conn.transaction::<_, Fail, _>(|conn| insert_payout_rows(conn, &rows)).map_err(StoreError::from)
    }

    fn payout(&mut self, org_id: &OrgId, mode: Mode, id: &PayoutRef) -> Result<Option<Payout>, StoreError> {
        payouts::table
            .filter(payouts::id.eq(id.as_str()))
            .filter(payouts::org_id.eq(org_id.as_str()))
            .filter(payouts::mode.eq(mode.as_str()))
            .select(PayoutRow::as_select())
            .first(self.conn)
            .optional()
            .map_err(db_error)?
            .map(Payout::try_from)
            .transpose()
    }

    fn lock_payout(&mut self, id: &PayoutRef) -> Result<Option<Payout>, StoreError> {
        locked_row!(&mut *self.conn, payouts::table.find(id.as_str()), PayoutRow => Payout)
    }

    fn update_payout(&mut self, payout: &Payout) -> Result<(), StoreError> {
        let row = PayoutRow::try_from(payout)?;
        let updated = diesel::update(payouts::table.find(row.id.as_str()))
            .set((
                payouts::state.eq(&row.state),
                payouts::failure_reason.eq(&row.failure_reason),
                payouts::transaction_id.eq(&row.transaction_id),
                payouts::amount_reversed.eq(row.amount_reversed),
                payouts::updated_at.eq(row.updated_at),
                payouts::completed_at.eq(row.completed_at),
                payouts::next_action_at.eq(row.next_action_at),
            ))
            .execute(self.conn)
            .map_err(db_error)?;
        if updated == 0 {
            return Err(StoreError::Other(format!("no payout {} to update", row.id)));
        }
        Ok(())
    }

    fn list_payouts(
        &mut self,
        org_id: &OrgId,
        mode: Mode,
        filter: &PayoutFilter,
        before: Option<&PayoutRef>,
        limit: usize,
    ) -> Result<Vec<Payout>, StoreError> {
        let mut query = payouts::table.filter(payouts::org_id.eq(org_id.as_str())).filter(payouts::mode.eq(mode.as_str())).into_boxed();
        if let Some(state) = filter.state {
            query = query.filter(payouts::state.eq(state.as_str()));
        }
        if let Some(from) = filter.from {
            query = query.filter(payouts::created_at.ge(from.as_micros()));
        }
        if let Some(to) = filter.to {
            query = query.filter(payouts::created_at.lt(to.as_micros()));
        }
        if let Some(batch) = &filter.bulk_payout_id {
            query = query.filter(payouts::bulk_payout_id.eq(batch.as_str()));
        }
        if let Some(before) = before {
            query = query.filter(payouts::id.lt(before.as_str()));
        }
        query
            .order(payouts::id.desc())
            .limit(limit_i64(limit))
            .select(PayoutRow::as_select())
            .load(self.conn)
            .map_err(db_error)?
            .into_iter()
            .map(Payout::try_from)
            .collect()
    }

    fn batch_items(
        &mut self,
        batch: &BulkPayoutId,
        state: Option<PayoutState>,
        after: Option<u32>,
        limit: usize,
    ) -> Result<Vec<Payout>, StoreError> {
        let mut query = payouts::table.filter(payouts::bulk_payout_id.eq(batch.as_str())).into_boxed();
        if let Some(state) = state {
            query = query.filter(payouts::state.eq(state.as_str()));
        }
        if let Some(after) = after {
            // No stored index is above what an INTEGER holds.
            let Ok(after) = i32::try_from(after) else {
                return Ok(Vec::new());
            };
            query = query.filter(payouts::bulk_index.gt(after));
        }
        query
            .order(payouts::bulk_index.asc())
            .limit(limit_i64(limit))
            .select(PayoutRow::as_select())
            .load(self.conn)
            .map_err(db_error)?
            .into_iter()
            .map(Payout::try_from)
            .collect()
    }

    fn claim_due_payouts(&mut self, now: Timestamp, lease_until: Timestamp, limit: usize) -> Result<Vec<PayoutRef>, StoreError> {
        Ok(DUE_PAYOUTS.claim(self.conn, now, lease_until, limit)?.into_iter().map(PayoutRef::from_trusted).collect())
    }

    fn oldest_due_payout(&mut self, now: Timestamp) -> Result<Option<Timestamp>, StoreError> {
        DUE_PAYOUTS.oldest(self.conn, now)
    }

    fn schedule_batch_items(&mut self, batch: &BulkPayoutId, at: Timestamp) -> Result<u64, StoreError> {
        diesel::update(
            payouts::table.filter(payouts::bulk_payout_id.eq(batch.as_str())).filter(payouts::state.eq(PayoutState::Pending.as_str())),
        )
        .set(payouts::next_action_at.eq(Some(at.as_micros())))
        .execute(self.conn)
        .map(count)
        .map_err(db_error)
    }

    fn fail_batch_items(&mut self, batch: &BulkPayoutId, reason: PayoutFailure, now: Timestamp) -> Result<u64, StoreError> {
        diesel::update(
            payouts::table.filter(payouts::bulk_payout_id.eq(batch.as_str())).filter(payouts::state.eq(PayoutState::Pending.as_str())),
        )
        .set((
            payouts::state.eq(PayoutState::Failed.as_str()),
            payouts::failure_reason.eq(Some(reason.as_str())),
            payouts::updated_at.eq(now.as_micros()),
            payouts::next_action_at.eq(None::<i64>),
        ))
        .execute(self.conn)
        .map(count)
        .map_err(db_error)
    }
}

impl BulkRepo for DieselTx<'_> {
    fn insert_batch(&mut self, batch: &BulkPayout) -> Result<(), StoreError> {
        let row = BulkPayoutRow::try_from(batch)?;
        inserted(per_backend!(&mut *self.conn, |c| diesel::insert_into(bulk_payouts::table)
            .values(&row)
            .on_conflict_do_nothing()
            .execute(c)))
    }

    fn batch(&mut self, org_id: &OrgId, mode: Mode, id: &BulkPayoutId) -> Result<Option<BulkPayout>, StoreError> {
        bulk_payouts::table
            .filter(bulk_payouts::id.eq(id.as_str()))
            .filter(bulk_payouts::org_id.eq(org_id.as_str()))
            .filter(bulk_payouts::mode.eq(mode.as_str()))
            .select(BulkPayoutRow::as_select())
            .first(self.conn)
            .optional()
            .map_err(db_error)?
            .map(BulkPayout::try_from)
            .transpose()
    }

    fn lock_batch(&mut self, id: &BulkPayoutId) -> Result<Option<BulkPayout>, StoreError> {
        locked_row!(&mut *self.conn, bulk_payouts::table.find(id.as_str()), BulkPayoutRow => BulkPayout)
    }

    fn update_batch(&mut self, batch: &BulkPayout) -> Result<(), StoreError> {
        let row = BulkPayoutRow::try_from(batch)?;
        let updated = diesel::update(bulk_payouts::table.find(row.id.as_str()))
            .set((
                bulk_payouts::state.eq(&row.state),
                bulk_payouts::approved_by.eq(&row.approved_by),
                bulk_payouts::approved_by_person.eq(&row.approved_by_person),
                bulk_payouts::rejected_by_person.eq(&row.rejected_by_person),
                bulk_payouts::approved_at.eq(row.approved_at),
                bulk_payouts::rejected_by.eq(&row.rejected_by),
                bulk_payouts::rejection_reason.eq(&row.rejection_reason),
                bulk_payouts::pending_count.eq(row.pending_count),
                bulk_payouts::completed_count.eq(row.completed_count),
                bulk_payouts::failed_count.eq(row.failed_count),
                bulk_payouts::completed_at.eq(row.completed_at),
                bulk_payouts::updated_at.eq(row.updated_at),
            ))
            .execute(self.conn)
            .map_err(db_error)?;
        if updated == 0 {
            return Err(StoreError::Other(format!("no bulk payout {} to update", row.id)));
        }
        Ok(())
    }

    fn list_batches(
        &mut self,
        org_id: &OrgId,
        mode: Mode,
        before: Option<&BulkPayoutId>,
        limit: usize,
    ) -> Result<Vec<BulkPayout>, StoreError> {
        let mut query =
            bulk_payouts::table.filter(bulk_payouts::org_id.eq(org_id.as_str())).filter(bulk_payouts::mode.eq(mode.as_str())).into_boxed();
        if let Some(before) = before {
            query = query.filter(bulk_payouts::id.lt(before.as_str()));
        }
        query
            .order(bulk_payouts::id.desc())
            .limit(limit_i64(limit))
            .select(BulkPayoutRow::as_select())
            .load(self.conn)
            .map_err(db_error)?
            .into_iter()
            .map(BulkPayout::try_from)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use malipo_core::{Currency, Mode, OrgId};
    use malipo_ledger::{Account, AccountKind};
    use malipo_store_contract::fixtures::{msisdn, T0};
    use malipo_store_contract::payout_fixtures::payout;

    use crate::rows::PayoutRow;
    use crate::schema::payouts;

    /// SQLite gets one multi-row `INSERT` per chunk, not one statement per row (which diesel
    /// falls back to when a row holds a `DEFAULT`, e.g. a `None` of an `Insertable`).
    #[test]
    fn payouts_are_inserted_many_rows_per_statement() {
        let account = Account::open(Some(OrgId::new()), Mode::Test, AccountKind::Payout, Currency::KES, None, T0);
        let payee = msisdn("254712000001");
        let rows: Vec<PayoutRow> = (0..3).map(|i| PayoutRow::try_from(&payout(&account, &payee, 100 + i, T0)).unwrap()).collect();
        // (diesel cannot print SQLite's batch with `ON CONFLICT`; the values are the same.)
        let plain = diesel::insert_into(payouts::table).values(&rows[..]);
        let sqlite = diesel::debug_query::<diesel::sqlite::Sqlite, _>(&plain).to_string();
        assert_eq!(sqlite.matches("INSERT").count(), 1, "{sqlite}");
        assert_eq!(sqlite.matches("?").count(), 3 * super::PAYOUT_COLUMNS, "{sqlite}");
        let insert = diesel::insert_into(payouts::table).values(&rows[..]).on_conflict_do_nothing();
        let pg = diesel::debug_query::<diesel::pg::Pg, _>(&insert).to_string();
        assert_eq!(pg.matches("INSERT").count(), 1, "{pg}");
        assert!(pg.contains(&format!("${}", 3 * super::PAYOUT_COLUMNS)), "{pg}");
    }
}
