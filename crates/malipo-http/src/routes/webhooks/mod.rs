//! Webhook endpoints and the events API (contract section 12).

pub mod dto;

use std::collections::HashMap;

use actix_web::{web, HttpRequest, HttpResponse};
use malipo_auth::Scope;
use malipo_service::{CreateEndpoint, EndpointTarget, Redeliver, RotateCallbackSecret, ServiceError};
use malipo_webhooks::EVENT_KINDS;
use utoipa::OpenApi;

use self::dto::{
    AttemptDto, CallbackSecretDto, DeliveryDto, EndpointCreateRequest, EndpointDto, EventDetailDto, EventDto, RedeliverRequest,
    RedeliveryDto, RotateSecretRequest,
};
use crate::extract::{Auth, Body};
use crate::handler::{limit, resource, run};
use crate::idempotent::{idempotent, Input};
use crate::problem::{ApiError, Problem};
use crate::routes::shared::ListDto;
use crate::schema::EventType;
use crate::state::AppState;

/// The group's routes, under `/api/v1`.
pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(resource("/webhooks/endpoints", "POST, GET").route(web::post().to(create_endpoint)).route(web::get().to(list_endpoints)))
        .service(
            resource("/webhooks/endpoints/{endpoint_id}", "GET, DELETE")
                .route(web::get().to(get_endpoint))
                .route(web::delete().to(delete_endpoint)),
        )
        .service(resource("/webhooks/endpoints/{endpoint_id}/rotate-secret", "POST").route(web::post().to(rotate_secret)))
        .service(resource("/webhooks/callback-secret", "GET").route(web::get().to(get_callback_secret)))
        .service(resource("/webhooks/callback-secret/rotate", "POST").route(web::post().to(rotate_callback_secret)))
        .service(resource("/events", "GET").route(web::get().to(list_events)))
        .service(resource("/events/{event_id}", "GET").route(web::get().to(get_event)))
        .service(resource("/events/{event_id}/redeliver", "POST").route(web::post().to(redeliver)));
}

/// The group's operations and objects in the OpenAPI document.
#[derive(OpenApi)]
#[openapi(
    paths(
        create_endpoint,
        list_endpoints,
        get_endpoint,
        delete_endpoint,
        rotate_secret,
        get_callback_secret,
        rotate_callback_secret,
        list_events,
        get_event,
        redeliver
    ),
    components(schemas(
        EndpointCreateRequest,
        RotateSecretRequest,
        CallbackSecretDto,
        EndpointDto,
        EventDto,
        EventDetailDto,
        DeliveryDto,
        AttemptDto,
        RedeliverRequest,
        RedeliveryDto
    ))
)]
pub struct Api;

/// Register a webhook endpoint. The answer carries its signing secret, shown only here and at rotation.
#[utoipa::path(
    post, path = "/api/v1/webhooks/endpoints", operation_id = "createWebhookEndpoint", tag = "Webhooks",
    request_body = EndpointCreateRequest,
    params(("Idempotency-Key" = String, Header, description = "Required")),
    responses(
        (status = 200, description = "The endpoint with its `secret` (or the original answer replayed, with Idempotent-Replayed: true)", body = EndpointDto),
        (status = 400, description = "invalid_request, idempotency_key_missing", body = Problem),
        (status = 401, description = "unauthorized, invalid_token", body = Problem),
        (status = 403, description = "insufficient_scope", body = Problem),
        (status = 409, description = "idempotency_in_progress", body = Problem),
        (status = 422, description = "validation_failed (`invalid_url`, `invalid_value`, `too_long`, `unknown_field`, `missing_field`), idempotency_key_reused", body = Problem),
    ),
    security(("bearer" = ["payments"]))
)]
pub async fn create_endpoint(req: HttpRequest, auth: Auth, body: Body, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let principal = auth.require(Scope::Payments)?.clone();
    let operation = "POST /webhooks/endpoints";
    let raw = |r: EndpointCreateRequest| Ok(r.into_new());
    idempotent(
        &req,
        principal,
        &state,
        operation,
        Input::json(&body),
        raw,
        |p, principal, endpoint: &CreateEndpoint, idem| p.webhooks().create_endpoint(principal, endpoint, idem),
        |v| EndpointDto::from(v),
    )
    .await
}

/// List the webhook endpoints of this organisation and mode, oldest first (without secrets).
#[utoipa::path(
    get, path = "/api/v1/webhooks/endpoints", operation_id = "listWebhookEndpoints", tag = "Webhooks",
    responses(
        (status = 200, description = "Every endpoint (one page)", body = ListDto<EndpointDto>),
        (status = 401, description = "unauthorized, invalid_token", body = Problem),
        (status = 403, description = "insufficient_scope", body = Problem),
    ),
    security(("bearer" = ["payments"]))
)]
pub async fn list_endpoints(auth: Auth, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let principal = auth.require(Scope::Payments)?.clone();
    let list = run(&state, move |p| p.webhooks().endpoints(&principal)).await?;
    Ok(HttpResponse::Ok().json(ListDto { data: list.iter().map(EndpointDto::from).collect(), has_more: false, next_cursor: None }))
}

/// One webhook endpoint (without its secret).
#[utoipa::path(
    get, path = "/api/v1/webhooks/endpoints/{endpoint_id}", operation_id = "getWebhookEndpoint", tag = "Webhooks",
    params(("endpoint_id" = String, Path, pattern = "^we_[A-Za-z0-9_-]{1,64}$", description = "`we_…`")),
    responses(
        (status = 200, description = "The endpoint", body = EndpointDto),
        (status = 404, description = "not_found", body = Problem),
    ),
    security(("bearer" = ["payments"]))
)]
pub async fn get_endpoint(auth: Auth, path: web::Path<String>, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let principal = auth.require(Scope::Payments)?.clone();
    let id = path.into_inner();
    let endpoint = run(&state, move |p| p.webhooks().endpoint(&principal, &id)).await?;
    Ok(HttpResponse::Ok().json(EndpointDto::from(&endpoint)))
}

/// Delete a webhook endpoint: no more deliveries, pending ones fail.
#[utoipa::path(
    delete, path = "/api/v1/webhooks/endpoints/{endpoint_id}", operation_id = "deleteWebhookEndpoint", tag = "Webhooks",
    params(
        ("endpoint_id" = String, Path, pattern = "^we_[A-Za-z0-9_-]{1,64}$", description = "`we_…`"),
        ("Idempotency-Key" = String, Header, description = "Required"),
    ),
    responses(
        (status = 200, description = "The deleted endpoint (`enabled: false`, `deleted: true`)", body = EndpointDto),
        (status = 400, description = "idempotency_key_missing", body = Problem),
        (status = 404, description = "not_found", body = Problem),
        (status = 409, description = "idempotency_in_progress", body = Problem),
        (status = 422, description = "idempotency_key_reused", body = Problem),
    ),
    security(("bearer" = ["payments"]))
)]
pub async fn delete_endpoint(
    req: HttpRequest,
    auth: Auth,
    path: web::Path<String>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let principal = auth.require(Scope::Payments)?.clone();
    let id = path.into_inner();
    let operation = "DELETE /webhooks/endpoints/{endpoint_id}";
    idempotent(
        &req,
        principal,
        &state,
        operation,
        Input::none(),
        |()| Ok(id),
        |p, principal, target: &EndpointTarget, idem| p.webhooks().delete_endpoint(principal, target, idem),
        |v| EndpointDto::from(v),
    )
    .await
}

/// Rotate an endpoint's signing secret. The previous secret keeps signing beside the new one for 24 hours.
#[utoipa::path(
    post, path = "/api/v1/webhooks/endpoints/{endpoint_id}/rotate-secret", operation_id = "rotateWebhookSecret", tag = "Webhooks",
    request_body(content = Option<RotateSecretRequest>, description = "Empty, or `{}`"),
    params(
        ("endpoint_id" = String, Path, pattern = "^we_[A-Za-z0-9_-]{1,64}$", description = "`we_…`"),
        ("Idempotency-Key" = String, Header, description = "Required"),
    ),
    responses(
        (status = 200, description = "The endpoint with its new `secret` and `previous_secret_expires_at`", body = EndpointDto),
        (status = 400, description = "invalid_request, idempotency_key_missing", body = Problem),
        (status = 404, description = "not_found", body = Problem),
        (status = 409, description = "idempotency_in_progress", body = Problem),
        (status = 422, description = "unknown_field, idempotency_key_reused", body = Problem),
    ),
    security(("bearer" = ["payments"]))
)]
pub async fn rotate_secret(
    req: HttpRequest,
    auth: Auth,
    path: web::Path<String>,
    body: Body,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let principal = auth.require(Scope::Payments)?.clone();
    let id = path.into_inner();
    let operation = "POST /webhooks/endpoints/{endpoint_id}/rotate-secret";
    let raw = |_: RotateSecretRequest| Ok(id);
    idempotent(
        &req,
        principal,
        &state,
        operation,
        Input::optional_json(&body),
        raw,
        |p, principal, target: &EndpointTarget, idem| p.webhooks().rotate_secret(principal, target, idem),
        |v| EndpointDto::from(v),
    )
    .await
}

/// The scopes whose calls a callback may report (the GSMA door's `X-Callback-URL`).
const CALLBACK_SCOPES: [Scope; 6] =
    [Scope::Payments, Scope::Payouts, Scope::BulkCreate, Scope::BulkApprove, Scope::Reversals, Scope::Agent];

/// The organisation's callback signing secret in this mode (made on first ask): it signs what
/// the GSMA door `PUT`s to an `X-Callback-URL`, with the Standard Webhooks headers.
#[utoipa::path(
    get, path = "/api/v1/webhooks/callback-secret", operation_id = "getCallbackSecret", tag = "Webhooks",
    responses(
        (status = 200, description = "The secret", body = CallbackSecretDto),
        (status = 401, description = "unauthorized, invalid_token", body = Problem),
        (status = 403, description = "insufficient_scope", body = Problem),
    ),
    security(("bearer" = ["payments", "payouts", "bulk:create", "bulk:approve", "reversals", "agent"]))
)]
pub async fn get_callback_secret(auth: Auth, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let principal = auth.require_any(&CALLBACK_SCOPES)?.clone();
    let secret = run(&state, move |p| p.callbacks().secret(&principal)).await?;
    Ok(HttpResponse::Ok().json(CallbackSecretDto::from(&secret)))
}

/// Replace the callback signing secret. The previous secret keeps signing beside the new one for 24 hours.
#[utoipa::path(
    post, path = "/api/v1/webhooks/callback-secret/rotate", operation_id = "rotateCallbackSecret", tag = "Webhooks",
    request_body(content = Option<RotateSecretRequest>, description = "Empty, or `{}`"),
    params(("Idempotency-Key" = String, Header, description = "Required")),
    responses(
        (status = 200, description = "The new `secret` and `previous_secret_expires_at`", body = CallbackSecretDto),
        (status = 400, description = "invalid_request, idempotency_key_missing", body = Problem),
        (status = 401, description = "unauthorized, invalid_token", body = Problem),
        (status = 403, description = "insufficient_scope", body = Problem),
        (status = 409, description = "idempotency_in_progress", body = Problem),
        (status = 422, description = "unknown_field, idempotency_key_reused", body = Problem),
    ),
    security(("bearer" = ["payments", "payouts", "bulk:create", "bulk:approve", "reversals", "agent"]))
)]
pub async fn rotate_callback_secret(
    req: HttpRequest,
    auth: Auth,
    body: Body,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let principal = auth.require_any(&CALLBACK_SCOPES)?.clone();
    idempotent(
        &req,
        principal,
        &state,
        "POST /webhooks/callback-secret/rotate",
        Input::optional_json(&body),
        |_: RotateSecretRequest| Ok(()),
        |p, principal, command: &RotateCallbackSecret, idem| p.callbacks().rotate(principal, command, idem),
        |v| CallbackSecretDto::from(v),
    )
    .await
}

/// Every event of the organisation in this mode, oldest first, kept at least 90 days.
#[utoipa::path(
    get, path = "/api/v1/events", operation_id = "listEvents", tag = "Webhooks",
    params(
        ("type" = Option<EventType>, Query, description = "Only events of this kind, e.g. `charge.completed`"),
        ("after" = Option<String>, Query, pattern = "^evt_[A-Za-z0-9_-]{1,64}$", description = "Only events after this one: the `next_cursor` of the previous page (`cursor` is accepted too)"),
        ("limit" = Option<u32>, Query, description = "1 to 100, default 20"),
    ),
    responses(
        (status = 200, description = "A page of events", body = ListDto<EventDto>),
        (status = 400, description = "bad query parameter", body = Problem),
    ),
    security(("bearer" = ["payments"]))
)]
pub async fn list_events(
    auth: Auth,
    query: web::Query<HashMap<String, String>>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let principal = auth.require(Scope::Payments)?.clone();
    let q = query.into_inner();
    let kind = q.get("type").cloned();
    if let Some(k) = &kind {
        if !EVENT_KINDS.contains(&k.as_str()) {
            return Err(ApiError::InvalidRequest(format!("type `{k}` is not an event kind")));
        }
    }
    let after = match (q.get("after"), q.get("cursor")) {
        (Some(a), Some(c)) if a != c => return Err(ApiError::InvalidRequest("after and cursor differ; give one".into())),
        (a, c) => a.or(c).cloned(),
    };
    let limit = limit(q.get("limit").map(String::as_str))?;
    let page =
        run(&state, move |p| p.webhooks().events(&principal, kind.as_deref(), after.as_deref(), limit)).await.map_err(|e| match e {
            ApiError::Service(ServiceError::Validation(_)) => ApiError::InvalidRequest("after is not a valid cursor".into()),
            other => other,
        })?;
    Ok(HttpResponse::Ok().json(ListDto {
        data: page.data.iter().map(EventDto::from).collect(),
        has_more: page.has_more,
        next_cursor: page.next_cursor,
    }))
}

/// One event with its deliveries and their attempts (time, endpoint, HTTP status, latency, error).
#[utoipa::path(
    get, path = "/api/v1/events/{event_id}", operation_id = "getEvent", tag = "Webhooks",
    params(("event_id" = String, Path, pattern = "^evt_[A-Za-z0-9_-]{1,64}$", description = "`evt_…`")),
    responses(
        (status = 200, description = "The event", body = EventDetailDto),
        (status = 404, description = "not_found", body = Problem),
    ),
    security(("bearer" = ["payments"]))
)]
pub async fn get_event(auth: Auth, path: web::Path<String>, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let principal = auth.require(Scope::Payments)?.clone();
    let id = path.into_inner();
    let detail = run(&state, move |p| p.webhooks().event(&principal, &id)).await?;
    Ok(HttpResponse::Ok().json(EventDetailDto::from(&detail)))
}

/// Queue an event again: to one endpoint, or to every enabled endpoint subscribed to its kind.
#[utoipa::path(
    post, path = "/api/v1/events/{event_id}/redeliver", operation_id = "redeliverEvent", tag = "Webhooks",
    request_body(content = Option<RedeliverRequest>, description = "Empty, `{}`, or `{\"endpoint_id\": \"we_…\"}`"),
    params(
        ("event_id" = String, Path, pattern = "^evt_[A-Za-z0-9_-]{1,64}$", description = "`evt_…`"),
        ("Idempotency-Key" = String, Header, description = "Required"),
    ),
    responses(
        (status = 200, description = "What was queued", body = RedeliveryDto),
        (status = 400, description = "invalid_request, idempotency_key_missing", body = Problem),
        (status = 404, description = "not_found (event or endpoint)", body = Problem),
        (status = 409, description = "invalid_state (the endpoint is disabled), idempotency_in_progress", body = Problem),
        (status = 422, description = "unknown_field, idempotency_key_reused", body = Problem),
    ),
    security(("bearer" = ["payments"]))
)]
pub async fn redeliver(
    req: HttpRequest,
    auth: Auth,
    path: web::Path<String>,
    body: Body,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let principal = auth.require(Scope::Payments)?.clone();
    let event_id = path.into_inner();
    let operation = "POST /events/{event_id}/redeliver";
    let raw = |r: RedeliverRequest| Ok(r.into_new(event_id));
    idempotent(
        &req,
        principal,
        &state,
        operation,
        Input::optional_json(&body),
        raw,
        |p, principal, redelivery: &Redeliver, idem| p.webhooks().redeliver(principal, redelivery, idem),
        |v| RedeliveryDto::from(v),
    )
    .await
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use crate::extract::optional_json;
    use actix_web::test::TestRequest;

    #[test]
    fn an_empty_body_counts_as_an_empty_object() {
        let req = TestRequest::post().to_http_request();
        let parsed = optional_json::<RedeliverRequest>(&req, &Body(web::Bytes::from_static(b" \n"))).unwrap();
        assert_eq!(parsed.canonical, b"{}");
        assert!(parsed.value.endpoint_id.is_none());
        let json = TestRequest::post().insert_header(("content-type", "application/json")).to_http_request();
        let parsed = optional_json::<RedeliverRequest>(&json, &Body(web::Bytes::from_static(b"{}"))).unwrap();
        assert_eq!(parsed.canonical, b"{}", "the same fingerprint as an empty body");
        let parsed = optional_json::<RedeliverRequest>(&json, &Body(web::Bytes::from_static(br#"{"endpoint_id":"we_1"}"#))).unwrap();
        assert_eq!(parsed.value.endpoint_id.as_deref(), Some("we_1"));
        assert!(matches!(
            optional_json::<RedeliverRequest>(&req, &Body(web::Bytes::from_static(b"{}"))),
            Err(ApiError::UnsupportedMediaType(_))
        ));
        assert!(matches!(
            optional_json::<RotateSecretRequest>(&json, &Body(web::Bytes::from_static(br#"{"x":1}"#))),
            Err(ApiError::Fields(_))
        ));
    }

    #[test]
    fn the_openapi_document_has_every_webhook_operation() {
        let doc: serde_json::Value = serde_json::from_str(&crate::openapi::document_json()).unwrap();
        for (path, method) in [
            ("/api/v1/webhooks/endpoints", "post"),
            ("/api/v1/webhooks/endpoints", "get"),
            ("/api/v1/webhooks/endpoints/{endpoint_id}", "get"),
            ("/api/v1/webhooks/endpoints/{endpoint_id}", "delete"),
            ("/api/v1/webhooks/endpoints/{endpoint_id}/rotate-secret", "post"),
            ("/api/v1/events", "get"),
            ("/api/v1/events/{event_id}", "get"),
            ("/api/v1/events/{event_id}/redeliver", "post"),
        ] {
            assert!(doc["paths"][path][method].is_object(), "{method} {path}");
        }
        assert_eq!(doc["components"]["schemas"]["EventDto"]["properties"]["data"]["type"], "object");
    }
}
