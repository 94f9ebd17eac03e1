//! Idempotency keys.

use malipo_core::Mode;
use malipo_idempotency::{IdempotencyRecord, Outcome};
use malipo_service::Store;

use crate::fixtures::*;

fn record(fp: &str, snapshot: &[u8], t: i64) -> IdempotencyRecord {
    IdempotencyRecord { fingerprint: fingerprint(fp), outcome: Some(Outcome::Snapshot(snapshot.to_vec())), created_at: at(t) }
}

/// `insert_keys` stores the keys not stored yet and counts them: a key already stored keeps its
/// first record, a key twice in one call is stored once (with the first of its records), and the
/// rest are stored whole.
pub fn insert_keys_stores_the_new_ones_and_counts_them(store: &dyn Store) {
    let org = insert_org(store, "Duka", at(0));
    let scope = key_scope(&org, Mode::Test, "POST /partner/stk");
    let old = record("{\"amount\":\"1\"}", b"old", 1);
    assert!(commit(store, |tx| Ok(tx.insert_key(&scope, &idem_key("k-1"), &old)?)));
    let batch: Vec<_> = [("k-1", "a"), ("k-2", "b"), ("k-3", "c"), ("k-2", "d")]
        .iter()
        .map(|(k, body)| (scope.clone(), idem_key(k), record("{}", body.as_bytes(), 2)))
        .collect();
    assert_eq!(commit(store, |tx| Ok(tx.insert_keys(&batch)?)), 2, "k-2 and k-3");
    let body = |k: &str| match commit(store, |tx| Ok(tx.idempotency_record(&scope, &idem_key(k))?)).expect("stored").outcome {
        Some(Outcome::Snapshot(s)) => s,
        other => panic!("{other:?}"),
    };
    assert_eq!(body("k-1"), b"old", "the stored key keeps its record");
    assert_eq!(body("k-2"), b"b", "the first of a repeated key's records");
    assert_eq!(body("k-3"), b"c");
    assert_eq!(commit(store, |tx| Ok(tx.insert_keys(&[])?)), 0);
}

/// `insert_key` stores a key with its record once and says `false` afterwards, leaving the first
/// record; `idempotency_record` reads it back with the exact response bytes; keys are scoped by
/// organisation, mode and operation.
pub fn insert_key_then_read(store: &dyn Store) {
    let org = insert_org(store, "Duka", at(0));
    let other_org = insert_org(store, "Other", at(0));
    let scope = key_scope(&org, Mode::Test, "POST /partner/stk");
    let key = idem_key("order-1001");
    // Exact bytes: not necessarily UTF-8, trailing whitespace kept.
    let first = record("{\"amount\":\"250\"}", b"{\"id\":\"ch_1\",\"note\":\"\xc3\xa9\"}\n\x00\xff ", 1);
    let second = record("{\"amount\":\"999\"}", b"{}", 2);

    assert_eq!(commit(store, |tx| Ok(tx.idempotency_record(&scope, &key)?)), None, "absent at first");
    assert!(commit(store, |tx| Ok(tx.insert_key(&scope, &key, &first)?)), "the first insert stores");
    assert!(!commit(store, |tx| Ok(tx.insert_key(&scope, &key, &second)?)), "a repeat does not");
    assert_eq!(commit(store, |tx| Ok(tx.idempotency_record(&scope, &key)?)), Some(first.clone()), "the first record stays, byte for byte");

    for (other, label) in [
        (key_scope(&org, Mode::Test, "POST /partner/payouts"), "another operation"),
        (key_scope(&org, Mode::Live, "POST /partner/stk"), "another mode"),
        (key_scope(&other_org, Mode::Test, "POST /partner/stk"), "another organisation"),
    ] {
        assert_eq!(commit(store, |tx| Ok(tx.idempotency_record(&other, &key)?)), None, "{label}");
        assert!(commit(store, |tx| Ok(tx.insert_key(&other, &key, &second)?)), "{label}");
    }
    assert!(commit(store, |tx| Ok(tx.insert_key(&scope, &idem_key("order-1002"), &second)?)), "another key");

    let empty = record("{}", b"", 6);
    let key3 = idem_key("order-1003");
    assert!(commit(store, |tx| Ok(tx.insert_key(&scope, &key3, &empty)?)));
    let stored = commit(store, |tx| Ok(tx.idempotency_record(&scope, &key3)?)).expect("stored");
    assert_eq!(stored.outcome, Some(Outcome::Snapshot(Vec::new())), "an empty snapshot is stored as empty, not as no outcome");
    // What a version before snapshots kept reads back as it was.
    let earlier = IdempotencyRecord { outcome: Some(Outcome::Earlier(b"{\"charge_ref\":\"ch_1\"}".to_vec())), ..record("{}", b"", 7) };
    let key4 = idem_key("order-1004");
    assert!(commit(store, |tx| Ok(tx.insert_key(&scope, &key4, &earlier)?)));
    assert_eq!(commit(store, |tx| Ok(tx.idempotency_record(&scope, &key4)?)), Some(earlier), "an earlier answer, byte for byte");
}

/// `purge_keys` deletes the keys created strictly before the instant, and counts them.
pub fn purge_keys_removes_old_ones_only(store: &dyn Store) {
    let org = insert_org(store, "Duka", at(0));
    let scope = key_scope(&org, Mode::Test, "POST /partner/stk");
    let get = |key: &str| commit(store, |tx| Ok(tx.idempotency_record(&scope, &idem_key(key))?));
    for (key, t) in [("k1", 1), ("k2", 2), ("k3", 3)] {
        let r = record("{}", b"{}", t);
        assert!(commit(store, |tx| Ok(tx.insert_key(&scope, &idem_key(key), &r)?)));
    }

    assert_eq!(commit(store, |tx| Ok(tx.purge_keys(at(0))?)), 0);
    assert_eq!(commit(store, |tx| Ok(tx.purge_keys(at(2))?)), 1, "only k1 is older than the cut-off");
    assert_eq!(get("k1"), None, "purged");
    let again = record("{}", b"{}", 10);
    assert!(commit(store, |tx| Ok(tx.insert_key(&scope, &idem_key("k1"), &again)?)), "a purged key can be used afresh");
    assert_eq!(get("k2").map(|r| r.created_at), Some(at(2)), "created at the cut-off: kept");
    assert_eq!(get("k3").map(|r| r.created_at), Some(at(3)));
    assert_eq!(commit(store, |tx| Ok(tx.purge_keys(at(11))?)), 3);
    assert_eq!(get("k2"), None);
}
