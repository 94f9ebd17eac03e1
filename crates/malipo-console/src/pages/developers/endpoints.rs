//! Webhook endpoints of the session's mode: "Add endpoint" ("URL", "Events", "Description")
//! shows the signing secret once; "Rotate secret" (a step-up: "Authentication code") shows the
//! new one once; "Disable" is the API's `DELETE /webhooks/endpoints/{id}`. Each runs through the
//! API's idempotent use case with the form's one-time key, and the console's stored answer is
//! only where to go next: a secret is rendered into the answer of the post that made it and kept
//! nowhere, so a replayed form goes to the list and shows no secret.

use std::net::IpAddr;

use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use malipo_auth::Permission;
use malipo_service::{CreateEndpoint, Done, EndpointTarget, EndpointWithSecret, NewEndpoint, ServiceError};
use serde::Deserialize;

use super::view::{render, Forms, NewSecret, Shown};
use crate::chrome::{see_other, Notice};
use crate::csrf::Posted;
use crate::pages::form::FieldErrors;
use crate::session::{console_of, Person};
use crate::{csrf_forms, idem, run, Console, ConsoleError};

/// "Add endpoint", read from its pairs: `events` is one checkbox per kind, so it repeats.
#[derive(Debug, Default, Deserialize)]
#[serde(from = "Vec<(String, String)>")]
pub(super) struct EndpointForm {
    csrf_token: String,
    url: String,
    events: Vec<String>,
    description: String,
    idempotency_key: String,
}

impl From<Vec<(String, String)>> for EndpointForm {
    fn from(pairs: Vec<(String, String)>) -> Self {
        let mut form = EndpointForm::default();
        for (name, value) in pairs {
            match name.as_str() {
                "csrf_token" => form.csrf_token = value,
                "url" => form.url = value,
                "events" => form.events.push(value),
                "description" => form.description = value,
                "idempotency_key" => form.idempotency_key = value,
                _ => {}
            }
        }
        form
    }
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct RotateForm {
    #[serde(default)]
    csrf_token: String,
    #[serde(default)]
    code: String,
    #[serde(default)]
    idempotency_key: String,
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct DisableForm {
    #[serde(default)]
    csrf_token: String,
    #[serde(default)]
    idempotency_key: String,
}
csrf_forms!(EndpointForm, RotateForm, DisableForm);

/// Where an endpoint's creation or rotation goes next (`to`), and its URL and secret when it
/// ran now: a secret is shown once, never on a repeat.
fn shown_once(done: Result<Done<EndpointWithSecret>, ConsoleError>, to: &str) -> Result<(String, Option<(String, String)>), ConsoleError> {
    let done = match done {
        Ok(done) => done,
        Err(ConsoleError::Service(e)) => {
            return idem::page::<()>(Err(e), |_| String::new()).map(|d| (idem::location(&d), None)).map_err(ConsoleError::from)
        }
        Err(e) => return Err(e),
    };
    let secret = (!done.replayed).then(|| (done.value.endpoint.url.clone(), done.value.secret.clone()));
    Ok((to.to_owned(), secret))
}

/// The use case of "Add endpoint": where to go next, and the URL and secret if it ran now.
async fn add_endpoint(
    console: &Console,
    who: &Person,
    form: &EndpointForm,
    ip: IpAddr,
) -> Result<(String, Option<(String, String)>), ConsoleError> {
    let events = form.events.clone();
    let description = Some(form.description.clone()).filter(|d| !d.is_empty());
    let fields = [("url", form.url.as_str()), ("events", &events.join(" ")), ("description", form.description.as_str())];
    let key = idem::by(idem::idem(who, "webhook-endpoint", &form.idempotency_key, &fields)?, who, ip, "webhook_endpoint.created");
    let principal = who.principal();
    let new = NewEndpoint { url: form.url.clone(), events, description };
    let done = run(console, move |p| {
        let command = p.parse::<CreateEndpoint>(&principal, &new)?;
        p.webhooks().create_endpoint(&principal, &command, &key)
    })
    .await;
    shown_once(done, "/console/developers?done=endpoint-added")
}

/// The use cases of "Rotate secret": the step-up, then the rotation.
async fn rotate_secret(
    console: &Console,
    who: &Person,
    id: String,
    form: &RotateForm,
    ip: IpAddr,
) -> Result<(String, Option<(String, String)>), ConsoleError> {
    let key = idem::by(
        idem::idem(who, "rotate-secret", &form.idempotency_key, &[("endpoint", id.as_str())])?,
        who,
        ip,
        "webhook_endpoint.secret_rotated",
    );
    let (w, code) = (who.0.clone(), form.code.clone());
    let done = run(console, move |p| {
        p.people().step_up(&w, &code, ip)?;
        let principal = w.principal();
        let target = p.parse::<EndpointTarget>(&principal, id.as_str())?;
        p.webhooks().rotate_secret(&principal, &target, &key)
    })
    .await;
    shown_once(done, "/console/developers?done=secret-rotated")
}

/// The use case of "Disable".
async fn disable_endpoint(console: &Console, who: &Person, id: String, form: &DisableForm, ip: IpAddr) -> Result<String, ConsoleError> {
    let key = idem::by(
        idem::idem(who, "disable-endpoint", &form.idempotency_key, &[("endpoint", id.as_str())])?,
        who,
        ip,
        "webhook_endpoint.disabled",
    );
    let principal = who.principal();
    let outcome = run(console, move |p| {
        let target = p.parse::<EndpointTarget>(&principal, id.as_str())?;
        idem::page(p.webhooks().delete_endpoint(&principal, &target, &key), |_| "/console/developers?done=endpoint-disabled".to_owned())
    })
    .await?;
    Ok(idem::location(&outcome))
}

/// `POST /console/developers/endpoints`.
pub(super) async fn add(req: HttpRequest, posted: Posted<EndpointForm>) -> Result<HttpResponse, ConsoleError> {
    let Posted { person: who, form, ip } = posted;
    who.require(Permission::ManageWebhooks)?;
    let console = console_of(&req)?;
    match add_endpoint(&console, &who, &form, ip).await {
        Ok((_, Some((url, secret)))) => {
            let notice = Notice::done("Endpoint added. Copy its signing secret now: it is shown only this once.");
            let new_secret = Some(NewSecret { url, secret, rotated: false });
            render(&req, &who, StatusCode::OK, Shown { notice, new_key: None, new_secret, callback: None }, Forms::default()).await
        }
        Ok((to, None)) => Ok(see_other(&to)),
        Err(ConsoleError::Service(e @ ServiceError::Validation(_))) => {
            let forms = Forms {
                url: form.url,
                events: form.events,
                description: form.description,
                endpoint_key: form.idempotency_key,
                endpoint_errors: FieldErrors::from_service(&e, &[]).unwrap_or_default(),
                ..Forms::default()
            };
            let shown = Shown { notice: Notice::alert("The endpoint was not added."), ..Shown::default() };
            render(&req, &who, StatusCode::UNPROCESSABLE_ENTITY, shown, forms).await
        }
        Err(e) => Err(e),
    }
}

/// `POST /console/developers/endpoints/{id}/rotate`.
pub(super) async fn rotate(req: HttpRequest, path: web::Path<String>, posted: Posted<RotateForm>) -> Result<HttpResponse, ConsoleError> {
    let Posted { person: who, form, ip } = posted;
    who.require(Permission::ManageWebhooks)?;
    let console = console_of(&req)?;
    let id = path.into_inner();
    match rotate_secret(&console, &who, id.clone(), &form, ip).await {
        Ok((_, Some((url, secret)))) => {
            let notice = Notice::done("Secret rotated. Copy the new signing secret now: it is shown only this once.");
            let new_secret = Some(NewSecret { url, secret, rotated: true });
            render(&req, &who, StatusCode::OK, Shown { notice, new_key: None, new_secret, callback: None }, Forms::default()).await
        }
        Ok((to, None)) => Ok(see_other(&to)),
        Err(ConsoleError::Service(e @ ServiceError::Validation(_))) => {
            let forms = Forms { row: id, row_errors: FieldErrors::from_service(&e, &[]).unwrap_or_default(), ..Forms::default() };
            let shown = Shown { notice: Notice::alert("The secret was not rotated."), ..Shown::default() };
            render(&req, &who, StatusCode::UNPROCESSABLE_ENTITY, shown, forms).await
        }
        Err(e) => Err(e),
    }
}

/// `POST /console/developers/endpoints/{id}/disable`.
pub(super) async fn disable(req: HttpRequest, path: web::Path<String>, posted: Posted<DisableForm>) -> Result<HttpResponse, ConsoleError> {
    let Posted { person: who, form, ip } = posted;
    who.require(Permission::ManageWebhooks)?;
    let console = console_of(&req)?;
    let to = disable_endpoint(&console, &who, path.into_inner(), &form, ip).await?;
    Ok(see_other(&to))
}
