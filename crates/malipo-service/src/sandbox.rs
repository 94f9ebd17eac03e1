//! Sandbox helpers (test mode only): simulate a customer's answer, create or top up test wallets.

use malipo_auth::Principal;
use malipo_charges::{Charge, ChargeEvent, ChargeState, FailureReason};
use malipo_core::{MinorUnit, Mode, Timestamp};
use malipo_ledger::{AccountKind, Journal, JournalKind, JournalLine};

use crate::commands::{SandboxWallet, Simulate, SimulateAction};
use crate::core::{system_account, Core};
use crate::customers::Customers;
use crate::error::ServiceError;
use crate::idempotency::{Done, Idem};
use crate::lifecycle::{Entered, Funds, Lifecycle};
use crate::limits::{Limits, WalletDetails};
use crate::needs::{self, require};
use crate::ports::{ChargeFlow, WalletState};
use crate::views::Charging;

/// The sandbox helpers (test mode only).
pub struct Sandbox<'a> {
    core: &'a Core,
}

impl<'a> Sandbox<'a> {
    pub(crate) fn new(core: &'a Core) -> Self {
        Sandbox { core }
    }

    fn test_only(principal: &Principal) -> Result<(), ServiceError> {
        if principal.mode == Mode::Test {
            Ok(())
        } else {
            Err(ServiceError::TestModeOnly)
        }
    }

    /// Simulates the customer's answer to a test charge.
    ///
    /// # Errors
    /// [`ServiceError::TestModeOnly`], [`ServiceError::NotFound`], [`ServiceError::InvalidState`].
    pub fn simulate(&self, principal: &Principal, command: &Simulate, idem: &Idem) -> Result<Done<Charge>, ServiceError> {
        require(principal, &needs::SANDBOX)?;
        Self::test_only(principal)?;
        let Simulate { charge: id, action } = command;
        let action = *action;
        let mut entered = Entered::new();
        let outcome = self.core.idempotent(idem, Charging, |tx| {
            entered.clear();
            let now = self.core.now();
            if tx.charge(&principal.org_id, principal.mode, id)?.is_none() {
                return Err(ServiceError::NotFound);
            }
            let mut charge = tx.lock_charge(id)?.ok_or(ServiceError::NotFound)?;
            self.simulate_on(tx, &mut charge, action, now, &mut entered)?;
            Ok(charge)
        })?;
        self.core.report(&entered);
        Ok(outcome)
    }

    fn simulate_on(
        &self,
        tx: &mut (impl ChargeFlow + ?Sized),
        charge: &mut Charge,
        action: SimulateAction,
        now: Timestamp,
        entered: &mut Entered,
    ) -> Result<(), ServiceError> {
        let lifecycle = Lifecycle(self.core);
        let pending = charge.state == ChargeState::Pending;
        if !(pending || (action == SimulateAction::Fail && charge.state == ChargeState::Authorised)) {
            return Err(ServiceError::InvalidState(format!(
                "the charge is {}; only pending charges can be simulated (and `fail` on authorised ones)",
                charge.state
            )));
        }
        match action {
            SimulateAction::Approve => {
                // Held: a payer without the funds ends the charge failed, not the request.
                lifecycle.authorise(tx, charge, now, entered, Funds::Hold, None)?;
                if charge.state == ChargeState::Authorised {
                    lifecycle.complete(tx, charge, now, entered)?;
                }
                Ok(())
            }
            SimulateAction::Decline => lifecycle.apply(tx, charge, ChargeEvent::Decline, now, entered),
            SimulateAction::Expire => lifecycle.apply(tx, charge, ChargeEvent::Expire, now, entered),
            SimulateAction::Fail if pending => {
                lifecycle.apply(tx, charge, ChargeEvent::PayerFailure(FailureReason::InsufficientFunds), now, entered)
            }
            SimulateAction::Fail => lifecycle.release_and_fail(tx, charge, now, entered),
            SimulateAction::WrongPin => {
                let mut wallet = Customers(self.core).ensure_test_wallet(tx, &charge.payer_msisdn, now)?;
                if wallet.state == WalletState::Locked {
                    return lifecycle.apply(tx, charge, ChargeEvent::PayerFailure(FailureReason::WalletLocked), now, entered);
                }
                let max = self.core.countries.for_msisdn(&wallet.msisdn).map_or(3, |c| c.max_pin_attempts);
                wallet.pin_attempts = wallet.pin_attempts.saturating_add(1);
                if wallet.pin_attempts >= max {
                    lifecycle.lock_out(tx, &mut wallet, Some(charge), now, entered)
                } else {
                    wallet.updated_at = now;
                    tx.update_wallet(&wallet)?;
                    // A customer is at the prompt: the sandbox no longer answers for them.
                    charge.next_action_at = Some(charge.expires_at);
                    charge.updated_at = now;
                    tx.update_charge(charge)?;
                    Ok(())
                }
            }
        }
    }

    /// Creates a test wallet (funded with 1,000,000.00) or updates one: `balance` sets the
    /// balance (posting the difference against the sandbox funding account), `kyc_tier` the tier.
    ///
    /// # Errors
    /// [`ServiceError::TestModeOnly`], [`ServiceError::InsufficientFunds`] when the new balance
    /// is below the wallet's reservations.
    pub fn wallet(&self, principal: &Principal, command: &SandboxWallet, idem: &Idem) -> Result<Done<WalletDetails>, ServiceError> {
        require(principal, &needs::SANDBOX)?;
        Self::test_only(principal)?;
        let SandboxWallet { msisdn, balance: target, kyc_tier } = command;
        let (target, kyc_tier) = (*target, *kyc_tier);
        self.core.idempotent(idem, Charging, |tx| {
            let now = self.core.now();
            let mut wallet = Customers(self.core).ensure_test_wallet(tx, msisdn, now)?;
            let account = tx.account(&wallet.account_id)?.ok_or(ServiceError::Internal("wallet without account".into()))?;
            if let Some(target) = target {
                let diff = target.checked_sub(account.balance)?;
                if diff != MinorUnit::ZERO {
                    let funding = system_account(tx, Mode::Test, wallet.currency, AccountKind::SandboxFunding)?;
                    let journal = Journal::new(
                        Mode::Test,
                        wallet.currency,
                        JournalKind::SandboxFunding,
                        wallet.msisdn.as_str(),
                        vec![
                            JournalLine { account: funding, amount: diff.checked_neg()? },
                            JournalLine { account: account.id.clone(), amount: diff },
                        ],
                        now,
                    )?;
                    tx.post_journal(&journal).map_err(ServiceError::from).map_err(|e| {
                        if e.is_insufficient_funds() {
                            ServiceError::InsufficientFunds
                        } else {
                            e
                        }
                    })?;
                }
            }
            if let Some(t) = kyc_tier {
                wallet.kyc_tier = t;
                wallet.updated_at = now;
                tx.update_wallet(&wallet)?;
            }
            Limits(self.core).details(tx, &wallet, now)
        })
    }
}
