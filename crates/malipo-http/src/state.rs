//! What every handler shares.

use std::num::NonZeroU32;
use std::sync::Arc;

use governor::clock::DefaultClock;
use governor::middleware::StateInformationMiddleware;
use governor::state::keyed::DefaultKeyedStateStore;
use governor::{Quota, RateLimiter};
use malipo_core::Mode;
use malipo_service::Platform;

use crate::failures::FailureLimits;

type Keyed = RateLimiter<String, DefaultKeyedStateStore<String>, DefaultClock, StateInformationMiddleware>;

/// Per-credential token buckets, one per mode, and the failure limits of the token endpoint.
pub struct RateLimits {
    test: (u32, Keyed),
    live: (u32, Keyed),
    token_failures: FailureLimits,
}

impl std::fmt::Debug for RateLimits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RateLimits")
            .field("test", &self.test.0)
            .field("live", &self.live.0)
            .field("token_failures", &self.token_failures)
            .finish()
    }
}

/// A refused request: retry after this many seconds.
#[derive(Debug, Clone, Copy)]
pub struct Refused(pub u64);

/// Failed token requests a minute per client id, by default.
pub const TOKEN_FAILURES_PER_CLIENT: u32 = 10;
/// Failed token requests a minute per source address, by default.
pub const TOKEN_FAILURES_PER_ADDRESS: u32 = 100;

impl RateLimits {
    /// Buckets of `test` and `live` requests per second per credential (at least 1), and the
    /// default failure limits of the token endpoint.
    pub fn new(test_per_sec: u32, live_per_sec: u32) -> Self {
        let make = |n: u32| {
            let n = NonZeroU32::new(n.max(1)).unwrap_or(NonZeroU32::MIN);
            (n.get(), RateLimiter::keyed(Quota::per_second(n)).with_middleware::<StateInformationMiddleware>())
        };
        RateLimits {
            test: make(test_per_sec),
            live: make(live_per_sec),
            token_failures: FailureLimits::new(TOKEN_FAILURES_PER_CLIENT, TOKEN_FAILURES_PER_ADDRESS),
        }
    }

    /// With `per_client` failed token requests a minute per client id and `per_address` per
    /// source address.
    #[must_use]
    pub fn with_token_failures(mut self, per_client: u32, per_address: u32) -> Self {
        self.token_failures = FailureLimits::new(per_client, per_address);
        self
    }

    /// The failure limits of the token and revoke endpoints.
    pub fn token_failures(&self) -> &FailureLimits {
        &self.token_failures
    }

    /// Requests per second allowed per credential in a mode.
    pub fn limit(&self, mode: Mode) -> u32 {
        match mode {
            Mode::Test => self.test.0,
            Mode::Live => self.live.0,
        }
    }

    /// Takes one request from the credential's bucket: `(limit, remaining)` or a refusal.
    ///
    /// # Errors
    /// [`Refused`] with the seconds to wait.
    pub fn check(&self, mode: Mode, client_id: &str) -> Result<(u32, u32), Refused> {
        let (limit, limiter) = match mode {
            Mode::Test => (&self.test.0, &self.test.1),
            Mode::Live => (&self.live.0, &self.live.1),
        };
        match limiter.check_key(&client_id.to_owned()) {
            Ok(snapshot) => Ok((*limit, snapshot.remaining_burst_capacity())),
            Err(not_until) => {
                let wait = not_until.wait_time_from(governor::clock::Clock::now(&DefaultClock::default()));
                Err(Refused(wait.as_secs_f64().ceil().max(1.0) as u64))
            }
        }
    }
}

/// Shared state of the HTTP adapter.
#[derive(Clone)]
pub struct AppState {
    /// The use cases.
    pub platform: Platform,
    /// Per-credential rate limits.
    pub rate_limits: Arc<RateLimits>,
    /// Whether the reverse proxy in front is trusted to say whom it forwards (the source
    /// address of the token endpoint's failure limits: [`malipo_auth::source_address`]).
    pub trust_proxy: bool,
}
