//! The callback secret of the session's mode (it signs what the GSMA door `PUT`s to an
//! `X-Callback-URL`): "Show callback secret" and "Rotate callback secret", each after a step-up
//! ("Authentication code"). The secret is rendered into the answer of the post that asked and
//! kept nowhere else; a rotation runs through the use case with the form's one-time key, so a
//! resubmitted form rotates once.

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse};
use malipo_auth::Permission;
use malipo_service::{CallbackSigning, Done, RotateCallbackSecret, ServiceError};
use serde::Deserialize;

use super::view::{render, CallbackShown, Forms, Shown};
use crate::chrome::{see_other, Notice};
use crate::csrf::Posted;
use crate::pages::form::FieldErrors;
use crate::session::console_of;
use crate::{csrf_forms, idem, run, ConsoleError};

/// The row name a refused callback form is shown again under.
pub const ROW: &str = "callback-secret";

#[derive(Debug, Default, Deserialize)]
pub(super) struct CallbackForm {
    #[serde(default)]
    csrf_token: String,
    #[serde(default)]
    code: String,
    #[serde(default)]
    idempotency_key: String,
    /// `show` or `rotate` (the button pressed).
    #[serde(default)]
    action: String,
}
csrf_forms!(CallbackForm);

/// `POST /console/developers/callback-secret`.
pub(super) async fn post(req: HttpRequest, posted: Posted<CallbackForm>) -> Result<HttpResponse, ConsoleError> {
    let Posted { person: who, form, ip } = posted;
    who.require(Permission::ManageWebhooks)?;
    let console = console_of(&req)?;
    let rotate = form.action == "rotate";
    let key = if rotate {
        Some(idem::by(
            idem::idem(&who, "rotate-callback-secret", &form.idempotency_key, &[("action", "rotate")])?,
            &who,
            ip,
            "callback_secret.rotated",
        ))
    } else {
        None
    };
    let (w, code) = (who.0.clone(), form.code.clone());
    let done: Result<Done<CallbackSigning>, ConsoleError> = run(&console, move |p| {
        p.people().step_up(&w, &code, ip)?;
        let principal = w.principal();
        match &key {
            Some(key) => {
                let command = p.parse::<RotateCallbackSecret>(&principal, &())?;
                p.callbacks().rotate(&principal, &command, key)
            }
            None => p.callbacks().secret(&principal).map(|value| Done { value, replayed: false }),
        }
    })
    .await;
    match done {
        // A repeated rotation shows nothing again: the secret was shown to the first.
        Ok(done) if done.replayed => Ok(see_other("/console/developers?done=callback-rotated")),
        Ok(done) => {
            let notice = if rotate {
                Notice::done("Callback secret rotated. The previous secret keeps signing beside it for 24 hours.")
            } else {
                Notice::done("Here is the callback secret of this mode.")
            };
            let callback = Some(CallbackShown { secret: done.value.secret, rotated: rotate });
            render(&req, &who, StatusCode::OK, Shown { notice, callback, ..Shown::default() }, Forms::default()).await
        }
        Err(ConsoleError::Service(e @ ServiceError::Validation(_))) => {
            let forms =
                Forms { row: ROW.to_owned(), row_errors: FieldErrors::from_service(&e, &[]).unwrap_or_default(), ..Forms::default() };
            let what = if rotate { "The callback secret was not rotated." } else { "The callback secret was not shown." };
            let shown = Shown { notice: Notice::alert(what), ..Shown::default() };
            render(&req, &who, StatusCode::UNPROCESSABLE_ENTITY, shown, forms).await
        }
        Err(e) => Err(e),
    }
}
