//! Transactions: commit, rollback, retry, reads.

use malipo_charges::{Charge, ChargeState};
use malipo_core::{MinorUnit, Mode};
use malipo_ledger::AccountKind;
use malipo_service::{ServiceError, Store, StoreError, Wallet, WalletState};

use crate::fixtures::*;

/// A fresh store is ready and holds nothing.
pub fn fresh_store_is_ready_and_empty(store: &dyn Store) {
    assert_eq!(store.ready(), Ok(()));
    let snapshot = query(store, |tx| Ok(tx.ledger_snapshot(None)?));
    assert!(snapshot.accounts.is_empty(), "accounts: {:?}", snapshot.accounts);
    assert!(snapshot.journals.is_empty(), "journals: {:?}", snapshot.journals);
    assert_eq!(query(store, |tx| Ok(tx.org_by_name("Duka")?)), None);
    assert_eq!(commit(store, |tx| Ok(tx.claim_due_charges(at(1_000_000), at(1_000_060), 100)?)), vec![]);
    assert_eq!(commit(store, |tx| Ok(tx.purge_keys(at(1_000_000))?)), 0);
    assert_eq!(commit(store, |tx| Ok(tx.claim_due_deliveries(at(1_000_000), at(1_000_060), 100)?)), Vec::<String>::new());
    assert_eq!(commit(store, |tx| Ok(tx.purge_events(at(1_000_000))?)), 0);
}

/// A closure that returns `Err` after writing through every kind of write method leaves the
/// store exactly as it was, and the store keeps working afterwards.
pub fn failed_closure_rolls_back_everything(store: &dyn Store) {
    let kes = insert_platform(store, Mode::Test, KES);
    let m = insert_merchant(store, "Duka", Mode::Test);
    let payer = msisdn("254712000050");
    let (w, stored_wallet) = insert_wallet(store, Mode::Test, KES, &payer);
    post(store, transfer(Mode::Test, KES, &kes.issuance.id, &w.id, 1_000, at(1)));
    let existing = insert_charge(store, charge(&m.collection, &payer, 400, at(2)));
    let cred = credential(&m.org, Mode::Test, "ck_test_rollback");
    let token = access_token(&cred, &digest("rollback"));
    let scope = key_scope(&m.org, Mode::Test, "POST /partner/stk");
    let old_key = idem_key("old");
    commit(store, |tx| {
        tx.insert_credential(&cred)?;
        tx.insert_token(&token)?;
        assert!(tx.insert_key(&scope, &old_key, &key_record("old", at(0)))?);
        Ok(())
    });
    let before = query(store, |tx| Ok(tx.ledger_snapshot(None)?));

    let x = organisation("Rolled back", at(5));
    let x_cred = credential(&x, Mode::Test, "ck_test_rolled_back");
    let x_token = access_token(&x_cred, &digest("rolled back"));
    let x_account = org_account(&x, Mode::Test, AccountKind::Collection, at(5));
    let new_payer = msisdn("254712000051");
    let new_wallet_account = wallet_account(Mode::Test, KES, &new_payer);
    let new_wallet = wallet(&new_wallet_account, &new_payer);
    let new_charge = charge(&m.collection, &payer, 300, at(5));
    let authorised = Charge { state: ChargeState::Authorised, updated_at: at(5), ..existing.clone() };
    let locked = Wallet { state: WalletState::Locked, lock_reason: Some("operator".into()), updated_at: at(5), ..stored_wallet.clone() };
    let top_up = transfer(Mode::Test, KES, &kes.issuance.id, &w.id, 500, at(5));
    let new_key = idem_key("new");

    let err = refused(store, |tx| {
        tx.insert_org(&x)?;
        tx.insert_credential(&x_cred)?;
        tx.insert_token(&x_token)?;
        tx.insert_account(&x_account)?;
        tx.insert_account(&new_wallet_account)?;
        tx.insert_wallet(&new_wallet)?;
        tx.insert_charge(&new_charge)?;
        tx.update_charge(&authorised)?;
        tx.update_wallet(&locked)?;
        tx.post_journal(&top_up)?;
        tx.hold(&w.id, MinorUnit::new(100))?;
        assert!(tx.insert_key(&scope, &new_key, &key_record("new", at(5)))?);
        assert_eq!(tx.purge_keys(at(1))?, 1);
        assert!(tx.revoke_token(&token.digest, "ck_test_rollback", at(5))?);
        assert!(tx.revoke_credential("ck_test_rollback", at(5))?);
        tx.claim_due_charges(at(1_000), at(2_000), 10)?;
        // Every write is visible inside the transaction.
        assert_eq!(tx.account(&w.id)?.map(|a| (a.balance.get(), a.held.get())), Some((1_500, 100)));
        assert_eq!(tx.org(&x.id)?, Some(x.clone()));
        Err::<(), _>(ServiceError::InvalidState("abort".into()))
    });
    assert_eq!(err, ServiceError::InvalidState("abort".into()));

    assert_eq!(query(store, |tx| Ok(tx.org(&x.id)?)), None);
    assert_eq!(query(store, |tx| Ok(tx.credential("ck_test_rolled_back")?)), None);
    assert_eq!(query(store, |tx| Ok(tx.token(&x_token.digest)?)), None);
    assert_eq!(query(store, |tx| Ok(tx.account(&x_account.id)?)), None);
    assert_eq!(query(store, |tx| Ok(tx.account(&new_wallet_account.id)?)), None);
    assert_eq!(query(store, |tx| Ok(tx.wallet(Mode::Test, &new_payer)?)), None);
    assert_eq!(query(store, |tx| Ok(tx.charge(&m.org.id, Mode::Test, &new_charge.id)?)), None);
    assert_eq!(query(store, |tx| Ok(tx.charge(&m.org.id, Mode::Test, &existing.id)?)), Some(existing.clone()));
    assert_eq!(query(store, |tx| Ok(tx.wallet(Mode::Test, &payer)?)), Some(stored_wallet));
    assert_eq!(query(store, |tx| Ok(tx.credential("ck_test_rollback")?)), Some(cred));
    assert_eq!(query(store, |tx| Ok(tx.token(&token.digest)?)).map(|r| (r.token, r.credential_revoked)), Some((token, false)));
    let after = query(store, |tx| Ok(tx.ledger_snapshot(None)?));
    assert_eq!(after.accounts.len(), before.accounts.len());
    for a in &before.accounts {
        assert_eq!(after.accounts.iter().find(|b| b.id == a.id), Some(a), "account {} unchanged", a.id);
    }
    assert_eq!(after.journals, before.journals);
    assert_eq!(
        commit(store, |tx| Ok(tx.idempotency_record(&scope, &old_key)?)).map(|r| r.fingerprint),
        Some(fingerprint("old")),
        "the purge was rolled back"
    );
    assert_eq!(commit(store, |tx| Ok(tx.idempotency_record(&scope, &new_key)?)), None, "the key was rolled back");

    // The store still works: the same writes now commit.
    post(store, top_up);
    commit(store, |tx| Ok(tx.insert_org(&x)?));
    assert_eq!(balance(store, &w.id), 1_500);
    assert_ledger_sound(store);
}

/// `write` returns the closure's value; a transaction reads its own writes; `read` sees what
/// committed and nothing of what rolled back.
pub fn write_returns_values_and_read_sees_commits(store: &dyn Store) {
    let kes = insert_platform(store, Mode::Test, KES);
    let org = organisation("Duka", at(0));
    let collection = org_account(&org, Mode::Test, AccountKind::Collection, at(0));
    let funding = transfer(Mode::Test, KES, &kes.issuance.id, &collection.id, 250, at(1));
    let (id, balance_inside, journals_inside) = commit(store, |tx| {
        tx.insert_org(&org)?;
        tx.insert_account(&collection)?;
        tx.post_journal(&funding)?;
        let balance = tx.account(&collection.id)?.map(|a| a.balance.get());
        let journals = tx.ledger_snapshot(Some(Mode::Test))?.journals.len();
        Ok((org.id.clone(), balance, journals))
    });
    assert_eq!(id, org.id);
    assert_eq!(balance_inside, Some(250), "a transaction reads its own writes");
    assert_eq!(journals_inside, 1);

    let (by_id, by_name, accounts) =
        query(store, |tx| Ok((tx.org(&org.id)?, tx.org_by_name("Duka")?, tx.org_accounts(&org.id, Mode::Test)?)));
    assert_eq!(by_id, Some(org.clone()));
    assert_eq!(by_name, Some(org.clone()));
    assert_eq!(accounts.iter().map(|a| (a.id.clone(), a.balance.get())).collect::<Vec<_>>(), vec![(collection.id.clone(), 250)]);

    let ghost = organisation("Ghost", at(0));
    let err = refused(store, |tx| {
        tx.insert_org(&ghost)?;
        Err::<(), _>(ServiceError::NotFound)
    });
    assert_eq!(err, ServiceError::NotFound, "the closure's own error is returned");
    assert_eq!(query(store, |tx| Ok(tx.org(&ghost.id)?)), None);
    assert_ledger_sound(store);
}

/// A closure failing with [`StoreError::Retry`] is rolled back and run again; one that keeps
/// failing so ends, after a bounded number of attempts, with that error and nothing written.
pub fn retry_reruns_the_whole_closure(store: &dyn Store) {
    let org = organisation("Retried", at(0));
    let mut attempts = 0;
    commit(store, |tx| {
        attempts += 1;
        // On the second attempt this would be a duplicate if the first were not rolled back.
        tx.insert_org(&org)?;
        if attempts == 1 {
            return Err(StoreError::Retry.into());
        }
        Ok(())
    });
    assert_eq!(attempts, 2);
    assert_eq!(query(store, |tx| Ok(tx.org(&org.id)?)), Some(org));

    let doomed = organisation("Doomed", at(0));
    let mut attempts = 0;
    let err = refused(store, |tx| {
        attempts += 1;
        tx.insert_org(&doomed)?;
        Err::<(), _>(StoreError::Retry.into())
    });
    assert_eq!(err, ServiceError::Store(StoreError::Retry));
    assert!((2..=100).contains(&attempts), "retried a bounded number of times, ran {attempts} times");
    assert_eq!(query(store, |tx| Ok(tx.org(&doomed.id)?)), None);
}
