//! "Refund" on a charge's page: "Amount" (the remaining amount by default; a partial refund is
//! allowed), "Reason", "Confirm refund". A reversal through the same use case as
//! `POST /reversals`, idempotent with the form's one-time key; it needs `Permission::Refund`.

use actix_web::{web, HttpRequest, HttpResponse};
use malipo_auth::{Permission, Principal};
use malipo_core::ChargeRef;
use malipo_service::{CreateReversal, Done, Idem, NewReversal, Platform, ServiceError};
use serde::Deserialize;

use super::detail::{show, Refused};
use crate::chrome::see_other;
use crate::csrf::Posted;
use crate::error::problem_text;
use crate::idem;
use crate::pages::form::FieldErrors;
use crate::session::console_of;
use crate::{csrf_forms, run, ConsoleError};

/// The refund form as posted.
#[derive(Debug, Default, Deserialize)]
pub(super) struct RefundForm {
    #[serde(default)]
    csrf_token: String,
    #[serde(default)]
    idempotency_key: String,
    #[serde(default)]
    amount: String,
    #[serde(default)]
    reason: String,
}
csrf_forms!(RefundForm);

/// `POST /console/charges/{id}/refund`.
pub(super) async fn refund(req: HttpRequest, path: web::Path<String>, posted: Posted<RefundForm>) -> Result<HttpResponse, ConsoleError> {
    let Posted { person: who, form, ip } = posted;
    who.require(Permission::Refund)?;
    let id = path.into_inner();
    ChargeRef::parse(&id).map_err(|_| ConsoleError::NotFound)?;
    let console = console_of(&req)?;
    let fields = [("charge", id.as_str()), ("amount", form.amount.as_str()), ("reason", form.reason.as_str())];
    let idem = idem::by(idem::idem(&who, "refund", &form.idempotency_key, &fields)?, &who, ip, "reversal.created");
    let (principal, charge, amount, reason) = (who.principal(), id.clone(), form.amount.clone(), form.reason.clone());
    match run(&console, move |p| reverse(p, &principal, &charge, &amount, &reason, &idem)).await {
        Ok(outcome) => Ok(see_other(&idem::location(&outcome))),
        Err(ConsoleError::Service(e)) if refused_form(&e) => {
            let errors = FieldErrors::from_service(&e, &[]).unwrap_or_else(|| FieldErrors::one("amount", capitalised(&problem_text(&e).1)));
            let refused = Refused { amount: form.amount, reason: form.reason, key: form.idempotency_key, errors };
            show(&req, &who, &id, None, Some(refused)).await
        }
        Err(e) => Err(e),
    }
}

/// Refusals the form shows beside its fields (the amount's, when the use case names no field).
fn refused_form(e: &ServiceError) -> bool {
    matches!(e, ServiceError::Validation(_) | ServiceError::ReversalExceedsOriginal(_) | ServiceError::InsufficientFunds)
}

fn capitalised(message: &str) -> String {
    let mut chars = message.chars();
    let mut out: String = chars.next().map(|c| c.to_uppercase().collect()).unwrap_or_default();
    out.push_str(chars.as_str());
    if !out.ends_with('.') {
        out.push('.');
    }
    out
}

/// The reversal use case, called as `POST /reversals` calls it (one call, kept apart for the
/// use cases' typed commands): the whole refund or none of it, once per form key; its answer
/// is the charge's page with the refund's notice.
fn reverse(
    p: &Platform,
    principal: &Principal,
    charge: &str,
    amount: &str,
    reason: &str,
    idem: &Idem,
) -> Result<Done<String>, ServiceError> {
    let new = NewReversal {
        charge_ref: Some(charge.to_owned()),
        amount: Some(amount.trim().to_owned()),
        reason: reason.to_owned(),
        ..NewReversal::default()
    };
    let command = p.parse::<CreateReversal>(principal, &new)?;
    idem::page(p.reversals().create(principal, &command, idem), |r| format!("/console/charges/{charge}?done=refund&reversal={}", r.id))
}
