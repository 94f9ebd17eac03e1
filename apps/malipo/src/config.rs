//! Configuration from environment variables (a `.env` file is read if present), as contract
//! section 13 names them. Command-line flags of the same names override them.

use clap::Args;
use malipo_webhooks::RetrySchedule;

/// Everything the server and the operator commands read, assembled from [`CommonArgs`] and
/// [`ServeArgs`] (operator commands use the server's defaults, or the environment, for the
/// latter).
#[derive(Debug, Clone)]
pub struct Settings {
    /// `sqlite://PATH` or `postgres://...`.
    pub database_url: String,
    /// Listen address.
    pub bind: String,
    /// Per-country configuration file (default: the file shipped in the repository).
    pub countries: Option<std::path::PathBuf>,
    /// Pending prompts expire after this many seconds.
    pub charge_ttl_seconds: i64,
    /// The sandbox approves test charges after this many milliseconds.
    pub sandbox_approval_delay_ms: i64,
    /// A worker's claim on a charge or payout lapses after this many seconds, so that another
    /// instance takes over the work of one that died.
    pub worker_lease_seconds: i64,
    /// Payouts settled in one transaction (default: 8 on SQLite, 16 on PostgreSQL).
    pub payout_settle_chunk: Option<usize>,
    /// Worker loops that settle payouts at the same time.
    pub payout_lanes: usize,
    /// Due charges advanced in one transaction (default: 64 on SQLite, 16 on PostgreSQL).
    pub charge_settle_chunk: Option<usize>,
    /// Charge creations arriving together that may share one write transaction (1: none share).
    pub create_group_max: usize,
    /// New charges and payouts are refused (503) while the oldest due work has waited longer
    /// than this (0: never).
    pub max_backlog_seconds: i64,
    /// Requests per second per live credential.
    pub rate_limit_live: u32,
    /// Requests per second per test credential.
    pub rate_limit_test: u32,
    /// Failed token requests a minute per client id (then 429).
    pub token_failures_per_client: u32,
    /// Failed token requests a minute per source address (then 429).
    pub token_failures_per_address: u32,
    /// Log filter (tracing `EnvFilter` syntax).
    pub log: String,
    /// Database connections per server instance (default 16 on PostgreSQL, 8 on SQLite).
    pub db_pool_size: Option<u32>,
    /// PostgreSQL: every statement's deadline in milliseconds (`statement_timeout`; a server that
    /// does not answer half a second later loses the connection).
    pub db_deadline_ms: u64,
    /// PostgreSQL: a replica for the reads that may be stale (lists, statements, the export,
    /// reconciliation, the console's reports).
    pub database_read_url: Option<String>,
    /// How far behind the primary the replica may be before those reads go to the primary.
    pub db_read_max_lag_ms: u64,
    /// Background worker loops per instance (each claims its own batches).
    pub workers: usize,
    /// HTTP worker threads (default: one per core).
    pub http_workers: Option<usize>,
    /// Create a demo merchant on a first start with an empty database.
    pub demo: bool,
    /// Seconds to wait before each webhook attempt.
    pub webhook_retry_schedule: RetrySchedule,
    /// A webhook delivery succeeds on a 2xx answer within this many milliseconds.
    pub webhook_timeout_ms: u64,
    /// Let live endpoints use loopback and private addresses.
    pub webhook_allow_private: bool,
    /// The key that seals endpoint secrets at rest.
    pub webhook_key: Option<WebhookKey>,
    /// Webhook sends in flight at once per instance.
    pub webhook_concurrency: u32,
    /// The console's public address (invitation links, the origin checked on form posts).
    pub console_url: Option<String>,
    /// Whether the console's cookies carry `Secure` (`None`: on unless the bind address is
    /// loopback).
    pub console_secure_cookies: Option<bool>,
    /// Whether the reverse proxy in front is trusted to say whom it forwards.
    pub trust_proxy: bool,
    /// The bearer token that reads `/metrics` on the API's port (`None`: nobody there).
    pub metrics_token: Option<String>,
    /// A listener of its own that serves `/metrics` without a token.
    pub metrics_bind: Option<String>,
}

/// What every command reads: the database, the country file, the webhook key, logging.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Database and configuration")]
pub struct CommonArgs {
    /// `sqlite://PATH` or `postgres://...`.
    #[arg(long, env = "MALIPO_DATABASE_URL", default_value = "sqlite://malipo-data/malipo.db")]
    pub database_url: String,
    /// Per-country configuration file (default: the file shipped in the repository).
    #[arg(long, env = "MALIPO_COUNTRIES")]
    pub countries: Option<std::path::PathBuf>,
    /// Database connections per process (default 16 on PostgreSQL, 8 on SQLite).
    #[arg(long, env = "MALIPO_DB_POOL_SIZE")]
    pub db_pool_size: Option<u32>,
    /// PostgreSQL: every statement's deadline in milliseconds. The server cancels a statement
    /// that takes longer (the call answers 503 with `Retry-After`); a server that does not answer
    /// at all (frozen, or gone from the network) loses the connection half a second later, and
    /// the pool connects again, to the new primary of a multi-host URL.
    #[arg(long, env = "MALIPO_DB_DEADLINE_MS", default_value_t = 3000, value_parser = clap::value_parser!(u64).range(100..=600_000))]
    pub db_deadline_ms: u64,
    /// PostgreSQL: a replica (or a multi-host URL of the standbys, with
    /// `target_session_attrs=prefer-standby` or `read-only`) for the reads that may be a little
    /// stale: lists, statements, the transactions export, reconciliation and the console's
    /// reports. Everything that decides about money, and every read of one object, stays on
    /// `MALIPO_DATABASE_URL`.
    #[arg(long, env = "MALIPO_DATABASE_READ_URL")]
    pub database_read_url: Option<String>,
    /// How far behind the primary (in milliseconds) the replica may be; further behind, or not
    /// answering, its reads go to the primary (`malipo_db_replica_*` in `/metrics`).
    #[arg(long, env = "MALIPO_DB_READ_MAX_LAG_MS", default_value_t = 2000, value_parser = clap::value_parser!(u64).range(1..=3_600_000))]
    pub db_read_max_lag_ms: u64,
    /// Base64 of 32 bytes that encrypts webhook endpoint secrets at rest. Every instance of a
    /// deployment needs the same key. Unset on SQLite: `webhook.key` beside the database file
    /// (created once); unset on PostgreSQL: the server refuses to start.
    #[arg(long, env = "MALIPO_WEBHOOK_KEY", hide_env_values = true)]
    pub webhook_key: Option<WebhookKey>,
    /// Log filter (tracing `EnvFilter` syntax).
    #[arg(long, env = "MALIPO_LOG", default_value = "info")]
    pub log: String,
}

/// What only the server reads: where it listens, its limits, its workers and webhook delivery.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Server")]
pub struct ServeArgs {
    /// Listen address.
    #[arg(long, env = "MALIPO_BIND", default_value = "127.0.0.1:8080")]
    pub bind: String,
    /// Pending prompts expire after this many seconds.
    #[arg(long, env = "MALIPO_CHARGE_TTL_SECONDS", default_value_t = 90)]
    pub charge_ttl_seconds: i64,
    /// The sandbox approves test charges after this many milliseconds.
    #[arg(long, env = "MALIPO_SANDBOX_APPROVAL_DELAY_MS", default_value_t = 2000)]
    pub sandbox_approval_delay_ms: i64,
    /// A worker's claim on a charge or payout lapses after this many seconds (another instance
    /// then takes over the work of one that died).
    #[arg(long, env = "MALIPO_WORKER_LEASE_SECONDS", default_value_t = 30, value_parser = clap::value_parser!(i64).range(1..=3600))]
    pub worker_lease_seconds: i64,
    /// Payouts the worker settles in one transaction (default: 8 on SQLite, where each commit is a
    /// file sync of the one writer; 16 on PostgreSQL, where the rows the chunk's payouts share,
    /// their batch and payout account, are written once at its end and held only from there to
    /// the commit).
    #[arg(long, env = "MALIPO_PAYOUT_SETTLE_CHUNK", value_parser = clap::value_parser!(u16).range(1..=1000))]
    pub payout_settle_chunk: Option<u16>,
    /// Worker loops of an instance that settle payouts at the same time: a lane settles payouts
    /// as fast as the database lets it, so each lane takes about a core from the API's requests.
    #[arg(long, env = "MALIPO_PAYOUT_LANES", default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub payout_lanes: u16,
    /// Due charges the worker advances in one transaction, with a savepoint each only when one
    /// of them fails (default: 64 on SQLite, where each commit is a file sync of the one
    /// writer; 16 on PostgreSQL, where the chunk's journals are posted together at its end, so
    /// that a merchant's collection account is updated once a chunk and held only from that
    /// update to the commit).
    #[arg(long, env = "MALIPO_CHARGE_SETTLE_CHUNK", value_parser = clap::value_parser!(u16).range(1..=1000))]
    pub charge_settle_chunk: Option<u16>,
    /// Charge creations arriving at the same moment that may share one write transaction and
    /// its commit (1: each in a transaction of its own). Nothing waits to form a group: a
    /// creation that finds no other runs at once, alone; those arriving while a transaction
    /// runs are committed together in the next. A group is kept whole or not at all (a member
    /// that fails sends every member back to run alone), so every answer is the one it would be
    /// alone.
    #[arg(long, env = "MALIPO_CREATE_GROUP_MAX", default_value_t = 32, value_parser = clap::value_parser!(u16).range(1..=1000))]
    pub create_group_max: u16,
    /// New charges, cash-outs, payouts and bulk approvals are refused with 503 `unavailable` and
    /// `Retry-After` while the oldest due charge or payout has waited for the workers longer than
    /// this many seconds, until the wait is back under half of it (0: never refused). Keep it
    /// well under the charge time-to-live.
    #[arg(long, env = "MALIPO_MAX_BACKLOG_SECONDS", default_value_t = 10, value_parser = clap::value_parser!(i64).range(0..=86_400))]
    pub max_backlog_seconds: i64,
    /// Requests per second per live credential.
    #[arg(long, env = "MALIPO_RATE_LIMIT_LIVE", default_value_t = 100)]
    pub rate_limit_live: u32,
    /// Requests per second per test credential.
    #[arg(long, env = "MALIPO_RATE_LIMIT_TEST", default_value_t = 25)]
    pub rate_limit_test: u32,
    /// Failed client authentications a minute per client id at the token and revoke endpoints;
    /// past them, its failures are answered 429 until its bucket refills (its right secret
    /// still gets a token).
    #[arg(long, env = "MALIPO_TOKEN_FAILURES_PER_CLIENT", default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..))]
    pub token_failures_per_client: u32,
    /// Failed client authentications a minute per source address (IPv6 by its /64); past them,
    /// its failures are answered 429 (held a second once it goes on), while its right secrets
    /// still get their tokens.
    #[arg(long, env = "MALIPO_TOKEN_FAILURES_PER_ADDRESS", default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..))]
    pub token_failures_per_address: u32,
    /// Background charge worker loops per instance (each claims its own batches); 0 runs none
    /// (another instance must).
    #[arg(long, env = "MALIPO_WORKERS", default_value_t = 4)]
    pub workers: usize,
    /// HTTP worker threads (default: one per core).
    #[arg(long, env = "MALIPO_HTTP_WORKERS")]
    pub http_workers: Option<usize>,
    /// Create a demo merchant on a first start with an empty database.
    #[arg(long, env = "MALIPO_DEMO", default_value_t = true, action = clap::ArgAction::Set)]
    pub demo: bool,
    /// Seconds to wait before each webhook attempt: the first (usually 0), then after each failure.
    #[arg(long, env = "MALIPO_WEBHOOK_RETRY_SCHEDULE", default_value = "0,5,300,1800,7200,18000,36000,50400,72000,86400", value_parser = RetrySchedule::parse)]
    pub webhook_retry_schedule: RetrySchedule,
    /// A webhook delivery succeeds on a 2xx answer within this many milliseconds.
    #[arg(long, env = "MALIPO_WEBHOOK_TIMEOUT_MS", default_value_t = 15_000, value_parser = clap::value_parser!(u64).range(1..=600_000))]
    pub webhook_timeout_ms: u64,
    /// Let live endpoints use loopback and private addresses (never the default).
    #[arg(long, env = "MALIPO_WEBHOOK_ALLOW_PRIVATE", default_value_t = false, action = clap::ArgAction::Set)]
    pub webhook_allow_private: bool,
    /// Webhook sends in flight at once per instance (a receiver that hangs holds one until its
    /// timeout); 0 sends none (the instance queues deliveries, another instance sends them).
    #[arg(long, env = "MALIPO_WEBHOOK_CONCURRENCY", default_value_t = 64, value_parser = clap::value_parser!(u32).range(0..=4096))]
    pub webhook_concurrency: u32,
    /// The console's public address, e.g. `https://pay.example.com/console` (invitation links;
    /// form posts must come from its origin). Default `http://<MALIPO_BIND>/console`.
    #[arg(long, env = "MALIPO_CONSOLE_URL")]
    pub console_url: Option<String>,
    /// Whether the console's cookies carry `Secure` (set `true` whenever it is reached over
    /// HTTPS). Default: on unless the bind address is loopback.
    #[arg(long, env = "MALIPO_CONSOLE_SECURE_COOKIES", action = clap::ArgAction::Set)]
    pub console_secure_cookies: Option<bool>,
    /// Trust the reverse proxy in front to say whom it forwards: the last address of
    /// `X-Forwarded-For` is then a request's source (the failure limits, the audit log), and,
    /// without `MALIPO_CONSOLE_URL`, the forwarded host and scheme give the console's origin. Only
    /// behind a proxy that sets these headers itself (a client could otherwise choose them).
    #[arg(long, env = "MALIPO_TRUST_PROXY", default_value_t = false, action = clap::ArgAction::Set)]
    pub trust_proxy: bool,
    /// The bearer token a Prometheus scraper sends to read `/metrics` on the API's port
    /// (`Authorization: Bearer …`). Unset: `/metrics` there answers 404.
    #[arg(long, env = "MALIPO_METRICS_TOKEN", hide_env_values = true)]
    pub metrics_token: Option<String>,
    /// An address of its own (e.g. `127.0.0.1:9464`, or a private interface) where `/metrics`
    /// is served without a token, and nothing else.
    #[arg(long, env = "MALIPO_METRICS_BIND")]
    pub metrics_bind: Option<String>,
}

impl ServeArgs {
    /// The server's settings as the environment (or the defaults) give them, for operator
    /// commands, which take no server flags.
    ///
    /// # Errors
    /// An invalid `MALIPO_*` server variable.
    pub fn from_env() -> Result<Self, clap::Error> {
        #[derive(clap::Parser)]
        struct Only {
            #[command(flatten)]
            serve: ServeArgs,
        }
        <Only as clap::Parser>::try_parse_from(["malipo"]).map(|o| o.serve)
    }
}

impl Settings {
    /// Every PostgreSQL statement's deadline.
    pub fn deadline(&self) -> std::time::Duration {
        std::time::Duration::from_millis(self.db_deadline_ms)
    }

    /// Assembles the settings of a command.
    pub fn new(common: CommonArgs, serve: ServeArgs) -> Self {
        Settings {
            database_url: common.database_url,
            bind: serve.bind,
            countries: common.countries,
            charge_ttl_seconds: serve.charge_ttl_seconds,
            sandbox_approval_delay_ms: serve.sandbox_approval_delay_ms,
            worker_lease_seconds: serve.worker_lease_seconds,
            payout_settle_chunk: serve.payout_settle_chunk.map(usize::from),
            payout_lanes: usize::from(serve.payout_lanes),
            charge_settle_chunk: serve.charge_settle_chunk.map(usize::from),
            create_group_max: usize::from(serve.create_group_max),
            max_backlog_seconds: serve.max_backlog_seconds,
            rate_limit_live: serve.rate_limit_live,
            rate_limit_test: serve.rate_limit_test,
            token_failures_per_client: serve.token_failures_per_client,
            token_failures_per_address: serve.token_failures_per_address,
            log: common.log,
            db_pool_size: common.db_pool_size,
            db_deadline_ms: common.db_deadline_ms,
            database_read_url: common.database_read_url.filter(|u| !u.is_empty()),
            db_read_max_lag_ms: common.db_read_max_lag_ms,
            workers: serve.workers,
            http_workers: serve.http_workers,
            demo: serve.demo,
            webhook_retry_schedule: serve.webhook_retry_schedule,
            webhook_timeout_ms: serve.webhook_timeout_ms,
            webhook_allow_private: serve.webhook_allow_private,
            webhook_key: common.webhook_key,
            webhook_concurrency: serve.webhook_concurrency,
            console_url: serve.console_url.map(|u| u.trim_end_matches('/').to_owned()),
            console_secure_cookies: serve.console_secure_cookies,
            trust_proxy: serve.trust_proxy,
            metrics_token: serve.metrics_token.filter(|t| !t.is_empty()),
            metrics_bind: serve.metrics_bind.filter(|b| !b.is_empty()),
        }
    }

    /// The console's address: `MALIPO_CONSOLE_URL`, or `http://<bind address>/console`.
    pub fn console_url(&self) -> String {
        self.console_url.clone().unwrap_or_else(|| format!("http://{}/console", self.bind))
    }

    /// Whether the console's cookies carry `Secure`: as configured, or on unless the bind
    /// address is loopback (a browser on the same machine, over plain HTTP).
    pub fn console_secure_cookies(&self) -> bool {
        self.console_secure_cookies.unwrap_or_else(|| {
            let host = self.bind.rsplit_once(':').map_or(self.bind.as_str(), |(h, _)| h).trim_matches(['[', ']']);
            !(host == "localhost" || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback()))
        })
    }

    /// The webhook send timeout.
    pub fn webhook_timeout(&self) -> std::time::Duration {
        std::time::Duration::from_millis(self.webhook_timeout_ms)
    }
}

/// `MALIPO_WEBHOOK_KEY` as given (base64 of 32 bytes; checked when the platform is assembled).
/// Never printed: its `Debug` form is redacted.
#[derive(Clone, PartialEq, Eq)]
pub struct WebhookKey(pub String);

impl std::fmt::Debug for WebhookKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WebhookKey(…)")
    }
}

impl std::str::FromStr for WebhookKey {
    type Err = std::convert::Infallible;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(WebhookKey(s.to_owned()))
    }
}
