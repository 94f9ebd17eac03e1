//! [`ChargeRepo`] on the transaction's connection: charges and cash-outs.

use diesel::prelude::*;
use diesel::sql_types::{BigInt, Text};
use malipo_charges::{Charge, ChargeFilter, ChargeKind, ChargeState};
use malipo_core::{ChargeRef, MinorUnit, Mode, Msisdn, OrgId, Timestamp};
use malipo_service::{ChargeDayTotal, ChargeRepo, StoreError, DAY_MICROS};

use crate::cached::{written, CachedDsl};
use crate::claim::DueRows;
use crate::error::db_error;
use crate::literal::{column_is, unindexed_column_is};
use crate::rows::ChargeRow;
use crate::schema::charges;
use crate::tx::{inserted, limit_i64, locked_row, DieselTx};
use crate::DbConnection;

/// The least id of a charge created at `from` or later: ids are drawn at the creation time
/// (`ChargeRef::at`); the bound allows a minute for a clock set back.
fn ids_from(from: Timestamp) -> String {
    ChargeRef::floor(from.plus_seconds(-60)).into_string()
}

/// An id above every charge created before `to`. The bound allows an hour: ids drawn by earlier
/// builds came from the clock a little after the creation time was read.
fn ids_to(to: Timestamp) -> String {
    ChargeRef::floor(to.plus_seconds(3_600)).into_string()
}

/// The length of an hour of `charge_hour_totals`.
const HOUR_MICROS: i64 = 3_600_000_000;

/// Charges and cash-outs come due for their expiry, settlement or completion.
const DUE_CHARGES: DueRows = DueRows { table: "charges", id: "id", due: "next_action_at", filter: None };

impl ChargeRepo for DieselTx<'_> {
    fn insert_charge(&mut self, charge: &Charge) -> Result<(), StoreError> {
        let row = ChargeRow::from(charge);
        inserted(written!(&mut *self.conn, diesel::insert_into(charges::table).values(&row).on_conflict_do_nothing()))
    }

    fn insert_charges(&mut self, charges: &[Charge]) -> Result<(), StoreError> {
        let rows: Vec<ChargeRow> = charges.iter().map(ChargeRow::from).collect();
        let inserted = written!(rows &mut *self.conn, charges::table, &rows, on_conflict_do_nothing).map_err(db_error)?;
        if inserted < rows.len() {
            return Err(StoreError::Duplicate);
        }
        Ok(())
    }

    fn charge(&mut self, org_id: &OrgId, mode: Mode, id: &ChargeRef) -> Result<Option<Charge>, StoreError> {
        charges::table
            .filter(charges::id.eq(id.as_str()))
            .filter(charges::org_id.eq(org_id.as_str()))
            .filter(charges::mode.eq(mode.as_str()))
            .select(ChargeRow::as_select())
            .first(self.conn)
            .optional()
            .map_err(db_error)?
            .map(Charge::try_from)
            .transpose()
    }

    fn latest_charge_by_reference(&mut self, org_id: &OrgId, mode: Mode, reference: &str) -> Result<Option<Charge>, StoreError> {
        charges::table
            .filter(charges::org_id.eq(org_id.as_str()))
            .filter(charges::mode.eq(mode.as_str()))
            .filter(charges::reference.eq(reference))
            .filter(charges::kind.eq(ChargeKind::Charge.as_str()))
            .order((charges::created_at.desc(), charges::id.desc()))
            .select(ChargeRow::as_select())
            .first(self.conn)
            .optional()
            .map_err(db_error)?
            .map(Charge::try_from)
            .transpose()
    }

    fn lock_charge(&mut self, id: &ChargeRef) -> Result<Option<Charge>, StoreError> {
        locked_row!(&mut *self.conn, charges::table.find(id.as_str()), ChargeRow => Charge)
    }

    fn update_charge(&mut self, charge: &Charge) -> Result<(), StoreError> {
        let row = ChargeRow::from(charge);
        let updated = written!(
            &mut *self.conn,
            diesel::update(charges::table.find(row.id.as_str())).set((
                charges::state.eq(&row.state),
                charges::failure_reason.eq(&row.failure_reason),
                charges::transaction_id.eq(&row.transaction_id),
                charges::payer_account.eq(&row.payer_account),
                charges::amount_reversed.eq(row.amount_reversed),
                charges::updated_at.eq(row.updated_at),
                charges::completed_at.eq(row.completed_at),
                charges::next_action_at.eq(row.next_action_at),
            ))
        )
        .map_err(db_error)?;
        if updated == 0 {
            return Err(StoreError::Other(format!("no charge {} to update", row.id)));
        }
        Ok(())
    }

    fn list_charges(
        &mut self,
        org_id: &OrgId,
        mode: Mode,
        filter: &ChargeFilter,
        before: Option<&ChargeRef>,
        limit: usize,
    ) -> Result<Vec<Charge>, StoreError> {
        let mut query = charges::table
            .filter(charges::org_id.eq(org_id.as_str()))
            .filter(charges::mode.eq(mode.as_str()))
            .filter(charges::kind.eq(ChargeKind::Charge.as_str()))
            .into_boxed();
        // SQLite plans without statistics, by the conditions an index matches: it would take the
        // state index over a payer's or a reference's, so there the state beside a payer or a
        // reference is never an index's (`+column`). PostgreSQL chooses by its statistics.
        let sqlite = matches!(&*self.conn, DbConnection::Sqlite(_));
        if let Some(state) = filter.state {
            let unindexed = sqlite && (filter.payer.is_some() || filter.reference.is_some());
            query = query.filter(if unindexed {
                unindexed_column_is("charges.state", state.as_str())
            } else {
                column_is("charges.state", state.as_str())
            });
        }
        // A date window is also a range of ids (no index has the creation time): ids are drawn
        // at the creation time (`ChargeRef::at`), so a day long ago is read from where it ends
        // in `charges_org_idx` rather than by walking every newer charge.
        if let Some(from) = filter.from {
            query = query.filter(charges::id.ge(ids_from(from))).filter(charges::created_at.ge(from.as_micros()));
        }
        if let Some(to) = filter.to {
            query = query.filter(charges::id.lt(ids_to(to))).filter(charges::created_at.lt(to.as_micros()));
        }
        if let Some(reference) = &filter.reference {
            query = query.filter(charges::reference.eq(reference.as_str()));
        }
        if let Some(payer) = &filter.payer {
            query = query.filter(charges::payer_msisdn.eq(payer.as_str()));
        }
        if let Some(before) = before {
            query = query.filter(charges::id.lt(before.as_str()));
        }
        query
            .order(charges::id.desc())
            .limit(limit_i64(limit))
            .select(ChargeRow::as_select())
            .load(self.conn)
            .map_err(db_error)?
            .into_iter()
            .map(Charge::try_from)
            .collect()
    }

    fn charge_day_totals(&mut self, org_id: &OrgId, mode: Mode, from: Timestamp, days: u32) -> Result<Vec<ChargeDayTotal>, StoreError> {
        // Days that start on the hour (a country whose offset is whole hours) are sums of the
        // hourly totals the database keeps as charges are written (`charge_hour_totals`, in
        // migration 000016): a few rows an hour, however many charges. Any other day is a range
        // of `charges_org_idx` by id (see `list_charges`).
        let on_the_hour = from.as_micros().rem_euclid(HOUR_MICROS) == 0;
        let sql = |p: &dyn Fn(u8) -> String| {
            let (from, org, mode, to) = (p(1), p(2), p(3), p(4));
            let (id_from, id_to) = (p(5), p(6));
            if on_the_hour {
                format!(
                    "SELECT (hour - {from}) / {DAY_MICROS} AS day, CAST(SUM(created) AS BIGINT) AS n, \
                            CAST(SUM(created_amount) AS BIGINT) AS total, CAST(SUM(completed) AS BIGINT) AS completed, \
                            CAST(SUM(completed_amount) AS BIGINT) AS completed_total \
                       FROM charge_hour_totals \
                      WHERE org_id = {org} AND mode = {mode} AND hour >= {from} AND hour < {to} \
                      GROUP BY 1 \
                     HAVING SUM(created) > 0"
                )
            } else {
                format!(
                    "SELECT (created_at - {from}) / {DAY_MICROS} AS day, COUNT(*) AS n, CAST(SUM(amount) AS BIGINT) AS total, \
                            CAST(SUM(CASE WHEN state = 'completed' THEN 1 ELSE 0 END) AS BIGINT) AS completed, \
                            CAST(SUM(CASE WHEN state = 'completed' THEN amount ELSE 0 END) AS BIGINT) AS completed_total \
                       FROM charges \
                      WHERE org_id = {org} AND mode = {mode} AND id >= {id_from} AND id < {id_to} \
                        AND created_at >= {from} AND created_at < {to} AND kind = 'charge' \
                      GROUP BY 1"
                )
            }
        };
        let to = from.as_micros().saturating_add(i64::from(days).saturating_mul(DAY_MICROS));
        macro_rules! bound {
            ($query:expr) => {
                $query
                    .bind::<BigInt, _>(from.as_micros())
                    .bind::<Text, _>(org_id.as_str())
                    .bind::<Text, _>(mode.as_str())
                    .bind::<BigInt, _>(to)
            };
        }
        macro_rules! with_ids {
            ($query:expr) => {
                bound!($query).bind::<Text, _>(ids_from(from)).bind::<Text, _>(ids_to(Timestamp::from_micros(to)))
            };
        }
        let pg = |n| format!("${n}");
        let sqlite = |n| format!("?{n}");
        let rows: Vec<DayTotalRow> = match (&mut *self.conn, on_the_hour) {
            (DbConnection::Pg(c), true) => bound!(diesel::sql_query(sql(&pg))).load(c),
            (DbConnection::Pg(c), false) => with_ids!(diesel::sql_query(sql(&pg))).load(c),
            (DbConnection::Sqlite(c), true) => bound!(diesel::sql_query(sql(&sqlite))).load(c),
            (DbConnection::Sqlite(c), false) => with_ids!(diesel::sql_query(sql(&sqlite))).load(c),
        }
        .map_err(db_error)?;
        rows.into_iter()
            .map(|r| {
                Ok(ChargeDayTotal {
                    day: u32::try_from(r.day).map_err(|_| StoreError::Other(format!("day {} out of range", r.day)))?,
                    count: u64::try_from(r.n).unwrap_or(0),
                    amount: MinorUnit::new(r.total),
                    completed: u64::try_from(r.completed).unwrap_or(0),
                    completed_amount: MinorUnit::new(r.completed_total),
                })
            })
            .collect()
    }

    fn claim_due_charges(&mut self, now: Timestamp, lease_until: Timestamp, limit: usize) -> Result<Vec<ChargeRef>, StoreError> {
        Ok(DUE_CHARGES.claim(self.conn, now, lease_until, limit)?.into_iter().map(ChargeRef::from_trusted).collect())
    }

    fn lock_due_charges(&mut self, mode: Mode, now: Timestamp, limit: usize) -> Result<Vec<ChargeRef>, StoreError> {
        let query = charges::table
            .filter(charges::next_action_at.le(now.as_micros()))
            .filter(charges::mode.eq(mode.as_str()))
            .order((charges::next_action_at.asc(), charges::id.asc()))
            .limit(limit_i64(limit));
        let ids: Vec<String> = match &mut *self.conn {
            DbConnection::Pg(c) => query.select(charges::id).for_update().skip_locked().load(c),
            // The transaction holds SQLite's one writer lock: nobody else can take them.
            DbConnection::Sqlite(c) => query.select(charges::id).load(c),
        }
        .map_err(db_error)?;
        Ok(ids.into_iter().map(ChargeRef::from_trusted).collect())
    }

    fn oldest_due_charge(&mut self, now: Timestamp) -> Result<Option<Timestamp>, StoreError> {
        DUE_CHARGES.oldest(self.conn, now)
    }

    fn count_due_charges(&mut self, until: Timestamp, cap: usize) -> Result<u64, StoreError> {
        DUE_CHARGES.count(self.conn, until, cap)
    }

    fn pending_charges_of_payer(&mut self, mode: Mode, msisdn: &Msisdn) -> Result<Vec<Charge>, StoreError> {
        let rows: Vec<ChargeRow> = charges::table
            .filter(charges::mode.eq(mode.as_str()))
            .filter(charges::payer_msisdn.eq(msisdn.as_str()))
            .filter(column_is("charges.state", ChargeState::Pending.as_str()))
            .order((charges::created_at.asc(), charges::id.asc()))
            .select(ChargeRow::as_select())
            .cached()
            .load(self.conn)
            .map_err(db_error)?;
        rows.into_iter().map(Charge::try_from).collect()
    }
}

/// A row of [`ChargeRepo::charge_day_totals`]' query.
#[derive(QueryableByName)]
struct DayTotalRow {
    #[diesel(sql_type = BigInt)]
    day: i64,
    #[diesel(sql_type = BigInt)]
    n: i64,
    #[diesel(sql_type = BigInt)]
    total: i64,
    #[diesel(sql_type = BigInt)]
    completed: i64,
    #[diesel(sql_type = BigInt)]
    completed_total: i64,
}
