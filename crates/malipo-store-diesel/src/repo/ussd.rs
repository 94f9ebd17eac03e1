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

    fn peek_ussd_session(&mut self, org_id: &OrgId, mode: Mode, session_id: &str) -> Result<Option<UssdSession>, StoreError> {
        ussd_sessions::table
            .find((org_id.as_str(), mode.as_str(), session_id))
            .select(UssdSessionRow::as_select())
            .first(self.conn)
            .optional()
            .map_err(db_error)?
            .map(UssdSession::try_from)
            .transpose()
    }

    fn swap_ussd_session(&mut self, seen: Option<&UssdSession>, next: &UssdSession) -> Result<bool, StoreError> {
        let row = UssdSessionRow::from(next);
        let written = match seen {
            None => written!(
                &mut *self.conn,
                diesel::insert_into(ussd_sessions::table)
                    .values(&row)
                    .on_conflict((ussd_sessions::org_id, ussd_sessions::mode, ussd_sessions::session_id))
                    .do_nothing()
            ),
            Some(seen) => {
                let key = (next.org_id.as_str(), next.mode.as_str(), next.session_id.as_str());
                written!(
                    &mut *self.conn,
                    diesel::update(
                        ussd_sessions::table
                            .find(key)
                            .filter(ussd_sessions::hops.eq(i32::try_from(seen.hops).unwrap_or(i32::MAX)))
                            .filter(ussd_sessions::updated_at.eq(seen.updated_at.as_micros()))
                            .filter(ussd_sessions::last_screen.eq(&seen.last_screen))
                    )
                    .set(&row)
                )
            }
        };
        Ok(written.map_err(db_error)? == 1)
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
