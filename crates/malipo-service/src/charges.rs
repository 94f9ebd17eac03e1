//! Charges: creation under an idempotency key (its command parsed in [`crate::commands`]), and
//! reads (the API's, and the console's: a day-by-day summary for Home, and a charge's history
//! and webhook deliveries).

use std::collections::BTreeMap;

use malipo_auth::Principal;
use malipo_charges::{Charge, ChargeFilter, ChargeKind, ChargeState};
use malipo_core::{ChargeRef, EndpointId, EventId, MinorUnit, Mode, Timestamp};
use malipo_countries::FeeOperation;
use malipo_ledger::AccountKind;
use malipo_webhooks::{Attempt, Delivery, Event};

use crate::backlog::{Backlog, Intake};
use crate::commands::CreateCharge;
use crate::core::{no_org_account, Core};
use crate::error::ServiceError;
use crate::idempotency::{Done, Idem};
use crate::lifecycle::Lifecycle;
use crate::needs::{self, require};
use crate::page::{bad_cursor, Page};
use crate::ports::{AccountKey, DAY_MICROS};
use crate::views::{Charging, OnCharges, View};

/// The merchant-facing charge use cases.
pub struct Charges<'a> {
    core: &'a Core,
}

impl<'a> Charges<'a> {
    pub(crate) fn new(core: &'a Core) -> Self {
        Charges { core }
    }

    /// Creates a charge in state `pending`, exactly once per idempotency key. Payer-side
    /// conditions (no wallet, locked, limits, funds) are never reported here: they move the
    /// charge through its states afterwards.
    ///
    /// # Errors
    /// [`ServiceError::CurrencyMismatch`] (the currency named, or the payer's number, is not the
    /// merchant's), [`ServiceError::Busy`], idempotency errors.
    pub fn create(&self, principal: &Principal, command: &CreateCharge, idem: &Idem) -> Result<Done<Charge>, ServiceError> {
        require(principal, &needs::CREATE_CHARGE)?;
        let merchant_country = self.core.country(&principal.country)?;
        let currency = merchant_country.currency;
        let CreateCharge { payer, amount, currency: named, reference, description } = command;
        let amount = *amount;
        if named.is_some_and(|c| c != currency) {
            return Err(ServiceError::CurrencyMismatch(format!("currency must be {currency}, the merchant's collection currency")));
        }
        let payer_country = self.core.country_of(payer)?;
        if payer_country.currency != currency {
            return Err(ServiceError::CurrencyMismatch(format!(
                "payer_msisdn is a {} number; this merchant collects in {currency}",
                payer_country.code
            )));
        }
        let fee = merchant_country.fee(FeeOperation::Charge, amount).min(amount);
        if let Some(replayed) = Backlog::new(self.core).take(Intake::Charge, idem)? {
            return Ok(replayed);
        }
        let now = self.core.now();
        let expires_at = now.plus_seconds(self.core.config.charge_ttl_seconds);
        // A live prompt whose payer can pay waits for the customer from the start (parked until
        // it expires): the worker's check would find the same a moment later, at the cost of a
        // transaction of its own. Any other is checked by the worker at once and fails there.
        let lifecycle = Lifecycle(self.core);
        let can_pay = principal.mode == Mode::Live
            && Charging::query(self.core.store(), |tx| lifecycle.live_refusal(tx, principal.mode, payer, (amount, amount), now))?.is_none();
        let next_action_at = if can_pay { expires_at } else { lifecycle.first_step_at(principal.mode, now) };
        let charge = move |merchant_account| Charge {
            // Drawn at its creation time, so that a date window is a range of ids too.
            id: ChargeRef::at(now),
            kind: ChargeKind::Charge,
            commission: MinorUnit::ZERO,
            org_id: principal.org_id.clone(),
            mode: principal.mode,
            payer_msisdn: payer.clone(),
            amount,
            fee,
            currency,
            amount_reversed: MinorUnit::ZERO,
            reference: reference.clone(),
            description: description.clone(),
            state: ChargeState::Pending,
            failure_reason: None,
            transaction_id: None,
            merchant_account,
            payer_account: None,
            created_at: now,
            updated_at: now,
            expires_at,
            completed_at: None,
            next_action_at: Some(next_action_at),
        };
        // The store knows the account without a connection in the usual case (an adapter
        // remembers ids, which never change), so the charge is whole before its transaction
        // and may share it with other creations' (`Core::create_charge`).
        let (org_id, mode, kind) = (&principal.org_id, principal.mode, AccountKind::Collection);
        let key = AccountKey::Org { org_id: org_id.clone(), mode, kind };
        let merchant_account = self.core.store().account_id(&key)?.ok_or_else(|| no_org_account(org_id, mode, kind))?;
        let outcome = self.core.create_charge(idem, &charge(merchant_account))?;
        if !outcome.replayed {
            self.core.observer.charge_entered(ChargeState::Pending);
        }
        Ok(outcome)
    }

    /// One of the principal's charges.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`].
    pub fn get(&self, principal: &Principal, id: &str) -> Result<Charge, ServiceError> {
        require(principal, &needs::READ_PAYMENTS)?;
        let id = ChargeRef::parse(id).map_err(|_| ServiceError::NotFound)?;
        OnCharges::read(self.core.store(), |tx| Ok(tx.charge(&principal.org_id, principal.mode, &id)?))?.ok_or(ServiceError::NotFound)
    }

    /// The most recent charge with this reference.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`].
    pub fn by_reference(&self, principal: &Principal, reference: &str) -> Result<Charge, ServiceError> {
        require(principal, &needs::READ_PAYMENTS)?;
        OnCharges::read(self.core.store(), |tx| Ok(tx.latest_charge_by_reference(&principal.org_id, principal.mode, reference)?))?
            .ok_or(ServiceError::NotFound)
    }

    /// The principal's charges, newest first.
    ///
    /// # Errors
    /// [`ServiceError::Validation`] for a bad cursor or limit.
    pub fn list(
        &self,
        principal: &Principal,
        filter: &ChargeFilter,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<Page<Charge>, ServiceError> {
        require(principal, &needs::READ_PAYMENTS)?;
        let before = cursor.map(|c| ChargeRef::parse(c).map_err(|_| bad_cursor("cursor"))).transpose()?;
        let data = OnCharges::report(self.core.store(), |tx| {
            Ok(tx.list_charges(&principal.org_id, principal.mode, filter, before.as_ref(), limit.saturating_add(1))?)
        })?;
        Ok(Page::from_fetched(data, limit, |c| c.id.to_string()))
    }

    /// The principal's charges of the last `days` local days of its organisation's country
    /// (today last), day by day: how many were created, their amount, and how many of them
    /// are completed with their amount. Reads those days' totals only (at most 366 days); the
    /// stores keep them as charges are written, so the cost does not grow with the charges.
    ///
    /// # Errors
    /// [`ServiceError::Validation`] for more than 366 days; storage failures.
    pub fn days(&self, principal: &Principal, days: u32) -> Result<Vec<ChargeDay>, ServiceError> {
        require(principal, &needs::READ_PAYMENTS)?;
        if days > 366 {
            return Err(ServiceError::field("days", "invalid_value", "days must be at most 366"));
        }
        let country = self.core.country(&principal.country)?;
        let (today, _) = country.local_day(self.core.now());
        let from = today.as_micros().saturating_sub(i64::from(days.saturating_sub(1)).saturating_mul(DAY_MICROS));
        let start = |d: u32| from.saturating_add(i64::from(d).saturating_mul(DAY_MICROS));
        let totals = OnCharges::read(self.core.store(), |tx| {
            Ok(tx.charge_day_totals(&principal.org_id, principal.mode, Timestamp::from_micros(from), days)?)
        })?;
        // A local midnight plus the country's offset reads, in UTC, as that local date.
        let offset = i64::from(country.utc_offset_minutes).saturating_mul(60_000_000);
        let mut out: Vec<ChargeDay> = (0..days)
            .map(|d| ChargeDay {
                date: Timestamp::from_micros(start(d).saturating_add(offset)).to_offset_datetime().date(),
                count: 0,
                amount: MinorUnit::ZERO,
                completed: 0,
                completed_amount: MinorUnit::ZERO,
            })
            .collect();
        for t in totals {
            let Some(day) = usize::try_from(t.day).ok().and_then(|d| out.get_mut(d)) else { continue };
            day.count = day.count.saturating_add(t.count);
            day.amount = day.amount.checked_add(t.amount)?;
            day.completed = day.completed.saturating_add(t.completed);
            day.completed_amount = day.completed_amount.checked_add(t.completed_amount)?;
        }
        Ok(out)
    }

    /// One of the principal's charges with its state history (from its `charge.*` events:
    /// `pending` when created, then each event's state) and its events' webhook deliveries with
    /// their attempts, read together.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`] (another organisation's or mode's charge too).
    pub fn activity(&self, principal: &Principal, id: &str) -> Result<ChargeActivity, ServiceError> {
        require(principal, &needs::READ_PAYMENTS)?;
        let id = ChargeRef::parse(id).map_err(|_| ServiceError::NotFound)?;
        Charging::read(self.core.store(), |tx| {
            let charge = tx.charge(&principal.org_id, principal.mode, &id)?.ok_or(ServiceError::NotFound)?;
            let events: Vec<Event> = tx
                .events_of_object(&principal.org_id, principal.mode, id.as_str(), 100)?
                .into_iter()
                .filter(|e| e.kind.starts_with("charge."))
                .collect();
            let ids: Vec<EventId> = events.iter().map(|e| e.id.clone()).collect();
            let (deliveries, attempts) =
                if ids.is_empty() { (Vec::new(), Vec::new()) } else { (tx.deliveries_of_events(&ids)?, tx.attempts_of_events(&ids)?) };
            let mut urls: BTreeMap<EndpointId, Option<String>> = BTreeMap::new();
            for d in &deliveries {
                if !urls.contains_key(&d.endpoint_id) {
                    let url = tx.endpoint(&d.endpoint_id)?.map(|e| e.url);
                    urls.insert(d.endpoint_id.clone(), url);
                }
            }
            let mut history = vec![ChargeStep { state: ChargeState::Pending, at: charge.created_at }];
            for e in &events {
                if let Some(state) = e.kind.strip_prefix("charge.").and_then(|k| k.parse::<ChargeState>().ok()) {
                    history.push(ChargeStep { state, at: e.created_at });
                }
            }
            // Events are purged after their retention: the state the charge is in is still known.
            if history.last().map(|s| s.state) != Some(charge.state) {
                history.push(ChargeStep { state: charge.state, at: charge.completed_at.unwrap_or(charge.updated_at) });
            }
            let deliveries = deliveries
                .into_iter()
                .map(|delivery| {
                    let event = events.iter().find(|e| e.id == delivery.event_id);
                    ChargeDelivery {
                        event_kind: event.map(|e| e.kind.clone()).unwrap_or_default(),
                        endpoint_url: urls.get(&delivery.endpoint_id).cloned().flatten(),
                        attempts: attempts.iter().filter(|a| a.delivery_id == delivery.id).cloned().collect(),
                        delivery,
                    }
                })
                .collect();
            Ok(ChargeActivity { charge, history, deliveries })
        })
    }
}

/// One local day of an organisation's charges ([`Charges::days`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChargeDay {
    /// The local date.
    pub date: time::Date,
    /// Charges created that day.
    pub count: u64,
    /// Their amount.
    pub amount: MinorUnit,
    /// How many of them are completed.
    pub completed: u64,
    /// The completed ones' amount.
    pub completed_amount: MinorUnit,
}

/// A step of a charge's state history.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChargeStep {
    /// The state entered.
    pub state: ChargeState,
    /// When.
    pub at: Timestamp,
}

/// A webhook delivery of one of a charge's events, with its attempts.
#[derive(Clone, Debug)]
pub struct ChargeDelivery {
    /// The event's kind (`charge.completed`).
    pub event_kind: String,
    /// The delivery (its event, endpoint, state, attempts made, next attempt).
    pub delivery: Delivery,
    /// The endpoint's URL, when the endpoint is still known.
    pub endpoint_url: Option<String>,
    /// Its attempts, oldest first.
    pub attempts: Vec<Attempt>,
}

/// A charge with its state history and webhook deliveries ([`Charges::activity`]).
#[derive(Clone, Debug)]
pub struct ChargeActivity {
    /// The charge.
    pub charge: Charge,
    /// Its states, oldest first, with when each was entered.
    pub history: Vec<ChargeStep>,
    /// Its `charge.*` events' deliveries, oldest first.
    pub deliveries: Vec<ChargeDelivery>,
}
