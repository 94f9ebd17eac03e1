//! Bulk payouts with maker/checker (contract section 6): a maker (`bulk:create`) uploads a
//! batch as JSON or CSV, a checker (`bulk:approve`, another credential) approves or rejects it.

pub mod dto;
pub mod upload;

use std::collections::HashMap;

use actix_web::{web, HttpRequest, HttpResponse, Resource};
use malipo_auth::Scope;
use malipo_service::{ApproveBulkPayout, CreateBulkPayout, RejectBulkPayout};
use utoipa::OpenApi;

use self::dto::{ApproveRequest, BatchCountsDto, BulkItemRequest, BulkPayoutDto, BulkRequest, RejectRequest};
use self::upload::read_upload;
use crate::extract::{Auth, Body, BodyLimit};
use crate::handler::{bad_cursor, limit, resource, run};
use crate::idempotent::{idempotent, Input};
use crate::problem::{ApiError, Problem};
use crate::routes::payouts::state_param;
use crate::routes::shared::{ListDto, PayoutDto};
use crate::state::AppState;
use crate::wire::DecimalAmount;

/// The body limit of an upload (`POST /bulk-payouts`): 5 MiB; every other route keeps 64 KiB.
pub const UPLOAD_LIMIT: usize = 5 * 1024 * 1024;

/// Whoever may read batches: their makers, their checkers, and payout integrations.
const READERS: [Scope; 3] = [Scope::BulkCreate, Scope::BulkApprove, Scope::Payouts];

/// `/bulk-payouts`, whose bodies may be as large as [`UPLOAD_LIMIT`].
fn uploads() -> Resource {
    resource("/bulk-payouts", "POST, GET").app_data(BodyLimit(UPLOAD_LIMIT))
}

/// The group's routes, under `/api/v1`.
pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(uploads().route(web::post().to(create)).route(web::get().to(list)))
        .service(resource("/bulk-payouts/{batch_id}", "GET").route(web::get().to(get)))
        .service(resource("/bulk-payouts/{batch_id}/items", "GET").route(web::get().to(items)))
        .service(resource("/bulk-payouts/{batch_id}/approve", "POST").route(web::post().to(approve)))
        .service(resource("/bulk-payouts/{batch_id}/reject", "POST").route(web::post().to(reject)));
}

/// The group's operations and objects in the OpenAPI document.
#[derive(OpenApi)]
#[openapi(
    paths(create, list, get, items, approve, reject),
    components(schemas(
        BulkRequest,
        BulkItemRequest,
        ApproveRequest,
        RejectRequest,
        BulkPayoutDto,
        BatchCountsDto,
        PayoutDto,
        DecimalAmount
    ))
)]
pub struct Api;

/// Upload a bulk payout (the maker): JSON, or a CSV file with the header
/// `payee_msisdn,amount,reference,narration` and the batch's reference in the query. Every item
/// is checked first; any bad one refuses the whole batch with one `errors[]` entry per problem
/// (`items[N].field`, N the 0-based item or CSV data row). Nothing is paid until a checker
/// approves it.
#[utoipa::path(
    post, path = "/api/v1/bulk-payouts", operation_id = "createBulkPayout", tag = "Bulk payouts",
    request_body(
        description = "JSON with the items, or a CSV file (RFC 4180, UTF-8, header required, at most 5 MiB) with `?reference=`",
        content(
            (BulkRequest = "application/json"),
            (String = "text/csv", example = json!("payee_msisdn,amount,reference,narration\n254712345678,1500.00,SALARY-11-007,November salary\n")),
        )
    ),
    params(
        ("Idempotency-Key" = String, Header, description = "Required: 1 to 255 visible ASCII characters"),
        ("reference" = Option<String>, Query, description = "The batch's reference: required with a text/csv body (a JSON body carries its own)"),
    ),
    responses(
        (status = 200, description = "The batch in state awaiting_approval (or the original answer replayed, with Idempotent-Replayed: true)", body = BulkPayoutDto),
        (status = 400, description = "invalid_request (malformed JSON, wrong types), idempotency_key_missing", body = Problem),
        (status = 401, description = "unauthorized, invalid_token", body = Problem),
        (status = 403, description = "insufficient_scope", body = Problem),
        (status = 409, description = "idempotency_in_progress", body = Problem),
        (status = 413, description = "payload_too_large (above 5 MiB)", body = Problem),
        (status = 415, description = "unsupported_media_type (neither application/json nor text/csv)", body = Problem),
        (status = 422, description = "validation_failed (`items[N].…`: `invalid_msisdn`, `invalid_amount`, `malformed_line`, `missing_field`, `unknown_field`, ...; `items`: `too_few_items`, `too_many_items`; `header`: `invalid_header`), currency_mismatch, idempotency_key_reused", body = Problem),
        (status = 429, description = "rate_limited", body = Problem),
        (status = 503, description = "unavailable", body = Problem),
    ),
    security(("bearer" = ["bulk:create"]))
)]
pub async fn create(req: HttpRequest, auth: Auth, body: Body, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let principal = auth.require(Scope::BulkCreate)?.clone();
    let input = Input::read_with(&body, read_upload);
    idempotent(
        &req,
        principal,
        &state,
        "POST /bulk-payouts",
        input,
        Ok,
        |p, principal, batch: &CreateBulkPayout, idem| p.bulk_payouts().create(principal, batch, idem),
        |v| BulkPayoutDto::from(v),
    )
    .await
}

/// Approve a batch (the checker, a credential other than its maker): the total plus fees is
/// reserved on the payout account and every item is paid by background work.
#[utoipa::path(
    post, path = "/api/v1/bulk-payouts/{batch_id}/approve", operation_id = "approveBulkPayout", tag = "Bulk payouts",
    request_body(content = Option<ApproveRequest>, description = "None, or an empty JSON object"),
    params(
        ("batch_id" = String, Path, pattern = "^bp_[A-Za-z0-9_-]{1,64}$", description = "`bp_…`"),
        ("Idempotency-Key" = String, Header, description = "Required: 1 to 255 visible ASCII characters"),
    ),
    responses(
        (status = 200, description = "The batch in state processing (or the original answer replayed, with Idempotent-Replayed: true)", body = BulkPayoutDto),
        (status = 400, description = "invalid_request (malformed JSON), idempotency_key_missing", body = Problem),
        (status = 401, description = "unauthorized, invalid_token", body = Problem),
        (status = 403, description = "insufficient_scope, maker_checker_violation (the maker's own credential)", body = Problem),
        (status = 404, description = "not_found", body = Problem),
        (status = 409, description = "invalid_state (already approved, rejected or completed), idempotency_in_progress", body = Problem),
        (status = 413, description = "payload_too_large (above 64 KiB)", body = Problem),
        (status = 415, description = "unsupported_media_type (a body that is not JSON)", body = Problem),
        (status = 422, description = "validation_failed (`unknown_field`), insufficient_funds (total + fees), idempotency_key_reused", body = Problem),
        (status = 429, description = "rate_limited", body = Problem),
        (status = 503, description = "unavailable", body = Problem),
    ),
    security(("bearer" = ["bulk:approve"]))
)]
pub async fn approve(
    req: HttpRequest,
    auth: Auth,
    path: web::Path<String>,
    body: Body,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let principal = auth.require(Scope::BulkApprove)?.clone();
    let id = path.into_inner();
    let operation = "POST /bulk-payouts/{batch_id}/approve";
    let raw = |_: ApproveRequest| Ok(id);
    idempotent(
        &req,
        principal,
        &state,
        operation,
        Input::optional_json(&body),
        raw,
        |p, principal, approval: &ApproveBulkPayout, idem| p.bulk_payouts().approve(principal, approval, idem),
        |v| BulkPayoutDto::from(v),
    )
    .await
}

/// Reject a batch (the checker, a credential other than its maker): no item is paid.
#[utoipa::path(
    post, path = "/api/v1/bulk-payouts/{batch_id}/reject", operation_id = "rejectBulkPayout", tag = "Bulk payouts",
    request_body = RejectRequest,
    params(
        ("batch_id" = String, Path, pattern = "^bp_[A-Za-z0-9_-]{1,64}$", description = "`bp_…`"),
        ("Idempotency-Key" = String, Header, description = "Required: 1 to 255 visible ASCII characters"),
    ),
    responses(
        (status = 200, description = "The batch in state rejected (or the original answer replayed, with Idempotent-Replayed: true)", body = BulkPayoutDto),
        (status = 400, description = "invalid_request (malformed JSON, wrong types), idempotency_key_missing", body = Problem),
        (status = 401, description = "unauthorized, invalid_token", body = Problem),
        (status = 403, description = "insufficient_scope, maker_checker_violation (the maker's own credential)", body = Problem),
        (status = 404, description = "not_found", body = Problem),
        (status = 409, description = "invalid_state (already approved, rejected or completed), idempotency_in_progress", body = Problem),
        (status = 413, description = "payload_too_large (above 64 KiB)", body = Problem),
        (status = 415, description = "unsupported_media_type", body = Problem),
        (status = 422, description = "validation_failed (`reason`: `missing_field`, `too_long`, `invalid_value`; `unknown_field`), idempotency_key_reused", body = Problem),
        (status = 429, description = "rate_limited", body = Problem),
        (status = 503, description = "unavailable", body = Problem),
    ),
    security(("bearer" = ["bulk:approve"]))
)]
pub async fn reject(
    req: HttpRequest,
    auth: Auth,
    path: web::Path<String>,
    body: Body,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let principal = auth.require(Scope::BulkApprove)?.clone();
    let id = path.into_inner();
    let operation = "POST /bulk-payouts/{batch_id}/reject";
    let raw = |r: RejectRequest| Ok(r.into_new(id));
    idempotent(
        &req,
        principal,
        &state,
        operation,
        Input::json(&body),
        raw,
        |p, principal, rejection: &RejectBulkPayout, idem| p.bulk_payouts().reject(principal, rejection, idem),
        |v| BulkPayoutDto::from(v),
    )
    .await
}

/// List bulk payouts, newest first.
#[utoipa::path(
    get, path = "/api/v1/bulk-payouts", operation_id = "listBulkPayouts", tag = "Bulk payouts",
    params(
        ("limit" = Option<u32>, Query, description = "1 to 100, default 20"),
        ("cursor" = Option<String>, Query, pattern = "^bp_[A-Za-z0-9_-]{1,64}$", description = "next_cursor of the previous page"),
    ),
    responses(
        (status = 200, description = "A page of batches", body = ListDto<BulkPayoutDto>),
        (status = 400, description = "invalid_request (bad query parameter or cursor)", body = Problem),
        (status = 401, description = "unauthorized, invalid_token", body = Problem),
        (status = 403, description = "insufficient_scope (none of bulk:create, bulk:approve, payouts)", body = Problem),
        (status = 429, description = "rate_limited", body = Problem),
        (status = 503, description = "unavailable", body = Problem),
    ),
    security(("bearer" = ["bulk:create"]), ("bearer" = ["bulk:approve"]), ("bearer" = ["payouts"]))
)]
pub async fn list(auth: Auth, query: web::Query<HashMap<String, String>>, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let principal = auth.require_any(&READERS)?.clone();
    let q = query.into_inner();
    let limit = limit(q.get("limit").map(String::as_str))?;
    let cursor = q.get("cursor").cloned();
    let page = run(&state, move |p| p.bulk_payouts().list(&principal, cursor.as_deref(), limit)).await.map_err(bad_cursor)?;
    Ok(HttpResponse::Ok().json(ListDto {
        data: page.data.iter().map(BulkPayoutDto::from).collect(),
        has_more: page.has_more,
        next_cursor: page.next_cursor,
    }))
}

/// One bulk payout, with its counts of pending, completed and failed items.
#[utoipa::path(
    get, path = "/api/v1/bulk-payouts/{batch_id}", operation_id = "getBulkPayout", tag = "Bulk payouts",
    params(("batch_id" = String, Path, pattern = "^bp_[A-Za-z0-9_-]{1,64}$", description = "`bp_…`")),
    responses(
        (status = 200, description = "The batch", body = BulkPayoutDto),
        (status = 401, description = "unauthorized, invalid_token", body = Problem),
        (status = 403, description = "insufficient_scope (none of bulk:create, bulk:approve, payouts)", body = Problem),
        (status = 404, description = "not_found", body = Problem),
        (status = 429, description = "rate_limited", body = Problem),
        (status = 503, description = "unavailable", body = Problem),
    ),
    security(("bearer" = ["bulk:create"]), ("bearer" = ["bulk:approve"]), ("bearer" = ["payouts"]))
)]
pub async fn get(auth: Auth, path: web::Path<String>, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let principal = auth.require_any(&READERS)?.clone();
    let id = path.into_inner();
    let batch = run(&state, move |p| p.bulk_payouts().get(&principal, &id)).await?;
    Ok(HttpResponse::Ok().json(BulkPayoutDto::from(&batch)))
}

/// A batch's items: payouts with `bulk_payout_id` set, in the batch's order.
#[utoipa::path(
    get, path = "/api/v1/bulk-payouts/{batch_id}/items", operation_id = "listBulkPayoutItems", tag = "Bulk payouts",
    params(
        ("batch_id" = String, Path, pattern = "^bp_[A-Za-z0-9_-]{1,64}$", description = "`bp_…`"),
        ("state" = Option<String>, Query, pattern = "^(pending|completed|failed)$", description = "Only items in this state: `pending`, `completed`, `failed`"),
        ("limit" = Option<u32>, Query, description = "1 to 100, default 20"),
        ("cursor" = Option<String>, Query, pattern = "^[0-9]{1,9}$", description = "next_cursor of the previous page"),
    ),
    responses(
        (status = 200, description = "A page of the batch's items", body = ListDto<PayoutDto>),
        (status = 400, description = "invalid_request (bad query parameter or cursor)", body = Problem),
        (status = 401, description = "unauthorized, invalid_token", body = Problem),
        (status = 403, description = "insufficient_scope (none of bulk:create, bulk:approve, payouts)", body = Problem),
        (status = 404, description = "not_found", body = Problem),
        (status = 429, description = "rate_limited", body = Problem),
        (status = 503, description = "unavailable", body = Problem),
    ),
    security(("bearer" = ["bulk:create"]), ("bearer" = ["bulk:approve"]), ("bearer" = ["payouts"]))
)]
pub async fn items(
    auth: Auth,
    path: web::Path<String>,
    query: web::Query<HashMap<String, String>>,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let principal = auth.require_any(&READERS)?.clone();
    let q = query.into_inner();
    let item_state = state_param(q.get("state"))?;
    let limit = limit(q.get("limit").map(String::as_str))?;
    let cursor = q.get("cursor").cloned();
    let id = path.into_inner();
    let page =
        run(&state, move |p| p.bulk_payouts().items(&principal, &id, item_state, cursor.as_deref(), limit)).await.map_err(bad_cursor)?;
    Ok(HttpResponse::Ok().json(ListDto {
        data: page.data.iter().map(PayoutDto::from).collect(),
        has_more: page.has_more,
        next_cursor: page.next_cursor,
    }))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use actix_web::test::{call_service, init_service, read_body, TestRequest};
    use actix_web::App;

    use crate::extract::BODY_LIMIT;

    async fn length(body: Body) -> HttpResponse {
        HttpResponse::Ok().body(body.0.len().to_string())
    }

    /// The uploads resource (as registered) and an ordinary one, each answering its body's length.
    macro_rules! app {
        () => {
            init_service(
                App::new()
                    .service(uploads().route(web::post().to(length)))
                    .service(resource("/payouts", "POST").route(web::post().to(length))),
            )
            .await
        };
    }

    fn post(uri: &str, len: usize) -> actix_web::test::TestRequest {
        TestRequest::post().uri(uri).insert_header(("content-type", "text/csv")).set_payload(vec![b'x'; len])
    }

    #[actix_web::test]
    async fn uploads_take_five_mebibytes_and_other_routes_sixty_four_kibibytes() {
        let app = app!();
        let res = call_service(&app, post("/bulk-payouts", UPLOAD_LIMIT).to_request()).await;
        assert_eq!(res.status(), 200);
        assert_eq!(read_body(res).await, UPLOAD_LIMIT.to_string());
        let res = call_service(&app, post("/bulk-payouts", UPLOAD_LIMIT + 1).to_request()).await;
        assert_eq!(res.status(), 413);
        let problem: serde_json::Value = serde_json::from_slice(&read_body(res).await).unwrap();
        assert_eq!(problem["code"], "payload_too_large");
        assert_eq!(call_service(&app, post("/payouts", BODY_LIMIT).to_request()).await.status(), 200);
        assert_eq!(call_service(&app, post("/payouts", BODY_LIMIT + 1).to_request()).await.status(), 413);
    }

    fn auth(scopes: &str) -> Auth {
        Auth(malipo_auth::Principal {
            client_id: "ck_test_x".into(),
            org_id: malipo_core::OrgId::new(),
            org_kind: malipo_auth::OrgKind::Merchant,
            country: "KE".into(),
            mode: malipo_core::Mode::Test,
            scopes: malipo_auth::Scopes::parse(scopes).unwrap(),
            person: None,
            role: None,
        })
    }

    #[test]
    fn reads_accept_any_of_the_three_scopes() {
        for scopes in ["bulk:create", "bulk:approve", "payouts", "payments bulk:approve"] {
            assert!(auth(scopes).require_any(&READERS).is_ok(), "{scopes}");
        }
        let e = auth("payments reversals").require_any(&READERS).unwrap_err();
        assert_eq!(e.to_string(), "this token lacks a scope this call needs: one of `bulk:create`, `bulk:approve`, `payouts`");
        let res = actix_web::ResponseError::error_response(&e);
        assert_eq!(res.status(), 403);
        let challenge = res.headers().get("www-authenticate").unwrap().to_str().unwrap();
        assert_eq!(challenge, r#"Bearer realm="malipo", error="insufficient_scope", scope="bulk:create bulk:approve payouts""#);
        assert_eq!(auth("payments").require(Scope::Payouts).unwrap_err().to_string(), "this token lacks the `payouts` scope");
    }
}
