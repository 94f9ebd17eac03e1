//! The application core: the store, the country configuration, hashing and the clock, shared by
//! every use case.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use malipo_auth::SecretHasher;
use malipo_charges::ChargeState;
use malipo_core::{AccountId, Clock, Mode, OrgId};
use malipo_countries::{Countries, Country};
use malipo_ledger::AccountKind;

use crate::error::ServiceError;
use crate::ports::{AccountKey, Store, Tx};
use crate::webhooks::{EventRenderer, NoRenderer, WebhookConfig};
use malipo_webhooks::SecretCipher;

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

/// Ids of organisations' accounts, which never change once opened: saves a lookup per charge.
type AccountIds = Mutex<HashMap<(OrgId, Mode, AccountKind), AccountId>>;

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
    /// The wire forms of events (the HTTP adapter's JSON).
    pub renderer: Arc<dyn EventRenderer>,
    /// Seals endpoint secrets at rest.
    pub cipher: Arc<SecretCipher>,
    /// Webhook delivery tunables.
    pub webhooks: WebhookConfig,
    account_ids: Arc<AccountIds>,
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
        Platform {
            store,
            countries,
            hasher,
            clock,
            config,
            observer: Arc::new(NoObserver),
            renderer: Arc::new(NoRenderer),
            cipher: Arc::new(SecretCipher::ephemeral()),
            webhooks: WebhookConfig::default(),
            account_ids: Arc::default(),
        }
    }

    /// With a metrics hook.
    #[must_use]
    pub fn with_observer(mut self, observer: Arc<dyn Observer>) -> Self {
        self.observer = observer;
        self
    }

    /// With the event renderer, the secret cipher and the delivery tunables.
    #[must_use]
    pub fn with_webhooks(mut self, renderer: Arc<dyn EventRenderer>, cipher: SecretCipher, webhooks: WebhookConfig) -> Self {
        self.renderer = renderer;
        self.cipher = Arc::new(cipher);
        self.webhooks = webhooks;
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
        self.countries.get(code).ok_or_else(|| ServiceError::Internal(format!("country {code} is not configured")))
    }

    /// The id of an organisation's account of a kind in a mode (cached after the first lookup).
    ///
    /// # Errors
    /// [`ServiceError::Internal`] when the organisation has no such account; storage failures.
    pub fn org_account_id(&self, tx: &mut dyn Tx, org_id: &OrgId, mode: Mode, kind: AccountKind) -> Result<AccountId, ServiceError> {
        let key = (org_id.clone(), mode, kind);
        if let Some(id) = self.account_ids.lock().unwrap_or_else(PoisonError::into_inner).get(&key) {
            return Ok(id.clone());
        }
        let account = tx
            .find_account(&AccountKey::Org { org_id: org_id.clone(), mode, kind })?
            .ok_or_else(|| ServiceError::Internal(format!("organisation {org_id} has no {mode} {kind} account")))?;
        self.account_ids.lock().unwrap_or_else(PoisonError::into_inner).insert(key, account.id.clone());
        Ok(account.id)
    }
}
