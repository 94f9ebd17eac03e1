//! [`LedgerRepo`] over the in-memory tables.

use std::collections::{BTreeMap, BTreeSet};

use malipo_charges::{ChargeKind, ChargeState};
use malipo_core::{AccountId, MinorUnit, Mode, OrgId, Timestamp, TransactionId};
use malipo_ledger::journal::{hold, release};
use malipo_ledger::{Account, AccountKind, ChainedJournal, Journal, JournalKind, JournalLine, LedgerError, LedgerSnapshot, Posting};
use malipo_service::{AccountKey, LedgerRepo, PostingQuery, StatementLine, StoreError};

use crate::tx::{check, foreign_key, MemoryTx};

impl LedgerRepo for MemoryTx<'_> {
    fn insert_account(&mut self, account: &Account) -> Result<(), StoreError> {
        let s = self.w()?;
        if s.accounts.contains_key(&account.id) {
            return Err(StoreError::Duplicate);
        }
        let org_key = account.org_id.as_ref().map(|org| (org.clone(), account.mode, account.kind));
        let system_key = account.kind.is_system().then_some((account.mode, account.currency, account.kind));
        let wallet_key = match (&account.owner_msisdn, account.kind) {
            (Some(msisdn), AccountKind::Wallet) => Some((account.mode, msisdn.clone())),
            _ => None,
        };
        let taken = org_key.as_ref().is_some_and(|k| s.org_account_index.contains_key(k))
            || system_key.as_ref().is_some_and(|k| s.system_account_index.contains_key(k))
            || wallet_key.as_ref().is_some_and(|k| s.wallet_account_index.contains_key(k));
        if taken {
            return Err(StoreError::Duplicate);
        }
        if let Some(org) = &account.org_id {
            foreign_key(s.orgs.contains_key(org), "the account's organisation")?;
        }
        check(account.held >= MinorUnit::ZERO, "accounts_held_check")?;
        check(account.kind.allows_negative() || account.balance >= account.held, "accounts_balance_check")?;
        if let Some(k) = org_key {
            s.org_account_index.insert(k, account.id.clone());
        }
        if let Some(k) = system_key {
            s.system_account_index.insert(k, account.id.clone());
        }
        if let Some(k) = wallet_key {
            s.wallet_account_index.insert(k, account.id.clone());
        }
        s.accounts.insert(account.id.clone(), account.clone());
        Ok(())
    }

    fn account(&mut self, id: &AccountId) -> Result<Option<Account>, StoreError> {
        self.flush_journals()?;
        Ok(self.r().accounts.get(id).cloned())
    }

    fn find_account(&mut self, key: &AccountKey) -> Result<Option<Account>, StoreError> {
        self.flush_journals()?;
        let s = self.r();
        let id = match key {
            AccountKey::Org { org_id, mode, kind } => s.org_account_index.get(&(org_id.clone(), *mode, *kind)),
            AccountKey::System { mode, currency, kind } => s.system_account_index.get(&(*mode, *currency, *kind)),
        };
        Ok(id.and_then(|id| s.accounts.get(id)).cloned())
    }

    fn org_accounts(&mut self, org_id: &OrgId, mode: Mode) -> Result<Vec<Account>, StoreError> {
        self.flush_journals()?;
        let mut accounts: Vec<Account> =
            self.r().accounts.values().filter(|a| a.org_id.as_ref() == Some(org_id) && a.mode == mode).cloned().collect();
        accounts.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        Ok(accounts)
    }

    fn hold(&mut self, account: &AccountId, amount: MinorUnit) -> Result<(), StoreError> {
        self.flush_journals()?;
        let s = self.w()?;
        let acc = s.accounts.get_mut(account).ok_or_else(|| LedgerError::UnknownAccount(account.clone()))?;
        hold(acc, amount)?;
        Ok(())
    }

    fn release(&mut self, account: &AccountId, amount: MinorUnit) -> Result<(), StoreError> {
        self.flush_journals()?;
        let s = self.w()?;
        let acc = s.accounts.get_mut(account).ok_or_else(|| LedgerError::UnknownAccount(account.clone()))?;
        release(acc, amount)?;
        Ok(())
    }

    fn post_journal(&mut self, journal: &Journal) -> Result<(), StoreError> {
        self.flush_journals()?;
        let s = self.w()?;
        journal.check_balanced()?;
        if s.journal_ids.contains(&journal.id) {
            return Err(StoreError::Duplicate);
        }
        // `journals_source_key`: a charge, payout or payment request is paid by one journal.
        let pays = matches!(journal.kind, JournalKind::Charge | JournalKind::Payout | JournalKind::PaymentRequest);
        if pays && s.paid_sources.contains(&journal.source_ref) {
            return Err(StoreError::Duplicate);
        }
        // Load ("lock") every account first, in id order, as the SQL adapters do.
        let mut touched: BTreeMap<AccountId, Account> = BTreeMap::new();
        for line in &journal.lines {
            if !touched.contains_key(&line.account) {
                let acc = s.accounts.get(&line.account).ok_or_else(|| LedgerError::UnknownAccount(line.account.clone()))?;
                if acc.currency != journal.currency || acc.mode != journal.mode {
                    return Err(LedgerError::Mismatch(acc.id.clone()).into());
                }
                touched.insert(acc.id.clone(), acc.clone());
            }
        }
        // Apply the lines in order, on copies: nothing is written unless every line applies.
        let mut postings = Vec::with_capacity(journal.lines.len());
        let mut posted_at: BTreeMap<AccountId, Timestamp> = BTreeMap::new();
        for (i, line) in journal.lines.iter().enumerate() {
            let acc = touched.get_mut(&line.account).ok_or_else(|| LedgerError::UnknownAccount(line.account.clone()))?;
            journal.apply_line(acc, line.amount)?;
            // A posting's time never goes back on an account; a fee goes on the account's first line.
            let at = s.posted_at.get(&line.account).map_or(journal.created_at, |&last| last.max(journal.created_at));
            posted_at.insert(line.account.clone(), at);
            let first_of_account = journal.lines.iter().position(|l| l.account == line.account) == Some(i);
            postings.push(Posting {
                journal_id: journal.id.clone(),
                account: line.account.clone(),
                amount: line.amount,
                fee: if first_of_account { journal.fee_of(&line.account) } else { MinorUnit::ZERO },
                balance_after: acc.balance,
                kind: journal.kind,
                source_ref: journal.source_ref.clone(),
                created_at: at,
            });
        }
        // Unsealed: the sealer (`ChainRepo::seal_pending`) gives it its chain entry later.
        s.journals.push(ChainedJournal { link: None, journal: journal.clone() });
        s.journal_ids.insert(journal.id.clone());
        if pays {
            s.paid_sources.insert(journal.source_ref.clone());
        }
        s.postings.extend(postings);
        s.posted_at.extend(posted_at);
        s.accounts.extend(touched);
        Ok(())
    }

    fn pending_credits(&mut self, account: &AccountId) -> Result<MinorUnit, StoreError> {
        self.flush_journals()?;
        let mut sum = MinorUnit::ZERO;
        for c in self.r().charges.values() {
            if c.kind == ChargeKind::Charge && c.state == ChargeState::Authorised && &c.merchant_account == account {
                sum = sum.checked_add(c.net().map_err(LedgerError::from)?).map_err(LedgerError::from)?;
            }
        }
        Ok(sum)
    }

    fn account_with_debits_since(&mut self, id: &AccountId, since: Timestamp) -> Result<Option<(Account, MinorUnit)>, StoreError> {
        self.flush_journals()?;
        let Some(account) = self.account(id)? else { return Ok(None) };
        let mut sum = MinorUnit::ZERO;
        for p in &self.r().postings {
            if &p.account == id && p.amount.get() < 0 && p.created_at >= since && p.kind != JournalKind::SandboxFunding {
                sum = sum.checked_sub(p.amount).map_err(LedgerError::from)?;
            }
        }
        Ok(Some((account, sum)))
    }

    fn account_postings(&mut self, q: &PostingQuery) -> Result<Vec<StatementLine>, StoreError> {
        self.flush_journals()?;
        // A posting's place in posting order (from 1) plays the role of the SQL tables' serial id.
        let selected = |(i, p): &(usize, &Posting)| {
            let seq = i64::try_from(i + 1).unwrap_or(i64::MAX);
            p.account == q.account
                && q.from.is_none_or(|from| p.created_at >= from)
                && q.to.is_none_or(|to| p.created_at < to)
                && (q.kinds.is_empty() || q.kinds.contains(&p.kind))
                && q.cursor.is_none_or(|c| if q.newest_first { seq < c } else { seq > c })
                && q.after.is_none_or(|a| seq > a)
                && q.up_to.is_none_or(|u| seq <= u)
        };
        let line = |(i, p): (usize, &Posting)| StatementLine { seq: i64::try_from(i + 1).unwrap_or(i64::MAX), posting: p.clone() };
        let postings = self.r().postings.iter().enumerate();
        Ok(if q.newest_first {
            postings.rev().filter(selected).take(q.limit).map(line).collect()
        } else {
            postings.filter(selected).take(q.limit).map(line).collect()
        })
    }

    fn journal_postings(&mut self, journal: &TransactionId, accounts: &[AccountId]) -> Result<Vec<StatementLine>, StoreError> {
        self.flush_journals()?;
        Ok(self
            .r()
            .postings
            .iter()
            .enumerate()
            .filter(|(_, p)| &p.journal_id == journal && accounts.contains(&p.account))
            .map(|(i, p)| StatementLine { seq: i64::try_from(i + 1).unwrap_or(i64::MAX), posting: p.clone() })
            .collect())
    }

    fn last_posting_before(&mut self, account: &AccountId, at: Timestamp) -> Result<Option<StatementLine>, StoreError> {
        self.flush_journals()?;
        let postings = &self.r().postings;
        Ok(postings
            .iter()
            .enumerate()
            .rev()
            .find(|(_, p)| &p.account == account && p.created_at < at)
            .map(|(i, p)| StatementLine { seq: i64::try_from(i + 1).unwrap_or(i64::MAX), posting: p.clone() }))
    }

    fn ledger_snapshot(&mut self, mode: Option<Mode>) -> Result<LedgerSnapshot, StoreError> {
        self.flush_journals()?;
        let s = self.r();
        let in_mode = |m: Mode| mode.is_none_or(|wanted| wanted == m);
        let mut lines: BTreeMap<_, Vec<JournalLine>> = BTreeMap::new();
        for p in &s.postings {
            lines.entry(&p.journal_id).or_default().push(JournalLine { account: p.account.clone(), amount: p.amount });
        }
        let journals = s
            .journals
            .iter()
            .filter(|cj| in_mode(cj.journal.mode))
            .map(|cj| {
                let mut cj = cj.clone();
                cj.journal.lines = lines.get(&cj.journal.id).cloned().unwrap_or_default();
                cj
            })
            .collect();
        let accounts = s.accounts.values().filter(|a| in_mode(a.mode)).cloned().collect();
        Ok(LedgerSnapshot { accounts, journals })
    }

    fn ledger_part(&mut self, ids: &[AccountId]) -> Result<LedgerSnapshot, StoreError> {
        self.flush_journals()?;
        let s = self.r();
        let wanted: BTreeSet<&AccountId> = ids.iter().collect();
        let touching: BTreeSet<&TransactionId> = s.postings.iter().filter(|p| wanted.contains(&p.account)).map(|p| &p.journal_id).collect();
        let mut lines: BTreeMap<_, Vec<JournalLine>> = BTreeMap::new();
        for p in s.postings.iter().filter(|p| touching.contains(&p.journal_id)) {
            lines.entry(&p.journal_id).or_default().push(JournalLine { account: p.account.clone(), amount: p.amount });
        }
        let journals = s
            .journals
            .iter()
            .filter(|cj| touching.contains(&cj.journal.id))
            .map(|cj| {
                let mut cj = cj.clone();
                cj.journal.lines = lines.get(&cj.journal.id).cloned().unwrap_or_default();
                cj
            })
            .collect();
        let accounts = ids.iter().filter_map(|id| s.accounts.get(id)).cloned().collect();
        Ok(LedgerSnapshot { accounts, journals })
    }

    // Posting here holds the one store-wide lock for its whole transaction, so no account's row
    // is shared by concurrent journals: every line is posted at once and none waits.
    fn waiting_accounts(&mut self, _limit: usize) -> Result<Vec<AccountId>, StoreError> {
        self.flush_journals()?;
        Ok(Vec::new())
    }

    fn apply_waiting(&mut self, account: &AccountId) -> Result<usize, StoreError> {
        self.flush_journals()?;
        match self.r().accounts.get(account) {
            Some(_) => Ok(0),
            None => Err(LedgerError::UnknownAccount(account.clone()).into()),
        }
    }

    fn post_journal_whole(&mut self, journal: &Journal) -> Result<(), StoreError> {
        match self.queued.as_mut() {
            Some(queued) => {
                journal.check_balanced()?;
                queued.add_journals([journal]);
                Ok(())
            }
            None => self.post_journal(journal),
        }
    }
}
