//! A charge's (or cash-out's) moves through its state machine, shared by every channel that
//! moves it: the worker, the customer's answer over USSD, the sandbox, PIN lockout and the
//! operator's lock. Each move is stored and its event written in the caller's transaction.

use malipo_charges::{Charge, ChargeEvent, ChargeKind, ChargeState, FailureReason};
use malipo_core::{AccountId, MinorUnit, Mode, Msisdn, Timestamp};
use malipo_ledger::{AccountKind, Journal, JournalKind, JournalLine, LedgerError};
use malipo_webhooks::Event;

use crate::core::{system_account, Core};
use crate::customers::Customers;
use crate::error::{ServiceError, StoreError};
use crate::events::Events;
use crate::limits::Limits;
use crate::ports::{ChargeFlow, Wallet, WalletState};

/// The lock reason of a wallet locked by wrong PINs.
pub const PIN_LOCKOUT_REASON: &str = "pin_attempts_exceeded";

/// The states charges entered in one transaction (reported to the observer after commit).
pub(crate) type Entered = Vec<ChargeState>;

fn line(account: &AccountId, amount: MinorUnit) -> JournalLine {
    JournalLine { account: account.clone(), amount }
}

/// Applies `event` to the charge in memory (the caller stores it and writes its event).
fn moved(charge: &mut Charge, event: ChargeEvent, now: Timestamp, entered: &mut Entered) -> Result<(), ServiceError> {
    charge.apply(event, now).map_err(|e| ServiceError::InvalidState(format!("the charge is {}; {e}", charge.state)))?;
    entered.push(charge.state);
    Ok(())
}

/// How an approval takes the payer's money.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Funds {
    /// Reserved on the wallet (a hold), which tells insufficient funds apart as the charge's
    /// failure: for a completion in a later transaction, or one that may fail.
    Hold,
    /// Paid at once: the completion follows in the same transaction, with no hold and release
    /// (two statements fewer), the charge stored once and both events written together. The
    /// posting checks the funds, so a refused one (insufficient funds included) fails the
    /// transaction with the error; the caller must then not commit it, and approves again
    /// with [`Funds::Hold`], which ends the charge as a hold would have.
    PayNow,
}

/// What an approval leaves to the completion that follows it.
struct Prior {
    /// Whether the amount is held on the payer's wallet (to release).
    held: bool,
    /// The approval's event, to write with the completion's ([`Funds::PayNow`]).
    authorised: Option<Event>,
    /// The funding of a sandbox wallet opened by the approval, to post with the payment.
    funding: Option<Journal>,
}

/// Moves charges through their states.
pub(crate) struct Lifecycle<'a>(pub(crate) &'a Core);

impl Lifecycle<'_> {
    /// When the worker first looks at a new prompt: after the sandbox's approval delay in test
    /// mode; at once in live mode (to check the payer before the customer is asked).
    pub(crate) fn first_step_at(&self, mode: Mode, now: Timestamp) -> Timestamp {
        match mode {
            Mode::Test => now.plus_millis(self.0.config.sandbox_approval_delay_ms),
            Mode::Live => now,
        }
    }

    /// Applies an event and stores the charge.
    pub(crate) fn apply(
        &self,
        tx: &mut (impl ChargeFlow + ?Sized),
        charge: &mut Charge,
        event: ChargeEvent,
        now: Timestamp,
        entered: &mut Entered,
    ) -> Result<(), ServiceError> {
        moved(charge, event, now, entered)?;
        tx.update_charge(charge)?;
        Events.charge(tx, charge, now)
    }

    /// Why a live payer cannot pay `amount` (leaving `debit` in all) at all: no wallet, a locked
    /// one, or over a limit; `None` when the prompt can wait for the customer. A read for
    /// failing fast, not a guard: the approval checks all of it again on the locked wallet.
    ///
    /// # Errors
    /// Storage failures.
    pub(crate) fn live_refusal(
        &self,
        tx: &mut (impl ChargeFlow + ?Sized),
        mode: Mode,
        payer: &Msisdn,
        (amount, debit): (MinorUnit, MinorUnit),
        now: Timestamp,
    ) -> Result<Option<FailureReason>, ServiceError> {
        Ok(match tx.wallet(mode, payer)? {
            None => Some(FailureReason::PayerNotFound),
            Some(w) if w.state == WalletState::Locked => Some(FailureReason::WalletLocked),
            Some(w) => Limits(self.0).check_debit(tx, &w, amount, debit, now)?.is_err().then_some(FailureReason::LimitExceeded),
        })
    }

    /// Waits for the customer until the charge expires.
    pub(crate) fn park(&self, tx: &mut (impl ChargeFlow + ?Sized), charge: &mut Charge, now: Timestamp) -> Result<(), ServiceError> {
        charge.next_action_at = Some(charge.expires_at);
        charge.updated_at = now;
        tx.update_charge(charge)?;
        Ok(())
    }

    /// The payer approved: reserve the amount on the wallet (or, with [`Funds::PayNow`],
    /// pay it at once), or fail the charge with the reason. The wallet's row is locked before
    /// its state and limits are read: `locked` is the payer's wallet if the caller's transaction
    /// has locked it already (and holds it as it is).
    pub(crate) fn authorise(
        &self,
        tx: &mut (impl ChargeFlow + ?Sized),
        charge: &mut Charge,
        now: Timestamp,
        entered: &mut Entered,
        funds: Funds,
        locked: Option<&Wallet>,
    ) -> Result<(), ServiceError> {
        let fail = |r| ChargeEvent::PayerFailure(r);
        // Paying now, a wallet opened now is funded by the payment's own posting (one write of
        // both journals' rows), or before the charge fails, if it does.
        let found = match locked.filter(|w| w.mode == charge.mode && w.msisdn == charge.payer_msisdn) {
            // The payer's wallet as the caller's transaction locked it (a PIN checked on it).
            Some(wallet) => Some((wallet.clone(), None)),
            None => Customers(self.0).payer_wallet_unfunded(tx, charge.mode, &charge.payer_msisdn, now)?,
        };
        let Some((wallet, mut funding)) = found else {
            return self.apply(tx, charge, fail(FailureReason::PayerNotFound), now, entered);
        };
        let opened_now = funding.is_some();
        if funds == Funds::Hold {
            // The hold checks the funds: the wallet's test money is posted first.
            if let Some(funding) = funding.take() {
                tx.post_journal_whole(&funding)?;
            }
        }
        if wallet.state == WalletState::Locked {
            return self.refuse(tx, charge, FailureReason::WalletLocked, now, entered, funding);
        }
        // A wallet opened in this transaction has used nothing today: no need to read its
        // postings (which would also hold the ledger's chain head, locked by its funding, longer).
        let limits = Limits(self.0);
        let debit = charge.payer_debit()?;
        let within_limits = if opened_now {
            limits.fresh_wallet_debit(&wallet, charge.amount, debit)?
        } else {
            limits.check_debit(tx, &wallet, charge.amount, debit, now)?
        };
        if within_limits.is_err() {
            return self.refuse(tx, charge, FailureReason::LimitExceeded, now, entered, funding);
        }
        if funds == Funds::PayNow {
            // The completion's posting checks the funds, under the lock its update takes.
            charge.payer_account = Some(wallet.account_id);
            charge.next_action_at = Some(now);
            moved(charge, ChargeEvent::Approve, now, entered)?;
            let authorised = Events.charge_event(charge, now)?;
            return self.pay(tx, charge, now, entered, Prior { held: false, authorised, funding });
        }
        match tx.hold(&wallet.account_id, debit) {
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
    pub(crate) fn complete(
        &self,
        tx: &mut (impl ChargeFlow + ?Sized),
        charge: &mut Charge,
        now: Timestamp,
        entered: &mut Entered,
    ) -> Result<(), ServiceError> {
        self.pay(tx, charge, now, entered, Prior { held: true, authorised: None, funding: None })
    }

    /// Fails an approved charge for the payer's `reason`, after posting the funding of a wallet
    /// opened for it.
    fn refuse(
        &self,
        tx: &mut (impl ChargeFlow + ?Sized),
        charge: &mut Charge,
        reason: FailureReason,
        now: Timestamp,
        entered: &mut Entered,
        funding: Option<Journal>,
    ) -> Result<(), ServiceError> {
        if let Some(funding) = funding {
            tx.post_journal_whole(&funding)?;
        }
        self.apply(tx, charge, ChargeEvent::PayerFailure(reason), now, entered)
    }

    /// [`Lifecycle::complete`], after what the approval left to it (`prior`).
    fn pay(
        &self,
        tx: &mut (impl ChargeFlow + ?Sized),
        charge: &mut Charge,
        now: Timestamp,
        entered: &mut Entered,
        prior: Prior,
    ) -> Result<(), ServiceError> {
        let payer = charge
            .payer_account
            .clone()
            .ok_or_else(|| ServiceError::Internal(format!("authorised charge {} has no payer account", charge.id)))?;
        let revenue = system_account(tx, charge.mode, charge.currency, AccountKind::Revenue)?;
        let kind = match charge.kind {
            ChargeKind::Charge => JournalKind::Charge,
            ChargeKind::CashOut => JournalKind::CashOut,
        };
        let debit = charge.payer_debit()?;
        let journal = Journal::new_skipping_zero(
            charge.mode,
            charge.currency,
            kind,
            charge.id.as_str(),
            vec![
                line(&payer, debit.checked_neg()?),
                line(&charge.merchant_account, charge.payee_credit()?),
                line(&revenue, charge.revenue()?),
            ],
            now,
        )?
        // What the merchant paid on it (an agent's commission on a cash-out: a negative fee).
        .with_fee(&charge.merchant_account, charge.amount.checked_sub(charge.payee_credit()?)?);
        // The charge first, the shared ledger rows last: the revenue account and the ledger's
        // audit-chain head are locked by every completion, so they are taken just before commit.
        charge.transaction_id = Some(journal.id.clone());
        moved(charge, ChargeEvent::Complete, now, entered)?;
        tx.update_charge(charge)?;
        let events = Events;
        events.emit_all(tx, prior.authorised.into_iter().chain(events.charge_event(charge, now)?).collect(), now)?;
        events.ended(tx, charge, now)?;
        if prior.held {
            tx.release(&payer, debit)?;
        }
        // Every caller fails its transaction with a failed completion (the worker then advances
        // the charge step by step, in new transactions): no savepoint of its own.
        match prior.funding {
            Some(funding) => tx.post_journals_whole(&[&funding, &journal])?,
            None => tx.post_journal_whole(&journal)?,
        }
        Ok(())
    }

    /// Releases an authorised charge's reservation and fails it `processing_error`.
    pub(crate) fn release_and_fail(
        &self,
        tx: &mut (impl ChargeFlow + ?Sized),
        charge: &mut Charge,
        now: Timestamp,
        entered: &mut Entered,
    ) -> Result<(), ServiceError> {
        if let Some(payer) = charge.payer_account.clone() {
            tx.release(&payer, charge.payer_debit()?)?;
        }
        self.apply(tx, charge, ChargeEvent::ProcessingFailed, now, entered)
    }

    /// Locks a wallet after too many wrong PINs and declines every pending prompt for it
    /// (`current` is the charge already locked by the caller, if any).
    pub(crate) fn lock_out(
        &self,
        tx: &mut (impl ChargeFlow + ?Sized),
        wallet: &mut Wallet,
        current: Option<&mut Charge>,
        now: Timestamp,
        entered: &mut Entered,
    ) -> Result<(), ServiceError> {
        wallet.state = WalletState::Locked;
        wallet.lock_reason = Some(PIN_LOCKOUT_REASON.to_owned());
        wallet.pin_attempts = self.0.countries.for_msisdn(&wallet.msisdn).map_or(3, |c| c.max_pin_attempts);
        wallet.updated_at = now;
        tx.update_wallet(wallet)?;
        self.end_pending_prompts(tx, wallet, ChargeEvent::PinLockout, current, now, entered)
    }

    /// Applies `event` to every pending prompt (charge or cash-out) of the wallet: `current` is
    /// one the caller has locked already, if any.
    pub(crate) fn end_pending_prompts(
        &self,
        tx: &mut (impl ChargeFlow + ?Sized),
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
}
