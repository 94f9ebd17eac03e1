//! Payouts (console contract section 4, Merchant): "Pay one person" ("Phone number", "Amount",
//! "Reference", "Pay"), the payouts (newest first, by state; single payouts and bulk items
//! alike) and a payout's page, whose facts follow the payout while it settles (a live region,
//! refreshed by `assets/app.js` from `…/live`). Paying is idempotent: the form carries a one-time key.
//!
//! A merchant's payout is `POST /payouts`. A corporate maker's single payout waits for a checker
//! like any batch (the contract): the same form creates a bulk payout of one item (`POST
//! /bulk-payouts`, the reference the batch's and the item's), awaiting approval, and shows its
//! batch page.

use std::net::IpAddr;

use actix_web::{web, HttpRequest, HttpResponse, ResponseError};
use askama::Template;
use malipo_auth::{OrgKind, Permission};
use malipo_payouts::{Payout, PayoutFilter, PayoutState, RawItem};
use malipo_service::{BulkInput, CreateBulkPayout, CreatePayout, Done, NewBulkPayout, NewPayout, Page, ServiceError};
use serde::Deserialize;

use super::form::FieldErrors;
use super::local_time::LocalTime;
use super::money_common::{choices, form_errors, given, href, refusal_text, Choice, PAGE_SIZE};
use crate::chrome::{page, see_other};
use crate::chrome::{page_response, Chrome, Notice};
use crate::csrf::Posted;
use crate::session::{console_of, Person};
use crate::{csrf_forms, format, idem, run, Console, ConsoleError};

/// `/console/payouts` (list and "Pay"), `/console/payouts/{po_id}`.
pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/payouts", web::get().to(list_page))
        .route("/payouts", web::post().to(pay))
        .route("/payouts/{payout_ref}", web::get().to(payout_page))
        .route("/payouts/{payout_ref}/live", web::get().to(live_facts));
}

const SECTION: &str = "Payouts";
const PATH: &str = "/console/payouts";
const STATES: [(&str, &str); 4] = [("", "Any state"), ("pending", "Pending"), ("completed", "Completed"), ("failed", "Failed")];

/// The use case's field names, the form's, and their labels.
const FIELDS: [(&str, &str, &str); 3] =
    [("payee_msisdn", "payee_msisdn", "Phone number"), ("amount", "amount", "Amount"), ("reference", "reference", "Reference")];

/// The same for a corporate maker's batch of one: its item's fields, and the batch's reference
/// (the same text, so the same error, shown once).
const BATCH_FIELDS: [(&str, &str, &str); 4] = [
    ("items[0].payee_msisdn", "payee_msisdn", "Phone number"),
    ("items[0].amount", "amount", "Amount"),
    ("items[0].reference", "reference", "Reference"),
    ("reference", "reference", "Reference"),
];

/// One payout as a row of the list.
struct Row {
    id: String,
    created: String,
    payee: String,
    amount: String,
    fee: String,
    reference: String,
    state: &'static str,
    batch: Option<String>,
}

fn row(p: &Payout, clock: &LocalTime) -> Row {
    Row {
        id: p.id.to_string(),
        created: clock.time(p.created_at),
        payee: p.payee_msisdn.to_string(),
        amount: format::money(p.amount, p.currency),
        fee: format::money(p.fee, p.currency),
        reference: p.reference.clone(),
        state: p.state.as_str(),
        batch: p.bulk_payout_id.as_ref().map(ToString::to_string),
    }
}

#[derive(Template)]
#[template(path = "payouts/list.html")]
struct ListPage {
    chrome: Chrome,
    can_pay: bool,
    /// A corporate maker's payout waits for a checker (the hint says so).
    batch_of_one: bool,
    form: PayForm,
    errors: FieldErrors,
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

#[derive(Clone, Debug, Default, Deserialize)]
struct PayForm {
    #[serde(default)]
    csrf_token: String,
    #[serde(default)]
    idempotency_key: String,
    #[serde(default)]
    payee_msisdn: String,
    #[serde(default)]
    amount: String,
    #[serde(default)]
    reference: String,
}
csrf_forms!(PayForm);

/// Whether `who` may pay one person from this page (a merchant's admin and finance, a
/// corporate's maker).
fn may_pay(who: &Person) -> bool {
    who.may(Permission::Payout)
}

/// Whether `who`'s single payout is a batch of one that waits for a checker.
fn batch_of_one(who: &Person) -> bool {
    who.org.kind == OrgKind::Corporate
}

/// The list page with the form as given (a fresh one, or a refused one with its errors).
async fn render(
    console: &Console,
    who: &Person,
    query: &ListQuery,
    form: PayForm,
    errors: FieldErrors,
    notice: Option<Notice>,
) -> Result<ListPage, ConsoleError> {
    let state = given(query.state.as_deref());
    let filter = PayoutFilter {
        state: state
            .map(|s| s.parse::<PayoutState>().map_err(|_| ConsoleError::BadForm("state must be pending, completed or failed".into())))
            .transpose()?,
        ..PayoutFilter::default()
    };
    let cursor = given(query.cursor.as_deref()).map(str::to_owned);
    let found = list(console, who, filter, cursor.clone()).await?;
    let clock = LocalTime::of(console, who);
    Ok(ListPage {
        chrome: Chrome::new(who, SECTION, "Payouts", PATH).with_notice(notice),
        can_pay: may_pay(who),
        batch_of_one: batch_of_one(who),
        form,
        errors,
        states: choices(&STATES, state),
        rows: found.data.iter().map(|p| row(p, &clock)).collect(),
        filtered: state.is_some(),
        next: found.next_cursor.as_deref().map(|c| href(PATH, &[("state", state), ("cursor", Some(c))])),
        first: cursor.map(|_| href(PATH, &[("state", state)])),
    })
}

async fn list_page(req: HttpRequest, who: Person, query: web::Query<ListQuery>) -> Result<HttpResponse, ConsoleError> {
    who.require(Permission::Read)?;
    let console = console_of(&req)?;
    let form = PayForm { idempotency_key: idem::new_key(), ..PayForm::default() };
    Ok(page(&render(&console, &who, &query, form, FieldErrors::none(), None).await?))
}

async fn pay(req: HttpRequest, posted: Posted<PayForm>) -> Result<HttpResponse, ConsoleError> {
    let Posted { person: who, mut form, ip } = posted;
    who.require(Permission::Payout)?;
    let console = console_of(&req)?;
    let paid = if batch_of_one(&who) { submit_one(&console, &who, &form, ip).await } else { pay_one(&console, &who, &form, ip).await };
    match paid {
        Ok(outcome) => Ok(see_other(&idem::location(&outcome))),
        Err(ConsoleError::Service(e)) => {
            // Refused: the page again, the form's values kept, each error beside its field.
            let fields: &[(&str, &str, &str)] = if batch_of_one(&who) { &BATCH_FIELDS } else { &FIELDS };
            let (errors, notice) = match form_errors(&e, fields) {
                Some(errors) => (errors, Notice::alert("Nothing was paid: some fields need attention.")),
                None => (FieldErrors::none(), Notice::alert(format!("Nothing was paid. {}", refusal_text(&e)))),
            };
            if matches!(e, ServiceError::IdempotencyReused) {
                form.idempotency_key = idem::new_key();
            }
            let status = ConsoleError::Service(e).status_code();
            let list = render(&console, &who, &ListQuery::default(), form, errors, notice).await?;
            Ok(page_response(status, &list))
        }
        Err(e) => Err(e),
    }
}

/// The one call of the payout use case: the form parsed into its command, then run under the
/// form's key, recorded in the audit log as `who`'s.
async fn pay_one(console: &Console, who: &Person, form: &PayForm, ip: IpAddr) -> Result<Done<String>, ConsoleError> {
    let fields = [("payee_msisdn", form.payee_msisdn.as_str()), ("amount", form.amount.as_str()), ("reference", form.reference.as_str())];
    let idem = idem::by(idem::idem(who, "payout", &form.idempotency_key, &fields)?, who, ip, "payout.created");
    let new = NewPayout {
        payee_msisdn: form.payee_msisdn.trim().to_owned(),
        amount: form.amount.trim().to_owned(),
        reference: form.reference.clone(),
        currency: None,
        narration: None,
    };
    let principal = who.principal();
    run(console, move |p| {
        let command = p.parse::<CreatePayout>(&principal, &new)?;
        idem::page(p.payouts().create(&principal, &command, &idem), |po| format!("{PATH}/{}?done=paid", po.id))
    })
    .await
}

/// A corporate maker's single payout: a bulk payout of one item, awaiting a checker, under the
/// form's key (the API's `POST /bulk-payouts` use case; recorded as an upload is).
async fn submit_one(console: &Console, who: &Person, form: &PayForm, ip: IpAddr) -> Result<Done<String>, ConsoleError> {
    let fields = [("payee_msisdn", form.payee_msisdn.as_str()), ("amount", form.amount.as_str()), ("reference", form.reference.as_str())];
    let idem = idem::by(idem::idem(who, "bulk-payout-one", &form.idempotency_key, &fields)?, who, ip, "bulk_payout.created");
    let item = RawItem {
        payee_msisdn: form.payee_msisdn.trim().to_owned(),
        amount: form.amount.trim().to_owned(),
        reference: form.reference.clone(),
        narration: None,
    };
    let new = NewBulkPayout { reference: form.reference.clone(), items: BulkInput::Items(vec![item]) };
    let principal = who.principal();
    run(console, move |p| {
        let command = p.parse::<CreateBulkPayout>(&principal, &new)?;
        idem::page(p.bulk_payouts().create(&principal, &command, &idem), |b| format!("/console/bulk-payouts/{}?done=submitted", b.id))
    })
    .await
}

/// A page of the person's payouts (the one call of the list use case).
async fn list(console: &Console, who: &Person, filter: PayoutFilter, cursor: Option<String>) -> Result<Page<Payout>, ConsoleError> {
    let principal = who.principal();
    run(console, move |p| p.payouts().list(&principal, &filter, cursor.as_deref(), PAGE_SIZE)).await
}

/// A payout's facts, as its page shows them and its live region refreshes them.
struct PayoutFacts {
    id: String,
    state: &'static str,
    /// Completed or failed: the live region stops asking.
    settled: bool,
    payee: String,
    amount: String,
    fee: String,
    debited: String,
    reference: String,
    narration: Option<String>,
    failure: Option<&'static str>,
    transaction_id: Option<String>,
    batch: Option<String>,
    reversed: Option<String>,
    created: String,
    updated: String,
    completed: Option<String>,
}

#[derive(Template)]
#[template(path = "payouts/detail.html")]
struct PayoutPage {
    chrome: Chrome,
    facts: PayoutFacts,
}

/// The facts alone (`/console/payouts/{po_id}/live`), for the page's live region.
#[derive(Template)]
#[template(path = "payouts/facts_fragment.html")]
struct FactsFragment {
    facts: PayoutFacts,
}

#[derive(Debug, Default, Deserialize)]
struct DoneQuery {
    done: Option<String>,
}

/// What a failure reason means to a person.
fn failure_text(p: &Payout) -> Option<&'static str> {
    use malipo_payouts::PayoutFailure as F;
    p.failure_reason.map(|f| match f {
        F::PayeeNotFound => "payee_not_found: the number has no wallet",
        F::WalletLocked => "wallet_locked: the payee's wallet is locked",
        F::LimitExceeded => "limit_exceeded: the payee's wallet limits do not allow it",
        F::BulkPayoutRejected => "bulk_payout_rejected: its batch was rejected",
        F::ProcessingError => "processing_error: it could not be paid",
    })
}

fn facts(p: &Payout, clock: &LocalTime) -> PayoutFacts {
    let c = p.currency;
    PayoutFacts {
        id: p.id.to_string(),
        state: p.state.as_str(),
        settled: p.state != PayoutState::Pending,
        payee: p.payee_msisdn.to_string(),
        amount: format::money(p.amount, c),
        fee: format::money(p.fee, c),
        debited: p.amount.checked_add(p.fee).map_or_else(|_| String::new(), |v| format::money(v, c)),
        reference: p.reference.clone(),
        narration: p.narration.clone().filter(|n| !n.is_empty()),
        failure: failure_text(p),
        transaction_id: p.transaction_id.as_ref().map(ToString::to_string),
        batch: p.bulk_payout_id.as_ref().map(ToString::to_string),
        reversed: (p.amount_reversed != malipo_core::MinorUnit::ZERO).then(|| format::money(p.amount_reversed, c)),
        created: clock.time(p.created_at),
        updated: clock.time(p.updated_at),
        completed: p.completed_at.map(|t| clock.time(t)),
    }
}

/// One of the person's payouts (the one call of the use case).
async fn payout_of(console: &Console, who: &Person, id: String) -> Result<Payout, ConsoleError> {
    let principal = who.principal();
    run(console, move |pl| pl.payouts().get(&principal, &id)).await
}

async fn payout_page(
    req: HttpRequest,
    who: Person,
    path: web::Path<String>,
    query: web::Query<DoneQuery>,
) -> Result<HttpResponse, ConsoleError> {
    who.require(Permission::Read)?;
    let console = console_of(&req)?;
    let p = payout_of(&console, &who, path.into_inner()).await?;
    let clock = LocalTime::of(&console, &who);
    let notice = match query.done.as_deref() {
        Some("paid") => Notice::done("Payout accepted: the amount and its fee are reserved, and the payee is paid in a moment."),
        _ => None,
    };
    let id = p.id.to_string();
    Ok(page(&PayoutPage {
        chrome: Chrome::new(&who, SECTION, format!("Payout {id}"), &format!("{PATH}/{id}")).with_notice(notice),
        facts: facts(&p, &clock),
    }))
}

async fn live_facts(req: HttpRequest, who: Person, path: web::Path<String>) -> Result<HttpResponse, ConsoleError> {
    who.require(Permission::Read)?;
    let console = console_of(&req)?;
    let p = payout_of(&console, &who, path.into_inner()).await?;
    let clock = LocalTime::of(&console, &who);
    Ok(page(&FactsFragment { facts: facts(&p, &clock) }))
}
