//! The application's front door: one cheap, cloneable handle that owns the shared core and
//! hands out each feature's use cases. Callers (HTTP handlers, the web console, workers, the CLI)
//! write `platform.charges().create(..)`, with a command from `platform.parse(..)`; nothing else
//! of the core is public.

use std::sync::Arc;

use malipo_auth::{Passwords, Principal, SecretHasher};
use malipo_core::{Clock, Timestamp};
use malipo_countries::Countries;
use malipo_webhooks::SecretCipher;

use crate::access::Access;
use crate::accounts::Accounts;
use crate::agents::Agents;
use crate::back_office::BackOffice;
use crate::backlog::Backlog;
use crate::charges::Charges;
use crate::commands::{Command, ParseContext};
use crate::config::{ServiceConfig, WebhookConfig};
use crate::core::{Core, Observer};
use crate::error::ServiceError;
use crate::housekeeping::Housekeeping;
use crate::payment_requests::PaymentRequests;
use crate::payouts::bulk::BulkPayouts;
use crate::payouts::worker::PayoutProcessing;
use crate::payouts::Payouts;
use crate::people::People;
use crate::ports::Store;
use crate::processing::Processing;
use crate::profile::Profiles;
use crate::reversals::Reversals;
use crate::sandbox::Sandbox;
use crate::sealer::Sealer;
use crate::transactions::Transactions;
use crate::transfers::Transfers;
use crate::ussd::Ussd;
use crate::wallets::Wallets;
use crate::webhooks::{Deliveries, Webhooks};

/// Everything the use cases need, behind one handle. Cloning shares it.
#[derive(Clone)]
pub struct Platform {
    core: Arc<Core>,
}

impl Platform {
    /// Assembles a platform (no observer, an ephemeral secret cipher and default
    /// webhook tunables until told otherwise).
    pub fn new(
        store: Arc<dyn Store>,
        countries: Arc<Countries>,
        hasher: Arc<SecretHasher>,
        clock: Arc<dyn Clock>,
        config: ServiceConfig,
    ) -> Self {
        Platform { core: Arc::new(Core::new(store, countries, hasher, clock, config)) }
    }

    fn with(&self, change: impl FnOnce(&mut Core)) -> Self {
        let mut core = Core::clone(&self.core);
        change(&mut core);
        Platform { core: Arc::new(core) }
    }

    /// The same platform (sharing everything else, the backlog gate and caches included) on
    /// another store: the app gives its background work a connection pool of its own.
    #[must_use]
    pub fn with_store(self, store: Arc<dyn Store>) -> Self {
        self.with(|c| c.store = store)
    }

    /// The same platform with a metrics hook.
    #[must_use]
    pub fn with_observer(self, observer: Arc<dyn Observer>) -> Self {
        self.with(|c| c.observer = observer)
    }

    /// The same platform with the secret cipher and the delivery tunables.
    #[must_use]
    pub fn with_webhooks(self, cipher: SecretCipher, webhooks: WebhookConfig) -> Self {
        self.with(|c| {
            c.cipher = Arc::new(cipher);
            c.webhooks = webhooks;
        })
    }

    /// The same platform with Argon2id hashing of people's passwords (the console's sign-in).
    #[must_use]
    pub fn with_passwords(self, passwords: Arc<Passwords>) -> Self {
        self.with(|c| c.passwords = Some(passwords))
    }

    /// The store (for readiness checks, operator commands and tests).
    pub fn store(&self) -> &dyn Store {
        self.core.store()
    }

    /// The time now, by the platform's clock.
    pub fn now(&self) -> Timestamp {
        self.core.now()
    }

    /// The country configuration.
    pub fn countries(&self) -> &Countries {
        &self.core.countries
    }

    /// Parses a front end's raw input into a use case's command, for `principal`'s request
    /// (see [`Command`]): `platform.parse::<CreateCharge>(&principal, &new)`.
    ///
    /// # Errors
    /// The command's: [`ServiceError::Validation`] with every field's problem, or
    /// [`ServiceError::NotFound`] for an id that names nothing.
    pub fn parse<C: Command>(&self, principal: &Principal, raw: &C::Raw) -> Result<C, ServiceError> {
        let core = &*self.core;
        C::parse(raw, &ParseContext::new(&core.countries, principal, &core.webhooks, &*core.clock))
    }

    /// The webhook delivery tunables.
    pub fn webhook_config(&self) -> &WebhookConfig {
        &self.core.webhooks
    }

    /// Organisations, credentials and bearer tokens.
    pub fn access(&self) -> Access<'_> {
        Access::new(&self.core)
    }

    /// Requests read back by their idempotency keys.
    pub fn recorded(&self) -> crate::recorded::Recorded<'_> {
        crate::recorded::Recorded::new(&self.core)
    }

    /// Accounts, balances, funding and ledger verification.
    pub fn accounts(&self) -> Accounts<'_> {
        Accounts::new(&self.core)
    }

    /// The background work's backlog, and admitting new charges and payouts by it.
    pub fn backlog(&self) -> Backlog<'_> {
        Backlog::new(&self.core)
    }

    /// People who use the console: invitations, sign-in, sessions, the team, the audit log.
    pub fn people(&self) -> People<'_> {
        People::new(&self.core)
    }

    /// The caller's organisation.
    pub fn profiles(&self) -> Profiles<'_> {
        Profiles::new(&self.core)
    }

    /// Charges.
    pub fn charges(&self) -> Charges<'_> {
        Charges::new(&self.core)
    }

    /// Transactions, their export and the daily reconciliation.
    pub fn transactions(&self) -> Transactions<'_> {
        Transactions::new(&self.core)
    }

    /// Transfers between an organisation's own accounts, and statements.
    pub fn transfers(&self) -> Transfers<'_> {
        Transfers::new(&self.core)
    }

    /// Merchant payment requests.
    pub fn payment_requests(&self) -> PaymentRequests<'_> {
        PaymentRequests::new(&self.core)
    }

    /// Payouts.
    pub fn payouts(&self) -> Payouts<'_> {
        Payouts::new(&self.core)
    }

    /// Bulk payouts with maker/checker.
    pub fn bulk_payouts(&self) -> BulkPayouts<'_> {
        BulkPayouts::new(&self.core)
    }

    /// The payout worker.
    pub fn payout_processing(&self) -> PayoutProcessing<'_> {
        PayoutProcessing::new(&self.core)
    }

    /// Reversals.
    pub fn reversals(&self) -> Reversals<'_> {
        Reversals::new(&self.core)
    }

    /// The charge worker.
    pub fn processing(&self) -> Processing<'_> {
        Processing::new(&self.core)
    }

    /// The sandbox helpers.
    pub fn sandbox(&self) -> Sandbox<'_> {
        Sandbox::new(&self.core)
    }

    /// Wallets (operator back office).
    pub fn wallets(&self) -> Wallets<'_> {
        Wallets::new(&self.core)
    }

    /// The operator's back office: organisations.
    pub fn back_office(&self) -> BackOffice<'_> {
        BackOffice::new(&self.core)
    }

    /// Agents.
    pub fn agents(&self) -> Agents<'_> {
        Agents::new(&self.core)
    }

    /// The USSD channel.
    pub fn ussd(&self) -> Ussd<'_> {
        Ussd::new(&self.core)
    }

    /// The webhook endpoints and events API.
    pub fn webhooks(&self) -> Webhooks<'_> {
        Webhooks::new(&self.core)
    }

    /// The webhook sender's use cases.
    pub fn deliveries(&self) -> Deliveries<'_> {
        Deliveries::new(&self.core)
    }

    /// The callback sender's use cases and the organisation's callback secret.
    pub fn callbacks(&self) -> crate::webhooks::Callbacks<'_> {
        crate::webhooks::Callbacks::new(&self.core)
    }

    /// Retention.
    pub fn housekeeping(&self) -> Housekeeping<'_> {
        Housekeeping::new(&self.core)
    }

    /// Sealing committed journals into their ledger's audit chain.
    pub fn sealer(&self) -> Sealer<'_> {
        Sealer::new(&self.core)
    }
}
