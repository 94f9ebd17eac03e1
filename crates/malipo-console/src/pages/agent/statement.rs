//! The float's statement for a period ("From", "To": local calendar days, "To" included) and
//! "Export CSV": the API's transaction export of the float for the same days, streamed a batch
//! at a time through the service's one CSV writer (the file the API gives, byte for byte).

use actix_web::http::StatusCode;
use actix_web::web::Bytes;
use actix_web::{web, HttpRequest, HttpResponse};
use askama::Template;
use futures_util::{stream, StreamExt};
use malipo_auth::Permission;
use malipo_service::csv_files::{transaction_rows, transactions_header};
use malipo_service::{ExportRun, Platform, TransactionFilter};
use serde::Deserialize;

use super::float::{row, Row};
use super::gate::{require_agent, FLOAT};
use crate::chrome::{page_response, Chrome};
use crate::pages::form::FieldErrors;
use crate::pages::local_time::LocalTime;
use crate::pages::money_common::{given, href, parse_bound, End, PAGE_SIZE};
use crate::session::{console_of, Person};
use crate::{run, ConsoleError};

/// `/console/float/statement`, `/console/float/statement/export`.
pub(super) fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/float/statement", web::get().to(statement_page)).route("/float/statement/export", web::get().to(export));
}

const PATH: &str = "/console/float/statement";
/// Rows read per step of an export (one short read transaction each), as the API reads them.
const EXPORT_BATCH: usize = 2_000;

#[derive(Clone, Debug, Default, Deserialize)]
struct StatementQuery {
    from: Option<String>,
    to: Option<String>,
    cursor: Option<String>,
}

/// The period as the use case's filter of the float, and what in it is not a date.
fn read_filter(q: &StatementQuery, clock: &LocalTime) -> (TransactionFilter, FieldErrors) {
    let mut errors = FieldErrors::none();
    let mut bound = |field: &str, label: &str, end: End, text: Option<&str>| {
        given(text).and_then(|t| parse_bound(t, clock, end, label).map_err(|m| errors.add(field, m)).ok())
    };
    let from = bound("from", "From", End::Start, q.from.as_deref());
    let to = bound("to", "To", End::Finish, q.to.as_deref());
    if let (Some(f), Some(t)) = (from, to) {
        if t <= f {
            errors.add("to", "To must not be before From.");
        }
    }
    (TransactionFilter { from, to, kind: None, account: Some(FLOAT.to_owned()) }, errors)
}

#[derive(Template)]
#[template(path = "agent/statement.html")]
struct StatementPage {
    chrome: Chrome,
    from: String,
    to: String,
    errors: FieldErrors,
    rows: Vec<Row>,
    export: Option<String>,
    next: Option<String>,
    first: Option<String>,
}

async fn statement_page(req: HttpRequest, who: Person, query: web::Query<StatementQuery>) -> Result<HttpResponse, ConsoleError> {
    require_agent(&who)?;
    let console = console_of(&req)?;
    let clock = LocalTime::of(&console, &who);
    let q = query.into_inner();
    // Without a period: today.
    let today = clock.date(console.platform.now());
    let q = if given(q.from.as_deref()).is_none() && given(q.to.as_deref()).is_none() {
        StatementQuery { from: Some(today.clone()), to: Some(today), cursor: q.cursor }
    } else {
        q
    };
    let (filter, errors) = read_filter(&q, &clock);
    let cursor = given(q.cursor.as_deref()).map(str::to_owned);
    let (from, to) = (given(q.from.as_deref()), given(q.to.as_deref()));
    let params = [("from", from), ("to", to)];
    let mut page = StatementPage {
        chrome: Chrome::new(&who, "Float", "Statement", PATH),
        from: from.unwrap_or_default().to_owned(),
        to: to.unwrap_or_default().to_owned(),
        errors,
        rows: Vec::new(),
        export: None,
        next: None,
        first: None,
    };
    if !page.errors.is_empty() {
        return Ok(page_response(StatusCode::UNPROCESSABLE_ENTITY, &page));
    }
    let principal = who.principal();
    let after = cursor.clone();
    let found = run(&console, move |p| p.transactions().list(&principal, &filter, after.as_deref(), PAGE_SIZE)).await?;
    page.rows = found.data.iter().map(|t| row(t, &clock)).collect();
    page.next = found.next_cursor.as_deref().map(|c| href(PATH, &[("from", from), ("to", to), ("cursor", Some(c))]));
    page.first = cursor.map(|_| href(PATH, &params));
    page.export = who.may(Permission::Export).then(|| href("/console/float/statement/export", &params));
    Ok(page_response(StatusCode::OK, &page))
}

/// The file's name: `float[-from][-to].csv`, letters and digits only.
fn file_name(q: &StatementQuery) -> String {
    let mut name = String::from("float");
    for part in [q.from.as_deref(), q.to.as_deref()].into_iter().filter_map(given) {
        name.push('-');
        name.extend(part.chars().filter(|c| c.is_ascii_alphanumeric()).take(32));
    }
    name.push_str(".csv");
    name
}

/// `GET /console/float/statement/export`: the CSV of the float's transactions of the period,
/// header first, then the rows a batch at a time, each batch read in its own short transaction.
async fn export(req: HttpRequest, who: Person, query: web::Query<StatementQuery>) -> Result<HttpResponse, ConsoleError> {
    require_agent(&who)?;
    who.require(Permission::Export)?;
    let console = console_of(&req)?;
    let clock = LocalTime::of(&console, &who);
    let q = query.into_inner();
    let (filter, errors) = read_filter(&q, &clock);
    if let Some(problem) = errors.of("from").or_else(|| errors.of("to")) {
        return Err(ConsoleError::BadForm(problem.to_owned()));
    }
    let principal = who.principal();
    let started = run(&console, move |p| p.transactions().export(&principal, &filter)).await?;
    let platform = console.platform.clone();
    let rows = stream::try_unfold(Some((platform, started)), |next| async move {
        let Some((platform, started)) = next else { return Ok(None) };
        let (platform, started, batch) = web::block(move || {
            let mut started: ExportRun = started;
            let batch = platform.transactions().export_batch(&mut started, EXPORT_BATCH);
            (platform, started, batch)
        })
        .await
        .map_err(|e| export_failed(&e.to_string()))?;
        let batch = batch.map_err(|e| export_failed(&e.to_string()))?;
        if batch.is_empty() {
            return Ok(None);
        }
        Ok::<_, actix_web::Error>(Some((Bytes::from(transaction_rows(&batch)), Some::<(Platform, ExportRun)>((platform, started)))))
    });
    let header = Bytes::from(transactions_header());
    let body = stream::once(async move { Ok::<_, actix_web::Error>(header) }).chain(rows);
    Ok(HttpResponse::Ok()
        .content_type("text/csv; charset=utf-8")
        .insert_header(("Content-Disposition", format!("attachment; filename=\"{}\"", file_name(&q))))
        .streaming(body))
}

/// An export that fails after its first bytes went out can only stop (a cut download).
fn export_failed(why: &str) -> actix_web::Error {
    tracing::error!(request_id = %crate::chrome::current_request_id(), error = why, "console float statement export failed midway");
    actix_web::error::ErrorInternalServerError("export failed")
}
