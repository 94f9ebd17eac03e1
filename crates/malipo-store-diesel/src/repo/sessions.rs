//! [`SessionRepo`] on the transaction's connection: console sessions and the sign-in failure
//! counts.

use diesel::prelude::*;
use malipo_auth::{ConsoleSession, Failures};
use malipo_core::{Mode, Timestamp, UserId};
use malipo_service::{SessionRepo, StoreError};

use crate::cached::written;
use crate::error::db_error;
use crate::rows::{FailuresRow, SessionRow};
use crate::schema::{console_sessions, sign_in_failures};
use crate::tx::{happened, inserted, locked_row, DieselTx};
use crate::DbConnection;

impl SessionRepo for DieselTx<'_> {
    fn insert_session(&mut self, session: &ConsoleSession) -> Result<(), StoreError> {
        let row = SessionRow::from(session);
        inserted(written!(&mut *self.conn, diesel::insert_into(console_sessions::table).values(&row).on_conflict_do_nothing()))
    }

    fn session(&mut self, digest: &str) -> Result<Option<ConsoleSession>, StoreError> {
        console_sessions::table
            .find(digest)
            .select(SessionRow::as_select())
            .first(self.conn)
            .optional()
            .map_err(db_error)?
            .map(ConsoleSession::try_from)
            .transpose()
    }

    fn touch_session(&mut self, digest: &str, now: Timestamp) -> Result<(), StoreError> {
        // A request's time never goes back (two requests of one session at once).
        let earlier = console_sessions::table.find(digest).filter(console_sessions::last_seen_at.lt(now.as_micros()));
        written!(&mut *self.conn, diesel::update(earlier).set(console_sessions::last_seen_at.eq(now.as_micros()))).map_err(db_error)?;
        Ok(())
    }

    fn set_session_mode(&mut self, digest: &str, mode: Mode) -> Result<bool, StoreError> {
        happened(written!(
            &mut *self.conn,
            diesel::update(console_sessions::table.find(digest)).set(console_sessions::mode.eq(mode.as_str()))
        ))
    }

    fn delete_session(&mut self, digest: &str) -> Result<bool, StoreError> {
        happened(written!(&mut *self.conn, diesel::delete(console_sessions::table.find(digest))))
    }

    fn delete_user_sessions(&mut self, user_id: &UserId) -> Result<usize, StoreError> {
        written!(&mut *self.conn, diesel::delete(console_sessions::table.filter(console_sessions::user_id.eq(user_id.as_str()))))
            .map_err(db_error)
    }

    fn purge_sessions(&mut self, ended_before: Timestamp, idle_before: Timestamp) -> Result<usize, StoreError> {
        let ended =
            console_sessions::expires_at.lt(ended_before.as_micros()).or(console_sessions::last_seen_at.lt(idle_before.as_micros()));
        diesel::delete(console_sessions::table.filter(ended)).execute(self.conn).map_err(db_error)
    }

    fn purge_failures(&mut self, window_before: Timestamp, now: Timestamp) -> Result<usize, StoreError> {
        let unlocked = sign_in_failures::locked_until.is_null().or(sign_in_failures::locked_until.le(now.as_micros()));
        diesel::delete(sign_in_failures::table.filter(sign_in_failures::window_start.lt(window_before.as_micros())).filter(unlocked))
            .execute(self.conn)
            .map_err(db_error)
    }

    fn failures(&mut self, subject: &str) -> Result<Option<Failures>, StoreError> {
        sign_in_failures::table
            .find(subject)
            .select(FailuresRow::as_select())
            .first(self.conn)
            .optional()
            .map_err(db_error)?
            .map(Failures::try_from)
            .transpose()
    }

    fn lock_failures(&mut self, subject: &str, now: Timestamp) -> Result<Failures, StoreError> {
        // Created with no failures when absent. On PostgreSQL a concurrent transaction's insert
        // of the same subject, not yet committed, makes this one wait for its end; the row is
        // then locked until this transaction ends (SQLite's writers are serialised by BEGIN
        // IMMEDIATE, so nothing can change it meanwhile there).
        let fresh = FailuresRow { subject: subject.to_owned(), window_start: now.as_micros(), count: 0, locked_until: None };
        written!(&mut *self.conn, diesel::insert_into(sign_in_failures::table).values(&fresh).on_conflict_do_nothing())
            .map_err(db_error)?;
        let locked: Option<Failures> = locked_row!(&mut *self.conn, sign_in_failures::table.find(subject), FailuresRow => Failures)?;
        locked.ok_or_else(|| StoreError::Other(format!("the failure count of {subject} vanished while being locked")))
    }

    fn put_failures(&mut self, subject: &str, failures: &Failures) -> Result<(), StoreError> {
        let row = FailuresRow::new(subject, failures)?;
        written!(
            &mut *self.conn,
            diesel::insert_into(sign_in_failures::table).values(&row).on_conflict(sign_in_failures::subject).do_update().set(&row)
        )
        .map_err(db_error)?;
        Ok(())
    }

    fn clear_failures(&mut self, subject: &str) -> Result<(), StoreError> {
        written!(&mut *self.conn, diesel::delete(sign_in_failures::table.find(subject))).map_err(db_error)?;
        Ok(())
    }
}
