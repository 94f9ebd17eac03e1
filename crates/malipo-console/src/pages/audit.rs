//! Audit log (console contract sections 2 and 4): what people did, newest first, filtered by
//! "Action" (a prefix), "From" and "To" (local dates, both included) and, for operators, who see
//! every organisation's, "Organisation"; paginated; "Export CSV" of the same filter (written by
//! [`crate::csv`], so that no field runs as a formula). Needs `Permission::ViewAudit`.

use actix_web::http::StatusCode;
use actix_web::web::Bytes;
use actix_web::{web, HttpRequest, HttpResponse};
use askama::Template;
use futures_util::stream;
use malipo_auth::{OrgKind, Permission};
use malipo_core::OrgId;
use malipo_service::{AuditEntry, AuditFilter, ServiceError};
use serde::Deserialize;

use super::form::FieldErrors;
use super::local_time::LocalTime;
use crate::chrome::{page_response, url_encode, Chrome, Notice};
use crate::session::{console_of, Person};
use crate::{csv, run, ConsoleError};

const PATH: &str = "/console/audit";
const PAGE_SIZE: usize = 20;
const EXPORT_PAGE: usize = 500;

/// `/console/audit`, `/console/audit/export`.
pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/audit", web::get().to(audit_page)).route("/audit/export", web::get().to(export));
}

/// The filter as typed (a GET form).
#[derive(Clone, Debug, Default, Deserialize)]
struct AuditQuery {
    #[serde(default)]
    action: String,
    #[serde(default)]
    from: String,
    #[serde(default)]
    to: String,
    #[serde(default)]
    org: String,
    #[serde(default)]
    cursor: Option<String>,
}

impl AuditQuery {
    /// The filter's part of a query string (`action=…&from=…`), without the cursor.
    fn query_string(&self, operator: bool) -> String {
        let mut parts = vec![("action", &self.action), ("from", &self.from), ("to", &self.to)];
        if operator {
            parts.push(("org", &self.org));
        }
        parts.into_iter().map(|(k, v)| format!("{k}={}", url_encode(v.trim()))).collect::<Vec<_>>().join("&")
    }
}

/// An entry as shown.
struct Row {
    time: String,
    org: String,
    person: String,
    action: String,
    object: String,
    detail: String,
    ip: String,
    mode: String,
}

#[derive(Template)]
#[template(path = "audit/index.html")]
struct AuditPage {
    chrome: Chrome,
    operator: bool,
    query: AuditQuery,
    errors: FieldErrors,
    rows: Vec<Row>,
    next: Option<String>,
    export: String,
}

fn is_operator(who: &Person) -> bool {
    who.org.kind == OrgKind::Operator && who.may(Permission::BackOffice)
}

/// The use case's filter from the typed one, or each field's error.
fn filter_of(query: &AuditQuery, clock: &LocalTime, operator: bool) -> Result<AuditFilter, FieldErrors> {
    let mut errors = FieldErrors::none();
    let mut filter = AuditFilter { action: Some(query.action.trim().to_owned()).filter(|a| !a.is_empty()), ..AuditFilter::default() };
    let date = |field: &str, text: &str, errors: &mut FieldErrors, end: bool| {
        if text.trim().is_empty() {
            return None;
        }
        let at = if end { clock.day_end(text) } else { clock.day_start(text) };
        if at.is_none() {
            errors.add(field, "Enter a date as YYYY-MM-DD.");
        }
        at
    };
    filter.from = date("from", &query.from, &mut errors, false);
    filter.to = date("to", &query.to, &mut errors, true);
    if let (Some(from), Some(to)) = (filter.from, filter.to) {
        if to <= from {
            errors.add("to", "The end date must not be before the start date.");
        }
    }
    if operator && !query.org.trim().is_empty() {
        match OrgId::parse(query.org.trim()) {
            Ok(id) => filter.org_id = Some(id),
            Err(_) => errors.add("org", "Enter an organisation id like org_…"),
        }
    }
    if errors.is_empty() {
        Ok(filter)
    } else {
        Err(errors)
    }
}

fn mode_text(e: &AuditEntry) -> String {
    e.mode.map(|m| m.to_string()).unwrap_or_default()
}

fn row(e: &AuditEntry, clock: &LocalTime) -> Row {
    Row {
        time: clock.time(e.created_at),
        org: e.org_id.as_ref().map(ToString::to_string).unwrap_or_default(),
        person: e.actor.clone(),
        action: e.action.clone(),
        object: e.object_id.clone().unwrap_or_default(),
        detail: e.detail.clone(),
        ip: e.ip.clone().unwrap_or_default(),
        mode: mode_text(e),
    }
}

async fn audit_page(req: HttpRequest, who: Person, query: web::Query<AuditQuery>) -> Result<HttpResponse, ConsoleError> {
    who.require(Permission::ViewAudit)?;
    let console = console_of(&req)?;
    let query = query.into_inner();
    let operator = is_operator(&who);
    let clock = LocalTime::of(&console, &who);
    let filters = query.query_string(operator);
    let chrome = Chrome::new(&who, "Audit log", "Audit log", PATH);
    let export = format!("/console/audit/export?{filters}");
    let filter = match filter_of(&query, &clock, operator) {
        Ok(f) => f,
        Err(errors) => {
            let chrome = chrome.with_notice(Notice::alert("The filter was not applied."));
            let shown = AuditPage { chrome, operator, query, errors, rows: Vec::new(), next: None, export };
            return Ok(page_response(StatusCode::UNPROCESSABLE_ENTITY, &shown));
        }
    };
    let (w, cursor) = (who.0.clone(), query.cursor.clone().filter(|c| !c.is_empty()));
    let found = match run(&console, move |p| p.people().audit_log(&w, &filter, cursor.as_deref(), PAGE_SIZE)).await {
        Ok(found) => found,
        Err(ConsoleError::Service(ServiceError::Validation(_))) => return Err(ConsoleError::BadForm("the cursor is not valid".into())),
        Err(e) => return Err(e),
    };
    let next = found.next_cursor.as_deref().map(|c| format!("{PATH}?{filters}&cursor={}", url_encode(c)));
    let rows = found.data.iter().map(|e| row(e, &clock)).collect();
    Ok(page_response(StatusCode::OK, &AuditPage { chrome, operator, query, errors: FieldErrors::none(), rows, next, export }))
}

const HEADER: [&str; 8] = ["time", "organisation", "person", "action", "object", "detail", "ip_address", "mode"];

fn csv_record(e: &AuditEntry) -> String {
    csv::row(&[
        e.created_at.to_rfc3339(),
        e.org_id.as_ref().map(ToString::to_string).unwrap_or_default(),
        e.actor.clone(),
        e.action.clone(),
        e.object_id.clone().unwrap_or_default(),
        e.detail.clone(),
        e.ip.clone().unwrap_or_default(),
        mode_text(e),
    ])
}

/// `GET /console/audit/export?…`: the filter's every entry, newest first, as CSV, streamed a
/// page at a time (a failure midway ends the body short, never as a whole file).
async fn export(req: HttpRequest, who: Person, query: web::Query<AuditQuery>) -> Result<HttpResponse, ConsoleError> {
    who.require(Permission::ViewAudit)?;
    let console = console_of(&req)?;
    let clock = LocalTime::of(&console, &who);
    let filter = filter_of(&query, &clock, is_operator(&who))
        .map_err(|_| ConsoleError::BadForm("the filter is not valid: correct it on the Audit log page".into()))?;
    let w = who.0.clone();
    // The first page before the answer starts, so that a refusal is still a page.
    let (f, w1) = (filter.clone(), w.clone());
    let first = run(&console, move |p| p.people().audit_log(&w1, &f, None, EXPORT_PAGE)).await?;
    let mut body = csv::row(&HEADER);
    first.data.iter().for_each(|e| body.push_str(&csv_record(e)));
    let head = stream::once(async move { Ok::<_, actix_web::Error>(Bytes::from(body)) });
    let rest = stream::unfold(first.next_cursor, move |cursor| {
        let (console, filter, w) = (console.clone(), filter.clone(), w.clone());
        async move {
            let cursor = cursor?;
            match run(&console, move |p| p.people().audit_log(&w, &filter, Some(&cursor), EXPORT_PAGE)).await {
                Ok(page) => {
                    let chunk: String = page.data.iter().map(csv_record).collect();
                    Some((Ok(Bytes::from(chunk)), page.next_cursor))
                }
                Err(e) => {
                    tracing::error!(error = %e, "audit export failed midway");
                    Some((Err(actix_web::error::ErrorInternalServerError("export failed")), None))
                }
            }
        }
    });
    Ok(HttpResponse::Ok()
        .content_type("text/csv; charset=utf-8")
        .insert_header(("Content-Disposition", "attachment; filename=\"audit-log.csv\""))
        .streaming(futures_util::StreamExt::chain(head, rest)))
}
