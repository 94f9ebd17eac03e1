//! `POST /oauth/token` and `POST /oauth/revoke` (contract section 2).

pub mod dto;

use actix_web::http::header;
use actix_web::{web, HttpRequest, HttpResponse};
use base64::Engine;
use malipo_service::{OAuthProblem, Platform, ServiceError};
use utoipa::OpenApi;

use self::dto::{RevokeForm, RevokeRequest, TokenForm, TokenRequest, TokenResponse};
use crate::extract::{media_type, parse_json, Body};
use crate::handler::resource;
use crate::problem::{ApiError, ClientAuth, Problem};
use crate::state::AppState;

/// The group's routes, under `/api/v1`.
pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(resource("/oauth/token", "POST").route(web::post().to(token)))
        .service(resource("/oauth/revoke", "POST").route(web::post().to(revoke)));
}

/// The group's operations and objects in the OpenAPI document.
#[derive(OpenApi)]
#[openapi(paths(token, revoke), components(schemas(TokenRequest, TokenForm, TokenResponse, RevokeRequest, RevokeForm)))]
pub struct Api;

/// The parameters of a token or revoke request, whichever encoding it came in.
#[derive(Debug, Default)]
struct Params {
    grant_type: Option<String>,
    client_id: Option<String>,
    client_secret: Option<String>,
    scope: Option<String>,
    token: Option<String>,
    json: bool,
}

fn parse_params(req: &HttpRequest, body: &[u8], revoke: bool) -> Result<Params, ApiError> {
    let bad = |m: String| ApiError::oauth_invalid_request(m);
    match media_type(req).as_deref() {
        Some("application/json") => {
            if revoke {
                let r = parse_json::<RevokeRequest>(body).map_err(|e| bad(e.to_string()))?.value;
                Ok(Params { client_id: r.client_id, client_secret: r.client_secret, token: r.token, json: true, ..Params::default() })
            } else {
                let r = parse_json::<TokenRequest>(body).map_err(|e| match e {
                    ApiError::Fields(f) => bad(f.iter().map(|f| f.message.clone()).collect::<Vec<_>>().join("; ")),
                    other => bad(other.to_string()),
                })?;
                let r = r.value;
                Ok(Params {
                    grant_type: r.grant_type,
                    client_id: r.client_id,
                    client_secret: r.client_secret,
                    scope: r.scope,
                    json: true,
                    ..Params::default()
                })
            }
        }
        Some("application/x-www-form-urlencoded") => {
            let pairs: Vec<(String, String)> = serde_urlencoded::from_bytes(body).map_err(|e| bad(format!("malformed form body: {e}")))?;
            let mut p = Params::default();
            for (k, v) in pairs {
                let slot = match k.as_str() {
                    "grant_type" => &mut p.grant_type,
                    "client_id" => &mut p.client_id,
                    "client_secret" => &mut p.client_secret,
                    "scope" => &mut p.scope,
                    "token" => &mut p.token,
                    _ => continue,
                };
                if slot.replace(v).is_some() {
                    return Err(bad(format!("parameter {k} is repeated")));
                }
            }
            Ok(p)
        }
        other => Err(ApiError::UnsupportedMediaType(format!(
            "use application/x-www-form-urlencoded or application/json, not {}",
            other.unwrap_or("absent")
        ))),
    }
}

/// HTTP Basic client credentials, each part form-urlencoded (RFC 6749 §2.3.1) or raw.
fn basic(req: &HttpRequest) -> Result<Option<(String, String)>, ApiError> {
    let Some(value) = req.headers().get(header::AUTHORIZATION) else {
        return Ok(None);
    };
    let invalid =
        || ApiError::OAuth { code: "invalid_client", description: "malformed Basic credentials".into(), auth: Some(ClientAuth::Basic) };
    let value = value.to_str().map_err(|_| invalid())?;
    let Some((scheme, encoded)) = value.split_once(' ') else {
        return Err(invalid());
    };
    if !scheme.eq_ignore_ascii_case("basic") {
        return Err(ApiError::oauth_invalid_request("only HTTP Basic client authentication is accepted in the Authorization header"));
    }
    let decoded = base64::engine::general_purpose::STANDARD.decode(encoded.trim()).map_err(|_| invalid())?;
    let decoded = String::from_utf8(decoded).map_err(|_| invalid())?;
    let (id, secret) = decoded.split_once(':').ok_or_else(invalid)?;
    let unform = |s: &str| {
        let s = s.replace('+', " ");
        percent_encoding::percent_decode_str(&s).decode_utf8().map(|c| c.into_owned()).unwrap_or(s)
    };
    Ok(Some((unform(id), unform(secret))))
}

/// The client's credentials and how they were sent.
fn client(req: &HttpRequest, p: &mut Params) -> Result<(String, String, ClientAuth), ApiError> {
    match basic(req)? {
        Some((id, secret)) => {
            if p.client_secret.is_some() || p.client_id.as_ref().is_some_and(|b| b != &id) {
                return Err(ApiError::oauth_invalid_request("use one client authentication method, not two"));
            }
            Ok((id, secret, ClientAuth::Basic))
        }
        None => match (p.client_id.take(), p.client_secret.take()) {
            (Some(id), Some(secret)) => Ok((id, secret, ClientAuth::Body)),
            _ => Err(ApiError::oauth_invalid_request("client_id and client_secret are required")),
        },
    }
}

/// Runs a call that authenticates the client `id`, under the failure limits
/// ([`crate::failures`]): the credentials are always checked, and a right one is answered at
/// once; a failure that is one too many for the client id or the address is answered 429 rather
/// than 401 (held a while first when its address goes on regardless). Checks from an address
/// that is refused take turns with those of every other refused address.
async fn limited<T: Send + 'static>(
    req: &HttpRequest,
    state: &AppState,
    id: String,
    auth: ClientAuth,
    call: impl FnOnce(&Platform, &str) -> Result<T, ServiceError> + Send + 'static,
) -> Result<T, ApiError> {
    let failures = state.rate_limits.token_failures();
    let forwarded = req.headers().get("x-forwarded-for").and_then(|v| v.to_str().ok());
    let addr = req.peer_addr().map(|a| malipo_auth::source_address(a.ip(), forwarded, state.trust_proxy));
    let turn = failures.turn(addr).await;
    let platform = state.platform.clone();
    let (id, result) = web::block(move || {
        let result = call(&platform, &id);
        drop(turn);
        (id, result)
    })
    .await
    .map_err(|e| ApiError::Service(ServiceError::Internal(e.to_string())))?;
    match result {
        Err(ServiceError::OAuth(OAuthProblem::InvalidClient)) => match failures.failed(&id, addr) {
            Some(refusal) => {
                if let Some((hold, _place)) = &refusal.hold {
                    actix_web::rt::time::sleep(*hold).await;
                }
                Err(ApiError::RateLimited(refusal.wait))
            }
            None => Err(oauth_error(ServiceError::OAuth(OAuthProblem::InvalidClient), auth)),
        },
        other => other.map_err(|e| oauth_error(e, auth)),
    }
}

fn oauth_error(e: ServiceError, auth: ClientAuth) -> ApiError {
    match e {
        ServiceError::OAuth(OAuthProblem::InvalidClient) => {
            ApiError::OAuth { code: "invalid_client", description: "client authentication failed".into(), auth: Some(auth) }
        }
        ServiceError::OAuth(OAuthProblem::InvalidScope(m)) => ApiError::OAuth { code: "invalid_scope", description: m, auth: None },
        other => ApiError::Service(other),
    }
}

/// Exchange client credentials for a one-hour bearer token.
#[utoipa::path(
    post, path = "/api/v1/oauth/token", operation_id = "createToken", tag = "Auth",
    request_body(
        description = "JSON (the seed's form) or application/x-www-form-urlencoded (RFC 6749 §4.4, client by HTTP Basic or body)",
        content((TokenRequest = "application/json"), (TokenForm = "application/x-www-form-urlencoded"))
    ),
    responses(
        (status = 200, description = "Token issued", body = TokenResponse),
        (status = 400, description = "invalid_request, unsupported_grant_type, invalid_scope", body = Problem),
        (status = 401, description = "invalid_client", body = Problem),
        (status = 413, description = "payload_too_large", body = Problem),
        (status = 415, description = "unsupported_media_type", body = Problem),
        (status = 503, description = "unavailable", body = Problem),
    ),
    security(())
)]
pub async fn token(req: HttpRequest, body: Result<Body, ApiError>, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    issue(req, body, state).await.map_err(ApiError::at_token_endpoint)
}

async fn issue(req: HttpRequest, body: Result<Body, ApiError>, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let mut p = parse_params(&req, &body?.0, false)?;
    match p.grant_type.as_deref() {
        Some("client_credentials") => {}
        None if p.json => {}
        None => return Err(ApiError::oauth_invalid_request("grant_type is required")),
        Some(other) => {
            return Err(ApiError::OAuth {
                code: "unsupported_grant_type",
                description: format!("grant_type {other} is not supported; use client_credentials"),
                auth: None,
            })
        }
    }
    let (id, secret, auth) = client(&req, &mut p)?;
    let scope = p.scope.take();
    let issued = limited(&req, &state, id, auth, move |platform, id| platform.access().issue_token(id, &secret, scope.as_deref())).await?;
    Ok(HttpResponse::Ok()
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .insert_header((header::PRAGMA, "no-cache"))
        .json(TokenResponse::from(issued)))
}

/// Revoke a token (RFC 7009). Answers 200 for any well-formed request.
#[utoipa::path(
    post, path = "/api/v1/oauth/revoke", operation_id = "revokeToken", tag = "Auth",
    request_body(
        description = "form or JSON; client authenticated as at the token endpoint",
        content((RevokeRequest = "application/json"), (RevokeForm = "application/x-www-form-urlencoded"))
    ),
    responses(
        (status = 200, description = "Revoked, or unknown"),
        (status = 400, description = "invalid_request", body = Problem),
        (status = 401, description = "invalid_client", body = Problem),
        (status = 413, description = "payload_too_large", body = Problem),
        (status = 415, description = "unsupported_media_type", body = Problem),
        (status = 503, description = "unavailable", body = Problem),
    ),
    security(())
)]
pub async fn revoke(req: HttpRequest, body: Result<Body, ApiError>, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    revoke_token(req, body, state).await.map_err(ApiError::at_token_endpoint)
}

async fn revoke_token(req: HttpRequest, body: Result<Body, ApiError>, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let mut p = parse_params(&req, &body?.0, true)?;
    let token = p.token.take().ok_or_else(|| ApiError::oauth_invalid_request("token is required"))?;
    let (id, secret, auth) = client(&req, &mut p)?;
    limited(&req, &state, id, auth, move |platform, id| platform.access().revoke_token(id, &secret, &token)).await?;
    Ok(HttpResponse::Ok().insert_header((header::CACHE_CONTROL, "no-store")).json(serde_json::json!({})))
}
