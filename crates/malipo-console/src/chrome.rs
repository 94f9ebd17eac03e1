//! What every page shares: the navigation (links shown only where the role may use them), the
//! "Test mode" switch and banner, the person's name and "Sign out", the notice of the last
//! action, the security headers, and rendering.

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{HeaderName, HeaderValue};
use actix_web::http::StatusCode;
use actix_web::middleware::Next;
use actix_web::HttpResponse;
use askama::Template;
use malipo_auth::{OrgKind, Permission};
use malipo_core::Mode;
use malipo_service::SignedIn;

tokio::task_local! {
    static REQUEST_ID: String;
}

/// The id of the request being served (the API's request-id middleware puts it in the request's
/// `X-Request-Id`).
pub fn current_request_id() -> String {
    REQUEST_ID.try_with(Clone::clone).unwrap_or_else(|_| "unknown".to_owned())
}

/// The Content-Security-Policy of every console response: nothing from another origin, no
/// inline script or style, no framing; the script may fetch from the console itself (the live
/// regions' fragments, `assets/app.js`).
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
                       connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// Middleware of the `/console` scope: serves the request with its id at hand, and adds the
/// security headers (CSP, no sniffing, no framing, no referrer to other sites, no caching of
/// pages that show a person's data).
///
/// # Errors
/// Those of the inner service.
pub async fn security_headers(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<impl MessageBody + 'static>, actix_web::Error> {
    let id = req.headers().get("x-request-id").and_then(|v| v.to_str().ok()).unwrap_or("unknown").to_owned();
    let is_asset = req.path().starts_with("/console/assets/");
    let mut res = REQUEST_ID.scope(id, next.call(req)).await?;
    let headers = res.headers_mut();
    let set = |headers: &mut actix_web::http::header::HeaderMap, name: &'static str, value: &'static str| {
        headers.insert(HeaderName::from_static(name), HeaderValue::from_static(value));
    };
    set(headers, "content-security-policy", CSP);
    set(headers, "x-content-type-options", "nosniff");
    set(headers, "x-frame-options", "DENY");
    set(headers, "referrer-policy", "same-origin");
    set(headers, "cross-origin-opener-policy", "same-origin");
    if !is_asset {
        set(headers, "cache-control", "no-store");
    }
    Ok(res)
}

/// Renders a page with a status.
pub fn page_response(status: StatusCode, page: &impl Template) -> HttpResponse {
    match page.render() {
        Ok(html) => HttpResponse::build(status).content_type("text/html; charset=utf-8").body(html),
        Err(e) => {
            tracing::error!(request_id = %current_request_id(), error = %e, "a console page failed to render");
            HttpResponse::InternalServerError().content_type("text/plain; charset=utf-8").body("the page failed to render")
        }
    }
}

/// Renders a page: 200.
pub fn page(page: &impl Template) -> HttpResponse {
    page_response(StatusCode::OK, page)
}

/// 303 to `to` (after a form post: the browser then GETs the result, so a refresh never posts
/// again). A target that cannot be a `Location` (a control character in it) answers the error
/// page instead: the handlers validate what people send before acting on it, so this is the
/// last guard, never a bare failure.
pub fn see_other(to: &str) -> HttpResponse {
    match HeaderValue::from_str(to) {
        Ok(location) => HttpResponse::SeeOther().insert_header((actix_web::http::header::LOCATION, location)).finish(),
        Err(_) => {
            tracing::error!(request_id = %current_request_id(), "a redirect target was not a valid header value");
            error_page(StatusCode::BAD_REQUEST, "Bad request", "The page to go to is not a valid address.".into())
        }
    }
}

#[derive(Template)]
#[template(path = "error.html")]
struct ErrorPage<'a> {
    title: &'a str,
    message: String,
    request_id: String,
}

/// The error page: its title, message and the request's id (to quote to support).
pub fn error_page(status: StatusCode, title: &str, message: String) -> HttpResponse {
    page_response(status, &ErrorPage { title, message, request_id: current_request_id() })
}

/// Percent-encodes a query value.
pub fn url_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~' | b'/') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A link of the navigation.
#[derive(Clone, Debug)]
pub struct NavLink {
    /// Its text (the contract's names: "Home", "Charges", …).
    pub label: &'static str,
    /// Where it goes.
    pub href: &'static str,
    /// Whether it is the current section (`aria-current="page"`).
    pub current: bool,
}

/// Every section of the console, in the navigation's order, with the permission it needs and
/// the kinds of organisation that have it.
const SECTIONS: &[(&str, &str, Permission, &[OrgKind])] = &[
    ("Home", "/console/", Permission::Read, &[OrgKind::Merchant, OrgKind::Corporate]),
    ("Charges", "/console/charges", Permission::Read, &[OrgKind::Merchant]),
    ("Payment requests", "/console/payment-requests", Permission::Read, &[OrgKind::Merchant]),
    ("Payouts", "/console/payouts", Permission::Read, &[OrgKind::Merchant, OrgKind::Corporate]),
    ("Bulk payouts", "/console/bulk-payouts", Permission::Read, &[OrgKind::Corporate]),
    ("Approvals", "/console/approvals", Permission::ApproveBulk, &[OrgKind::Corporate]),
    ("Transactions", "/console/transactions", Permission::Read, &[OrgKind::Merchant, OrgKind::Corporate]),
    ("Reconciliation", "/console/reconciliation", Permission::Read, &[OrgKind::Merchant, OrgKind::Corporate]),
    ("Developers", "/console/developers", Permission::ManageKeys, &[OrgKind::Merchant, OrgKind::Corporate]),
    ("Team", "/console/team", Permission::ManageTeam, &[OrgKind::Merchant, OrgKind::Corporate]),
    ("Audit log", "/console/audit", Permission::ViewAudit, &[OrgKind::Merchant, OrgKind::Corporate, OrgKind::Operator]),
    ("Float", "/console/float", Permission::AgentCash, &[OrgKind::Agent]),
    ("Cash in", "/console/cash-in", Permission::AgentCash, &[OrgKind::Agent]),
    ("Cash out", "/console/cash-out", Permission::AgentCash, &[OrgKind::Agent]),
    ("Wallets", "/console/wallets", Permission::Wallets, &[OrgKind::Operator]),
    ("Organisations", "/console/organisations", Permission::Organisations, &[OrgKind::Operator]),
];

/// Whether `who` may open `path` as far as the sections go: every page and form under a
/// section's path (the path itself, or below it) belongs to that section (the longest match), and
/// is refused to a person whose organisation's kind has no such section or whose role may not use
/// it, whatever the handler checks besides. The one gate of pages and form posts alike, from the
/// same table as the navigation. Home (`/console/`) sends each person to their first section, so
/// it is open to all; paths outside every section (account, mode, enrolment) are their handlers'.
pub fn section_allows(who: &SignedIn, path: &str) -> bool {
    let under = |href: &str| path == href || path.strip_prefix(href).is_some_and(|rest| rest.starts_with('/'));
    SECTIONS
        .iter()
        .filter(|(_, href, _, _)| *href != "/console/" && under(href))
        .max_by_key(|(_, href, _, _)| href.len())
        .is_none_or(|(_, _, permission, kinds)| kinds.contains(&who.org.kind) && who.may(*permission))
}

/// The sections `who` may use, with `current` marked.
pub fn nav(who: &SignedIn, current: &str) -> Vec<NavLink> {
    SECTIONS
        .iter()
        .filter(|(_, _, p, kinds)| kinds.contains(&who.org.kind) && who.may(*p))
        .map(|(label, href, _, _)| NavLink { label, href, current: *label == current })
        .collect()
}

/// A message about the last action, shown in a `role="status"` (success) or `role="alert"`
/// (error) region.
#[derive(Clone, Debug)]
pub struct Notice {
    /// `status` or `alert`.
    pub role: &'static str,
    /// The text.
    pub text: String,
}

impl Notice {
    /// A success.
    pub fn done(text: impl Into<String>) -> Option<Notice> {
        Some(Notice { role: "status", text: text.into() })
    }

    /// An error.
    pub fn alert(text: impl Into<String>) -> Option<Notice> {
        Some(Notice { role: "alert", text: text.into() })
    }
}

/// What the layout (`templates/base.html`) shows around every signed-in page.
#[derive(Clone, Debug)]
pub struct Chrome {
    /// The page's title (its `<h1>` and `<title>`).
    pub title: String,
    /// The navigation.
    pub nav: Vec<NavLink>,
    /// The person's name and organisation.
    pub person: String,
    /// Their organisation's name.
    pub org: String,
    /// Whether the session shows test objects.
    pub test_mode: bool,
    /// The session's CSRF token, for every form.
    pub csrf: String,
    /// The path of this page (the mode switch returns here).
    pub path: String,
    /// A message about the last action.
    pub notice: Option<Notice>,
    /// The demo user (no second factor): said on Home.
    pub demo: bool,
    /// The assets' version tag (in their URLs).
    pub assets: &'static str,
}

impl Chrome {
    /// The layout of a page titled `title` in section `section` for `who`, at `path`.
    pub fn new(who: &SignedIn, section: &str, title: impl Into<String>, path: &str) -> Self {
        Chrome {
            title: title.into(),
            // Before enrolment nothing else is open: no links to it.
            nav: if who.must_enrol() { Vec::new() } else { nav(who, section) },
            person: if who.user.name.is_empty() { who.user.email.clone() } else { who.user.name.clone() },
            org: who.org.name.clone(),
            test_mode: who.mode() == Mode::Test,
            csrf: who.csrf_token.clone(),
            path: path.to_owned(),
            notice: None,
            demo: who.user.demo,
            assets: crate::assets::version(),
        }
    }

    /// With a notice.
    #[must_use]
    pub fn with_notice(mut self, notice: Option<Notice>) -> Self {
        self.notice = notice;
        self
    }
}
