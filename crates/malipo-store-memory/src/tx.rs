//! [`Tx`] over the in-memory tables: the same rules a database's constraints enforce.

use std::collections::{BTreeMap, BTreeSet};

use malipo_auth::{AccessToken, Credential, Organisation};
use malipo_charges::{Charge, ChargeFilter, ChargeKind, ChargeState};
use malipo_core::{AccountId, ChargeRef, EndpointId, EventId, MinorUnit, Mode, Msisdn, OrgId, Timestamp};
use malipo_idempotency::{IdempotencyKey, IdempotencyRecord, KeyScope};
use malipo_ledger::journal::{hold, release};
use malipo_ledger::{
    chain_hash, Account, AccountKind, ChainedJournal, Journal, JournalKind, JournalLine, LedgerError, LedgerSnapshot, Posting, GENESIS_HASH,
};
use malipo_service::{AccountKey, StatementLine, StoreError, TokenRecord, Tx, UssdSession, Wallet};
use malipo_webhooks::{Attempt, Delivery, DeliveryState, Endpoint, Event};

use crate::state::{IdemKey, LedgerHead, State};

/// One transaction over a [`State`]: the draft copy of a write transaction, or the live state
/// of a read-only one (whose write methods then refuse).
pub(crate) struct MemoryTx<'a> {
    state: &'a mut State,
    read_only: bool,
}

impl<'a> MemoryTx<'a> {
    /// A transaction over `state`.
    pub(crate) fn new(state: &'a mut State, read_only: bool) -> Self {
        MemoryTx { state, read_only }
    }

    /// The tables, for reading.
    fn r(&self) -> &State {
        self.state
    }

    /// The tables, for writing: refused in a read-only transaction (as PostgreSQL refuses
    /// writes in a `READ ONLY` transaction).
    fn w(&mut self) -> Result<&mut State, StoreError> {
        if self.read_only {
            return Err(StoreError::Other("write attempted in a read-only transaction".into()));
        }
        Ok(self.state)
    }
}

/// A foreign-key check: `Ok` when the referenced row exists.
fn foreign_key(exists: bool, what: &str) -> Result<(), StoreError> {
    if exists {
        Ok(())
    } else {
        Err(StoreError::Other(format!("foreign key violation: {what} does not exist")))
    }
}

/// A check constraint (named as in the SQL schema): `Ok` when it holds.
fn check(holds: bool, constraint: &str) -> Result<(), StoreError> {
    if holds {
        Ok(())
    } else {
        Err(StoreError::Other(format!("check violation: {constraint}")))
    }
}

/// The check constraints of the `charges` table: amounts in range, and the fields tied to the
/// state (work due only while pending or authorised, a ledger transaction exactly when
/// completed, a failure reason exactly when declined, expired or failed).
fn check_charge(c: &Charge) -> Result<(), StoreError> {
    let (amount, fee, reversed) = (c.amount.get(), c.fee.get(), c.amount_reversed.get());
    check(amount > 0, "charges_amount_check")?;
    check((0..=amount).contains(&fee), "charges_fee_check")?;
    check((0..=amount).contains(&reversed), "charges_amount_reversed_check")?;
    check((0..=fee).contains(&c.commission.get()), "charges_commission_check")?;
    check(c.state.is_final() != c.next_action_at.is_some(), "charges_next_action_check")?;
    check((c.state == ChargeState::Completed) == c.transaction_id.is_some(), "charges_transaction_check")?;
    let failed = matches!(c.state, ChargeState::Declined | ChargeState::Expired | ChargeState::Failed);
    check(failed == c.failure_reason.is_some(), "charges_failure_reason_check")
}

/// The check constraints and unique identity document of the `wallets` table.
fn check_wallet(s: &State, w: &Wallet) -> Result<(), StoreError> {
    check(w.id_type.is_none() == w.id_number.is_none(), "wallets_id_check")?;
    check((w.state == malipo_service::WalletState::Locked) == w.lock_reason.is_some(), "wallets_lock_reason_check")?;
    if w.id_number.is_some() {
        let taken = s.wallets.values().any(|o| {
            o.msisdn != w.msisdn && o.mode == w.mode && o.country == w.country && o.id_type == w.id_type && o.id_number == w.id_number
        });
        if taken {
            return Err(StoreError::Duplicate);
        }
    }
    Ok(())
}

/// The check constraints of the `deliveries` table (`attempts >= 0` holds by type; the count
/// must also fit the column's `INTEGER`).
fn check_delivery(d: &Delivery) -> Result<(), StoreError> {
    check(i32::try_from(d.attempts).is_ok(), "deliveries_attempts_check")?;
    check((d.state == DeliveryState::Pending) == d.next_attempt_at.is_some(), "deliveries_next_attempt_check")
}

/// The `delivery_attempts` row's range (`latency_ms >= 0` holds by type; it must fit the
/// column's `INTEGER`).
fn check_attempt(a: &Attempt) -> Result<(), StoreError> {
    check(i32::try_from(a.latency_ms).is_ok(), "delivery_attempts_latency_ms_check")
}

/// Oldest first: by creation, then id.
fn by_creation(a: &Delivery, b: &Delivery) -> std::cmp::Ordering {
    (a.created_at, &a.id).cmp(&(b.created_at, &b.id))
}

fn idem_key(scope: &KeyScope, key: &IdempotencyKey) -> IdemKey {
    (scope.org_id.clone(), scope.mode, scope.operation.clone(), key.as_str().to_owned())
}

/// Whether a charge passes a list filter (`from` inclusive, `to` exclusive).
fn matches_filter(charge: &Charge, filter: &ChargeFilter) -> bool {
    filter.state.is_none_or(|s| charge.state == s)
        && filter.from.is_none_or(|from| charge.created_at >= from)
        && filter.to.is_none_or(|to| charge.created_at < to)
        && filter.reference.as_deref().is_none_or(|r| charge.reference == r)
}

impl Tx for MemoryTx<'_> {
    // ----- organisations, credentials, tokens -----

    fn insert_org(&mut self, org: &Organisation) -> Result<(), StoreError> {
        let s = self.w()?;
        if s.orgs.contains_key(&org.id) {
            return Err(StoreError::Duplicate);
        }
        s.orgs.insert(org.id.clone(), org.clone());
        Ok(())
    }

    fn org(&mut self, id: &OrgId) -> Result<Option<Organisation>, StoreError> {
        Ok(self.r().orgs.get(id).cloned())
    }

    fn org_by_name(&mut self, name: &str) -> Result<Option<Organisation>, StoreError> {
        Ok(self.r().orgs.values().filter(|o| o.name == name).min_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id))).cloned())
    }

    fn insert_credential(&mut self, credential: &Credential) -> Result<(), StoreError> {
        let s = self.w()?;
        if s.credentials.contains_key(&credential.client_id) {
            return Err(StoreError::Duplicate);
        }
        foreign_key(s.orgs.contains_key(&credential.org_id), "the credential's organisation")?;
        s.credentials.insert(credential.client_id.clone(), credential.clone());
        Ok(())
    }

    fn credential(&mut self, client_id: &str) -> Result<Option<Credential>, StoreError> {
        Ok(self.r().credentials.get(client_id).cloned())
    }

    fn revoke_credential(&mut self, client_id: &str, now: Timestamp) -> Result<bool, StoreError> {
        let s = self.w()?;
        let Some(credential) = s.credentials.get_mut(client_id) else {
            return Ok(false);
        };
        if credential.revoked_at.is_some() {
            return Ok(false);
        }
        credential.revoked_at = Some(now);
        for token in s.tokens.values_mut().filter(|t| t.client_id == client_id && t.revoked_at.is_none()) {
            token.revoked_at = Some(now);
        }
        Ok(true)
    }

    fn insert_token(&mut self, token: &AccessToken) -> Result<(), StoreError> {
        let s = self.w()?;
        if s.tokens.contains_key(&token.digest) {
            return Err(StoreError::Duplicate);
        }
        foreign_key(s.credentials.contains_key(&token.client_id), "the token's credential")?;
        s.tokens.insert(token.digest.clone(), token.clone());
        Ok(())
    }

    fn token(&mut self, digest: &str) -> Result<Option<TokenRecord>, StoreError> {
        let s = self.r();
        let Some(token) = s.tokens.get(digest) else {
            return Ok(None);
        };
        let org =
            s.orgs.get(&token.org_id).ok_or_else(|| StoreError::Other(format!("token's organisation {} is missing", token.org_id)))?;
        let credential = s
            .credentials
            .get(&token.client_id)
            .ok_or_else(|| StoreError::Other(format!("token's credential {} is missing", token.client_id)))?;
        Ok(Some(TokenRecord { token: token.clone(), org: org.clone(), credential_revoked: credential.revoked_at.is_some() }))
    }

    fn revoke_token(&mut self, digest: &str, client_id: &str, now: Timestamp) -> Result<bool, StoreError> {
        let s = self.w()?;
        match s.tokens.get_mut(digest) {
            Some(token) if token.client_id == client_id => {
                // Revoking twice keeps the first revocation time (RFC 7009: still a success).
                token.revoked_at.get_or_insert(now);
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    // ----- accounts and the ledger -----

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
        Ok(self.r().accounts.get(id).cloned())
    }

    fn find_account(&mut self, key: &AccountKey) -> Result<Option<Account>, StoreError> {
        let s = self.r();
        let id = match key {
            AccountKey::Org { org_id, mode, kind } => s.org_account_index.get(&(org_id.clone(), *mode, *kind)),
            AccountKey::System { mode, currency, kind } => s.system_account_index.get(&(*mode, *currency, *kind)),
        };
        Ok(id.and_then(|id| s.accounts.get(id)).cloned())
    }

    fn org_accounts(&mut self, org_id: &OrgId, mode: Mode) -> Result<Vec<Account>, StoreError> {
        let mut accounts: Vec<Account> =
            self.r().accounts.values().filter(|a| a.org_id.as_ref() == Some(org_id) && a.mode == mode).cloned().collect();
        accounts.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        Ok(accounts)
    }

    fn hold(&mut self, account: &AccountId, amount: MinorUnit) -> Result<(), StoreError> {
        let s = self.w()?;
        let acc = s.accounts.get_mut(account).ok_or_else(|| LedgerError::UnknownAccount(account.clone()))?;
        hold(acc, amount)?;
        Ok(())
    }

    fn release(&mut self, account: &AccountId, amount: MinorUnit) -> Result<(), StoreError> {
        let s = self.w()?;
        let acc = s.accounts.get_mut(account).ok_or_else(|| LedgerError::UnknownAccount(account.clone()))?;
        release(acc, amount)?;
        Ok(())
    }

    fn post_journal(&mut self, journal: &Journal) -> Result<(), StoreError> {
        let s = self.w()?;
        journal.check_balanced()?;
        if s.journal_ids.contains(&journal.id) {
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
        for line in &journal.lines {
            let acc = touched.get_mut(&line.account).ok_or_else(|| LedgerError::UnknownAccount(line.account.clone()))?;
            journal.apply_line(acc, line.amount)?;
            postings.push(Posting {
                journal_id: journal.id.clone(),
                account: line.account.clone(),
                amount: line.amount,
                balance_after: acc.balance,
                kind: journal.kind,
                source_ref: journal.source_ref.clone(),
                created_at: journal.created_at,
            });
        }
        let ledger = (journal.mode, journal.currency);
        let (seq, prev_hash) = match s.heads.get(&ledger) {
            Some(head) => (head.seq + 1, head.hash.clone()),
            None => (1, GENESIS_HASH.to_owned()),
        };
        let hash = chain_hash(&prev_hash, seq, journal);
        s.heads.insert(ledger, LedgerHead { seq, hash: hash.clone() });
        s.journals.push(ChainedJournal { seq, prev_hash, hash, journal: journal.clone() });
        s.journal_ids.insert(journal.id.clone());
        s.postings.extend(postings);
        s.accounts.extend(touched);
        Ok(())
    }

    fn pending_credits(&mut self, account: &AccountId) -> Result<MinorUnit, StoreError> {
        let mut sum = MinorUnit::ZERO;
        for c in self.r().charges.values() {
            if c.kind == ChargeKind::Charge && c.state == ChargeState::Authorised && &c.merchant_account == account {
                sum = sum.checked_add(c.net()).map_err(LedgerError::from)?;
            }
        }
        Ok(sum)
    }

    fn debits_since(&mut self, account: &AccountId, since: Timestamp) -> Result<MinorUnit, StoreError> {
        let mut sum = MinorUnit::ZERO;
        for p in &self.r().postings {
            if &p.account == account && p.amount.get() < 0 && p.created_at >= since && p.kind != JournalKind::SandboxFunding {
                sum = sum.checked_sub(p.amount).map_err(LedgerError::from)?;
            }
        }
        Ok(sum)
    }

    fn account_postings(&mut self, account: &AccountId, after: Option<i64>, limit: usize) -> Result<Vec<StatementLine>, StoreError> {
        // A posting's place in posting order (from 1) plays the role of the SQL tables' serial id.
        let start = after.map_or(0, |a| usize::try_from(a.max(0)).unwrap_or(usize::MAX));
        Ok(self
            .r()
            .postings
            .iter()
            .enumerate()
            .skip(start)
            .filter(|(_, p)| &p.account == account)
            .take(limit)
            .map(|(i, p)| StatementLine { seq: i64::try_from(i + 1).unwrap_or(i64::MAX), posting: p.clone() })
            .collect())
    }

    fn ledger_snapshot(&mut self, mode: Option<Mode>) -> Result<LedgerSnapshot, StoreError> {
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

    // ----- wallets -----

    fn insert_wallet(&mut self, wallet: &Wallet) -> Result<(), StoreError> {
        let s = self.w()?;
        let key = (wallet.mode, wallet.msisdn.clone());
        if s.wallets.contains_key(&key) || s.wallets.values().any(|w| w.account_id == wallet.account_id) {
            return Err(StoreError::Duplicate);
        }
        foreign_key(s.accounts.contains_key(&wallet.account_id), "the wallet's account")?;
        check_wallet(s, wallet)?;
        s.wallets.insert(key, wallet.clone());
        Ok(())
    }

    fn wallet(&mut self, mode: Mode, msisdn: &Msisdn) -> Result<Option<Wallet>, StoreError> {
        Ok(self.r().wallets.get(&(mode, msisdn.clone())).cloned())
    }

    fn wallet_by_document(&mut self, mode: Mode, country: &str, id_type: &str, id_number: &str) -> Result<Option<Wallet>, StoreError> {
        Ok(self
            .r()
            .wallets
            .values()
            .find(|w| {
                w.mode == mode && w.country == country && w.id_type.as_deref() == Some(id_type) && w.id_number.as_deref() == Some(id_number)
            })
            .cloned())
    }

    fn lock_wallet(&mut self, mode: Mode, msisdn: &Msisdn) -> Result<Option<Wallet>, StoreError> {
        // The whole store is locked for the transaction already.
        self.wallet(mode, msisdn)
    }

    fn update_wallet(&mut self, wallet: &Wallet) -> Result<(), StoreError> {
        let s = self.w()?;
        // Like an UPDATE that matches no row: nothing to do.
        let Some(current) = s.wallets.get(&(wallet.mode, wallet.msisdn.clone())) else {
            return Ok(());
        };
        let mut updated = current.clone();
        {
            let stored = &mut updated;
            stored.state = wallet.state;
            stored.kyc_tier = wallet.kyc_tier;
            stored.pin_hash.clone_from(&wallet.pin_hash);
            stored.pin_attempts = wallet.pin_attempts;
            stored.first_name.clone_from(&wallet.first_name);
            stored.last_name.clone_from(&wallet.last_name);
            stored.id_type.clone_from(&wallet.id_type);
            stored.id_number.clone_from(&wallet.id_number);
            stored.date_of_birth.clone_from(&wallet.date_of_birth);
            stored.lock_reason.clone_from(&wallet.lock_reason);
            stored.updated_at = wallet.updated_at;
        }
        check_wallet(s, &updated)?;
        s.wallets.insert((wallet.mode, wallet.msisdn.clone()), updated);
        Ok(())
    }

    // ----- charges -----

    fn insert_charge(&mut self, charge: &Charge) -> Result<(), StoreError> {
        let s = self.w()?;
        if s.charges.contains_key(&charge.id) {
            return Err(StoreError::Duplicate);
        }
        foreign_key(s.orgs.contains_key(&charge.org_id), "the charge's organisation")?;
        foreign_key(s.accounts.contains_key(&charge.merchant_account), "the charge's merchant account")?;
        check_charge(charge)?;
        s.charges.insert(charge.id.clone(), charge.clone());
        Ok(())
    }

    fn charge(&mut self, org_id: &OrgId, mode: Mode, id: &ChargeRef) -> Result<Option<Charge>, StoreError> {
        Ok(self.r().charges.get(id).filter(|c| &c.org_id == org_id && c.mode == mode).cloned())
    }

    fn latest_charge_by_reference(&mut self, org_id: &OrgId, mode: Mode, reference: &str) -> Result<Option<Charge>, StoreError> {
        Ok(self
            .r()
            .charges
            .values()
            .filter(|c| c.kind == ChargeKind::Charge && &c.org_id == org_id && c.mode == mode && c.reference == reference)
            .max_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)))
            .cloned())
    }

    fn lock_charge(&mut self, id: &ChargeRef) -> Result<Option<Charge>, StoreError> {
        // The whole store is locked for the transaction already.
        Ok(self.r().charges.get(id).cloned())
    }

    fn update_charge(&mut self, charge: &Charge) -> Result<(), StoreError> {
        let s = self.w()?;
        // Like an UPDATE that matches no row: nothing to do.
        let Some(stored) = s.charges.get_mut(&charge.id) else {
            return Ok(());
        };
        let updated = Charge {
            state: charge.state,
            failure_reason: charge.failure_reason,
            transaction_id: charge.transaction_id.clone(),
            payer_account: charge.payer_account.clone(),
            amount_reversed: charge.amount_reversed,
            updated_at: charge.updated_at,
            completed_at: charge.completed_at,
            next_action_at: charge.next_action_at,
            ..stored.clone()
        };
        check_charge(&updated)?;
        *stored = updated;
        Ok(())
    }

    fn list_charges(
        &mut self,
        org_id: &OrgId,
        mode: Mode,
        filter: &ChargeFilter,
        before: Option<&ChargeRef>,
        limit: usize,
    ) -> Result<Vec<Charge>, StoreError> {
        let s = self.r();
        let below = match before {
            Some(b) => s.charges.range::<ChargeRef, _>(..b),
            None => s.charges.range::<ChargeRef, _>(..),
        };
        Ok(below
            .rev()
            .map(|(_, c)| c)
            .filter(|c| c.kind == ChargeKind::Charge && &c.org_id == org_id && c.mode == mode && matches_filter(c, filter))
            .take(limit)
            .cloned()
            .collect())
    }

    fn claim_due_charges(&mut self, now: Timestamp, lease_until: Timestamp, limit: usize) -> Result<Vec<ChargeRef>, StoreError> {
        let s = self.w()?;
        let mut due: Vec<(Timestamp, ChargeRef)> =
            s.charges.values().filter_map(|c| c.next_action_at.filter(|at| *at <= now).map(|at| (at, c.id.clone()))).collect();
        due.sort();
        due.truncate(limit);
        let mut claimed = Vec::with_capacity(due.len());
        for (_, id) in due {
            if let Some(c) = s.charges.get_mut(&id) {
                c.next_action_at = Some(lease_until);
            }
            claimed.push(id);
        }
        Ok(claimed)
    }

    fn pending_charges_of_payer(&mut self, mode: Mode, msisdn: &Msisdn) -> Result<Vec<Charge>, StoreError> {
        let mut pending: Vec<Charge> = self
            .r()
            .charges
            .values()
            .filter(|c| c.mode == mode && &c.payer_msisdn == msisdn && c.state == ChargeState::Pending)
            .cloned()
            .collect();
        pending.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        Ok(pending)
    }

    // ----- USSD sessions -----

    fn ussd_session(&mut self, org_id: &OrgId, mode: Mode, session_id: &str) -> Result<Option<UssdSession>, StoreError> {
        Ok(self.r().ussd_sessions.get(&(org_id.clone(), mode, session_id.to_owned())).cloned())
    }

    fn put_ussd_session(&mut self, session: &UssdSession) -> Result<(), StoreError> {
        let s = self.w()?;
        foreign_key(s.orgs.contains_key(&session.org_id), "the USSD session's organisation")?;
        s.ussd_sessions.insert((session.org_id.clone(), session.mode, session.session_id.clone()), session.clone());
        Ok(())
    }

    fn purge_ussd_sessions(&mut self, before: Timestamp) -> Result<u64, StoreError> {
        let s = self.w()?;
        let count = s.ussd_sessions.len();
        s.ussd_sessions.retain(|_, v| v.updated_at >= before);
        Ok(u64::try_from(count - s.ussd_sessions.len()).unwrap_or(u64::MAX))
    }

    // ----- idempotency -----

    fn idempotency_record(&mut self, scope: &KeyScope, key: &IdempotencyKey) -> Result<Option<IdempotencyRecord>, StoreError> {
        Ok(self.r().keys.get(&idem_key(scope, key)).cloned())
    }

    fn insert_key(&mut self, scope: &KeyScope, key: &IdempotencyKey, record: &IdempotencyRecord) -> Result<bool, StoreError> {
        let s = self.w()?;
        let k = idem_key(scope, key);
        if s.keys.contains_key(&k) {
            return Ok(false);
        }
        s.keys.insert(k, record.clone());
        Ok(true)
    }

    fn purge_keys(&mut self, before: Timestamp) -> Result<u64, StoreError> {
        let s = self.w()?;
        let count = s.keys.len();
        s.keys.retain(|_, r| r.created_at >= before);
        Ok(u64::try_from(count - s.keys.len()).unwrap_or(u64::MAX))
    }

    // ----- webhooks: endpoints, the event outbox, deliveries -----

    fn insert_endpoint(&mut self, endpoint: &Endpoint) -> Result<(), StoreError> {
        let s = self.w()?;
        if s.endpoints.contains_key(&endpoint.id) {
            return Err(StoreError::Duplicate);
        }
        foreign_key(s.orgs.contains_key(&endpoint.org_id), "the webhook endpoint's organisation")?;
        s.endpoints.insert(endpoint.id.clone(), endpoint.clone());
        Ok(())
    }

    fn endpoint(&mut self, id: &EndpointId) -> Result<Option<Endpoint>, StoreError> {
        Ok(self.r().endpoints.get(id).cloned())
    }

    fn list_endpoints(&mut self, org_id: &OrgId, mode: Mode) -> Result<Vec<Endpoint>, StoreError> {
        let mut endpoints: Vec<Endpoint> =
            self.r().endpoints.values().filter(|e| &e.org_id == org_id && e.mode == mode && e.deleted_at.is_none()).cloned().collect();
        endpoints.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        Ok(endpoints)
    }

    fn update_endpoint(&mut self, endpoint: &Endpoint) -> Result<(), StoreError> {
        let s = self.w()?;
        let Some(stored) = s.endpoints.get_mut(&endpoint.id) else {
            return Err(StoreError::Other(format!("no webhook endpoint {} to update", endpoint.id)));
        };
        stored.url.clone_from(&endpoint.url);
        stored.description.clone_from(&endpoint.description);
        stored.events.clone_from(&endpoint.events);
        stored.enabled = endpoint.enabled;
        stored.secret.clone_from(&endpoint.secret);
        stored.previous_secret.clone_from(&endpoint.previous_secret);
        stored.disabled_reason.clone_from(&endpoint.disabled_reason);
        stored.failing_since = endpoint.failing_since;
        stored.deleted_at = endpoint.deleted_at;
        stored.updated_at = endpoint.updated_at;
        Ok(())
    }

    fn insert_event(&mut self, event: &Event) -> Result<(), StoreError> {
        let s = self.w()?;
        if s.events.contains_key(&event.id) {
            return Err(StoreError::Duplicate);
        }
        foreign_key(s.orgs.contains_key(&event.org_id), "the event's organisation")?;
        s.events.insert(event.id.clone(), event.clone());
        Ok(())
    }

    fn event(&mut self, org_id: &OrgId, mode: Mode, id: &EventId) -> Result<Option<Event>, StoreError> {
        Ok(self.r().events.get(id).filter(|e| &e.org_id == org_id && e.mode == mode).cloned())
    }

    fn list_events(
        &mut self,
        org_id: &OrgId,
        mode: Mode,
        kind: Option<&str>,
        after: Option<&EventId>,
        limit: usize,
    ) -> Result<Vec<Event>, StoreError> {
        let s = self.r();
        let above = match after {
            Some(a) => s.events.range::<EventId, _>((std::ops::Bound::Excluded(a), std::ops::Bound::Unbounded)),
            None => s.events.range::<EventId, _>(..),
        };
        Ok(above
            .map(|(_, e)| e)
            .filter(|e| &e.org_id == org_id && e.mode == mode && kind.is_none_or(|k| e.kind == k))
            .take(limit)
            .cloned()
            .collect())
    }

    fn insert_delivery(&mut self, delivery: &Delivery) -> Result<(), StoreError> {
        let s = self.w()?;
        if s.deliveries.contains_key(&delivery.id) {
            return Err(StoreError::Duplicate);
        }
        foreign_key(s.events.contains_key(&delivery.event_id), "the delivery's event")?;
        foreign_key(s.endpoints.contains_key(&delivery.endpoint_id), "the delivery's endpoint")?;
        check_delivery(delivery)?;
        s.deliveries.insert(delivery.id.clone(), delivery.clone());
        Ok(())
    }

    fn lock_delivery(&mut self, id: &str) -> Result<Option<Delivery>, StoreError> {
        // The whole store is locked for the transaction already.
        Ok(self.r().deliveries.get(id).cloned())
    }

    fn update_delivery(&mut self, delivery: &Delivery) -> Result<(), StoreError> {
        let s = self.w()?;
        let Some(stored) = s.deliveries.get_mut(&delivery.id) else {
            return Err(StoreError::Other(format!("no delivery {} to update", delivery.id)));
        };
        let updated = Delivery {
            state: delivery.state,
            attempts: delivery.attempts,
            next_attempt_at: delivery.next_attempt_at,
            updated_at: delivery.updated_at,
            ..stored.clone()
        };
        check_delivery(&updated)?;
        *stored = updated;
        Ok(())
    }

    fn claim_due_deliveries(&mut self, now: Timestamp, lease_until: Timestamp, limit: usize) -> Result<Vec<String>, StoreError> {
        let s = self.w()?;
        let mut due: Vec<(Timestamp, String)> = s
            .deliveries
            .values()
            .filter(|d| d.state == DeliveryState::Pending)
            .filter_map(|d| d.next_attempt_at.filter(|at| *at <= now).map(|at| (at, d.id.clone())))
            .collect();
        due.sort();
        due.truncate(limit);
        let mut claimed = Vec::with_capacity(due.len());
        for (_, id) in due {
            if let Some(d) = s.deliveries.get_mut(&id) {
                d.next_attempt_at = Some(lease_until);
            }
            claimed.push(id);
        }
        Ok(claimed)
    }

    fn deliveries_of_event(&mut self, event_id: &EventId) -> Result<Vec<Delivery>, StoreError> {
        let mut found: Vec<Delivery> = self.r().deliveries.values().filter(|d| &d.event_id == event_id).cloned().collect();
        found.sort_by(by_creation);
        Ok(found)
    }

    fn pending_deliveries_of_endpoint(&mut self, endpoint_id: &EndpointId) -> Result<Vec<Delivery>, StoreError> {
        let mut found: Vec<Delivery> =
            self.r().deliveries.values().filter(|d| &d.endpoint_id == endpoint_id && d.state == DeliveryState::Pending).cloned().collect();
        found.sort_by(by_creation);
        Ok(found)
    }

    fn insert_attempt(&mut self, attempt: &Attempt) -> Result<(), StoreError> {
        let s = self.w()?;
        foreign_key(s.deliveries.contains_key(&attempt.delivery_id), "the attempt's delivery")?;
        check_attempt(attempt)?;
        s.attempts.push(attempt.clone());
        Ok(())
    }

    fn attempts_of_event(&mut self, event_id: &EventId) -> Result<Vec<Attempt>, StoreError> {
        Ok(self.r().attempts.iter().filter(|a| &a.event_id == event_id).cloned().collect())
    }

    fn purge_events(&mut self, before: Timestamp) -> Result<u64, StoreError> {
        let s = self.w()?;
        let old: BTreeSet<EventId> = s.events.values().filter(|e| e.created_at < before).map(|e| e.id.clone()).collect();
        if old.is_empty() {
            return Ok(0);
        }
        let old_deliveries: BTreeSet<String> = s.deliveries.values().filter(|d| old.contains(&d.event_id)).map(|d| d.id.clone()).collect();
        s.attempts.retain(|a| !old.contains(&a.event_id) && !old_deliveries.contains(&a.delivery_id));
        s.deliveries.retain(|id, _| !old_deliveries.contains(id));
        s.events.retain(|id, _| !old.contains(id));
        Ok(u64::try_from(old.len()).unwrap_or(u64::MAX))
    }
}
