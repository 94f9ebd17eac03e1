//! The GSMA Mobile Money API v1.2 door (`docs/gsma.md`), served by the same binary and port as
//! the REST API under [`BASE`]. A driving adapter beside the REST API and the console: every
//! operation calls the same use cases (`malipo-service`) with the same rules, ledger entries,
//! events and webhooks, and renders the GSMA document's objects (`../shared/gsma/`).
//!
//! How a request is served: a handler takes [`caller::Caller`] (the bearer token's principal,
//! admitted by the same per-credential budget as the REST API), reads its body with
//! [`caller::json`] (the document's optional integrity headers checked), calls a use case on a
//! blocking thread ([`run`]) and renders the document's object ([`objects`]). Every error is the
//! document's error object, from one table ([`error`]).

pub mod accounts;
pub mod batches;
pub mod callbacks;
pub mod caller;
pub mod error;
pub mod objects;
pub mod statements;
pub mod states;
pub mod transactions;

use std::sync::Arc;

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{HeaderName, HeaderValue};
use actix_web::middleware::{self, Next};
use actix_web::{web, HttpResponse};
use malipo_auth::Principal;
use malipo_service::{Platform, ServiceError};

pub use error::GsmaError;

/// Where the door is served.
pub const BASE: &str = "/gsma/mm/v1.2";

/// A request budget per credential: `Err(seconds)` when the caller must wait.
pub type Admit = Arc<dyn Fn(&Principal) -> Result<(), u64> + Send + Sync>;

/// What the door needs from the binary that serves it.
#[derive(Clone)]
pub struct Gsma {
    /// The use cases.
    pub platform: Platform,
    /// The per-credential request budget, shared with the REST API so that a credential has one
    /// budget whichever door it uses.
    pub admit: Admit,
    /// The last heartbeat and when it was read: the heartbeat needs no token, so a flood of it
    /// is answered from here rather than from the database.
    beat: Arc<std::sync::Mutex<Option<(std::time::Instant, states::Beat)>>>,
}

impl Gsma {
    /// The door over `platform`, admitting requests by `admit`.
    pub fn new(platform: Platform, admit: Admit) -> Self {
        Gsma { platform, admit, beat: Arc::default() }
    }
}

/// Registers the door's routes under [`BASE`].
pub fn configure(cfg: &mut web::ServiceConfig, gsma: Gsma) {
    cfg.service(
        web::scope(BASE)
            .app_data(web::Data::new(gsma))
            .app_data(web::PayloadConfig::new(caller::BODY_LIMIT))
            .app_data(web::PathConfig::default().error_handler(|e, _| GsmaError::format(e.to_string()).into()))
            .app_data(web::QueryConfig::default().error_handler(|e, _| GsmaError::format(e.to_string()).into()))
            .wrap(middleware::from_fn(x_date))
            .route("/heartbeat", web::get().to(states::heartbeat))
            .route("/transactions/type/{transactionType}", web::post().to(transactions::create))
            .route("/transactions/{transactionReference}", web::get().to(transactions::get))
            .route("/transactions/{transactionReference}", web::patch().to(transactions::patch))
            .route("/transactions/{transactionReference}/reversals", web::post().to(transactions::reverse))
            .service(
                web::resource("/batchtransactions")
                    .app_data(web::PayloadConfig::new(batches::BODY_LIMIT))
                    .route(web::post().to(batches::create)),
            )
            .route("/batchtransactions/{batchId}", web::get().to(batches::get))
            .route("/batchtransactions/{batchId}", web::patch().to(batches::patch))
            .route("/batchtransactions/{batchId}/rejections", web::get().to(batches::rejections))
            .route("/batchtransactions/{batchId}/completions", web::get().to(batches::completions))
            .route("/requeststates/{serverCorrelationId}", web::get().to(states::request_state))
            .route("/responses/{clientCorrelationId}", web::get().to(states::response))
            .route("/accounts/balance", web::get().to(accounts::own_balance))
            .route("/accounts/{identifierType}/{identifier}/balance", web::get().to(accounts::balance))
            .route("/accounts/{identifierType}/{identifier}/accountname", web::get().to(accounts::account_name))
            .route("/accounts/{identifierType}/{identifier}/transactions", web::get().to(statements::transactions))
            .route("/accounts/{identifierType}/{identifier}/statemententries", web::get().to(statements::statement_entries))
            .default_service(web::to(|| async { Err::<HttpResponse, _>(GsmaError::not_found("no such resource")) })),
    );
}

/// Every answer carries `X-Date`, the time it was sent, as the document's responses do.
async fn x_date(req: ServiceRequest, next: Next<impl MessageBody>) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let mut res = next.call(req).await?;
    let now = malipo_core::Timestamp::from_offset_datetime(std::time::SystemTime::now().into());
    if let Ok(value) = HeaderValue::from_str(&now.to_rfc3339()) {
        res.headers_mut().insert(HeaderName::from_static("x-date"), value);
    }
    Ok(res)
}

/// Parses `raw` into the use case's command by the service's rules (every front end's parse) and
/// runs `use_case` with it, on a blocking thread ([`run`]).
///
/// # Errors
/// The command's field errors or the use case's, in the document's form.
pub async fn parsed<C, R, T>(
    platform: &Platform,
    principal: Principal,
    raw: R,
    use_case: impl FnOnce(&Platform, &Principal, &C) -> Result<T, ServiceError> + Send + 'static,
) -> Result<T, GsmaError>
where
    C: malipo_service::Command,
    R: std::borrow::Borrow<C::Raw> + Send + 'static,
    T: Send + 'static,
{
    run(platform, move |p| use_case(p, &principal, &p.parse::<C>(&principal, raw.borrow())?)).await
}

/// Runs a use case on a blocking thread (diesel is synchronous; no transaction crosses an await).
///
/// # Errors
/// The use case's error, in the document's form.
pub async fn run<T: Send + 'static>(
    platform: &Platform,
    f: impl FnOnce(&Platform) -> Result<T, ServiceError> + Send + 'static,
) -> Result<T, GsmaError> {
    let platform = platform.clone();
    web::block(move || f(&platform)).await.map_err(|e| GsmaError::from(ServiceError::Internal(e.to_string())))?.map_err(GsmaError::from)
}
