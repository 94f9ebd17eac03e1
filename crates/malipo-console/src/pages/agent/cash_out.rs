//! "Cash out": "Phone number", "Amount", "Request approval" runs `POST /agents/cash-out`'s use
//! case under the form's one-time key: a prompt the customer approves with the PIN over USSD.
//! The cash-out's page shows "Waiting for the customer" and follows the state (without script
//! a refresh every few seconds and a "Refresh" link; with script its live region, then a
//! reload) to the receipt, or to the reason it failed.

use std::net::IpAddr;

use actix_web::{web, HttpRequest, HttpResponse, ResponseError};
use askama::Template;
use malipo_charges::{Charge, ChargeState, FailureReason};
use malipo_service::{AgentCash, Done, NewAgentCash, ServiceError};

use super::cash_form::{CashForm, FIELDS};
use super::gate::require_agent;
use crate::chrome::{page, page_response, see_other, Chrome, Notice};
use crate::csrf::Posted;
use crate::pages::form::FieldErrors;
use crate::pages::local_time::LocalTime;
use crate::pages::money_common::{form_errors, refusal_text};
use crate::session::{console_of, Person};
use crate::{format, idem, run, Console, ConsoleError};

/// `/console/cash-out`, `/console/cash-out/{wd_ref}`, `/console/cash-out/{wd_ref}/live`.
pub(super) fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/cash-out", web::get().to(form_page))
        .route("/cash-out", web::post().to(request))
        .route("/cash-out/{wd_ref}", web::get().to(cash_out_page))
        .route("/cash-out/{wd_ref}/live", web::get().to(live_facts));
}

const SECTION: &str = "Cash out";
const PATH: &str = "/console/cash-out";

#[derive(Template)]
#[template(path = "agent/cash_out.html")]
struct FormPage {
    chrome: Chrome,
    form: CashForm,
    errors: FieldErrors,
}

async fn form_page(who: Person) -> Result<HttpResponse, ConsoleError> {
    require_agent(&who)?;
    let form = CashForm { idempotency_key: idem::new_key(), ..CashForm::default() };
    Ok(page(&FormPage { chrome: Chrome::new(&who, SECTION, "Cash out", PATH), form, errors: FieldErrors::none() }))
}

/// "Request approval": the prompt, once per form; then its page.
async fn request(req: HttpRequest, posted: Posted<CashForm>) -> Result<HttpResponse, ConsoleError> {
    let Posted { person: who, mut form, ip } = posted;
    require_agent(&who)?;
    let console = console_of(&req)?;
    match cash_out(&console, &who, &form, ip).await {
        Ok(outcome) => Ok(see_other(&idem::location(&outcome))),
        Err(ConsoleError::Service(e)) => {
            let (errors, notice) = match form_errors(&e, &FIELDS) {
                Some(errors) => (errors, Notice::alert("Nothing was asked: some fields need attention.")),
                None => (FieldErrors::none(), Notice::alert(format!("Nothing was asked. {}", refusal_text(&e)))),
            };
            if matches!(e, ServiceError::IdempotencyReused) {
                form.idempotency_key = idem::new_key();
            }
            let status = ConsoleError::Service(e).status_code();
            let chrome = Chrome::new(&who, SECTION, "Cash out", PATH).with_notice(notice);
            Ok(page_response(status, &FormPage { chrome, form, errors }))
        }
        Err(e) => Err(e),
    }
}

/// The one call of the cash-out use case, under the form's key, audited as `who`'s.
async fn cash_out(console: &Console, who: &Person, form: &CashForm, ip: IpAddr) -> Result<Done<String>, ConsoleError> {
    let new = NewAgentCash { customer_msisdn: form.customer_msisdn.trim().to_owned(), amount: form.amount.trim().to_owned() };
    let fields = [("customer_msisdn", new.customer_msisdn.as_str()), ("amount", new.amount.as_str())];
    let idem = idem::by(idem::idem(who, "cash-out", &form.idempotency_key, &fields)?, who, ip, "cash_out.created");
    let principal = who.principal();
    run(console, move |p| {
        let command = p.parse::<AgentCash>(&principal, &new)?;
        idem::page(p.agents().cash_out(&principal, &command, &idem), |c| format!("{PATH}/{}", c.id))
    })
    .await
}

/// A cash-out's facts, as its page shows them and its live region refreshes them.
struct Facts {
    id: String,
    state: &'static str,
    /// Completed, declined, expired or failed: the live region stops asking.
    settled: bool,
    completed: bool,
    failure: Option<&'static str>,
    phone: String,
    amount: String,
    fee: String,
    commission: String,
    transaction_id: Option<String>,
    created: String,
    completed_at: Option<String>,
}

/// What a failure reason means to an agent and their customer.
fn failure_text(reason: FailureReason) -> &'static str {
    match reason {
        FailureReason::DeclinedByCustomer => "The customer declined it.",
        FailureReason::PinAttemptsExceeded => "Too many wrong PINs: the customer's wallet is locked.",
        FailureReason::Expired => "The customer did not answer in time.",
        FailureReason::PayerNotFound => "The number has no wallet.",
        FailureReason::WalletLocked => "The customer's wallet is locked.",
        FailureReason::LimitExceeded => "It is over the customer's wallet limits.",
        FailureReason::InsufficientFunds => "The customer's balance does not cover the amount and the fee.",
        FailureReason::ProcessingError => "It could not be processed.",
    }
}

fn facts(c: &Charge, clock: &LocalTime) -> Facts {
    let cur = c.currency;
    let settled = !matches!(c.state, ChargeState::Pending | ChargeState::Authorised);
    Facts {
        id: c.id.to_string(),
        state: c.state.as_str(),
        settled,
        completed: c.state == ChargeState::Completed,
        failure: if settled && c.state != ChargeState::Completed {
            Some(c.failure_reason.map_or("It did not complete.", failure_text))
        } else {
            None
        },
        phone: c.payer_msisdn.to_string(),
        amount: format::money(c.amount, cur),
        fee: format::money(c.fee, cur),
        commission: format::money(c.commission, cur),
        transaction_id: c.transaction_id.as_ref().map(ToString::to_string),
        created: clock.time(c.created_at),
        completed_at: c.completed_at.map(|t| clock.time(t)),
    }
}

#[derive(Template)]
#[template(path = "agent/cash_out_detail.html")]
struct DetailPage {
    chrome: Chrome,
    facts: Facts,
}

#[derive(Template)]
#[template(path = "agent/cash_out_facts_fragment.html")]
struct FactsFragment {
    facts: Facts,
}

async fn cash_out_of(console: &Console, who: &Person, id: String) -> Result<Charge, ConsoleError> {
    let principal = who.principal();
    run(console, move |p| p.agents().get_cash_out(&principal, &id)).await
}

async fn cash_out_page(req: HttpRequest, who: Person, path: web::Path<String>) -> Result<HttpResponse, ConsoleError> {
    require_agent(&who)?;
    let console = console_of(&req)?;
    let c = cash_out_of(&console, &who, path.into_inner()).await?;
    let facts = facts(&c, &LocalTime::of(&console, &who));
    let title = match (facts.settled, facts.completed) {
        (false, _) => "Waiting for the customer",
        (true, true) => "Cash-out receipt",
        (true, false) => "Cash-out failed",
    };
    let chrome = Chrome::new(&who, SECTION, title, &format!("{PATH}/{}", facts.id));
    Ok(page(&DetailPage { chrome, facts }))
}

async fn live_facts(req: HttpRequest, who: Person, path: web::Path<String>) -> Result<HttpResponse, ConsoleError> {
    require_agent(&who)?;
    let console = console_of(&req)?;
    let c = cash_out_of(&console, &who, path.into_inner()).await?;
    Ok(page(&FactsFragment { facts: facts(&c, &LocalTime::of(&console, &who)) }))
}
