//! The shared core of every use case: the store, the country configuration, hashing, the clock,
//! the tunables and the outbound ports. Feature services borrow it; nothing outside the crate
//! sees its fields.

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64};
use std::sync::{Arc, Mutex};

use malipo_auth::{Passwords, SecretHasher};
use malipo_charges::ChargeState;
use malipo_core::{AccountId, Clock, Currency, Mode, Msisdn, OrgId, Timestamp};
use malipo_countries::{Countries, Country};
use malipo_ledger::AccountKind;
use malipo_webhooks::SecretCipher;

use crate::config::{ServiceConfig, WebhookConfig};
use crate::error::ServiceError;
use crate::ports::{AccountKey, AuthRepo, LedgerRepo, Store};

/// Hears about state changes (for metrics). The default hears nothing.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
pub trait Observer: Send + Sync {
    /// A charge entered `state`.
    fn charge_entered(&self, _state: ChargeState) {}

    /// A transaction committed `members` (two or more) requests together (see [`crate::group`]).
    fn group_committed(&self, _members: usize) {}
}

/// An observer that ignores everything.
#[derive(Debug, Default)]
pub struct NoObserver;

impl Observer for NoObserver {}

/// The last measurement of the due work's backlog, shared by every clone of a platform (see
/// [`crate::backlog`]).
#[derive(Debug, Default)]
pub(crate) struct BacklogGate {
    /// The charges' pressure at the last measurement: microseconds the oldest due charge had
    /// waited, or the due charges' predicted wait if longer.
    pub(crate) charges_micros: AtomicI64,
    /// Microseconds the oldest due payout had waited at the last measurement.
    pub(crate) payouts_micros: AtomicI64,
    /// Whether new charges are refused (and with them new payouts).
    pub(crate) refusing: AtomicBool,
    /// Whether new payouts are refused for their own backlog.
    pub(crate) refusing_payouts: AtomicBool,
    /// How fast due charges drain, as measured so far.
    pub(crate) drain: Mutex<crate::drain::Drain>,
    /// Charges this instance's workers have claimed since it started.
    pub(crate) claimed: AtomicU64,
    /// Charges due now or within the bound at the last measurement.
    pub(crate) due: AtomicU64,
    /// Charges this instance admitted since the last measurement (which may not count them).
    pub(crate) admitted: AtomicU64,
    /// The drain rate of the last measurement, charges a second (`f64` bits).
    pub(crate) rate_bits: AtomicU64,
}

/// Everything the use cases share.
#[derive(Clone)]
pub(crate) struct Core {
    pub(crate) store: Arc<dyn Store>,
    pub(crate) countries: Arc<Countries>,
    pub(crate) hasher: Arc<SecretHasher>,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) config: ServiceConfig,
    pub(crate) observer: Arc<dyn Observer>,
    pub(crate) cipher: Arc<SecretCipher>,
    pub(crate) webhooks: WebhookConfig,
    pub(crate) backlog: Arc<BacklogGate>,
    /// Argon2id hashing of people's passwords (the console), when configured.
    pub(crate) passwords: Option<Arc<Passwords>>,
}

impl Core {
    pub(crate) fn new(
        store: Arc<dyn Store>,
        countries: Arc<Countries>,
        hasher: Arc<SecretHasher>,
        clock: Arc<dyn Clock>,
        config: ServiceConfig,
    ) -> Self {
        Core {
            store,
            countries,
            hasher,
            clock,
            config,
            observer: Arc::new(NoObserver),
            cipher: Arc::new(SecretCipher::ephemeral()),
            webhooks: WebhookConfig::default(),
            backlog: Arc::default(),
            passwords: None,
        }
    }

    /// The store as a trait object.
    pub(crate) fn store(&self) -> &dyn Store {
        self.store.as_ref()
    }

    /// The time now.
    pub(crate) fn now(&self) -> Timestamp {
        self.clock.now()
    }

    /// The configured country with this code.
    ///
    /// # Errors
    /// [`ServiceError::Internal`] when an organisation names a country no longer configured.
    pub(crate) fn country(&self, code: &str) -> Result<&Country, ServiceError> {
        self.countries.get(code).ok_or_else(|| ServiceError::Internal(format!("country {code} is not configured")))
    }

    /// The country of a number a command carries (parsed, so of a served country).
    ///
    /// # Errors
    /// [`ServiceError::Internal`] when no served country has it (a command parsed elsewhere).
    pub(crate) fn country_of(&self, msisdn: &Msisdn) -> Result<&Country, ServiceError> {
        self.countries.for_msisdn(msisdn).map_err(|e| ServiceError::Internal(format!("{msisdn}: {e}")))
    }

    /// Tells the observer which states charges entered (after the transaction committed).
    pub(crate) fn report(&self, entered: &[ChargeState]) {
        for s in entered {
            self.observer.charge_entered(*s);
        }
    }
}

/// The id of an organisation's account of a kind in a mode.
///
/// # Errors
/// [`ServiceError::Internal`] when the organisation has no such account; storage failures.
pub(crate) fn org_account_id(
    tx: &mut (impl LedgerRepo + ?Sized),
    org_id: &OrgId,
    mode: Mode,
    kind: AccountKind,
) -> Result<AccountId, ServiceError> {
    tx.account_id(&AccountKey::Org { org_id: org_id.clone(), mode, kind })?.ok_or_else(|| no_org_account(org_id, mode, kind))
}

/// What an organisation missing an account of a kind (opened with it, so never missing) is.
pub(crate) fn no_org_account(org_id: &OrgId, mode: Mode, kind: AccountKind) -> ServiceError {
    ServiceError::Internal(format!("organisation {org_id} has no {mode} {kind} account"))
}

/// The platform's account of a kind (revenue, issuance, sandbox funding) in a mode and currency.
///
/// # Errors
/// [`ServiceError::Internal`] when it is missing (the migrations open one per served currency).
pub(crate) fn system_account(
    tx: &mut (impl LedgerRepo + ?Sized),
    mode: Mode,
    currency: Currency,
    kind: AccountKind,
) -> Result<AccountId, ServiceError> {
    tx.account_id(&AccountKey::System { mode, currency, kind })?
        .ok_or_else(|| ServiceError::Internal(format!("no {kind} account for {mode} {currency}")))
}

/// The name of an organisation shown to customers ("Merchant" when it is gone).
///
/// # Errors
/// Storage failures.
pub(crate) fn payee_name(tx: &mut (impl AuthRepo + ?Sized), org_id: &OrgId) -> Result<String, ServiceError> {
    Ok(tx.org_name(org_id)?.unwrap_or_else(|| "Merchant".to_owned()))
}
