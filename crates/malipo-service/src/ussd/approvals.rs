//! Answering a payment prompt on the menu: the approval with a PIN done in the transaction that
//! claims the session ([`InClaim`]), and the older way, one transaction after another, for a PIN
//! under an older hash or a completion that fails.

use malipo_charges::{Charge, ChargeEvent, ChargeState, FailureReason};
use malipo_core::{ChargeRef, Mode, Msisdn, Timestamp};
use malipo_countries::Country;
use malipo_ussd::{display_amount, Caller, Effect, Outcome, Prompt, PromptKind};

use super::hops::{Effects, Reads};
use crate::core::Core;
use crate::error::ServiceError;
use crate::lifecycle::{Entered, Funds, Lifecycle};
use crate::ports::{ChargeFlow, UssdFlow, Wallet};
use crate::processing::Processing;
use crate::views::{Charging, View};
use crate::wallets::{PinCheck, Pins};

/// An approval's answer: the charge's state or why it could not be answered, or the screen of
/// a PIN that is not right.
type Approval = Result<Result<ChargeState, String>, Outcome>;

/// What a right PIN's approval did: the charge's state and failure reason, or why the prompt
/// could not be answered.
type Answered = Result<(ChargeState, Option<FailureReason>), String>;

const LOCKED: &str = "Your Malipo wallet is locked. Visit a Malipo agent to unlock it.";

/// Answers payment prompts for the channel.
pub(super) struct Approvals<'a>(pub(super) &'a Core);

impl Approvals<'_> {
    /// The caller approves (with the right PIN already checked) or declines a pending prompt.
    /// Approval authorises it, then completes it through the worker's own steps. `Ok(Err(msg))`
    /// when the prompt can no longer be answered.
    pub(super) fn answer_prompt(
        &self,
        mode: Mode,
        caller: &Msisdn,
        prompt: &Prompt,
        approve: bool,
    ) -> Result<Result<ChargeState, String>, ServiceError> {
        let id = ChargeRef::from_trusted(prompt.id.clone());
        let mut entered = Entered::new();
        let answered = Charging::write(self.0.store(), |tx| {
            entered.clear();
            let now = self.0.now();
            let answer = approve.then_some((Funds::Hold, None));
            Ok(self.answer_in(tx, mode, caller, &id, answer, now, &mut entered)?.map(|c| (c.state, c.failure_reason)))
        })?;
        self.0.report(&entered);
        let (state, reason) = match answered {
            Ok(v) => v,
            Err(msg) => return Ok(Err(msg)),
        };
        if state == ChargeState::Authorised {
            if let Err(e) = Processing::new(self.0).settle_now(&id) {
                // The worker completes it after the lease: the approval stands.
                tracing::warn!(charge = %id, error = %e, "completing an approved charge failed; the worker will retry");
            }
        }
        Ok(answer_result(state, reason))
    }

    /// The PIN check, the approval and the completion of a charge or cash-out on the caller's
    /// transaction, the wallet's row locked once. `Some(Err(outcome))` when the PIN is not right
    /// (counted as on every channel); `None` for a PIN under an older hash (nothing written). A
    /// failed completion is an error, after which the transaction must not commit.
    #[allow(clippy::too_many_arguments)]
    fn approve_in(
        &self,
        tx: &mut dyn UssdFlow,
        mode: Mode,
        caller: &Msisdn,
        prompt: &Prompt,
        pin: &str,
        now: Timestamp,
        entered: &mut Entered,
    ) -> Result<Option<Approval>, ServiceError> {
        let id = ChargeRef::from_trusted(prompt.id.clone());
        let checked = Pins(self.0).check_pin_in(tx, mode, caller, pin, now, entered, &mut |tx, wallet, now, entered| {
            self.approve_guarded(tx, &id, wallet, now, entered)
        })?;
        Ok(checked.map(approval))
    }

    /// What a right PIN guards: the approval of the prompt and, when authorised, the charge's
    /// completion, on the same locked charge, by the caller whose `wallet` the PIN was checked on.
    fn approve_guarded(
        &self,
        tx: &mut dyn ChargeFlow,
        id: &ChargeRef,
        wallet: &Wallet,
        now: Timestamp,
        entered: &mut Entered,
    ) -> Result<Answered, ServiceError> {
        // Paid at once: a refused posting fails the claim's transaction, and the channel then
        // answers the prompt the older way, which tells insufficient funds apart. The wallet is
        // the one the PIN was checked on, locked by this transaction.
        let payer = Some((Funds::PayNow, Some(wallet)));
        let mut answered = self.answer_in(tx, wallet.mode, &wallet.msisdn, id, payer, now, entered)?;
        if let Ok(charge) = &mut answered {
            if charge.state == ChargeState::Authorised {
                // The charge this transaction locked and authorised, completed without a second read.
                Processing::new(self.0).steps_on(tx, charge, now, None, entered)?;
            }
        }
        Ok(answered.map(|c| (c.state, c.failure_reason)))
    }

    /// Answers a pending prompt in the caller's transaction: approved with `approve` (the way
    /// the payer's money is taken, and the payer's wallet if the transaction locked it
    /// already), declined with `None`. `Ok(Err(msg))` when it can no longer
    /// be answered, else the charge as answered (locked by the transaction).
    #[allow(clippy::too_many_arguments)]
    fn answer_in(
        &self,
        tx: &mut (impl ChargeFlow + ?Sized),
        mode: Mode,
        caller: &Msisdn,
        id: &ChargeRef,
        approve: Option<(Funds, Option<&Wallet>)>,
        now: Timestamp,
        entered: &mut Entered,
    ) -> Result<Result<Charge, String>, ServiceError> {
        let lifecycle = Lifecycle(self.0);
        let Some(mut charge) = tx.lock_charge(id)? else {
            return Ok(Err("This payment no longer exists.".to_owned()));
        };
        if charge.mode != mode || &charge.payer_msisdn != caller {
            return Ok(Err("This payment no longer exists.".to_owned()));
        }
        if charge.state != ChargeState::Pending {
            return Ok(Err("This payment is no longer waiting for your approval.".to_owned()));
        }
        if now >= charge.expires_at {
            lifecycle.apply(tx, &mut charge, ChargeEvent::Expire, now, entered)?;
            return Ok(Err("This payment request has expired.".to_owned()));
        }
        if let Some((funds, locked)) = approve {
            lifecycle.authorise(tx, &mut charge, now, entered, funds, locked)?;
        } else {
            lifecycle.apply(tx, &mut charge, ChargeEvent::Decline, now, entered)?;
        }
        Ok(Ok(charge))
    }
}

/// The answer to a prompt, from the state its charge reached.
fn answer_result(state: ChargeState, reason: Option<FailureReason>) -> Result<ChargeState, String> {
    if state == ChargeState::Authorised {
        return Ok(ChargeState::Authorised);
    }
    match reason {
        Some(FailureReason::InsufficientFunds) => Err("You do not have enough money for this payment.".to_owned()),
        Some(FailureReason::LimitExceeded) => Err("This payment is above your wallet's limits.".to_owned()),
        Some(FailureReason::WalletLocked) => Err(LOCKED.to_owned()),
        _ => Ok(state),
    }
}

/// The approval's answer from the PIN check and what it guarded.
fn approval((check, answered): (PinCheck, Option<Answered>)) -> Approval {
    pin_outcome(check)?;
    Ok(match answered {
        Some(Ok((state, reason))) => answer_result(state, reason),
        Some(Err(msg)) => Err(msg),
        None => Err("This payment no longer exists.".to_owned()),
    })
}

/// The screen's outcome of an approved (or refused) prompt.
pub(super) fn approved(country: &Country, prompt: &Prompt, answered: Result<ChargeState, String>) -> Outcome {
    let money = |m| display_amount(country.currency, m);
    match answered {
        Ok(state) if state == ChargeState::Completed || state == ChargeState::Authorised => Outcome::Done(match prompt.kind {
            PromptKind::CashOut => {
                format!("Withdrawal of {} at {} approved. Collect your cash from the agent.", money(amount(prompt.amount)), prompt.payee)
            }
            _ => format!("Payment of {} to {} approved.", money(amount(prompt.amount)), prompt.payee),
        }),
        Ok(state) => Outcome::Refused(format!("The payment could not be made ({state}).")),
        Err(msg) => Outcome::Refused(msg),
    }
}

/// The screen of a PIN that is not right; `Ok(())` for a right one.
pub(super) fn pin_outcome(check: PinCheck) -> Result<(), Outcome> {
    match check {
        PinCheck::Right => Ok(()),
        PinCheck::Wrong { attempts_left } => Err(Outcome::WrongPin { attempts_left }),
        PinCheck::LockedNow => Err(Outcome::Locked),
        PinCheck::Locked => Err(Outcome::Refused(LOCKED.into())),
        PinCheck::NoPin => Err(Outcome::Refused("Your Malipo wallet has no PIN yet. Visit a Malipo agent to set one.".into())),
        PinCheck::NoWallet => Err(Outcome::Refused("This number has no Malipo wallet.".into())),
    }
}

/// What the claim's transaction lends its hops' effects.
pub(super) struct Quiet<'e> {
    /// Whether approvals with a PIN are done in the claim.
    pub(super) approvals: bool,
    pub(super) now: Timestamp,
    /// The charge states entered, reported after the commit.
    pub(super) entered: &'e mut Entered,
}

/// The effects done in the transaction that claims the session: the reads, and (with
/// `approvals`) the approval of a charge or cash-out with a PIN under a keyed hash, its PIN
/// check, authorisation and completion, so that the PIN hop commits once and locks its session,
/// wallet and charge once. It gives up on any other effect (the hop is then claimed and handled
/// apart, by [`Live`]); after it has written, giving up is an error, which rolls the claim
/// back so that the hop is handled apart from the start.
pub(super) struct InClaim<'a, 't, 'q, 'e> {
    pub(super) reads: Reads<'a, 't>,
    pub(super) country: &'a Country,
    pub(super) quiet: &'q mut Quiet<'e>,
    pub(super) wrote: bool,
}

impl Effects for InClaim<'_, '_, '_, '_> {
    fn caller(&mut self) -> Result<Caller, ServiceError> {
        self.reads.caller()
    }

    fn effect(&mut self, effect: Effect, hops: &[&str]) -> Result<Option<Outcome>, ServiceError> {
        match effect {
            Effect::Approve { prompt, pin } if self.quiet.approvals && prompt.kind != PromptKind::PaymentRequest => {
                let (mode, caller) = (self.reads.mode, self.reads.caller);
                let Some(answer) = Approvals(self.reads.core).approve_in(
                    self.reads.tx,
                    mode,
                    caller,
                    &prompt,
                    &pin,
                    self.quiet.now,
                    self.quiet.entered,
                )?
                else {
                    return self.give_up();
                };
                self.wrote = true;
                Ok(Some(match answer {
                    Ok(answered) => approved(self.country, &prompt, answered),
                    Err(outcome) => outcome,
                }))
            }
            other => match self.reads.effect(other, hops)? {
                Some(outcome) => Ok(Some(outcome)),
                None => self.give_up(),
            },
        }
    }
}

impl InClaim<'_, '_, '_, '_> {
    fn give_up(&self) -> Result<Option<Outcome>, ServiceError> {
        if self.wrote {
            return Err(ServiceError::Internal("a USSD hop needs more after its approval; handling it apart".into()));
        }
        Ok(None)
    }
}

pub(super) fn amount(minor: i64) -> malipo_core::MinorUnit {
    malipo_core::MinorUnit::new(minor)
}
