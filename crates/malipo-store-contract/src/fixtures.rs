//! Test data and store helpers used by the contract's cases. Public so that an adapter's own
//! tests can build the same data without anything else.
//!
//! Builders (`organisation`, `org_account`, `charge`, …) return values without touching a
//! store; `insert_*` helpers write them in one transaction and return them. Every helper
//! panics when the store fails: these are test helpers.

use std::collections::BTreeMap;
use std::fmt::Debug;

use malipo_auth::{AccessToken, Credential, OrgKind, Organisation, TOKEN_LIFETIME_SECONDS};
use malipo_charges::{Charge, ChargeKind, ChargeState, FailureReason};
use malipo_core::{AccountId, ChargeRef, Currency, EndpointId, EventId, MinorUnit, Mode, Msisdn, Timestamp};
use malipo_idempotency::{Fingerprint, IdempotencyKey, KeyScope};
use malipo_ledger::{chain_hash, verify, Account, AccountKind, Journal, JournalKind, JournalLine, LedgerError, GENESIS_HASH};
use malipo_service::{read, write, PostingQuery, ServiceError, StatementLine, Store, StoreError, Tx, UnsealedStats, Wallet, WalletState};
use malipo_webhooks::{Attempt, Delivery, DeliveryState, Endpoint, Event, EventFilter, Summary};

/// The contract's fixed "now": 2026-01-01T00:00:00Z.
pub const T0: Timestamp = Timestamp::from_micros(1_767_225_600_000_000);

/// [`T0`] plus `seconds` (negative for earlier).
pub fn at(seconds: i64) -> Timestamp {
    T0.plus_seconds(seconds)
}

/// Kenyan shillings.
pub const KES: Currency = Currency::KES;

/// Ugandan shillings (a second currency, for separate ledgers and mismatches).
pub fn ugx() -> Currency {
    Currency::new("UGX").expect("UGX is a currency code")
}

/// A phone number from its digits.
pub fn msisdn(digits: &str) -> Msisdn {
    Msisdn::parse(digits).expect("a valid MSISDN")
}

// ----- builders -----

/// A Kenyan merchant organisation named `name`, created at `created_at`.
pub fn organisation(name: &str, created_at: Timestamp) -> Organisation {
    Organisation { id: malipo_core::OrgId::new(), name: name.to_owned(), kind: OrgKind::Merchant, country: "KE".to_owned(), created_at }
}

/// An unrevoked credential of `org` in `mode` with the merchant's default scopes.
pub fn credential(org: &Organisation, mode: Mode, client_id: &str) -> Credential {
    Credential {
        client_id: client_id.to_owned(),
        org_id: org.id.clone(),
        mode,
        secret_hash: "$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHQ$c29tZWhhc2hzb21laGFzaA".to_owned(),
        scopes: OrgKind::Merchant.default_scopes(),
        created_at: at(0),
        revoked_at: None,
        created_by: None,
        last_used_at: None,
    }
}

/// A token digest (64 hex characters) derived from `seed`.
pub fn digest(seed: &str) -> String {
    malipo_auth::token_digest(seed)
}

/// An unrevoked token issued at [`T0`] to `credential`, stored under `digest`.
pub fn access_token(credential: &Credential, digest: &str) -> AccessToken {
    AccessToken {
        digest: digest.to_owned(),
        client_id: credential.client_id.clone(),
        org_id: credential.org_id.clone(),
        mode: credential.mode,
        scopes: credential.scopes.clone(),
        created_at: at(0),
        expires_at: at(TOKEN_LIFETIME_SECONDS),
        revoked_at: None,
    }
}

/// A new empty KES account of `org` of `kind` in `mode`, opened at `created_at`.
pub fn org_account(org: &Organisation, mode: Mode, kind: AccountKind, created_at: Timestamp) -> Account {
    Account::open(Some(org.id.clone()), mode, kind, KES, None, created_at)
}

/// A new empty platform account (revenue, issuance or sandbox funding), opened at [`T0`].
pub fn system_account(mode: Mode, currency: Currency, kind: AccountKind) -> Account {
    Account::open(None, mode, kind, currency, None, at(0))
}

/// A new empty wallet account of `owner`, opened at [`T0`].
pub fn wallet_account(mode: Mode, currency: Currency, owner: &Msisdn) -> Account {
    Account::open(None, mode, AccountKind::Wallet, currency, Some(owner.as_str().to_owned()), at(0))
}

/// An active tier-1 wallet on `account` (its mode and currency), without a PIN.
pub fn wallet(account: &Account, owner: &Msisdn) -> Wallet {
    Wallet {
        msisdn: owner.clone(),
        mode: account.mode,
        account_id: account.id.clone(),
        country: "KE".to_owned(),
        currency: account.currency,
        state: WalletState::Active,
        kyc_tier: 1,
        pin_hash: None,
        pin_attempts: 0,
        first_name: Some("Amina".to_owned()),
        last_name: Some("Otieno".to_owned()),
        id_type: None,
        id_number: None,
        date_of_birth: None,
        lock_reason: None,
        created_at: at(0),
        updated_at: at(0),
    }
}

/// A new pending charge of `amount` (fee 1 %) from `payer` into `merchant_account` (an
/// organisation's account: its organisation, mode and currency are the charge's), reference
/// `ORDER-1`, created at `created_at`, expiring and due 90 seconds later.
pub fn charge(merchant_account: &Account, payer: &Msisdn, amount: i64, created_at: Timestamp) -> Charge {
    Charge {
        id: ChargeRef::at(created_at),
        kind: ChargeKind::Charge,
        commission: MinorUnit::ZERO,
        org_id: merchant_account.org_id.clone().expect("a merchant account belongs to an organisation"),
        mode: merchant_account.mode,
        payer_msisdn: payer.clone(),
        amount: MinorUnit::new(amount),
        fee: MinorUnit::new(amount / 100),
        currency: merchant_account.currency,
        amount_reversed: MinorUnit::ZERO,
        reference: "ORDER-1".to_owned(),
        description: Some("Order 1".to_owned()),
        state: ChargeState::Pending,
        failure_reason: None,
        transaction_id: None,
        merchant_account: merchant_account.id.clone(),
        payer_account: None,
        created_at,
        updated_at: created_at,
        expires_at: created_at.plus_seconds(90),
        completed_at: None,
        next_action_at: Some(created_at.plus_seconds(90)),
    }
}

/// A new pending cash-out (`wd_…`) of `amount` from `customer` into `float` (an organisation's
/// account), with a fee of 2 % of which the agent's commission is half.
pub fn cash_out(float: &Account, customer: &Msisdn, amount: i64, created_at: Timestamp) -> Charge {
    Charge {
        id: ChargeRef::from_trusted(malipo_core::WithdrawalRef::new().into_string()),
        kind: ChargeKind::CashOut,
        fee: MinorUnit::new(amount / 50),
        commission: MinorUnit::new(amount / 100),
        reference: "WITHDRAWAL".to_owned(),
        description: None,
        ..charge(float, customer, amount, created_at)
    }
}

/// `charge` moved to `state` with the fields the databases tie to the state (their check
/// constraints): final states have no `next_action_at`; declined, expired and failed charges a
/// failure reason (declined by customer, expired, insufficient funds); pending and authorised
/// ones none. A completed charge needs its posted journal: use [`completed`].
pub fn in_state(charge: Charge, state: ChargeState) -> Charge {
    let failure_reason = match state {
        ChargeState::Pending | ChargeState::Authorised => None,
        ChargeState::Declined => Some(FailureReason::DeclinedByCustomer),
        ChargeState::Expired => Some(FailureReason::Expired),
        ChargeState::Failed => Some(FailureReason::InsufficientFunds),
        ChargeState::Completed => {
            panic!("a completed charge needs its journal: use fixtures::completed")
        }
    };
    let next_action_at = if state.is_final() { None } else { charge.next_action_at.or(Some(charge.expires_at)) };
    Charge { state, failure_reason, next_action_at, ..charge }
}

/// `charge` completed at `when` by the posted `journal`.
pub fn completed(charge: Charge, journal: &Journal, when: Timestamp) -> Charge {
    Charge {
        state: ChargeState::Completed,
        failure_reason: None,
        transaction_id: Some(journal.id.clone()),
        updated_at: when,
        completed_at: Some(when),
        next_action_at: None,
        ..charge
    }
}

/// A balanced journal with `lines` of `(account, signed amount)`, source `src_test`.
pub fn journal(mode: Mode, currency: Currency, kind: JournalKind, lines: &[(&AccountId, i64)], created_at: Timestamp) -> Journal {
    let lines =
        lines.iter().map(|(account, amount)| JournalLine { account: (*account).clone(), amount: MinorUnit::new(*amount) }).collect();
    Journal::new(mode, currency, kind, "src_test", lines, created_at).expect("a balanced journal")
}

/// A `funding` journal moving `amount` from `from` to `to`, both of `mode` and `currency`.
pub fn transfer(mode: Mode, currency: Currency, from: &AccountId, to: &AccountId, amount: i64, created_at: Timestamp) -> Journal {
    journal(mode, currency, JournalKind::Funding, &[(from, -amount), (to, amount)], created_at)
}

/// The idempotency scope of `org_id` in `mode` for `operation`.
pub fn key_scope(org: &Organisation, mode: Mode, operation: &str) -> KeyScope {
    KeyScope { org_id: org.id.clone(), mode, operation: operation.to_owned() }
}

/// An idempotency key (panics when invalid).
pub fn idem_key(key: &str) -> IdempotencyKey {
    IdempotencyKey::parse(key).expect("a valid idempotency key")
}

/// The fingerprint of a `POST /partner/stk` with `body`.
pub fn fingerprint(body: &str) -> Fingerprint {
    Fingerprint::of("POST", "/partner/stk", body.as_bytes())
}

/// A stored key: the fingerprint of `body` and a snapshot `{}`, created at `t`.
pub fn key_record(body: &str, t: Timestamp) -> malipo_idempotency::IdempotencyRecord {
    malipo_idempotency::IdempotencyRecord {
        fingerprint: fingerprint(body),
        outcome: Some(malipo_idempotency::Outcome::Snapshot(b"{}".to_vec())),
        created_at: t,
    }
}

/// An enabled webhook endpoint of `org` in `mode` receiving every event, registered at
/// `created_at`, with a sealed secret of arbitrary bytes and no previous secret.
pub fn endpoint(org: &Organisation, mode: Mode, created_at: Timestamp) -> Endpoint {
    Endpoint {
        id: EndpointId::new(),
        org_id: org.id.clone(),
        mode,
        url: "https://hooks.example.com/malipo".to_owned(),
        description: Some("Orders".to_owned()),
        events: EventFilter::All,
        enabled: true,
        secret: b"sealed\x00\x01\xfe\xff secret ".to_vec(),
        previous_secret: None,
        disabled_reason: None,
        failing_since: None,
        deleted_at: None,
        created_at,
        updated_at: created_at,
    }
}

/// An event of `kind` about a new charge of `org` in `mode`, created at `created_at`, with a
/// JSON `data` and a full summary.
pub fn event(org: &Organisation, mode: Mode, kind: &str, created_at: Timestamp) -> Event {
    let object_id = ChargeRef::new().into_string();
    Event {
        id: EventId::new(),
        org_id: org.id.clone(),
        mode,
        kind: kind.to_owned(),
        data: format!("{{\"id\":\"{object_id}\",\"amount\":\"250.00\",\"currency\":\"KES\",\"state\":\"completed\"}}").into_bytes(),
        object_id,
        summary: Summary {
            amount: Some("250.00".to_owned()),
            currency: Some("KES".to_owned()),
            state: Some("completed".to_owned()),
            reference: Some("ORDER-1".to_owned()),
        },
        created_at,
    }
}

/// A new delivery id: `dlv_` and a UUIDv7, so time-ordered like the service's.
pub fn delivery_id() -> String {
    let charge = ChargeRef::new();
    format!("dlv_{}", charge.as_str().trim_start_matches(ChargeRef::PREFIX))
}

/// A pending delivery of `event` to `endpoint` without attempts, created with the event, due at
/// `due`.
pub fn delivery(event: &Event, endpoint: &Endpoint, due: Timestamp) -> Delivery {
    Delivery {
        id: delivery_id(),
        event_id: event.id.clone(),
        endpoint_id: endpoint.id.clone(),
        state: DeliveryState::Pending,
        attempts: 0,
        next_attempt_at: Some(due),
        created_at: event.created_at,
        updated_at: event.created_at,
    }
}

/// `delivery` settled (succeeded or failed) at `when` after `attempts` attempts: no next attempt.
pub fn settled(delivery: Delivery, state: DeliveryState, attempts: u32, when: Timestamp) -> Delivery {
    assert_ne!(state, DeliveryState::Pending, "a settled delivery is not pending");
    Delivery { state, attempts, next_attempt_at: None, updated_at: when, ..delivery }
}

/// An attempt of `delivery` at `attempted_at` taking `latency_ms`: answered with `status`,
/// and/or failed with `error`.
pub fn attempt(delivery: &Delivery, attempted_at: Timestamp, status: Option<u16>, error: Option<&str>, latency_ms: u32) -> Attempt {
    Attempt {
        delivery_id: delivery.id.clone(),
        event_id: delivery.event_id.clone(),
        endpoint_id: delivery.endpoint_id.clone(),
        attempted_at,
        status,
        latency_ms,
        error: error.map(str::to_owned),
    }
}

// ----- running transactions -----

/// Runs `f` as a write transaction; panics when it fails.
#[track_caller]
pub fn commit<T>(store: &dyn Store, f: impl FnMut(&mut dyn Tx) -> Result<T, ServiceError>) -> T {
    match write(store, f) {
        Ok(v) => v,
        Err(e) => panic!("write transaction failed: {e:?}"),
    }
}

/// Runs `f` as a read transaction; panics when it fails.
#[track_caller]
pub fn query<T>(store: &dyn Store, f: impl FnMut(&mut dyn Tx) -> Result<T, ServiceError>) -> T {
    match read(store, f) {
        Ok(v) => v,
        Err(e) => panic!("read transaction failed: {e:?}"),
    }
}

/// Runs `f` outside any transaction ([`Store::autocommit`]: each statement commits on its own);
/// panics when it fails.
#[track_caller]
pub fn autocommit<T>(store: &dyn Store, f: impl FnMut(&mut dyn Tx) -> Result<T, ServiceError>) -> T {
    match malipo_service::autocommit(store, f) {
        Ok(v) => v,
        Err(e) => panic!("statements outside a transaction failed: {e:?}"),
    }
}

/// Runs `f` as a write transaction that must fail, and returns its error.
#[track_caller]
pub fn refused<T: Debug>(store: &dyn Store, f: impl FnMut(&mut dyn Tx) -> Result<T, ServiceError>) -> ServiceError {
    match write(store, f) {
        Ok(v) => panic!("the transaction should have failed but returned {v:?}"),
        Err(e) => e,
    }
}

// ----- inserting data -----

/// Inserts [`organisation`]`(name, created_at)`.
#[track_caller]
pub fn insert_org(store: &dyn Store, name: &str, created_at: Timestamp) -> Organisation {
    let org = organisation(name, created_at);
    commit(store, |tx| Ok(tx.insert_org(&org)?));
    org
}

/// Inserts `account` and returns it.
#[track_caller]
pub fn insert_account(store: &dyn Store, account: Account) -> Account {
    commit(store, |tx| Ok(tx.insert_account(&account)?));
    account
}

/// A merchant with its KES collection and payout accounts in one mode.
#[derive(Clone, Debug)]
pub struct Merchant {
    /// The organisation.
    pub org: Organisation,
    /// Its collection account.
    pub collection: Account,
    /// Its payout account.
    pub payout: Account,
}

/// Inserts a merchant organisation named `name` with its collection and payout accounts in `mode`.
#[track_caller]
pub fn insert_merchant(store: &dyn Store, name: &str, mode: Mode) -> Merchant {
    let org = organisation(name, at(0));
    let collection = org_account(&org, mode, AccountKind::Collection, at(0));
    let payout = org_account(&org, mode, AccountKind::Payout, at(0));
    commit(store, |tx| {
        tx.insert_org(&org)?;
        tx.insert_account(&collection)?;
        tx.insert_account(&payout)?;
        Ok(())
    });
    Merchant { org, collection, payout }
}

/// The platform's accounts of one mode and currency.
#[derive(Clone, Debug)]
pub struct Platform {
    /// Fee revenue.
    pub revenue: Account,
    /// E-money issuance (may go negative).
    pub issuance: Account,
    /// Sandbox funding (may go negative).
    pub sandbox_funding: Account,
}

/// Inserts the platform's revenue, issuance and sandbox funding accounts of `mode` and `currency`.
#[track_caller]
pub fn insert_platform(store: &dyn Store, mode: Mode, currency: Currency) -> Platform {
    let p = Platform {
        revenue: system_account(mode, currency, AccountKind::Revenue),
        issuance: system_account(mode, currency, AccountKind::Issuance),
        sandbox_funding: system_account(mode, currency, AccountKind::SandboxFunding),
    };
    commit(store, |tx| {
        tx.insert_account(&p.revenue)?;
        tx.insert_account(&p.issuance)?;
        tx.insert_account(&p.sandbox_funding)?;
        Ok(())
    });
    p
}

/// Inserts a wallet account and its [`wallet`] for `owner`; returns both.
#[track_caller]
pub fn insert_wallet(store: &dyn Store, mode: Mode, currency: Currency, owner: &Msisdn) -> (Account, Wallet) {
    let account = wallet_account(mode, currency, owner);
    let w = wallet(&account, owner);
    commit(store, |tx| {
        tx.insert_account(&account)?;
        tx.insert_wallet(&w)?;
        Ok(())
    });
    (account, w)
}

/// Inserts `charge` and returns it.
#[track_caller]
pub fn insert_charge(store: &dyn Store, charge: Charge) -> Charge {
    commit(store, |tx| Ok(tx.insert_charge(&charge)?));
    charge
}

/// Posts `journal` in its own transaction and returns it.
#[track_caller]
pub fn post(store: &dyn Store, journal: Journal) -> Journal {
    commit(store, |tx| Ok(tx.post_journal(&journal)?));
    journal
}

/// Inserts `endpoint` and returns it.
#[track_caller]
pub fn insert_endpoint(store: &dyn Store, endpoint: Endpoint) -> Endpoint {
    commit(store, |tx| Ok(tx.insert_endpoint(&endpoint)?));
    endpoint
}

/// Inserts `event` and returns it.
#[track_caller]
pub fn insert_event(store: &dyn Store, event: Event) -> Event {
    commit(store, |tx| Ok(tx.insert_event(&event)?));
    event
}

/// Inserts `delivery` and returns it.
#[track_caller]
pub fn insert_delivery(store: &dyn Store, delivery: Delivery) -> Delivery {
    commit(store, |tx| Ok(tx.insert_delivery(&delivery)?));
    delivery
}

/// Appends `attempt` and returns it.
#[track_caller]
pub fn insert_attempt(store: &dyn Store, attempt: Attempt) -> Attempt {
    commit(store, |tx| Ok(tx.insert_attempts(std::slice::from_ref(&attempt))?));
    attempt
}

// ----- reading back -----

/// The stored account `id` (panics when absent).
#[track_caller]
pub fn account(store: &dyn Store, id: &AccountId) -> Account {
    query(store, |tx| Ok(tx.account(id)?)).unwrap_or_else(|| panic!("account {id} should exist"))
}

/// The stored balance of account `id`.
#[track_caller]
pub fn balance(store: &dyn Store, id: &AccountId) -> i64 {
    account(store, id).balance.get()
}

/// The stored reservations of account `id`.
#[track_caller]
pub fn held(store: &dyn Store, id: &AccountId) -> i64 {
    account(store, id).held.get()
}

/// How many journals the store holds (all modes).
#[track_caller]
pub fn journal_count(store: &dyn Store) -> usize {
    query(store, |tx| Ok(tx.ledger_snapshot(None)?)).journals.len()
}

/// Seals every committed journal not yet in its chain, as the sealer would; returns how many.
#[track_caller]
pub fn seal(store: &dyn Store) -> usize {
    let mut total = 0;
    loop {
        let n = commit(store, |tx| Ok(tx.seal_pending(500)?));
        total += n;
        if n < 500 {
            return total;
        }
    }
}

/// Applies every line waiting on a hot account, as the sealer's pass does; returns how many.
#[track_caller]
pub fn apply_waiting(store: &dyn Store) -> usize {
    let accounts = query(store, |tx| Ok(tx.waiting_accounts(usize::MAX)?));
    accounts.iter().map(|a| commit(store, |tx| Ok(tx.apply_waiting(a)?))).sum()
}

/// Every posting of an account, in ledger order.
#[track_caller]
pub fn postings_of(store: &dyn Store, account: &AccountId) -> Vec<StatementLine> {
    query(store, |tx| Ok(tx.account_postings(&PostingQuery::oldest_first(account.clone(), 1_000_000))?))
}

/// Each posting's `balance_after` is the one before plus its amount (from zero), its time is
/// never before the one before, and the last is the account's balance: the running balance of
/// an account is one, in ledger order.
#[track_caller]
pub fn assert_running_balance(store: &dyn Store, account: &Account) {
    let mut running = 0_i64;
    let mut last_time = Timestamp::from_micros(i64::MIN);
    for line in postings_of(store, &account.id) {
        running += line.posting.amount.get();
        assert_eq!(line.posting.balance_after.get(), running, "balance_after of posting {} on {}", line.seq, account.id);
        assert!(line.posting.created_at >= last_time, "posting {} on {} is stamped before the one before it", line.seq, account.id);
        last_time = line.posting.created_at;
    }
    assert_eq!(running, account.balance.get(), "the last balance_after of {} is its balance", account.id);
}

/// Seals what is pending ([`seal`], as the sealer does after every commit), then checks the
/// whole ledger: `malipo_ledger::verify` finds nothing, no journal is left unsealed, and in each
/// ledger (mode + currency) the journals have `seq` 1..n, each `prev_hash` is the previous
/// journal's hash ([`GENESIS_HASH`] first) and each hash is `chain_hash` of the journal as stored.
/// Then applies every waiting line, checks the ledger again, and checks each account's running
/// balance ([`assert_running_balance`]).
#[track_caller]
pub fn assert_ledger_sound(store: &dyn Store) {
    seal(store);
    let snapshot = query(store, |tx| Ok(tx.ledger_snapshot(None)?));
    let violations = verify(&snapshot);
    assert!(violations.is_empty(), "ledger violations: {violations:?}");
    apply_waiting(store);
    assert!(query(store, |tx| Ok(tx.waiting_accounts(1)?)).is_empty(), "no line waits once applied");
    let applied = query(store, |tx| Ok(tx.ledger_snapshot(None)?));
    assert!(verify(&applied).is_empty(), "ledger violations once applied: {:?}", verify(&applied));
    assert_eq!(applied.accounts, snapshot.accounts, "applying moves no balance");
    assert_eq!(applied.journals, snapshot.journals, "applying changes no journal");
    for account in &applied.accounts {
        assert_running_balance(store, account);
    }
    assert_eq!(snapshot.unsealed(), 0, "every journal is sealed");
    assert_eq!(query(store, |tx| Ok(tx.unsealed_stats()?)), UnsealedStats::default());
    let mut chains: BTreeMap<(Mode, Currency), Vec<_>> = BTreeMap::new();
    for cj in &snapshot.journals {
        let link = cj.link.as_ref().expect("sealed");
        chains.entry((cj.journal.mode, cj.journal.currency)).or_default().push((link, &cj.journal));
    }
    for ((mode, currency), mut chain) in chains {
        chain.sort_by_key(|(link, _)| link.seq);
        let mut prev = GENESIS_HASH.to_owned();
        for (i, (link, journal)) in chain.iter().enumerate() {
            let seq = i64::try_from(i).expect("small") + 1;
            assert_eq!(link.seq, seq, "{mode}/{currency}: seq of journal {}", journal.id);
            assert_eq!(link.prev_hash, prev, "{mode}/{currency}: prev_hash of seq {seq}");
            assert_eq!(link.hash, chain_hash(&link.prev_hash, link.seq, journal), "{mode}/{currency}: hash of seq {seq}");
            prev.clone_from(&link.hash);
        }
    }
}

/// The error a transaction ends with when the store refused a duplicate.
pub fn duplicate() -> ServiceError {
    ServiceError::Store(StoreError::Duplicate)
}

/// The error a transaction ends with when the ledger refused.
pub fn ledger_error(e: LedgerError) -> ServiceError {
    ServiceError::Store(StoreError::Ledger(e))
}
