//! Bulk payouts: "Upload" ("Batch reference", "CSV file", "Preview"), the preview (item count,
//! total, total fees, and every invalid row with its line and reason; nothing is created while
//! a row is invalid), "Submit for approval" (the API's `POST /bulk-payouts` use case under the
//! preview's one-time key), and the table of batches.
//!
//! The file travels from the preview to the submission in the submission form itself (hex, in a
//! hidden field), so any instance can take it and nothing is kept between the two posts; the
//! submission parses it again, as the API would, and its one-time key is fingerprinted by the
//! file's SHA-256, so a double submit makes one batch.

use std::time::Instant;

use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use askama::Template;
use malipo_auth::Permission;
use malipo_core::MinorUnit;
use malipo_countries::FeeOperation;
use malipo_service::{BulkInput, CreateBulkPayout, FieldError, NewBulkPayout, ServiceError};
use sha2::{Digest, Sha256};

use super::multipart::{posted, Parts};
use super::rows::{BatchRow, Names, BULK_PATH};
use crate::chrome::{page, page_response, see_other, Chrome, Notice};
use crate::pages::form::FieldErrors;
use crate::pages::local_time::LocalTime;
use crate::session::{console_of, Person};
use crate::{format, idem, run, Console, ConsoleError};
use malipo_service::validate::sentence;

const SECTION: &str = "Bulk payouts";
/// The API's upload limit (5 MiB).
const MAX_FILE: usize = 5 * 1024 * 1024;
/// Room for the form's other fields and the multipart framing.
const FRAMING: usize = 64 * 1024;
/// How many batches the table shows.
const BATCHES: usize = 50;

#[derive(Template)]
#[template(path = "corporate/bulk.html")]
struct BulkPage {
    chrome: Chrome,
    can_upload: bool,
    reference: String,
    errors: FieldErrors,
    rows: Vec<BatchRow>,
}

/// One invalid row of a file, or a problem of the whole file (no line).
pub struct BadRow {
    /// The file's line (the header is line 1), when the problem is a row's.
    pub line: Option<usize>,
    /// The column (`amount`), or what the problem is about.
    pub column: String,
    /// Why, as a sentence.
    pub reason: String,
}

/// What a valid file would create.
pub struct Summary {
    /// How many items.
    pub count: usize,
    /// Their total.
    pub total: String,
    /// Their payout fees.
    pub fees: String,
    /// The total with fees: what approval reserves.
    pub debit: String,
}

#[derive(Template)]
#[template(path = "corporate/preview.html")]
struct PreviewPage {
    chrome: Chrome,
    reference: String,
    file_name: String,
    summary: Option<Summary>,
    bad_rows: Vec<BadRow>,
    reference_error: Option<String>,
    /// The file as hex, for "Submit for approval".
    csv_hex: String,
    idempotency_key: String,
    millis: u128,
}

/// `GET /console/bulk-payouts`.
pub async fn list_page(req: HttpRequest, who: Person) -> Result<HttpResponse, ConsoleError> {
    who.require(Permission::Read)?;
    let console = console_of(&req)?;
    Ok(page(&render(&console, &who, String::new(), FieldErrors::none(), None).await?))
}

async fn render(
    console: &Console,
    who: &Person,
    reference: String,
    errors: FieldErrors,
    notice: Option<Notice>,
) -> Result<BulkPage, ConsoleError> {
    let principal = who.principal();
    let batches = run(console, move |p| p.bulk_payouts().list(&principal, None, BATCHES)).await?;
    let names = Names::of(console, who).await?;
    let clock = LocalTime::of(console, who);
    Ok(BulkPage {
        chrome: Chrome::new(who, SECTION, SECTION, BULK_PATH).with_notice(notice),
        can_upload: who.may(Permission::UploadBulk),
        reference,
        errors,
        rows: batches.data.iter().map(|b| BatchRow::of(b, &names, &clock)).collect(),
    })
}

/// The problems of a refused file, by line: `items[N].field` is line N + 2 (after the header).
pub fn bad_rows(errors: &[FieldError]) -> (Vec<BadRow>, Option<String>) {
    let mut rows = Vec::new();
    let mut reference = None;
    for e in errors {
        if e.field == "reference" {
            reference = Some(sentence(&e.message.replacen("reference", "Batch reference", 1)));
            continue;
        }
        let indexed = e.field.strip_prefix("items[").and_then(|rest| rest.split_once(']'));
        let row = indexed.and_then(|(n, rest)| Some((n.parse::<usize>().ok()?, rest.trim_start_matches('.'))));
        match row {
            Some((n, column)) => {
                let prefix = format!("{}.", e.field);
                let reason = e.message.strip_prefix(&prefix).or_else(|| e.message.strip_prefix(&e.field)).unwrap_or(&e.message);
                let column = if column.is_empty() { "line" } else { column };
                let reason = if column == "line" { reason.trim().to_owned() } else { format!("{column} {}", reason.trim()) };
                rows.push(BadRow { line: n.checked_add(2), column: column.to_owned(), reason: sentence(&reason) });
            }
            None => rows.push(BadRow { line: None, column: e.field.clone(), reason: sentence(&e.message) }),
        }
    }
    (rows, reference)
}

/// What the file would create, or its problems: the API's command, parsed (nothing stored).
async fn check(console: &Console, who: &Person, reference: String, csv: Vec<u8>) -> Result<Result<Summary, Vec<FieldError>>, ConsoleError> {
    let principal = who.principal();
    run(console, move |p| {
        let command = match p.parse::<CreateBulkPayout>(&principal, &NewBulkPayout { reference, items: BulkInput::Csv(csv) }) {
            Ok(c) => c,
            Err(ServiceError::Validation(errors)) => return Ok(Err(errors)),
            Err(e) => return Err(e),
        };
        let country = p.countries().get(&principal.country).ok_or(ServiceError::NotFound)?;
        let fees = command.items.iter().map(|i| country.fee(FeeOperation::Payout, i.amount));
        let total = MinorUnit::checked_sum(command.items.iter().map(|i| i.amount))?;
        let fees = MinorUnit::checked_sum(fees)?;
        let c = country.currency;
        Ok(Ok(Summary {
            count: command.items.len(),
            total: format::money(total, c),
            fees: format::money(fees, c),
            debit: format::money(total.checked_add(fees)?, c),
        }))
    })
    .await
}

fn preview_page(
    who: &Person,
    reference: String,
    file_name: String,
    csv: &[u8],
    checked: Result<Summary, Vec<FieldError>>,
    millis: u128,
) -> HttpResponse {
    let (summary, bad, reference_error) = match checked {
        Ok(s) => (Some(s), Vec::new(), None),
        Err(errors) => {
            let (bad, reference_error) = bad_rows(&errors);
            (None, bad, reference_error)
        }
    };
    let valid = summary.is_some();
    let notice = if valid {
        Notice::done("The file is valid. Nothing is created until you submit it for approval.")
    } else {
        Notice::alert("Nothing was created: correct the file and upload it again.")
    };
    let view = PreviewPage {
        chrome: Chrome::new(who, SECTION, "Preview", BULK_PATH).with_notice(notice),
        reference,
        file_name,
        summary,
        bad_rows: bad,
        reference_error,
        csv_hex: if valid { hex::encode(csv) } else { String::new() },
        idempotency_key: idem::new_key(),
        millis,
    };
    page_response(if valid { StatusCode::OK } else { StatusCode::UNPROCESSABLE_ENTITY }, &view)
}

/// `POST /console/bulk-payouts/preview` (multipart: `reference`, `file`).
pub async fn preview(req: HttpRequest, payload: web::Payload) -> Result<HttpResponse, ConsoleError> {
    let (who, parts, _) = posted(&req, payload, MAX_FILE.saturating_add(FRAMING)).await?;
    who.require(Permission::UploadBulk)?;
    let console = console_of(&req)?;
    let reference = parts.text("reference");
    let file = parts.get("file").cloned().unwrap_or_default();
    if file.data.is_empty() {
        let errors = FieldErrors::one("file", "Choose the CSV file to upload.");
        let view = render(&console, &who, reference, errors, Notice::alert("Nothing was uploaded.")).await?;
        return Ok(page_response(StatusCode::UNPROCESSABLE_ENTITY, &view));
    }
    if file.data.len() > MAX_FILE {
        let errors = FieldErrors::one("file", "The file is larger than 5 MiB, the limit of an upload.");
        let view = render(&console, &who, reference, errors, Notice::alert("Nothing was uploaded.")).await?;
        return Ok(page_response(StatusCode::PAYLOAD_TOO_LARGE, &view));
    }
    let started = Instant::now();
    let checked = check(&console, &who, reference.clone(), file.data.clone()).await?;
    let millis = started.elapsed().as_millis();
    Ok(preview_page(&who, reference, file.filename.unwrap_or_default(), &file.data, checked, millis))
}

/// The submission's file, from its hidden field.
fn file_of(parts: &Parts) -> Result<Vec<u8>, ConsoleError> {
    let text = parts.text("csv_hex");
    let csv = hex::decode(text.trim()).map_err(|_| ConsoleError::BadForm("the file did not come back whole; upload it again".into()))?;
    if csv.is_empty() || csv.len() > MAX_FILE {
        return Err(ConsoleError::BadForm("the file did not come back whole; upload it again".into()));
    }
    Ok(csv)
}

/// `POST /console/bulk-payouts` (multipart: `reference`, `csv_hex`, `idempotency_key`): creates
/// the batch, awaiting a checker.
pub async fn submit(req: HttpRequest, payload: web::Payload) -> Result<HttpResponse, ConsoleError> {
    let (who, parts, ip) = posted(&req, payload, MAX_FILE.saturating_mul(2).saturating_add(FRAMING)).await?;
    who.require(Permission::UploadBulk)?;
    let console = console_of(&req)?;
    let reference = parts.text("reference");
    let csv = file_of(&parts)?;
    let digest = hex::encode(Sha256::digest(&csv));
    let fields = [("reference", reference.as_str()), ("file_sha256", digest.as_str())];
    let idem = idem::by(idem::idem(&who, "bulk-payout", &parts.text("idempotency_key"), &fields)?, &who, ip, "bulk_payout.created");
    let principal = who.principal();
    let (r, file) = (reference.clone(), csv.clone());
    let created = run(&console, move |p| {
        let command = p.parse::<CreateBulkPayout>(&principal, &NewBulkPayout { reference: r, items: BulkInput::Csv(file) })?;
        idem::page(p.bulk_payouts().create(&principal, &command, &idem), |b| format!("{BULK_PATH}/{}?done=submitted", b.id))
    })
    .await;
    match created {
        Ok(outcome) => Ok(see_other(&idem::location(&outcome))),
        // Changed on its way back: the preview of what came, nothing created.
        Err(ConsoleError::Service(ServiceError::Validation(errors))) => {
            Ok(preview_page(&who, reference, String::new(), &csv, Err(errors), 0))
        }
        Err(e) => Err(e),
    }
}
