//! Transactions (console contract section 4, Merchant): the table of `GET /transactions` with the
//! filters "Type", "Account", "From" and "To" (local calendar days, "To" included), and "Export
//! CSV": the API's export of the same dates and account (`GET /transactions/export`, which has no
//! type filter), streamed a batch at a time exactly as the API streams it, through the service's
//! one CSV writer.

use actix_web::http::StatusCode;
use actix_web::web::Bytes;
use actix_web::{web, HttpRequest, HttpResponse};
use askama::Template;
use futures_util::{stream, StreamExt};
use malipo_auth::Permission;
use malipo_ledger::{Transaction, TRANSACTION_TYPES};
use malipo_service::csv_files::{transaction_rows, transactions_header};
use malipo_service::{ExportRun, Page, Platform, ServiceError, TransactionFilter};
use serde::Deserialize;

use super::form::FieldErrors;
use super::local_time::LocalTime;
use super::money_common::{choices, form_errors, given, href, parse_bound, Choice, End, PAGE_SIZE};
use crate::chrome::{page_response, Chrome, Notice};
use crate::session::{console_of, Person};
use crate::{format, run, Console, ConsoleError};

/// `/console/transactions`, `/console/transactions/export`.
pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/transactions", web::get().to(list_page)).route("/transactions/export", web::get().to(export));
}

const PATH: &str = "/console/transactions";
/// Rows read per step of an export (one short read transaction each), as the API reads them.
const EXPORT_BATCH: usize = 2_000;
const ACCOUNTS: [(&str, &str); 3] = [("", "Every account"), ("collection", "Collection"), ("payout", "Payout")];

/// The filter's query: `type`, `account`, `from`, `to` (a local day, or an RFC 3339 instant),
/// and the page's `cursor`.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct TxQuery {
    #[serde(rename = "type")]
    kind: Option<String>,
    account: Option<String>,
    from: Option<String>,
    to: Option<String>,
    cursor: Option<String>,
}

/// The query as the use case's filter, and what in it is not a date.
fn read_filter(q: &TxQuery, clock: &LocalTime) -> (TransactionFilter, FieldErrors) {
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
    let filter = TransactionFilter {
        from,
        to,
        kind: given(q.kind.as_deref()).map(str::to_owned),
        account: given(q.account.as_deref()).map(str::to_owned),
    };
    (filter, errors)
}

/// One transaction as a row of the table.
struct Row {
    id: String,
    time: String,
    kind: &'static str,
    source: String,
    source_href: Option<String>,
    account: &'static str,
    amount: String,
    fee: String,
    net: String,
    balance_after: String,
}

/// The console's page of what caused a transaction, where it has one.
fn source_href(source: &str) -> Option<String> {
    let section = match source.split_once('_').map(|(prefix, _)| prefix) {
        Some("ch") => "charges",
        Some("po") => "payouts",
        Some("pr") => "payment-requests",
        _ => return None,
    };
    source.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-').then(|| format!("/console/{section}/{source}"))
}

fn row(t: &Transaction, clock: &LocalTime) -> Row {
    let c = t.currency;
    Row {
        id: t.id.to_string(),
        time: clock.time(t.created_at),
        kind: t.type_name(),
        source: t.source_ref.clone(),
        source_href: source_href(&t.source_ref),
        account: t.account_kind.as_str(),
        amount: format::money(t.amount, c),
        fee: format::money(t.fee, c),
        net: format::money(t.net, c),
        balance_after: format::money(t.balance_after, c),
    }
}

#[derive(Template)]
#[template(path = "transactions/list.html")]
struct ListPage {
    chrome: Chrome,
    types: Vec<Choice>,
    accounts: Vec<Choice>,
    from: String,
    to: String,
    errors: FieldErrors,
    rows: Vec<Row>,
    shown: bool,
    export: Option<String>,
    typed: bool,
    next: Option<String>,
    first: Option<String>,
}

/// The type filter's choices: any, then the contract's nine types.
fn type_choices(current: Option<&str>) -> Vec<Choice> {
    let mut all: Vec<(&'static str, &'static str)> = vec![("", "Any type")];
    all.extend(TRANSACTION_TYPES.iter().map(|t| (*t, *t)));
    choices(&all, current)
}

async fn list_page(req: HttpRequest, who: Person, query: web::Query<TxQuery>) -> Result<HttpResponse, ConsoleError> {
    who.require(Permission::Read)?;
    let console = console_of(&req)?;
    let clock = LocalTime::of(&console, &who);
    let q = query.into_inner();
    let (filter, mut errors) = read_filter(&q, &clock);
    let cursor = given(q.cursor.as_deref()).map(str::to_owned);
    let mut notice = None;
    let mut found = None;
    if errors.is_empty() {
        match list(&console, &who, filter, cursor.clone()).await {
            Ok(page) => found = Some(page),
            Err(ConsoleError::Service(e @ ServiceError::Validation(_))) => {
                errors = form_errors(&e, &[("type", "type", "Type"), ("account", "account", "Account")]).unwrap_or_default();
                if errors.of("cursor").is_some() {
                    notice = Notice::alert("That page link is not valid: start again from the first page.");
                }
            }
            Err(e) => return Err(e),
        }
    }
    let (kind, account) = (given(q.kind.as_deref()), given(q.account.as_deref()));
    let (from, to) = (given(q.from.as_deref()), given(q.to.as_deref()));
    let params = [("type", kind), ("account", account), ("from", from), ("to", to)];
    let status = if found.is_some() { StatusCode::OK } else { StatusCode::UNPROCESSABLE_ENTITY };
    let rows = found.as_ref().map_or_else(Vec::new, |p| p.data.iter().map(|t| row(t, &clock)).collect());
    let next = found.as_ref().and_then(|p| p.next_cursor.as_deref()).map(|c| {
        let mut with_cursor = params.to_vec();
        with_cursor.push(("cursor", Some(c)));
        href(PATH, &with_cursor)
    });
    let export = (who.may(Permission::Export) && found.is_some())
        .then(|| href("/console/transactions/export", &[("account", account), ("from", from), ("to", to)]));
    let page = ListPage {
        chrome: Chrome::new(&who, "Transactions", "Transactions", PATH).with_notice(notice),
        types: type_choices(kind),
        accounts: choices(&ACCOUNTS, account),
        from: from.unwrap_or_default().to_owned(),
        to: to.unwrap_or_default().to_owned(),
        errors,
        rows,
        shown: found.is_some(),
        export,
        typed: kind.is_some(),
        next,
        first: cursor.filter(|_| found.is_some()).map(|_| href(PATH, &params)),
    };
    Ok(page_response(status, &page))
}

/// A page of the person's transactions (the one call of the list use case).
async fn list(
    console: &Console,
    who: &Person,
    filter: TransactionFilter,
    cursor: Option<String>,
) -> Result<Page<Transaction>, ConsoleError> {
    let principal = who.principal();
    run(console, move |p| p.transactions().list(&principal, &filter, cursor.as_deref(), PAGE_SIZE)).await
}

/// The downloaded file's name: `transactions[-account][-from][-to].csv`, letters and digits only.
fn file_name(q: &TxQuery) -> String {
    let mut name = String::from("transactions");
    for part in [q.account.as_deref(), q.from.as_deref(), q.to.as_deref()].into_iter().filter_map(given) {
        name.push('-');
        name.extend(part.chars().filter(|c| c.is_ascii_alphanumeric()).take(32));
    }
    name.push_str(".csv");
    name
}

/// `GET /console/transactions/export`: the CSV of the API's export of these dates and account,
/// header first, then the rows a batch at a time (each batch read in its own short transaction
/// and written out before the next is read), so a year of transactions never sits in memory.
async fn export(req: HttpRequest, who: Person, query: web::Query<TxQuery>) -> Result<HttpResponse, ConsoleError> {
    who.require(Permission::Export)?;
    let console = console_of(&req)?;
    let clock = LocalTime::of(&console, &who);
    let q = query.into_inner();
    let (filter, errors) = read_filter(&q, &clock);
    if let Some(problem) = errors.of("from").or_else(|| errors.of("to")) {
        return Err(ConsoleError::BadForm(problem.to_owned()));
    }
    // The export's filter is the API's: dates and account.
    let filter = TransactionFilter { kind: None, ..filter };
    let principal = who.principal();
    let run_of = run(&console, move |p| p.transactions().export(&principal, &filter)).await?;
    let platform = console.platform.clone();
    let rows = stream::try_unfold(Some((platform, run_of)), |next| async move {
        let Some((platform, run_of)) = next else { return Ok(None) };
        let (platform, run_of, batch) = web::block(move || {
            let mut run_of: ExportRun = run_of;
            let batch = platform.transactions().export_batch(&mut run_of, EXPORT_BATCH);
            (platform, run_of, batch)
        })
        .await
        .map_err(|e| export_failed(&e.to_string()))?;
        let batch = batch.map_err(|e| export_failed(&e.to_string()))?;
        if batch.is_empty() {
            return Ok(None);
        }
        Ok::<_, actix_web::Error>(Some((Bytes::from(transaction_rows(&batch)), Some::<(Platform, ExportRun)>((platform, run_of)))))
    });
    let header = Bytes::from(transactions_header());
    let body = stream::once(async move { Ok::<_, actix_web::Error>(header) }).chain(rows);
    Ok(HttpResponse::Ok()
        .content_type("text/csv; charset=utf-8")
        .insert_header(("Content-Disposition", format!("attachment; filename=\"{}\"", file_name(&q))))
        .streaming(body))
}

/// An export that fails after its first bytes went out can only stop: the browser sees a cut
/// download (no final chunk), never a partial file presented as whole.
fn export_failed(why: &str) -> actix_web::Error {
    tracing::error!(request_id = %crate::chrome::current_request_id(), error = why, "console transactions export failed midway");
    actix_web::error::ErrorInternalServerError("export failed")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_link_to_their_pages_and_files_are_named_by_their_filter() {
        assert_eq!(source_href("ch_abc-1").as_deref(), Some("/console/charges/ch_abc-1"));
        assert_eq!(source_href("po_x").as_deref(), Some("/console/payouts/po_x"));
        assert_eq!(source_href("org_x"), None);
        assert_eq!(source_href("ch_<x>"), None);
        let q = TxQuery { account: Some("collection".into()), from: Some("2026-11-27T21:00:00Z".into()), ..TxQuery::default() };
        assert_eq!(file_name(&q), "transactions-collection-20261127T210000Z.csv");
        assert_eq!(file_name(&TxQuery::default()), "transactions.csv");
    }
}
