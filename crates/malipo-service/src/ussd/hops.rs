//! A request's hops through the pure menu: each hop's input, then the effects the menu asks
//! for, until it answers a screen. The effects are done by an [`Effects`]: the channel's own,
//! which may move money (`super`), or [`Reads`], which does on the caller's transaction only the
//! effects that read ([`Effect::LoadApprovals`], [`Effect::LookupRecipient`]) and gives up on any
//! other, so that hops needing no more are answered in the transaction that claims the session.

use malipo_charges::ChargeKind;
use malipo_core::{Mode, Msisdn};
use malipo_ussd::{Caller, Effect, Menu, Outcome, Prompt, PromptKind, Screen, State, Step};

use crate::core::{payee_name, Core};
use crate::error::ServiceError;
use crate::payment_requests::pay::RequestPayments;
use crate::ports::{AuthRepo, ChargeRepo, PaymentRequestRepo, UssdFlow, WalletRepo, WalletState};

/// Effects a single hop may chain before the menu must answer (the menu needs at most two).
const MAX_EFFECTS_PER_HOP: usize = 4;

/// Who does a hop's effects.
pub(crate) trait Effects {
    /// What the caller's wallet allows, for the first screen.
    ///
    /// # Errors
    /// Storage failures.
    fn caller(&mut self) -> Result<Caller, ServiceError>;
    /// Does `effect` for the hops so far, or `None` when this doer cannot.
    ///
    /// # Errors
    /// Storage failures.
    fn effect(&mut self, effect: Effect, hops: &[&str]) -> Result<Option<Outcome>, ServiceError>;
}

/// Handles the new hops (`hops[from..]`) from `state`, or starts the session (`state` None),
/// with `effects` doing what the menu asks, and answers the final state and screen; `None` when
/// `effects` could not do one of them.
///
/// # Errors
/// As the effects'.
pub(crate) fn handle_hops(
    menu: &Menu<'_>,
    hops: &[&str],
    state: Option<State>,
    from: usize,
    effects: &mut dyn Effects,
) -> Result<Option<(State, Screen)>, ServiceError> {
    let mut step = match state {
        None => menu.start(effects.caller()?),
        Some(state) => {
            let first = menu.input(&state, &hops[..=from]);
            let Some(mut step) = run_effects(menu, &hops[..=from], first, effects)? else { return Ok(None) };
            // A gateway that sent several new hops at once: handle them in order.
            for i in from.saturating_add(1)..hops.len() {
                match &step {
                    Step::Show { state, screen } if !screen.end => {
                        let next = menu.input(state, &hops[..=i]);
                        let Some(done) = run_effects(menu, &hops[..=i], next, effects)? else { return Ok(None) };
                        step = done;
                    }
                    _ => break,
                }
            }
            step
        }
    };
    let Some(done) = run_effects(menu, hops, step, effects)? else { return Ok(None) };
    step = done;
    Ok(Some(match step {
        Step::Show { state, screen } => (state, screen),
        Step::Run { .. } => (State::Ended, Screen::end("Sorry, something went wrong. Please try again.")),
    }))
}

/// Runs the effects a step asks for until the menu answers a screen (`None`: `effects` could
/// not do one).
fn run_effects(menu: &Menu<'_>, hops: &[&str], mut step: Step, effects: &mut dyn Effects) -> Result<Option<Step>, ServiceError> {
    for _ in 0..MAX_EFFECTS_PER_HOP {
        let Step::Run { state, effect } = step else {
            return Ok(Some(step));
        };
        let Some(outcome) = effects.effect(effect, hops)? else { return Ok(None) };
        step = menu.resume(&state, hops, outcome);
    }
    Ok(Some(match step {
        Step::Run { .. } => Step::Show { state: State::Ended, screen: Screen::end("Sorry, something went wrong. Please try again.") },
        shown => shown,
    }))
}

/// The effects that only read, on a transaction the caller holds.
pub(crate) struct Reads<'a, 't> {
    pub(crate) core: &'a Core,
    pub(crate) tx: &'t mut dyn UssdFlow,
    pub(crate) mode: Mode,
    pub(crate) caller: &'a Msisdn,
    /// Whether the hops asked for anything (a read included), rather than only moving through
    /// the menu.
    pub(crate) asked: bool,
}

impl<'a, 't> Reads<'a, 't> {
    pub(crate) fn new(core: &'a Core, tx: &'t mut dyn UssdFlow, mode: Mode, caller: &'a Msisdn) -> Self {
        Reads { core, tx, mode, caller, asked: false }
    }
}

impl Effects for Reads<'_, '_> {
    fn caller(&mut self) -> Result<Caller, ServiceError> {
        self.asked = true;
        caller_in(self.tx, self.mode, self.caller)
    }

    fn effect(&mut self, effect: Effect, _hops: &[&str]) -> Result<Option<Outcome>, ServiceError> {
        self.asked = true;
        Ok(match effect {
            Effect::LoadApprovals => Some(Outcome::Approvals(prompts_in(self.core, self.tx, self.mode, self.caller)?)),
            Effect::LookupRecipient { to } => Some(recipient_in(self.tx, self.mode, &to)?),
            _ => None,
        })
    }
}

/// What the caller's wallet allows.
///
/// # Errors
/// Storage failures.
pub(crate) fn caller_in(tx: &mut (impl WalletRepo + ?Sized), mode: Mode, msisdn: &Msisdn) -> Result<Caller, ServiceError> {
    Ok(match tx.wallet(mode, msisdn)? {
        None => Caller::Unknown,
        Some(w) if w.state == WalletState::Locked => Caller::Locked,
        Some(w) if w.pin_hash.is_none() => Caller::NoPin,
        Some(_) => Caller::Active,
    })
}

/// Whether `to` can receive money: [`Outcome::Recipient`] or [`Outcome::Refused`].
///
/// # Errors
/// Storage failures.
pub(crate) fn recipient_in(tx: &mut (impl WalletRepo + ?Sized), mode: Mode, to: &Msisdn) -> Result<Outcome, ServiceError> {
    Ok(match tx.wallet(mode, to)? {
        Some(w) if w.state == WalletState::Locked => Outcome::Refused(format!("{to} cannot receive money now.")),
        Some(w) => Outcome::Recipient { name: display_name(w.first_name.as_deref(), w.last_name.as_deref()) },
        // The sandbox opens a test wallet on first use, as for charges and payouts.
        None if mode == Mode::Test => Outcome::Recipient { name: None },
        None => Outcome::Refused(format!("{to} has no Malipo wallet.")),
    })
}

/// The caller's pending prompts that have not expired, oldest first: charges and cash-outs,
/// then the payment requests addressed to the caller.
///
/// # Errors
/// Storage failures.
pub(crate) fn prompts_in(
    core: &Core,
    tx: &mut (impl ChargeRepo + PaymentRequestRepo + AuthRepo + ?Sized),
    mode: Mode,
    caller: &Msisdn,
) -> Result<Vec<Prompt>, ServiceError> {
    let now = core.now();
    let mut prompts = Vec::new();
    for c in tx.pending_charges_of_payer(mode, caller)? {
        if now >= c.expires_at {
            continue;
        }
        let payee = payee_name(tx, &c.org_id)?;
        let (kind, fee) = match c.kind {
            ChargeKind::Charge => (PromptKind::Charge, 0),
            ChargeKind::CashOut => (PromptKind::CashOut, c.fee.get()),
        };
        prompts.push(Prompt { id: c.id.to_string(), kind, payee, amount: c.amount.get(), fee });
    }
    prompts.extend(RequestPayments(core).prompts_for(tx, mode, caller)?);
    Ok(prompts)
}

/// "Amina O." for display on a screen.
fn display_name(first: Option<&str>, last: Option<&str>) -> Option<String> {
    let first = first.map(str::trim).filter(|f| !f.is_empty())?;
    Some(match last.and_then(|l| l.trim().chars().next()) {
        Some(initial) => format!("{first} {initial}."),
        None => first.to_owned(),
    })
}
