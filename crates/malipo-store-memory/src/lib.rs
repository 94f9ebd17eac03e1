//! An in-memory adapter of the storage port ([`malipo_service::Store`]), for fast domain and
//! service tests. It enforces what the SQL adapters' schema enforces: unique keys
//! ([`StoreError::Duplicate`]); the foreign keys (credential → organisation, token →
//! credential, account → organisation, wallet → account, charge → organisation and merchant
//! account, webhook endpoint and event → organisation, delivery → event and endpoint, attempt →
//! delivery, payout → organisation, payout account and batch, batch → organisation and payout
//! account, reversal → organisation and its charge or payout; user → organisation, credential,
//! invitation, recovery code, session and audit entry → user, audit entry and console settings
//! → organisation) and check constraints (accounts' holds; charges', payouts' and batches'
//! amounts and the fields tied to their state; a delivery's next attempt exactly while pending;
//! a person's second factor only with a secret and activation only with a password; an
//! invitation's and a session's times) as [`StoreError::Other`]; the
//! ledger's balance rules, through `malipo_ledger`'s own functions; and the audit chain of each
//! ledger (mode + currency).
//!
//! Transactions serialise: [`Store::run`] locks the whole store for the closure, runs it on a
//! copy of the tables and swaps the copy in only when the closure returns `Ok`, so a failed
//! closure leaves nothing behind. [`Store::read`] runs on the tables themselves and refuses
//! writes. A transaction opened on a store inside another transaction of the same store on the
//! same thread (which would deadlock) is refused with [`StoreError::Other`].
//!
//! Passes the shared `malipo-store-contract` suite (see `tests/contract.rs`).

mod repo;
mod state;
mod tx;

use std::cell::RefCell;
use std::sync::{Arc, Mutex, MutexGuard};

use malipo_service::{ServiceError, Store, StoreError, Tx};

use crate::state::State;
use crate::tx::MemoryTx;

/// How many times [`Store::run`] runs a closure that keeps failing with [`StoreError::Retry`].
pub const MAX_ATTEMPTS: usize = 5;

/// An in-memory database. Cloning gives another handle to the same data.
#[derive(Clone, Debug, Default)]
pub struct MemoryStore {
    state: Arc<Mutex<State>>,
}

thread_local! {
    /// The stores this thread is inside a transaction of (by address of their shared state).
    static ACTIVE: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
}

/// Marks this thread as inside a transaction of one store until dropped.
struct ActiveGuard(usize);

impl ActiveGuard {
    fn enter(id: usize) -> Result<Self, ServiceError> {
        let nested = ACTIVE.with(|a| {
            let mut a = a.borrow_mut();
            let nested = a.contains(&id);
            if !nested {
                a.push(id);
            }
            nested
        });
        if nested {
            Err(StoreError::Other("a transaction was opened inside another transaction of the same store".into()).into())
        } else {
            Ok(ActiveGuard(id))
        }
    }
}

impl Drop for ActiveGuard {
    fn drop(&mut self) {
        ACTIVE.with(|a| a.borrow_mut().retain(|id| *id != self.0));
    }
}

impl MemoryStore {
    /// A new, empty store.
    pub fn new() -> Self {
        MemoryStore::default()
    }

    /// Enters a transaction: refuses nesting, then takes the store's lock.
    fn begin(&self) -> Result<(ActiveGuard, MutexGuard<'_, State>), ServiceError> {
        let active = ActiveGuard::enter(Arc::as_ptr(&self.state) as usize)?;
        let state =
            self.state.lock().map_err(|_| StoreError::Other("the in-memory store's lock is poisoned (a transaction panicked)".into()))?;
        Ok((active, state))
    }
}

/// Whether `e` asks for the transaction to be run again.
fn is_retry(e: &ServiceError) -> bool {
    matches!(e, ServiceError::Store(StoreError::Retry))
}

impl Store for MemoryStore {
    fn run(&self, f: &mut dyn FnMut(&mut dyn Tx) -> Result<(), ServiceError>) -> Result<(), ServiceError> {
        let (_active, mut state) = self.begin()?;
        let mut attempt = 1;
        loop {
            let mut draft = state.clone();
            let mut tx = MemoryTx::new(&mut draft, false);
            // Writes queued by the closure are applied before the commit (or fail it).
            let done = f(&mut tx).and_then(|()| Ok(tx.flush_queued()?));
            match done {
                Ok(()) => {
                    *state = draft;
                    return Ok(());
                }
                Err(e) if is_retry(&e) && attempt < MAX_ATTEMPTS => attempt += 1,
                Err(e) => return Err(e),
            }
        }
    }

    fn read(&self, f: &mut dyn FnMut(&mut dyn Tx) -> Result<(), ServiceError>) -> Result<(), ServiceError> {
        let (_active, mut state) = self.begin()?;
        let mut attempt = 1;
        loop {
            match f(&mut MemoryTx::new(&mut state, true)) {
                Ok(()) => return Ok(()),
                Err(e) if is_retry(&e) && attempt < MAX_ATTEMPTS => attempt += 1,
                Err(e) => return Err(e),
            }
        }
    }

    fn query(&self, f: &mut dyn FnMut(&mut dyn Tx) -> Result<(), ServiceError>) -> Result<(), ServiceError> {
        self.read(f)
    }

    fn autocommit(&self, f: &mut dyn FnMut(&mut dyn Tx) -> Result<(), ServiceError>) -> Result<(), ServiceError> {
        // Statements that may write, outside a transaction: here one write transaction, which is
        // at least as strong.
        self.run(f)
    }

    fn ready(&self) -> Result<(), StoreError> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use malipo_core::{Mode, OrgId, Timestamp};
    use malipo_service::{read, write};

    fn org(name: &str) -> malipo_auth::Organisation {
        malipo_auth::Organisation {
            id: OrgId::new(),
            name: name.into(),
            kind: malipo_auth::OrgKind::Merchant,
            country: "KE".into(),
            created_at: Timestamp::from_micros(1),
        }
    }

    #[test]
    fn read_transactions_refuse_writes() {
        let store = MemoryStore::new();
        let o = org("a");
        let err = read(&store, |tx| {
            tx.insert_org(&o)?;
            Ok(())
        })
        .unwrap_err();
        assert!(matches!(err, ServiceError::Store(StoreError::Other(_))), "{err:?}");
        assert_eq!(read(&store, |tx| Ok(tx.org(&o.id)?)).unwrap(), None);
    }

    #[test]
    fn nested_transactions_are_refused_not_deadlocked() {
        let store = MemoryStore::new();
        let inner = store.clone();
        let err = write(&store, |_| {
            write(&inner, |_| Ok(()))?;
            Ok(())
        })
        .unwrap_err();
        assert!(matches!(err, ServiceError::Store(StoreError::Other(_))), "{err:?}");
        // Another store on the same thread is independent, and the guard was released.
        let other = MemoryStore::new();
        write(&store, |_| write(&other, |_| Ok(()))).unwrap();
    }

    #[test]
    fn foreign_keys_are_enforced() {
        let store = MemoryStore::new();
        let account = malipo_ledger::Account::open(
            Some(OrgId::new()),
            Mode::Test,
            malipo_ledger::AccountKind::Collection,
            malipo_core::Currency::KES,
            None,
            Timestamp::from_micros(1),
        );
        let err = write(&store, |tx| Ok(tx.insert_account(&account)?)).unwrap_err();
        assert!(matches!(err, ServiceError::Store(StoreError::Other(_))), "{err:?}");
    }

    #[test]
    fn check_constraints_are_enforced() {
        use malipo_charges::{Charge, ChargeState};
        use malipo_core::MinorUnit;
        use malipo_store_contract::fixtures::{at, charge, in_state, insert_merchant, insert_wallet, msisdn, KES};

        let store = MemoryStore::new();
        let m = insert_merchant(&store, "Duka", Mode::Test);
        let payer = msisdn("254712000099");
        let refused = |c: &Charge| write(&store, |tx| Ok(tx.insert_charge(c)?)).unwrap_err();
        let base = charge(&m.collection, &payer, 1_000, at(1));
        for bad in [
            Charge { state: ChargeState::Completed, next_action_at: None, ..base.clone() },
            Charge { state: ChargeState::Expired, next_action_at: None, ..base.clone() },
            Charge { next_action_at: None, ..base.clone() },
            Charge { fee: MinorUnit::new(1_001), ..base.clone() },
            Charge { amount_reversed: MinorUnit::new(-1), ..base.clone() },
        ] {
            assert!(matches!(refused(&bad), ServiceError::Store(StoreError::Other(_))), "{bad:?}");
        }
        write(&store, |tx| Ok(tx.insert_charge(&base)?)).unwrap();
        let expired_without_reason = Charge { failure_reason: None, ..in_state(base.clone(), ChargeState::Expired) };
        let err = write(&store, |tx| Ok(tx.update_charge(&expired_without_reason)?)).unwrap_err();
        assert!(matches!(err, ServiceError::Store(StoreError::Other(_))), "{err:?}");
        assert_eq!(read(&store, |tx| Ok(tx.lock_charge(&base.id)?)).unwrap(), Some(base));

        let (account, wallet) = insert_wallet(&store, Mode::Test, KES, &payer);
        let same_account = malipo_service::Wallet { msisdn: msisdn("254712000098"), ..wallet };
        let err = write(&store, |tx| Ok(tx.insert_wallet(&same_account)?)).unwrap_err();
        assert_eq!(err, ServiceError::Store(StoreError::Duplicate), "one wallet per account");
        let overdrawn =
            malipo_ledger::Account { held: MinorUnit::new(1), ..malipo_store_contract::fixtures::wallet_account(Mode::Live, KES, &payer) };
        let err = write(&store, |tx| Ok(tx.insert_account(&overdrawn)?)).unwrap_err();
        assert!(matches!(err, ServiceError::Store(StoreError::Other(_))), "{err:?}");
        assert_eq!(read(&store, |tx| Ok(tx.account(&account.id)?)).unwrap().map(|a| a.held), Some(MinorUnit::ZERO));
    }

    #[test]
    fn a_poisoned_store_reports_other() {
        let store = MemoryStore::new();
        let s = store.clone();
        let _ = std::thread::spawn(move || {
            let _ = write(&s, |_| -> Result<(), ServiceError> { panic!("boom") });
        })
        .join();
        let err = read(&store, |_| Ok(())).unwrap_err();
        assert!(matches!(err, ServiceError::Store(StoreError::Other(_))), "{err:?}");
        assert_eq!(store.ready(), Ok(()));
    }

    #[test]
    fn concurrent_transactions_serialise() {
        let store = MemoryStore::new();
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let s = store.clone();
                std::thread::spawn(move || {
                    for _ in 0..50 {
                        write(&s, |tx| Ok(tx.insert_org(&org("same"))?)).unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let state = store.state.lock().unwrap();
        assert_eq!(state.orgs.len(), 400);
    }
}
