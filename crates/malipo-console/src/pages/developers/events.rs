//! Events of the session's mode, newest first (filtered by "Type", paginated), and an event's
//! page: its payload summary, its delivery attempts (time, endpoint, status, latency, error) and
//! "Redeliver" (the API's idempotent redelivery, with the form's one-time key).

use std::collections::HashMap;
use std::net::IpAddr;

use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use askama::Template;
use malipo_auth::Permission;
use malipo_core::Currency;
use malipo_service::{NewRedelivery, Redeliver};
use malipo_webhooks::{Event, EVENT_KINDS};
use serde::Deserialize;

use crate::chrome::{page, page_response, see_other, url_encode, Chrome, Notice};
use crate::csrf::Posted;
use crate::pages::form::FieldErrors;
use crate::pages::local_time::LocalTime;
use crate::session::{console_of, Person};
use crate::{csrf_forms, format, idem, run, Console, ConsoleError};

const PAGE_SIZE: usize = 20;

/// An event as listed.
struct EventRow {
    id: String,
    kind: String,
    object_id: String,
    created: String,
}

/// One option of the "Type" filter.
struct TypeOption {
    value: &'static str,
    selected: bool,
}

#[derive(Template)]
#[template(path = "developers/events.html")]
struct EventsPage {
    chrome: Chrome,
    kind: String,
    types: Vec<TypeOption>,
    errors: FieldErrors,
    rows: Vec<EventRow>,
    next: Option<String>,
}

/// One delivery attempt as shown.
struct AttemptRow {
    at: String,
    endpoint: String,
    status: String,
    latency: String,
    error: String,
}

/// One fact of the event's payload summary.
struct Fact {
    label: &'static str,
    value: String,
}

#[derive(Template)]
#[template(path = "developers/event.html")]
struct EventPage {
    chrome: Chrome,
    facts: Vec<Fact>,
    data: String,
    attempts: Vec<AttemptRow>,
    deliveries: usize,
    event_id: String,
    idempotency_key: String,
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct EventsQuery {
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    cursor: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct EventQuery {
    #[serde(default)]
    redelivered: Option<usize>,
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct RedeliverForm {
    #[serde(default)]
    csrf_token: String,
    #[serde(default)]
    idempotency_key: String,
}
csrf_forms!(RedeliverForm);

fn row(e: &Event, clock: &LocalTime) -> EventRow {
    EventRow { id: e.id.to_string(), kind: e.kind.clone(), object_id: e.object_id.clone(), created: clock.time(e.created_at) }
}

/// `GET /console/developers/events?type=&cursor=`.
pub(super) async fn list(req: HttpRequest, who: Person, query: web::Query<EventsQuery>) -> Result<HttpResponse, ConsoleError> {
    who.require(Permission::ManageWebhooks)?;
    let console = console_of(&req)?;
    let EventsQuery { kind, cursor } = query.into_inner();
    let kind = kind.filter(|k| !k.is_empty());
    let types = |chosen: &str| EVENT_KINDS.iter().map(|k| TypeOption { value: k, selected: *k == chosen }).collect::<Vec<_>>();
    let mut chrome = Chrome::new(&who, "Developers", "Events", "/console/developers/events");
    if let Some(k) = kind.as_deref().filter(|k| !EVENT_KINDS.contains(k)) {
        let errors = FieldErrors::one("type", "Choose one of the event kinds.");
        chrome.notice = Notice::alert("The filter was not applied.");
        let shown = EventsPage { chrome, kind: k.to_owned(), types: types(""), errors, rows: Vec::new(), next: None };
        return Ok(page_response(StatusCode::UNPROCESSABLE_ENTITY, &shown));
    }
    let principal = who.principal();
    let k = kind.clone();
    let found = run(&console, move |p| p.webhooks().recent_events(&principal, k.as_deref(), cursor.as_deref(), PAGE_SIZE)).await;
    let events = match found {
        Ok(events) => events,
        Err(ConsoleError::Service(malipo_service::ServiceError::Validation(_))) => {
            return Err(ConsoleError::BadForm("the cursor is not valid".into()))
        }
        Err(e) => return Err(e),
    };
    let clock = LocalTime::of(&console, &who);
    let kind = kind.unwrap_or_default();
    let next = events.next_cursor.as_deref().map(|c| {
        let filter = if kind.is_empty() { String::new() } else { format!("type={}&", url_encode(&kind)) };
        format!("/console/developers/events?{filter}cursor={}", url_encode(c))
    });
    let rows = events.data.iter().map(|e| row(e, &clock)).collect();
    Ok(page(&EventsPage { chrome, types: types(&kind), kind, errors: FieldErrors::none(), rows, next }))
}

/// An amount of an event's summary as money (`KES 1,250.00`), or as written.
fn summary_amount(amount: &str, currency: Option<&str>) -> String {
    match currency.and_then(|c| Currency::new(c).ok()) {
        Some(c) => c.parse_amount(amount).map_or_else(|_| format!("{c} {amount}"), |v| format::money(v, c)),
        None => amount.to_owned(),
    }
}

/// `GET /console/developers/events/{id}`.
pub(super) async fn detail(
    req: HttpRequest,
    who: Person,
    path: web::Path<String>,
    query: web::Query<EventQuery>,
) -> Result<HttpResponse, ConsoleError> {
    who.require(Permission::ManageWebhooks)?;
    let console = console_of(&req)?;
    let principal = who.principal();
    let id = path.into_inner();
    let (detail, endpoints) = run(&console, move |p| {
        let detail = p.webhooks().event(&principal, &id)?;
        Ok((detail, p.webhooks().endpoints(&principal)?))
    })
    .await?;
    let clock = LocalTime::of(&console, &who);
    let urls: HashMap<String, String> = endpoints.into_iter().map(|e| (e.id.to_string(), e.url)).collect();
    let e = &detail.event;
    let mut facts = vec![
        Fact { label: "Type", value: e.kind.clone() },
        Fact { label: "Object", value: e.object_id.clone() },
        Fact { label: "Time", value: clock.time(e.created_at) },
        Fact { label: "Mode", value: e.mode.to_string() },
    ];
    let s = &e.summary;
    if let Some(a) = &s.amount {
        facts.push(Fact { label: "Amount", value: summary_amount(a, s.currency.as_deref()) });
    }
    if let Some(state) = &s.state {
        facts.push(Fact { label: "State", value: state.clone() });
    }
    if let Some(r) = &s.reference {
        facts.push(Fact { label: "Reference", value: r.clone() });
    }
    let attempts = detail
        .attempts
        .iter()
        .rev()
        .map(|a| AttemptRow {
            at: clock.time(a.attempted_at),
            endpoint: urls.get(a.endpoint_id.as_str()).cloned().unwrap_or_else(|| a.endpoint_id.to_string()),
            status: a.status.map_or_else(|| "No answer".to_owned(), |s| s.to_string()),
            latency: format!("{} ms", a.latency_ms),
            error: a.error.clone().unwrap_or_default(),
        })
        .collect();
    let mut chrome = Chrome::new(&who, "Developers", format!("Event {}", e.id), &format!("/console/developers/events/{}", e.id));
    chrome.notice = match query.redelivered {
        Some(0) => Notice::done("No enabled endpoint receives this kind of event: nothing was queued."),
        Some(1) => Notice::done("Queued again for 1 endpoint."),
        Some(n) => Notice::done(format!("Queued again for {n} endpoints.")),
        None => None,
    };
    let page_of = EventPage {
        chrome,
        facts,
        data: String::from_utf8_lossy(&(console.event_data)(e)).into_owned(),
        attempts,
        deliveries: detail.deliveries.len(),
        event_id: e.id.to_string(),
        idempotency_key: idem::new_key(),
    };
    Ok(page(&page_of))
}

/// The use case of "Redeliver": where to go next.
async fn redeliver_event(console: &Console, who: &Person, id: String, form: &RedeliverForm, ip: IpAddr) -> Result<String, ConsoleError> {
    let key = idem::by(idem::idem(who, "redeliver", &form.idempotency_key, &[("event", id.as_str())])?, who, ip, "event.redelivered");
    let principal = who.principal();
    let outcome = run(console, move |p| {
        let command = p.parse::<Redeliver>(&principal, &NewRedelivery { event_id: id, endpoint_id: None })?;
        idem::page(p.webhooks().redeliver(&principal, &command, &key), |r| {
            format!("/console/developers/events/{}?redelivered={}", r.event_id, r.endpoint_ids.len())
        })
    })
    .await?;
    Ok(idem::location(&outcome))
}

/// `POST /console/developers/events/{id}/redeliver`.
pub(super) async fn redeliver(
    req: HttpRequest,
    path: web::Path<String>,
    posted: Posted<RedeliverForm>,
) -> Result<HttpResponse, ConsoleError> {
    let Posted { person: who, form, ip } = posted;
    who.require(Permission::ManageWebhooks)?;
    let console = console_of(&req)?;
    let to = redeliver_event(&console, &who, path.into_inner(), &form, ip).await?;
    Ok(see_other(&to))
}
