//! Idempotency keys.

use malipo_core::Mode;
use malipo_idempotency::{IdempotencyRecord, StoredResponse};
use malipo_service::Store;

use crate::fixtures::*;

/// `claim_key` returns `None` to the first claimant and the stored record (with the first
/// request's fingerprint) afterwards; keys are scoped by organisation, mode and operation;
/// `complete_key` stores the status and the exact body bytes.
pub fn claim_key_then_complete(store: &dyn Store) {
    let org = insert_org(store, "Duka", at(0));
    let other_org = insert_org(store, "Other", at(0));
    let scope = key_scope(&org, Mode::Test, "POST /partner/stk");
    let key = idem_key("order-1001");
    let first = fingerprint("{\"amount\":\"250\"}");
    let second = fingerprint("{\"amount\":\"999\"}");

    assert_eq!(
        commit(store, |tx| Ok(tx.claim_key(&scope, &key, &first, at(1))?)),
        None,
        "the first claim wins"
    );
    let in_flight = IdempotencyRecord {
        fingerprint: first.clone(),
        response: None,
        created_at: at(1),
    };
    assert_eq!(
        commit(store, |tx| Ok(tx.claim_key(
            &scope,
            &key,
            &second,
            at(2)
        )?)),
        Some(in_flight.clone())
    );
    assert_eq!(
        commit(store, |tx| Ok(tx.claim_key(&scope, &key, &first, at(3))?)),
        Some(in_flight)
    );

    for (other, label) in [
        (
            key_scope(&org, Mode::Test, "POST /partner/payouts"),
            "another operation",
        ),
        (
            key_scope(&org, Mode::Live, "POST /partner/stk"),
            "another mode",
        ),
        (
            key_scope(&other_org, Mode::Test, "POST /partner/stk"),
            "another organisation",
        ),
    ] {
        assert_eq!(
            commit(store, |tx| Ok(tx.claim_key(
                &other,
                &key,
                &second,
                at(4)
            )?)),
            None,
            "{label}"
        );
    }
    assert_eq!(
        commit(store, |tx| Ok(tx.claim_key(
            &scope,
            &idem_key("order-1002"),
            &first,
            at(4)
        )?)),
        None,
        "another key"
    );

    // Exact bytes: not necessarily UTF-8, trailing whitespace kept.
    let body = b"{\"id\":\"ch_1\",\"note\":\"\xc3\xa9\"}\n\x00\xff ".to_vec();
    let created = StoredResponse { status: 201, body };
    commit(store, |tx| Ok(tx.complete_key(&scope, &key, &created)?));
    assert_eq!(
        commit(store, |tx| Ok(tx.claim_key(&scope, &key, &first, at(5))?)),
        Some(IdempotencyRecord {
            fingerprint: first.clone(),
            response: Some(created.clone()),
            created_at: at(1)
        })
    );

    let empty = StoredResponse {
        status: 204,
        body: Vec::new(),
    };
    let key2 = idem_key("order-1002");
    commit(store, |tx| Ok(tx.complete_key(&scope, &key2, &empty)?));
    let stored = commit(store, |tx| {
        Ok(tx.claim_key(&scope, &key2, &second, at(6))?)
    })
    .expect("claimed before");
    assert_eq!(
        stored.response,
        Some(empty),
        "an empty body is stored as empty, not as no response"
    );
    assert_eq!(stored.fingerprint, first);
}

/// `purge_keys` deletes the keys created strictly before the instant, and counts them.
pub fn purge_keys_removes_old_ones_only(store: &dyn Store) {
    let org = insert_org(store, "Duka", at(0));
    let scope = key_scope(&org, Mode::Test, "POST /partner/stk");
    let fp = fingerprint("{}");
    let claim = |key: &str, t: i64| {
        commit(store, |tx| {
            Ok(tx.claim_key(&scope, &idem_key(key), &fp, at(t))?)
        })
    };
    for (key, t) in [("k1", 1), ("k2", 2), ("k3", 3)] {
        assert_eq!(claim(key, t), None);
    }
    commit(store, |tx| {
        Ok(tx.complete_key(
            &scope,
            &idem_key("k1"),
            &StoredResponse {
                status: 200,
                body: b"{}".to_vec(),
            },
        )?)
    });

    assert_eq!(commit(store, |tx| Ok(tx.purge_keys(at(0))?)), 0);
    assert_eq!(
        commit(store, |tx| Ok(tx.purge_keys(at(2))?)),
        1,
        "only k1 is older than the cut-off"
    );
    assert_eq!(claim("k1", 10), None, "a purged key can be claimed afresh");
    assert_eq!(
        claim("k2", 10).map(|r| r.created_at),
        Some(at(2)),
        "created at the cut-off: kept"
    );
    assert_eq!(claim("k3", 10).map(|r| r.created_at), Some(at(3)));
    assert_eq!(commit(store, |tx| Ok(tx.purge_keys(at(11))?)), 3);
    assert_eq!(claim("k2", 20), None);
}
