//! "Cash in": "Phone number", "Amount", "Continue"; then a confirmation page with the customer's
//! registered name, the amount and the fee, and "Confirm" (or, before anything moves, why the
//! cash-in would be refused: a locked wallet, the customer's limits, the float); then a receipt
//! (transaction id, time, amounts) that prints on one page. The confirmation reads the use
//! case's quote (advisory); "Confirm" runs `POST /agents/cash-in`'s use case under the form's
//! one-time key (drawn with the first form, carried through the confirmation), which checks
//! every rule again under the wallet's lock.

use std::net::IpAddr;

use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse, ResponseError};
use askama::Template;
use malipo_core::MinorUnit;
use malipo_ledger::JournalKind;
use malipo_service::{AgentCash, CashInQuote, Done, NewAgentCash, ServiceError};

use super::cash_form::{CashForm, FIELDS};
use super::gate::{require_agent, FLOAT};
use crate::chrome::{page, page_response, see_other, Chrome, Notice};
use crate::csrf::Posted;
use crate::pages::form::FieldErrors;
use crate::pages::local_time::LocalTime;
use crate::pages::money_common::{form_errors, refusal_text};
use crate::session::{console_of, Person};
use crate::{format, idem, run, Console, ConsoleError};

/// `/console/cash-in` (the form, "Continue"), `/console/cash-in/confirm`, `/console/cash-in/{tx_id}`.
pub(super) fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/cash-in", web::get().to(form_page))
        .route("/cash-in", web::post().to(review))
        .route("/cash-in/confirm", web::post().to(confirm))
        .route("/cash-in/{tx_id}", web::get().to(receipt));
}

const SECTION: &str = "Cash in";
const PATH: &str = "/console/cash-in";

#[derive(Template)]
#[template(path = "agent/cash_in.html")]
struct FormPage {
    chrome: Chrome,
    form: CashForm,
    errors: FieldErrors,
}

/// What the confirmation page shows.
struct Quote {
    name: Option<String>,
    phone: String,
    amount: String,
    fee: String,
    total: String,
}

#[derive(Template)]
#[template(path = "agent/cash_in_confirm.html")]
struct ConfirmPage {
    chrome: Chrome,
    form: CashForm,
    quote: Quote,
    refused: bool,
}

#[derive(Template)]
#[template(path = "agent/cash_in_receipt.html")]
struct ReceiptPage {
    chrome: Chrome,
    id: String,
    time: String,
    phone: String,
    amount: String,
    fee: String,
    debited: String,
    balance_after: String,
}

async fn form_page(who: Person) -> Result<HttpResponse, ConsoleError> {
    require_agent(&who)?;
    let form = CashForm { idempotency_key: idem::new_key(), ..CashForm::default() };
    Ok(page(&FormPage { chrome: Chrome::new(&who, SECTION, "Cash in", PATH), form, errors: FieldErrors::none() }))
}

/// The form again with what was refused: each error beside its field, or the reason above it.
fn refused_form(who: &Person, mut form: CashForm, e: ServiceError) -> HttpResponse {
    let (errors, notice) = match form_errors(&e, &FIELDS) {
        Some(errors) => (errors, Notice::alert("Nothing was moved: some fields need attention.")),
        None => (FieldErrors::none(), Notice::alert(format!("Nothing was moved. {}", refusal_text(&e)))),
    };
    if matches!(e, ServiceError::IdempotencyReused) {
        form.idempotency_key = idem::new_key();
    }
    let status = ConsoleError::Service(e).status_code();
    page_response(status, &FormPage { chrome: Chrome::new(who, SECTION, "Cash in", PATH).with_notice(notice), form, errors })
}

fn raw(form: &CashForm) -> NewAgentCash {
    NewAgentCash { customer_msisdn: form.customer_msisdn.trim().to_owned(), amount: form.amount.trim().to_owned() }
}

/// "Continue": the confirmation page, from the use case's quote; nothing moves.
async fn review(req: HttpRequest, posted: Posted<CashForm>) -> Result<HttpResponse, ConsoleError> {
    let Posted { person: who, form, .. } = posted;
    require_agent(&who)?;
    let console = console_of(&req)?;
    let (principal, new) = (who.principal(), raw(&form));
    let quoted = run(&console, move |p| {
        let command = p.parse::<AgentCash>(&principal, &new)?;
        p.agents().quote_cash_in(&principal, &command)
    })
    .await;
    let q: CashInQuote = match quoted {
        Ok(q) => q,
        Err(ConsoleError::Service(e)) => return Ok(refused_form(&who, form, e)),
        Err(e) => return Err(e),
    };
    let c = q.currency;
    let total = q.amount.checked_add(q.fee).unwrap_or(MinorUnit::ZERO);
    let notice = match &q.refusal {
        Some(e) => Notice::alert(format!("This cash-in cannot be made. {}", refusal_text(e))),
        None => None,
    };
    let quote = Quote {
        name: q.customer_name.clone(),
        phone: q.customer_msisdn.to_string(),
        amount: format::money(q.amount, c),
        fee: format::money(q.fee, c),
        total: format::money(total, c),
    };
    let status = if q.refusal.is_some() { StatusCode::UNPROCESSABLE_ENTITY } else { StatusCode::OK };
    let chrome = Chrome::new(&who, SECTION, "Confirm the cash-in", PATH).with_notice(notice);
    Ok(page_response(status, &ConfirmPage { chrome, form, quote, refused: q.refusal.is_some() }))
}

/// "Confirm": the cash-in, once per form.
async fn confirm(req: HttpRequest, posted: Posted<CashForm>) -> Result<HttpResponse, ConsoleError> {
    let Posted { person: who, form, ip } = posted;
    require_agent(&who)?;
    let console = console_of(&req)?;
    match cash_in(&console, &who, &form, ip).await {
        Ok(outcome) => Ok(see_other(&idem::location(&outcome))),
        Err(ConsoleError::Service(e)) => Ok(refused_form(&who, form, e)),
        Err(e) => Err(e),
    }
}

/// The one call of the cash-in use case, under the form's key, audited as `who`'s.
async fn cash_in(console: &Console, who: &Person, form: &CashForm, ip: IpAddr) -> Result<Done<String>, ConsoleError> {
    let new = raw(form);
    let fields = [("customer_msisdn", new.customer_msisdn.as_str()), ("amount", new.amount.as_str())];
    let idem = idem::by(idem::idem(who, "cash-in", &form.idempotency_key, &fields)?, who, ip, "cash_in.created");
    let principal = who.principal();
    run(console, move |p| {
        let command = p.parse::<AgentCash>(&principal, &new)?;
        idem::page(p.agents().cash_in(&principal, &command, &idem), |c| format!("{PATH}/{}", c.transaction_id))
    })
    .await
}

/// A cash-in's receipt: its transaction on the float.
async fn receipt(req: HttpRequest, who: Person, path: web::Path<String>) -> Result<HttpResponse, ConsoleError> {
    require_agent(&who)?;
    let console = console_of(&req)?;
    let principal = who.principal();
    let id = path.into_inner();
    let t = run(&console, move |p| p.transactions().get(&principal, &id, Some(FLOAT))).await?;
    if t.kind != JournalKind::CashIn {
        return Err(ConsoleError::NotFound);
    }
    let (c, clock) = (t.currency, LocalTime::of(&console, &who));
    let neg = |m: MinorUnit| format::money(m.checked_neg().unwrap_or(MinorUnit::ZERO), c);
    let id = t.id.to_string();
    Ok(page(&ReceiptPage {
        chrome: Chrome::new(&who, SECTION, "Cash-in receipt", &format!("{PATH}/{id}")),
        time: clock.time(t.created_at),
        phone: t.source_ref.clone(),
        // The float's side: it paid the customer's amount (`amount`) and the fee on top (`net`).
        amount: neg(t.amount),
        fee: format::money(t.fee, c),
        debited: neg(t.net),
        balance_after: format::money(t.balance_after, c),
        id,
    }))
}
