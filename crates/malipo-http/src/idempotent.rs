//! The one way a state-changing call is handled (contract section 10, Idempotency): its body
//! read, its idempotency key taken, its use case run once per key, and the stored answer sent.
//!
//! A handler checks the token's scope (and anything else about the caller, such as test mode),
//! then hands the rest to [`idempotent`]: how the body is read, how it becomes the use case's
//! input, and the use case with the DTO its answer is stored as.
//!
//! ```text
//! pub async fn cash_in(req: HttpRequest, auth: Auth, body: Body, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
//!     let principal = auth.require(Scope::Agent)?.clone();
//!     let prepare = |r: AgentCashRequest| Ok((r.customer_msisdn, amount_text("amount", &r.amount)?));
//!     idempotent(&req, principal, &state, "POST /agents/cash-in", Input::json(&body), prepare, |p, principal, (customer, amount), idem| {
//!         p.agents().cash_in(principal, &customer, &amount, idem, &|c| render(&CashInDto::from(c)))
//!     })
//!     .await
//! }
//! ```
//!
//! `prepare` is `Ok` when the body goes to the use case as it is; [`Input::optional_json`] reads a
//! body that may be left out, [`Input::none`] none at all (`DELETE`), [`Input::read_with`] a body
//! of the handler's own reading (`POST /bulk-payouts`: JSON or CSV), and [`Input::key_in_body`]
//! names a body field that carries the key.

use actix_web::{HttpRequest, HttpResponse};
use malipo_auth::Principal;
use malipo_service::{Idem, IdemOutcome, Platform, ServiceError};
use serde::de::DeserializeOwned;

use crate::extract::{idem, optional_json, parse_json, require_json, Body, Parsed};
use crate::handler::{run, stored};
use crate::problem::ApiError;
use crate::state::AppState;

/// How an idempotent call reads its body (as a `T`) and where its key is.
pub struct Input<'a, T> {
    read: Read<'a, T>,
    /// The body's own key field, if it has one.
    key_in_body: Option<fn(&T) -> &str>,
}

enum Read<'a, T> {
    /// The body read by a function of the handler's (e.g. [`optional_json`] for this `T`).
    With(&'a Body, fn(&HttpRequest, &Body) -> Result<Parsed<T>, ApiError>),
    /// No body: this value.
    Nothing(T),
}

/// A required JSON object.
fn json<T: DeserializeOwned>(req: &HttpRequest, body: &Body) -> Result<Parsed<T>, ApiError> {
    require_json(req)?;
    parse_json(&body.0)
}

impl<'a, T: DeserializeOwned> Input<'a, T> {
    /// A JSON object: `Content-Type: application/json` (415 otherwise), then [`parse_json`]'s
    /// rules (400 malformed, 422 unknown or missing fields).
    pub fn json(body: &'a Body) -> Self {
        Input { read: Read::With(body, json::<T>), key_in_body: None }
    }

    /// A JSON object that may be left out: an empty body counts as `{}` (and needs no
    /// `Content-Type`), see [`optional_json`].
    pub fn optional_json(body: &'a Body) -> Self
    where
        T: Default,
    {
        Input { read: Read::With(body, optional_json::<T>), key_in_body: None }
    }

    /// The body's own idempotency key (`POST /partner/stk`'s `idem`), which the
    /// `Idempotency-Key` header, if sent too, must equal. Such a key is checked with the body,
    /// before `prepare`; a header-only key after it.
    #[must_use]
    pub fn key_in_body(self, key: fn(&T) -> &str) -> Self {
        Input { key_in_body: Some(key), ..self }
    }
}

impl<'a, T> Input<'a, T> {
    /// A body read by `read`, which checks the media type, parses the body and gives its
    /// canonical form for the fingerprint (which must cover everything that makes the request
    /// what it is, such as query parameters that stand for body fields).
    pub fn read_with(body: &'a Body, read: fn(&HttpRequest, &Body) -> Result<Parsed<T>, ApiError>) -> Self {
        Input { read: Read::With(body, read), key_in_body: None }
    }
}

impl<T> Read<'_, T> {
    fn parse(self, req: &HttpRequest) -> Result<Parsed<T>, ApiError> {
        match self {
            Read::With(body, read) => read(req, body),
            Read::Nothing(value) => Ok(Parsed { value, canonical: Vec::new() }),
        }
    }
}

impl Input<'static, ()> {
    /// No body (`DELETE`): nothing is read, and the fingerprint is the method and path alone.
    pub fn none() -> Self {
        Input { read: Read::Nothing(()), key_in_body: None }
    }
}

/// Handles an idempotent state-changing call for `principal` (whose scope the handler has
/// checked): reads the body as `input` says, turns it into the use case's input with `prepare`,
/// builds the idempotency context of `operation` (scoped to the principal), runs `use_case` on a
/// blocking thread (it claims the key in its transaction, or finds the stored answer) and sends
/// the stored answer, replays with `Idempotent-Replayed: true`.
///
/// Errors come in this order, each before the next is looked at: the media type (415); the JSON
/// (400 malformed or of a wrong type, 422 with an unknown or missing field); when the body
/// carries the key, the key (400 malformed, or header and body differing); `prepare`'s own (e.g.
/// 400 for an amount that is neither a number nor a string); otherwise now the header key (400
/// missing or malformed); then the use case's.
///
/// # Errors
/// As above.
pub async fn idempotent<T, U>(
    req: &HttpRequest,
    principal: Principal,
    state: &AppState,
    operation: &'static str,
    input: Input<'_, T>,
    prepare: impl FnOnce(T) -> Result<U, ApiError>,
    use_case: impl FnOnce(&Platform, &Principal, U, &Idem) -> Result<IdemOutcome, ServiceError> + Send + 'static,
) -> Result<HttpResponse, ApiError>
where
    U: Send + 'static,
{
    let Parsed { value, canonical } = input.read.parse(req)?;
    let context = |body_key: Option<&str>| idem(req, &principal, operation, body_key, &canonical);
    let keyed_by_body = input.key_in_body.map(|key| context(Some(key(&value)))).transpose()?;
    let value = prepare(value)?;
    let idem = match keyed_by_body {
        Some(idem) => idem,
        None => context(None)?,
    };
    let outcome = run(state, move |p| use_case(p, &principal, value, &idem)).await?;
    Ok(stored(outcome))
}
