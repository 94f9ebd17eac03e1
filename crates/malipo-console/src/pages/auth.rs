//! Signing in (`/console/login`, then the second factor at `/console/login/verify`) and out.

use std::sync::atomic::{AtomicUsize, Ordering};

use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use askama::Template;
use malipo_service::SignIn;
use serde::Deserialize;

use crate::chrome::{page, page_response, see_other, url_encode};
use crate::csrf::{Posted, PublicPosted};

use crate::session::{checked_next, console_of, device_of, local_next, removal_cookie, signed_in, signed_in_with_device, token_of};
use crate::{csrf_forms, run, ConsoleError};

/// `/console/login`, `/console/login/verify`, `/console/logout`.
pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/login", web::get().to(login_page))
        .route("/login", web::post().to(login))
        .route("/login/verify", web::get().to(verify_page))
        .route("/login/verify", web::post().to(verify))
        .route("/logout", web::post().to(logout));
}

/// The one answer to a wrong email or a wrong password.
pub const WRONG_CREDENTIALS: &str = "The email or password is incorrect.";

#[derive(Template)]
#[template(path = "login.html")]
struct LoginPage {
    email: String,
    next: String,
    alert: Option<String>,
    status: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
struct NextQuery {
    next: Option<String>,
    signed_out: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
struct LoginForm {
    #[serde(default)]
    email: String,
    #[serde(default)]
    password: String,
    #[serde(default)]
    next: Option<String>,
}

/// How long the answer to a sign-in from a locked account or address is held before it is sent.
/// A flood that waits for its answers, as any client on a connection does, then sends one
/// attempt a second per connection instead of thousands, and costs everyone else next to
/// nothing; a person who is locked out loses a second on a page that asks them to wait 15
/// minutes.
const LOCKED_HOLD: std::time::Duration = std::time::Duration::from_secs(1);

/// Locked answers held at once, over every address; more are answered at once (a flood from
/// more connections than that costs memory no further).
const MAX_HELD: usize = 4096;

static HELD: AtomicUsize = AtomicUsize::new(0);

/// A place among the answers held at once, given back when dropped (also when the client goes
/// away meanwhile).
struct Held;

impl Drop for Held {
    fn drop(&mut self) {
        HELD.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Holds a locked answer for [`LOCKED_HOLD`] while fewer than [`MAX_HELD`] are held.
async fn hold_locked() {
    let _held = Held;
    if HELD.fetch_add(1, Ordering::Relaxed) < MAX_HELD {
        tokio::time::sleep(LOCKED_HOLD).await;
    }
}

fn locked_message(until: malipo_core::Timestamp) -> String {
    let utc = format!("{} UTC", until.to_offset_datetime().time().to_string().get(..5).unwrap_or_default());
    format!("Too many failed sign-ins: this account or address must wait 15 minutes before trying again (until {utc}).")
}

async fn login_page(query: web::Query<NextQuery>) -> HttpResponse {
    let status = query.signed_out.as_ref().map(|_| "You have signed out.".to_owned());
    page(&LoginPage { email: String::new(), next: local_next(query.next.as_deref()), alert: None, status })
}

async fn login(req: HttpRequest, posted: PublicPosted<LoginForm>) -> Result<HttpResponse, ConsoleError> {
    let console = console_of(&req)?;
    let PublicPosted { form, ip } = posted;
    let next = checked_next(form.next.as_deref())?;
    let (email, password, device) = (form.email.clone(), form.password, device_of(&req));
    let outcome = run(&console, move |p| p.people().sign_in(&email, &password, ip, device.as_deref())).await?;
    let refused = |status: StatusCode, alert: String| {
        page_response(status, &LoginPage { email: form.email.clone(), next: next.clone(), alert: Some(alert), status: None })
    };
    Ok(match outcome {
        SignIn::SignedIn { token, device } => signed_in_with_device(&next, &token, &device, &console),
        SignIn::SecondFactor { token } => signed_in(&format!("/console/login/verify?next={}", url_encode(&next)), &token, &console),
        SignIn::Refused => refused(StatusCode::UNAUTHORIZED, WRONG_CREDENTIALS.to_owned()),
        SignIn::Locked { until } => {
            hold_locked().await;
            let mut r = refused(StatusCode::TOO_MANY_REQUESTS, locked_message(until));
            r.headers_mut().insert(actix_web::http::header::RETRY_AFTER, actix_web::http::header::HeaderValue::from_static("900"));
            r
        }
    })
}

#[derive(Template)]
#[template(path = "verify.html")]
struct VerifyPage {
    next: String,
    alert: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
struct VerifyForm {
    #[serde(default)]
    code: String,
    #[serde(default)]
    next: Option<String>,
}

async fn verify_page(req: HttpRequest, query: web::Query<NextQuery>) -> HttpResponse {
    if token_of(&req).is_none() {
        return see_other("/console/login");
    }
    page(&VerifyPage { next: local_next(query.next.as_deref()), alert: None })
}

async fn verify(req: HttpRequest, posted: PublicPosted<VerifyForm>) -> Result<HttpResponse, ConsoleError> {
    let console = console_of(&req)?;
    let PublicPosted { form, ip } = posted;
    let next = checked_next(form.next.as_deref())?;
    let Some(pending) = token_of(&req) else { return Ok(see_other("/console/login")) };
    let (code, device) = (form.code, device_of(&req));
    let outcome = run(&console, move |p| p.people().verify_second_factor(&pending, &code, ip, device.as_deref())).await?;
    Ok(match outcome {
        SignIn::SignedIn { token, device } => signed_in_with_device(&next, &token, &device, &console),
        SignIn::SecondFactor { token } => signed_in(&next, &token, &console),
        SignIn::Refused => page_response(
            StatusCode::UNAUTHORIZED,
            &VerifyPage { next, alert: Some("The authentication code is wrong or was already used, or the sign-in took too long.".into()) },
        ),
        SignIn::Locked { until } => {
            hold_locked().await;
            page_response(StatusCode::TOO_MANY_REQUESTS, &VerifyPage { next, alert: Some(locked_message(until)) })
        }
    })
}

/// A form that carries only the CSRF token.
#[derive(Debug, Default, Deserialize)]
pub struct TokenOnly {
    #[serde(default)]
    csrf_token: String,
}
csrf_forms!(TokenOnly);

async fn logout(req: HttpRequest, posted: Posted<TokenOnly>) -> Result<HttpResponse, ConsoleError> {
    let console = console_of(&req)?;
    let who = posted.person.0;
    let ip = posted.ip;
    run(&console, move |p| p.people().sign_out(&who, ip)).await?;
    Ok(HttpResponse::SeeOther()
        .insert_header(("Location", "/console/login?signed_out=1"))
        .cookie(removal_cookie(console.settings.secure_cookies))
        .finish())
}
