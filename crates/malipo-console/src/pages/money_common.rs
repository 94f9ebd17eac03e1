//! What the money sections share (payment requests, payouts, transactions, reconciliation): list
//! pages of 20 with a "Next page" link, choices of a `<select>`, the bounds of a period typed as
//! local calendar days (or linked as instants), and the errors of a refused form in its words.

use malipo_core::Timestamp;
use malipo_service::validate::sentence;
use malipo_service::ServiceError;

use super::form::FieldErrors;
use super::local_time::LocalTime;
use crate::chrome::url_encode;
use crate::error::problem_text;

/// Rows of a list page.
pub const PAGE_SIZE: usize = 20;

/// An optional query or form value: absent and empty are the same.
pub fn given(value: Option<&str>) -> Option<&str> {
    value.map(str::trim).filter(|v| !v.is_empty())
}

/// `path?name=value&…` with the non-empty parameters, percent-encoded.
pub fn href(path: &str, params: &[(&str, Option<&str>)]) -> String {
    let query: Vec<String> = params.iter().filter_map(|(k, v)| given(*v).map(|v| format!("{k}={}", url_encode(v)))).collect();
    if query.is_empty() {
        path.to_owned()
    } else {
        format!("{path}?{}", query.join("&"))
    }
}

/// One choice of a `<select>`.
#[derive(Clone, Debug)]
pub struct Choice {
    /// Its value (`""`: any).
    pub value: &'static str,
    /// What it reads.
    pub label: &'static str,
    /// Whether it is chosen.
    pub selected: bool,
}

/// The choices `(value, label)`, the one equal to `current` chosen (else the first).
pub fn choices(all: &[(&'static str, &'static str)], current: Option<&str>) -> Vec<Choice> {
    let current = current.unwrap_or("");
    let known = all.iter().any(|(v, _)| *v == current);
    all.iter()
        .enumerate()
        .map(|(i, (value, label))| Choice { value, label, selected: if known { *value == current } else { i == 0 } })
        .collect()
}

/// Which end of a period a bound is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// "From": the day's first instant.
    Start,
    /// "To": the day is included, so the next day's first instant.
    Finish,
}

/// A bound of a period as typed: a local calendar day (`2026-11-28`, the date input's value)
/// or an instant (RFC 3339, as a report's bounds are linked).
///
/// # Errors
/// A message for the field when it is neither.
pub fn parse_bound(text: &str, clock: &LocalTime, end: End, label: &str) -> Result<Timestamp, String> {
    let day = if end == End::Start { clock.day_start(text) } else { clock.day_end(text) };
    day.or_else(|| Timestamp::parse_rfc3339(text).ok()).ok_or_else(|| format!("{label} must be a date, YYYY-MM-DD."))
}

/// The errors of a refused form, beside the form's fields and in its words: `fields` maps a
/// use case's field name to the form's field and the label a person reads (`payee_msisdn` is
/// "Phone number"). `None` when the refusal is not about fields.
pub fn form_errors(e: &ServiceError, fields: &[(&str, &str, &str)]) -> Option<FieldErrors> {
    let ServiceError::Validation(list) = e else { return None };
    let mut errors = FieldErrors::none();
    for f in list {
        let (field, message) = match fields.iter().find(|(from, _, _)| *from == f.field) {
            Some((from, to, label)) => {
                let message = f.message.strip_prefix(from).map_or_else(|| f.message.clone(), |rest| format!("{label}{rest}"));
                ((*to).to_owned(), message)
            }
            None => (f.field.clone(), f.message.clone()),
        };
        errors.add_once(&field, sentence(&message));
    }
    Some(errors)
}

/// A refusal that is not about one field, as the sentence a form shows above itself.
pub fn refusal_text(e: &ServiceError) -> String {
    match e {
        ServiceError::InsufficientFunds => {
            "Insufficient funds: the account's available balance does not cover this amount and its fee.".into()
        }
        ServiceError::IdempotencyReused => {
            "This form was already used for another request. Check the list before trying again; the form below is a new one.".into()
        }
        other => {
            let (title, message) = problem_text(other);
            sentence(&format!("{title}: {message}"))
        }
    }
}

/// A pay code as a customer types it, in two groups of three (`482 913`).
pub fn spaced_code(code: &str) -> String {
    match (code.get(..3), code.get(3..)) {
        (Some(a), Some(b)) if code.len() == 6 => format!("{a} {b}"),
        _ => code.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use malipo_service::FieldError;

    #[test]
    fn links_keep_the_given_filters_encoded() {
        assert_eq!(href("/console/payouts", &[("state", Some("")), ("cursor", None)]), "/console/payouts");
        assert_eq!(
            href("/console/transactions/export", &[("from", Some("2026-11-27T21:00:00Z")), ("account", Some("payout"))]),
            "/console/transactions/export?from=2026-11-27T21%3A00%3A00Z&account=payout"
        );
    }

    #[test]
    fn refused_fields_are_named_as_the_form_names_them() {
        let e = ServiceError::Validation(vec![
            FieldError::new("payee_msisdn", "invalid_msisdn", "payee_msisdn is not a number of a configured country"),
            FieldError::new("amount", "invalid_amount", "amount must be positive"),
        ]);
        let errors = form_errors(&e, &[("payee_msisdn", "payee_msisdn", "Phone number")]).unwrap_or_default();
        assert_eq!(errors.of("payee_msisdn"), Some("Phone number is not a number of a configured country."));
        assert_eq!(errors.of("amount"), Some("Amount must be positive."));
        assert_eq!(spaced_code("482913"), "482 913");
    }
}
