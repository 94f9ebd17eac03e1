//! The endpoints and events API.

use malipo_auth::Principal;
use malipo_core::{EndpointId, EventId};
use malipo_webhooks::{Endpoint, Event, Secret};

use super::model::{disable, EndpointWithSecret, EventDetail, Redelivery, ROTATION_OVERLAP_SECONDS};
use crate::commands::{CreateEndpoint, EndpointTarget, Named, Redeliver};
use crate::core::Core;
use crate::error::ServiceError;
use crate::events::new_delivery;
use crate::idempotency::{Done, Idem};
use crate::needs::{self, require};
use crate::page::Page;
use crate::ports::{EndpointRepo, EventsPage};
use crate::views::{Charging, OnEndpoints, OnOutbox, View};

/// The webhook endpoints and events API.
pub struct Webhooks<'a> {
    core: &'a Core,
}

impl<'a> Webhooks<'a> {
    pub(crate) fn new(core: &'a Core) -> Self {
        Webhooks { core }
    }

    // ----- the endpoints and events API -----

    /// Registers an endpoint with a new `whsec_` secret.
    ///
    /// # Errors
    /// Idempotency errors.
    pub fn create_endpoint(
        &self,
        principal: &Principal,
        command: &CreateEndpoint,
        idem: &Idem,
    ) -> Result<Done<EndpointWithSecret>, ServiceError> {
        require(principal, &needs::MANAGE_WEBHOOKS)?;
        let secret = Secret::generate();
        let now = self.core.now();
        let endpoint = Endpoint {
            id: EndpointId::new(),
            org_id: principal.org_id.clone(),
            mode: principal.mode,
            url: command.url.clone(),
            description: command.description.clone(),
            events: command.events.clone(),
            enabled: true,
            secret: self.core.cipher.seal(secret.as_bytes()),
            previous_secret: None,
            disabled_reason: None,
            failing_since: None,
            deleted_at: None,
            created_at: now,
            updated_at: now,
        };
        let shown = EndpointWithSecret { endpoint: endpoint.clone(), secret: secret.to_whsec() };
        self.core.idempotent(idem, OnEndpoints, |tx| {
            tx.insert_endpoint(&endpoint)?;
            Ok(shown.clone())
        })
    }

    /// The principal's endpoints.
    ///
    /// # Errors
    /// Storage failures.
    pub fn endpoints(&self, principal: &Principal) -> Result<Vec<Endpoint>, ServiceError> {
        require(principal, &needs::READ_WEBHOOKS)?;
        OnEndpoints::read(self.core.store(), |tx| Ok(tx.list_endpoints(&principal.org_id, principal.mode)?))
    }

    /// One endpoint.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`].
    pub fn endpoint(&self, principal: &Principal, id: &str) -> Result<Endpoint, ServiceError> {
        require(principal, &needs::READ_WEBHOOKS)?;
        let id = EndpointId::parse(id).map_or(Named::Unknown, Named::Id);
        OnEndpoints::read(self.core.store(), |tx| owned_endpoint(tx, principal, &id))
    }

    /// Deletes an endpoint: no more deliveries; pending ones fail.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`]; idempotency errors.
    pub fn delete_endpoint(&self, principal: &Principal, command: &EndpointTarget, idem: &Idem) -> Result<Done<Endpoint>, ServiceError> {
        require(principal, &needs::MANAGE_WEBHOOKS)?;
        self.core.idempotent(idem, Charging, |tx| {
            let now = self.core.now();
            let mut endpoint = owned_endpoint(tx, principal, &command.endpoint)?;
            endpoint.deleted_at = Some(now);
            disable(tx, &mut endpoint, "deleted", now)?;
            Ok(endpoint)
        })
    }

    /// Rotates an endpoint's secret: the new one signs from now on, the old one beside it for 24 hours.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`]; idempotency errors.
    pub fn rotate_secret(
        &self,
        principal: &Principal,
        command: &EndpointTarget,
        idem: &Idem,
    ) -> Result<Done<EndpointWithSecret>, ServiceError> {
        require(principal, &needs::MANAGE_WEBHOOKS)?;
        let secret = Secret::generate();
        self.core.idempotent(idem, OnEndpoints, |tx| {
            let now = self.core.now();
            let mut endpoint = owned_endpoint(tx, principal, &command.endpoint)?;
            let old = std::mem::replace(&mut endpoint.secret, self.core.cipher.seal(secret.as_bytes()));
            endpoint.previous_secret = Some((old, now.plus_seconds(ROTATION_OVERLAP_SECONDS)));
            endpoint.updated_at = now;
            tx.update_endpoint(&endpoint)?;
            Ok(EndpointWithSecret { endpoint, secret: secret.to_whsec() })
        })
    }

    /// The principal's events, oldest first after a cursor.
    ///
    /// # Errors
    /// [`ServiceError::Validation`] for a bad cursor.
    pub fn events(
        &self,
        principal: &Principal,
        kind: Option<&str>,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Page<Event>, ServiceError> {
        require(principal, &needs::READ_WEBHOOKS)?;
        let after = after
            .map(|a| EventId::parse(a).map_err(|_| ServiceError::field("after", "invalid_cursor", "after is not an event id")))
            .transpose()?;
        let data = OnOutbox::report(self.core.store(), |tx| {
            Ok(tx.list_events(&principal.org_id, principal.mode, kind, EventsPage::After(after.as_ref()), limit.saturating_add(1))?)
        })?;
        Ok(Page::from_fetched(data, limit, |e| e.id.to_string()))
    }

    /// The principal's events, newest first before a cursor (the console's list; the API's is
    /// oldest first, [`Webhooks::events`]).
    ///
    /// # Errors
    /// [`ServiceError::Validation`] for a bad cursor.
    pub fn recent_events(
        &self,
        principal: &Principal,
        kind: Option<&str>,
        before: Option<&str>,
        limit: usize,
    ) -> Result<Page<Event>, ServiceError> {
        require(principal, &needs::READ_WEBHOOKS)?;
        let before = before
            .map(|b| EventId::parse(b).map_err(|_| ServiceError::field("cursor", "invalid_cursor", "cursor is not an event id")))
            .transpose()?;
        let data = OnOutbox::report(self.core.store(), |tx| {
            Ok(tx.list_events(&principal.org_id, principal.mode, kind, EventsPage::Before(before.as_ref()), limit.saturating_add(1))?)
        })?;
        Ok(Page::from_fetched(data, limit, |e| e.id.to_string()))
    }

    /// One event with its deliveries and attempts.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`].
    pub fn event(&self, principal: &Principal, id: &str) -> Result<EventDetail, ServiceError> {
        require(principal, &needs::READ_WEBHOOKS)?;
        let id = EventId::parse(id).map_err(|_| ServiceError::NotFound)?;
        OnOutbox::read(self.core.store(), |tx| {
            let event = tx.event(&principal.org_id, principal.mode, &id)?.ok_or(ServiceError::NotFound)?;
            let attempts = tx.attempts_of_event(&id)?;
            let deliveries = tx.deliveries_of_event(&id)?;
            Ok(EventDetail { event, attempts, deliveries })
        })
    }

    /// Queues an event again: to one endpoint, or to every enabled endpoint subscribed to it.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`] (event or endpoint); [`ServiceError::InvalidState`] for a
    /// disabled endpoint; idempotency errors.
    pub fn redeliver(&self, principal: &Principal, command: &Redeliver, idem: &Idem) -> Result<Done<Redelivery>, ServiceError> {
        require(principal, &needs::MANAGE_WEBHOOKS)?;
        let Redeliver { event: id, endpoint: endpoint_id } = command;
        self.core.idempotent(idem, Charging, |tx| {
            let now = self.core.now();
            let event = tx.event(&principal.org_id, principal.mode, id)?.ok_or(ServiceError::NotFound)?;
            let endpoints = match endpoint_id {
                Some(e) => {
                    let endpoint = owned_endpoint(tx, principal, e)?;
                    if !endpoint.enabled {
                        return Err(ServiceError::InvalidState("the endpoint is disabled".into()));
                    }
                    vec![endpoint]
                }
                None => tx
                    .list_endpoints(&principal.org_id, principal.mode)?
                    .into_iter()
                    .filter(|e| e.enabled && e.events.matches(&event.kind))
                    .collect(),
            };
            for e in &endpoints {
                tx.insert_delivery(&new_delivery(&event.id, &e.id, now))?;
            }
            Ok(Redelivery { event_id: event.id, endpoint_ids: endpoints.into_iter().map(|e| e.id).collect() })
        })
    }
}

/// The principal's endpoint `id` names, not deleted.
fn owned_endpoint(tx: &mut (impl EndpointRepo + ?Sized), principal: &Principal, id: &Named<EndpointId>) -> Result<Endpoint, ServiceError> {
    let Named::Id(id) = id else { return Err(ServiceError::NotFound) };
    tx.endpoint(id)?
        .filter(|e| e.org_id == principal.org_id && e.mode == principal.mode && e.deleted_at.is_none())
        .ok_or(ServiceError::NotFound)
}
