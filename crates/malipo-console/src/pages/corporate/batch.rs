//! A batch's page: its facts and counts (a live region while it is paid), its items filtered by
//! state, "Download failed items" (the upload's format, through the one CSV writer), and, for a
//! checker, "Approve" (with a fresh "Authentication code") and "Reject" (with a "Reason"). The
//! person who made the batch is told why they cannot; a hand-made post of theirs is refused
//! with 403 `maker_checker_violation` before their code is spent, nothing reserved.

use std::net::IpAddr;

use actix_web::{web, HttpRequest, HttpResponse, ResponseError};
use askama::Template;
use malipo_auth::Permission;
use malipo_payouts::{BatchState, BulkPayout, Payout, PayoutState};
use malipo_service::{ApproveBulkPayout, NewRejection, RejectBulkPayout, ServiceError};
use serde::Deserialize;

use super::rows::{BatchRow, Names, BULK_PATH};
use crate::chrome::{page, page_response, see_other, Chrome, Notice};
use crate::csrf::Posted;
use crate::pages::form::FieldErrors;
use crate::pages::local_time::LocalTime;
use crate::pages::money_common::{choices, given, refusal_text, Choice};
use crate::session::{console_of, Person};
use crate::{csrf_forms, csv, format, idem, run, Console, ConsoleError};

const SECTION: &str = "Bulk payouts";
const STATES: [(&str, &str); 4] = [("", "Any state"), ("pending", "Pending"), ("completed", "Completed"), ("failed", "Failed")];
/// Items a page shows.
const ITEMS: usize = 100;

/// An item as a row.
struct ItemRow {
    line: u32,
    id: String,
    payee: String,
    amount: String,
    reference: String,
    narration: String,
    state: &'static str,
    failure: String,
}

#[derive(Template)]
#[template(path = "corporate/batch.html")]
struct BatchPage {
    chrome: Chrome,
    b: BatchRow,
    /// The checker may approve or reject it now.
    can_decide: bool,
    /// Why this person cannot approve or reject it, if they cannot.
    why_not: Option<&'static str>,
    form: DecideForm,
    errors: FieldErrors,
    states: Vec<Choice>,
    items: Vec<ItemRow>,
    next: Option<String>,
    state_filter: String,
}

#[derive(Template)]
#[template(path = "corporate/counts.html")]
struct CountsFragment {
    b: BatchRow,
}

#[derive(Debug, Default, Deserialize)]
pub struct ItemsQuery {
    state: Option<String>,
    after: Option<String>,
    done: Option<String>,
}

#[derive(Clone, Debug, Default, Deserialize)]
pub struct DecideForm {
    #[serde(default)]
    csrf_token: String,
    #[serde(default)]
    idempotency_key: String,
    #[serde(default)]
    code: String,
    #[serde(default)]
    reason: String,
}
csrf_forms!(DecideForm);

async fn batch_of(console: &Console, who: &Person, id: String) -> Result<BulkPayout, ConsoleError> {
    let principal = who.principal();
    run(console, move |p| p.bulk_payouts().get(&principal, &id)).await
}

/// Whether `who` made `b` (in the console, or through a key pair they created).
fn made_by(b: &BulkPayout, who: &Person) -> bool {
    let principal = who.principal();
    b.is_maker(&principal.client_id, principal.person.as_ref())
}

fn why_not(b: &BulkPayout, who: &Person) -> Option<&'static str> {
    if b.state != BatchState::AwaitingApproval {
        return None;
    }
    if made_by(b, who) {
        return Some("You made this batch, so you cannot approve or reject it: another checker must. This holds whatever session or key pair you use.");
    }
    if !who.may(Permission::ApproveBulk) {
        return Some("Waiting for a checker: only a checker may approve or reject a batch.");
    }
    None
}

fn failure(p: &Payout) -> String {
    p.failure_reason.map(|f| f.as_str().to_owned()).unwrap_or_default()
}

#[allow(clippy::too_many_arguments)]
async fn render(
    console: &Console,
    who: &Person,
    b: &BulkPayout,
    query: &ItemsQuery,
    form: DecideForm,
    errors: FieldErrors,
    notice: Option<Notice>,
) -> Result<BatchPage, ConsoleError> {
    let state = given(query.state.as_deref());
    let filter = state
        .map(|s| s.parse::<PayoutState>().map_err(|_| ConsoleError::BadForm("state must be pending, completed or failed".into())))
        .transpose()?;
    let principal = who.principal();
    let (id, after) = (b.id.to_string(), given(query.after.as_deref()).map(str::to_owned));
    let items = run(console, move |p| p.bulk_payouts().items(&principal, &id, filter, after.as_deref(), ITEMS)).await?;
    let names = Names::of(console, who).await?;
    let clock = LocalTime::of(console, who);
    let row = BatchRow::of(b, &names, &clock);
    let why_not = why_not(b, who);
    let can_decide = b.state == BatchState::AwaitingApproval && who.may(Permission::ApproveBulk) && why_not.is_none();
    let next = items
        .next_cursor
        .as_deref()
        .map(|c| crate::pages::money_common::href(&format!("{BULK_PATH}/{}", b.id), &[("state", state), ("after", Some(c))]));
    Ok(BatchPage {
        chrome: Chrome::new(who, SECTION, format!("Batch {}", b.id), &format!("{BULK_PATH}/{}", b.id)).with_notice(notice),
        b: row,
        can_decide,
        why_not,
        form: DecideForm { code: String::new(), ..form },
        errors,
        states: choices(&STATES, state),
        items: items
            .data
            .iter()
            .map(|p| ItemRow {
                line: p.bulk_index.unwrap_or_default().saturating_add(2),
                id: p.id.to_string(),
                payee: p.payee_msisdn.to_string(),
                amount: format::money(p.amount, p.currency),
                reference: p.reference.clone(),
                narration: p.narration.clone().unwrap_or_default(),
                state: p.state.as_str(),
                failure: failure(p),
            })
            .collect(),
        next,
        state_filter: state.unwrap_or_default().to_owned(),
    })
}

/// `GET /console/bulk-payouts/{id}`.
pub async fn show(
    req: HttpRequest,
    who: Person,
    path: web::Path<String>,
    query: web::Query<ItemsQuery>,
) -> Result<HttpResponse, ConsoleError> {
    who.require(Permission::Read)?;
    let console = console_of(&req)?;
    let b = batch_of(&console, &who, path.into_inner()).await?;
    let notice = match query.done.as_deref() {
        Some("submitted") => Notice::done("Submitted for approval: a checker must approve the batch before anything is paid."),
        Some("approved") => Notice::done("Approved: the total is reserved and the items are being paid."),
        Some("rejected") => Notice::done("Rejected: nothing will be paid."),
        _ => None,
    };
    let form = DecideForm { idempotency_key: idem::new_key(), ..DecideForm::default() };
    Ok(page(&render(&console, &who, &b, &query, form, FieldErrors::none(), notice).await?))
}

/// `GET /console/bulk-payouts/{id}/live`: the counts, for the page's live region.
pub async fn live(req: HttpRequest, who: Person, path: web::Path<String>) -> Result<HttpResponse, ConsoleError> {
    who.require(Permission::Read)?;
    let console = console_of(&req)?;
    let b = batch_of(&console, &who, path.into_inner()).await?;
    let names = Names::of(&console, &who).await?;
    Ok(page(&CountsFragment { b: BatchRow::of(&b, &names, &LocalTime::of(&console, &who)) }))
}

/// `GET /console/bulk-payouts/{id}/failed.csv`: the failed items in the upload's format.
pub async fn failed_csv(req: HttpRequest, who: Person, path: web::Path<String>) -> Result<HttpResponse, ConsoleError> {
    who.require(Permission::Export)?;
    let console = console_of(&req)?;
    let id = path.into_inner();
    let principal = who.principal();
    let b = batch_of(&console, &who, id.clone()).await?;
    let failed = run(&console, move |p| {
        let mut all = Vec::new();
        let mut after: Option<String> = None;
        loop {
            let page = p.bulk_payouts().items(&principal, &id, Some(PayoutState::Failed), after.as_deref(), 1_000)?;
            all.extend(page.data);
            match page.next_cursor {
                Some(c) => after = Some(c),
                None => return Ok(all),
            }
        }
    })
    .await?;
    let mut body = csv::row(&["payee_msisdn", "amount", "reference", "narration"]);
    for p in &failed {
        let amount = p.currency.format_amount(p.amount);
        body.push_str(&csv::row(&[p.payee_msisdn.to_string(), amount, p.reference.clone(), p.narration.clone().unwrap_or_default()]));
    }
    Ok(HttpResponse::Ok()
        .content_type("text/csv; charset=utf-8")
        .insert_header(("Content-Disposition", format!("attachment; filename=\"{}-failed.csv\"", b.id)))
        .body(body))
}

/// The batch to decide on, refused before anything is spent: another organisation's or mode's
/// (404), no longer awaiting (409), or made by `who` (403 `maker_checker_violation`).
async fn decidable(console: &Console, who: &Person, id: String) -> Result<BulkPayout, ConsoleError> {
    who.require(Permission::ApproveBulk)?;
    let b = batch_of(console, who, id).await?;
    if made_by(&b, who) {
        return Err(ConsoleError::Service(ServiceError::MakerChecker));
    }
    if b.state != BatchState::AwaitingApproval {
        return Err(ConsoleError::Service(ServiceError::InvalidState(format!("a {} bulk payout cannot be approved or rejected", b.state))));
    }
    Ok(b)
}

/// The page again after a refusal: the error beside its field or above the forms, 4xx.
async fn refused(
    console: &Console,
    who: &Person,
    b: &BulkPayout,
    form: DecideForm,
    e: ServiceError,
    fields: &[(&str, &str)],
) -> Result<HttpResponse, ConsoleError> {
    let (errors, notice) = match FieldErrors::from_service(&e, fields) {
        Some(errors) => (errors, Notice::alert("Nothing was done: see the form below.")),
        None => (FieldErrors::none(), Notice::alert(format!("Nothing was done. {}", refusal_text(&e)))),
    };
    let form = if matches!(e, ServiceError::IdempotencyReused) { DecideForm { idempotency_key: idem::new_key(), ..form } } else { form };
    let status = ConsoleError::Service(e).status_code();
    Ok(page_response(status, &render(console, who, b, &ItemsQuery::default(), form, errors, notice).await?))
}

/// `POST /console/bulk-payouts/{id}/approve` ("Authentication code").
pub async fn approve(req: HttpRequest, path: web::Path<String>, posted: Posted<DecideForm>) -> Result<HttpResponse, ConsoleError> {
    let Posted { person: who, form, ip } = posted;
    let console = console_of(&req)?;
    let b = decidable(&console, &who, path.into_inner()).await?;
    match approve_now(&console, &who, &b, &form, ip).await {
        Ok(to) => Ok(see_other(&to)),
        Err(ConsoleError::Service(e)) => refused(&console, &who, &b, form, e, &[]).await,
        Err(e) => Err(e),
    }
}

async fn approve_now(console: &Console, who: &Person, b: &BulkPayout, form: &DecideForm, ip: IpAddr) -> Result<String, ConsoleError> {
    let id = b.id.to_string();
    let idem =
        idem::by(idem::idem(who, "bulk-approve", &form.idempotency_key, &[("batch", id.as_str())])?, who, ip, "bulk_payout.approved");
    let (w, code, principal) = (who.0.clone(), form.code.clone(), who.principal());
    let outcome = run(console, move |p| {
        // The fresh code first: a wrong or used one leaves the batch untouched.
        p.people().step_up(&w, &code, ip)?;
        let command = p.parse::<ApproveBulkPayout>(&principal, id.as_str())?;
        idem::page(p.bulk_payouts().approve(&principal, &command, &idem), |b| format!("{BULK_PATH}/{}?done=approved", b.id))
    })
    .await?;
    Ok(idem::location(&outcome))
}

/// `POST /console/bulk-payouts/{id}/reject` ("Reason").
pub async fn reject(req: HttpRequest, path: web::Path<String>, posted: Posted<DecideForm>) -> Result<HttpResponse, ConsoleError> {
    let Posted { person: who, form, ip } = posted;
    let console = console_of(&req)?;
    let b = decidable(&console, &who, path.into_inner()).await?;
    let id = b.id.to_string();
    let fields = [("batch", id.as_str()), ("reason", form.reason.as_str())];
    let idem = idem::by(idem::idem(&who, "bulk-reject", &form.idempotency_key, &fields)?, &who, ip, "bulk_payout.rejected");
    let (principal, reason) = (who.principal(), form.reason.clone());
    let rejected = run(&console, move |p| {
        let command = p.parse::<RejectBulkPayout>(&principal, &NewRejection { batch_id: id, reason })?;
        idem::page(p.bulk_payouts().reject(&principal, &command, &idem), |b| format!("{BULK_PATH}/{}?done=rejected", b.id))
    })
    .await;
    match rejected {
        Ok(outcome) => Ok(see_other(&idem::location(&outcome))),
        Err(ConsoleError::Service(e)) => refused(&console, &who, &b, form, e, &[]).await,
        Err(e) => Err(e),
    }
}
