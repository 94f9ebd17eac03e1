//! The session cookie and the signed-in person behind it.
//!
//! The cookie holds a random token (the database keeps its digest): `HttpOnly`,
//! `SameSite=Lax`, path `/console`, and `Secure` when the console is reached over HTTPS
//! (`MALIPO_CONSOLE_SECURE_COOKIES`). Every instance reads the session from the database, so
//! signing out ends it everywhere at once.

use std::future::Future;
use std::net::{IpAddr, Ipv4Addr};
use std::pin::Pin;

use actix_web::cookie::{Cookie, SameSite};
use actix_web::dev::Payload;
use actix_web::{web, FromRequest, HttpRequest, HttpResponse};
use malipo_auth::Permission;
use malipo_service::SignedIn;

use crate::chrome::see_other;
use crate::{run, Console, ConsoleError};

/// The session cookie's name.
pub const SESSION_COOKIE: &str = "malipo_session";

/// The session cookie carrying `token` (a sign-in waiting for its second factor carries its
/// pending token the same way).
pub fn session_cookie(token: &str, secure: bool) -> Cookie<'static> {
    Cookie::build(SESSION_COOKIE, token.to_owned()).path("/console").http_only(true).same_site(SameSite::Lax).secure(secure).finish()
}

/// The device cookie's name: it carries the device token a sign-in gave this browser, which
/// exempts it from the brake on an account guessed at from many addresses (never from the
/// limits at its own address).
pub const DEVICE_COOKIE: &str = "malipo_device";

/// How long a browser keeps its device token.
const DEVICE_DAYS: i64 = 180;

/// The device cookie carrying `token`: `HttpOnly`, `SameSite=Strict` (it is read only by the
/// console's own sign-in forms), path `/console`.
pub fn device_cookie(token: &str, secure: bool) -> Cookie<'static> {
    Cookie::build(DEVICE_COOKIE, token.to_owned())
        .path("/console")
        .http_only(true)
        .same_site(SameSite::Strict)
        .secure(secure)
        .max_age(actix_web::cookie::time::Duration::days(DEVICE_DAYS))
        .finish()
}

/// The device token the request carries, if any.
pub fn device_of(req: &HttpRequest) -> Option<String> {
    req.cookie(DEVICE_COOKIE).map(|c| c.value().to_owned()).filter(|v| !v.is_empty())
}

/// A cookie that removes the session cookie from the browser.
pub fn removal_cookie(secure: bool) -> Cookie<'static> {
    let mut c = session_cookie("", secure);
    c.make_removal();
    c
}

/// The session token the request carries, if any.
pub fn token_of(req: &HttpRequest) -> Option<String> {
    req.cookie(SESSION_COOKIE).map(|c| c.value().to_owned()).filter(|v| !v.is_empty())
}

/// The request's source address: the connection's peer, or behind a trusted proxy the address
/// it says it forwards ([`malipo_auth::source_address`]).
pub fn client_ip(req: &HttpRequest, settings: &crate::ConsoleSettings) -> IpAddr {
    let peer = req.peer_addr().map_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED), |a| a.ip());
    let forwarded = req.headers().get("x-forwarded-for").and_then(|v| v.to_str().ok());
    malipo_auth::source_address(peer, forwarded, settings.trust_proxy)
}

/// 303 to `to` (a local path the handler made or [`local_next`] checked), setting the session
/// cookie to `token`.
pub fn signed_in(to: &str, token: &str, console: &Console) -> HttpResponse {
    let mut r = see_other(to);
    if r.status() == actix_web::http::StatusCode::SEE_OTHER {
        let _ = r.add_cookie(&session_cookie(token, console.settings.secure_cookies));
    }
    r
}

/// [`signed_in`], also giving the browser the person's device token.
pub fn signed_in_with_device(to: &str, token: &str, device: &str, console: &Console) -> HttpResponse {
    let mut r = signed_in(to, token, console);
    if r.status() == actix_web::http::StatusCode::SEE_OTHER {
        let _ = r.add_cookie(&device_cookie(device, console.settings.secure_cookies));
    }
    r
}

/// A local path to return to after signing in: under `/console/`, nothing else (no open
/// redirect).
pub fn local_next(next: Option<&str>) -> String {
    match next {
        Some(n) if n.starts_with("/console/") && !n.starts_with("//") && !n.contains('\\') && !n.contains("://") && is_visible_ascii(n) => {
            n.to_owned()
        }
        _ => "/console/".to_owned(),
    }
}

/// Whether `s` holds only visible ASCII: what a URL in a `Location` header may hold (a browser
/// sends anything else percent-encoded).
fn is_visible_ascii(s: &str) -> bool {
    s.bytes().all(|b| (0x21..=0x7e).contains(&b))
}

/// [`local_next`] of a path sent with a form or query, refused outright when it holds a control
/// character (no browser sends one): checked before the request does anything, so that nothing
/// is done that its answer could then not say.
///
/// # Errors
/// [`ConsoleError::BadForm`].
pub fn checked_next(next: Option<&str>) -> Result<String, ConsoleError> {
    if next.is_some_and(|n| n.chars().any(char::is_control)) {
        return Err(ConsoleError::BadForm("the page to return to is not a valid address".into()));
    }
    Ok(local_next(next))
}

/// The signed-in person of the request. Without a live session the request goes to the sign-in
/// page; a person who must turn on two-factor authentication goes to enrolment (only enrolment
/// and signing out are open to them).
pub struct Person(pub SignedIn);

impl Person {
    /// Refuses unless their role may do `what`.
    ///
    /// # Errors
    /// [`ConsoleError::Forbidden`].
    pub fn require(&self, what: Permission) -> Result<(), ConsoleError> {
        self.0.require(what).map_err(ConsoleError::from)
    }
}

impl std::ops::Deref for Person {
    type Target = SignedIn;
    fn deref(&self) -> &SignedIn {
        &self.0
    }
}

/// Paths open to a person who must still turn on two-factor authentication.
fn open_before_enrolment(path: &str) -> bool {
    path.starts_with("/console/enrol") || path == "/console/logout" || path.starts_with("/console/assets/")
}

/// The console's shared state of a request.
pub fn console_of(req: &HttpRequest) -> Result<web::Data<Console>, ConsoleError> {
    req.app_data::<web::Data<Console>>().cloned().ok_or_else(|| ConsoleError::Internal("console state missing".into()))
}

/// The person behind the request's session (see [`Person`]).
///
/// # Errors
/// [`ConsoleError::SignIn`], [`ConsoleError::Enrol`], or a failure.
pub async fn person_of(req: &HttpRequest) -> Result<Person, ConsoleError> {
    let console = console_of(req)?;
    let next = req.uri().path_and_query().map_or_else(|| "/console/".to_owned(), |p| p.as_str().to_owned());
    let next = if req.method() == actix_web::http::Method::GET { next } else { "/console/".to_owned() };
    let Some(token) = token_of(req) else { return Err(ConsoleError::SignIn { next }) };
    let who = run(&console, move |p| p.people().session(&token)).await?.ok_or(ConsoleError::SignIn { next })?;
    if who.must_enrol() && !open_before_enrolment(req.path()) {
        return Err(ConsoleError::Enrol);
    }
    if !crate::chrome::section_allows(&who, req.path()) {
        return Err(ConsoleError::Forbidden("your role may not use this section".into()));
    }
    Ok(Person(who))
}

impl FromRequest for Person {
    type Error = ConsoleError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, Self::Error>>>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let req = req.clone();
        Box::pin(async move { person_of(&req).await })
    }
}

#[cfg(test)]
mod tests {
    use super::{checked_next, local_next};

    #[test]
    fn only_console_paths_are_returned_to() {
        assert_eq!(local_next(Some("/console/charges?state=completed")), "/console/charges?state=completed");
        for bad in
            ["https://evil.example/", "//evil.example/console/", "/api/v1/x", "/console/\\evil", "javascript:alert(1)", "/console/a b"]
        {
            assert_eq!(local_next(Some(bad)), "/console/", "{bad}");
        }
        assert_eq!(local_next(None), "/console/");
        assert!(checked_next(Some("/console/\r\nSet-Cookie: x=1")).is_err(), "a control character is refused");
        assert!(checked_next(Some("/console/\u{7f}")).is_err());
        assert_eq!(checked_next(Some("/console/charges")).ok().as_deref(), Some("/console/charges"));
    }
}
