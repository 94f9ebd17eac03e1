//! Moving charges through their lifecycle: the background step (sandbox decisions, live checks,
//! completion, expiry), customer approval, and PIN lockout. Each step is one transaction on a
//! locked charge, so concurrent workers and instances settle every charge exactly once.

use malipo_charges::{Charge, ChargeEvent, ChargeKind, ChargeState, FailureReason, SandboxOutcome};
use malipo_core::{AccountId, ChargeRef, Currency, MinorUnit, Mode, Msisdn, Timestamp};
use malipo_ledger::{Account, AccountKind, Journal, JournalKind, JournalLine, LedgerError};

use crate::error::ServiceError;
use crate::platform::Platform;
use crate::ports::{write, AccountKey, StoreError, Tx};
use crate::wallet::{Wallet, WalletState};

/// The lock reason of a wallet locked by wrong PINs.
pub const PIN_LOCKOUT_REASON: &str = "pin_attempts_exceeded";

/// Test wallets start with 1,000,000.00 in their currency.
const TEST_WALLET_MAJOR_UNITS: i64 = 1_000_000;

/// The states charges entered in one transaction (reported to the observer after commit).
pub(crate) type Entered = Vec<ChargeState>;

impl Platform {
    /// Claims due charges and advances each. Returns how many were claimed.
    ///
    /// # Errors
    /// Storage failures of the claim itself; a failing charge is logged and left to its lease.
    pub fn process_due(&self, limit: usize) -> Result<usize, ServiceError> {
        let now = self.clock.now();
        let lease = now.plus_seconds(self.config.worker_lease_seconds);
        let ids = write(self.store(), |tx| Ok(tx.claim_due_charges(now, lease, limit)?))?;
        for id in &ids {
            match self.advance_charge(id, lease) {
                Ok(()) => {}
                // Every remaining charge would wait for a connection in turn: leave them to
                // their leases rather than hold this worker (and a shutdown) for the whole batch.
                Err(e @ ServiceError::Store(StoreError::Unavailable(_))) => {
                    tracing::warn!(charge = %id, error = %e, "database unavailable; the claimed batch is left to its leases");
                    break;
                }
                Err(e) => tracing::warn!(charge = %id, error = %e, "charge step failed; it will be retried after its lease"),
            }
        }
        Ok(ids.len())
    }

    /// Advances one charge, claimed with `lease`, as far as it can go now. A charge rescheduled
    /// since the claim (a customer answered, or another worker re-claimed it after the lease) is
    /// left alone: only the current claim acts.
    ///
    /// # Errors
    /// Transient storage failures (the charge stays claimed until its lease lapses).
    pub fn advance_charge(&self, id: &ChargeRef, lease: Timestamp) -> Result<(), ServiceError> {
        self.advance(id, Some(lease))
    }

    /// Advances a charge whose work is due now (a customer just approved it): the same steps
    /// the worker takes, without a claim.
    ///
    /// # Errors
    /// As [`Platform::advance_charge`]; the worker finishes what this leaves.
    pub fn settle_now(&self, id: &ChargeRef) -> Result<(), ServiceError> {
        self.advance(id, None)
    }

    fn advance(&self, id: &ChargeRef, mut claim: Option<Timestamp>) -> Result<(), ServiceError> {
        loop {
            let now = self.clock.now();
            match write(self.store(), |tx| self.step(tx, id, now, claim)) {
                Ok((again, entered)) => {
                    self.report(&entered);
                    if !again {
                        return Ok(());
                    }
                    claim = None;
                }
                Err(e) if is_processing_failure(&e) => {
                    tracing::error!(charge = %id, error = %e, "posting failed; failing the charge");
                    let entered = write(self.store(), |tx| self.fail_processing(tx, id, now))?;
                    self.report(&entered);
                    return Ok(());
                }
                Err(e) => return Err(e),
            }
        }
    }

    pub(crate) fn report(&self, entered: &[ChargeState]) {
        for s in entered {
            self.observer.charge_entered(*s);
        }
    }

    /// One step of a locked charge. Returns whether more work is due at once.
    /// `claim` is the lease the charge was claimed with (first step), or `None` for a follow-up
    /// step this worker made due itself.
    fn step(&self, tx: &mut dyn Tx, id: &ChargeRef, now: Timestamp, claim: Option<Timestamp>) -> Result<(bool, Entered), ServiceError> {
        let Some(mut charge) = tx.lock_charge(id)? else {
            return Ok((false, vec![]));
        };
        let ours = match claim {
            Some(lease) => charge.next_action_at == Some(lease),
            None => charge.next_action_at.is_some_and(|t| t <= now),
        };
        if !ours {
            return Ok((false, vec![]));
        }
        let mut entered = vec![];
        match charge.state {
            ChargeState::Pending if now >= charge.expires_at => {
                self.apply(tx, &mut charge, ChargeEvent::Expire, now, &mut entered)?;
            }
            ChargeState::Pending => match charge.mode {
                Mode::Test => self.sandbox_decide(tx, &mut charge, now, &mut entered)?,
                Mode::Live => self.live_check(tx, &mut charge, now, &mut entered)?,
            },
            ChargeState::Authorised => self.complete(tx, &mut charge, now, &mut entered)?,
            _ => {}
        }
        let again = charge.state == ChargeState::Authorised && charge.next_action_at.is_some_and(|t| t <= now);
        Ok((again, entered))
    }

    /// Applies an event and stores the charge.
    pub(crate) fn apply(
        &self,
        tx: &mut dyn Tx,
        charge: &mut Charge,
        event: ChargeEvent,
        now: Timestamp,
        entered: &mut Entered,
    ) -> Result<(), ServiceError> {
        charge.apply(event, now).map_err(|e| ServiceError::InvalidState(format!("the charge is {}; {e}", charge.state)))?;
        tx.update_charge(charge)?;
        self.emit_charge(tx, charge, now)?;
        entered.push(charge.state);
        Ok(())
    }

    /// Waits for the customer until the charge expires.
    fn park(&self, tx: &mut dyn Tx, charge: &mut Charge, now: Timestamp) -> Result<(), ServiceError> {
        charge.next_action_at = Some(charge.expires_at);
        charge.updated_at = now;
        tx.update_charge(charge)?;
        Ok(())
    }

    fn sandbox_decide(&self, tx: &mut dyn Tx, charge: &mut Charge, now: Timestamp, entered: &mut Entered) -> Result<(), ServiceError> {
        let fail = |r| ChargeEvent::PayerFailure(r);
        match SandboxOutcome::for_payer(&charge.payer_msisdn) {
            SandboxOutcome::Approve => self.authorise(tx, charge, now, entered),
            SandboxOutcome::Decline => self.apply(tx, charge, ChargeEvent::Decline, now, entered),
            SandboxOutcome::Expire | SandboxOutcome::StayPending => self.park(tx, charge, now),
            SandboxOutcome::InsufficientFunds => self.apply(tx, charge, fail(FailureReason::InsufficientFunds), now, entered),
            SandboxOutcome::PinLockout => {
                let payer = charge.payer_msisdn.clone();
                let mut wallet = self.ensure_test_wallet(tx, &payer, now)?;
                if wallet.state == WalletState::Locked {
                    // Already locked by an earlier lockout: no prompt reaches the customer.
                    return self.apply(tx, charge, fail(FailureReason::WalletLocked), now, entered);
                }
                self.lock_out(tx, &mut wallet, Some(charge), now, entered)
            }
            SandboxOutcome::WalletLocked => self.apply(tx, charge, fail(FailureReason::WalletLocked), now, entered),
            SandboxOutcome::LimitExceeded => self.apply(tx, charge, fail(FailureReason::LimitExceeded), now, entered),
            SandboxOutcome::PayerNotFound => self.apply(tx, charge, fail(FailureReason::PayerNotFound), now, entered),
        }
    }

    /// Live mode: fail at once when the payer cannot pay at all (no wallet, locked, over a
    /// limit); otherwise wait for the customer.
    fn live_check(&self, tx: &mut dyn Tx, charge: &mut Charge, now: Timestamp, entered: &mut Entered) -> Result<(), ServiceError> {
        let fail = |r| ChargeEvent::PayerFailure(r);
        match tx.wallet(charge.mode, &charge.payer_msisdn)? {
            None => self.apply(tx, charge, fail(FailureReason::PayerNotFound), now, entered),
            Some(w) if w.state == WalletState::Locked => self.apply(tx, charge, fail(FailureReason::WalletLocked), now, entered),
            Some(w) => {
                if self.check_debit(tx, &w, charge.amount, charge.payer_debit(), now)?.is_err() {
                    return self.apply(tx, charge, fail(FailureReason::LimitExceeded), now, entered);
                }
                self.park(tx, charge, now)
            }
        }
    }

    /// The payer approved: reserve the amount on the wallet, or fail the charge with the reason.
    pub(crate) fn authorise(
        &self,
        tx: &mut dyn Tx,
        charge: &mut Charge,
        now: Timestamp,
        entered: &mut Entered,
    ) -> Result<(), ServiceError> {
        let (wallet, opened_now) = match charge.mode {
            Mode::Test => {
                let (w, opened) = self.test_wallet(tx, &charge.payer_msisdn, now)?;
                (Some(w), opened)
            }
            Mode::Live => (tx.wallet(charge.mode, &charge.payer_msisdn)?, false),
        };
        let fail = |r| ChargeEvent::PayerFailure(r);
        let Some(wallet) = wallet else {
            return self.apply(tx, charge, fail(FailureReason::PayerNotFound), now, entered);
        };
        if wallet.state == WalletState::Locked {
            return self.apply(tx, charge, fail(FailureReason::WalletLocked), now, entered);
        }
        // A wallet opened in this transaction has used nothing today: no need to read its
        // postings (which would also hold the ledger's chain head, locked by its funding, longer).
        let within_limits = if opened_now {
            self.fresh_wallet_debit(&wallet, charge.amount, charge.payer_debit())?
        } else {
            self.check_debit(tx, &wallet, charge.amount, charge.payer_debit(), now)?
        };
        if within_limits.is_err() {
            return self.apply(tx, charge, fail(FailureReason::LimitExceeded), now, entered);
        }
        match tx.hold(&wallet.account_id, charge.payer_debit()) {
            Ok(()) => {
                charge.payer_account = Some(wallet.account_id);
                charge.next_action_at = Some(now);
                self.apply(tx, charge, ChargeEvent::Approve, now, entered)
            }
            Err(StoreError::Ledger(LedgerError::InsufficientFunds(_))) => {
                self.apply(tx, charge, fail(FailureReason::InsufficientFunds), now, entered)
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Posts the charge: the payer pays `amount`, the merchant gets `amount - fee`, revenue the
    /// fee. A cash-out: the customer pays `amount + fee`, the agent's float gets `amount` and its
    /// commission, revenue the rest of the fee.
    pub(crate) fn complete(&self, tx: &mut dyn Tx, charge: &mut Charge, now: Timestamp, entered: &mut Entered) -> Result<(), ServiceError> {
        let payer = charge
            .payer_account
            .clone()
            .ok_or_else(|| ServiceError::Internal(format!("authorised charge {} has no payer account", charge.id)))?;
        let revenue = self.system_account(tx, charge.mode, charge.currency, AccountKind::Revenue)?;
        let kind = match charge.kind {
            ChargeKind::Charge => JournalKind::Charge,
            ChargeKind::CashOut => JournalKind::CashOut,
        };
        let journal = Journal::new_skipping_zero(
            charge.mode,
            charge.currency,
            kind,
            charge.id.as_str(),
            vec![
                line(&payer, MinorUnit::new(-charge.payer_debit().get())),
                line(&charge.merchant_account, charge.payee_credit()),
                line(&revenue, charge.revenue()),
            ],
            now,
        )?;
        // The charge first, the shared ledger rows last: the revenue account and the ledger's
        // audit-chain head are locked by every completion, so they are taken just before commit.
        charge.transaction_id = Some(journal.id.clone());
        self.apply(tx, charge, ChargeEvent::Complete, now, entered)?;
        tx.release(&payer, charge.payer_debit())?;
        tx.post_journal(&journal)?;
        Ok(())
    }

    /// The platform's account of a kind (revenue, issuance, sandbox funding) in a mode and currency.
    ///
    /// # Errors
    /// [`ServiceError::Internal`] when it is missing (the migrations open one per served currency).
    pub(crate) fn system_account(
        &self,
        tx: &mut dyn Tx,
        mode: Mode,
        currency: Currency,
        kind: AccountKind,
    ) -> Result<AccountId, ServiceError> {
        tx.find_account(&AccountKey::System { mode, currency, kind })?
            .map(|a| a.id)
            .ok_or_else(|| ServiceError::Internal(format!("no {kind} account for {mode} {currency}")))
    }

    /// After a failed posting: release the reservation and fail the charge `processing_error`.
    fn fail_processing(&self, tx: &mut dyn Tx, id: &ChargeRef, now: Timestamp) -> Result<Entered, ServiceError> {
        let mut entered = vec![];
        if let Some(mut charge) = tx.lock_charge(id)? {
            if charge.state == ChargeState::Authorised {
                self.release_and_fail(tx, &mut charge, now, &mut entered)?;
            }
        }
        Ok(entered)
    }

    pub(crate) fn release_and_fail(
        &self,
        tx: &mut dyn Tx,
        charge: &mut Charge,
        now: Timestamp,
        entered: &mut Entered,
    ) -> Result<(), ServiceError> {
        if let Some(payer) = charge.payer_account.clone() {
            tx.release(&payer, charge.payer_debit())?;
        }
        self.apply(tx, charge, ChargeEvent::ProcessingFailed, now, entered)
    }

    /// Locks a wallet after too many wrong PINs and declines every pending prompt for it
    /// (`current` is the charge already locked by the caller, if any).
    pub(crate) fn lock_out(
        &self,
        tx: &mut dyn Tx,
        wallet: &mut Wallet,
        current: Option<&mut Charge>,
        now: Timestamp,
        entered: &mut Entered,
    ) -> Result<(), ServiceError> {
        wallet.state = WalletState::Locked;
        wallet.lock_reason = Some(PIN_LOCKOUT_REASON.to_owned());
        wallet.pin_attempts = self.countries.for_msisdn(&wallet.msisdn).map_or(3, |c| c.max_pin_attempts);
        wallet.updated_at = now;
        tx.update_wallet(wallet)?;
        self.end_pending_prompts(tx, wallet, ChargeEvent::PinLockout, current, now, entered)
    }

    /// Applies `event` to every pending prompt (charge or cash-out) of the wallet: `current` is
    /// one the caller has locked already, if any.
    pub(crate) fn end_pending_prompts(
        &self,
        tx: &mut dyn Tx,
        wallet: &Wallet,
        event: ChargeEvent,
        mut current: Option<&mut Charge>,
        now: Timestamp,
        entered: &mut Entered,
    ) -> Result<(), ServiceError> {
        for pending in tx.pending_charges_of_payer(wallet.mode, &wallet.msisdn)? {
            match current.as_deref_mut() {
                Some(c) if c.id == pending.id => self.apply(tx, c, event, now, entered)?,
                _ => {
                    if let Some(mut other) = tx.lock_charge(&pending.id)? {
                        if other.state == ChargeState::Pending {
                            self.apply(tx, &mut other, event, now, entered)?;
                        }
                    }
                }
            }
        }
        if let Some(c) = current {
            if c.state == ChargeState::Pending {
                self.apply(tx, c, event, now, entered)?;
            }
        }
        Ok(())
    }

    /// The test wallet of a number, opened and funded with test money on first use.
    pub(crate) fn ensure_test_wallet(&self, tx: &mut dyn Tx, msisdn: &Msisdn, now: Timestamp) -> Result<Wallet, ServiceError> {
        Ok(self.test_wallet(tx, msisdn, now)?.0)
    }

    /// As [`Platform::ensure_test_wallet`], and whether it was opened by this call.
    pub(crate) fn test_wallet(&self, tx: &mut dyn Tx, msisdn: &Msisdn, now: Timestamp) -> Result<(Wallet, bool), ServiceError> {
        if let Some(w) = tx.wallet(Mode::Test, msisdn)? {
            return Ok((w, false));
        }
        let country =
            self.countries.for_msisdn(msisdn).map_err(|e| ServiceError::field("msisdn", "invalid_msisdn", format!("msisdn {e}")))?;
        let account = Account::open(None, Mode::Test, AccountKind::Wallet, country.currency, Some(msisdn.to_string()), now);
        let wallet = Wallet {
            msisdn: msisdn.clone(),
            mode: Mode::Test,
            account_id: account.id.clone(),
            country: country.code.clone(),
            currency: country.currency,
            state: WalletState::Active,
            kyc_tier: country.top_tier().tier,
            pin_hash: None,
            pin_attempts: 0,
            first_name: None,
            last_name: None,
            id_type: None,
            id_number: None,
            date_of_birth: None,
            lock_reason: None,
            created_at: now,
            updated_at: now,
        };
        // A concurrent first use of the same number: retry, and find the other's wallet.
        let dup_is_retry = |e: StoreError| {
            if e == StoreError::Duplicate {
                StoreError::Retry
            } else {
                e
            }
        };
        tx.insert_account(&account).map_err(dup_is_retry)?;
        tx.insert_wallet(&wallet).map_err(dup_is_retry)?;
        let funding = self.system_account(tx, Mode::Test, country.currency, AccountKind::SandboxFunding)?;
        let amount = MinorUnit::new(TEST_WALLET_MAJOR_UNITS * 10_i64.pow(u32::from(country.currency.minor_units())));
        let journal = Journal::new(
            Mode::Test,
            country.currency,
            JournalKind::SandboxFunding,
            msisdn.as_str(),
            vec![line(&funding, MinorUnit::new(-amount.get())), line(&account.id, amount)],
            now,
        )?;
        tx.post_journal(&journal)?;
        Ok((wallet, true))
    }
}

fn line(account: &AccountId, amount: MinorUnit) -> JournalLine {
    JournalLine { account: account.clone(), amount }
}

/// Failures of posting that end the charge `processing_error` rather than being retried.
fn is_processing_failure(e: &ServiceError) -> bool {
    matches!(e, ServiceError::Store(StoreError::Ledger(_)) | ServiceError::InsufficientFunds | ServiceError::Internal(_))
}
