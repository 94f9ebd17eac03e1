//! Transactions and reconciliation (contract section 7).

pub mod dto;

use std::collections::HashMap;

use actix_web::web::Bytes;
use actix_web::{web, HttpResponse};
use futures_util::{stream, StreamExt};
use malipo_auth::{Principal, Scope};
use malipo_service::csv_files::{transaction_rows, transactions_header};
use malipo_service::{ExportRun, Platform, ServiceError, TransactionFilter};
use utoipa::OpenApi;

use self::dto::{ReconciliationDto, TransactionDto, TypeTotalsDto};
use crate::extract::Auth;
use crate::handler::{limit, resource, run};
use crate::problem::{ApiError, Problem};
use crate::routes::shared::ListDto;
use crate::state::AppState;
use crate::wire::parse_time;

/// Rows read per step of an export (one short read transaction each).
const EXPORT_BATCH: usize = 2_000;

/// The group's routes, under `/api/v1`.
pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(resource("/transactions", "GET").route(web::get().to(list)))
        .service(resource("/transactions/export", "GET").route(web::get().to(export)))
        .service(resource("/transactions/{transaction_id}", "GET").route(web::get().to(get)))
        .service(resource("/reconciliation/daily", "GET").route(web::get().to(daily)));
}

/// The group's operations and objects in the OpenAPI document.
#[derive(OpenApi)]
#[openapi(paths(list, get, export, daily), components(schemas(TransactionDto, ReconciliationDto, TypeTotalsDto)))]
pub struct Api;

/// Transactions belong to every kind of organisation with accounts.
fn principal(auth: &Auth) -> Result<Principal, ApiError> {
    auth.require_any(&[Scope::Payments, Scope::Payouts, Scope::Agent]).cloned()
}

/// The filter of the query (`from`, `to`, `type`, `account`).
fn filter(q: &HashMap<String, String>) -> Result<TransactionFilter, ApiError> {
    Ok(TransactionFilter {
        from: q.get("from").map(|v| parse_time("from", v)).transpose()?,
        to: q.get("to").map(|v| parse_time("to", v)).transpose()?,
        kind: q.get("type").cloned(),
        account: q.get("account").cloned(),
    })
}

/// A refused filter value is a bad query parameter (400), like a bad cursor.
fn bad_query(e: ApiError) -> ApiError {
    match e {
        ApiError::Service(ServiceError::Validation(errors)) => {
            ApiError::InvalidRequest(errors.first().map_or_else(|| "a query parameter is not valid".into(), |e| e.message.clone()))
        }
        other => other,
    }
}

/// The organisation's transactions, newest first: one per ledger journal and account it moved.
#[utoipa::path(
    get, path = "/api/v1/transactions", operation_id = "listTransactions", tag = "Transactions",
    params(
        ("from" = Option<String>, Query, format = DateTime, description = "Posted at or after (RFC 3339)"),
        ("to" = Option<String>, Query, format = DateTime, description = "Posted before (RFC 3339)"),
        ("type" = Option<String>, Query, pattern = "^(charge|payout|reversal|transfer|payment_request|cash_in|cash_out|p2p|fee)$", description = "`charge`, `payout`, `reversal`, `transfer`, `payment_request`, `cash_in`, `cash_out`, `p2p` or `fee`"),
        ("account" = Option<String>, Query, pattern = "^(collection|payout|agent_float|acc_[A-Za-z0-9_-]{1,64})$", description = "An account kind (`collection`, `payout`, `agent_float`) or an `acc_…` id; every account when absent"),
        ("limit" = Option<u32>, Query, description = "1 to 100, default 20"),
        ("cursor" = Option<String>, Query, pattern = "^[1-9][0-9]{0,17}$", description = "next_cursor of the previous page"),
    ),
    responses(
        (status = 200, description = "A page of transactions", body = ListDto<TransactionDto>),
        (status = 400, description = "invalid_request (bad query parameter or cursor)", body = Problem),
        (status = 401, description = "unauthorized, invalid_token", body = Problem),
        (status = 403, description = "insufficient_scope", body = Problem),
        (status = 404, description = "not_found (an account that is not the organisation's)", body = Problem),
        (status = 429, description = "rate_limited", body = Problem),
        (status = 503, description = "unavailable", body = Problem),
    ),
    security(("bearer" = ["payments", "payouts", "agent"]))
)]
pub async fn list(auth: Auth, query: web::Query<HashMap<String, String>>, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let principal = principal(&auth)?;
    let q = query.into_inner();
    let filter = filter(&q)?;
    let limit = limit(q.get("limit").map(String::as_str))?;
    let cursor = q.get("cursor").cloned();
    // A refused cursor says "cursor is not valid", like every list's: one mapping serves both.
    let page = run(&state, move |p| p.transactions().list(&principal, &filter, cursor.as_deref(), limit)).await.map_err(bad_query)?;
    Ok(HttpResponse::Ok().json(ListDto {
        data: page.data.iter().map(TransactionDto::from).collect(),
        has_more: page.has_more,
        next_cursor: page.next_cursor,
    }))
}

/// One transaction. A transfer is a transaction on each of the two accounts: `account` picks
/// one, else the debited account's is answered.
#[utoipa::path(
    get, path = "/api/v1/transactions/{transaction_id}", operation_id = "getTransaction", tag = "Transactions",
    params(
        ("transaction_id" = String, Path, pattern = "^tx_[A-Za-z0-9_-]{1,64}$", description = "`tx_…`"),
        ("account" = Option<String>, Query, pattern = "^(collection|payout|agent_float|acc_[A-Za-z0-9_-]{1,64})$", description = "An account kind or `acc_…` id, for a transaction on two of the organisation's accounts"),
    ),
    responses(
        (status = 200, description = "The transaction", body = TransactionDto),
        (status = 400, description = "invalid_request (bad account)", body = Problem),
        (status = 401, description = "unauthorized, invalid_token", body = Problem),
        (status = 403, description = "insufficient_scope", body = Problem),
        (status = 404, description = "not_found", body = Problem),
        (status = 429, description = "rate_limited", body = Problem),
        (status = 503, description = "unavailable", body = Problem),
    ),
    security(("bearer" = ["payments", "payouts", "agent"]))
)]
pub async fn get(
    auth: Auth,
    path: web::Path<String>,
    query: web::Query<HashMap<String, String>>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let principal = principal(&auth)?;
    let id = path.into_inner();
    let account = query.into_inner().remove("account");
    let t = run(&state, move |p| p.transactions().get(&principal, &id, account.as_deref())).await.map_err(bad_query)?;
    Ok(HttpResponse::Ok().json(TransactionDto::from(&t)))
}

/// The organisation's transactions as CSV, oldest first (ledger order), streamed: rows are read
/// a batch at a time and written as they go, so an export of any length needs little memory.
#[utoipa::path(
    get, path = "/api/v1/transactions/export", operation_id = "exportTransactions", tag = "Transactions",
    params(
        ("from" = Option<String>, Query, format = DateTime, description = "Posted at or after (RFC 3339)"),
        ("to" = Option<String>, Query, format = DateTime, description = "Posted before (RFC 3339)"),
        ("account" = Option<String>, Query, pattern = "^(collection|payout|agent_float|acc_[A-Za-z0-9_-]{1,64})$", description = "An account kind or `acc_…` id; every account when absent"),
    ),
    responses(
        (status = 200, description = "CSV with the header row `transaction_id,created_at,type,source_ref,account,amount,fee,net,currency,balance_after`",
            content_type = "text/csv", body = String),
        (status = 400, description = "invalid_request (bad query parameter)", body = Problem),
        (status = 401, description = "unauthorized, invalid_token", body = Problem),
        (status = 403, description = "insufficient_scope", body = Problem),
        (status = 404, description = "not_found (an account that is not the organisation's)", body = Problem),
        (status = 429, description = "rate_limited", body = Problem),
        (status = 503, description = "unavailable", body = Problem),
    ),
    security(("bearer" = ["payments", "payouts", "agent"]))
)]
pub async fn export(auth: Auth, query: web::Query<HashMap<String, String>>, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let principal = principal(&auth)?;
    let filter = filter(&query.into_inner())?;
    let export = run(&state, move |p| p.transactions().export(&principal, &filter)).await.map_err(bad_query)?;
    let header = Bytes::from(transactions_header());
    let platform = state.platform.clone();
    let rows = stream::try_unfold(Some((platform, export)), |next| async move {
        let Some((platform, export)) = next else { return Ok(None) };
        let (platform, export, batch) = web::block(move || {
            let mut export: ExportRun = export;
            let batch = platform.transactions().export_batch(&mut export, EXPORT_BATCH);
            (platform, export, batch)
        })
        .await
        .map_err(|e| export_failed(&e.to_string()))?;
        let batch = batch.map_err(|e| export_failed(&e.to_string()))?;
        if batch.is_empty() {
            return Ok(None);
        }
        Ok::<_, actix_web::Error>(Some((Bytes::from(transaction_rows(&batch)), Some((platform, export)))))
    });
    let body = stream::once(async move { Ok::<_, actix_web::Error>(header) }).chain(rows);
    Ok(HttpResponse::Ok()
        .content_type("text/csv; charset=utf-8")
        .insert_header(("Content-Disposition", "attachment; filename=\"transactions.csv\""))
        .streaming(body))
}

/// An export that fails after its first bytes went out can only stop: the client sees a
/// truncated body (no final chunk), never a partial file presented as whole.
fn export_failed(why: &str) -> actix_web::Error {
    tracing::error!(error = why, "transactions export failed midway");
    actix_web::error::ErrorInternalServerError("export failed")
}

/// The daily reconciliation of one account: the organisation's local day, opening and closing
/// balance, credits, debits, fees, counts and sums by type, and the checksum of the day's
/// transactions, which an integrator recomputes from the export.
#[utoipa::path(
    get, path = "/api/v1/reconciliation/daily", operation_id = "getDailyReconciliation", tag = "Transactions",
    params(
        ("date" = String, Query, format = Date, description = "The local calendar day, YYYY-MM-DD"),
        ("account" = Option<String>, Query, pattern = "^(collection|payout|agent_float|acc_[A-Za-z0-9_-]{1,64})$", description = "An account kind or `acc_…` id; default `collection` (an organisation with one account: that one)"),
    ),
    responses(
        (status = 200, description = "The report", body = ReconciliationDto),
        (status = 400, description = "invalid_request (missing or bad date, bad account)", body = Problem),
        (status = 401, description = "unauthorized, invalid_token", body = Problem),
        (status = 403, description = "insufficient_scope", body = Problem),
        (status = 404, description = "not_found (no such account)", body = Problem),
        (status = 429, description = "rate_limited", body = Problem),
        (status = 503, description = "unavailable", body = Problem),
    ),
    security(("bearer" = ["payments", "payouts", "agent"]))
)]
pub async fn daily(auth: Auth, query: web::Query<HashMap<String, String>>, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let principal = principal(&auth)?;
    let mut q = query.into_inner();
    let date = q.remove("date").ok_or_else(|| ApiError::InvalidRequest("date is required (YYYY-MM-DD)".into()))?;
    let account = q.remove("account");
    let report = run(&state, move |p: &Platform| p.transactions().daily(&principal, &date, account.as_deref())).await.map_err(bad_query)?;
    Ok(HttpResponse::Ok().json(ReconciliationDto::from(&report)))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    #[test]
    fn the_document_has_every_transactions_operation() {
        let doc: serde_json::Value = serde_json::from_str(&crate::openapi::document_json()).unwrap();
        for path in
            ["/api/v1/transactions", "/api/v1/transactions/{transaction_id}", "/api/v1/transactions/export", "/api/v1/reconciliation/daily"]
        {
            let op = &doc["paths"][path]["get"];
            assert_eq!(op["tags"][0], "Transactions", "{path}");
            let scopes: Vec<&str> = op["security"][0]["bearer"].as_array().unwrap().iter().filter_map(|s| s.as_str()).collect();
            assert_eq!(scopes, ["payments", "payouts", "agent"], "{path}");
            assert!(op["responses"]["400"]["content"]["application/problem+json"].is_object(), "{path}");
        }
        let export = &doc["paths"]["/api/v1/transactions/export"]["get"]["responses"]["200"]["content"];
        assert!(export["text/csv"].is_object(), "{export}");
        let daily = doc["paths"]["/api/v1/reconciliation/daily"]["get"]["parameters"].as_array().unwrap();
        let date = daily.iter().find(|p| p["name"] == "date").unwrap();
        assert_eq!((date["required"].as_bool(), date["schema"]["format"].as_str()), (Some(true), Some("date")));
        let object = doc["components"]["schemas"]["TransactionDto"]["properties"].as_object().unwrap();
        let mut fields: Vec<&str> = object.keys().map(String::as_str).collect();
        fields.sort_unstable();
        assert_eq!(
            fields,
            ["account", "amount", "balance_after", "created_at", "currency", "fee", "net", "source_ref", "transaction_id", "type"]
        );
    }
}
