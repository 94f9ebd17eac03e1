//! Configuration from environment variables (a `.env` file is read if present), as contract
//! section 13 names them. Command-line flags of the same names override them.

use clap::Args;

/// Everything the server and the operator commands read from the environment.
#[derive(Debug, Clone, Args)]
pub struct Settings {
    /// `sqlite://PATH` or `postgres://...`.
    #[arg(long, env = "MALIPO_DATABASE_URL", default_value = "sqlite://malipo-data/malipo.db", global = true)]
    pub database_url: String,
    /// Listen address.
    #[arg(long, env = "MALIPO_BIND", default_value = "127.0.0.1:8080", global = true)]
    pub bind: String,
    /// Per-country configuration file (default: the file shipped in the repository).
    #[arg(long, env = "MALIPO_COUNTRIES", global = true)]
    pub countries: Option<std::path::PathBuf>,
    /// Pending prompts expire after this many seconds.
    #[arg(long, env = "MALIPO_CHARGE_TTL_SECONDS", default_value_t = 90, global = true)]
    pub charge_ttl_seconds: i64,
    /// The sandbox approves test charges after this many milliseconds.
    #[arg(long, env = "MALIPO_SANDBOX_APPROVAL_DELAY_MS", default_value_t = 2000, global = true)]
    pub sandbox_approval_delay_ms: i64,
    /// Requests per second per live credential.
    #[arg(long, env = "MALIPO_RATE_LIMIT_LIVE", default_value_t = 100, global = true)]
    pub rate_limit_live: u32,
    /// Requests per second per test credential.
    #[arg(long, env = "MALIPO_RATE_LIMIT_TEST", default_value_t = 25, global = true)]
    pub rate_limit_test: u32,
    /// Log filter (tracing `EnvFilter` syntax).
    #[arg(long, env = "MALIPO_LOG", default_value = "info", global = true)]
    pub log: String,
    /// Database connections per server instance (default 16 on PostgreSQL, 8 on SQLite).
    #[arg(long, env = "MALIPO_DB_POOL_SIZE", global = true)]
    pub db_pool_size: Option<u32>,
    /// Background worker loops per instance (each claims its own batches).
    #[arg(long, env = "MALIPO_WORKERS", default_value_t = 4, global = true)]
    pub workers: usize,
    /// HTTP worker threads (default: one per core).
    #[arg(long, env = "MALIPO_HTTP_WORKERS", global = true)]
    pub http_workers: Option<usize>,
    /// Create a demo merchant on a first start with an empty database.
    #[arg(long, env = "MALIPO_DEMO", default_value_t = true, action = clap::ArgAction::Set, global = true)]
    pub demo: bool,
}
