//! The event outbox: every reported change writes its event, and one delivery per subscribed
//! endpoint, in the transaction of the change, so there is no committed change without its
//! event and no event without its change.

use malipo_charges::{Charge, ChargeKind, ChargeState};
use malipo_core::{EndpointId, EventId, MinorUnit, Mode, OrgId, Timestamp};
use malipo_payouts::{BatchState, BulkPayout, Payout, PayoutState, Reversal};
use malipo_requests::{PaymentRequest, RequestState};
use malipo_webhooks::{Delivery, DeliveryState, Event, Summary};

use crate::core::Core;
use crate::error::ServiceError;
use crate::ports::Tx;

/// The event kind a charge's new state is reported as.
pub fn charge_event_kind(state: ChargeState) -> Option<&'static str> {
    match state {
        ChargeState::Pending => None,
        ChargeState::Authorised => Some("charge.authorised"),
        ChargeState::Completed => Some("charge.completed"),
        ChargeState::Declined => Some("charge.declined"),
        ChargeState::Expired => Some("charge.expired"),
        ChargeState::Failed => Some("charge.failed"),
    }
}

/// A new delivery of an event to an endpoint, due now.
pub(crate) fn new_delivery(event: &EventId, endpoint: &EndpointId, now: Timestamp) -> Delivery {
    Delivery {
        id: format!("dlv_{}", EventId::new().as_str().trim_start_matches(EventId::PREFIX)),
        event_id: event.clone(),
        endpoint_id: endpoint.clone(),
        state: DeliveryState::Pending,
        attempts: 0,
        next_attempt_at: Some(now),
        created_at: now,
        updated_at: now,
    }
}

/// What one event reports.
pub(crate) struct NewEvent<'e> {
    /// The organisation told.
    pub(crate) org_id: &'e OrgId,
    /// The mode of the change.
    pub(crate) mode: Mode,
    /// The event kind, e.g. `charge.completed`.
    pub(crate) kind: &'e str,
    /// The id of the object that changed.
    pub(crate) object_id: &'e str,
    /// The object as the API shows it.
    pub(crate) data: Vec<u8>,
    /// The seed's top-level fields.
    pub(crate) summary: Summary,
}

/// Writes events into the outbox of the caller's transaction.
pub(crate) struct Events<'a>(pub(crate) &'a Core);

impl Events<'_> {
    /// Writes an event and one delivery per enabled, subscribed endpoint.
    ///
    /// # Errors
    /// Storage failures (which fail the caller's transaction).
    pub(crate) fn emit(&self, tx: &mut dyn Tx, new: NewEvent<'_>, now: Timestamp) -> Result<(), ServiceError> {
        self.emit_all(tx, vec![event_of(new, now)], now)
    }

    /// Writes events (together: one statement where the store can) and one delivery per
    /// enabled, subscribed endpoint for each.
    ///
    /// # Errors
    /// Storage failures (which fail the caller's transaction).
    pub(crate) fn emit_all(&self, tx: &mut dyn Tx, events: Vec<Event>, now: Timestamp) -> Result<(), ServiceError> {
        match events.as_slice() {
            [] => return Ok(()),
            [one] => tx.insert_event(one)?,
            all => tx.insert_events(all)?,
        }
        for event in &events {
            for endpoint in tx.list_endpoints(&event.org_id, event.mode)? {
                if endpoint.enabled && endpoint.events.matches(&event.kind) {
                    tx.insert_delivery(&new_delivery(&event.id, &endpoint.id, now))?;
                }
            }
        }
        Ok(())
    }

    /// The event of a charge's move into its current state, if that state is reported.
    ///
    /// # Errors
    /// As [`Events::emit`].
    pub(crate) fn charge(&self, tx: &mut dyn Tx, charge: &Charge, now: Timestamp) -> Result<(), ServiceError> {
        self.emit_all(tx, self.charge_event(charge, now).into_iter().collect(), now)
    }

    /// [`Events::charge`]'s event, not yet written: the charge as it is now, for an
    /// [`Events::emit_all`] together with a later one.
    pub(crate) fn charge_event(&self, charge: &Charge, now: Timestamp) -> Option<Event> {
        let renderer = &self.0.renderer;
        let (kind, (data, summary)) = match charge.kind {
            ChargeKind::Charge => (charge_event_kind(charge.state)?, renderer.charge(charge)),
            // Of a cash-out's moves only its completion is an event (contract section 12).
            ChargeKind::CashOut if charge.state == ChargeState::Completed => ("cash_out.completed", renderer.cash_out(charge)),
            ChargeKind::CashOut => return None,
        };
        let new = NewEvent { org_id: &charge.org_id, mode: charge.mode, kind, object_id: charge.id.as_str(), data, summary };
        Some(event_of(new, now))
    }
}

/// A new event with a new id.
fn event_of(new: NewEvent<'_>, now: Timestamp) -> Event {
    Event {
        id: EventId::new(),
        org_id: new.org_id.clone(),
        mode: new.mode,
        kind: new.kind.to_owned(),
        object_id: new.object_id.to_owned(),
        data: new.data,
        summary: new.summary,
        created_at: now,
    }
}

impl Events<'_> {
    /// `payout.completed` or `payout.failed` for a settled payout, with the payout account's
    /// available balance right after it.
    ///
    /// # Errors
    /// As [`Events::emit`].
    pub(crate) fn payout(&self, tx: &mut dyn Tx, payout: &Payout, available: MinorUnit, now: Timestamp) -> Result<(), ServiceError> {
        let kind = match payout.state {
            PayoutState::Completed => "payout.completed",
            PayoutState::Failed => "payout.failed",
            PayoutState::Pending => return Ok(()),
        };
        let (data, summary) = self.0.renderer.payout(payout, available);
        let new = NewEvent { org_id: &payout.org_id, mode: payout.mode, kind, object_id: payout.id.as_str(), data, summary };
        self.emit(tx, new, now)
    }

    /// `bulk_payout.approved`, `.rejected` or `.completed` for a batch that just entered that state.
    ///
    /// # Errors
    /// As [`Events::emit`].
    pub(crate) fn bulk_payout(&self, tx: &mut dyn Tx, batch: &BulkPayout, now: Timestamp) -> Result<(), ServiceError> {
        let kind = match batch.state {
            BatchState::Processing => "bulk_payout.approved",
            BatchState::Rejected => "bulk_payout.rejected",
            BatchState::Completed => "bulk_payout.completed",
            BatchState::AwaitingApproval => return Ok(()),
        };
        let (data, summary) = self.0.renderer.bulk_payout(batch);
        let new = NewEvent { org_id: &batch.org_id, mode: batch.mode, kind, object_id: batch.id.as_str(), data, summary };
        self.emit(tx, new, now)
    }

    /// `reversal.completed`.
    ///
    /// # Errors
    /// As [`Events::emit`].
    pub(crate) fn reversal(&self, tx: &mut dyn Tx, reversal: &Reversal, now: Timestamp) -> Result<(), ServiceError> {
        let (data, summary) = self.0.renderer.reversal(reversal);
        let new = NewEvent {
            org_id: &reversal.org_id,
            mode: reversal.mode,
            kind: "reversal.completed",
            object_id: reversal.id.as_str(),
            data,
            summary,
        };
        self.emit(tx, new, now)
    }
}

impl Events<'_> {
    /// `payment_request.paid` or `payment_request.expired` for a request that just entered
    /// that state (a cancellation is no event).
    ///
    /// # Errors
    /// As [`Events::emit`].
    pub(crate) fn payment_request(&self, tx: &mut dyn Tx, request: &PaymentRequest, now: Timestamp) -> Result<(), ServiceError> {
        let kind = match request.state {
            RequestState::Paid => "payment_request.paid",
            RequestState::Expired => "payment_request.expired",
            RequestState::Open | RequestState::Cancelled => return Ok(()),
        };
        let (data, summary) = self.0.renderer.payment_request(request);
        let new = NewEvent { org_id: &request.org_id, mode: request.mode, kind, object_id: request.id.as_str(), data, summary };
        self.emit(tx, new, now)
    }
}
