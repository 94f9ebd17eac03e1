//! The `malipo` binary's wiring: configuration, the store, the platform, the HTTP server, the
//! background workers and graceful shutdown. It only assembles; behaviour lives in the crates.

pub mod callbacks;
pub mod cli;
pub mod config;
pub mod delivery;
pub mod demo;
pub mod webhook_key;
pub mod worker;

use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use actix_web::{middleware, web, App, HttpServer};
use anyhow::Context;
use malipo_auth::SecretHasher;
use malipo_core::{Clock, SystemClock};
use malipo_countries::Countries;
use malipo_http::{AppState, RateLimits};
use malipo_service::{Grouping, Platform, ServiceConfig, WebhookConfig};
use malipo_store_diesel::DieselStore;
use malipo_webhooks::SecretCipher;
use tokio::sync::watch;

pub use config::{CommonArgs, ServeArgs, Settings, WebhookKey};

/// Loads the country configuration named by the settings (or the built-in file).
///
/// # Errors
/// A message naming the bad entry.
pub fn load_countries(settings: &Settings) -> anyhow::Result<Countries> {
    match &settings.countries {
        Some(path) => Countries::load(path).with_context(|| format!("invalid country configuration {}", path.display())),
        None => Countries::builtin().context("invalid built-in country configuration"),
    }
}

/// Connects, migrates, and assembles the platform, as the server runs it: with the webhook key
/// (see [`webhook_key`]), so PostgreSQL without `MALIPO_WEBHOOK_KEY` is refused.
///
/// # Errors
/// Unreachable database, failed migration, invalid configuration.
pub fn platform(settings: &Settings) -> anyhow::Result<(Platform, DieselStore)> {
    platform_with_clock(settings, Arc::new(SystemClock))
}

/// [`platform`] on another clock (tests drive time with a manual one).
///
/// # Errors
/// As [`platform`].
pub fn platform_with_clock(settings: &Settings, clock: Arc<dyn Clock>) -> anyhow::Result<(Platform, DieselStore)> {
    let key = webhook_key::source(settings)?;
    assemble(settings, key, clock)
}

/// The platform of an operator command (`malipo org create`, …): the same key as the servers',
/// since commands hash client secrets under it (on PostgreSQL `MALIPO_WEBHOOK_KEY` is required).
/// One database connection: a command does one thing at a time, and a pool that opens spare
/// connections in the background could still be opening one when the process exits (libpq's
/// Kerberos layer then aborts the exiting process).
///
/// # Errors
/// As [`platform`].
pub fn operator_platform(settings: &Settings) -> anyhow::Result<(Platform, DieselStore)> {
    platform(&Settings { db_pool_size: Some(1), database_read_url: None, ..settings.clone() })
}

/// The webhook delivery tunables of the settings.
pub fn webhook_config(settings: &Settings) -> WebhookConfig {
    WebhookConfig {
        schedule: settings.webhook_retry_schedule.clone(),
        timeout: settings.webhook_timeout(),
        allow_private: settings.webhook_allow_private,
    }
}

/// The HKDF info of the key that client secrets and PINs are hashed under.
pub const HASHING_KEY_PURPOSE: &[u8] = b"malipo: keyed hashes of client secrets and PINs, v1";

fn assemble(settings: &Settings, key: webhook_key::KeySource, clock: Arc<dyn Clock>) -> anyhow::Result<(Platform, DieselStore)> {
    let countries = load_countries(settings)?;
    let store = DieselStore::connect_with_deadline(&settings.database_url, settings.db_pool_size, settings.deadline())
        .map_err(|e| anyhow::anyhow!("cannot open the database: {e}"))?;
    store.migrate().map_err(|e| anyhow::anyhow!("migrations failed: {e}"))?;
    let store = match &settings.database_read_url {
        Some(url) => store
            .with_replica(url, settings.db_pool_size, std::time::Duration::from_millis(settings.db_read_max_lag_ms))
            .map_err(|e| anyhow::anyhow!("cannot open the read replica: {e}"))?,
        None => store,
    };
    let cipher: SecretCipher = key.cipher()?;
    // Client secrets and PINs are hashed under a key derived from the same configured key.
    let hasher = SecretHasher::new(cipher.derive_key(HASHING_KEY_PURPOSE)).map_err(|e| anyhow::anyhow!("{e}"))?;
    let config = ServiceConfig {
        charge_ttl_seconds: settings.charge_ttl_seconds,
        sandbox_approval_delay_ms: settings.sandbox_approval_delay_ms,
        worker_lease_seconds: settings.worker_lease_seconds,
        payout_settle_chunk: settings.payout_settle_chunk.unwrap_or(if settings.database_url.starts_with("postgres") { 16 } else { 8 }),
        charge_settle_chunk: settings.charge_settle_chunk.unwrap_or(if settings.database_url.starts_with("postgres") { 16 } else { 64 }),
        max_backlog_seconds: settings.max_backlog_seconds,
    };
    let requests = Grouping::over(Arc::new(store.clone()), settings.create_group_max);
    let platform =
        Platform::new(requests, Arc::new(countries), Arc::new(hasher), clock, config).with_webhooks(cipher, webhook_config(settings));
    let passwords = malipo_auth::Passwords::new().map_err(|e| anyhow::anyhow!("{e}"))?;
    let platform = platform.with_passwords(Arc::new(passwords));
    platform.access().ensure_system_accounts().map_err(|e| anyhow::anyhow!("cannot create system accounts: {e}"))?;
    Ok((platform, store))
}

/// Connections of the background work's own pool beyond one per worker loop: the sealer, the
/// backlog monitor, and the webhook claimer and recorder.
const BACKGROUND_CONNECTIONS: u32 = 4;

/// The platform the background work runs on: `platform` on a connection pool of its own, so that
/// requests, a flood of them included, cannot hold every connection while due work waits (the
/// workers, the sealer, the backlog monitor and webhook delivery are how a backlog drains). An
/// in-memory SQLite database has one connection and keeps it.
///
/// # Errors
/// When the database cannot be opened.
fn background_platform(settings: &Settings, platform: &Platform) -> anyhow::Result<Platform> {
    if settings.database_url.contains(":memory:") {
        return Ok(platform.clone());
    }
    let size = u32::try_from(settings.workers).unwrap_or(u32::MAX).saturating_add(BACKGROUND_CONNECTIONS);
    let store = DieselStore::connect_with_deadline(&settings.database_url, Some(size), settings.deadline())
        .map_err(|e| anyhow::anyhow!("cannot open the database: {e}"))?;
    Ok(platform.clone().with_store(Arc::new(store)))
}

/// A running server.
pub struct Running {
    /// The bound address.
    pub addr: std::net::SocketAddr,
    /// The metrics listener's address (`MALIPO_METRICS_BIND`), if any.
    pub metrics_addr: Option<std::net::SocketAddr>,
    /// Stops the HTTP server gracefully.
    pub server: actix_web::dev::ServerHandle,
    /// Completes when the server and the workers have stopped.
    pub done: tokio::task::JoinHandle<anyhow::Result<()>>,
    /// The platform (for tests and the CLI).
    pub platform: Platform,
}

/// Starts the HTTP server and the workers on `listener`. The server stops on SIGINT/SIGTERM (or
/// [`Running::server`]), lets in-flight requests finish, then the workers stop claiming work.
///
/// # Errors
/// Server start-up failures.
pub fn start(settings: &Settings, platform: Platform, listener: TcpListener) -> anyhow::Result<Running> {
    let metrics = malipo_http::metrics().map_err(|e| anyhow::anyhow!("metrics: {e}"))?;
    let prom = metrics.requests;
    let seal_gauges = malipo_http::SealGauges::register(&prom.registry).map_err(|e| anyhow::anyhow!("metrics: {e}"))?;
    malipo_http::ReplicaGauges::register(&prom.registry, platform.clone()).map_err(|e| anyhow::anyhow!("metrics: {e}"))?;
    let platform = platform.with_observer(Arc::new(metrics.charges));
    let rate_limits = RateLimits::new(settings.rate_limit_test, settings.rate_limit_live)
        .with_token_failures(settings.token_failures_per_client, settings.token_failures_per_address);
    let rate_limits = Arc::new(rate_limits);
    let state = AppState { platform: platform.clone(), rate_limits: rate_limits.clone(), trust_proxy: settings.trust_proxy };
    // The GSMA door spends the same per-credential budget as the REST API.
    let gsma = malipo_gsma::Gsma::new(
        platform.clone(),
        Arc::new(move |principal| rate_limits.check(principal.mode, &principal.client_id).map(|_| ()).map_err(|refused| refused.0)),
    );
    let data = web::Data::new(state);
    let addr = listener.local_addr()?;
    let console = malipo_console::Console {
        platform: platform.clone(),
        settings: console_settings(settings, addr),
        event_data: malipo_http::event_data,
    };
    let metrics_access = web::Data::new(malipo_http::MetricsAccess { token: settings.metrics_token.clone() });
    let metrics_server = match &settings.metrics_bind {
        Some(bind) => Some(metrics_server(bind, prom.registry.clone())?),
        None => None,
    };
    let metrics_addr = metrics_server.as_ref().map(|(addr, _)| *addr);
    let prom_for_api = prom.clone();
    let mut server = HttpServer::new(move || {
        let console = console.clone();
        let gsma = gsma.clone();
        App::new()
            .app_data(data.clone())
            .app_data(metrics_access.clone())
            .wrap(prom_for_api.clone())
            .wrap(middleware::from_fn(malipo_http::metrics_gate))
            .wrap(middleware::from_fn(malipo_http::request_id_mw))
            .configure(move |cfg| malipo_console::configure(cfg, console))
            .configure(move |cfg| malipo_gsma::configure(cfg, gsma))
            .configure(malipo_http::configure)
    })
    .shutdown_timeout(30)
    .listen(listener)?;
    if let Some(n) = settings.http_workers {
        server = server.workers(n);
    }
    let server = server.run();
    let handle = server.handle();
    let (stop_tx, stop_rx) = watch::channel(false);
    let background = background_platform(settings, &platform)?;
    let mut workers = worker::spawn(background.clone(), (settings.workers, settings.payout_lanes), seal_gauges, stop_rx.clone());
    workers.push(tokio::spawn(worker::monitor_backlog(background.clone(), metrics.backlog, stop_rx.clone())));
    // An instance with no webhook sends queues deliveries for the others to send.
    if settings.webhook_concurrency > 0 {
        let sender = Arc::new(delivery::Sender::default());
        workers.push(callbacks::spawn(background.clone(), Arc::clone(&sender), stop_rx.clone()));
        workers.push(delivery::spawn(background, sender, settings.webhook_concurrency as usize, stop_rx));
    }
    let metrics_handle = metrics_server.map(|(_, server)| {
        let handle = server.handle();
        tokio::spawn(server);
        handle
    });
    let done = tokio::spawn(async move {
        server.await?;
        if let Some(metrics) = metrics_handle {
            metrics.stop(true).await;
        }
        tracing::info!("HTTP server stopped; stopping workers");
        let _ = stop_tx.send(true);
        for w in workers {
            let _ = tokio::time::timeout(Duration::from_secs(30), w).await;
        }
        Ok(())
    });
    Ok(Running { addr, metrics_addr, server: handle, done, platform })
}

/// A listener of its own for `/metrics` (`MALIPO_METRICS_BIND`), for an address only the
/// operator's scraper reaches: it serves the metrics and nothing else, without a token.
///
/// # Errors
/// When the address cannot be bound.
fn metrics_server(bind: &str, registry: prometheus::Registry) -> anyhow::Result<(std::net::SocketAddr, actix_web::dev::Server)> {
    let listener = TcpListener::bind(bind).map_err(|e| anyhow::anyhow!("cannot listen for metrics on {bind}: {e}"))?;
    let addr = listener.local_addr()?;
    let server = HttpServer::new(move || {
        let registry = registry.clone();
        App::new().route(
            malipo_http::metrics::METRICS_PATH,
            web::get().to(move || {
                let text = malipo_http::metrics::render(&registry);
                async move { actix_web::HttpResponse::Ok().content_type("text/plain; version=0.0.4; charset=utf-8").body(text) }
            }),
        )
    })
    .workers(1)
    .shutdown_timeout(5)
    .listen(listener)?
    .run();
    Ok((addr, server))
}

/// How the console is reached, from the settings and the address the server listens on: the
/// origin of `MALIPO_CONSOLE_URL`, or without it the listening address's (never the request's
/// `Host`), or with `MALIPO_TRUST_PROXY` and no console URL, what the trusted proxy forwards.
pub fn console_settings(settings: &Settings, listening: std::net::SocketAddr) -> malipo_console::ConsoleSettings {
    let configured = settings.console_url.as_deref().and_then(|u| {
        let (scheme, rest) = u.split_once("://")?;
        Some(format!("{scheme}://{}", rest.split('/').next().unwrap_or_default()))
    });
    let origins = match configured {
        Some(origin) => vec![origin],
        None if settings.trust_proxy => Vec::new(),
        None => malipo_console::ConsoleSettings::origins_of(listening),
    };
    malipo_console::ConsoleSettings { secure_cookies: settings.console_secure_cookies(), origins, trust_proxy: settings.trust_proxy }
}

/// Sets up structured (JSON) logging with the given filter.
pub fn init_logging(filter: &str) {
    let filter = tracing_subscriber::EnvFilter::try_new(filter).unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt().json().with_env_filter(filter).with_current_span(false).try_init();
}
