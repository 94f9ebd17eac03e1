//! The person's own account: "Change password", "Sign out everywhere", the second factor; and
//! the "Test mode" switch every page carries.

use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use askama::Template;
use malipo_core::Mode;
use malipo_service::ServiceError;
use serde::Deserialize;

use super::form::FieldErrors;
use crate::chrome::{page_response, see_other, Chrome, Notice};
use crate::csrf::Posted;
use crate::session::{checked_next, console_of, removal_cookie, signed_in, Person};
use crate::{csrf_forms, run, ConsoleError};

/// `/console/account`, `/console/account/password`, `/console/account/sign-out-everywhere`,
/// `/console/mode`.
pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/account", web::get().to(account_page))
        .route("/account/password", web::post().to(change_password))
        .route("/account/sign-out-everywhere", web::post().to(sign_out_everywhere))
        .route("/mode", web::post().to(switch_mode));
}

#[derive(Template)]
#[template(path = "account.html")]
struct AccountPage {
    chrome: Chrome,
    email: String,
    role: String,
    two_factor: bool,
    codes_left: usize,
    errors: FieldErrors,
}

#[derive(Debug, Default, Deserialize)]
struct NoticeQuery {
    done: Option<String>,
}

async fn render(
    req: &HttpRequest,
    who: &Person,
    status: StatusCode,
    notice: Option<Notice>,
    errors: FieldErrors,
) -> Result<HttpResponse, ConsoleError> {
    let console = console_of(req)?;
    let w = who.0.clone();
    let codes_left = if who.user.has_second_factor() { run(&console, move |p| p.people().recovery_codes_left(&w)).await? } else { 0 };
    let page = AccountPage {
        chrome: Chrome::new(who, "", "Account", "/console/account").with_notice(notice),
        email: who.user.email.clone(),
        role: who.user.role.to_string(),
        two_factor: who.user.has_second_factor(),
        codes_left,
        errors,
    };
    Ok(page_response(status, &page))
}

async fn account_page(req: HttpRequest, who: Person, query: web::Query<NoticeQuery>) -> Result<HttpResponse, ConsoleError> {
    let notice = match query.done.as_deref() {
        Some("password") => Notice::done("Your password is changed; your other sessions have ended."),
        _ => None,
    };
    render(&req, &who, StatusCode::OK, notice, FieldErrors::none()).await
}

#[derive(Debug, Default, Deserialize)]
struct PasswordForm {
    #[serde(default)]
    csrf_token: String,
    #[serde(default)]
    current_password: String,
    #[serde(default)]
    new_password: String,
    #[serde(default)]
    confirm_password: String,
}

#[derive(Debug, Default, Deserialize)]
struct ModeForm {
    #[serde(default)]
    csrf_token: String,
    #[serde(default)]
    test_mode: Option<String>,
    #[serde(default)]
    back: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
struct TokenForm {
    #[serde(default)]
    csrf_token: String,
}
csrf_forms!(PasswordForm, ModeForm, TokenForm);

async fn change_password(req: HttpRequest, posted: Posted<PasswordForm>) -> Result<HttpResponse, ConsoleError> {
    let console = console_of(&req)?;
    let Posted { person: who, form, ip } = posted;
    let w = who.0.clone();
    match run(&console, move |p| p.people().change_password(&w, &form.current_password, &form.new_password, &form.confirm_password, ip))
        .await
    {
        Ok(token) => Ok(signed_in("/console/account?done=password", &token, &console)),
        Err(ConsoleError::Service(e @ ServiceError::Validation(_))) => {
            let errors = FieldErrors::from_service(&e, &[]).unwrap_or_default();
            render(&req, &who, StatusCode::UNPROCESSABLE_ENTITY, Notice::alert("The password was not changed."), errors).await
        }
        Err(e) => Err(e),
    }
}

async fn sign_out_everywhere(req: HttpRequest, posted: Posted<TokenForm>) -> Result<HttpResponse, ConsoleError> {
    let console = console_of(&req)?;
    let Posted { person: who, ip, .. } = posted;
    run(&console, move |p| p.people().sign_out_everywhere(&who, ip)).await?;
    Ok(HttpResponse::SeeOther()
        .insert_header(("Location", "/console/login?signed_out=1"))
        .cookie(removal_cookie(console.settings.secure_cookies))
        .finish())
}

async fn switch_mode(req: HttpRequest, posted: Posted<ModeForm>) -> Result<HttpResponse, ConsoleError> {
    let console = console_of(&req)?;
    let Posted { person: who, form, .. } = posted;
    let mode = if form.test_mode.as_deref() == Some("on") { Mode::Test } else { Mode::Live };
    // Checked before the switch: a refused address changes nothing.
    let back = checked_next(form.back.as_deref())?;
    run(&console, move |p| p.people().set_mode(&who, mode)).await?;
    // An object's page belongs to one mode: after a switch, its section's list.
    let section: String = back.split('/').take(3).collect::<Vec<_>>().join("/");
    Ok(see_other(if section.len() > "/console".len() { &section } else { "/console/" }))
}
