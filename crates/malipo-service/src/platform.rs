//! The application core: the store, the country configuration, hashing and the clock, shared by
//! every use case.

use std::sync::Arc;

use malipo_auth::{Principal, SecretHasher};
use malipo_charges::ChargeState;
use malipo_core::{Clock, Currency};
use malipo_countries::{Countries, Country};

use crate::error::ServiceError;
use crate::ports::Store;

/// Tunables of the use cases.
#[derive(Clone, Debug)]
pub struct ServiceConfig {
    /// Pending prompts expire after this many seconds.
    pub charge_ttl_seconds: i64,
    /// The sandbox approves test charges after this many milliseconds.
    pub sandbox_approval_delay_ms: i64,
    /// A worker's claim on a charge lapses after this many seconds (crash recovery).
    pub worker_lease_seconds: i64,
}

impl Default for ServiceConfig {
    fn default() -> Self {
        ServiceConfig { charge_ttl_seconds: 90, sandbox_approval_delay_ms: 2000, worker_lease_seconds: 30 }
    }
}

/// Hears about state changes (for metrics). The default hears nothing.
pub trait Observer: Send + Sync {
    /// A charge entered `state`.
    fn charge_entered(&self, _state: ChargeState) {}
}

/// An observer that ignores everything.
#[derive(Debug, Default)]
pub struct NoObserver;

impl Observer for NoObserver {}

/// Everything the use cases need.
#[derive(Clone)]
pub struct Platform {
    /// The database.
    pub store: Arc<dyn Store>,
    /// Per-country configuration.
    pub countries: Arc<Countries>,
    /// Argon2id hashing of secrets and PINs.
    pub hasher: Arc<SecretHasher>,
    /// The time.
    pub clock: Arc<dyn Clock>,
    /// Tunables.
    pub config: ServiceConfig,
    /// Metrics hook.
    pub observer: Arc<dyn Observer>,
}

impl Platform {
    /// Assembles a platform.
    pub fn new(
        store: Arc<dyn Store>,
        countries: Arc<Countries>,
        hasher: Arc<SecretHasher>,
        clock: Arc<dyn Clock>,
        config: ServiceConfig,
    ) -> Self {
        Platform { store, countries, hasher, clock, config, observer: Arc::new(NoObserver) }
    }

    /// With a metrics hook.
    #[must_use]
    pub fn with_observer(mut self, observer: Arc<dyn Observer>) -> Self {
        self.observer = observer;
        self
    }

    /// The store as a trait object.
    pub fn store(&self) -> &dyn Store {
        self.store.as_ref()
    }

    /// The configured country with this code.
    ///
    /// # Errors
    /// [`ServiceError::Internal`] when an organisation names a country no longer configured.
    pub fn country(&self, code: &str) -> Result<&Country, ServiceError> {
        self.countries
            .get(code)
            .ok_or_else(|| ServiceError::Internal(format!("country {code} is not configured")))
    }

    /// The currency of a principal's accounts.
    ///
    /// # Errors
    /// As [`Platform::country`].
    pub fn currency_of(&self, principal: &Principal) -> Result<Currency, ServiceError> {
        Ok(self.country(&principal.country)?.currency)
    }
}
