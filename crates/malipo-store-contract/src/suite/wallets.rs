//! Wallets.

use malipo_core::Mode;
use malipo_ledger::AccountKind;
use malipo_service::{ServiceError, Store, Wallet, WalletState};

use crate::fixtures::duplicate;
use crate::fixtures::*;

/// Wallets round trip by (mode, number); `update_wallet` overwrites exactly the mutable fields
/// (state, KYC tier, PIN hash, attempts, names, ID, date of birth, lock reason, `updated_at`),
/// including back to `None`.
pub fn wallets_insert_get_update(store: &dyn Store) {
    let owner = msisdn("254712000020");
    let (account, stored) = insert_wallet(store, Mode::Test, KES, &owner);
    let get = |mode: Mode, number: &malipo_core::Msisdn| query(store, |tx| Ok(tx.wallet(mode, number)?));
    assert_eq!(get(Mode::Test, &owner), Some(stored.clone()));
    assert_eq!(get(Mode::Live, &owner), None);
    assert_eq!(get(Mode::Test, &msisdn("254712000029")), None);
    let original = get(Mode::Test, &owner).expect("the wallet exists");
    assert_eq!(original.account_id, account.id);

    // A second existing account, so that a wrongly overwritten account_id cannot hide behind a foreign key.
    let other = insert_account(store, org_account(&insert_org(store, "Agent", at(0)), Mode::Test, AccountKind::AgentFloat, at(0)));
    let changed = Wallet {
        // Mutable.
        state: WalletState::Locked,
        lock_reason: Some("pin_attempts_exceeded".into()),
        id_type: Some("national_id".into()),
        id_number: Some("12345678".into()),
        date_of_birth: Some("1990-04-01".into()),
        kyc_tier: 2,
        pin_hash: Some("$argon2id$v=19$m=19456,t=2,p=1$cGlu$aGFzaA".into()),
        pin_attempts: 3,
        first_name: Some("Wanjiru".into()),
        last_name: Some("Kamau".into()),
        updated_at: at(100),
        // Not mutable: must be left as stored.
        account_id: other.id.clone(),
        country: "UG".into(),
        currency: ugx(),
        created_at: at(-100),
        ..original.clone()
    };
    commit(store, |tx| Ok(tx.update_wallet(&changed)?));
    let expected = Wallet {
        state: changed.state,
        kyc_tier: changed.kyc_tier,
        pin_hash: changed.pin_hash.clone(),
        pin_attempts: changed.pin_attempts,
        first_name: changed.first_name.clone(),
        last_name: changed.last_name.clone(),
        lock_reason: changed.lock_reason.clone(),
        id_type: changed.id_type.clone(),
        id_number: changed.id_number.clone(),
        date_of_birth: changed.date_of_birth.clone(),
        updated_at: changed.updated_at,
        ..original.clone()
    };
    assert_eq!(get(Mode::Test, &owner), Some(expected.clone()));

    let cleared = Wallet {
        state: WalletState::Active,
        kyc_tier: 0,
        pin_hash: None,
        pin_attempts: 0,
        first_name: None,
        last_name: None,
        lock_reason: None,
        id_type: None,
        id_number: None,
        date_of_birth: None,
        updated_at: at(200),
        ..expected
    };
    commit(store, |tx| Ok(tx.update_wallet(&cleared)?));
    assert_eq!(get(Mode::Test, &owner), Some(cleared));
}

/// A second wallet with the same (mode, number) is refused; the same number in the other mode
/// is a different wallet.
pub fn duplicate_wallet_is_refused(store: &dyn Store) {
    let owner = msisdn("254712000021");
    let (_, test) = insert_wallet(store, Mode::Test, KES, &owner);
    let spare = insert_account(store, wallet_account(Mode::Test, KES, &msisdn("254712000022")));
    let again = Wallet { account_id: spare.id.clone(), kyc_tier: 3, ..test.clone() };
    assert_eq!(refused(store, |tx| Ok(tx.insert_wallet(&again)?)), duplicate());
    assert_eq!(query(store, |tx| Ok(tx.wallet(Mode::Test, &owner)?)), Some(test.clone()));

    let (_, live) = insert_wallet(store, Mode::Live, KES, &owner);
    assert_eq!(query(store, |tx| Ok(tx.wallet(Mode::Live, &owner)?)), Some(live));
    assert_eq!(query(store, |tx| Ok(tx.wallet(Mode::Test, &owner)?)), Some(test));
}

/// `lock_wallet` reads the wallet like `wallet`; a locked wallet needs a lock reason (and an
/// active one has none); one identity document opens one wallet per country and mode.
pub fn wallet_constraints(store: &dyn Store) {
    let owner = msisdn("254712000023");
    let (_, stored) = insert_wallet(store, Mode::Test, KES, &owner);
    // `lock_wallet` locks the row: only in write transactions.
    assert_eq!(commit(store, |tx| Ok(tx.lock_wallet(Mode::Test, &owner)?)), Some(stored.clone()));
    assert_eq!(commit(store, |tx| Ok(tx.lock_wallet(Mode::Live, &owner)?)), None);

    let no_reason = Wallet { state: WalletState::Locked, lock_reason: None, ..stored.clone() };
    assert!(matches!(refused(store, |tx| Ok(tx.update_wallet(&no_reason)?)), ServiceError::Store(_)), "locked without a reason");
    let stray_reason = Wallet { lock_reason: Some("operator".into()), ..stored.clone() };
    assert!(matches!(refused(store, |tx| Ok(tx.update_wallet(&stray_reason)?)), ServiceError::Store(_)), "active with a reason");
    assert_eq!(query(store, |tx| Ok(tx.wallet(Mode::Test, &owner)?)), Some(stored.clone()));

    let with_id = Wallet { id_type: Some("national_id".into()), id_number: Some("23456789".into()), ..stored.clone() };
    commit(store, |tx| Ok(tx.update_wallet(&with_id)?));
    let by_doc =
        |mode: Mode, country: &str, number: &str| query(store, |tx| Ok(tx.wallet_by_document(mode, country, "national_id", number)?));
    assert_eq!(by_doc(Mode::Test, "KE", "23456789"), Some(with_id.clone()));
    assert_eq!(by_doc(Mode::Live, "KE", "23456789"), None);
    assert_eq!(by_doc(Mode::Test, "UG", "23456789"), None);
    assert_eq!(by_doc(Mode::Test, "KE", "23456780"), None);
    let second = msisdn("254712000024");
    let account = insert_account(store, wallet_account(Mode::Test, KES, &second));
    let same_id = Wallet { msisdn: second.clone(), account_id: account.id.clone(), ..with_id.clone() };
    assert_eq!(refused(store, |tx| Ok(tx.insert_wallet(&same_id)?)), duplicate(), "the same document twice");
    let other_id = Wallet { id_number: Some("23456780".into()), ..same_id.clone() };
    commit(store, |tx| Ok(tx.insert_wallet(&other_id)?));
    let live_account = insert_account(store, wallet_account(Mode::Live, KES, &second));
    let live = Wallet { mode: Mode::Live, account_id: live_account.id.clone(), ..same_id };
    commit(store, |tx| Ok(tx.insert_wallet(&live)?));
}
