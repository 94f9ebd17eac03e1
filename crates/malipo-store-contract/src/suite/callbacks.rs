//! Callbacks (the outcome a request asked to be sent to a URL of its own) and the
//! organisations' callback secrets.

use malipo_core::{Mode, OrgId, Timestamp};
use malipo_service::{write, Callback, CallbackSecret, CallbackState, ServiceError, Store, StoreError};

use crate::fixtures::*;

fn callback(org: &OrgId, mode: Mode, object_id: &str, n: u32, created_at: Timestamp) -> Callback {
    Callback {
        id: format!("cb_{object_id}_{n}"),
        org_id: org.clone(),
        mode,
        client_id: "ci_test".into(),
        object_id: object_id.into(),
        url: "https://hooks.example.com/gsma?x=ä".into(),
        correlation_id: Some("0d4c2a8e-0a9f-4a53-9f1e-2b1c8f0e6d11".into()),
        state: CallbackState::Waiting,
        attempts: 0,
        next_attempt_at: None,
        last_status: None,
        last_error: None,
        created_at,
        updated_at: created_at,
    }
}

fn stored(store: &dyn Store, id: &str) -> Option<Callback> {
    commit(store, |tx| Ok(tx.lock_callbacks(&[id.to_owned()])?.pop()))
}

/// Callbacks round trip by id and by object (in scope, oldest first); a duplicate id and an
/// unknown organisation are refused; waiting ones become due once, with the object's end; due
/// ones are claimed oldest first with a lease and never twice within it; an update overwrites
/// exactly the mutable fields; a callback due while not pending is refused; settled old ones are
/// purged, pending ones kept.
pub fn callbacks_wait_come_due_and_are_claimed_once(store: &dyn Store) {
    let org = insert_org(store, "Duka", at(0));
    let other = insert_org(store, "Other", at(0));
    let first = callback(&org.id, Mode::Test, "ch_a", 1, at(1));
    let second = Callback { correlation_id: None, ..callback(&org.id, Mode::Test, "ch_a", 2, at(2)) };
    let elsewhere = callback(&other.id, Mode::Test, "ch_b", 1, at(1));
    let live = callback(&org.id, Mode::Live, "ch_a", 3, at(3));
    commit(store, |tx| {
        for c in [&first, &second, &elsewhere, &live] {
            tx.insert_callback(c)?;
        }
        Ok(())
    });
    assert_eq!(stored(store, &first.id), Some(first.clone()), "every field round trips");
    let refused = write(store, |tx| Ok(tx.insert_callback(&first)?)).unwrap_err();
    assert!(matches!(refused, ServiceError::Store(StoreError::Duplicate)), "{refused:?}");
    let orphan = callback(&OrgId::new(), Mode::Test, "ch_c", 1, at(1));
    assert!(write(store, |tx| Ok(tx.insert_callback(&orphan)?)).is_err(), "an unknown organisation is refused");
    let half = Callback { state: CallbackState::Pending, ..callback(&org.id, Mode::Test, "ch_d", 1, at(1)) };
    assert!(write(store, |tx| Ok(tx.insert_callback(&half)?)).is_err(), "pending without a due time is refused");
    let of = query(store, |tx| Ok(tx.callbacks_of_object(&org.id, Mode::Test, "ch_a")?));
    assert_eq!(of.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(), [first.id.as_str(), second.id.as_str()]);

    let claim = |now: i64, lease: i64| commit(store, |tx| Ok(tx.claim_due_callbacks(at(now), at(lease), 10)?));
    assert!(claim(100, 200).is_empty(), "waiting callbacks are not due");
    commit(store, |tx| Ok(tx.callbacks_due("ch_a", at(10))?));
    commit(store, |tx| Ok(tx.callbacks_due("ch_a", at(11))?));
    for c in [&first, &second, &live] {
        let due = stored(store, &c.id).unwrap();
        assert_eq!((due.state, due.next_attempt_at, due.updated_at), (CallbackState::Pending, Some(at(10)), at(10)), "due once");
    }
    assert_eq!(stored(store, &elsewhere.id).unwrap().state, CallbackState::Waiting, "another object's stay waiting");

    let claimed = claim(20, 80);
    assert_eq!(claimed.len(), 3, "{claimed:?}");
    assert!(claimed.iter().all(|c| c.next_attempt_at == Some(at(80))), "returned as leased");
    assert!(claim(79, 140).is_empty(), "not again within the lease");
    assert_eq!(claim(80, 140).len(), 3, "a lease that passed makes them due again");

    let sent = Callback {
        state: CallbackState::Succeeded,
        attempts: 2,
        next_attempt_at: None,
        last_status: Some(204),
        last_error: None,
        updated_at: at(90),
        ..stored(store, &first.id).unwrap()
    };
    let failed = Callback {
        state: CallbackState::Failed,
        attempts: 9,
        next_attempt_at: None,
        last_status: None,
        last_error: Some("connection refused".into()),
        updated_at: at(91),
        ..stored(store, &second.id).unwrap()
    };
    commit(store, |tx| {
        tx.update_callback(&sent)?;
        tx.update_callback(&failed)?;
        Ok(())
    });
    assert_eq!(stored(store, &first.id), Some(sent.clone()));
    assert_eq!(stored(store, &second.id), Some(failed.clone()));
    let impossible = Callback { next_attempt_at: Some(at(1)), ..sent.clone() };
    assert!(write(store, |tx| Ok(tx.update_callback(&impossible)?)).is_err(), "due while settled is refused");
    let missing = Callback { id: "cb_missing".into(), ..sent.clone() };
    assert!(write(store, |tx| Ok(tx.update_callback(&missing)?)).is_err(), "a missing callback is refused");

    assert_eq!(commit(store, |tx| Ok(tx.purge_callbacks(at(5))?)), 2, "the settled ones made before");
    assert_eq!(stored(store, &first.id), None);
    assert!(stored(store, &live.id).is_some(), "a pending one is kept");
    assert!(stored(store, &elsewhere.id).is_some(), "a waiting one is kept");
}

/// A transaction that queues its writes makes callbacks due as one that does not: every
/// object's, with its own time, seen by its own later reads, committed with it, and undone with
/// a savepoint that failed.
pub fn queued_callbacks_come_due_as_at_once(store: &dyn Store) {
    let org = insert_org(store, "Duka", at(0));
    let ids = ["ch_q1", "ch_q2", "ch_q3", "ch_q4"];
    commit(store, |tx| {
        for (n, id) in ids.iter().enumerate() {
            tx.insert_callback(&callback(&org.id, Mode::Test, id, u32::try_from(n).unwrap(), at(1)))?;
        }
        Ok(())
    });
    let seen = commit(store, |tx| {
        tx.queue_writes();
        tx.callbacks_due("ch_q1", at(10))?;
        tx.callbacks_due("ch_q2", at(10))?;
        tx.callbacks_due("ch_q3", at(12))?;
        let mut failed = |tx: &mut dyn malipo_service::Tx| -> Result<(), ServiceError> {
            tx.callbacks_due("ch_q4", at(13))?;
            Err(ServiceError::Internal("undone".into()))
        };
        assert!(tx.savepoint(&mut failed).is_err());
        Ok(tx.callbacks_of_object(&org.id, Mode::Test, "ch_q2")?)
    });
    assert_eq!(seen[0].state, CallbackState::Pending, "the transaction's own read sees it");
    let due = |id: &str| query(store, |tx| Ok(tx.callbacks_of_object(&org.id, Mode::Test, id)?)).pop().unwrap();
    assert_eq!((due("ch_q1").state, due("ch_q1").next_attempt_at), (CallbackState::Pending, Some(at(10))));
    assert_eq!(due("ch_q2").next_attempt_at, Some(at(10)));
    assert_eq!(due("ch_q3").next_attempt_at, Some(at(12)), "each at its own time");
    assert_eq!(due("ch_q4").state, CallbackState::Waiting, "the failed savepoint's is undone");
}

/// A secret per organisation and mode: inserted once, read back in scope, overwritten with its
/// previous one, which may be cleared again.
pub fn callback_secrets_per_organisation_and_mode(store: &dyn Store) {
    let org = insert_org(store, "Duka", at(0));
    let secret = CallbackSecret {
        org_id: org.id.clone(),
        mode: Mode::Test,
        secret: b"\x00sealed\xff".to_vec(),
        previous: None,
        created_at: at(1),
        updated_at: at(1),
    };
    commit(store, |tx| Ok(tx.insert_callback_secret(&secret)?));
    let again = write(store, |tx| Ok(tx.insert_callback_secret(&secret)?)).unwrap_err();
    assert!(matches!(again, ServiceError::Store(StoreError::Duplicate)), "{again:?}");
    assert_eq!(query(store, |tx| Ok(tx.callback_secret(&org.id, Mode::Test)?)), Some(secret.clone()));
    assert_eq!(query(store, |tx| Ok(tx.callback_secret(&org.id, Mode::Live)?)), None, "each mode its own");
    let rotated = CallbackSecret {
        secret: b"new".to_vec(),
        previous: Some((secret.secret.clone(), at(86_401))),
        updated_at: at(2),
        ..secret.clone()
    };
    commit(store, |tx| Ok(tx.update_callback_secret(&rotated)?));
    assert_eq!(query(store, |tx| Ok(tx.callback_secret(&org.id, Mode::Test)?)), Some(rotated.clone()));
    let live = CallbackSecret { mode: Mode::Live, ..secret };
    assert!(write(store, |tx| Ok(tx.update_callback_secret(&live)?)).is_err(), "a missing secret is refused");
}
