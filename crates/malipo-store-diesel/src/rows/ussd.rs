//! Rows of USSD sessions.

use diesel::prelude::*;
use malipo_core::{Msisdn, OrgId};
use malipo_service::{StoreError, UssdSession};

use super::columns::{corrupt, mode, ts};
use crate::schema::ussd_sessions;

#[derive(Queryable, Selectable, Insertable, AsChangeset)]
#[diesel(table_name = ussd_sessions, check_for_backend(diesel::pg::Pg, diesel::sqlite::Sqlite))]
pub(crate) struct UssdSessionRow {
    pub(crate) org_id: String,
    pub(crate) mode: String,
    pub(crate) session_id: String,
    pub(crate) msisdn: String,
    pub(crate) state: String,
    pub(crate) hops: i32,
    pub(crate) last_screen: String,
    pub(crate) created_at: i64,
    pub(crate) updated_at: i64,
}

impl From<&UssdSession> for UssdSessionRow {
    fn from(s: &UssdSession) -> Self {
        UssdSessionRow {
            org_id: s.org_id.as_str().to_owned(),
            mode: s.mode.as_str().to_owned(),
            session_id: s.session_id.clone(),
            msisdn: s.msisdn.as_str().to_owned(),
            state: s.state.clone(),
            hops: i32::try_from(s.hops).unwrap_or(i32::MAX),
            last_screen: s.last_screen.clone(),
            created_at: s.created_at.as_micros(),
            updated_at: s.updated_at.as_micros(),
        }
    }
}

impl TryFrom<UssdSessionRow> for UssdSession {
    type Error = StoreError;
    fn try_from(r: UssdSessionRow) -> Result<Self, StoreError> {
        Ok(UssdSession {
            mode: mode(&r.mode)?,
            msisdn: Msisdn::parse(&r.msisdn).map_err(|_| corrupt("msisdn", &r.msisdn))?,
            hops: u32::try_from(r.hops).map_err(|_| corrupt("USSD hop count", &r.hops.to_string()))?,
            org_id: OrgId::from_trusted(r.org_id),
            session_id: r.session_id,
            state: r.state,
            last_screen: r.last_screen,
            created_at: ts(r.created_at),
            updated_at: ts(r.updated_at),
        })
    }
}
