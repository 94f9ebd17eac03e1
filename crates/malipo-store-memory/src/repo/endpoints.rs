//! [`EndpointRepo`] over the in-memory tables.

use malipo_core::{EndpointId, Mode, OrgId};
use malipo_service::{EndpointRepo, StoreError};
use malipo_webhooks::Endpoint;

use crate::tx::{foreign_key, MemoryTx};

impl EndpointRepo for MemoryTx<'_> {
    fn insert_endpoint(&mut self, endpoint: &Endpoint) -> Result<(), StoreError> {
        let s = self.w()?;
        if s.endpoints.contains_key(&endpoint.id) {
            return Err(StoreError::Duplicate);
        }
        foreign_key(s.orgs.contains_key(&endpoint.org_id), "the webhook endpoint's organisation")?;
        s.endpoints.insert(endpoint.id.clone(), endpoint.clone());
        Ok(())
    }

    fn endpoint(&mut self, id: &EndpointId) -> Result<Option<Endpoint>, StoreError> {
        Ok(self.r().endpoints.get(id).cloned())
    }

    fn list_endpoints(&mut self, org_id: &OrgId, mode: Mode) -> Result<Vec<Endpoint>, StoreError> {
        let mut endpoints: Vec<Endpoint> =
            self.r().endpoints.values().filter(|e| &e.org_id == org_id && e.mode == mode && e.deleted_at.is_none()).cloned().collect();
        endpoints.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        Ok(endpoints)
    }

    fn update_endpoint(&mut self, endpoint: &Endpoint) -> Result<(), StoreError> {
        let s = self.w()?;
        let Some(stored) = s.endpoints.get_mut(&endpoint.id) else {
            return Err(StoreError::Other(format!("no webhook endpoint {} to update", endpoint.id)));
        };
        stored.url.clone_from(&endpoint.url);
        stored.description.clone_from(&endpoint.description);
        stored.events.clone_from(&endpoint.events);
        stored.enabled = endpoint.enabled;
        stored.secret.clone_from(&endpoint.secret);
        stored.previous_secret.clone_from(&endpoint.previous_secret);
        stored.disabled_reason.clone_from(&endpoint.disabled_reason);
        stored.failing_since = endpoint.failing_since;
        stored.deleted_at = endpoint.deleted_at;
        stored.updated_at = endpoint.updated_at;
        Ok(())
    }
}
