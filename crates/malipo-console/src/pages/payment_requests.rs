//! Payment requests (console contract section 4, Merchant): the list (newest first, by state),
//! "New payment request" ("Amount", "Reference", "Description", optional "Phone number",
//! "Create request"), and a request's page with its pay code shown large, as the customer types
//! it, its facts following it (a live region refreshed by `assets/app.js` from `…/live`, until it
//! is paid, cancelled or expired), and "Cancel request" while it is open. Creating and cancelling are idempotent: each form
//! carries a one-time key.

use std::net::IpAddr;

use actix_web::{web, HttpRequest, HttpResponse, ResponseError};
use askama::Template;
use malipo_auth::Permission;
use malipo_requests::{PaymentRequest, RequestFilter, RequestState};
use malipo_service::{CancelPaymentRequest, CreatePaymentRequest, Done, NewPaymentRequest, Page, ServiceError};
use serde::Deserialize;

use super::form::FieldErrors;
use super::local_time::LocalTime;
use super::money_common::{choices, form_errors, given, href, refusal_text, spaced_code, Choice, PAGE_SIZE};
use crate::chrome::{page, page_response, see_other, Chrome, Notice};
use crate::csrf::Posted;
use crate::session::{console_of, Person};
use crate::{csrf_forms, format, idem, run, Console, ConsoleError};
use malipo_service::validate::sentence;

/// `/console/payment-requests`, `…/new`, `…/{id}`, `…/{id}/cancel`.
pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/payment-requests", web::get().to(list_page))
        .route("/payment-requests", web::post().to(create))
        .route("/payment-requests/new", web::get().to(new_page))
        .route("/payment-requests/{request_id}", web::get().to(request_page))
        .route("/payment-requests/{request_id}/cancel", web::post().to(cancel))
        .route("/payment-requests/{request_id}/live", web::get().to(live_facts));
}

const SECTION: &str = "Payment requests";
const STATES: [(&str, &str); 5] =
    [("", "Any state"), ("open", "Open"), ("paid", "Paid"), ("cancelled", "Cancelled"), ("expired", "Expired")];

/// The use case's field names, the form's, and their labels.
const FIELDS: [(&str, &str, &str); 4] = [
    ("amount", "amount", "Amount"),
    ("reference", "reference", "Reference"),
    ("description", "description", "Description"),
    ("payer_msisdn", "payer_msisdn", "Phone number"),
];

/// One request as a row of the list.
struct Row {
    id: String,
    created: String,
    reference: String,
    amount: String,
    pay_code: String,
    state: &'static str,
    expires: String,
}

#[derive(Template)]
#[template(path = "payment_requests/list.html")]
struct ListPage {
    chrome: Chrome,
    can_create: bool,
    states: Vec<Choice>,
    rows: Vec<Row>,
    filtered: bool,
    next: Option<String>,
    first: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
struct ListQuery {
    state: Option<String>,
    cursor: Option<String>,
}

fn row(r: &PaymentRequest, clock: &LocalTime) -> Row {
    Row {
        id: r.id.to_string(),
        created: clock.time(r.created_at),
        reference: r.reference.clone(),
        amount: format::money(r.amount, r.currency),
        pay_code: spaced_code(r.pay_code.as_str()),
        state: r.state.as_str(),
        expires: clock.time(r.expires_at),
    }
}

async fn list_page(req: HttpRequest, who: Person, query: web::Query<ListQuery>) -> Result<HttpResponse, ConsoleError> {
    who.require(Permission::Read)?;
    let console = console_of(&req)?;
    let state = given(query.state.as_deref());
    let filter = RequestFilter {
        state: state
            .map(|s| s.parse::<RequestState>().map_err(|_| ConsoleError::BadForm("state must be open, paid, cancelled or expired".into())))
            .transpose()?,
    };
    let cursor = given(query.cursor.as_deref()).map(str::to_owned);
    let page_of = list(&console, &who, filter, cursor.clone()).await?;
    let clock = LocalTime::of(&console, &who);
    let path = "/console/payment-requests";
    Ok(page(&ListPage {
        chrome: Chrome::new(&who, SECTION, "Payment requests", path),
        can_create: who.may(Permission::PaymentRequest),
        states: choices(&STATES, state),
        rows: page_of.data.iter().map(|r| row(r, &clock)).collect(),
        filtered: state.is_some(),
        next: page_of.next_cursor.as_deref().map(|c| href(path, &[("state", state), ("cursor", Some(c))])),
        first: cursor.map(|_| href(path, &[("state", state)])),
    }))
}

/// The form of a new request, as shown (empty, or refused with its values).
#[derive(Template)]
#[template(path = "payment_requests/new.html")]
struct NewPage {
    chrome: Chrome,
    form: CreateForm,
    errors: FieldErrors,
}

#[derive(Clone, Debug, Default, Deserialize)]
struct CreateForm {
    #[serde(default)]
    csrf_token: String,
    #[serde(default)]
    idempotency_key: String,
    #[serde(default)]
    amount: String,
    #[serde(default)]
    reference: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    payer_msisdn: String,
}

#[derive(Debug, Default, Deserialize)]
struct CancelForm {
    #[serde(default)]
    csrf_token: String,
    #[serde(default)]
    idempotency_key: String,
}
csrf_forms!(CreateForm, CancelForm);

fn new_form_page(who: &Person, form: CreateForm, errors: FieldErrors, notice: Option<Notice>) -> NewPage {
    NewPage { chrome: Chrome::new(who, SECTION, "New payment request", "/console/payment-requests/new").with_notice(notice), form, errors }
}

async fn new_page(who: Person) -> Result<HttpResponse, ConsoleError> {
    who.require(Permission::PaymentRequest)?;
    let form = CreateForm { idempotency_key: idem::new_key(), ..CreateForm::default() };
    Ok(page(&new_form_page(&who, form, FieldErrors::none(), None)))
}

async fn create(req: HttpRequest, posted: Posted<CreateForm>) -> Result<HttpResponse, ConsoleError> {
    let Posted { person: who, mut form, ip } = posted;
    who.require(Permission::PaymentRequest)?;
    let console = console_of(&req)?;
    match create_request(&console, &who, &form, ip).await {
        Ok(outcome) => Ok(see_other(&idem::location(&outcome))),
        Err(ConsoleError::Service(e)) => {
            // Refused: the form again, its values kept, each error beside its field.
            let (errors, notice) = match (&e, form_errors(&e, &FIELDS)) {
                (_, Some(errors)) => (errors, Notice::alert("The request was not created: some fields need attention.")),
                (ServiceError::CurrencyMismatch(m), None) => (
                    FieldErrors::one("payer_msisdn", sentence(m)),
                    Notice::alert("The request was not created: some fields need attention."),
                ),
                (other, None) => (FieldErrors::none(), Notice::alert(refusal_text(other))),
            };
            if matches!(e, ServiceError::IdempotencyReused) {
                form.idempotency_key = idem::new_key();
            }
            let status = ConsoleError::Service(e).status_code();
            Ok(page_response(status, &new_form_page(&who, form, errors, notice)))
        }
        Err(e) => Err(e),
    }
}

/// The one call of the create use case: the form parsed into its command, then run under the
/// form's key, recorded in the audit log as `who`'s.
async fn create_request(console: &Console, who: &Person, form: &CreateForm, ip: IpAddr) -> Result<Done<String>, ConsoleError> {
    let fields = [
        ("amount", form.amount.as_str()),
        ("reference", form.reference.as_str()),
        ("description", form.description.as_str()),
        ("payer_msisdn", form.payer_msisdn.as_str()),
    ];
    let idem = idem::by(idem::idem(who, "payment-request", &form.idempotency_key, &fields)?, who, ip, "payment_request.created");
    let new = NewPaymentRequest {
        amount: form.amount.trim().to_owned(),
        reference: form.reference.clone(),
        description: given(Some(&form.description)).map(|_| form.description.clone()),
        payer_msisdn: given(Some(&form.payer_msisdn)).map(str::to_owned),
        expires_in: None,
    };
    let principal = who.principal();
    run(console, move |p| {
        let command = p.parse::<CreatePaymentRequest>(&principal, &new)?;
        idem::page(p.payment_requests().create(&principal, &command, &idem), |r| format!("/console/payment-requests/{}?done=created", r.id))
    })
    .await
}

/// A request's facts, as its page shows them and its live region refreshes them.
struct RequestFacts {
    id: String,
    state: &'static str,
    /// Paid, cancelled or expired: the live region stops asking.
    ended: bool,
    amount: String,
    fee: String,
    receive: String,
    reference: String,
    description: Option<String>,
    payer: Option<String>,
    paid_by: Option<String>,
    transaction_id: Option<String>,
    expires: String,
    created: String,
    paid: Option<String>,
}

#[derive(Template)]
#[template(path = "payment_requests/detail.html")]
struct RequestPage {
    chrome: Chrome,
    pay_code: String,
    facts: RequestFacts,
    can_cancel: bool,
    idempotency_key: String,
}

/// The facts alone (`/console/payment-requests/{id}/live`), for the page's live region.
#[derive(Template)]
#[template(path = "payment_requests/facts_fragment.html")]
struct FactsFragment {
    facts: RequestFacts,
}

#[derive(Debug, Default, Deserialize)]
struct DoneQuery {
    done: Option<String>,
}

fn facts(r: &PaymentRequest, clock: &LocalTime) -> RequestFacts {
    let c = r.currency;
    RequestFacts {
        id: r.id.to_string(),
        state: r.state.as_str(),
        ended: r.state != RequestState::Open,
        amount: format::money(r.amount, c),
        fee: format::money(r.fee, c),
        receive: r.amount.checked_sub(r.fee).map_or_else(|_| String::new(), |v| format::money(v, c)),
        reference: r.reference.clone(),
        description: r.description.clone().filter(|d| !d.is_empty()),
        payer: r.payer_msisdn.as_ref().map(ToString::to_string),
        paid_by: r.paid_by_msisdn.as_ref().map(ToString::to_string),
        transaction_id: r.transaction_id.as_ref().map(ToString::to_string),
        expires: clock.time(r.expires_at),
        created: clock.time(r.created_at),
        paid: r.paid_at.map(|t| clock.time(t)),
    }
}

/// One of the person's requests (the one call of the use case).
async fn request_of(console: &Console, who: &Person, id: String) -> Result<PaymentRequest, ConsoleError> {
    let principal = who.principal();
    run(console, move |p| p.payment_requests().get(&principal, &id)).await
}

async fn request_page(
    req: HttpRequest,
    who: Person,
    path: web::Path<String>,
    query: web::Query<DoneQuery>,
) -> Result<HttpResponse, ConsoleError> {
    who.require(Permission::Read)?;
    let console = console_of(&req)?;
    let r = request_of(&console, &who, path.into_inner()).await?;
    let clock = LocalTime::of(&console, &who);
    let notice = match query.done.as_deref() {
        Some("created") => {
            Notice::done(format!("Payment request created. Give the customer the pay code {}.", spaced_code(r.pay_code.as_str())))
        }
        Some("cancelled") => Notice::done("Payment request cancelled: its pay code can no longer be paid."),
        _ => None,
    };
    let facts = facts(&r, &clock);
    Ok(page(&RequestPage {
        chrome: Chrome::new(&who, SECTION, format!("Payment request {}", facts.id), &format!("/console/payment-requests/{}", facts.id))
            .with_notice(notice),
        pay_code: spaced_code(r.pay_code.as_str()),
        can_cancel: !facts.ended && who.may(Permission::PaymentRequest),
        idempotency_key: idem::new_key(),
        facts,
    }))
}

async fn live_facts(req: HttpRequest, who: Person, path: web::Path<String>) -> Result<HttpResponse, ConsoleError> {
    who.require(Permission::Read)?;
    let console = console_of(&req)?;
    let r = request_of(&console, &who, path.into_inner()).await?;
    let clock = LocalTime::of(&console, &who);
    Ok(page(&FactsFragment { facts: facts(&r, &clock) }))
}

async fn cancel(req: HttpRequest, path: web::Path<String>, posted: Posted<CancelForm>) -> Result<HttpResponse, ConsoleError> {
    let Posted { person: who, form, ip } = posted;
    who.require(Permission::PaymentRequest)?;
    let console = console_of(&req)?;
    let outcome = cancel_request(&console, &who, &path.into_inner(), &form.idempotency_key, ip).await?;
    Ok(see_other(&idem::location(&outcome)))
}

/// The one call of the cancel use case, recorded in the audit log as `who`'s.
async fn cancel_request(console: &Console, who: &Person, id: &str, key: &str, ip: IpAddr) -> Result<Done<String>, ConsoleError> {
    let idem = idem::by(idem::idem(who, "payment-request-cancel", key, &[("request_id", id)])?, who, ip, "payment_request.cancelled");
    let (principal, id) = (who.principal(), id.to_owned());
    run(console, move |p| {
        let command = p.parse::<CancelPaymentRequest>(&principal, &id)?;
        idem::page(p.payment_requests().cancel(&principal, &command, &idem), |r| {
            format!("/console/payment-requests/{}?done=cancelled", r.id)
        })
    })
    .await
}

/// A page of the person's requests (the one call of the list use case).
async fn list(
    console: &Console,
    who: &Person,
    filter: RequestFilter,
    cursor: Option<String>,
) -> Result<Page<PaymentRequest>, ConsoleError> {
    let principal = who.principal();
    run(console, move |p| p.payment_requests().list(&principal, &filter, cursor.as_deref(), PAGE_SIZE)).await
}
