//! Every state-changing request (every `POST`) must come from the console's own origin and, once
//! signed in, carry the session's CSRF token; otherwise it is refused with 403 before anything
//! is done. The token is a keyed digest of the session (bound to it, never stored), compared in
//! constant time; the origin is the `Origin` header, or `Sec-Fetch-Site: same-origin` where a
//! browser sends no `Origin`. A request with neither is refused: every browser sends one.

use std::future::Future;
use std::net::IpAddr;
use std::pin::Pin;

use actix_web::dev::Payload;
use actix_web::{web, FromRequest, HttpRequest};
use malipo_service::SignedIn;
use serde::de::DeserializeOwned;
use subtle::ConstantTimeEq;

use crate::session::{client_ip, console_of, person_of, Person};
use crate::{ConsoleError, ConsoleSettings};

/// A form that carries the session's CSRF token in its `csrf_token` field.
pub trait CsrfForm {
    /// The token as posted.
    fn csrf_token(&self) -> &str;
}

/// Implements [`CsrfForm`] for form structs with a `csrf_token: String` field.
#[macro_export]
macro_rules! csrf_forms {
    ($($form:ty),* $(,)?) => {$(
        impl $crate::csrf::CsrfForm for $form {
            fn csrf_token(&self) -> &str {
                &self.csrf_token
            }
        }
    )*};
}

/// Whether the request comes from the console's own origin: one of the configured ones, never
/// one the request names (its `Host` or forwarded headers are the client's to choose), unless
/// the operator trusts the proxy in front and configured no address.
pub fn same_origin(req: &HttpRequest, settings: &ConsoleSettings) -> bool {
    if let Some(origin) = req.headers().get("origin") {
        let Ok(origin) = origin.to_str() else { return false };
        if settings.origins.iter().any(|o| o.eq_ignore_ascii_case(origin)) {
            return true;
        }
        return settings.trust_proxy && settings.origins.is_empty() && {
            let info = req.connection_info();
            origin.eq_ignore_ascii_case(&format!("{}://{}", info.scheme(), info.host()))
        };
    }
    req.headers().get("sec-fetch-site").is_some_and(|v| v.as_bytes() == b"same-origin")
}

/// Whether `posted` is `who`'s CSRF token.
pub fn token_matches(who: &SignedIn, posted: &str) -> bool {
    bool::from(who.csrf_token.as_bytes().ct_eq(posted.as_bytes()))
}

/// A signed-in person's form post, its origin and CSRF token checked.
pub struct Posted<T> {
    /// The person.
    pub person: Person,
    /// Their form.
    pub form: T,
    /// Their address (for the audit log).
    pub ip: IpAddr,
}

impl<T: DeserializeOwned + CsrfForm + 'static> FromRequest for Posted<T> {
    type Error = ConsoleError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, Self::Error>>>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let form = web::Form::<T>::from_request(req, payload);
        let req = req.clone();
        Box::pin(async move {
            let console = console_of(&req)?;
            if !same_origin(&req, &console.settings) {
                return Err(ConsoleError::Csrf);
            }
            let person = person_of(&req).await?;
            let form = form.await.map_err(|e| ConsoleError::BadForm(e.to_string()))?.into_inner();
            if !token_matches(&person, form.csrf_token()) {
                return Err(ConsoleError::Csrf);
            }
            Ok(Posted { person, form, ip: client_ip(&req, &console.settings) })
        })
    }
}

/// A form post before signing in (sign-in, second factor, invitation): its origin checked.
pub struct PublicPosted<T> {
    /// The form.
    pub form: T,
    /// The address it came from.
    pub ip: IpAddr,
}

impl<T: DeserializeOwned + 'static> FromRequest for PublicPosted<T> {
    type Error = ConsoleError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, Self::Error>>>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let form = web::Form::<T>::from_request(req, payload);
        let req = req.clone();
        Box::pin(async move {
            let console = console_of(&req)?;
            if !same_origin(&req, &console.settings) {
                return Err(ConsoleError::Csrf);
            }
            let form = form.await.map_err(|e| ConsoleError::BadForm(e.to_string()))?.into_inner();
            Ok(PublicPosted { form, ip: client_ip(&req, &console.settings) })
        })
    }
}
