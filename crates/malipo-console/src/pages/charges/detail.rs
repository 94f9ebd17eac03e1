//! A charge's page: its fields, its state history with times (refreshed on its own while the
//! charge is not final: `/console/charges/{id}/timeline`), its `charge.*` webhook deliveries
//! with their attempts, and, once completed with something left, the "Refund" form.

use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use askama::Template;
use malipo_auth::Permission;
use malipo_charges::{Charge, ChargeState};
use malipo_core::MinorUnit;
use malipo_countries::Country;
use malipo_payouts::ReversalOriginal;
use malipo_service::{ChargeDelivery, SignedIn};
use malipo_webhooks::DeliveryState;
use serde::Deserialize;

use super::view::{country, Timeline};
use crate::chrome::{page, page_response, Chrome, Notice};
use crate::format;
use crate::idem;
use crate::pages::form::FieldErrors;
use crate::session::{console_of, Person};
use crate::{run, ConsoleError};

/// A field of the charge.
struct Fact {
    label: &'static str,
    value: String,
}

/// An attempt (or a delivery still waiting for its first) as a row of the deliveries table.
struct DeliveryRow {
    event: String,
    endpoint: String,
    delivery: String,
    time: String,
    status: String,
    latency: String,
    error: String,
}

/// The "Refund" form: what it shows (the remaining amount by default, or what was posted) and
/// its one-time key.
struct RefundForm {
    key: String,
    amount: String,
    reason: String,
    remaining: String,
    errors: FieldErrors,
}

#[derive(Template)]
#[template(path = "charges/detail.html")]
struct DetailPage {
    chrome: Chrome,
    id: String,
    facts: Vec<Fact>,
    timeline: Timeline,
    live: Option<String>,
    deliveries: Vec<DeliveryRow>,
    refund: Option<RefundForm>,
    fully_refunded: bool,
    /// Whether the charge has had events (moves past `pending`) to deliver.
    moved: bool,
}

/// The state history alone, for the page's live region.
#[derive(Template)]
#[template(path = "charges/timeline.html")]
struct TimelineFragment {
    timeline: Timeline,
}

/// `?done=refund&reversal=rv_…`: the notice after a refund.
#[derive(Debug, Default, Deserialize)]
pub(super) struct DetailQuery {
    #[serde(default)]
    done: Option<String>,
    #[serde(default)]
    reversal: Option<String>,
}

/// A refund form that was refused: shown again with its values, its key and its errors.
pub(super) struct Refused {
    /// As posted.
    pub(super) amount: String,
    /// As posted.
    pub(super) reason: String,
    /// The form's one-time key (kept: the corrected form still acts once).
    pub(super) key: String,
    /// Beside their fields.
    pub(super) errors: FieldErrors,
}

/// `GET /console/charges/{id}`.
pub(super) async fn charge_page(
    req: HttpRequest,
    who: Person,
    path: web::Path<String>,
    query: web::Query<DetailQuery>,
) -> Result<HttpResponse, ConsoleError> {
    who.require(Permission::Read)?;
    let q = query.into_inner();
    let reversal = q.reversal.filter(|_| q.done.as_deref() == Some("refund"));
    show(&req, &who, &path.into_inner(), reversal, None).await
}

/// `GET /console/charges/{id}/timeline`: the state history as an HTML fragment.
pub(super) async fn timeline(req: HttpRequest, who: Person, path: web::Path<String>) -> Result<HttpResponse, ConsoleError> {
    who.require(Permission::Read)?;
    let console = console_of(&req)?;
    let country = country(&console, &who)?;
    let (principal, id) = (who.principal(), path.into_inner());
    let activity = run(&console, move |p| p.charges().activity(&principal, &id)).await?;
    Ok(page(&TimelineFragment { timeline: Timeline::new(&activity.history, activity.charge.state.is_final(), &country) }))
}

/// The charge's page for `who`: after a refund (`reversal`, its notice), or with a refused
/// refund form (status 422).
pub(super) async fn show(
    req: &HttpRequest,
    who: &SignedIn,
    id: &str,
    reversal: Option<String>,
    refused: Option<Refused>,
) -> Result<HttpResponse, ConsoleError> {
    let console = console_of(req)?;
    let country = country(&console, who)?;
    let (principal, charge_id) = (who.principal(), id.to_owned());
    let (activity, done) = run(&console, move |p| {
        let activity = p.charges().activity(&principal, &charge_id)?;
        // The notice names a refund of this charge only.
        let done = reversal
            .and_then(|r| p.reversals().get(&principal, &r).ok())
            .filter(|r| r.original == ReversalOriginal::Charge(activity.charge.id.clone()));
        Ok((activity, done))
    })
    .await?;
    let c = &activity.charge;
    let id = c.id.to_string();
    let remaining = c.amount.checked_sub(c.amount_reversed).unwrap_or(MinorUnit::ZERO);
    let completed = c.state == ChargeState::Completed;
    let (status, notice) = match (&refused, &done) {
        (Some(_), _) => (StatusCode::UNPROCESSABLE_ENTITY, Notice::alert("The refund was not made. See the form below.")),
        (None, Some(r)) => (StatusCode::OK, Notice::done(format!("Refund of {} done: {}", format::money(r.amount, r.currency), r.id))),
        (None, None) => (StatusCode::OK, None),
    };
    let refund = (who.may(Permission::Refund) && completed && (remaining.get() > 0 || refused.is_some())).then(|| {
        let remaining_text = format::money(remaining, c.currency);
        match refused {
            Some(r) => RefundForm { key: r.key, amount: r.amount, reason: r.reason, remaining: remaining_text, errors: r.errors },
            None => RefundForm {
                key: idem::new_key(),
                amount: c.currency.format_amount(remaining),
                reason: String::new(),
                remaining: remaining_text,
                errors: FieldErrors::none(),
            },
        }
    });
    let page = DetailPage {
        chrome: Chrome::new(who, "Charges", format!("Charge {id}"), &format!("/console/charges/{id}")).with_notice(notice),
        facts: facts(c, &country),
        timeline: Timeline::new(&activity.history, c.state.is_final(), &country),
        live: (!c.state.is_final()).then(|| format!("/console/charges/{id}/timeline")),
        deliveries: activity.deliveries.iter().flat_map(|d| delivery_rows(d, &country)).collect(),
        fully_refunded: completed && remaining.get() == 0,
        moved: activity.history.len() > 1,
        refund,
        id,
    };
    Ok(page_response(status, &page))
}

fn facts(c: &Charge, country: &Country) -> Vec<Fact> {
    let none = || "—".to_owned();
    let time = |t| format::time(t, country);
    let mut facts = vec![
        Fact { label: "State", value: c.state.as_str().to_owned() },
        Fact { label: "Amount", value: format::money(c.amount, c.currency) },
        Fact { label: "Fee", value: format::money(c.fee, c.currency) },
        Fact { label: "Currency", value: c.currency.to_string() },
        Fact { label: "Payer", value: c.payer_msisdn.to_string() },
        Fact { label: "Reference", value: c.reference.clone() },
        Fact { label: "Description", value: c.description.clone().filter(|d| !d.is_empty()).unwrap_or_else(none) },
        Fact { label: "Failure reason", value: c.failure_reason.map_or_else(none, |r| r.as_str().to_owned()) },
        Fact { label: "Amount reversed", value: format::money(c.amount_reversed, c.currency) },
        Fact { label: "Transaction", value: c.transaction_id.as_ref().map_or_else(none, ToString::to_string) },
        Fact { label: "Created", value: time(c.created_at) },
    ];
    if c.state.is_final() {
        facts.push(Fact { label: "Completed", value: c.completed_at.map_or_else(none, time) });
    } else {
        facts.push(Fact { label: "Expires", value: time(c.expires_at) });
    }
    facts.push(Fact { label: "Last changed", value: time(c.updated_at) });
    facts
}

/// A delivery's rows: one per attempt, or one saying it waits.
fn delivery_rows(d: &ChargeDelivery, country: &Country) -> Vec<DeliveryRow> {
    let endpoint = d.endpoint_url.clone().unwrap_or_else(|| d.delivery.endpoint_id.to_string());
    let delivery = match (d.delivery.state, d.delivery.next_attempt_at) {
        (DeliveryState::Pending, Some(next)) => format!("pending, next attempt {}", format::time(next, country)),
        (state, _) => state.as_str().to_owned(),
    };
    if d.attempts.is_empty() {
        return vec![DeliveryRow {
            event: d.event_kind.clone(),
            endpoint,
            delivery,
            time: "no attempt yet".to_owned(),
            status: "—".to_owned(),
            latency: "—".to_owned(),
            error: "—".to_owned(),
        }];
    }
    d.attempts
        .iter()
        .map(|a| DeliveryRow {
            event: d.event_kind.clone(),
            endpoint: endpoint.clone(),
            delivery: delivery.clone(),
            time: format::time(a.attempted_at, country),
            status: a.status.map_or_else(|| "—".to_owned(), |s| s.to_string()),
            latency: format!("{} ms", a.latency_ms),
            error: a.error.clone().unwrap_or_else(|| "—".to_owned()),
        })
        .collect()
}
