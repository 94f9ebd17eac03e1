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

/// `swap_ussd_session` writes only over the session it was given as seen (its hops, update
/// time and last screen), or, given none, only into a free key; `peek_ussd_session` reads the
/// session as committed, outside a transaction.
pub fn ussd_sessions_swap_only_over_what_was_seen(store: &dyn Store) {
    let gateway = insert_org(store, "Gateway", at(0));
    let peek = |id: &str| autocommit(store, |tx| Ok(tx.peek_ussd_session(&gateway.id, Mode::Live, id)?));
    let swap = |seen: Option<&UssdSession>, next: &UssdSession| autocommit(store, |tx| Ok(tx.swap_ussd_session(seen, next)?));
    let first = session(&gateway.id, Mode::Live, "ATUid_3", 10);
    assert!(swap(None, &first), "a free key: inserted");
    assert_eq!(peek("ATUid_3"), Some(first.clone()));
    let other = UssdSession { last_screen: "CON Other".to_owned(), ..first.clone() };
    assert!(!swap(None, &other), "a taken key: nothing inserted");
    assert_eq!(peek("ATUid_3"), Some(first.clone()));

    let moved = UssdSession { hops: 1, last_screen: "CON Approve payments".to_owned(), updated_at: at(11), ..first.clone() };
    assert!(swap(Some(&first), &moved), "over what was seen: written");
    assert_eq!(peek("ATUid_3"), Some(moved.clone()));
    // A request that saw `first` and comes late writes nothing.
    let late = UssdSession { hops: 1, last_screen: "CON Late".to_owned(), updated_at: at(12), ..first.clone() };
    assert!(!swap(Some(&first), &late));
    assert_eq!(peek("ATUid_3"), Some(moved.clone()));
    // Each of the three compared fields alone refuses the swap.
    let claimed = UssdSession { last_screen: String::new(), ..moved.clone() };
    commit(store, |tx| Ok(tx.put_ussd_session(&claimed)?));
    assert!(!swap(Some(&moved), &late), "claimed by another request (last screen emptied)");
    let retimed = UssdSession { updated_at: at(13), ..moved.clone() };
    commit(store, |tx| Ok(tx.put_ussd_session(&retimed)?));
    assert!(!swap(Some(&moved), &late), "moved at another time");
    let further = UssdSession { hops: 2, ..moved.clone() };
    commit(store, |tx| Ok(tx.put_ussd_session(&further)?));
    assert!(!swap(Some(&moved), &late), "further on");
    assert_eq!(peek("ATUid_3"), Some(further.clone()));
    assert!(swap(Some(&further), &late), "over what is stored: written");
    assert_eq!(peek("ATUid_3"), Some(late));
    assert_eq!(peek("ATUid_4"), None);
}
