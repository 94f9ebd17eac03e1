//! Rows of callbacks and callback secrets.

use diesel::prelude::*;
use malipo_core::OrgId;
use malipo_service::{Callback, CallbackSecret, CallbackState, StoreError};

use super::columns::{corrupt, integer, mode, ts};
use crate::schema::{callback_secrets, callbacks};

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = callbacks, check_for_backend(diesel::pg::Pg, diesel::sqlite::Sqlite))]
pub(crate) struct CallbackRow {
    pub(crate) id: String,
    pub(crate) org_id: String,
    pub(crate) mode: String,
    pub(crate) client_id: String,
    pub(crate) object_id: String,
    pub(crate) url: String,
    pub(crate) correlation_id: Option<String>,
    pub(crate) state: String,
    pub(crate) attempts: i32,
    pub(crate) next_attempt_at: Option<i64>,
    pub(crate) last_status: Option<i32>,
    pub(crate) last_error: Option<String>,
    pub(crate) created_at: i64,
    pub(crate) updated_at: i64,
}

impl CallbackRow {
    pub(crate) fn of(c: &Callback) -> Result<Self, StoreError> {
        Ok(CallbackRow {
            id: c.id.clone(),
            org_id: c.org_id.as_str().to_owned(),
            mode: c.mode.as_str().to_owned(),
            client_id: c.client_id.clone(),
            object_id: c.object_id.clone(),
            url: c.url.clone(),
            correlation_id: c.correlation_id.clone(),
            state: c.state.as_str().to_owned(),
            attempts: integer("callback attempts", c.attempts)?,
            next_attempt_at: c.next_attempt_at.map(|t| t.as_micros()),
            last_status: c.last_status.map(i32::from),
            last_error: c.last_error.clone(),
            created_at: c.created_at.as_micros(),
            updated_at: c.updated_at.as_micros(),
        })
    }
}

impl TryFrom<CallbackRow> for Callback {
    type Error = StoreError;
    fn try_from(r: CallbackRow) -> Result<Self, StoreError> {
        Ok(Callback {
            mode: mode(&r.mode)?,
            state: CallbackState::parse(&r.state).ok_or_else(|| corrupt("callback state", &r.state))?,
            attempts: u32::try_from(r.attempts).map_err(|_| corrupt("callback attempts", &r.attempts.to_string()))?,
            last_status: r.last_status.map(|s| u16::try_from(s).map_err(|_| corrupt("callback status", &s.to_string()))).transpose()?,
            id: r.id,
            org_id: OrgId::from_trusted(r.org_id),
            client_id: r.client_id,
            object_id: r.object_id,
            url: r.url,
            correlation_id: r.correlation_id,
            next_attempt_at: r.next_attempt_at.map(ts),
            last_error: r.last_error,
            created_at: ts(r.created_at),
            updated_at: ts(r.updated_at),
        })
    }
}

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = callback_secrets, check_for_backend(diesel::pg::Pg, diesel::sqlite::Sqlite))]
pub(crate) struct CallbackSecretRow {
    pub(crate) org_id: String,
    pub(crate) mode: String,
    pub(crate) secret: Vec<u8>,
    pub(crate) previous_secret: Option<Vec<u8>>,
    pub(crate) previous_secret_expires_at: Option<i64>,
    pub(crate) created_at: i64,
    pub(crate) updated_at: i64,
}

impl From<&CallbackSecret> for CallbackSecretRow {
    fn from(s: &CallbackSecret) -> Self {
        CallbackSecretRow {
            org_id: s.org_id.as_str().to_owned(),
            mode: s.mode.as_str().to_owned(),
            secret: s.secret.clone(),
            previous_secret: s.previous.as_ref().map(|(p, _)| p.clone()),
            previous_secret_expires_at: s.previous.as_ref().map(|(_, t)| t.as_micros()),
            created_at: s.created_at.as_micros(),
            updated_at: s.updated_at.as_micros(),
        }
    }
}

impl TryFrom<CallbackSecretRow> for CallbackSecret {
    type Error = StoreError;
    fn try_from(r: CallbackSecretRow) -> Result<Self, StoreError> {
        let previous = match (r.previous_secret, r.previous_secret_expires_at) {
            (Some(secret), Some(until)) => Some((secret, ts(until))),
            (None, None) => None,
            _ => return Err(StoreError::Other("stored previous callback secret is half written".into())),
        };
        Ok(CallbackSecret {
            mode: mode(&r.mode)?,
            org_id: OrgId::from_trusted(r.org_id),
            secret: r.secret,
            previous,
            created_at: ts(r.created_at),
            updated_at: ts(r.updated_at),
        })
    }
}
