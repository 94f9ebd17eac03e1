//! [`ChargeRepo`] on the transaction's connection: charges and cash-outs.

use diesel::prelude::*;
use malipo_charges::{Charge, ChargeFilter, ChargeKind, ChargeState};
use malipo_core::{ChargeRef, Mode, Msisdn, OrgId, Timestamp};
use malipo_service::{ChargeRepo, StoreError};

use crate::cached::{written, CachedDsl};
use crate::claim::DueRows;
use crate::error::db_error;
use crate::literal::column_is;
use crate::rows::ChargeRow;
use crate::schema::charges;
use crate::tx::{inserted, limit_i64, locked_row, DieselTx};
use crate::DbConnection;

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
        if let Some(state) = filter.state {
            query = query.filter(column_is("charges.state", state.as_str()));
        }
        if let Some(from) = filter.from {
            query = query.filter(charges::created_at.ge(from.as_micros()));
        }
        if let Some(to) = filter.to {
            query = query.filter(charges::created_at.lt(to.as_micros()));
        }
        if let Some(reference) = &filter.reference {
            query = query.filter(charges::reference.eq(reference.as_str()));
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

    fn claim_due_charges(&mut self, now: Timestamp, lease_until: Timestamp, limit: usize) -> Result<Vec<ChargeRef>, StoreError> {
        Ok(DUE_CHARGES.claim(self.conn, now, lease_until, limit)?.into_iter().map(ChargeRef::from_trusted).collect())
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
