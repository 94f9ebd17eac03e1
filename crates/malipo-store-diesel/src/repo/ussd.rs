//! [`UssdRepo`] on the transaction's connection: USSD sessions.

use diesel::prelude::*;
use malipo_core::{Mode, OrgId, Timestamp};
use malipo_service::{StoreError, UssdRepo, UssdSession};

use crate::cached::written;
use crate::error::db_error;
use crate::rows::UssdSessionRow;
use crate::schema::ussd_sessions;
use crate::tx::{locked_row, DieselTx};
use crate::DbConnection;

impl UssdRepo for DieselTx<'_> {
    fn ussd_session(&mut self, org_id: &OrgId, mode: Mode, session_id: &str) -> Result<Option<UssdSession>, StoreError> {
        locked_row!(&mut *self.conn, ussd_sessions::table.find((org_id.as_str(), mode.as_str(), session_id)), UssdSessionRow => UssdSession)
    }

    fn put_ussd_session(&mut self, session: &UssdSession) -> Result<(), StoreError> {
        let row = UssdSessionRow::from(session);
        written!(
            &mut *self.conn,
            diesel::insert_into(ussd_sessions::table)
                .values(&row)
                .on_conflict((ussd_sessions::org_id, ussd_sessions::mode, ussd_sessions::session_id))
                .do_update()
                .set(&row)
        )
        .map_err(db_error)?;
        Ok(())
    }

    fn purge_ussd_sessions(&mut self, before: Timestamp) -> Result<u64, StoreError> {
        let deleted = diesel::delete(ussd_sessions::table.filter(ussd_sessions::updated_at.lt(before.as_micros())))
            .execute(self.conn)
            .map_err(db_error)?;
        Ok(u64::try_from(deleted).unwrap_or(u64::MAX))
    }
}
