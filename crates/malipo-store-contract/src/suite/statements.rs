//! An account's postings as transactions: newest first, by journal kind, with the fee recorded
//! on each, one journal's postings, the balance before a moment, and posting times that never go
//! back on an account.

use malipo_core::{MinorUnit, Mode};
use malipo_ledger::{JournalKind, LedgerError};
use malipo_service::{PostingQuery, StatementLine, Store};

use crate::fixtures::ledger_error;
use crate::fixtures::*;

fn lines(store: &dyn Store, q: &PostingQuery) -> Vec<StatementLine> {
    query(store, |tx| Ok(tx.account_postings(q)?))
}

/// A fee recorded on a journal comes back on the posting of its account (the first line of that
/// account only), is covered by the audit chain, and the other lines carry none. Queries go
/// newest first with a cursor, and keep to journal kinds.
pub fn postings_carry_fees_and_page_newest_first_by_kind(store: &dyn Store) {
    let kes = insert_platform(store, Mode::Test, KES);
    let m = insert_merchant(store, "Duka", Mode::Test);
    let (w, _) = insert_wallet(store, Mode::Test, KES, &msisdn("254712000031"));
    post(store, transfer(Mode::Test, KES, &kes.issuance.id, &w.id, 100_000, at(1)));
    let charge =
        journal(Mode::Test, KES, JournalKind::Charge, &[(&w.id, -10_000), (&m.collection.id, 9_900), (&kes.revenue.id, 100)], at(2))
            .with_fee(&m.collection.id, MinorUnit::new(100));
    let charge = post(store, charge);
    let back =
        journal(Mode::Test, KES, JournalKind::Reversal, &[(&m.collection.id, -4_950), (&kes.revenue.id, -50), (&w.id, 5_000)], at(3))
            .with_fee(&m.collection.id, MinorUnit::new(-50));
    let back = post(store, back);
    let moved = post(store, transfer(Mode::Test, KES, &m.collection.id, &m.payout.id, 1_000, at(4)));

    let newest = PostingQuery { newest_first: true, ..PostingQuery::oldest_first(m.collection.id.clone(), 10) };
    let all = lines(store, &newest);
    let summary: Vec<_> = all
        .iter()
        .map(|l| (l.posting.journal_id.clone(), l.posting.amount.get(), l.posting.fee.get(), l.posting.balance_after.get()))
        .collect();
    assert_eq!(
        summary,
        vec![(moved.id.clone(), -1_000, 0, 3_950), (back.id.clone(), -4_950, -50, 4_950), (charge.id.clone(), 9_900, 100, 9_900)]
    );
    assert!(all.windows(2).all(|p| p[0].seq > p[1].seq), "newest first");
    let after_first = lines(store, &PostingQuery { cursor: Some(all[0].seq), ..newest.clone() });
    assert_eq!(after_first, all[1..].to_vec(), "the cursor pages backwards");
    let charges = lines(store, &PostingQuery { kinds: vec![JournalKind::Charge, JournalKind::Reversal], ..newest.clone() });
    assert_eq!(charges, all[1..].to_vec(), "kinds filter");
    assert_eq!(lines(store, &PostingQuery { kinds: vec![JournalKind::Payout], ..newest.clone() }), vec![]);
    // Seq bounds: above `after`, at most `up_to`, in either order.
    let bounded = PostingQuery { after: Some(all[2].seq), up_to: Some(all[1].seq), ..newest.clone() };
    assert_eq!(lines(store, &bounded), all[1..2].to_vec());
    let oldest =
        PostingQuery { after: Some(all[2].seq), up_to: Some(all[0].seq), ..PostingQuery::oldest_first(m.collection.id.clone(), 10) };
    assert_eq!(lines(store, &oldest), vec![all[1].clone(), all[0].clone()]);
    let wallet = lines(store, &PostingQuery::oldest_first(w.id.clone(), 10));
    assert!(wallet.iter().all(|l| l.posting.fee == MinorUnit::ZERO), "no fee on the payer's lines");

    // The fee is part of what the chain covers: the journal comes back with it.
    let snapshot = query(store, |tx| Ok(tx.ledger_snapshot(Some(Mode::Test))?));
    let stored = snapshot.journals.iter().find(|cj| cj.journal.id == charge.id).map(|cj| cj.journal.fees.clone());
    assert_eq!(stored, Some(charge.fees.clone()));
    assert_ledger_sound(store);
}

/// `journal_postings` answers one journal's postings on the given accounts in line order;
/// `last_posting_before` the account's last posting stamped before a moment.
pub fn journal_postings_and_the_last_posting_before(store: &dyn Store) {
    let kes = insert_platform(store, Mode::Test, KES);
    let m = insert_merchant(store, "Duka", Mode::Test);
    post(store, transfer(Mode::Test, KES, &kes.issuance.id, &m.collection.id, 5_000, at(10)));
    let moved = post(store, transfer(Mode::Test, KES, &m.collection.id, &m.payout.id, 2_000, at(20)));
    let own = [m.payout.id.clone(), m.collection.id.clone()];
    let found = query(store, |tx| Ok(tx.journal_postings(&moved.id, &own)?));
    let accounts: Vec<_> = found.iter().map(|l| (l.posting.account.clone(), l.posting.amount.get())).collect();
    assert_eq!(accounts, vec![(m.collection.id.clone(), -2_000), (m.payout.id.clone(), 2_000)], "line order");
    let payout_only = query(store, |tx| Ok(tx.journal_postings(&moved.id, &own[..1])?));
    assert_eq!(payout_only.len(), 1);
    let other = insert_merchant(store, "Other", Mode::Test);
    assert_eq!(query(store, |tx| Ok(tx.journal_postings(&moved.id, std::slice::from_ref(&other.collection.id))?)), vec![]);

    let before = |t: i64| {
        query(store, |tx| Ok(tx.last_posting_before(&m.collection.id, at(t))?))
            .map(|l| (l.posting.balance_after.get(), l.posting.journal_id))
    };
    let funded = query(store, |tx| Ok(tx.account_postings(&PostingQuery::oldest_first(m.collection.id.clone(), 1))?));
    assert_eq!(before(10), None);
    assert_eq!(before(11), Some((5_000, funded[0].posting.journal_id.clone())));
    assert_eq!(before(20).map(|b| b.0), Some(5_000), "before is strict");
    assert_eq!(before(21), Some((3_000, moved.id.clone())));
    assert_eq!(before(1_000).map(|b| b.0), Some(3_000));
    // Its seq is a cursor: the postings after it are those from the moment on.
    let last = query(store, |tx| Ok(tx.last_posting_before(&m.collection.id, at(20))?)).map(|l| l.seq);
    let from_20 = lines(store, &PostingQuery { cursor: last, ..PostingQuery::oldest_first(m.collection.id.clone(), 10) });
    assert_eq!(from_20.iter().map(|l| l.posting.amount.get()).collect::<Vec<_>>(), vec![-2_000]);
}

/// A journal whose clock reading is earlier than an account's latest posting (it read the clock,
/// then waited for the account's lock) is stamped with that posting's time on that account, so
/// an account's postings in ledger order are in time order; its other accounts keep its time.
pub fn posting_times_never_go_back_on_an_account(store: &dyn Store) {
    let kes = insert_platform(store, Mode::Test, KES);
    let m = insert_merchant(store, "Duka", Mode::Test);
    post(store, transfer(Mode::Test, KES, &kes.issuance.id, &m.collection.id, 5_000, at(100)));
    post(store, transfer(Mode::Test, KES, &kes.issuance.id, &m.payout.id, 700, at(50)));
    post(store, transfer(Mode::Test, KES, &m.collection.id, &m.payout.id, 1_000, at(60)));
    let times = |q: PostingQuery| lines(store, &q).iter().map(|l| (l.posting.amount.get(), l.posting.created_at)).collect::<Vec<_>>();
    assert_eq!(times(PostingQuery::oldest_first(m.collection.id.clone(), 10)), vec![(5_000, at(100)), (-1_000, at(100))]);
    assert_eq!(times(PostingQuery::oldest_first(m.payout.id.clone(), 10)), vec![(700, at(50)), (1_000, at(60))]);
    let window = PostingQuery { from: Some(at(100)), ..PostingQuery::oldest_first(m.collection.id.clone(), 10) };
    assert_eq!(lines(store, &window).len(), 2, "both are in the window of the later time");

    // A refused journal stamps nothing.
    let refused_journal = transfer(Mode::Test, KES, &m.payout.id, &m.collection.id, 1_000_000, at(500));
    let err = refused(store, |tx| {
        tx.post_journal(&refused_journal)?;
        Ok(())
    });
    assert_eq!(err, ledger_error(LedgerError::InsufficientFunds(m.payout.id.clone())));
    post(store, transfer(Mode::Test, KES, &kes.issuance.id, &m.collection.id, 1, at(200)));
    apply_waiting(store);
    assert_eq!(times(PostingQuery::oldest_first(m.collection.id.clone(), 10)).last(), Some(&(1, at(200))));
    assert_ledger_sound(store);
}
