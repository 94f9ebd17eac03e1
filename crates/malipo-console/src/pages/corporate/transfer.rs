//! "Transfer" (Home, for a corporate maker): moves money between the organisation's own
//! accounts, the API's `POST /accounts/transfers` use case under the form's one-time key. A
//! refused form is shown again with its values and each error beside its field.

use actix_web::{HttpRequest, HttpResponse, ResponseError};
use askama::Template;
use malipo_auth::Permission;
use malipo_service::{CreateTransfer, NewTransfer, ServiceError};
use serde::Deserialize;

use crate::chrome::{page_response, see_other, Chrome, Notice};
use crate::csrf::Posted;
use crate::pages::form::FieldErrors;
use crate::pages::money_common::{form_errors, refusal_text};
use crate::session::console_of;
use crate::{csrf_forms, idem, run, ConsoleError};

/// The use case's field names, the form's, and their labels.
const FIELDS: [(&str, &str, &str); 3] = [("from", "from", "From"), ("to", "to", "To"), ("amount", "amount", "Amount")];

/// The form, as Home shows it and the post carries it.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct TransferForm {
    #[serde(default)]
    csrf_token: String,
    /// The form's one-time key.
    #[serde(default)]
    pub idempotency_key: String,
    /// `collection` or `payout`.
    #[serde(default)]
    pub from: String,
    /// `collection` or `payout`.
    #[serde(default)]
    pub to: String,
    /// As typed.
    #[serde(default)]
    pub amount: String,
}
csrf_forms!(TransferForm);

impl TransferForm {
    /// A fresh form: from collection to payout.
    pub fn fresh() -> Self {
        TransferForm { idempotency_key: idem::new_key(), from: "collection".into(), to: "payout".into(), ..TransferForm::default() }
    }
}

#[derive(Template)]
#[template(path = "corporate/transfer.html")]
struct TransferPage {
    chrome: Chrome,
    form: TransferForm,
    errors: FieldErrors,
}

/// `POST /console/transfer`.
pub async fn transfer(req: HttpRequest, posted: Posted<TransferForm>) -> Result<HttpResponse, ConsoleError> {
    let Posted { person: who, mut form, ip } = posted;
    who.require(Permission::Transfer)?;
    let console = console_of(&req)?;
    let fields = [("from", form.from.as_str()), ("to", form.to.as_str()), ("amount", form.amount.as_str())];
    let idem = idem::by(idem::idem(&who, "transfer", &form.idempotency_key, &fields)?, &who, ip, "transfer.created");
    let principal = who.principal();
    let new = NewTransfer { from: form.from.trim().to_owned(), to: form.to.trim().to_owned(), amount: form.amount.trim().to_owned() };
    let done = run(&console, move |p| {
        let command = p.parse::<CreateTransfer>(&principal, &new)?;
        idem::page(p.transfers().transfer(&principal, &command, &idem), |t| format!("/console/?done=transferred&tx={}", t.transaction_id))
    })
    .await;
    match done {
        Ok(outcome) => Ok(see_other(&idem::location(&outcome))),
        Err(ConsoleError::Service(e)) => {
            let (errors, notice) = match form_errors(&e, &FIELDS) {
                Some(errors) => (errors, Notice::alert("Nothing was moved: some fields need attention.")),
                None => (FieldErrors::none(), Notice::alert(format!("Nothing was moved. {}", refusal_text(&e)))),
            };
            if matches!(e, ServiceError::IdempotencyReused) {
                form.idempotency_key = idem::new_key();
            }
            let status = ConsoleError::Service(e).status_code();
            let view = TransferPage { chrome: Chrome::new(&who, "Home", "Transfer", "/console/").with_notice(notice), form, errors };
            Ok(page_response(status, &view))
        }
        Err(e) => Err(e),
    }
}
