//! The world of a test: a platform over [`MemoryStore`] whose clock is a mock that reads a
//! shared instant, organisations with credentials, and idempotency keys.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;

use malipo_auth::{OrgKind, Principal, SecretHasher};
use malipo_charges::Charge;
use malipo_core::{Clock, Mode, Timestamp};
use malipo_countries::Countries;
use malipo_idempotency::{Fingerprint, IdempotencyKey, KeyScope};
use malipo_service::{
    happened, AgentCash, CashIn, CreateCharge, Done, Happened, Idem, NewAgentCash, NewCharge, NewPin, NewSimulation, NewWallet,
    NewWalletLock, OpenWallet, Platform, ServiceConfig, ServiceError, SetPin, Simulate, UssdRequest, WalletDetails, WalletLock,
    WebhookConfig,
};
use malipo_store_memory::MemoryStore;
use malipo_webhooks::SecretCipher;

mockall::mock! {
    /// The clock port, as a mock.
    Clock {}
    impl Clock for Clock {
        fn now(&self) -> Timestamp;
    }
}

/// 2026-11-24T09:00:00Z (12:00 in Nairobi).
pub(crate) const START: i64 = 1_795_510_800;

pub(crate) struct World {
    pub(crate) platform: Platform,
    micros: Arc<AtomicI64>,
}

impl World {
    pub(crate) fn new() -> Self {
        Self::with_config(ServiceConfig { payout_settle_chunk: 8, charge_settle_chunk: 8, ..ServiceConfig::default() })
    }

    /// A world with these tunables.
    pub(crate) fn with_config(config: ServiceConfig) -> Self {
        let micros = Arc::new(AtomicI64::new(START * 1_000_000));
        let mut clock = MockClock::new();
        let read = Arc::clone(&micros);
        clock.expect_now().returning(move || Timestamp::from_micros(read.load(Ordering::SeqCst)));
        let platform = Platform::new(
            Arc::new(MemoryStore::new()),
            Arc::new(Countries::builtin().unwrap()),
            // The cheapest parameters Argon2 allows: these tests are about rules, not hashing.
            Arc::new(SecretHasher::with_params([7; 32], 8, 1, 1).unwrap()),
            Arc::new(clock),
            config,
        )
        .with_webhooks(SecretCipher::ephemeral(), WebhookConfig::default())
        // Cheap Argon2id parameters, for the same reason.
        .with_passwords(Arc::new(malipo_auth::Passwords::with_params(8, 1, 1).unwrap()));
        platform.access().ensure_system_accounts().unwrap();
        World { platform, micros }
    }

    /// `who`'s events (of `kind`, or all) as the store holds them, oldest first, each with
    /// what it reports decoded from its snapshot.
    pub(crate) fn happened(&self, who: &Principal, kind: Option<&str>) -> Vec<(String, Happened)> {
        let mut events = self.platform.webhooks().events(who, kind, None, 100).unwrap().data;
        assert!(events.len() < 100, "one page holds them all");
        events.sort_by(|a, b| a.id.as_str().cmp(b.id.as_str()));
        events.into_iter().map(|e| (e.kind.clone(), happened(&e).expect("a snapshot"))).collect()
    }

    pub(crate) fn now(&self) -> Timestamp {
        self.platform.now()
    }

    /// Seals what is pending (as the sealer loop does after every commit), then verifies the
    /// ledger (of one mode, or both), chain entries included.
    pub(crate) fn verified_ledger(&self, mode: Option<Mode>) -> Vec<malipo_ledger::Violation> {
        self.platform.sealer().seal_all().unwrap();
        let check = self.platform.accounts().check_ledger(mode).unwrap();
        assert_eq!(check.unsealed, 0, "every journal sealed");
        check.violations
    }

    pub(crate) fn advance(&self, seconds: i64) {
        self.micros.fetch_add(seconds * 1_000_000, Ordering::SeqCst);
    }

    /// A new organisation of `kind` in Kenya, signed in with a credential of `mode`.
    pub(crate) fn org(&self, kind: OrgKind, mode: Mode) -> Principal {
        let access = self.platform.access();
        let test = access.create_org("Duka Letu", kind, "KE").unwrap();
        let credential = match mode {
            Mode::Test => test,
            Mode::Live => access.issue_credential(&test.org_id, Mode::Live, None).unwrap(),
        };
        let token = access.issue_token(&credential.client_id, &credential.client_secret, None).unwrap();
        access.authenticate(&token.access_token).unwrap()
    }

    /// Another credential of `principal`'s organisation with these scopes, signed in.
    pub(crate) fn colleague(&self, principal: &Principal, scopes: &str) -> Principal {
        let access = self.platform.access();
        let scopes = malipo_auth::Scopes::parse(scopes).unwrap();
        let credential = access.issue_credential(&principal.org_id, principal.mode, Some(scopes)).unwrap();
        let token = access.issue_token(&credential.client_id, &credential.client_secret, None).unwrap();
        access.authenticate(&token.access_token).unwrap()
    }

    /// A charge created (and its id), or the creation's error.
    pub(crate) fn charge(&self, merchant: &Principal, payer: &str, amount: &str) -> Result<Charge, ServiceError> {
        let new = NewCharge {
            payer_msisdn: payer.into(),
            amount: amount.into(),
            currency: None,
            reference: format!("ORDER-{}", next()),
            description: None,
        };
        let charge: CreateCharge = self.platform.parse(merchant, &new)?;
        let outcome = self.platform.charges().create(merchant, &charge, &idem(merchant, "POST /partner/stk"))?;
        let id = outcome.value.id.to_string();
        Ok(self.platform.charges().get(merchant, &id).unwrap())
    }

    /// The sandbox's customer answers a test charge with `action` (under a key of `operation`).
    pub(crate) fn simulate(&self, shop: &Principal, charge_ref: &str, action: &str, operation: &str) -> Result<Done<Charge>, ServiceError> {
        let simulation: Simulate = self.platform.parse(shop, &NewSimulation { charge_ref: charge_ref.into(), action: action.into() })?;
        self.platform.sandbox().simulate(shop, &simulation, &idem(shop, operation))
    }

    /// Opens a wallet (operator).
    pub(crate) fn open_wallet(&self, operator: &Principal, new: &NewWallet) -> Result<Done<WalletDetails>, ServiceError> {
        let wallet: OpenWallet = self.platform.parse(operator, new)?;
        self.platform.wallets().open(operator, &wallet, &idem(operator, "POST /wallets"))
    }

    /// Sets a wallet's first PIN (operator).
    pub(crate) fn set_pin(&self, operator: &Principal, msisdn: &str, pin: &str) -> Result<Done<WalletDetails>, ServiceError> {
        let new = NewPin { msisdn: msisdn.into(), new_pin: pin.into(), current_pin: None };
        let pin: SetPin = self.platform.parse(operator, &new)?;
        self.platform.wallets().set_pin(operator, &pin, &idem(operator, "POST /wallets/pin"))
    }

    /// Locks a wallet (operator).
    pub(crate) fn lock_wallet(&self, operator: &Principal, msisdn: &str, reason: &str) -> Result<Done<WalletDetails>, ServiceError> {
        let lock: WalletLock = self.platform.parse(operator, &NewWalletLock { msisdn: msisdn.into(), reason: reason.into() })?;
        self.platform.wallets().lock(operator, &lock, &idem(operator, "POST /wallets/lock"))
    }

    /// An agent's cash-in.
    pub(crate) fn cash_in(&self, agent: &Principal, msisdn: &str, amount: &str) -> Result<Done<CashIn>, ServiceError> {
        let cash: AgentCash = self.platform.parse(agent, &NewAgentCash { customer_msisdn: msisdn.into(), amount: amount.into() })?;
        self.platform.agents().cash_in(agent, &cash, &idem(agent, "POST /agents/cash-in"))
    }

    /// The charge as it is now.
    pub(crate) fn reload(&self, merchant: &Principal, charge: &Charge) -> Charge {
        self.platform.charges().get(merchant, charge.id.as_str()).unwrap()
    }

    /// One USSD hop; returns the screen.
    pub(crate) fn dial(&self, gateway: &Principal, session: &str, msisdn: &str, text: &str) -> String {
        let req = UssdRequest {
            session_id: session.into(),
            service_code: "*334#".into(),
            phone_number: msisdn.into(),
            text: text.into(),
            network_code: None,
        };
        self.platform.ussd().handle(gateway, &req).unwrap()
    }
}

fn next() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// A fresh idempotency key for `operation`.
pub(crate) fn idem(principal: &Principal, operation: &str) -> Idem {
    let key = format!("key-{}", next());
    Idem {
        scope: KeyScope { org_id: principal.org_id.clone(), mode: principal.mode, operation: operation.into() },
        key: IdempotencyKey::parse(&key).unwrap(),
        fingerprint: Fingerprint::of("POST", operation, key.as_bytes()),
        actor: None,
        callback: None,
    }
}

/// A sandbox number (`254700…` with the sandbox's last four digits).
pub(crate) fn number(last4: &str) -> String {
    format!("2547{:04}{last4}", next() % 10_000)
}
