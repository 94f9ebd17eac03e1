//! [`PaymentRequestRepo`] on the transaction's connection.

use diesel::prelude::*;
use malipo_core::{Mode, Msisdn, OrgId, PaymentRequestId, Timestamp};
use malipo_requests::{PayCode, PaymentRequest, RequestFilter, RequestState};
use malipo_service::{PaymentRequestRepo, StoreError};

use crate::error::db_error;
use crate::literal::column_is;
use crate::rows::PaymentRequestRow;
use crate::schema::payment_requests;
use crate::tx::{inserted, limit_i64, locked_row, per_backend, DieselTx};
use crate::DbConnection;

/// The state whose requests hold their pay code and may still move.
const OPEN: &str = RequestState::Open.as_str();

fn parsed(rows: Vec<PaymentRequestRow>) -> Result<Vec<PaymentRequest>, StoreError> {
    rows.into_iter().map(PaymentRequest::try_from).collect()
}

impl PaymentRequestRepo for DieselTx<'_> {
    fn insert_payment_request(&mut self, request: &PaymentRequest) -> Result<(), StoreError> {
        let row = PaymentRequestRow::from(request);
        // `ON CONFLICT DO NOTHING` covers the id and the open pay code (a partial unique index)
        // alike, and never aborts a PostgreSQL transaction.
        inserted(per_backend!(&mut *self.conn, |c| diesel::insert_into(payment_requests::table)
            .values(&row)
            .on_conflict_do_nothing()
            .execute(c)))
    }

    fn payment_request(&mut self, org_id: &OrgId, mode: Mode, id: &PaymentRequestId) -> Result<Option<PaymentRequest>, StoreError> {
        payment_requests::table
            .filter(payment_requests::id.eq(id.as_str()))
            .filter(payment_requests::org_id.eq(org_id.as_str()))
            .filter(payment_requests::mode.eq(mode.as_str()))
            .select(PaymentRequestRow::as_select())
            .first(self.conn)
            .optional()
            .map_err(db_error)?
            .map(PaymentRequest::try_from)
            .transpose()
    }

    fn lock_payment_request(&mut self, id: &PaymentRequestId) -> Result<Option<PaymentRequest>, StoreError> {
        locked_row!(&mut *self.conn, payment_requests::table.find(id.as_str()), PaymentRequestRow => PaymentRequest)
    }

    fn payment_request_by_code(&mut self, mode: Mode, code: &PayCode) -> Result<Option<PaymentRequest>, StoreError> {
        let of_code = || {
            payment_requests::table.filter(payment_requests::mode.eq(mode.as_str())).filter(payment_requests::pay_code.eq(code.as_str()))
        };
        let open = of_code()
            .filter(column_is("payment_requests.state", OPEN))
            .select(PaymentRequestRow::as_select())
            .first(self.conn)
            .optional()
            .map_err(db_error)?;
        let row = match open {
            Some(row) => Some(row),
            None => of_code()
                .order((payment_requests::updated_at.desc(), payment_requests::id.desc()))
                .select(PaymentRequestRow::as_select())
                .first(self.conn)
                .optional()
                .map_err(db_error)?,
        };
        row.map(PaymentRequest::try_from).transpose()
    }

    fn update_payment_request(&mut self, request: &PaymentRequest) -> Result<(), StoreError> {
        let row = PaymentRequestRow::from(request);
        // Guarded: only a request still open moves, whatever the caller read.
        let updated = diesel::update(payment_requests::table.find(row.id.as_str()).filter(column_is("payment_requests.state", OPEN)))
            .set((
                payment_requests::state.eq(&row.state),
                payment_requests::paid_by_msisdn.eq(&row.paid_by_msisdn),
                payment_requests::transaction_id.eq(&row.transaction_id),
                payment_requests::paid_at.eq(row.paid_at),
                payment_requests::updated_at.eq(row.updated_at),
            ))
            .execute(self.conn)
            .map_err(db_error)?;
        if updated == 0 {
            return Err(StoreError::Other(format!("no open payment request {} to update", row.id)));
        }
        Ok(())
    }

    fn list_payment_requests(
        &mut self,
        org_id: &OrgId,
        mode: Mode,
        filter: &RequestFilter,
        before: Option<&PaymentRequestId>,
        limit: usize,
    ) -> Result<Vec<PaymentRequest>, StoreError> {
        let mut query = payment_requests::table
            .filter(payment_requests::org_id.eq(org_id.as_str()))
            .filter(payment_requests::mode.eq(mode.as_str()))
            .into_boxed();
        if let Some(state) = filter.state {
            query = query.filter(payment_requests::state.eq(state.as_str()));
        }
        if let Some(before) = before {
            query = query.filter(payment_requests::id.lt(before.as_str()));
        }
        parsed(
            query
                .order(payment_requests::id.desc())
                .limit(limit_i64(limit))
                .select(PaymentRequestRow::as_select())
                .load(self.conn)
                .map_err(db_error)?,
        )
    }

    fn open_payment_requests_for_payer(&mut self, mode: Mode, payer: &Msisdn) -> Result<Vec<PaymentRequest>, StoreError> {
        parsed(
            payment_requests::table
                .filter(payment_requests::mode.eq(mode.as_str()))
                .filter(payment_requests::payer_msisdn.eq(payer.as_str()))
                .filter(column_is("payment_requests.state", OPEN))
                .order(payment_requests::id.asc())
                .select(PaymentRequestRow::as_select())
                .load(self.conn)
                .map_err(db_error)?,
        )
    }

    fn lock_due_payment_requests(&mut self, now: Timestamp, limit: usize) -> Result<Vec<PaymentRequest>, StoreError> {
        // A macro, not a closure: the select is typed for one backend at a time.
        macro_rules! due {
            () => {
                payment_requests::table
                    .filter(column_is("payment_requests.state", OPEN))
                    .filter(payment_requests::expires_at.le(now.as_micros()))
                    .order((payment_requests::expires_at.asc(), payment_requests::id.asc()))
                    .limit(limit_i64(limit))
                    .select(PaymentRequestRow::as_select())
            };
        }
        let rows = match &mut *self.conn {
            // Another instance's expiry batch is skipped, not waited for.
            DbConnection::Pg(c) => due!().for_update().skip_locked().load(c),
            // Writers are serialised: nothing else can take these rows.
            DbConnection::Sqlite(c) => due!().load(c),
        };
        parsed(rows.map_err(db_error)?)
    }
}
