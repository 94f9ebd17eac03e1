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

use crate::{run, Console, ConsoleError};

/// The session cookie's name.
pub const SESSION_COOKIE: &str = "malipo_session";

/// The session cookie carrying `token` (a sign-in waiting for its second factor carries its
/// pending token the same way).
pub fn session_cookie(token: &str, secure: bool) -> Cookie<'static> {
    Cookie::build(SESSION_COOKIE, token.to_owned()).path("/console").http_only(true).same_site(SameSite::Lax).secure(secure).finish()
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

/// The request's source address (the connection's peer).
pub fn client_ip(req: &HttpRequest) -> IpAddr {
    req.peer_addr().map_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED), |a| a.ip())
}

/// 303 to `to`, setting the session cookie to `token`.
pub fn signed_in(to: &str, token: &str, console: &Console) -> HttpResponse {
    HttpResponse::SeeOther().insert_header(("Location", to)).cookie(session_cookie(token, console.settings.secure_cookies)).finish()
}

/// A local path to return to after signing in: under `/console/`, nothing else (no open
/// redirect).
pub fn local_next(next: Option<&str>) -> String {
    match next {
        Some(n) if n.starts_with("/console/") && !n.starts_with("//") && !n.contains("\\") && !n.contains("://") => n.to_owned(),
        _ => "/console/".to_owned(),
    }
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
    use super::local_next;

    #[test]
    fn only_console_paths_are_returned_to() {
        assert_eq!(local_next(Some("/console/charges?state=completed")), "/console/charges?state=completed");
        for bad in ["https://evil.example/", "//evil.example/console/", "/api/v1/x", "/console/\\evil", "javascript:alert(1)"] {
            assert_eq!(local_next(Some(bad)), "/console/", "{bad}");
        }
        assert_eq!(local_next(None), "/console/");
    }
}
