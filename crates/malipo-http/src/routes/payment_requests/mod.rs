//! Merchant payment requests (contract section 11): the merchant asks to be paid; the customer
//! pays with the pay code on the USSD menu.

pub mod dto;

use std::collections::HashMap;

use actix_web::{web, HttpRequest, HttpResponse};
use malipo_auth::Scope;
use malipo_requests::{RequestFilter, RequestState};
use malipo_service::{CancelPaymentRequest, CreatePaymentRequest};
use utoipa::OpenApi;

use self::dto::{CancelRequest, PaymentRequestDto, PaymentRequestRequest};
use crate::extract::{Auth, Body};
use crate::handler::{bad_cursor, limit, resource, run};
use crate::idempotent::{idempotent, Input};
use crate::problem::{ApiError, Problem};
use crate::routes::shared::ListDto;
use crate::state::AppState;
use crate::wire::DecimalAmount;

/// The group's routes, under `/api/v1`.
pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(resource("/biz/request", "POST").route(web::post().to(create)))
        .service(resource("/biz/requests", "GET").route(web::get().to(list)))
        .service(resource("/biz/requests/{request_id}", "GET").route(web::get().to(get)))
        .service(resource("/biz/requests/{request_id}/cancel", "POST").route(web::post().to(cancel)));
}

/// The group's operations and objects in the OpenAPI document.
#[derive(OpenApi)]
#[openapi(paths(create, list, get, cancel), components(schemas(PaymentRequestRequest, CancelRequest, PaymentRequestDto, DecimalAmount)))]
pub struct Api;

/// Ask to be paid: answers the request `open` with a six-digit pay code the customer enters on
/// the USSD menu ("Pay merchant"). The customer pays `amount`; the collection account receives
/// `amount - fee` when it is paid (event `payment_request.paid`); unpaid, it expires after
/// `expires_in` seconds (event `payment_request.expired`).
#[utoipa::path(
    post, path = "/api/v1/biz/request", operation_id = "createPaymentRequest", tag = "Payment requests",
    request_body = PaymentRequestRequest,
    params(("Idempotency-Key" = String, Header, description = "Required: 1 to 255 visible ASCII characters")),
    responses(
        (status = 200, description = "The request in state open (or the original answer replayed, with Idempotent-Replayed: true)", body = PaymentRequestDto),
        (status = 400, description = "invalid_request (malformed JSON, wrong types), idempotency_key_missing", body = Problem),
        (status = 401, description = "unauthorized, invalid_token", body = Problem),
        (status = 403, description = "insufficient_scope", body = Problem),
        (status = 409, description = "idempotency_in_progress", body = Problem),
        (status = 413, description = "payload_too_large (above 64 KiB)", body = Problem),
        (status = 415, description = "unsupported_media_type", body = Problem),
        (status = 422, description = "validation_failed (`invalid_amount`, `invalid_msisdn`, `invalid_value` for expires_in, `too_long`, `missing_field`, `unknown_field`), currency_mismatch (a payer_msisdn of another currency), idempotency_key_reused", body = Problem),
        (status = 429, description = "rate_limited", body = Problem),
        (status = 503, description = "unavailable", body = Problem),
    ),
    security(("bearer" = ["payments"]))
)]
pub async fn create(req: HttpRequest, auth: Auth, body: Body, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let principal = auth.require(Scope::Payments)?.clone();
    let input = Input::json(&body);
    idempotent(
        &req,
        principal,
        &state,
        "POST /biz/request",
        input,
        PaymentRequestRequest::into_new,
        |p, principal, request: &CreatePaymentRequest, idem| p.payment_requests().create(principal, request, idem),
        |v| PaymentRequestDto::from(v),
    )
    .await
}

/// List payment requests, newest first.
#[utoipa::path(
    get, path = "/api/v1/biz/requests", operation_id = "listPaymentRequests", tag = "Payment requests",
    params(
        ("state" = Option<String>, Query, pattern = "^(open|paid|cancelled|expired)$", description = "Only requests in this state: `open`, `paid`, `cancelled`, `expired`"),
        ("limit" = Option<u32>, Query, description = "1 to 100, default 20"),
        ("cursor" = Option<String>, Query, pattern = "^pr_[A-Za-z0-9_-]{1,64}$", description = "next_cursor of the previous page"),
    ),
    responses(
        (status = 200, description = "A page of payment requests", body = ListDto<PaymentRequestDto>),
        (status = 400, description = "invalid_request (bad query parameter or cursor)", body = Problem),
        (status = 401, description = "unauthorized, invalid_token", body = Problem),
        (status = 403, description = "insufficient_scope", body = Problem),
        (status = 429, description = "rate_limited", body = Problem),
        (status = 503, description = "unavailable", body = Problem),
    ),
    security(("bearer" = ["payments"]))
)]
pub async fn list(auth: Auth, query: web::Query<HashMap<String, String>>, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let principal = auth.require(Scope::Payments)?.clone();
    let q = query.into_inner();
    let state_filter = q
        .get("state")
        .map(|s| s.parse::<RequestState>().map_err(|_| ApiError::InvalidRequest("state must be open, paid, cancelled or expired".into())))
        .transpose()?;
    let filter = RequestFilter { state: state_filter };
    let limit = limit(q.get("limit").map(String::as_str))?;
    let cursor = q.get("cursor").cloned();
    let page = run(&state, move |p| p.payment_requests().list(&principal, &filter, cursor.as_deref(), limit)).await.map_err(bad_cursor)?;
    Ok(HttpResponse::Ok().json(ListDto {
        data: page.data.iter().map(PaymentRequestDto::from).collect(),
        has_more: page.has_more,
        next_cursor: page.next_cursor,
    }))
}

/// One payment request.
#[utoipa::path(
    get, path = "/api/v1/biz/requests/{request_id}", operation_id = "getPaymentRequest", tag = "Payment requests",
    params(("request_id" = String, Path, pattern = "^pr_[A-Za-z0-9_-]{1,64}$", description = "`pr_…`")),
    responses(
        (status = 200, description = "The payment request", body = PaymentRequestDto),
        (status = 401, description = "unauthorized, invalid_token", body = Problem),
        (status = 403, description = "insufficient_scope", body = Problem),
        (status = 404, description = "not_found", body = Problem),
        (status = 429, description = "rate_limited", body = Problem),
        (status = 503, description = "unavailable", body = Problem),
    ),
    security(("bearer" = ["payments"]))
)]
pub async fn get(auth: Auth, path: web::Path<String>, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let principal = auth.require(Scope::Payments)?.clone();
    let id = path.into_inner();
    let request = run(&state, move |p| p.payment_requests().get(&principal, &id)).await?;
    Ok(HttpResponse::Ok().json(PaymentRequestDto::from(&request)))
}

/// Cancel an open payment request: it can no longer be paid and its pay code is free again.
#[utoipa::path(
    post, path = "/api/v1/biz/requests/{request_id}/cancel", operation_id = "cancelPaymentRequest", tag = "Payment requests",
    request_body(content = Option<CancelRequest>, description = "None, or an empty JSON object"),
    params(
        ("request_id" = String, Path, pattern = "^pr_[A-Za-z0-9_-]{1,64}$", description = "`pr_…`"),
        ("Idempotency-Key" = String, Header, description = "Required: 1 to 255 visible ASCII characters"),
    ),
    responses(
        (status = 200, description = "The request in state cancelled (or the original answer replayed, with Idempotent-Replayed: true)", body = PaymentRequestDto),
        (status = 400, description = "invalid_request (malformed JSON), idempotency_key_missing", body = Problem),
        (status = 401, description = "unauthorized, invalid_token", body = Problem),
        (status = 403, description = "insufficient_scope", body = Problem),
        (status = 404, description = "not_found", body = Problem),
        (status = 409, description = "invalid_state (paid, cancelled or expired), idempotency_in_progress", body = Problem),
        (status = 413, description = "payload_too_large (above 64 KiB)", body = Problem),
        (status = 415, description = "unsupported_media_type (a body that is not JSON)", body = Problem),
        (status = 422, description = "validation_failed (`unknown_field`), idempotency_key_reused", body = Problem),
        (status = 429, description = "rate_limited", body = Problem),
        (status = 503, description = "unavailable", body = Problem),
    ),
    security(("bearer" = ["payments"]))
)]
pub async fn cancel(
    req: HttpRequest,
    auth: Auth,
    path: web::Path<String>,
    body: Body,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let principal = auth.require(Scope::Payments)?.clone();
    let id = path.into_inner();
    let operation = "POST /biz/requests/{request_id}/cancel";
    idempotent(
        &req,
        principal,
        &state,
        operation,
        Input::optional_json(&body),
        |_: CancelRequest| Ok(id),
        |p, principal, cancel: &CancelPaymentRequest, idem| p.payment_requests().cancel(principal, cancel, idem),
        |v| PaymentRequestDto::from(v),
    )
    .await
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    #[test]
    fn the_document_has_every_payment_request_operation() {
        let doc: serde_json::Value = serde_json::from_str(&crate::openapi::document_json()).unwrap();
        for (path, method, codes) in [
            ("/api/v1/biz/request", "post", &["200", "400", "401", "403", "409", "413", "415", "422", "429", "500", "503"][..]),
            ("/api/v1/biz/requests", "get", &["200", "400", "401", "403", "429", "500", "503"]),
            ("/api/v1/biz/requests/{request_id}", "get", &["200", "401", "403", "404", "429", "500", "503"]),
            (
                "/api/v1/biz/requests/{request_id}/cancel",
                "post",
                &["200", "400", "401", "403", "404", "409", "413", "415", "422", "429", "500", "503"],
            ),
        ] {
            let op = &doc["paths"][path][method];
            assert_eq!(op["tags"][0], "Payment requests", "{method} {path}");
            assert_eq!(op["security"][0]["bearer"][0], "payments", "{method} {path}");
            let responses = op["responses"].as_object().unwrap();
            let listed: Vec<&str> = responses.keys().map(String::as_str).collect();
            assert_eq!(listed, codes, "{method} {path}");
            for (status, response) in responses {
                if status != "200" {
                    assert_eq!(
                        response["content"]["application/problem+json"]["schema"]["$ref"], "#/components/schemas/Problem",
                        "{path} {status}"
                    );
                }
            }
        }
        let schemas = &doc["components"]["schemas"];
        let object = schemas["PaymentRequestDto"]["properties"].as_object().unwrap();
        let fields: Vec<&str> = object.keys().map(String::as_str).collect();
        for f in [
            "request_id",
            "pay_code",
            "state",
            "mode",
            "amount",
            "currency",
            "fee",
            "reference",
            "description",
            "payer_msisdn",
            "paid_by_msisdn",
            "transaction_id",
            "expires_at",
            "created_at",
            "paid_at",
        ] {
            assert!(fields.contains(&f), "{f} in {fields:?}");
        }
        assert_eq!(fields.len(), 15, "{fields:?}");
        assert_eq!(schemas["PaymentRequestRequest"]["properties"]["amount"]["$ref"], "#/components/schemas/DecimalAmount");
        assert_eq!(schemas["PaymentRequestRequest"]["additionalProperties"], false);
    }
}
