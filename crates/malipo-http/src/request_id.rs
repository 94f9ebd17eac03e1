//! Request ids (`X-Request-Id`), one structured log line per request, and the rate-limit headers.

use std::time::Instant;

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{HeaderName, HeaderValue};
use actix_web::middleware::Next;
use actix_web::HttpMessage;

tokio::task_local! {
    static REQUEST_ID: String;
}

/// The header carrying the request id.
pub const X_REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// Rate-limit state of the request's credential, set by the authentication extractor.
#[derive(Clone, Copy, Debug)]
pub struct RateLimitInfo {
    /// Requests per second allowed.
    pub limit: u32,
    /// Requests left in the current window.
    pub remaining: u32,
}

/// The id of the request being served ("unknown" outside a request).
pub fn current_request_id() -> String {
    REQUEST_ID.try_with(Clone::clone).unwrap_or_else(|_| "unknown".to_owned())
}

fn acceptable(v: &HeaderValue) -> Option<String> {
    let s = v.to_str().ok()?;
    let ok = (1..=128).contains(&s.len()) && s.bytes().all(|b| (0x21..=0x7e).contains(&b));
    ok.then(|| s.to_owned())
}

/// Prefixes of secrets that can stand in a path: console session and invitation tokens
/// (`/console/invite/mls_…`), device and access tokens, client and webhook secrets.
const SECRET_PREFIXES: [&str; 5] = ["mls_", "mld_", "mlp_", "cs_", "whsec_"];

/// `path` as it may be logged: every segment that is a secret (a one-time invitation link's
/// token, say) replaced by its prefix and `[redacted]`, so that whoever reads the logs cannot
/// use the link first.
pub fn redacted_path(path: &str) -> String {
    path.split('/')
        .map(|segment| match SECRET_PREFIXES.iter().find(|p| segment.starts_with(*p) && segment.len() > p.len()) {
            Some(prefix) => format!("{prefix}[redacted]"),
            None => segment.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// Middleware: takes the caller's `X-Request-Id` (1–128 visible ASCII) or makes one, serves the
/// request inside its scope (and with the id in its `X-Request-Id` header, where other front
/// ends read it), echoes it, adds rate-limit headers, and logs one line.
///
/// # Errors
/// Those of the inner service.
pub async fn request_id_mw(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<impl MessageBody + 'static>, actix_web::Error> {
    let mut req = req;
    let id = req.headers().get(&X_REQUEST_ID).and_then(acceptable).unwrap_or_else(|| format!("req_{}", uuid::Uuid::now_v7().simple()));
    if let Ok(v) = HeaderValue::from_str(&id) {
        req.headers_mut().insert(X_REQUEST_ID, v);
    }
    let started = Instant::now();
    let method = req.method().clone();
    let path = redacted_path(req.path());
    let mut res = REQUEST_ID.scope(id.clone(), next.call(req)).await?;
    let status = res.status().as_u16();
    let rate = res.request().extensions().get::<RateLimitInfo>().copied();
    let headers = res.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&id) {
        headers.insert(X_REQUEST_ID, v);
    }
    if let Some(r) = rate {
        if let Ok(v) = HeaderValue::from_str(&format!("{};w=1", r.limit)) {
            headers.insert(HeaderName::from_static("ratelimit-policy"), v);
        }
        if let Ok(v) = HeaderValue::from_str(&format!("limit={}, remaining={}, reset=1", r.limit, r.remaining)) {
            headers.insert(HeaderName::from_static("ratelimit"), v);
        }
    }
    tracing::info!(
        request_id = %id,
        method = %method,
        path = %path,
        status,
        latency_ms = started.elapsed().as_secs_f64() * 1000.0,
        "request"
    );
    Ok(res)
}

#[cfg(test)]
mod tests {
    use super::redacted_path;

    #[test]
    fn secrets_in_paths_are_redacted_and_nothing_else() {
        assert_eq!(redacted_path("/console/invite/mls_abcDEF123"), "/console/invite/mls_[redacted]");
        assert_eq!(redacted_path("/console/invite/mls_abc/extra"), "/console/invite/mls_[redacted]/extra");
        assert_eq!(redacted_path("/api/v1/partner/charges/ch_01J"), "/api/v1/partner/charges/ch_01J");
        assert_eq!(redacted_path("/console/"), "/console/");
        assert_eq!(redacted_path("/x/cs_test_secret"), "/x/cs_[redacted]");
        assert_eq!(redacted_path("/x/mls_"), "/x/mls_", "a bare prefix holds no secret");
    }
}
