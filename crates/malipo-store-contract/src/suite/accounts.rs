//! Accounts: insertion, lookup, unique keys.

use malipo_core::{AccountId, Mode, OrgId};
use malipo_ledger::{Account, AccountKind};
use malipo_service::{AccountKey, ServiceError, Store};

use crate::fixtures::duplicate;
use crate::fixtures::*;

fn find(store: &dyn Store, key: AccountKey) -> Option<Account> {
    query(store, |tx| Ok(tx.find_account(&key)?))
}

fn org_key(org_id: &OrgId, mode: Mode, kind: AccountKind) -> AccountKey {
    AccountKey::Org { org_id: org_id.clone(), mode, kind }
}

fn system_key(mode: Mode, currency: malipo_core::Currency, kind: AccountKind) -> AccountKey {
    AccountKey::System { mode, currency, kind }
}

/// Accounts round trip by id, and are found by [`AccountKey::Org`] (organisation, mode, kind)
/// and [`AccountKey::System`] (mode, currency, kind); other keys find nothing.
pub fn accounts_insert_and_find(store: &dyn Store) {
    let m = insert_merchant(store, "Duka", Mode::Test);
    let other = insert_merchant(store, "Other", Mode::Test);
    let live = insert_account(store, org_account(&m.org, Mode::Live, AccountKind::Collection, at(1)));
    let kes = insert_platform(store, Mode::Test, KES);
    let live_issuance = insert_account(store, system_account(Mode::Live, KES, AccountKind::Issuance));
    let ugx_issuance = insert_account(store, system_account(Mode::Test, ugx(), AccountKind::Issuance));
    let (wallet, _) = insert_wallet(store, Mode::Test, KES, &msisdn("254712000001"));

    for a in [&m.collection, &m.payout, &live, &kes.revenue, &kes.issuance, &kes.sandbox_funding, &live_issuance, &ugx_issuance, &wallet] {
        assert_eq!(query(store, |tx| Ok(tx.account(&a.id)?)).as_ref(), Some(a), "account {} round trips", a.id);
    }
    assert_eq!(query(store, |tx| Ok(tx.account(&AccountId::new())?)), None);

    let org = &m.org.id;
    assert_eq!(find(store, org_key(org, Mode::Test, AccountKind::Collection)), Some(m.collection.clone()));
    assert_eq!(find(store, org_key(org, Mode::Test, AccountKind::Payout)), Some(m.payout.clone()));
    assert_eq!(find(store, org_key(org, Mode::Live, AccountKind::Collection)), Some(live.clone()));
    assert_eq!(find(store, org_key(org, Mode::Live, AccountKind::Payout)), None);
    assert_eq!(find(store, org_key(org, Mode::Test, AccountKind::AgentFloat)), None);
    assert_eq!(find(store, org_key(&other.org.id, Mode::Test, AccountKind::Collection)), Some(other.collection.clone()));
    assert_eq!(find(store, org_key(&OrgId::new(), Mode::Test, AccountKind::Collection)), None);

    assert_eq!(find(store, system_key(Mode::Test, KES, AccountKind::Revenue)), Some(kes.revenue.clone()));
    assert_eq!(find(store, system_key(Mode::Test, KES, AccountKind::Issuance)), Some(kes.issuance.clone()));
    assert_eq!(find(store, system_key(Mode::Test, KES, AccountKind::SandboxFunding)), Some(kes.sandbox_funding.clone()));
    assert_eq!(find(store, system_key(Mode::Live, KES, AccountKind::Issuance)), Some(live_issuance));
    assert_eq!(find(store, system_key(Mode::Test, ugx(), AccountKind::Issuance)), Some(ugx_issuance));
    assert_eq!(find(store, system_key(Mode::Live, KES, AccountKind::Revenue)), None);
    assert_eq!(find(store, system_key(Mode::Test, ugx(), AccountKind::Revenue)), None);
}

/// An account's id by key ([`malipo_service::LedgerRepo::account_id`], [`Store::account_id`]),
/// which an adapter may remember, is only ever that of an account that exists: an opening
/// rolled back leaves nothing to remember, even to the transaction's own lookups. An
/// organisation's name is its name, and an unknown organisation has none.
pub fn account_ids_and_names_are_only_what_committed(store: &dyn Store) {
    let m = insert_merchant(store, "Duka", Mode::Test);
    let key = org_key(&m.org.id, Mode::Live, AccountKind::Payout);
    let first = org_account(&m.org, Mode::Live, AccountKind::Payout, at(1));
    let seen = first.id.clone();
    refused(store, |tx| {
        tx.insert_account(&first)?;
        assert_eq!(tx.account_id(&key)?, Some(seen.clone()), "the transaction sees what it opened");
        Err::<(), _>(ServiceError::InvalidState("rolled back".into()))
    });
    assert_eq!(store.account_id(&key).expect("account id"), None, "a rolled-back opening is not remembered");
    assert_eq!(query(store, |tx| Ok(tx.account_id(&key)?)), None);

    let opened = insert_account(store, org_account(&m.org, Mode::Live, AccountKind::Payout, at(2)));
    for _ in 0..2 {
        assert_eq!(store.account_id(&key).expect("account id"), Some(opened.id.clone()));
        assert_eq!(query(store, |tx| Ok(tx.account_id(&key)?)), Some(opened.id.clone()));
    }
    let collection = org_key(&m.org.id, Mode::Test, AccountKind::Collection);
    assert_eq!(store.account_id(&collection).expect("account id"), Some(m.collection.id.clone()));
    let kes = insert_platform(store, Mode::Test, KES);
    let revenue = system_key(Mode::Test, KES, AccountKind::Revenue);
    assert_eq!(query(store, |tx| Ok(tx.account_id(&revenue)?)), Some(kes.revenue.id.clone()));
    assert_eq!(store.account_id(&system_key(Mode::Live, KES, AccountKind::Revenue)).expect("account id"), None);

    for _ in 0..2 {
        assert_eq!(query(store, |tx| Ok(tx.org_name(&m.org.id)?)).as_deref(), Some("Duka"));
    }
    assert_eq!(query(store, |tx| Ok(tx.org_name(&OrgId::new())?)), None);
}

/// Unique keys of accounts: the id; (organisation, mode, kind); (mode, currency, kind) of
/// platform accounts; (mode, owner's number) of wallet accounts. The same key in another mode
/// (or, for platform accounts, another currency) is a different account.
pub fn duplicate_accounts_are_refused(store: &dyn Store) {
    let m = insert_merchant(store, "Duka", Mode::Test);

    let same_id = Account { kind: AccountKind::AgentFloat, ..m.collection.clone() };
    assert_eq!(refused(store, |tx| Ok(tx.insert_account(&same_id)?)), duplicate(), "same id");
    let same_kind = org_account(&m.org, Mode::Test, AccountKind::Collection, at(5));
    assert_eq!(refused(store, |tx| Ok(tx.insert_account(&same_kind)?)), duplicate(), "same (org, mode, kind)");
    insert_account(store, org_account(&m.org, Mode::Live, AccountKind::Collection, at(5)));

    let issuance = insert_account(store, system_account(Mode::Test, KES, AccountKind::Issuance));
    let again = system_account(Mode::Test, KES, AccountKind::Issuance);
    assert_eq!(refused(store, |tx| Ok(tx.insert_account(&again)?)), duplicate(), "same (mode, currency, kind)");
    insert_account(store, system_account(Mode::Test, ugx(), AccountKind::Issuance));
    insert_account(store, system_account(Mode::Live, KES, AccountKind::Issuance));

    let owner = msisdn("254712000002");
    let wallet = insert_account(store, wallet_account(Mode::Test, KES, &owner));
    let again = wallet_account(Mode::Test, KES, &owner);
    assert_eq!(refused(store, |tx| Ok(tx.insert_account(&again)?)), duplicate(), "same (mode, msisdn)");
    insert_account(store, wallet_account(Mode::Live, KES, &owner));

    assert_eq!(query(store, |tx| Ok(tx.org_accounts(&m.org.id, Mode::Test)?)), vec![m.collection.clone(), m.payout.clone()]);
    assert_eq!(find(store, system_key(Mode::Test, KES, AccountKind::Issuance)), Some(issuance));
    assert_eq!(query(store, |tx| Ok(tx.account(&wallet.id)?)), Some(wallet));
}

/// `org_accounts` lists only that organisation's accounts of that mode, oldest first.
pub fn org_accounts_only_of_that_org_and_mode(store: &dyn Store) {
    let a = insert_org(store, "A", at(0));
    let b = insert_org(store, "B", at(0));
    // Built in creation order (ids are time-ordered), inserted in another order.
    let live = org_account(&a, Mode::Live, AccountKind::Collection, at(1));
    let collection = org_account(&a, Mode::Test, AccountKind::Collection, at(2));
    let payout = org_account(&a, Mode::Test, AccountKind::Payout, at(3));
    let float = org_account(&a, Mode::Test, AccountKind::AgentFloat, at(4));
    let b_collection = org_account(&b, Mode::Test, AccountKind::Collection, at(1));
    commit(store, |tx| {
        for acc in [&float, &b_collection, &payout, &live, &collection] {
            tx.insert_account(acc)?;
        }
        Ok(())
    });
    insert_platform(store, Mode::Test, KES);
    insert_wallet(store, Mode::Test, KES, &msisdn("254712000003"));

    assert_eq!(query(store, |tx| Ok(tx.org_accounts(&a.id, Mode::Test)?)), vec![collection, payout, float]);
    assert_eq!(query(store, |tx| Ok(tx.org_accounts(&a.id, Mode::Live)?)), vec![live]);
    assert_eq!(query(store, |tx| Ok(tx.org_accounts(&b.id, Mode::Test)?)), vec![b_collection]);
    assert_eq!(query(store, |tx| Ok(tx.org_accounts(&b.id, Mode::Live)?)), vec![]);
    assert_eq!(query(store, |tx| Ok(tx.org_accounts(&OrgId::new(), Mode::Test)?)), vec![]);
}
