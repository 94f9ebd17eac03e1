//! The audit chain's sealer: journals are committed unsealed and sealed afterwards, once, into
//! one gap-free chain per ledger, however many sealers run.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use malipo_core::{Mode, TransactionId};
use malipo_ledger::{chain_hash, ChainLink, GENESIS_HASH};
use malipo_service::{Store, UnsealedStats};

use crate::fixtures::*;

/// The chain links of one ledger's sealed journals, in seq order, with their journal ids.
fn chain_of(store: &dyn Store, mode: Mode) -> Vec<(TransactionId, ChainLink)> {
    let snapshot = query(store, |tx| Ok(tx.ledger_snapshot(Some(mode))?));
    let mut chain: Vec<(TransactionId, ChainLink)> = snapshot
        .journals
        .iter()
        .filter(|cj| cj.journal.currency == KES)
        .filter_map(|cj| {
            let link = cj.link.clone()?;
            assert_eq!(link.hash, chain_hash(&link.prev_hash, link.seq, &cj.journal), "the hash is chain_hash of the journal as stored");
            Some((cj.journal.id.clone(), link))
        })
        .collect();
    chain.sort_by_key(|(_, link)| link.seq);
    chain
}

fn stats(store: &dyn Store) -> UnsealedStats {
    query(store, |tx| Ok(tx.unsealed_stats()?))
}

fn seal_at_most(store: &dyn Store, limit: usize) -> usize {
    commit(store, |tx| Ok(tx.seal_pending(limit)?))
}

/// Posting commits a journal unsealed; `seal_pending` chains committed journals ledger by
/// ledger in (`created_at`, id) order from the ledger's head, at most `limit` at a time, each
/// with `seq` head + 1, `prev_hash` the head's hash and `hash` = `chain_hash`; a sealed journal
/// is never sealed again, and later journals continue the chain whatever their time.
pub fn sealing_chains_committed_journals_once(store: &dyn Store) {
    let kes = insert_platform(store, Mode::Test, KES);
    let live = insert_platform(store, Mode::Live, KES);
    let (w, _) = insert_wallet(store, Mode::Test, KES, &msisdn("254712000030"));
    let (lw, _) = insert_wallet(store, Mode::Live, KES, &msisdn("254712000031"));
    assert_eq!(stats(store), UnsealedStats::default());
    assert_eq!(seal_at_most(store, 10), 0, "nothing to seal");

    // Posted out of time order (clocks of several instances): sealed in time order.
    let a = post(store, transfer(Mode::Test, KES, &kes.issuance.id, &w.id, 100, at(5)));
    let b = post(store, transfer(Mode::Test, KES, &kes.issuance.id, &w.id, 200, at(2)));
    let c = post(store, transfer(Mode::Live, KES, &live.issuance.id, &lw.id, 300, at(7)));
    let d = post(store, transfer(Mode::Test, KES, &kes.issuance.id, &w.id, 400, at(9)));
    assert_eq!(stats(store), UnsealedStats { count: 4, oldest: Some(at(2)) });
    assert!(chain_of(store, Mode::Test).is_empty() && chain_of(store, Mode::Live).is_empty(), "nothing chained at posting");

    assert_eq!(seal_at_most(store, 2), 2, "at most the limit");
    assert_eq!(stats(store).count, 2);
    let test_order = [b.id.clone(), a.id.clone(), d.id.clone()];
    let partial: Vec<TransactionId> = chain_of(store, Mode::Test).into_iter().map(|(id, _)| id).collect();
    assert_eq!(partial[..], test_order[..partial.len()], "a ledger is sealed oldest first");
    assert_eq!(seal_at_most(store, 500), 2);
    assert_eq!(stats(store), UnsealedStats::default());
    assert_eq!(seal_at_most(store, 500), 0, "sealing again seals nothing");

    let test = chain_of(store, Mode::Test);
    assert_eq!(test.iter().map(|(id, _)| id.clone()).collect::<Vec<_>>(), test_order.to_vec());
    assert_eq!(test.iter().map(|(_, l)| l.seq).collect::<Vec<_>>(), vec![1, 2, 3]);
    assert_eq!(test[0].1.prev_hash, GENESIS_HASH);
    assert_eq!(test[1].1.prev_hash, test[0].1.hash);
    assert_eq!(test[2].1.prev_hash, test[1].1.hash);
    let live_chain = chain_of(store, Mode::Live);
    assert_eq!(live_chain.len(), 1);
    assert_eq!((&live_chain[0].0, live_chain[0].1.seq, live_chain[0].1.prev_hash.as_str()), (&c.id, 1, GENESIS_HASH));

    // A journal stamped before all of them, committed later, continues the chain from its head;
    // the entries already sealed do not change.
    let e = post(store, transfer(Mode::Test, KES, &kes.issuance.id, &w.id, 500, at(1)));
    assert_eq!(stats(store), UnsealedStats { count: 1, oldest: Some(at(1)) });
    assert_eq!(seal_at_most(store, 500), 1);
    let after = chain_of(store, Mode::Test);
    assert_eq!(after[..3], test[..], "sealed entries never change");
    assert_eq!((&after[3].0, after[3].1.seq, &after[3].1.prev_hash), (&e.id, 4, &test[2].1.hash));
    assert_ledger_sound(store);
}

/// Sealers running side by side (several instances), while journals are being posted, make one
/// gap-free chain: every journal sealed exactly once.
pub fn concurrent_sealers_make_one_chain(store: &dyn Store) {
    const POSTERS: usize = 2;
    const EACH: usize = 40;
    let kes = insert_platform(store, Mode::Test, KES);
    let wallets: Vec<_> = (0..POSTERS).map(|i| insert_wallet(store, Mode::Test, KES, &msisdn(&format!("25471200004{i}"))).0).collect();
    let sealed = AtomicUsize::new(0);
    let posting = AtomicBool::new(true);
    std::thread::scope(|s| {
        let sealers: Vec<_> = (0..2)
            .map(|_| {
                s.spawn(|| loop {
                    let still_posting = posting.load(Ordering::SeqCst);
                    let n = seal_at_most(store, 7);
                    sealed.fetch_add(n, Ordering::SeqCst);
                    if n == 0 && !still_posting {
                        break;
                    }
                })
            })
            .collect();
        let posters: Vec<_> = wallets
            .iter()
            .map(|w| {
                let issuance = &kes.issuance.id;
                s.spawn(move || {
                    for i in 0..EACH {
                        post(store, transfer(Mode::Test, KES, issuance, &w.id, 10, at(i64::try_from(i).expect("small"))));
                    }
                })
            })
            .collect();
        for p in posters {
            p.join().expect("poster");
        }
        posting.store(false, Ordering::SeqCst);
        for s in sealers {
            s.join().expect("sealer");
        }
    });
    assert_eq!(sealed.load(Ordering::SeqCst), POSTERS * EACH, "each journal sealed once");
    let chain = chain_of(store, Mode::Test);
    assert_eq!(
        chain.iter().map(|(_, l)| l.seq).collect::<Vec<_>>(),
        (1..=i64::try_from(POSTERS * EACH).expect("small")).collect::<Vec<_>>()
    );
    assert_ledger_sound(store);
}
