//! [`EndpointRepo`] on the transaction's connection: webhook endpoints.

use diesel::prelude::*;
use malipo_core::{EndpointId, Mode, OrgId};
use malipo_service::{EndpointRepo, StoreError};
use malipo_webhooks::Endpoint;

use crate::error::db_error;
use crate::rows::EndpointRow;
use crate::schema::webhook_endpoints;
use crate::tx::{inserted, per_backend, DieselTx};
use crate::DbConnection;

impl EndpointRepo for DieselTx<'_> {
    fn insert_endpoint(&mut self, endpoint: &Endpoint) -> Result<(), StoreError> {
        self.endpoints.clear();
        let row = EndpointRow::from(endpoint);
        inserted(per_backend!(&mut *self.conn, |c| diesel::insert_into(webhook_endpoints::table)
            .values(&row)
            .on_conflict_do_nothing()
            .execute(c)))
    }

    fn endpoint(&mut self, id: &EndpointId) -> Result<Option<Endpoint>, StoreError> {
        webhook_endpoints::table
            .find(id.as_str())
            .select(EndpointRow::as_select())
            .first(self.conn)
            .optional()
            .map_err(db_error)?
            .map(Endpoint::try_from)
            .transpose()
    }

    fn list_endpoints(&mut self, org_id: &OrgId, mode: Mode) -> Result<Vec<Endpoint>, StoreError> {
        let key = (org_id.as_str().to_owned(), mode);
        if let Some(listed) = self.endpoints.get(&key) {
            return Ok(listed.clone());
        }
        let listed: Vec<Endpoint> = webhook_endpoints::table
            .filter(webhook_endpoints::org_id.eq(org_id.as_str()))
            .filter(webhook_endpoints::mode.eq(mode.as_str()))
            .filter(webhook_endpoints::deleted_at.is_null())
            .order((webhook_endpoints::created_at.asc(), webhook_endpoints::id.asc()))
            .select(EndpointRow::as_select())
            .load(self.conn)
            .map_err(db_error)?
            .into_iter()
            .map(Endpoint::try_from)
            .collect::<Result<_, _>>()?;
        self.endpoints.insert(key, listed.clone());
        Ok(listed)
    }

    fn update_endpoint(&mut self, endpoint: &Endpoint) -> Result<(), StoreError> {
        self.endpoints.clear();
        let row = EndpointRow::from(endpoint);
        let updated = diesel::update(webhook_endpoints::table.find(row.id.as_str()))
            .set((
                webhook_endpoints::url.eq(&row.url),
                webhook_endpoints::description.eq(&row.description),
                webhook_endpoints::events.eq(&row.events),
                webhook_endpoints::enabled.eq(row.enabled),
                webhook_endpoints::secret.eq(&row.secret),
                webhook_endpoints::previous_secret.eq(&row.previous_secret),
                webhook_endpoints::previous_secret_expires_at.eq(row.previous_secret_expires_at),
                webhook_endpoints::disabled_reason.eq(&row.disabled_reason),
                webhook_endpoints::failing_since.eq(row.failing_since),
                webhook_endpoints::deleted_at.eq(row.deleted_at),
                webhook_endpoints::updated_at.eq(row.updated_at),
            ))
            .execute(self.conn)
            .map_err(db_error)?;
        if updated == 0 {
            return Err(StoreError::Other(format!("no webhook endpoint {} to update", row.id)));
        }
        Ok(())
    }
}
