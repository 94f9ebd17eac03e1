//! Reconciliation (console contract section 4, Merchant): "Date" (default: today in the
//! organisation's country) and "Account", "Show report"; the daily report of
//! `GET /reconciliation/daily` (opening, credits, debits, fees, closing, counts and sums by
//! type, the checksum labelled "Checksum"), and "Download CSV": the export of exactly that day's
//! UTC bounds and account, whose `{transaction_id},{net}\n` lines hash to the checksum.

use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use askama::Template;
use malipo_auth::Permission;
use malipo_service::{Reconciliation, ServiceError};
use serde::Deserialize;

use super::form::FieldErrors;
use super::local_time::LocalTime;
use super::money_common::{choices, form_errors, given, href, Choice};
use crate::chrome::{page_response, Chrome};
use crate::session::{console_of, Person};
use crate::{format, run, Console, ConsoleError};

/// `/console/reconciliation`.
pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/reconciliation", web::get().to(report_page));
}

const ACCOUNTS: [(&str, &str); 2] = [("collection", "Collection"), ("payout", "Payout")];

#[derive(Debug, Default, Deserialize)]
struct ReportQuery {
    date: Option<String>,
    account: Option<String>,
}

/// The count and sums of one transaction type.
struct TypeRow {
    kind: &'static str,
    count: u64,
    amount: String,
    fee: String,
    net: String,
}

/// The report as shown.
struct Report {
    date: String,
    time_zone: String,
    account: &'static str,
    from: String,
    to: String,
    opening: String,
    credits: String,
    debits: String,
    fees: String,
    closing: String,
    count: u64,
    by_type: Vec<TypeRow>,
    checksum: String,
    csv: Option<String>,
}

#[derive(Template)]
#[template(path = "reconciliation/report.html")]
struct ReportPage {
    chrome: Chrome,
    date: String,
    accounts: Vec<Choice>,
    errors: FieldErrors,
    report: Option<Report>,
}

fn report_of(r: &Reconciliation, may_export: bool) -> Report {
    let c = r.account.currency;
    let d = &r.report;
    let (from, to) = (r.from.to_rfc3339(), r.to.to_rfc3339());
    let account = r.account.kind.as_str();
    Report {
        date: format!("{:04}-{:02}-{:02}", r.date.year(), u8::from(r.date.month()), r.date.day()),
        time_zone: r.time_zone.clone(),
        account,
        csv: may_export
            .then(|| href("/console/transactions/export", &[("account", Some(account)), ("from", Some(&from)), ("to", Some(&to))])),
        from,
        to,
        opening: format::money(d.opening, c),
        credits: format::money(d.credits, c),
        debits: format::money(d.debits, c),
        fees: format::money(d.fees, c),
        closing: format::money(d.closing, c),
        count: d.count,
        by_type: d
            .by_type
            .iter()
            .map(|(kind, t)| TypeRow {
                kind,
                count: t.count,
                amount: format::money(t.amount, c),
                fee: format::money(t.fee, c),
                net: format::money(t.net, c),
            })
            .collect(),
        checksum: d.checksum.clone(),
    }
}

async fn report_page(req: HttpRequest, who: Person, query: web::Query<ReportQuery>) -> Result<HttpResponse, ConsoleError> {
    who.require(Permission::Read)?;
    let console = console_of(&req)?;
    let clock = LocalTime::of(&console, &who);
    let date = given(query.date.as_deref()).map_or_else(|| clock.date(console.platform.now()), str::to_owned);
    let account = given(query.account.as_deref()).unwrap_or("collection").to_owned();
    let (report, errors, status) = match daily(&console, &who, &date, &account).await {
        Ok(r) => (Some(report_of(&r, who.may(Permission::Export))), FieldErrors::none(), StatusCode::OK),
        Err(ConsoleError::Service(e @ ServiceError::Validation(_))) => {
            let errors = form_errors(&e, &[("date", "date", "Date"), ("account", "account", "Account")]).unwrap_or_default();
            (None, errors, StatusCode::UNPROCESSABLE_ENTITY)
        }
        Err(e) => return Err(e),
    };
    let page = ReportPage {
        chrome: Chrome::new(&who, "Reconciliation", "Reconciliation", "/console/reconciliation"),
        date,
        accounts: choices(&ACCOUNTS, Some(&account)),
        errors,
        report,
    };
    Ok(page_response(status, &page))
}

/// The day's report (the one call of the use case).
async fn daily(console: &Console, who: &Person, date: &str, account: &str) -> Result<Reconciliation, ConsoleError> {
    let (principal, date, account) = (who.principal(), date.to_owned(), account.to_owned());
    run(console, move |p| p.transactions().daily(&principal, &date, Some(&account))).await
}
