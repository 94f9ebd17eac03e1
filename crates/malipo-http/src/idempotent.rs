//! The one way a state-changing call is handled (contract section 10, Idempotency): its body
//! read once into its DTO, converted once into the use case's raw input and parsed once into
//! the use case's command, its idempotency key taken, its use case run once per key, and the
//! stored answer sent.
//!
//! A handler checks the token's scope (and anything else about the caller, such as test mode),
//! then hands the rest to [`idempotent`]: how the body is read, how its DTO becomes the raw input
//! (`into_new`, in the group's `dto.rs`: the wire forms, such as an amount sent as a number or a
//! string), and the use case with the DTO its answer is stored as. The command is parsed by the
//! service ([`Platform::parse`]), as any other front end's.
//!
//! ```text
//! pub async fn cash_in(req: HttpRequest, auth: Auth, body: Body, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
//!     let principal = auth.require(Scope::Agent)?.clone();
//!     let use_case = |p: &Platform, principal: &Principal, cash: &AgentCash, idem: &Idem| p.agents().cash_in(principal, cash, idem);
//!     idempotent(&req, principal, &state, "POST /agents/cash-in", Input::json(&body), AgentCashRequest::into_new, use_case, CashInDto::from)
//!         .await
//! }
//! ```
//!
//! The use case returns what it did ([`Done`]), the first time and on a repeat alike (then as it
//! was the first time); the answer is rendered from it here, after the call: the same result,
//! the same bytes.
//!
//! [`Input::optional_json`] reads a body that may be left out, [`Input::none`] none at all
//! (`DELETE`), [`Input::read_with`] a body of the handler's own reading (`POST /bulk-payouts`:
//! JSON or CSV); [`Input::key_in_body`] names a body field that carries the key, and
//! [`Input::fields_before_key`] answers the command's field errors with the body's.

use std::borrow::Borrow;

use actix_web::{HttpRequest, HttpResponse};
use malipo_auth::Principal;
use malipo_service::{Command, Done, Earlier, Idem, Platform, ServiceError};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::extract::{idem, optional_json, parse_json, require_json, Body, Parsed};
use crate::handler::{answer, run};
use crate::problem::ApiError;
use crate::state::AppState;

/// How an idempotent call reads its body (as a `T`) and where its key is.
pub struct Input<'a, T> {
    read: Read<'a, T>,
    /// The body's own key field, if it has one.
    key_in_body: Option<fn(&T) -> &str>,
    /// Whether the command's field errors are answered before the header key.
    fields_before_key: bool,
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
        Input { read: Read::With(body, json::<T>), key_in_body: None, fields_before_key: false }
    }

    /// A JSON object that may be left out: an empty body counts as `{}` (and needs no
    /// `Content-Type`), see [`optional_json`].
    pub fn optional_json(body: &'a Body) -> Self
    where
        T: Default,
    {
        Input { read: Read::With(body, optional_json::<T>), key_in_body: None, fields_before_key: false }
    }

    /// The body's own idempotency key (`POST /partner/stk`'s `idem`), which the
    /// `Idempotency-Key` header, if sent too, must equal. Such a key is checked with the body,
    /// before the raw input is made; a header-only key after the command is parsed.
    #[must_use]
    pub fn key_in_body(self, key: fn(&T) -> &str) -> Self {
        Input { key_in_body: Some(key), ..self }
    }
}

impl<'a, T> Input<'a, T> {
    /// The command's field errors ([`ServiceError::Validation`]) are the body's own problems,
    /// answered before the header key is looked at (`POST /sandbox/charges/{charge_ref}/simulate`'s
    /// `action`, as the API always answered); otherwise they come after it, where the use case's
    /// own errors come.
    #[must_use]
    pub fn fields_before_key(self) -> Self {
        Input { fields_before_key: true, ..self }
    }

    /// A body read by `read`, which checks the media type, parses the body and gives its
    /// canonical form for the fingerprint (which must cover everything that makes the request
    /// what it is, such as query parameters that stand for body fields).
    pub fn read_with(body: &'a Body, read: fn(&HttpRequest, &Body) -> Result<Parsed<T>, ApiError>) -> Self {
        Input { read: Read::With(body, read), key_in_body: None, fields_before_key: false }
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
        Input { read: Read::Nothing(()), key_in_body: None, fields_before_key: false }
    }
}

/// Handles an idempotent state-changing call for `principal` (whose scope the handler has
/// checked): reads the body as `input` says into its DTO, makes the raw input of it with `raw`,
/// parses that into the command `C` (once, by the service's rules), builds the idempotency
/// context of `operation` (scoped to the principal), runs `use_case` with the command on a
/// blocking thread (it claims the key in its transaction, or finds what the key's request did)
/// and answers with `render` of its result, a repeat's with `Idempotent-Replayed: true`.
///
/// Errors come in this order, each before the next is looked at: the media type (415); the JSON
/// (400 malformed or of a wrong type, 422 with an unknown or missing field); when the body
/// carries the key, the key (400 malformed, or header and body differing); `raw`'s own (e.g.
/// 400 for an amount that is neither a number nor a string); otherwise now the header key (400
/// missing or malformed); then the command's (422 `validation_failed` with every field's
/// problem, 404 for a path id that names nothing; parsed before the header key was looked at,
/// answered after it unless [`Input::fields_before_key`]); then the use case's.
///
/// # Errors
/// As above.
#[allow(clippy::too_many_arguments)]
pub async fn idempotent<T, R, C, V, D>(
    req: &HttpRequest,
    principal: Principal,
    state: &AppState,
    operation: &'static str,
    input: Input<'_, T>,
    raw: impl FnOnce(T) -> Result<R, ApiError>,
    use_case: impl FnOnce(&Platform, &Principal, &C, &Idem) -> Result<Done<V>, ServiceError> + Send + 'static,
    render: impl FnOnce(&V) -> D,
) -> Result<HttpResponse, ApiError>
where
    R: Borrow<C::Raw>,
    C: Command + Send + 'static,
    V: Send + 'static,
    D: Serialize,
{
    let Parsed { value, canonical } = input.read.parse(req)?;
    let context = |body_key: Option<&str>| idem(req, &principal, operation, body_key, &canonical);
    let keyed_by_body = input.key_in_body.map(|key| context(Some(key(&value)))).transpose()?;
    let raw = raw(value)?;
    let command = state.platform.parse::<C>(&principal, raw.borrow());
    if input.fields_before_key {
        if let Err(e @ ServiceError::Validation(_)) = command {
            return Err(e.into());
        }
    }
    let idem = match keyed_by_body {
        Some(idem) => idem,
        None => context(None)?,
    };
    let command = command?;
    match run(state, move |p| use_case(p, &principal, &command, &idem)).await {
        Ok(done) => Ok(answer(done.map(|v| render(&v)))),
        // What a version before snapshots answered, kept as this API wrote it.
        Err(ApiError::Service(ServiceError::AnsweredEarlier(Earlier(body)))) => Ok(earlier(body)),
        Err(e) => Err(e),
    }
}

/// The answer an earlier version kept with a key (its JSON, sent as it was).
fn earlier(body: Vec<u8>) -> HttpResponse {
    HttpResponse::Ok().content_type("application/json").insert_header(("Idempotent-Replayed", "true")).body(body)
}
