//! The Charges list: newest first, a page at a time ("Next page"), filtered by a GET form
//! ("State", "From", "To", "Phone number", "Reference", button "Filter"). Dates are the
//! organisation's country's local days, "To" included.

use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use askama::Template;
use malipo_auth::Permission;
use malipo_charges::{Charge, ChargeFilter, ChargeState};
use malipo_core::Msisdn;
use malipo_countries::Country;
use malipo_service::ServiceError;
use serde::Deserialize;

use super::view::country;
use crate::chrome::{page_response, url_encode, Chrome};
use crate::format;
use crate::pages::form::FieldErrors;
use crate::session::{console_of, Person};
use crate::{run, ConsoleError};

/// Rows a page shows.
const PAGE_SIZE: usize = 20;

/// The filter form as typed (every field optional text, kept to show it again).
#[derive(Clone, Debug, Default, Deserialize)]
pub(super) struct ListQuery {
    #[serde(default)]
    state: String,
    #[serde(default)]
    from: String,
    #[serde(default)]
    to: String,
    #[serde(default)]
    phone: String,
    #[serde(default)]
    reference: String,
    #[serde(default)]
    cursor: Option<String>,
}

/// A choice of the "State" select.
struct StateOption {
    value: &'static str,
    label: &'static str,
    selected: bool,
}

/// A row of the table.
struct Row {
    id: String,
    state: &'static str,
    amount: String,
    phone: String,
    reference: String,
    created: String,
}

#[derive(Template)]
#[template(path = "charges/list.html")]
struct ListPage {
    chrome: Chrome,
    q: ListQuery,
    states: Vec<StateOption>,
    errors: FieldErrors,
    rows: Vec<Row>,
    filtered: bool,
    next: Option<String>,
}

/// `GET /console/charges`.
pub(super) async fn list(req: HttpRequest, who: Person, query: web::Query<ListQuery>) -> Result<HttpResponse, ConsoleError> {
    who.require(Permission::Read)?;
    let console = console_of(&req)?;
    let country = country(&console, &who)?;
    let q = query.into_inner();
    let (filter, errors) = parse_filter(&q, &country, &console);
    let filtered = filter != ChargeFilter::default();
    let (rows, next, status) = if errors.is_empty() {
        let principal = who.principal();
        let (f, cursor) = (filter, q.cursor.clone());
        let found = run(&console, move |p| p.charges().list(&principal, &f, cursor.as_deref(), PAGE_SIZE)).await;
        let found = match found {
            Err(ConsoleError::Service(ServiceError::Validation(_))) => {
                return Err(ConsoleError::BadForm("the page link is not valid; start again from the first page".into()))
            }
            other => other?,
        };
        let rows = found.data.iter().map(|c| row(c, &country)).collect();
        let next = found.next_cursor.map(|c| format!("/console/charges?{}cursor={}", query_string(&q), url_encode(&c)));
        (rows, next, StatusCode::OK)
    } else {
        (Vec::new(), None, StatusCode::UNPROCESSABLE_ENTITY)
    };
    let states = std::iter::once(StateOption { value: "", label: "Any", selected: q.state.is_empty() })
        .chain(ChargeState::ALL.iter().map(|s| StateOption { value: s.as_str(), label: s.as_str(), selected: q.state == s.as_str() }))
        .collect();
    let chrome = Chrome::new(&who, "Charges", "Charges", "/console/charges");
    Ok(page_response(status, &ListPage { chrome, q, states, errors, rows, filtered, next }))
}

fn row(c: &Charge, country: &Country) -> Row {
    Row {
        id: c.id.to_string(),
        state: c.state.as_str(),
        amount: format::money(c.amount, c.currency),
        phone: c.payer_msisdn.to_string(),
        reference: c.reference.clone(),
        created: format::time(c.created_at, country),
    }
}

/// The filter's fields as a query string ending in `&` (for "Next page"), the cursor left out.
fn query_string(q: &ListQuery) -> String {
    [("state", &q.state), ("from", &q.from), ("to", &q.to), ("phone", &q.phone), ("reference", &q.reference)]
        .iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(k, v)| format!("{k}={}&", url_encode(v)))
        .collect()
}

/// The filter the form asks for, or the errors of its fields.
fn parse_filter(q: &ListQuery, country: &Country, console: &crate::Console) -> (ChargeFilter, FieldErrors) {
    let mut errors = FieldErrors::none();
    let mut filter = ChargeFilter::default();
    if !q.state.is_empty() {
        match q.state.parse::<ChargeState>() {
            Ok(s) => filter.state = Some(s),
            Err(_) => errors.add("state", "Choose a state from the list."),
        }
    }
    let date = |field: &str, text: &str, errors: &mut FieldErrors| {
        let text = text.trim();
        if text.is_empty() {
            return None;
        }
        match time::Date::parse(text, time::macros::format_description!("[year]-[month]-[day]")) {
            Ok(d) => Some(local_day(country, d)),
            Err(_) => {
                errors.add(field, "Enter a date as YYYY-MM-DD, for example 2026-11-28.");
                None
            }
        }
    };
    let from = date("from", &q.from, &mut errors);
    let to = date("to", &q.to, &mut errors);
    if let (Some((from, _)), Some((to_start, _))) = (from, to) {
        if to_start < from {
            errors.add("to", "To must not be before From.");
        }
    }
    filter.from = from.map(|(start, _)| start);
    filter.to = to.map(|(_, end)| end);
    let phone = q.phone.trim();
    if !phone.is_empty() {
        match phone_number(phone, country, console) {
            Some(m) => filter.payer = Some(m),
            None => errors.add("phone", format!("Enter a phone number, for example {}712345678.", country.dialling_code)),
        }
    }
    let reference = q.reference.trim();
    if !reference.is_empty() {
        filter.reference = Some(reference.to_owned());
    }
    (filter, errors)
}

/// The UTC bounds of `date`, a local calendar day of `country`.
fn local_day(country: &Country, date: time::Date) -> (malipo_core::Timestamp, malipo_core::Timestamp) {
    // Local noon is inside the day whatever the offset.
    let noon = malipo_core::Timestamp::from_offset_datetime(
        date.with_hms(12, 0, 0).unwrap_or(date.midnight()).assume_offset(format::offset(country)),
    );
    country.local_day(noon)
}

/// A phone number as people type it (`+254 712 345 678`, `0712 345678`, `254712345678`), in
/// the form charges keep it; `None` if it is none.
fn phone_number(typed: &str, country: &Country, console: &crate::Console) -> Option<Msisdn> {
    let digits: String = typed.chars().filter(|c| !matches!(c, ' ' | '-' | '(' | ')' | '.')).collect();
    let digits = digits.strip_prefix('+').unwrap_or(&digits);
    let full = match digits.strip_prefix('0') {
        Some(national) => format!("{}{national}", country.dialling_code.trim_start_matches('+')),
        None => digits.to_owned(),
    };
    console.platform.countries().parse_msisdn(&full).ok().map(|(m, _)| m)
}
