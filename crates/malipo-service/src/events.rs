//! The event outbox: every reported change writes its event, and one delivery per subscribed
//! endpoint, in the transaction of the change, so there is no committed change without its
//! event and no event without its change.
//!
//! An event's `data` is a versioned snapshot ([`crate::snapshot`]) of what happened, a
//! [`Happened`]: each channel renders its own payload from it when it sends. Its [`Summary`]
//! (signed into a delivery's body) is computed here, from the domain value.

use malipo_charges::{Charge, ChargeKind, ChargeState};
use malipo_core::{EndpointId, EventId, MinorUnit, Mode, OrgId, Timestamp};
use malipo_payouts::{BatchState, BulkPayout, Payout, PayoutState, Reversal};
use malipo_requests::{PaymentRequest, RequestState};
use malipo_webhooks::{Delivery, DeliveryState, Event, Summary};

use serde::{Deserialize, Serialize};

use crate::error::ServiceError;
use crate::ports::DeliveryFlow;
use crate::snapshot;

/// What an event reports: the domain value as it was when the event was written.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Happened {
    /// A charge's move (`charge.*`).
    Charge(Charge),
    /// A cash-out's completion (`cash_out.completed`): a charge of kind cash-out.
    CashOut(Charge),
    /// A payout's settlement (`payout.*`), with the payout account's available balance right
    /// after it.
    Payout {
        /// The payout.
        payout: Payout,
        /// The payout account's available balance right after it settled.
        payout_account_available: MinorUnit,
    },
    /// A bulk payout batch's move (`bulk_payout.*`).
    BulkPayout(BulkPayout),
    /// A reversal (`reversal.completed`).
    Reversal(Reversal),
    /// A merchant payment request's move (`payment_request.*`).
    PaymentRequest(PaymentRequest),
}

impl Happened {
    /// The seed's top-level fields: amount (two decimals), currency, state and reference.
    pub fn summary(&self) -> Summary {
        let of = |amount: MinorUnit, currency: malipo_core::Currency, state: &str, reference: Option<&str>| Summary {
            amount: Some(currency.format_amount(amount)),
            currency: Some(currency.to_string()),
            state: Some(state.to_owned()),
            reference: reference.map(str::to_owned),
        };
        match self {
            Happened::Charge(c) => of(c.amount, c.currency, c.state.as_str(), Some(&c.reference)),
            Happened::CashOut(c) => of(c.amount, c.currency, c.state.as_str(), None),
            Happened::Payout { payout: p, .. } => of(p.amount, p.currency, p.state.as_str(), Some(&p.reference)),
            Happened::BulkPayout(b) => of(b.total_amount, b.currency, b.state.as_str(), Some(&b.reference)),
            Happened::Reversal(r) => of(r.amount, r.currency, "completed", None),
            Happened::PaymentRequest(r) => of(r.amount, r.currency, r.state.as_str(), Some(&r.reference)),
        }
    }
}

/// What `event` reports, read from its snapshot. `None` for an event written before events
/// were snapshots: its `data` is already the API's JSON, and such an event is sent (and shown)
/// as stored.
pub fn happened(event: &Event) -> Option<Happened> {
    snapshot::decode(&event.data).ok()
}

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
    /// What happened.
    pub(crate) happened: Happened,
}

/// Writes events into the outbox of the caller's transaction.
pub(crate) struct Events;

impl Events {
    /// Writes an event and one delivery per enabled, subscribed endpoint.
    ///
    /// # Errors
    /// Storage failures (which fail the caller's transaction).
    pub(crate) fn emit(&self, tx: &mut (impl DeliveryFlow + ?Sized), new: NewEvent<'_>, now: Timestamp) -> Result<(), ServiceError> {
        self.emit_all(tx, vec![event_of(new, now)?], now)
    }

    /// Writes events (together: one statement where the store can) and one delivery per
    /// enabled, subscribed endpoint for each.
    ///
    /// # Errors
    /// Storage failures (which fail the caller's transaction).
    pub(crate) fn emit_all(&self, tx: &mut (impl DeliveryFlow + ?Sized), events: Vec<Event>, now: Timestamp) -> Result<(), ServiceError> {
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
    pub(crate) fn charge(&self, tx: &mut (impl DeliveryFlow + ?Sized), charge: &Charge, now: Timestamp) -> Result<(), ServiceError> {
        self.emit_all(tx, self.charge_event(charge, now)?.into_iter().collect(), now)?;
        self.ended(tx, charge, now)
    }

    /// Makes the callbacks waiting for a charge due, if it has just ended (whether or not its
    /// end is an event: a cash-out's decline is not).
    ///
    /// # Errors
    /// Storage failures (which fail the caller's transaction).
    pub(crate) fn ended(&self, tx: &mut (impl DeliveryFlow + ?Sized), charge: &Charge, now: Timestamp) -> Result<(), ServiceError> {
        if charge.state.is_final() {
            tx.callbacks_due(charge.id.as_str(), now)?;
        }
        Ok(())
    }

    /// [`Events::charge`]'s event, not yet written: the charge as it is now, for an
    /// [`Events::emit_all`] together with a later one.
    ///
    /// # Errors
    /// [`ServiceError::Internal`] when its snapshot cannot be written.
    pub(crate) fn charge_event(&self, charge: &Charge, now: Timestamp) -> Result<Option<Event>, ServiceError> {
        let (kind, happened) = match charge.kind {
            ChargeKind::Charge => match charge_event_kind(charge.state) {
                Some(kind) => (kind, Happened::Charge(charge.clone())),
                None => return Ok(None),
            },
            // Of a cash-out's moves only its completion is an event (contract section 12).
            ChargeKind::CashOut if charge.state == ChargeState::Completed => ("cash_out.completed", Happened::CashOut(charge.clone())),
            ChargeKind::CashOut => return Ok(None),
        };
        let new = NewEvent { org_id: &charge.org_id, mode: charge.mode, kind, object_id: charge.id.as_str(), happened };
        event_of(new, now).map(Some)
    }
}

/// A new event with a new id: the snapshot of what happened, and its summary.
fn event_of(new: NewEvent<'_>, now: Timestamp) -> Result<Event, ServiceError> {
    Ok(Event {
        id: EventId::new(),
        org_id: new.org_id.clone(),
        mode: new.mode,
        kind: new.kind.to_owned(),
        object_id: new.object_id.to_owned(),
        data: snapshot::encode(&new.happened)?,
        summary: new.happened.summary(),
        created_at: now,
    })
}

impl Events {
    /// `payout.completed` or `payout.failed` for a settled payout, with the payout account's
    /// available balance right after it.
    ///
    /// # Errors
    /// As [`Events::emit`].
    pub(crate) fn payout(
        &self,
        tx: &mut (impl DeliveryFlow + ?Sized),
        payout: &Payout,
        available: MinorUnit,
        now: Timestamp,
    ) -> Result<(), ServiceError> {
        let kind = match payout.state {
            PayoutState::Completed => "payout.completed",
            PayoutState::Failed => "payout.failed",
            PayoutState::Pending => return Ok(()),
        };
        let happened = Happened::Payout { payout: payout.clone(), payout_account_available: available };
        let new = NewEvent { org_id: &payout.org_id, mode: payout.mode, kind, object_id: payout.id.as_str(), happened };
        self.emit(tx, new, now)?;
        // A bulk item is never a request of its own: its batch's callback reports it.
        if payout.bulk_payout_id.is_none() {
            tx.callbacks_due(payout.id.as_str(), now)?;
        }
        Ok(())
    }

    /// `bulk_payout.approved`, `.rejected` or `.completed` for a batch that just entered that state.
    ///
    /// # Errors
    /// As [`Events::emit`].
    pub(crate) fn bulk_payout(
        &self,
        tx: &mut (impl DeliveryFlow + ?Sized),
        batch: &BulkPayout,
        now: Timestamp,
    ) -> Result<(), ServiceError> {
        let kind = match batch.state {
            BatchState::Processing => "bulk_payout.approved",
            BatchState::Rejected => "bulk_payout.rejected",
            BatchState::Completed => "bulk_payout.completed",
            BatchState::AwaitingApproval => return Ok(()),
        };
        let happened = Happened::BulkPayout(batch.clone());
        let new = NewEvent { org_id: &batch.org_id, mode: batch.mode, kind, object_id: batch.id.as_str(), happened };
        self.emit(tx, new, now)?;
        if matches!(batch.state, BatchState::Completed | BatchState::Rejected) {
            tx.callbacks_due(batch.id.as_str(), now)?;
        }
        Ok(())
    }

    /// `reversal.completed`.
    ///
    /// # Errors
    /// As [`Events::emit`].
    pub(crate) fn reversal(&self, tx: &mut (impl DeliveryFlow + ?Sized), reversal: &Reversal, now: Timestamp) -> Result<(), ServiceError> {
        let new = NewEvent {
            org_id: &reversal.org_id,
            mode: reversal.mode,
            kind: "reversal.completed",
            object_id: reversal.id.as_str(),
            happened: Happened::Reversal(reversal.clone()),
        };
        self.emit(tx, new, now)
    }
}

impl Events {
    /// `payment_request.paid` or `payment_request.expired` for a request that just entered
    /// that state (a cancellation is no event).
    ///
    /// # Errors
    /// As [`Events::emit`].
    pub(crate) fn payment_request(
        &self,
        tx: &mut (impl DeliveryFlow + ?Sized),
        request: &PaymentRequest,
        now: Timestamp,
    ) -> Result<(), ServiceError> {
        let kind = match request.state {
            RequestState::Paid => "payment_request.paid",
            RequestState::Expired => "payment_request.expired",
            RequestState::Open | RequestState::Cancelled => return Ok(()),
        };
        let happened = Happened::PaymentRequest(request.clone());
        let new = NewEvent { org_id: &request.org_id, mode: request.mode, kind, object_id: request.id.as_str(), happened };
        self.emit(tx, new, now)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use malipo_core::{AccountId, ChargeRef, Currency, Msisdn};

    fn completed() -> Charge {
        let t = Timestamp::from_micros(1_763_805_600_000_000);
        Charge {
            id: ChargeRef::new(),
            kind: ChargeKind::Charge,
            org_id: OrgId::new(),
            mode: Mode::Test,
            payer_msisdn: Msisdn::parse("254712345678").unwrap(),
            amount: MinorUnit::new(25_000),
            fee: MinorUnit::new(200),
            commission: MinorUnit::ZERO,
            currency: Currency::KES,
            amount_reversed: MinorUnit::ZERO,
            reference: "ORDER-1042".into(),
            description: None,
            state: ChargeState::Completed,
            failure_reason: None,
            transaction_id: None,
            merchant_account: AccountId::new(),
            payer_account: None,
            created_at: t,
            updated_at: t,
            expires_at: t,
            completed_at: Some(t),
            next_action_at: None,
        }
    }

    #[test]
    fn an_events_snapshot_reads_back_its_domain_value_and_an_older_row_reads_as_none() {
        let charge = completed();
        let new = NewEvent {
            org_id: &charge.org_id,
            mode: charge.mode,
            kind: "charge.completed",
            object_id: charge.id.as_str(),
            happened: Happened::Charge(charge.clone()),
        };
        let mut event = event_of(new, charge.created_at).unwrap();
        assert!(event.data.starts_with(br#"{"v":1,"value":{"Charge":"#), "{}", String::from_utf8_lossy(&event.data));
        assert_eq!(happened(&event), Some(Happened::Charge(charge.clone())));
        let summary = &event.summary;
        assert_eq!(
            (summary.amount.as_deref(), summary.currency.as_deref(), summary.state.as_deref(), summary.reference.as_deref()),
            (Some("250.00"), Some("KES"), Some("completed"), Some("ORDER-1042"))
        );
        let cash_out = Happened::CashOut(Charge { kind: ChargeKind::CashOut, ..charge.clone() });
        assert_eq!(snapshot::decode::<Happened>(&snapshot::encode(&cash_out).unwrap()).unwrap(), cash_out);
        // A row written before events were snapshots holds the API's JSON.
        event.data = format!(r#"{{"charge_ref":"{}","amount":250.00}}"#, charge.id).into_bytes();
        assert_eq!(happened(&event), None);
        event.data = b"{}".to_vec();
        assert_eq!(happened(&event), None);
    }
}
