//! The console: server-rendered pages for the people behind integrators (console contract,
//! `../shared/spec/console.md`), served by the same binary and port as the API under
//! `/console/`. A driving adapter beside the REST API: every action calls the same use cases
//! (`malipo-service`) with the same rules, ledger entries, events and webhooks.
//!
//! How a request is served: a page's handler takes [`session::Person`] (the signed-in person,
//! or a redirect to sign in) or, for a form post, [`csrf::Posted`] (the person, their form, its
//! CSRF token and origin checked); it asks the person's role ([`session::Person::require`]),
//! calls a use case on a blocking thread ([`run`]) and renders an askama template
//! (`templates/`, checked at compile time) inside the [`chrome::Chrome`] every page shares.
//! Errors become pages in [`error`].

// Integers never meet `+ - *` unchecked here either (pages count rows and draw charts).
#![cfg_attr(not(test), deny(clippy::arithmetic_side_effects))]

pub mod assets;
pub mod chrome;
pub mod csrf;
pub mod csv;
pub mod error;
pub mod escape;
pub mod format;
pub mod idem;
pub mod pages;
pub mod session;

use actix_web::{middleware, web, HttpResponse};
use malipo_service::{Platform, ServiceError};

pub use error::ConsoleError;

/// How the console is reached.
#[derive(Clone, Debug, Default)]
pub struct ConsoleSettings {
    /// Whether its cookies carry `Secure` (the console is reached over HTTPS).
    pub secure_cookies: bool,
    /// The console's own origins (`https://pay.example.com`) as browsers send them in `Origin`:
    /// a form post from any other is refused. Never taken from the request: from the console's
    /// configured address, or the address the server listens on.
    pub origins: Vec<String>,
    /// Whether a reverse proxy in front is trusted to say whom it forwards: then the last
    /// address of `X-Forwarded-For` is the request's source (for the failure limits and the
    /// audit log), and, with no configured address, its `X-Forwarded-Host` and
    /// `X-Forwarded-Proto` (or `Forwarded`) give the expected origin.
    pub trust_proxy: bool,
}

impl ConsoleSettings {
    /// The origins a server listening on `addr` is reached at without a configured address:
    /// `http://<addr>`, and for a loopback or unspecified address (`0.0.0.0`, `::`) also the
    /// names of this machine's loopback (`localhost`, `127.0.0.1`, `[::1]`) at its port. (A
    /// server reached by another name needs `MALIPO_CONSOLE_URL`.)
    pub fn origins_of(addr: std::net::SocketAddr) -> Vec<String> {
        let port = addr.port();
        let mut all = vec![format!("http://{addr}")];
        if addr.ip().is_loopback() || addr.ip().is_unspecified() {
            for host in ["localhost", "127.0.0.1", "[::1]"] {
                let origin = format!("http://{host}:{port}");
                if !all.contains(&origin) {
                    all.push(origin);
                }
            }
        }
        all
    }
}

/// What every console handler shares.
#[derive(Clone)]
pub struct Console {
    /// The use cases.
    pub platform: Platform,
    /// How the console is reached.
    pub settings: ConsoleSettings,
    /// An event's `data` as the API shows it (the HTTP adapter's rendering of the event's
    /// snapshot, wired in by the app; the console does not depend on the adapter).
    pub event_data: fn(&malipo_webhooks::Event) -> Vec<u8>,
}

/// Runs `f` (a use case) on a blocking thread, as the API does: no transaction is held across an
/// `.await`.
///
/// # Errors
/// The use case's, or [`ConsoleError::Internal`] if the thread pool is gone.
pub async fn run<T: Send + 'static>(
    console: &Console,
    f: impl FnOnce(&Platform) -> Result<T, ServiceError> + Send + 'static,
) -> Result<T, ConsoleError> {
    let platform = console.platform.clone();
    web::block(move || f(&platform)).await.map_err(|e| ConsoleError::Internal(e.to_string()))?.map_err(ConsoleError::from)
}

async fn to_console() -> HttpResponse {
    HttpResponse::SeeOther().insert_header(("Location", "/console/")).finish()
}

/// Registers the console: `/` redirects to `/console/`, and every page under `/console`.
pub fn configure(cfg: &mut web::ServiceConfig, console: Console) {
    cfg.route("/", web::get().to(to_console)).service(
        web::scope("/console")
            .app_data(web::Data::new(console))
            .app_data(web::FormConfig::default().limit(64 * 1024).error_handler(|e, _| ConsoleError::BadForm(e.to_string()).into()))
            .app_data(web::QueryConfig::default().error_handler(|e, _| ConsoleError::BadForm(e.to_string()).into()))
            .wrap(middleware::from_fn(chrome::security_headers))
            .configure(pages::routes)
            .default_service(web::to(|| async { Err::<HttpResponse, _>(ConsoleError::NotFound) })),
    );
}
