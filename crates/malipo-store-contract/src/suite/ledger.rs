//! The ledger: posting journals, the audit chain, balance rules, holds, pending credits.

use malipo_charges::ChargeState;
use malipo_core::{AccountId, MinorUnit, Mode, Timestamp};
use malipo_ledger::{chain_hash, AccountKind, ChainLink, JournalKind, LedgerError, GENESIS_HASH};
use malipo_service::{PostingQuery, ServiceError, StatementLine, Store};

use crate::fixtures::ledger_error;
use crate::fixtures::*;

/// Posting updates balances and commits the journal unsealed; sealing appends it to its
/// ledger's audit chain: per (mode, currency), `seq` from 1, `prev_hash` linking to the previous
/// journal ([`GENESIS_HASH`] first), `hash` equal to `chain_hash`; the snapshot returns each
/// journal as posted (lines in order) and `ledger_snapshot(Some(mode))` only that mode's
/// accounts and journals.
pub fn post_journal_updates_balances_and_chains(store: &dyn Store) {
    let kes = insert_platform(store, Mode::Test, KES);
    let m = insert_merchant(store, "Duka", Mode::Test);
    let (w, _) = insert_wallet(store, Mode::Test, KES, &msisdn("254712000010"));

    let j1 = post(store, transfer(Mode::Test, KES, &kes.issuance.id, &w.id, 10_000, at(1)));
    let j2 = journal(Mode::Test, KES, JournalKind::Charge, &[(&w.id, -2_500), (&m.collection.id, 2_475), (&kes.revenue.id, 25)], at(2));
    let j3 = journal(Mode::Test, KES, JournalKind::SandboxFunding, &[(&kes.sandbox_funding.id, -500), (&w.id, 500)], at(3));
    commit(store, |tx| {
        tx.post_journal(&j2)?;
        tx.post_journal(&j3)?;
        Ok(())
    });
    assert_eq!(balance(store, &kes.issuance.id), -10_000);
    assert_eq!(balance(store, &kes.sandbox_funding.id), -500);
    assert_eq!(balance(store, &w.id), 8_000);
    assert_eq!(balance(store, &m.collection.id), 2_475);
    assert_eq!(balance(store, &kes.revenue.id), 25);
    assert_eq!(balance(store, &m.payout.id), 0);

    // Other ledgers have their own chains.
    let live = insert_platform(store, Mode::Live, KES);
    let live_m = insert_merchant(store, "Duka Live", Mode::Live);
    let j4 = post(store, transfer(Mode::Live, KES, &live.issuance.id, &live_m.payout.id, 700, at(4)));
    let ugx_platform = insert_platform(store, Mode::Test, ugx());
    let (ugx_w, _) = insert_wallet(store, Mode::Test, ugx(), &msisdn("256712000010"));
    let j5 = post(store, transfer(Mode::Test, ugx(), &ugx_platform.sandbox_funding.id, &ugx_w.id, 900, at(5)));
    assert_eq!(balance(store, &live_m.payout.id), 700);
    assert_eq!(balance(store, &ugx_w.id), 900);

    let unsealed = query(store, |tx| Ok(tx.ledger_snapshot(None)?));
    assert!(unsealed.journals.iter().all(|cj| cj.link.is_none()), "posted journals await their seal");
    assert!(malipo_ledger::verify(&unsealed).is_empty(), "unsealed journals are sound, not a broken chain");
    assert_eq!(seal(store), 5);
    let snapshot = query(store, |tx| Ok(tx.ledger_snapshot(None)?));
    let mut kes_test: Vec<_> = snapshot.journals.iter().filter(|cj| cj.journal.mode == Mode::Test && cj.journal.currency == KES).collect();
    kes_test.sort_by_key(|cj| cj.seq());
    assert_eq!(kes_test.iter().map(|cj| cj.seq()).collect::<Vec<_>>(), vec![Some(1), Some(2), Some(3)]);
    for (cj, posted) in kes_test.iter().zip([&j1, &j2, &j3]) {
        assert_eq!(&cj.journal, posted, "the journal as posted, lines in order");
    }
    let links: Vec<&ChainLink> = kes_test.iter().filter_map(|cj| cj.link.as_ref()).collect();
    assert_eq!(links[0].prev_hash, GENESIS_HASH);
    assert_eq!(links[1].prev_hash, links[0].hash);
    assert_eq!(links[2].prev_hash, links[1].hash);
    for (link, cj) in links.iter().zip(&kes_test) {
        assert_eq!(link.hash, chain_hash(&link.prev_hash, link.seq, &cj.journal));
    }
    for (j, label) in [(&j4, "live KES"), (&j5, "test UGX")] {
        let cj = snapshot.journals.iter().find(|cj| cj.journal.id == j.id).unwrap_or_else(|| panic!("{label} journal in the snapshot"));
        let link = cj.link.as_ref().unwrap_or_else(|| panic!("{label} sealed"));
        assert_eq!((link.seq, link.prev_hash.as_str()), (1, GENESIS_HASH), "{label} starts its own chain");
        assert_eq!(link.hash, chain_hash(GENESIS_HASH, 1, j));
        assert_eq!(&cj.journal, j);
    }
    assert_eq!(snapshot.journals.len(), 5);
    assert_eq!(snapshot.accounts.len(), 3 + 2 + 1 + 3 + 2 + 3 + 1, "every account of both modes");

    let test = query(store, |tx| Ok(tx.ledger_snapshot(Some(Mode::Test))?));
    assert_eq!(test.journals.len(), 4);
    assert!(test.journals.iter().all(|cj| cj.journal.mode == Mode::Test));
    assert_eq!(test.accounts.len(), 3 + 2 + 1 + 3 + 1);
    assert!(test.accounts.iter().all(|a| a.mode == Mode::Test));
    let live_snapshot = query(store, |tx| Ok(tx.ledger_snapshot(Some(Mode::Live))?));
    assert_eq!(live_snapshot.journals.iter().map(|cj| &cj.journal).collect::<Vec<_>>(), vec![&j4]);
    assert!(live_snapshot.accounts.iter().all(|a| a.mode == Mode::Live));
    assert_eq!(live_snapshot.accounts.len(), 3 + 2);
    assert!(malipo_ledger::verify(&test).is_empty());
    assert!(malipo_ledger::verify(&live_snapshot).is_empty());
    assert_ledger_sound(store);
}

/// A debit below zero of an account that may not go negative is refused with
/// `InsufficientFunds(account)` and writes nothing: the failed closure also rolls back a
/// journal it posted successfully before.
pub fn overdraft_is_refused_and_writes_nothing(store: &dyn Store) {
    let kes = insert_platform(store, Mode::Test, KES);
    let m = insert_merchant(store, "Duka", Mode::Test);
    let (w, _) = insert_wallet(store, Mode::Test, KES, &msisdn("254712000011"));
    post(store, transfer(Mode::Test, KES, &kes.issuance.id, &w.id, 1_000, at(1)));

    let top_up = transfer(Mode::Test, KES, &kes.issuance.id, &w.id, 500, at(2));
    let overdraft = transfer(Mode::Test, KES, &w.id, &m.collection.id, 1_501, at(2));
    let err = refused(store, |tx| {
        tx.post_journal(&top_up)?;
        tx.post_journal(&overdraft)?;
        Ok(())
    });
    assert_eq!(err, ledger_error(LedgerError::InsufficientFunds(w.id.clone())));
    assert!(err.is_insufficient_funds());
    assert_eq!(balance(store, &w.id), 1_000, "the top-up in the failed transaction is rolled back");
    assert_eq!(balance(store, &kes.issuance.id), -1_000);
    assert_eq!(balance(store, &m.collection.id), 0);
    assert_eq!(journal_count(store), 1, "no journal of the failed transaction remains");

    let overdraft = transfer(Mode::Test, KES, &w.id, &m.collection.id, 1_001, at(3));
    assert_eq!(refused(store, |tx| Ok(tx.post_journal(&overdraft)?)), ledger_error(LedgerError::InsufficientFunds(w.id.clone())));
    post(store, transfer(Mode::Test, KES, &w.id, &m.collection.id, 1_000, at(4)));
    assert_eq!(balance(store, &w.id), 0, "exactly the balance may be spent");
    assert_eq!(balance(store, &m.collection.id), 1_000);
    assert_eq!(journal_count(store), 2);
    assert_ledger_sound(store);
}

/// `post_journal_whole` posts as `post_journal`, and a journal it refuses is never committed,
/// even by a closure that goes on after the refusal: the adapter either undid the journal (a
/// savepoint) or refuses to commit the transaction at all.
pub fn post_journal_whole_never_commits_a_refused_journal(store: &dyn Store) {
    let kes = insert_platform(store, Mode::Test, KES);
    let m = insert_merchant(store, "Duka", Mode::Test);
    // Accounts are locked in descending id order (ids are time-ordered): the funded wallet,
    // opened last, is debited before the empty one is refused.
    let (empty, _) = insert_wallet(store, Mode::Test, KES, &msisdn("254712000018"));
    let (w, _) = insert_wallet(store, Mode::Test, KES, &msisdn("254712000019"));
    commit(store, |tx| Ok(tx.post_journal_whole(&transfer(Mode::Test, KES, &kes.issuance.id, &w.id, 1_000, at(1)))?));
    assert_eq!((balance(store, &w.id), balance(store, &kes.issuance.id)), (1_000, -1_000));

    // Two debits, the second refused after the first was applied: none of it may remain.
    let refused_journal =
        journal(Mode::Test, KES, JournalKind::Transfer, &[(&w.id, -300), (&empty.id, -200), (&m.collection.id, 500)], at(2));
    let mut seen = None;
    let outcome = malipo_service::write(store, |tx| {
        seen = Some(tx.post_journal_whole(&refused_journal));
        Ok(())
    });
    assert_eq!(seen, Some(Err(malipo_service::StoreError::Ledger(LedgerError::InsufficientFunds(empty.id.clone())))));
    let _ = outcome; // committed with nothing of the journal, or refused as a whole
    assert_eq!((balance(store, &w.id), balance(store, &empty.id), balance(store, &m.collection.id)), (1_000, 0, 0));
    assert_eq!(journal_count(store), 1, "the refused journal is not written");
    assert_ledger_sound(store);
}

/// `post_journals_whole` posts journals as `post_journal_whole` of each in turn: a wallet funded
/// by the first and debited by the second has both postings with their running balances, in
/// order; a transaction that fails with a refused journal among them keeps none of them; and each
/// line is checked in its turn, not only their sum.
pub fn post_journals_whole_posts_each_in_turn(store: &dyn Store) {
    let kes = insert_platform(store, Mode::Test, KES);
    let m = insert_merchant(store, "Duka", Mode::Test);
    let (w, _) = insert_wallet(store, Mode::Test, KES, &msisdn("254712000020"));
    let funding = journal(Mode::Test, KES, JournalKind::SandboxFunding, &[(&kes.sandbox_funding.id, -1_000), (&w.id, 1_000)], at(1));
    let payment = transfer(Mode::Test, KES, &w.id, &m.collection.id, 600, at(1));
    commit(store, |tx| Ok(tx.post_journals_whole(&[&funding, &payment])?));
    assert_eq!((balance(store, &w.id), balance(store, &m.collection.id), balance(store, &kes.sandbox_funding.id)), (400, 600, -1_000));
    assert_eq!(journal_count(store), 2);
    let lines: Vec<_> = window(store, &w.id, None, (None, None), 10)
        .iter()
        .map(|l| (l.posting.journal_id.clone(), l.posting.amount.get(), l.posting.balance_after.get()))
        .collect();
    assert_eq!(lines, vec![(funding.id.clone(), 1_000, 1_000), (payment.id.clone(), -600, 400)]);

    // The second overdraws what the first funded: neither remains.
    let (short, _) = insert_wallet(store, Mode::Test, KES, &msisdn("254712000021"));
    let funding = journal(Mode::Test, KES, JournalKind::SandboxFunding, &[(&kes.sandbox_funding.id, -100), (&short.id, 100)], at(2));
    let payment = transfer(Mode::Test, KES, &short.id, &m.collection.id, 101, at(2));
    let err = refused(store, |tx| Ok(tx.post_journals_whole(&[&funding, &payment])?));
    assert_eq!(err, ledger_error(LedgerError::InsufficientFunds(short.id.clone())));
    assert_eq!((balance(store, &short.id), balance(store, &m.collection.id), balance(store, &kes.sandbox_funding.id)), (0, 600, -1_000));
    assert_eq!(journal_count(store), 2, "neither journal is written");

    // Checked line by line, in order: a debit before the credit that would cover it is refused,
    // though the two together leave the wallet above zero.
    let payment = transfer(Mode::Test, KES, &short.id, &m.collection.id, 50, at(3));
    let funding = journal(Mode::Test, KES, JournalKind::SandboxFunding, &[(&kes.sandbox_funding.id, -100), (&short.id, 100)], at(3));
    let err = refused(store, |tx| Ok(tx.post_journals_whole(&[&payment, &funding])?));
    assert_eq!(err, ledger_error(LedgerError::InsufficientFunds(short.id.clone())));
    assert_eq!((balance(store, &short.id), journal_count(store)), (0, 2));
    assert_ledger_sound(store);
}

/// Issuance and sandbox funding accounts may go negative, and their holds never refuse.
pub fn issuance_may_go_negative(store: &dyn Store) {
    let kes = insert_platform(store, Mode::Test, KES);
    let m = insert_merchant(store, "Duka", Mode::Test);
    post(store, transfer(Mode::Test, KES, &kes.issuance.id, &m.payout.id, 1_000_000_000, at(1)));
    post(store, transfer(Mode::Test, KES, &kes.sandbox_funding.id, &m.collection.id, 5, at(2)));
    assert_eq!(balance(store, &kes.issuance.id), -1_000_000_000);
    assert_eq!(balance(store, &kes.sandbox_funding.id), -5);
    assert_eq!(balance(store, &m.payout.id), 1_000_000_000);

    commit(store, |tx| Ok(tx.hold(&kes.issuance.id, MinorUnit::new(700))?));
    assert_eq!(held(store, &kes.issuance.id), 700);
    post(store, transfer(Mode::Test, KES, &kes.issuance.id, &m.payout.id, 1, at(3)));
    assert_eq!(balance(store, &kes.issuance.id), -1_000_000_001);
    commit(store, |tx| Ok(tx.release(&kes.issuance.id, MinorUnit::new(700))?));
    assert_eq!(held(store, &kes.issuance.id), 0);
    assert_ledger_sound(store);
}

/// A journal, hold or release naming an account that does not exist is refused with
/// `UnknownAccount(id)`, and nothing is written.
pub fn unknown_account_is_refused(store: &dyn Store) {
    let kes = insert_platform(store, Mode::Test, KES);
    let ghost = AccountId::new();
    let j = transfer(Mode::Test, KES, &kes.issuance.id, &ghost, 100, at(1));
    assert_eq!(refused(store, |tx| Ok(tx.post_journal(&j)?)), ledger_error(LedgerError::UnknownAccount(ghost.clone())));
    assert_eq!(balance(store, &kes.issuance.id), 0);
    assert_eq!(journal_count(store), 0);
    assert_eq!(query(store, |tx| Ok(tx.account(&ghost)?)), None);
    assert_eq!(refused(store, |tx| Ok(tx.hold(&ghost, MinorUnit::new(1))?)), ledger_error(LedgerError::UnknownAccount(ghost.clone())));
    assert_eq!(refused(store, |tx| Ok(tx.release(&ghost, MinorUnit::new(1))?)), ledger_error(LedgerError::UnknownAccount(ghost.clone())));
    assert_ledger_sound(store);
}

/// Accounts whose opening was rolled back (a wallet's and a platform account's, on which a credit
/// would wait) are unknown to a later journal: refused with `UnknownAccount(id)`, nothing written.
/// (An adapter that remembers what opened accounts are must not trust an opening it saw in a
/// transaction that did not commit.)
pub fn an_account_whose_opening_rolled_back_is_unknown(store: &dyn Store) {
    let kes = insert_platform(store, Mode::Test, KES);
    let wallet = wallet_account(Mode::Test, KES, &msisdn("254712000031"));
    let revenue = system_account(Mode::Test, ugx(), AccountKind::Revenue);
    let undone = refused(store, |tx| {
        tx.insert_account(&wallet)?;
        tx.insert_account(&revenue)?;
        Err::<(), _>(ServiceError::Internal("rolled back".into()))
    });
    assert_eq!(undone, ServiceError::Internal("rolled back".into()));
    let to_wallet = transfer(Mode::Test, KES, &kes.issuance.id, &wallet.id, 100, at(1));
    assert_eq!(refused(store, |tx| Ok(tx.post_journal(&to_wallet)?)), ledger_error(LedgerError::UnknownAccount(wallet.id.clone())));
    let ugx_platform = insert_platform(store, Mode::Test, ugx());
    let to_revenue = transfer(Mode::Test, ugx(), &ugx_platform.issuance.id, &revenue.id, 100, at(2));
    assert_eq!(refused(store, |tx| Ok(tx.post_journal(&to_revenue)?)), ledger_error(LedgerError::UnknownAccount(revenue.id.clone())));
    assert_eq!(journal_count(store), 0);
    assert_eq!(balance(store, &kes.issuance.id), 0);
    assert_eq!(query(store, |tx| Ok(tx.account(&wallet.id)?)), None);
    assert_ledger_sound(store);
}

/// A journal line on an account of another currency or mode is refused with `Mismatch(id)`,
/// and nothing is written.
pub fn currency_or_mode_mismatch_is_refused(store: &dyn Store) {
    let kes = insert_platform(store, Mode::Test, KES);
    let (ugx_wallet, _) = insert_wallet(store, Mode::Test, ugx(), &msisdn("256712000012"));
    let live = insert_merchant(store, "Duka Live", Mode::Live);

    let other_currency = transfer(Mode::Test, KES, &kes.issuance.id, &ugx_wallet.id, 100, at(1));
    assert_eq!(refused(store, |tx| Ok(tx.post_journal(&other_currency)?)), ledger_error(LedgerError::Mismatch(ugx_wallet.id.clone())));
    let other_mode = transfer(Mode::Test, KES, &kes.issuance.id, &live.collection.id, 100, at(2));
    assert_eq!(refused(store, |tx| Ok(tx.post_journal(&other_mode)?)), ledger_error(LedgerError::Mismatch(live.collection.id.clone())));

    assert_eq!(balance(store, &kes.issuance.id), 0);
    assert_eq!(balance(store, &ugx_wallet.id), 0);
    assert_eq!(balance(store, &live.collection.id), 0);
    assert_eq!(journal_count(store), 0);
    assert_ledger_sound(store);
}

/// Holds reserve available money (`balance - held`): a hold beyond it is refused, a debit that
/// would eat into held money is refused, a release larger than what is held is refused; a hold
/// in a failed transaction is rolled back.
pub fn holds_and_releases(store: &dyn Store) {
    let kes = insert_platform(store, Mode::Test, KES);
    let m = insert_merchant(store, "Duka", Mode::Test);
    let (w, _) = insert_wallet(store, Mode::Test, KES, &msisdn("254712000013"));
    post(store, transfer(Mode::Test, KES, &kes.issuance.id, &w.id, 1_000, at(1)));
    let insufficient = || ledger_error(LedgerError::InsufficientFunds(w.id.clone()));

    commit(store, |tx| Ok(tx.hold(&w.id, MinorUnit::new(600))?));
    let stored = account(store, &w.id);
    assert_eq!((stored.balance.get(), stored.held.get(), stored.available().get()), (1_000, 600, 400));

    assert_eq!(refused(store, |tx| Ok(tx.hold(&w.id, MinorUnit::new(401))?)), insufficient(), "hold beyond available");
    assert_eq!(held(store, &w.id), 600);

    let eats_into_hold = transfer(Mode::Test, KES, &w.id, &m.collection.id, 401, at(2));
    assert_eq!(refused(store, |tx| Ok(tx.post_journal(&eats_into_hold)?)), insufficient(), "debit into held money");
    assert_eq!(balance(store, &w.id), 1_000);

    post(store, transfer(Mode::Test, KES, &w.id, &m.collection.id, 400, at(3)));
    let stored = account(store, &w.id);
    assert_eq!((stored.balance.get(), stored.held.get()), (600, 600));

    let err = refused(store, |tx| {
        tx.hold(&m.collection.id, MinorUnit::new(100))?;
        Err::<(), _>(ServiceError::InvalidState("abort".into()))
    });
    assert_eq!(err, ServiceError::InvalidState("abort".into()));
    assert_eq!(held(store, &m.collection.id), 0, "the hold of a failed transaction is rolled back");

    assert_eq!(
        refused(store, |tx| Ok(tx.release(&w.id, MinorUnit::new(601))?)),
        ledger_error(LedgerError::ReleaseExceedsHold(w.id.clone()))
    );
    assert_eq!(held(store, &w.id), 600);
    commit(store, |tx| {
        tx.release(&w.id, MinorUnit::new(200))?;
        tx.release(&w.id, MinorUnit::new(400))?;
        Ok(())
    });
    assert_eq!(held(store, &w.id), 0);
    post(store, transfer(Mode::Test, KES, &w.id, &m.collection.id, 600, at(4)));
    assert_eq!(balance(store, &w.id), 0);
    assert_ledger_sound(store);
}

/// `pending_credits` sums `amount - fee` of the `authorised` charges into that merchant
/// account only.
pub fn pending_credits_sum_authorised_charges(store: &dyn Store) {
    let a = insert_merchant(store, "A", Mode::Test);
    let b = insert_merchant(store, "B", Mode::Test);
    let payer = msisdn("254712000014");
    let with_state =
        |account: &malipo_ledger::Account, amount: i64, state: ChargeState, t: i64| in_state(charge(account, &payer, amount, at(t)), state);
    // A completed charge, with its journal.
    let kes = insert_platform(store, Mode::Test, KES);
    let (w, _) = insert_wallet(store, Mode::Test, KES, &payer);
    post(store, transfer(Mode::Test, KES, &kes.issuance.id, &w.id, 3_000, at(1)));
    let paid = post(store, transfer(Mode::Test, KES, &w.id, &a.collection.id, 3_000, at(4)));
    let done = completed(charge(&a.collection, &payer, 3_000, at(4)), &paid, at(4));
    let charges = [
        with_state(&a.collection, 10_000, ChargeState::Authorised, 1), // net 9_900
        with_state(&a.collection, 5_000, ChargeState::Authorised, 2),  // net 4_950
        with_state(&a.collection, 7_000, ChargeState::Pending, 3),
        done,
        with_state(&a.collection, 6_000, ChargeState::Expired, 4),
        with_state(&a.collection, 2_000, ChargeState::Failed, 5),
        with_state(&a.collection, 1_000, ChargeState::Declined, 6),
        with_state(&a.payout, 4_000, ChargeState::Authorised, 7),     // net 3_960
        with_state(&b.collection, 8_000, ChargeState::Authorised, 8), // net 7_920
    ];
    commit(store, |tx| {
        for c in &charges {
            tx.insert_charge(c)?;
        }
        Ok(())
    });
    let credits = |id: &AccountId| query(store, |tx| Ok(tx.pending_credits(id)?)).get();
    assert_eq!(credits(&a.collection.id), 14_850);
    assert_eq!(credits(&a.payout.id), 3_960);
    assert_eq!(credits(&b.collection.id), 7_920);
    assert_eq!(credits(&b.payout.id), 0);
    assert_eq!(credits(&AccountId::new()), 0);
    assert_ledger_sound(store);
}

/// An account's postings in ledger order after `after`, within a window of posting times.
fn window(
    store: &dyn Store,
    account: &AccountId,
    after: Option<i64>,
    (from, to): (Option<Timestamp>, Option<Timestamp>),
    limit: usize,
) -> Vec<StatementLine> {
    let q = PostingQuery { cursor: after, from, to, ..PostingQuery::oldest_first(account.clone(), limit) };
    query(store, |tx| Ok(tx.account_postings(&q)?))
}

/// `account_with_debits_since` reads an account with what left it from a moment on; `account_postings` pages an
/// account's postings oldest first with a cursor that later postings never disturb.
pub fn account_debits_and_statement(store: &dyn Store) {
    let kes = insert_platform(store, Mode::Test, KES);
    let m = insert_merchant(store, "Duka", Mode::Test);
    let (w, _) = insert_wallet(store, Mode::Test, KES, &msisdn("254712000014"));
    let (other, _) = insert_wallet(store, Mode::Test, KES, &msisdn("254712000015"));
    let top_up = post(store, transfer(Mode::Test, KES, &kes.issuance.id, &w.id, 10_000, at(10)));
    let first = post(store, transfer(Mode::Test, KES, &w.id, &m.collection.id, 1_000, at(20)));
    post(store, transfer(Mode::Test, KES, &kes.issuance.id, &other.id, 5_000, at(25)));
    let second = post(store, transfer(Mode::Test, KES, &w.id, &other.id, 2_500, at(30)));
    let sandbox = post(store, journal(Mode::Test, KES, JournalKind::SandboxFunding, &[(&w.id, -100), (&kes.issuance.id, 100)], at(30)));
    let debits = |since: i64| {
        let (account, debited) = query(store, |tx| Ok(tx.account_with_debits_since(&w.id, at(since))?)).expect("the wallet's account");
        assert_eq!(Some(account), query(store, |tx| Ok(tx.account(&w.id)?)), "the account as `account` reads it");
        debited.get()
    };
    assert_eq!(debits(0), 3_500, "credits are not debits, nor is the sandbox setting a balance");
    assert_eq!(debits(20), 3_500, "the bound is inclusive");
    assert_eq!(debits(21), 2_500);
    assert_eq!(debits(31), 0);
    let unknown = AccountId::new();
    assert_eq!(query(store, |tx| Ok(tx.account_with_debits_since(&unknown, at(0))?)), None);
    // A live wallet's debits all count (live mode has no sandbox funding).
    let live = insert_platform(store, Mode::Live, KES);
    let shop = insert_merchant(store, "Duka halisi", Mode::Live);
    let (lw, _) = insert_wallet(store, Mode::Live, KES, &msisdn("254712000016"));
    post(store, transfer(Mode::Live, KES, &live.issuance.id, &lw.id, 10_000, at(10)));
    post(store, transfer(Mode::Live, KES, &lw.id, &shop.collection.id, 1_200, at(20)));
    post(store, transfer(Mode::Live, KES, &lw.id, &shop.collection.id, 300, at(40)));
    let live_debits = |since: i64| query(store, |tx| Ok(tx.account_with_debits_since(&lw.id, at(since))?)).map(|(_, d)| d.get());
    assert_eq!((live_debits(0), live_debits(21), live_debits(41)), (Some(1_500), Some(300), Some(0)));

    let page = |after: Option<i64>, limit: usize| window(store, &w.id, after, (None, None), limit);
    let all = page(None, 10);
    let summary: Vec<_> =
        all.iter().map(|l| (l.posting.journal_id.clone(), l.posting.amount.get(), l.posting.balance_after.get(), l.posting.kind)).collect();
    assert_eq!(
        summary,
        vec![
            (top_up.id.clone(), 10_000, 10_000, JournalKind::Funding),
            (first.id.clone(), -1_000, 9_000, JournalKind::Funding),
            (second.id.clone(), -2_500, 6_500, JournalKind::Funding),
            (sandbox.id.clone(), -100, 6_400, JournalKind::SandboxFunding),
        ]
    );
    assert!(all.windows(2).all(|p| p[0].seq < p[1].seq), "seq increases");
    assert!(all.iter().all(|l| l.posting.account == w.id && l.posting.source_ref == "src_test"));
    let head = page(None, 2);
    assert_eq!(head, all[..2].to_vec());
    post(store, transfer(Mode::Test, KES, &kes.issuance.id, &w.id, 1, at(40)));
    let rest = page(Some(head[1].seq), 10);
    assert_eq!(rest.len(), 3, "the page after the cursor holds the last two and the new posting");
    assert_eq!(rest[..2], all[2..]);
    assert_eq!(rest[2].posting.amount.get(), 1);
}

/// `account_postings` keeps to a window of posting times (`from` inclusive, `to` exclusive,
/// either open), with the cursor and the limit as without one.
pub fn account_postings_keep_to_the_window(store: &dyn Store) {
    let kes = insert_platform(store, Mode::Test, KES);
    let m = insert_merchant(store, "Duka", Mode::Test);
    let (w, _) = insert_wallet(store, Mode::Test, KES, &msisdn("254712000016"));
    // Postings at 10, 20, 20, 30 and 40 seconds; another account's at 25.
    for (t, amount) in [(10, 1_000), (20, 2_000), (20, 3_000), (30, 4_000), (40, 5_000)] {
        post(store, transfer(Mode::Test, KES, &kes.issuance.id, &w.id, amount, at(t)));
    }
    post(store, transfer(Mode::Test, KES, &kes.issuance.id, &m.collection.id, 700, at(25)));
    let amounts = |after: Option<i64>, from: Option<i64>, to: Option<i64>, limit: usize| -> Vec<i64> {
        window(store, &w.id, after, (from.map(at), to.map(at)), limit).iter().map(|l| l.posting.amount.get()).collect()
    };
    assert_eq!(amounts(None, None, None, 10), vec![1_000, 2_000, 3_000, 4_000, 5_000]);
    assert_eq!(amounts(None, Some(20), Some(40), 10), vec![2_000, 3_000, 4_000], "from inclusive, to exclusive");
    assert_eq!(amounts(None, Some(21), None, 10), vec![4_000, 5_000], "open end");
    assert_eq!(amounts(None, None, Some(20), 10), vec![1_000], "open start");
    assert_eq!(amounts(None, Some(41), None, 10), Vec::<i64>::new());
    assert_eq!(amounts(None, Some(20), Some(20), 10), Vec::<i64>::new(), "an empty window");
    assert_eq!(amounts(None, Some(15), Some(35), 2), vec![2_000, 3_000], "at most limit");
    let first = window(store, &w.id, None, (Some(at(15)), Some(at(35))), 1);
    assert_eq!(amounts(Some(first[0].seq), Some(15), Some(35), 10), vec![3_000, 4_000], "the cursor pages within the window");
    // The collection account's line waits (it is hot) until applied.
    apply_waiting(store);
    let lines = window(store, &m.collection.id, None, (Some(at(20)), Some(at(30))), 10);
    assert_eq!(lines.iter().map(|l| (l.posting.amount.get(), l.posting.created_at)).collect::<Vec<_>>(), vec![(700, at(25))]);
    assert_ledger_sound(store);
}

/// `ledger_part` returns the accounts asked for and every journal with a posting on any of them,
/// with all its lines, and nothing else: a part that `verify_part` finds sound.
pub fn ledger_part_is_the_accounts_and_their_journals(store: &dyn Store) {
    let kes = insert_platform(store, Mode::Test, KES);
    let m = insert_merchant(store, "Duka", Mode::Test);
    let other = insert_merchant(store, "Other", Mode::Test);
    let (w, _) = insert_wallet(store, Mode::Test, KES, &msisdn("254712000020"));
    let funding = post(store, transfer(Mode::Test, KES, &kes.issuance.id, &w.id, 10_000, at(1)));
    let pay = post(
        store,
        journal(Mode::Test, KES, JournalKind::Charge, &[(&w.id, -2_500), (&m.collection.id, 2_475), (&kes.revenue.id, 25)], at(2)),
    );
    let elsewhere = post(store, transfer(Mode::Test, KES, &kes.issuance.id, &other.payout.id, 700, at(3)));

    let part = query(store, |tx| Ok(tx.ledger_part(&[m.collection.id.clone(), m.payout.id.clone()])?));
    let ids: Vec<&AccountId> = part.accounts.iter().map(|a| &a.id).collect();
    assert_eq!(ids, vec![&m.collection.id, &m.payout.id], "the accounts asked for");
    assert_eq!(
        part.journals.iter().map(|cj| &cj.journal).collect::<Vec<_>>(),
        vec![&pay],
        "only the journals touching them, with every line"
    );
    assert!(malipo_ledger::verify_part(&part).is_empty(), "sound before its seal");
    assert_eq!(part.journals[0].link, None);
    seal(store);
    let part = query(store, |tx| Ok(tx.ledger_part(&[m.collection.id.clone(), m.payout.id.clone()])?));
    let link = part.journals[0].link.as_ref().expect("sealed");
    assert_eq!(link.hash, chain_hash(&link.prev_hash, link.seq, &pay));
    assert!(malipo_ledger::verify_part(&part).is_empty());

    let part = query(store, |tx| Ok(tx.ledger_part(&[w.id.clone(), AccountId::new()])?));
    assert_eq!(part.accounts.len(), 1, "an unknown id is left out");
    let mut journals: Vec<_> = part.journals.iter().map(|cj| cj.journal.id.clone()).collect();
    journals.sort();
    let mut expected = vec![funding.id.clone(), pay.id.clone()];
    expected.sort();
    assert_eq!(journals, expected);
    assert!(!journals.contains(&elsewhere.id));
    assert!(malipo_ledger::verify_part(&part).is_empty());
    assert!(query(store, |tx| Ok(tx.ledger_part(&[])?)).journals.is_empty());
    assert_ledger_sound(store);
}
