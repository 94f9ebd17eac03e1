//! API key pairs: "Create key pair" ("Mode", "Authentication code") shows the new client id and
//! secret once, in the answer to the post; "Revoke" (with "Authentication code") ends a key pair
//! and its tokens. Both are step-up actions: a wrong or used code is refused beside its field,
//! and nothing is done.

use std::net::IpAddr;

use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use malipo_auth::Permission;
use malipo_core::Mode;
use malipo_service::{IssuedCredential, ServiceError};
use serde::Deserialize;

use super::view::{render, Forms, NewKey, Shown};
use crate::chrome::{see_other, Notice};
use crate::csrf::Posted;
use crate::pages::form::FieldErrors;
use crate::session::{console_of, Person};
use crate::{csrf_forms, run, Console, ConsoleError};

#[derive(Debug, Default, Deserialize)]
pub(super) struct CreateKeyForm {
    #[serde(default)]
    csrf_token: String,
    #[serde(default)]
    mode: String,
    #[serde(default)]
    code: String,
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct RevokeForm {
    #[serde(default)]
    csrf_token: String,
    #[serde(default)]
    code: String,
}
csrf_forms!(CreateKeyForm, RevokeForm);

/// The use case of "Create key pair".
async fn create_key(console: &Console, who: &Person, mode: Mode, code: String, ip: IpAddr) -> Result<IssuedCredential, ConsoleError> {
    let w = who.0.clone();
    run(console, move |p| p.people().create_key(&w, mode, &code, ip)).await
}

/// The use case of "Revoke".
async fn revoke_key(console: &Console, who: &Person, client_id: String, code: String, ip: IpAddr) -> Result<(), ConsoleError> {
    let w = who.0.clone();
    run(console, move |p| p.people().revoke_key(&w, &client_id, &code, ip)).await
}

/// `POST /console/developers/keys`.
pub(super) async fn create(req: HttpRequest, posted: Posted<CreateKeyForm>) -> Result<HttpResponse, ConsoleError> {
    let Posted { person: who, form, ip } = posted;
    who.require(Permission::ManageKeys)?;
    let console = console_of(&req)?;
    let refused = |status, errors: FieldErrors| {
        let forms = Forms { key_mode: form.mode.clone(), key_errors: errors, ..Forms::default() };
        let shown = Shown { notice: Notice::alert("The key pair was not created."), ..Shown::default() };
        render(&req, &who, status, shown, forms)
    };
    let Ok(mode) = form.mode.parse::<Mode>() else {
        return refused(StatusCode::UNPROCESSABLE_ENTITY, FieldErrors::one("mode", "Choose Test or Live.")).await;
    };
    match create_key(&console, &who, mode, form.code.clone(), ip).await {
        Ok(issued) => {
            let new_key = NewKey { client_id: issued.client_id, client_secret: issued.client_secret, mode };
            let notice = Notice::done("Key pair created. Copy the client secret now: it is shown only this once.");
            render(&req, &who, StatusCode::OK, Shown { notice, new_key: Some(new_key), new_secret: None, callback: None }, Forms::default())
                .await
        }
        Err(ConsoleError::Service(e @ ServiceError::Validation(_))) => {
            refused(StatusCode::UNPROCESSABLE_ENTITY, FieldErrors::from_service(&e, &[]).unwrap_or_default()).await
        }
        // A live key pair before the organisation's review: the reason beside "Mode".
        Err(ConsoleError::Service(ServiceError::InvalidState(why))) => {
            refused(
                StatusCode::CONFLICT,
                FieldErrors::from_service(&ServiceError::field("mode", "invalid_state", why), &[]).unwrap_or_default(),
            )
            .await
        }
        Err(e) => Err(e),
    }
}

/// `POST /console/developers/keys/{client_id}/revoke`.
pub(super) async fn revoke(req: HttpRequest, path: web::Path<String>, posted: Posted<RevokeForm>) -> Result<HttpResponse, ConsoleError> {
    let Posted { person: who, form, ip } = posted;
    who.require(Permission::ManageKeys)?;
    let console = console_of(&req)?;
    let client_id = path.into_inner();
    match revoke_key(&console, &who, client_id.clone(), form.code, ip).await {
        Ok(()) => Ok(see_other("/console/developers?done=key-revoked")),
        Err(ConsoleError::Service(e @ ServiceError::Validation(_))) => {
            let forms = Forms { row: client_id, row_errors: FieldErrors::from_service(&e, &[]).unwrap_or_default(), ..Forms::default() };
            let shown = Shown { notice: Notice::alert("The key pair was not revoked."), ..Shown::default() };
            render(&req, &who, StatusCode::UNPROCESSABLE_ENTITY, shown, forms).await
        }
        Err(e) => Err(e),
    }
}
