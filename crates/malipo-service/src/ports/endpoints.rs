//! Webhook endpoints.

use malipo_core::{EndpointId, Mode, OrgId};
use malipo_webhooks::Endpoint;

use crate::error::StoreError;

/// Webhook endpoints: part of the one transaction handle [`super::Tx`].
pub trait EndpointRepo {
    /// Inserts an endpoint.
    ///
    /// # Errors
    /// [`StoreError::Duplicate`] if the id exists.
    fn insert_endpoint(&mut self, endpoint: &Endpoint) -> Result<(), StoreError>;
    /// An endpoint by id, deleted ones included (the caller checks ownership and deletion).
    ///
    /// # Errors
    /// Storage failures.
    fn endpoint(&mut self, id: &EndpointId) -> Result<Option<Endpoint>, StoreError>;
    /// An organisation's endpoints in a mode that are not deleted, oldest first.
    ///
    /// # Errors
    /// Storage failures.
    fn list_endpoints(&mut self, org_id: &OrgId, mode: Mode) -> Result<Vec<Endpoint>, StoreError>;
    /// Overwrites an endpoint's mutable fields (url, description, events, enabled, secret,
    /// previous_secret, disabled_reason, failing_since, deleted_at, updated_at).
    ///
    /// # Errors
    /// Storage failures.
    fn update_endpoint(&mut self, endpoint: &Endpoint) -> Result<(), StoreError>;
}
