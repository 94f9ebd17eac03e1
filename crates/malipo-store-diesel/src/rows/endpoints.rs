//! Rows of webhook endpoints.

use diesel::prelude::*;
use malipo_core::{EndpointId, OrgId, Timestamp};
use malipo_service::StoreError;
use malipo_webhooks::{Endpoint, EventFilter};

use super::columns::{corrupt, mode, ts};
use crate::schema::webhook_endpoints;

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = webhook_endpoints, check_for_backend(diesel::pg::Pg, diesel::sqlite::Sqlite))]
pub(crate) struct EndpointRow {
    pub(crate) id: String,
    pub(crate) org_id: String,
    pub(crate) mode: String,
    pub(crate) url: String,
    pub(crate) description: Option<String>,
    pub(crate) events: String,
    pub(crate) enabled: bool,
    pub(crate) secret: Vec<u8>,
    pub(crate) previous_secret: Option<Vec<u8>>,
    pub(crate) previous_secret_expires_at: Option<i64>,
    pub(crate) disabled_reason: Option<String>,
    pub(crate) failing_since: Option<i64>,
    pub(crate) deleted_at: Option<i64>,
    pub(crate) created_at: i64,
    pub(crate) updated_at: i64,
}

impl From<&Endpoint> for EndpointRow {
    fn from(e: &Endpoint) -> Self {
        EndpointRow {
            id: e.id.as_str().to_owned(),
            org_id: e.org_id.as_str().to_owned(),
            mode: e.mode.as_str().to_owned(),
            url: e.url.clone(),
            description: e.description.clone(),
            events: e.events.to_stored(),
            enabled: e.enabled,
            secret: e.secret.clone(),
            previous_secret: e.previous_secret.as_ref().map(|(s, _)| s.clone()),
            previous_secret_expires_at: e.previous_secret.as_ref().map(|(_, t)| t.as_micros()),
            disabled_reason: e.disabled_reason.clone(),
            failing_since: e.failing_since.map(Timestamp::as_micros),
            deleted_at: e.deleted_at.map(Timestamp::as_micros),
            created_at: e.created_at.as_micros(),
            updated_at: e.updated_at.as_micros(),
        }
    }
}

impl TryFrom<EndpointRow> for Endpoint {
    type Error = StoreError;
    fn try_from(r: EndpointRow) -> Result<Self, StoreError> {
        let previous_secret = match (r.previous_secret, r.previous_secret_expires_at) {
            (Some(secret), Some(expires_at)) => Some((secret, ts(expires_at))),
            (None, None) => None,
            _ => return Err(StoreError::Other("stored previous webhook secret is half written".into())),
        };
        Ok(Endpoint {
            mode: mode(&r.mode)?,
            events: EventFilter::from_stored(&r.events).map_err(|_| corrupt("event filter", &r.events))?,
            id: EndpointId::from_trusted(r.id),
            org_id: OrgId::from_trusted(r.org_id),
            url: r.url,
            description: r.description,
            enabled: r.enabled,
            secret: r.secret,
            previous_secret,
            disabled_reason: r.disabled_reason,
            failing_since: r.failing_since.map(ts),
            deleted_at: r.deleted_at.map(ts),
            created_at: ts(r.created_at),
            updated_at: ts(r.updated_at),
        })
    }
}
