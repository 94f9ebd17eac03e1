//! Batch transactions, the document's disbursement batches, as Malipo's bulk payouts with
//! maker/checker (contract section 6): `POST /batchtransactions` (the maker, `bulk:create`),
//! `PATCH /batchtransactions/{batchId}` to approve it (the checker, `bulk:approve`, never the
//! maker), `GET /batchtransactions/{batchId}` and its `/rejections` and `/completions`. A
//! checker rejects a batch through the REST API or the console: the document's `batchStatus`
//! has no rejected state to patch to (`docs/gsma.md`).

use std::collections::HashMap;

use actix_web::{web, HttpRequest, HttpResponse};
use malipo_auth::Principal;
use malipo_core::Timestamp;
use malipo_payouts::{BulkPayout, Payout, PayoutState, RawItem, MAX_BULK_ITEMS};
use malipo_service::{ApproveBulkPayout, BulkInput, CreateBulkPayout, FieldError, NewBulkPayout, Platform, ServiceError};
use serde::Deserialize;
use serde_json::Value;

use crate::caller::{self, Body, Caller};
use crate::error::{GsmaError, Pair};
use crate::objects;
use crate::{parsed, run, Gsma};

/// The idempotency operation of a batch's creation.
pub const CREATE: &str = "GSMA POST /batchtransactions";
/// The idempotency operation of a batch's approval.
pub const APPROVE: &str = "GSMA PATCH /batchtransactions/{batchId}";

/// The largest batch body the door reads: 5 MiB, as the REST API's uploads (10,000 items fit);
/// every other body keeps [`caller::BODY_LIMIT`].
pub const BODY_LIMIT: usize = 5 * 1024 * 1024;

/// The most records one page of `/rejections` or `/completions` holds; the document's default
/// is 50.
pub const MAX_LIMIT: usize = 100;

/// The fields of the document's `requestBatchTransaction` this door reads (`batchdescription`,
/// `scheduledStartDate`, `customData` and the rest are accepted and not kept).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct BatchRequest {
    transactions: Vec<Value>,
    batch_title: Option<String>,
}

/// The fields of one `requestTransaction` of a batch this door reads.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ItemRequest {
    #[serde(rename = "type")]
    kind: Option<String>,
    amount: Option<String>,
    currency: Option<String>,
    #[serde(default)]
    credit_party: Vec<Pair>,
    requesting_organisation_transaction_reference: Option<String>,
    description_text: Option<String>,
}

/// The document's key of a field a bulk payout's command names (`items[3].amount` →
/// `transactions[3].amount`, `reference` → `batchTitle`).
fn document_key(field: &str) -> String {
    match field {
        "reference" => return "batchTitle".into(),
        "items" => return "transactions".into(),
        _ => {}
    }
    let Some(rest) = field.strip_prefix("items[") else { return field.to_owned() };
    let Some((n, name)) = rest.split_once("].") else { return format!("transactions[{rest}") };
    let name = match name {
        "payee_msisdn" => "creditParty",
        "reference" => "requestingOrganisationTransactionReference",
        "narration" => "descriptionText",
        other => other,
    };
    format!("transactions[{n}].{name}")
}

/// The item a key names, for the order of `errorParameters`.
fn index_of(key: &str) -> Option<usize> {
    key.strip_prefix("transactions[")?.split_once(']')?.0.parse().ok()
}

/// The door's findings and the command's, in the document's names, one entry per field, in
/// the items' order.
fn merged(mut found: Vec<FieldError>, command: Vec<FieldError>) -> Vec<FieldError> {
    for mut e in command {
        e.field = document_key(&e.field);
        // An item the door could not read at all is reported once, as a whole.
        let whole = index_of(&e.field).map(|n| format!("transactions[{n}]"));
        if !found.iter().any(|f| f.field == e.field || Some(&f.field) == whole.as_ref()) {
            found.push(e);
        }
    }
    found.sort_by_key(|e| index_of(&e.field));
    found
}

/// One item as the bulk payout's command takes it, with what only the door can check (the
/// type, the currency, a payee named by something else than `msisdn`).
struct Read {
    item: RawItem,
    wrong_type: bool,
    problems: Vec<FieldError>,
}

fn read_item(n: usize, value: Value, currency: &str, base: &str) -> Read {
    let at = |field: &str| format!("transactions[{n}].{field}");
    let mut problems = Vec::new();
    let reference = |sent: Option<String>| sent.filter(|r| !r.is_empty()).unwrap_or_else(|| format!("{base}-{}", n + 1));
    let item = match serde_json::from_value::<ItemRequest>(value) {
        Ok(i) => i,
        Err(e) => {
            problems.push(FieldError::new(format!("transactions[{n}]"), "invalid_value", e.to_string()));
            let item = RawItem { payee_msisdn: String::new(), amount: String::new(), reference: reference(None), narration: None };
            return Read { item, wrong_type: false, problems };
        }
    };
    let wrong_type = match item.kind.as_deref() {
        Some("disbursement") => false,
        Some(_) => true,
        None => {
            problems.push(FieldError::new(at("type"), "missing_field", "type is required (disbursement)"));
            false
        }
    };
    match item.currency.as_deref() {
        None => problems.push(FieldError::new(at("currency"), "missing_field", "currency is required")),
        Some(c) if c != currency => problems.push(FieldError::new(at("currency"), "currency_mismatch", format!("must be {currency}"))),
        Some(_) => {}
    }
    let payee = if item.credit_party.is_empty() {
        String::new()
    } else if let Some(p) = item.credit_party.iter().find(|p| p.key.eq_ignore_ascii_case("msisdn")) {
        p.value.trim().trim_start_matches('+').to_owned()
    } else {
        problems.push(FieldError::new(at("creditParty"), "invalid_value", "creditParty must name the payee by msisdn"));
        String::new()
    };
    let reference = reference(item.requesting_organisation_transaction_reference);
    let raw = RawItem { payee_msisdn: payee, amount: item.amount.unwrap_or_default(), reference, narration: item.description_text };
    Read { item: raw, wrong_type, problems }
}

/// `POST /batchtransactions`: the maker's batch of disbursements, stored awaiting a checker.
/// Any bad item refuses the whole batch, each problem in `errorParameters` under its
/// `transactions[N].field`. Answers 202 with the request's state, pending, whose
/// `objectReference` is the batch (`bp_…`).
///
/// # Errors
/// The document's error object: 400 `transactionTypeError` for an item that is not a
/// `disbursement`, 400 `validation` for bad items, 401 without `bulk:create`.
pub async fn create(req: HttpRequest, caller: Caller, body: Body, gsma: web::Data<Gsma>) -> Result<HttpResponse, GsmaError> {
    let (request, canonical) = caller::json::<BatchRequest>(&req, &body.0)?;
    let principal = caller.0;
    let (idem, correlation) = caller::correlation(&req, &principal, CREATE, &canonical)?;
    let platform = &gsma.platform;
    let currency = platform.countries().get(&principal.country).map(|c| c.currency.as_str().to_owned()).unwrap_or_default();
    // The batch's reference is `batchTitle`, else the correlation id, else a fresh one; an
    // item without a reference of its own gets the batch's base and its position.
    let base = correlation.unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    let reference = request.batch_title.filter(|t| !t.is_empty()).unwrap_or_else(|| base.clone());
    let mut problems = Vec::new();
    let mut wrong_types = Vec::new();
    let mut items = Vec::new();
    // Over the limit, the batch is refused as a whole, without its items' problems.
    let within = request.transactions.len() <= MAX_BULK_ITEMS;
    for (n, value) in request.transactions.into_iter().enumerate() {
        let read = read_item(n, value, &currency, &base);
        if within {
            if read.wrong_type {
                wrong_types.push(n);
            }
            problems.extend(read.problems);
        }
        items.push(read.item);
    }
    if !wrong_types.is_empty() {
        let mut e = GsmaError::transaction_type("every transaction of a batch must be of type disbursement");
        for n in wrong_types {
            e = e.with(&format!("transactions[{n}].type"), "must be disbursement");
        }
        return Err(e);
    }
    let raw = NewBulkPayout { reference, items: BulkInput::Items(items) };
    let callback = idem.callback.is_some();
    let done = run(platform, move |p| {
        let command = match p.parse::<CreateBulkPayout>(&principal, &raw) {
            Ok(command) if problems.is_empty() => command,
            Ok(_) => return Err(ServiceError::Validation(problems)),
            Err(ServiceError::Validation(found)) => return Err(ServiceError::Validation(merged(problems, found))),
            Err(e) => return Err(e),
        };
        p.bulk_payouts().create(&principal, &command, &idem)
    })
    .await?;
    let b = done.value;
    Ok(HttpResponse::Accepted().json(objects::request_state(b.id.as_str(), objects::batch_progress(&b), None, b.updated_at, callback)))
}

/// The only update the door takes: `[{"op": "replace", "path": "/batchStatus", "value":
/// "approved"}]` (up to the document's 10 entries, each that one).
fn approval(tree: &Value) -> Result<(), GsmaError> {
    let usage = "the body must be [{\"op\":\"replace\",\"path\":\"/batchStatus\",\"value\":\"approved\"}]";
    let ops = tree.as_array().filter(|ops| (1..=10).contains(&ops.len())).ok_or_else(|| GsmaError::format(usage))?;
    for (n, op) in ops.iter().enumerate() {
        let field = |name: &str| op.get(name).and_then(Value::as_str);
        for name in ["op", "path", "value"] {
            if op.get(name).is_none() {
                return Err(GsmaError::missing(&format!("[{n}].{name}")));
            }
        }
        if field("op") != Some("replace") {
            return Err(GsmaError::field(&format!("[{n}].op"), "op must be replace"));
        }
        if field("path") != Some("/batchStatus") {
            return Err(GsmaError::field(&format!("[{n}].path"), "only /batchStatus can be updated"));
        }
        if field("value") != Some("approved") {
            return Err(GsmaError::field(
                &format!("[{n}].value"),
                "batchStatus can only be set to approved; a checker rejects a batch with POST /api/v1/bulk-payouts/{batch_id}/reject or in the console",
            ));
        }
    }
    Ok(())
}

/// `PATCH /batchtransactions/{batchId}`: the checker approves the batch: the total and fees are
/// reserved and its items paid by background work. Answers 202 with the batch's request
/// state (pending while the items are paid), idempotent by `X-CorrelationID`.
///
/// # Errors
/// 400 for any other update, 401 `authorisation` for the maker (or a credential without
/// `bulk:approve`), 400 `incorrectState` for a batch already decided, 400 `insufficientFunds`,
/// 404 for an unknown batch.
pub async fn patch(
    req: HttpRequest,
    caller: Caller,
    path: web::Path<String>,
    body: Body,
    gsma: web::Data<Gsma>,
) -> Result<HttpResponse, GsmaError> {
    let id = path.into_inner();
    let (tree, canonical) = caller::json_tree(&req, &body.0)?;
    approval(&tree)?;
    let principal = caller.0;
    let (idem, _) = caller::correlation(&req, &principal, APPROVE, &canonical)?;
    let callback = idem.callback.is_some();
    let done =
        parsed(&gsma.platform, principal, id, move |p, who, command: &ApproveBulkPayout| p.bulk_payouts().approve(who, command, &idem))
            .await?;
    let b = done.value;
    Ok(HttpResponse::Accepted().json(objects::request_state(b.id.as_str(), objects::batch_progress(&b), None, b.updated_at, callback)))
}

/// `GET /batchtransactions/{batchId}`.
///
/// # Errors
/// 404 for a batch the caller's organisation does not have.
pub async fn get(caller: Caller, path: web::Path<String>, gsma: web::Data<Gsma>) -> Result<HttpResponse, GsmaError> {
    let (principal, id) = (caller.0, path.into_inner());
    let b = run(&gsma.platform, move |p| p.bulk_payouts().get(&principal, &id)).await?;
    Ok(HttpResponse::Ok().json(objects::batch(&b)))
}

/// A page as the document asks for it: `offset` records skipped, at most `limit` (default 50)
/// returned, of a batch created between `fromDateTime` and `toDateTime` (every item of a batch
/// is created with it).
struct Window {
    offset: usize,
    limit: usize,
    from: Option<Timestamp>,
    to: Option<Timestamp>,
}

fn window(q: &HashMap<String, String>) -> Result<Window, GsmaError> {
    let number = |name: &str, default: usize, range: std::ops::RangeInclusive<usize>| match q.get(name) {
        None => Ok(default),
        Some(text) => text
            .trim()
            .parse::<usize>()
            .ok()
            .filter(|n| range.contains(n))
            .ok_or_else(|| GsmaError::field(name, format!("{name} must be a whole number from {} to {}", range.start(), range.end()))),
    };
    let date = |name: &str| {
        q.get(name)
            .map(|t| {
                Timestamp::parse_rfc3339(t.trim()).map_err(|_| GsmaError::field(name, format!("{name} must be an RFC 3339 date-time")))
            })
            .transpose()
    };
    Ok(Window {
        offset: number("offset", 0, 0..=MAX_BULK_ITEMS)?,
        limit: number("limit", 50, 1..=MAX_LIMIT)?,
        from: date("fromDateTime")?,
        to: date("toDateTime")?,
    })
}

/// The batch and the page of its items in `state`, with how many such items it has.
fn page(
    p: &Platform,
    principal: &Principal,
    id: &str,
    state: PayoutState,
    w: &Window,
) -> Result<(BulkPayout, Vec<Payout>, u32), ServiceError> {
    let b = p.bulk_payouts().get(principal, id)?;
    let outside = w.from.is_some_and(|from| b.created_at < from) || w.to.is_some_and(|to| b.created_at > to);
    let available = match state {
        _ if outside => 0,
        PayoutState::Completed => b.counts.completed,
        _ => b.counts.failed,
    };
    if usize::try_from(available).unwrap_or(usize::MAX) <= w.offset {
        return Ok((b, Vec::new(), available));
    }
    let fetched = p.bulk_payouts().items(principal, id, Some(state), None, w.offset.saturating_add(w.limit))?;
    Ok((b, fetched.data.into_iter().skip(w.offset).collect(), available))
}

fn listed<T: serde::Serialize>(records: &[T], available: u32) -> HttpResponse {
    HttpResponse::Ok()
        .insert_header(("X-Records-Available-Count", available.to_string()))
        .insert_header(("X-Records-Returned-Count", records.len().to_string()))
        .json(records)
}

/// `GET /batchtransactions/{batchId}/rejections`: the batch's failed items, in the batch's
/// order, each with why (every item of a batch its checker rejected, with the reason).
///
/// # Errors
/// 404 for an unknown batch, 400 for a bad `offset`, `limit` or date.
pub async fn rejections(
    caller: Caller,
    path: web::Path<String>,
    query: web::Query<HashMap<String, String>>,
    gsma: web::Data<Gsma>,
) -> Result<HttpResponse, GsmaError> {
    let (principal, id, w) = (caller.0, path.into_inner(), window(&query)?);
    let (b, items, available) = run(&gsma.platform, move |p| page(p, &principal, &id, PayoutState::Failed, &w)).await?;
    let records: Vec<objects::BatchRejection> = items.iter().map(|item| objects::batch_rejection(&b, item)).collect();
    Ok(listed(&records, available))
}

/// `GET /batchtransactions/{batchId}/completions`: the batch's paid items, in the batch's
/// order, each with the link to it as a transaction.
///
/// # Errors
/// As [`rejections`].
pub async fn completions(
    caller: Caller,
    path: web::Path<String>,
    query: web::Query<HashMap<String, String>>,
    gsma: web::Data<Gsma>,
) -> Result<HttpResponse, GsmaError> {
    let (principal, id, w) = (caller.0, path.into_inner(), window(&query)?);
    let (_, items, available) = run(&gsma.platform, move |p| page(p, &principal, &id, PayoutState::Completed, &w)).await?;
    let records: Vec<objects::BatchCompletion> = items.iter().map(objects::batch_completion).collect();
    Ok(listed(&records, available))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_commands_field_is_named_as_the_document_names_it() {
        for (field, key) in [
            ("reference", "batchTitle"),
            ("items", "transactions"),
            ("items[3].amount", "transactions[3].amount"),
            ("items[0].payee_msisdn", "transactions[0].creditParty"),
            ("items[12].reference", "transactions[12].requestingOrganisationTransactionReference"),
            ("items[1]", "transactions[1]"),
        ] {
            assert_eq!(document_key(field), key);
        }
        assert_eq!(index_of("transactions[12].amount"), Some(12));
    }

    #[test]
    fn only_an_approval_is_a_patch_the_door_takes() {
        let ok = serde_json::json!([{"op": "replace", "path": "/batchStatus", "value": "approved"}]);
        assert!(approval(&ok).is_ok());
        for bad in [
            serde_json::json!([]),
            serde_json::json!({"op": "replace"}),
            serde_json::json!([{"op": "add", "path": "/batchStatus", "value": "approved"}]),
            serde_json::json!([{"op": "replace", "path": "/batchTitle", "value": "x"}]),
            serde_json::json!([{"op": "replace", "path": "/batchStatus", "value": "completed"}]),
            serde_json::json!([{"op": "replace", "path": "/batchStatus"}]),
        ] {
            let e = approval(&bad).err().map(|e| e.status.as_u16());
            assert_eq!(e, Some(400), "{bad}");
        }
    }
}
