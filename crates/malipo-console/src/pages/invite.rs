//! Accepting an invitation: `/console/invite/{token}` asks "Name", "Password" and "Confirm
//! password"; "Create account" signs the person in (enrolment follows where two-factor is
//! required).

use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use askama::Template;
use malipo_auth::Role;
use malipo_service::{InvitationView, ServiceError};
use serde::Deserialize;

use super::form::FieldErrors;
use crate::chrome::page_response;
use crate::csrf::PublicPosted;
use crate::session::{console_of, signed_in};
use crate::{run, ConsoleError};

/// `/console/invite/{token}`.
pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/invite/{token}", web::get().to(invite_page)).route("/invite/{token}", web::post().to(accept));
}

#[derive(Template)]
#[template(path = "invite.html")]
struct InvitePage {
    invitation: InvitationView,
    role: &'static str,
    token: String,
    name: String,
    errors: FieldErrors,
}

#[derive(Template)]
#[template(path = "invite_invalid.html")]
struct InvalidInvitation;

#[derive(Debug, Default, Deserialize)]
struct AcceptForm {
    #[serde(default)]
    name: String,
    #[serde(default)]
    new_password: String,
    #[serde(default)]
    confirm_password: String,
}

fn role_name(role: Role) -> &'static str {
    role.as_str()
}

async fn invite_page(req: HttpRequest, token: web::Path<String>) -> Result<HttpResponse, ConsoleError> {
    let console = console_of(&req)?;
    let t = token.clone();
    match run(&console, move |p| p.people().invitation(&t)).await {
        Ok(invitation) => {
            let name = invitation.name.clone();
            let role = role_name(invitation.role);
            Ok(page_response(
                StatusCode::OK,
                &InvitePage { invitation, role, token: token.into_inner(), name, errors: FieldErrors::none() },
            ))
        }
        Err(ConsoleError::NotFound) => Ok(page_response(StatusCode::NOT_FOUND, &InvalidInvitation)),
        Err(e) => Err(e),
    }
}

async fn accept(req: HttpRequest, token: web::Path<String>, posted: PublicPosted<AcceptForm>) -> Result<HttpResponse, ConsoleError> {
    let console = console_of(&req)?;
    let PublicPosted { form, ip } = posted;
    let (t, name, password, confirm) = (token.clone(), form.name.clone(), form.new_password, form.confirm_password);
    match run(&console, move |p| {
        let token = p.people().accept_invitation(&t, &name, &password, &confirm, ip)?;
        let view = p.people().session(&token)?;
        Ok((token, view.is_some_and(|w| w.must_enrol())))
    })
    .await
    {
        Ok((session, must_enrol)) => Ok(signed_in(if must_enrol { "/console/enrol" } else { "/console/" }, &session, &console)),
        Err(ConsoleError::Service(e @ ServiceError::Validation(_))) => {
            let t = token.clone();
            let invitation = run(&console, move |p| p.people().invitation(&t)).await?;
            let errors = FieldErrors::from_service(&e, &[]).unwrap_or_default();
            let role = role_name(invitation.role);
            Ok(page_response(
                StatusCode::UNPROCESSABLE_ENTITY,
                &InvitePage { invitation, role, token: token.into_inner(), name: form.name, errors },
            ))
        }
        Err(ConsoleError::NotFound) => Ok(page_response(StatusCode::NOT_FOUND, &InvalidInvitation)),
        Err(e) => Err(e),
    }
}
