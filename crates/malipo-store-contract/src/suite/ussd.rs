//! USSD sessions.

use malipo_core::{Mode, OrgId};
use malipo_service::{Store, UssdSession};

use crate::fixtures::*;

fn session(org: &OrgId, mode: Mode, id: &str, updated: i64) -> UssdSession {
    UssdSession {
        org_id: org.clone(),
        mode,
        session_id: id.to_owned(),
        msisdn: msisdn("254712000090"),
        state: r#"{"at":"main"}"#.to_owned(),
        hops: 0,
        last_screen: "CON Malipo".to_owned(),
        created_at: at(updated),
        updated_at: at(updated),
    }
}

/// Sessions round trip by (organisation, mode, session id); `put_ussd_session` overwrites;
/// `purge_ussd_sessions` removes only those last updated before the bound.
pub fn ussd_sessions_put_get_purge(store: &dyn Store) {
    let gateway = insert_org(store, "Gateway", at(0));
    let other = insert_org(store, "Other gateway", at(0));
    // `ussd_session` locks the row: only in write transactions.
    let get = |org: &OrgId, mode: Mode, id: &str| commit(store, |tx| Ok(tx.ussd_session(org, mode, id)?));
    let first = session(&gateway.id, Mode::Live, "ATUid_1", 10);
    commit(store, |tx| Ok(tx.put_ussd_session(&first)?));
    assert_eq!(get(&gateway.id, Mode::Live, "ATUid_1"), Some(first.clone()));
    assert_eq!(get(&gateway.id, Mode::Test, "ATUid_1"), None);
    assert_eq!(get(&other.id, Mode::Live, "ATUid_1"), None);

    let moved = UssdSession {
        state: r#"{"at":"balance_pin"}"#.to_owned(),
        hops: 2,
        last_screen: "CON Enter PIN:".to_owned(),
        updated_at: at(20),
        ..first.clone()
    };
    commit(store, |tx| Ok(tx.put_ussd_session(&moved)?));
    assert_eq!(get(&gateway.id, Mode::Live, "ATUid_1"), Some(moved.clone()));

    let old = session(&other.id, Mode::Live, "ATUid_2", 5);
    commit(store, |tx| Ok(tx.put_ussd_session(&old)?));
    assert_eq!(commit(store, |tx| Ok(tx.purge_ussd_sessions(at(20))?)), 1);
    assert_eq!(get(&other.id, Mode::Live, "ATUid_2"), None);
    assert_eq!(get(&gateway.id, Mode::Live, "ATUid_1"), Some(moved), "updated at the bound: kept");
}
