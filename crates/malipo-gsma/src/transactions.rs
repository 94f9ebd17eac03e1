//! Transactions: `POST /transactions/type/{transactionType}` (`merchantpay` a charge,
//! `disbursement` a payout, `deposit` and `withdrawal` an agent's cash-in and cash-out,
//! `transfer` between the caller's own accounts),
//! `GET /transactions/{transactionReference}`, its reversals, and the `PATCH` the document
//! offers, refused here in its error format.

use actix_web::{web, HttpRequest, HttpResponse};
use malipo_auth::Principal;
use malipo_service::{
    AgentCash, CreateCharge, CreatePayout, CreateReversal, CreateTransfer, NewAgentCash, NewCharge, NewPayout, NewReversal, NewTransfer,
    Platform,
};
use serde::Deserialize;

use crate::caller::{self, Body, Caller};
use crate::error::{GsmaError, Pair};
use crate::objects::{self, Progress, TransactionObject};
use crate::{parsed, run, Gsma};

/// The fields of the document's `requestTransactionType` this door reads (the rest, such as
/// `geoCode` or `metadata`, are accepted and not kept).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TransactionRequest {
    amount: String,
    currency: String,
    #[serde(default)]
    debit_party: Vec<Pair>,
    #[serde(default)]
    credit_party: Vec<Pair>,
    requesting_organisation_transaction_reference: Option<String>,
    description_text: Option<String>,
}

/// The fields of the document's `requestReversal` this door reads.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReversalRequest {
    #[serde(rename = "type")]
    kind: String,
    amount: Option<String>,
    currency: Option<String>,
    description_text: Option<String>,
}

impl<'de> Deserialize<'de> for Pair {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Wire {
            key: String,
            value: String,
        }
        let Wire { key, value } = Wire::deserialize(d)?;
        Ok(Pair { key, value })
    }
}

/// The phone number of a party (`msisdn`, digits with or without `+`).
fn msisdn(party: &[Pair], name: &str) -> Result<String, GsmaError> {
    if party.is_empty() {
        return Err(GsmaError::missing(name));
    }
    let entry = party
        .iter()
        .find(|p| p.key.eq_ignore_ascii_case("msisdn"))
        .ok_or_else(|| GsmaError::field(name, format!("{name} must name the customer by msisdn")))?;
    Ok(entry.value.trim().trim_start_matches('+').to_owned())
}

/// The `acc_` id of a party (`accountid`): one of the caller's own accounts.
fn account_id(party: &[Pair], name: &str) -> Result<String, GsmaError> {
    if party.is_empty() {
        return Err(GsmaError::missing(name));
    }
    party
        .iter()
        .find(|p| p.key.eq_ignore_ascii_case("accountid"))
        .map(|p| p.value.trim().to_owned())
        .ok_or_else(|| GsmaError::field(name, format!("{name} must name one of your accounts by accountid")))
}

/// The integrator's reference: `requestingOrganisationTransactionReference`, else the
/// correlation id, else a fresh one (Malipo keeps a reference with every payment).
fn reference(sent: Option<String>, correlation: Option<&str>) -> String {
    sent.filter(|r| !r.is_empty()).or_else(|| correlation.map(str::to_owned)).unwrap_or_else(|| uuid::Uuid::new_v4().to_string())
}

fn accepted(state: objects::RequestState) -> HttpResponse {
    HttpResponse::Accepted().json(state)
}

/// The caller's currency, which a cash-in or cash-out moves.
fn own_currency(platform: &Platform, principal: &Principal, sent: &str) -> Result<(), GsmaError> {
    let currency = platform.countries().get(&principal.country).map(|c| c.currency.as_str().to_owned()).unwrap_or_default();
    if sent == currency {
        Ok(())
    } else {
        Err(GsmaError::from(malipo_service::ServiceError::CurrencyMismatch(format!("currency must be {currency}")))
            .with("currency", &format!("must be {currency}")))
    }
}

/// `POST /transactions/type/{transactionType}`: answers 202 with the request's state.
///
/// # Errors
/// The document's error object (`docs/gsma.md`).
pub async fn create(
    req: HttpRequest,
    caller: Caller,
    path: web::Path<String>,
    body: Body,
    gsma: web::Data<Gsma>,
) -> Result<HttpResponse, GsmaError> {
    let kind = path.into_inner();
    if !["merchantpay", "disbursement", "deposit", "withdrawal", "transfer"].contains(&kind.as_str()) {
        return Err(GsmaError::transaction_type(format!(
            "transactionType {kind} is not offered; see docs/gsma.md (merchantpay, disbursement, deposit, withdrawal, transfer)"
        )));
    }
    let (request, canonical) = caller::json::<TransactionRequest>(&req, &body.0)?;
    let principal = caller.0;
    let (idem, correlation) = caller::correlation(&req, &principal, &format!("GSMA POST /transactions/type/{kind}"), &canonical)?;
    let callback = idem.callback.is_some();
    let TransactionRequest { amount, currency, debit_party, credit_party, requesting_organisation_transaction_reference, description_text } =
        request;
    let reference = reference(requesting_organisation_transaction_reference, correlation.as_deref());
    let platform = &gsma.platform;
    match kind.as_str() {
        "merchantpay" => {
            let raw = NewCharge {
                payer_msisdn: msisdn(&debit_party, "debitParty")?,
                amount,
                currency: Some(currency),
                reference,
                description: description_text,
            };
            let done =
                parsed(platform, principal, raw, move |p, who, command: &CreateCharge| p.charges().create(who, command, &idem)).await?;
            let c = done.value;
            Ok(accepted(objects::request_state(c.id.as_str(), objects::charge_progress(&c), Some(c.expires_at), c.updated_at, callback)))
        }
        "disbursement" => {
            let raw = NewPayout {
                payee_msisdn: msisdn(&credit_party, "creditParty")?,
                amount,
                reference,
                currency: Some(currency),
                narration: description_text,
            };
            let done =
                parsed(platform, principal, raw, move |p, who, command: &CreatePayout| p.payouts().create(who, command, &idem)).await?;
            let po = done.value;
            Ok(accepted(objects::request_state(po.id.as_str(), objects::payout_progress(&po), None, po.updated_at, callback)))
        }
        "transfer" => {
            let from = account_id(&debit_party, "debitParty")?;
            let to = account_id(&credit_party, "creditParty")?;
            let done = run(platform, move |p| {
                let own = p.accounts().list(&principal)?;
                let kind_of = |id: &str, field: &str| {
                    own.iter().find(|b| b.account.id.as_str() == id).map(|b| b.account.kind.as_str().to_owned()).ok_or_else(|| {
                        malipo_service::ServiceError::field(field, "invalid_value", format!("{field} must be one of your own accounts"))
                    })
                };
                let raw = NewTransfer { from: kind_of(&from, "debitParty")?, to: kind_of(&to, "creditParty")?, amount };
                let command = p.parse::<CreateTransfer>(&principal, &raw)?;
                if p.countries().get(&principal.country).is_some_and(|c| c.currency.as_str() != currency) {
                    return Err(malipo_service::ServiceError::CurrencyMismatch(format!(
                        "currency must be that of the accounts, not {currency}"
                    )));
                }
                p.transfers().transfer(&principal, &command, &idem)
            })
            .await?;
            let t = done.value;
            Ok(accepted(objects::request_state(t.transaction_id.as_str(), Progress::Completed, None, t.created_at, callback)))
        }
        "deposit" => {
            own_currency(platform, &principal, &currency)?;
            let raw = NewAgentCash { customer_msisdn: msisdn(&credit_party, "creditParty")?, amount };
            let done = parsed(platform, principal, raw, move |p, who, command: &AgentCash| p.agents().cash_in(who, command, &idem)).await?;
            let cash = done.value;
            Ok(accepted(objects::request_state(cash.transaction_id.as_str(), Progress::Completed, None, cash.created_at, callback)))
        }
        _ => {
            own_currency(platform, &principal, &currency)?;
            let raw = NewAgentCash { customer_msisdn: msisdn(&debit_party, "debitParty")?, amount };
            let done =
                parsed(platform, principal, raw, move |p, who, command: &AgentCash| p.agents().cash_out(who, command, &idem)).await?;
            let c = done.value;
            Ok(accepted(objects::request_state(c.id.as_str(), objects::charge_progress(&c), Some(c.expires_at), c.updated_at, callback)))
        }
    }
}

/// The transaction an id names, as the document's object: a charge (`ch_`), a cash-out (`wd_`),
/// a payout (`po_`), a reversal (`rv_`) or a ledger transaction (`tx_`, a cash-in's).
///
/// # Errors
/// [`malipo_service::ServiceError::NotFound`] for any other id.
pub fn find(p: &Platform, principal: &Principal, reference: &str) -> Result<TransactionObject, malipo_service::ServiceError> {
    match reference.split_once('_').map(|(prefix, _)| prefix) {
        Some("ch") => Ok(objects::charge(&p.charges().get(principal, reference)?)),
        Some("wd") => Ok(objects::charge(&p.agents().get_cash_out(principal, reference)?)),
        Some("po") => Ok(objects::payout(&p.payouts().get(principal, reference)?)),
        Some("rv") => {
            let r = p.reversals().get(principal, reference)?;
            let original = find(p, principal, &objects::original_of(&r))?;
            Ok(objects::reversal(&r, &original))
        }
        Some("tx") => Ok(objects::ledger(&p.transactions().get(principal, reference, None)?)),
        _ => Err(malipo_service::ServiceError::NotFound),
    }
}

/// `GET /transactions/{transactionReference}`.
///
/// # Errors
/// 404 for an id the caller has no transaction of.
pub async fn get(caller: Caller, path: web::Path<String>, gsma: web::Data<Gsma>) -> Result<HttpResponse, GsmaError> {
    let (principal, reference) = (caller.0, path.into_inner());
    let object = run(&gsma.platform, move |p| find(p, &principal, &reference)).await?;
    Ok(HttpResponse::Ok().json(object))
}

/// `PATCH /transactions/{transactionReference}`: the document's way to update a transaction
/// (for example to authorise one the provider holds). Malipo's payer approves on their phone
/// and a payment is never edited after it is made, so the door refuses it (`docs/gsma.md`).
///
/// # Errors
/// Always: 404 for an unknown transaction, else 400 `businessRule`/`incorrectState`.
pub async fn patch(caller: Caller, path: web::Path<String>, gsma: web::Data<Gsma>) -> Result<HttpResponse, GsmaError> {
    let (principal, reference) = (caller.0, path.into_inner());
    run(&gsma.platform, move |p| find(p, &principal, &reference)).await?;
    Err(GsmaError::from(malipo_service::ServiceError::InvalidState(
        "a transaction is not updated once made: the payer approves on their phone; reverse it with POST …/reversals".into(),
    )))
}

/// `POST /transactions/{transactionReference}/reversals`: all (no `amount`) or part of a
/// completed merchant payment or disbursement, with the fee given back in proportion, as
/// `POST /api/v1/reversals`. Answers 202 with the request's state, completed.
///
/// # Errors
/// The document's error object.
pub async fn reverse(
    req: HttpRequest,
    caller: Caller,
    path: web::Path<String>,
    body: Body,
    gsma: web::Data<Gsma>,
) -> Result<HttpResponse, GsmaError> {
    let reference = path.into_inner();
    let (request, canonical) = caller::json::<ReversalRequest>(&req, &body.0)?;
    if request.kind != "reversal" {
        return Err(GsmaError::transaction_type("type must be reversal (an adjustment is not offered)").with("type", "must be reversal"));
    }
    let principal = caller.0;
    if let Some(currency) = &request.currency {
        own_currency(&gsma.platform, &principal, currency)?;
    }
    let (idem, _) = caller::correlation(&req, &principal, "GSMA POST /transactions/reversals", &canonical)?;
    let callback = idem.callback.is_some();
    let prefix = reference.split_once('_').map(|(prefix, _)| prefix.to_owned());
    let (charge_ref, payout_ref, transaction_id) = match prefix.as_deref() {
        Some("ch") => (Some(reference), None, None),
        Some("po") => (None, Some(reference), None),
        Some("tx") => (None, None, Some(reference)),
        _ => return Err(GsmaError::not_found("no such transaction")),
    };
    let raw = NewReversal {
        charge_ref,
        payout_ref,
        transaction_id,
        amount: request.amount,
        reason: request
            .description_text
            .filter(|d| !d.trim().is_empty())
            .unwrap_or_else(|| "reversal requested through the GSMA API".into()),
    };
    let done =
        parsed(&gsma.platform, principal, raw, move |p, who, command: &CreateReversal| p.reversals().create(who, command, &idem)).await?;
    let r = done.value;
    Ok(accepted(objects::request_state(r.id.as_str(), Progress::Completed, None, r.created_at, callback)))
}
