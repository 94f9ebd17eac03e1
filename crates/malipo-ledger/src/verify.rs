//! `malipo ledger verify`: every invariant of the ledger, checked over a snapshot.

use std::collections::{BTreeMap, HashMap};

use malipo_core::{AccountId, Currency, MinorUnit, Mode, TransactionId};

use crate::account::Account;
use crate::chain::{chain_hash, GENESIS_HASH};
use crate::journal::Journal;

/// A journal's entry in its ledger's audit chain, given to it when it is sealed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChainLink {
    /// Position in its ledger, from 1.
    pub seq: i64,
    /// The previous journal's hash (or [`GENESIS_HASH`]).
    pub prev_hash: String,
    /// This journal's hash: [`chain_hash`] of `prev_hash`, `seq` and the journal.
    pub hash: String,
}

impl ChainLink {
    /// The link that follows a head (`seq` and `hash` of the ledger's last sealed journal; 0 and
    /// [`GENESIS_HASH`] for an empty chain) for `journal`.
    pub fn after(head_seq: i64, head_hash: &str, journal: &Journal) -> ChainLink {
        let seq = head_seq.saturating_add(1);
        ChainLink { seq, prev_hash: head_hash.to_owned(), hash: chain_hash(head_hash, seq, journal) }
    }
}

/// A stored journal with its place in the audit chain, once sealed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChainedJournal {
    /// Its chain entry; `None` while the journal is committed but not yet sealed.
    pub link: Option<ChainLink>,
    /// The journal, with its lines as stored in postings.
    pub journal: Journal,
}

impl ChainedJournal {
    /// The chain position, when sealed.
    pub fn seq(&self) -> Option<i64> {
        self.link.as_ref().map(|l| l.seq)
    }

    /// Whether the chain entry covers the journal as it is now (its hash over its contents and
    /// its link); `None` for a journal not yet sealed, which no entry covers.
    pub fn entry_holds(&self) -> Option<bool> {
        self.link.as_ref().map(|l| l.hash == chain_hash(&l.prev_hash, l.seq, &self.journal))
    }
}

/// Everything the verifier reads.
#[derive(Clone, Debug, Default)]
pub struct LedgerSnapshot {
    /// All accounts.
    pub accounts: Vec<Account>,
    /// All journals with their postings as lines.
    pub journals: Vec<ChainedJournal>,
}

impl LedgerSnapshot {
    /// How many journals are committed but not yet sealed into their chain: the verifier checks
    /// that they balance and that balances match them, but no chain entry yet proves that they
    /// are as they were posted.
    pub fn unsealed(&self) -> usize {
        self.journals.iter().filter(|cj| cj.link.is_none()).count()
    }
}

/// One broken invariant.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Violation {
    /// A journal's postings do not sum to zero, or it has fewer than two.
    #[error("journal {0} does not balance")]
    UnbalancedJournal(TransactionId),
    /// A posting names an account that does not exist or is in another currency or mode.
    #[error("journal {0} posts to account {1}, which is missing or in another ledger")]
    ForeignAccount(TransactionId, AccountId),
    /// An account's stored balance differs from the sum of its postings.
    #[error("account {account}: stored balance {stored} but postings sum to {computed}")]
    BalanceMismatch {
        /// The account.
        account: AccountId,
        /// Its stored balance.
        stored: i64,
        /// The sum of its postings.
        computed: i64,
    },
    /// An account that may not go negative is negative, or holds more than it has.
    #[error("account {0} is below zero or holds more than its balance")]
    NegativeBalance(AccountId),
    /// The audit chain is broken at this (sealed) journal.
    #[error("audit chain of {mode}/{currency} broken at journal {journal} (seq {seq})")]
    BrokenChain {
        /// The ledger's mode.
        mode: Mode,
        /// The ledger's currency.
        currency: Currency,
        /// The first journal whose link does not hold.
        journal: TransactionId,
        /// Its position.
        seq: i64,
    },
}

/// Checks every invariant; an empty result means the ledger is sound. Every journal must balance
/// and every balance equal its postings, sealed or not; the sealed journals of each ledger must
/// form its chain from the genesis (seq 1, 2, ... each linked to the one before and hashed over
/// its contents). Journals not yet sealed are in no chain and are not reported as breaking it
/// (see [`LedgerSnapshot::unsealed`]).
pub fn verify(snapshot: &LedgerSnapshot) -> Vec<Violation> {
    let mut violations = Vec::new();
    let accounts: HashMap<&AccountId, &Account> = snapshot.accounts.iter().map(|a| (&a.id, a)).collect();
    let mut sums: HashMap<&AccountId, i128> = HashMap::new();
    let mut chains: BTreeMap<(Mode, Currency), Vec<(&ChainLink, &Journal)>> = BTreeMap::new();

    for cj in &snapshot.journals {
        let j = &cj.journal;
        let total: i128 = j.lines.iter().map(|l| i128::from(l.amount.get())).sum();
        if total != 0 || j.lines.len() < 2 {
            violations.push(Violation::UnbalancedJournal(j.id.clone()));
        }
        for line in &j.lines {
            match accounts.get(&line.account) {
                Some(a) if a.currency == j.currency && a.mode == j.mode => {
                    let sum = sums.entry(&a.id).or_default();
                    *sum = sum.saturating_add(i128::from(line.amount.get()));
                }
                _ => violations.push(Violation::ForeignAccount(j.id.clone(), line.account.clone())),
            }
        }
        if let Some(link) = &cj.link {
            chains.entry((j.mode, j.currency)).or_default().push((link, j));
        }
    }

    for a in &snapshot.accounts {
        let computed = sums.get(&a.id).copied().unwrap_or(0);
        if computed != i128::from(a.balance.get()) {
            violations.push(Violation::BalanceMismatch {
                account: a.id.clone(),
                stored: a.balance.get(),
                computed: i64::try_from(computed).unwrap_or(i64::MAX),
            });
        }
        let negative = !a.kind.allows_negative() && (a.balance < MinorUnit::ZERO || a.held > a.balance);
        if negative || a.held < MinorUnit::ZERO {
            violations.push(Violation::NegativeBalance(a.id.clone()));
        }
    }

    for ((mode, currency), mut chain) in chains {
        chain.sort_by_key(|(link, _)| link.seq);
        let mut prev = GENESIS_HASH;
        for (i, (link, j)) in chain.iter().enumerate() {
            let expected_seq = i64::try_from(i).unwrap_or(i64::MAX).saturating_add(1);
            let ok = link.seq == expected_seq && link.prev_hash == prev && link.hash == chain_hash(&link.prev_hash, link.seq, j);
            if !ok {
                violations.push(Violation::BrokenChain { mode, currency, journal: j.id.clone(), seq: link.seq });
                break;
            }
            prev = &link.hash;
        }
    }
    violations
}

/// Checks the part of the ledger that a set of accounts reaches, without the rest: `part.accounts`
/// are the accounts checked, and `part.journals` must hold every journal with a posting on any
/// of them (with all its lines, also those on accounts outside the part). Each journal must
/// balance and, once sealed, keep its own audit-chain entry (its hash over its contents and its
/// link); each account's balance must equal its postings and respect its floor. The links
/// between entries are not walked here: [`verify`] walks the whole chain.
pub fn verify_part(part: &LedgerSnapshot) -> Vec<Violation> {
    let mut violations = Vec::new();
    let accounts: HashMap<&AccountId, &Account> = part.accounts.iter().map(|a| (&a.id, a)).collect();
    let mut sums: HashMap<&AccountId, i128> = HashMap::new();
    for cj in &part.journals {
        let j = &cj.journal;
        let total = j.lines.iter().fold(0_i128, |t, l| t.saturating_add(i128::from(l.amount.get())));
        if total != 0 || j.lines.len() < 2 {
            violations.push(Violation::UnbalancedJournal(j.id.clone()));
        }
        for line in &j.lines {
            match accounts.get(&line.account) {
                Some(a) if a.currency == j.currency && a.mode == j.mode => {
                    let sum = sums.entry(&a.id).or_default();
                    *sum = sum.saturating_add(i128::from(line.amount.get()));
                }
                Some(_) => violations.push(Violation::ForeignAccount(j.id.clone(), line.account.clone())),
                None => {}
            }
        }
        if let (Some(false), Some(link)) = (cj.entry_holds(), &cj.link) {
            violations.push(Violation::BrokenChain { mode: j.mode, currency: j.currency, journal: j.id.clone(), seq: link.seq });
        }
    }
    for a in &part.accounts {
        let computed = sums.get(&a.id).copied().unwrap_or(0);
        if computed != i128::from(a.balance.get()) {
            violations.push(Violation::BalanceMismatch {
                account: a.id.clone(),
                stored: a.balance.get(),
                computed: i64::try_from(computed).unwrap_or(i64::MAX),
            });
        }
        let negative = !a.kind.allows_negative() && (a.balance < MinorUnit::ZERO || a.held > a.balance);
        if negative || a.held < MinorUnit::ZERO {
            violations.push(Violation::NegativeBalance(a.id.clone()));
        }
    }
    violations
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use crate::account::AccountKind;
    use crate::journal::{hold, release, JournalKind, JournalLine, LedgerError};
    use malipo_core::Timestamp;
    use proptest::prelude::*;

    /// A minimal ledger that applies operations with the crate's rules, all-or-nothing.
    struct Model {
        snapshot: LedgerSnapshot,
    }

    impl Model {
        fn clone_model(&self) -> Model {
            Model { snapshot: self.snapshot.clone() }
        }

        fn new() -> Self {
            let now = Timestamp::from_micros(0);
            let mut accounts = vec![Account::open(None, Mode::Test, AccountKind::Issuance, Currency::KES, None, now)];
            for kind in [AccountKind::Wallet, AccountKind::Wallet, AccountKind::Collection, AccountKind::Revenue] {
                accounts.push(Account::open(None, Mode::Test, kind, Currency::KES, None, now));
            }
            Model { snapshot: LedgerSnapshot { accounts, journals: vec![] } }
        }

        fn post(&mut self, lines: Vec<(usize, i64)>) -> Result<(), LedgerError> {
            self.post_unsealed(lines)?;
            self.seal();
            Ok(())
        }

        /// Posts without sealing: the journal is committed, not yet in its chain.
        fn post_unsealed(&mut self, lines: Vec<(usize, i64)>) -> Result<(), LedgerError> {
            let lines = lines
                .into_iter()
                .map(|(i, v)| JournalLine { account: self.snapshot.accounts[i].id.clone(), amount: MinorUnit::new(v) })
                .collect();
            let j = Journal::new(Mode::Test, Currency::KES, JournalKind::Transfer, "x", lines, Timestamp::from_micros(1))?;
            let mut accounts = self.snapshot.accounts.clone();
            for line in &j.lines {
                let a = accounts.iter_mut().find(|a| a.id == line.account).ok_or(LedgerError::UnknownAccount(line.account.clone()))?;
                j.apply_line(a, line.amount)?;
            }
            self.snapshot.accounts = accounts;
            self.snapshot.journals.push(ChainedJournal { link: None, journal: j });
            Ok(())
        }

        /// Seals the unsealed journals in their order, as a sealer does.
        fn seal(&mut self) {
            let mut head = (0, GENESIS_HASH.to_owned());
            for cj in &mut self.snapshot.journals {
                let link = cj.link.get_or_insert_with(|| ChainLink::after(head.0, &head.1, &cj.journal));
                head = (link.seq, link.hash.clone());
            }
        }
    }

    #[derive(Debug, Clone)]
    enum Op {
        Fund(usize, i64),
        Move(usize, usize, i64),
        Split(usize, usize, usize, i64, i64),
        Hold(usize, i64),
        Release(usize, i64),
        Seal,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (1..5usize, 1..10_000i64).prop_map(|(a, v)| Op::Fund(a, v)),
            (0..5usize, 0..5usize, 1..10_000i64).prop_map(|(a, b, v)| Op::Move(a, b, v)),
            (1..5usize, 1..5usize, 1..5usize, 1..5_000i64, 0..500i64).prop_map(|(a, b, c, v, f)| Op::Split(a, b, c, v, f)),
            (1..5usize, 1..10_000i64).prop_map(|(a, v)| Op::Hold(a, v)),
            (1..5usize, 1..10_000i64).prop_map(|(a, v)| Op::Release(a, v)),
            Just(Op::Seal),
        ]
    }

    proptest! {
        #[test]
        fn random_operations_never_break_an_invariant(ops in proptest::collection::vec(op(), 1..60)) {
            let mut m = Model::new();
            for op in ops {
                // Refusals are fine; what must never happen is a state that breaks an invariant.
                let _ = match op {
                    Op::Fund(a, v) => m.post(vec![(0, -v), (a, v)]),
                    // Moves wait for a seal, as journals do between their commit and the sealer.
                    Op::Move(a, b, v) => m.post_unsealed(vec![(a, -v), (b, v)]),
                    Op::Split(a, b, c, v, f) => m.post(vec![(a, -(v + f)), (b, v), (c, f)]),
                    Op::Hold(a, v) => hold(&mut m.snapshot.accounts[a], MinorUnit::new(v)),
                    Op::Release(a, v) => release(&mut m.snapshot.accounts[a], MinorUnit::new(v)),
                    Op::Seal => {
                        m.seal();
                        Ok(())
                    }
                };
                prop_assert_eq!(verify(&m.snapshot), vec![]);
            }
            let total: i64 = m.snapshot.accounts.iter().map(|a| a.balance.get()).sum();
            prop_assert_eq!(total, 0, "no money created or lost");
        }
    }

    /// The part of `m` reached by accounts `ids`: those accounts and every journal touching them.
    fn part(m: &Model, ids: &[usize]) -> LedgerSnapshot {
        let accounts: Vec<Account> = ids.iter().map(|&i| m.snapshot.accounts[i].clone()).collect();
        let journals = m
            .snapshot
            .journals
            .iter()
            .filter(|cj| cj.journal.lines.iter().any(|l| accounts.iter().any(|a| a.id == l.account)))
            .cloned()
            .collect();
        LedgerSnapshot { accounts, journals }
    }

    #[test]
    fn a_part_is_checked_without_the_rest() {
        let mut m = Model::new();
        m.post(vec![(0, -500), (1, 500)]).unwrap();
        m.post(vec![(1, -200), (3, 190), (4, 10)]).unwrap();
        m.post(vec![(0, -70), (2, 70)]).unwrap();
        assert!(verify_part(&part(&m, &[1, 3])).is_empty());
        // Another part's damage is not this part's concern...
        let mut damaged = m.clone_model();
        damaged.snapshot.accounts[2].balance = MinorUnit::new(71);
        assert!(verify_part(&part(&damaged, &[1, 3])).is_empty());
        assert!(matches!(verify_part(&part(&damaged, &[2]))[..], [Violation::BalanceMismatch { stored: 71, computed: 70, .. }]));
        // ...but its own is found: a stored balance, an edited posting (its entry's hash), a
        // missing posting line (unbalanced), a journal deleted from under an account.
        let mut s = part(&m, &[1, 3]);
        s.accounts[0].balance = MinorUnit::new(299);
        assert!(matches!(verify_part(&s)[..], [Violation::BalanceMismatch { stored: 299, computed: 300, .. }]));
        let mut s = part(&m, &[1, 3]);
        s.journals[1].journal.lines[1].amount = MinorUnit::new(191);
        s.journals[1].journal.lines[2].amount = MinorUnit::new(9);
        let v = verify_part(&s);
        assert!(v.iter().any(|v| matches!(v, Violation::BrokenChain { seq: 2, .. })), "{v:?}");
        let mut s = part(&m, &[1, 3]);
        s.journals[1].journal.lines.pop();
        assert!(verify_part(&s).iter().any(|v| matches!(v, Violation::UnbalancedJournal(_))));
        let mut s = part(&m, &[1, 3]);
        s.journals.remove(0);
        assert!(verify_part(&s).iter().any(|v| matches!(v, Violation::BalanceMismatch { .. })));
    }

    #[test]
    fn tampering_is_detected() {
        let mut m = Model::new();
        m.post(vec![(0, -500), (1, 500)]).unwrap();
        m.post(vec![(1, -200), (3, 190), (4, 10)]).unwrap();
        assert!(verify(&m.snapshot).is_empty());

        let mut s = m.snapshot.clone();
        s.accounts[1].balance = MinorUnit::new(301);
        assert!(matches!(verify(&s)[..], [Violation::BalanceMismatch { stored: 301, computed: 300, .. }]));

        let mut s = m.snapshot.clone();
        s.journals[0].journal.lines[1].amount = MinorUnit::new(499);
        let v = verify(&s);
        assert!(v.contains(&Violation::UnbalancedJournal(s.journals[0].journal.id.clone())));
        assert!(v.iter().any(|x| matches!(x, Violation::BrokenChain { seq: 1, .. })));

        let mut s = m.snapshot.clone();
        s.journals.remove(0);
        assert!(verify(&s).iter().any(|x| matches!(x, Violation::BrokenChain { seq: 2, .. })));

        let mut s = m.snapshot.clone();
        s.accounts[2].balance = MinorUnit::new(-1);
        s.journals.clear();
        s.accounts.iter_mut().for_each(|a| a.balance = MinorUnit::ZERO);
        s.accounts[2].held = MinorUnit::new(1);
        assert!(verify(&s).contains(&Violation::NegativeBalance(s.accounts[2].id.clone())));
    }

    #[test]
    fn unsealed_journals_are_checked_but_not_chained() {
        let mut m = Model::new();
        m.post(vec![(0, -500), (1, 500)]).unwrap();
        m.post_unsealed(vec![(1, -200), (3, 190), (4, 10)]).unwrap();
        m.post_unsealed(vec![(0, -70), (2, 70)]).unwrap();
        assert_eq!(m.snapshot.unsealed(), 2);
        assert_eq!(verify(&m.snapshot), vec![], "committed journals awaiting their seal break nothing");
        assert_eq!(verify_part(&part(&m, &[1, 3])), vec![]);
        // Unsealed journals must still balance, and balances must still equal their postings.
        let mut s = m.snapshot.clone();
        s.journals[2].journal.lines[1].amount = MinorUnit::new(71);
        let v = verify(&s);
        assert!(v.contains(&Violation::UnbalancedJournal(s.journals[2].journal.id.clone())), "{v:?}");
        assert!(v.iter().any(|x| matches!(x, Violation::BalanceMismatch { stored: 70, computed: 71, .. })), "{v:?}");
        assert!(!v.iter().any(|x| matches!(x, Violation::BrokenChain { .. })), "{v:?}");
        let mut s = m.snapshot.clone();
        s.accounts[2].balance = MinorUnit::new(69);
        assert!(matches!(verify(&s)[..], [Violation::BalanceMismatch { stored: 69, computed: 70, .. }]));
        // Sealed, they chain on from the head, and tampering is then found at that entry.
        m.seal();
        assert_eq!(m.snapshot.unsealed(), 0);
        assert_eq!(m.snapshot.journals.iter().map(|cj| cj.seq()).collect::<Vec<_>>(), vec![Some(1), Some(2), Some(3)]);
        assert_eq!(verify(&m.snapshot), vec![]);
        let mut s = m.snapshot.clone();
        s.journals[1].journal.source_ref = "y".into();
        assert!(matches!(&verify(&s)[..], [Violation::BrokenChain { seq: 2, .. }]), "{:?}", verify(&s));
        // A sealed journal stripped of its entry leaves a gap that the next entry reports.
        let mut s = m.snapshot.clone();
        s.journals[1].link = None;
        assert!(matches!(&verify(&s)[..], [Violation::BrokenChain { seq: 3, .. }]), "{:?}", verify(&s));
    }
}
