//! Turning on two-factor authentication: the setup key as text ("Setup key"), the `otpauth://`
//! URI as a QR code drawn by the server (SVG), "Authentication code" and "Turn on two-factor
//! authentication"; then the ten recovery codes, shown once.

use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use askama::Template;
use malipo_service::{Enrolment, ServiceError};
use qrcode::render::svg;
use qrcode::QrCode;
use serde::Deserialize;

use super::form::FieldErrors;
use crate::chrome::{page_response, see_other, Chrome};
use crate::csrf::Posted;
use crate::session::{console_of, session_cookie, Person};
use crate::{csrf_forms, run, ConsoleError};

/// `/console/enrol`.
pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/enrol", web::get().to(enrol_page)).route("/enrol", web::post().to(enrol));
}

#[derive(Template)]
#[template(path = "enrol.html")]
struct EnrolPage {
    chrome: Chrome,
    setup_key: String,
    qr: String,
    required: bool,
    errors: FieldErrors,
}

#[derive(Template)]
#[template(path = "recovery_codes.html")]
struct RecoveryCodesPage {
    chrome: Chrome,
    codes: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
struct EnrolForm {
    #[serde(default)]
    csrf_token: String,
    #[serde(default)]
    code: String,
}
csrf_forms!(EnrolForm);

/// The QR code of `uri` as an inline SVG element (no XML declaration), named for screen readers.
pub fn qr_svg(uri: &str) -> Result<String, ConsoleError> {
    let code = QrCode::new(uri.as_bytes()).map_err(|e| ConsoleError::Internal(format!("QR code: {e}")))?;
    let image = code.render::<svg::Color<'_>>().min_dimensions(220, 220).quiet_zone(true).build();
    let start = image.find("<svg").unwrap_or(0);
    Ok(image[start..].replacen("<svg ", "<svg role=\"img\" aria-label=\"QR code for your authenticator app\" ", 1))
}

fn page_of(who: &Person, enrolment: &Enrolment, errors: FieldErrors) -> Result<EnrolPage, ConsoleError> {
    Ok(EnrolPage {
        chrome: Chrome::new(who, "", "Turn on two-factor authentication", "/console/enrol"),
        setup_key: enrolment.setup_key.clone(),
        qr: qr_svg(&enrolment.otpauth_uri)?,
        required: who.must_enrol(),
        errors,
    })
}

async fn enrol_page(req: HttpRequest, who: Person) -> Result<HttpResponse, ConsoleError> {
    if who.user.has_second_factor() {
        return Ok(see_other("/console/account"));
    }
    let console = console_of(&req)?;
    let w = who.0.clone();
    let enrolment = run(&console, move |p| p.people().begin_enrolment(&w)).await?;
    Ok(page_response(StatusCode::OK, &page_of(&who, &enrolment, FieldErrors::none())?))
}

async fn enrol(req: HttpRequest, posted: Posted<EnrolForm>) -> Result<HttpResponse, ConsoleError> {
    let console = console_of(&req)?;
    let Posted { person: who, form, ip } = posted;
    if who.user.has_second_factor() {
        return Ok(see_other("/console/account"));
    }
    let w = who.0.clone();
    match run(&console, move |p| p.people().confirm_enrolment(&w, &form.code, ip)).await {
        Ok((token, codes)) => {
            let mut chrome = Chrome::new(&who, "", "Recovery codes", "/console/enrol");
            chrome.notice = crate::chrome::Notice::done("Two-factor authentication is on.");
            let mut response = page_response(StatusCode::OK, &RecoveryCodesPage { chrome, codes });
            let _ = response.add_cookie(&session_cookie(&token, console.settings.secure_cookies));
            Ok(response)
        }
        Err(ConsoleError::Service(e @ ServiceError::Validation(_))) => {
            let w = who.0.clone();
            let enrolment = run(&console, move |p| p.people().begin_enrolment(&w)).await?;
            let errors = FieldErrors::from_service(&e, &[]).unwrap_or_default();
            Ok(page_response(StatusCode::UNPROCESSABLE_ENTITY, &page_of(&who, &enrolment, errors)?))
        }
        Err(e) => Err(e),
    }
}
