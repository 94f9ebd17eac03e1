//! What every handler shares: running a use case off the async threads, answering with what
//! the idempotency store kept, the `limit` parameter, and resources that answer 405 for other
//! methods.

use actix_web::{web, HttpResponse, Resource};
use malipo_service::{Done, Platform, ServiceError};
use serde::Serialize;

use crate::problem::ApiError;
use crate::state::AppState;

/// Runs a use case on a blocking thread (diesel is synchronous; no transaction crosses an await).
///
/// # Errors
/// The use case's error.
pub async fn run<T: Send + 'static>(
    state: &AppState,
    f: impl FnOnce(&Platform) -> Result<T, ServiceError> + Send + 'static,
) -> Result<T, ApiError> {
    let platform = state.platform.clone();
    web::block(move || f(&platform)).await.map_err(|e| ApiError::Service(ServiceError::Internal(e.to_string())))?.map_err(ApiError::from)
}

/// A 200 JSON answer of what an idempotent call did; a repeat's carries
/// `Idempotent-Replayed: true`.
pub fn answer<T: Serialize>(done: Done<T>) -> HttpResponse {
    let mut b = HttpResponse::Ok();
    b.content_type("application/json");
    if done.replayed {
        b.insert_header(("Idempotent-Replayed", "true"));
    }
    b.body(serde_json::to_vec(&done.value).unwrap_or_else(|_| b"{}".to_vec()))
}

/// Parses the common `limit` parameter (1–100, default 20).
///
/// # Errors
/// 400 `invalid_request`.
pub fn limit(value: Option<&str>) -> Result<usize, ApiError> {
    match value {
        None => Ok(20),
        Some(v) => v
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=100).contains(n))
            .ok_or_else(|| ApiError::InvalidRequest("limit must be an integer from 1 to 100".into())),
    }
}

/// A list's or statement's error: a cursor the use case refuses (its only validation) is a bad
/// query parameter, 400 `invalid_request`.
pub fn bad_cursor(e: ApiError) -> ApiError {
    match e {
        ApiError::Service(ServiceError::Validation(_)) => ApiError::InvalidRequest("cursor is not valid".into()),
        other => other,
    }
}

/// A resource at `path` whose other methods answer 405 with the `Allow` header RFC 9110
/// requires (`allow` lists the methods routed on it).
pub fn resource(path: &str, allow: &'static str) -> Resource {
    web::resource(path.to_owned())
        .default_service(web::to(move || async move { Err::<HttpResponse, _>(ApiError::MethodNotAllowed(allow)) }))
}
