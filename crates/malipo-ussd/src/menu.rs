//! The menu: what each hop does in each state, and the wording of every screen.

use malipo_core::{MinorUnit, Msisdn};
use malipo_countries::{Countries, Country, FeeOperation, PinError};

use crate::model::{Caller, Effect, Outcome, Prompt, PromptKind, State, Step};
use crate::screen::{display_amount, Screen, MAX_HOP_CHARS, MAX_SCREEN_CHARS, MAX_TEXT_CHARS};

pub(crate) const NO_WALLET: &str = "This number has no Malipo wallet. Visit a Malipo agent to open one.";
pub(crate) const LOCKED: &str = "Your Malipo wallet is locked. Visit a Malipo agent to unlock it.";
pub(crate) const NO_PIN: &str = "Your Malipo wallet has no PIN yet. Visit a Malipo agent to set one.";
pub(crate) const MAIN_MENU: &str = "Malipo\n1. Send money\n2. Pay merchant\n3. Approve payments\n4. My balance\n5. My account";
pub(crate) const SEND_TO: &str = "Enter recipient's phone number:";
pub(crate) const PAY_CODE: &str = "Enter merchant pay code:";
pub(crate) const ENTER_PIN: &str = "Enter PIN:";
pub(crate) const ACCOUNT_MENU: &str = "My account\n1. Change PIN\n2. KYC tier and limits";
pub(crate) const APPROVALS_TITLE: &str = "Approve payments";
pub(crate) const NO_APPROVALS: &str = "You have no payments to approve.";
pub(crate) const APPROVE_PIN: &str = "Enter PIN to approve:";
pub(crate) const CURRENT_PIN: &str = "Enter current PIN:";
pub(crate) const NEW_PIN: &str = "Enter new PIN:";
pub(crate) const CONFIRM_PIN: &str = "Confirm new PIN:";
pub(crate) const WEAK_PIN: &str = "That PIN is too easy to guess. Enter another new PIN:";
pub(crate) const SAME_PIN: &str = "The new PIN must differ from the current one. Enter new PIN:";
pub(crate) const MISMATCH: &str = "PINs do not match. Enter new PIN:";
pub(crate) const LOCKED_NOW: &str = "Wrong PIN. Your wallet is now locked. Visit a Malipo agent to unlock it.";
pub(crate) const SESSION_ENDED: &str = "Session ended.";
pub(crate) const TOO_MUCH_INPUT: &str = "Too much input. Please dial again.";
pub(crate) const WENT_WRONG: &str = "Sorry, something went wrong. Please try again.";
pub(crate) const INVALID: &str = "Invalid input.";
pub(crate) const INVALID_NUMBER: &str = "Invalid phone number.";
pub(crate) const OWN_NUMBER: &str = "You cannot send money to yourself.";
pub(crate) const INVALID_AMOUNT: &str = "Invalid amount.";

/// Payee names are cut to this many characters in the list of approvals.
pub(crate) const LIST_NAME_CHARS: usize = 18;
/// Payee and recipient names are cut to this many characters elsewhere.
pub const NAME_CHARS: usize = 24;
/// At most this many approvals are listed.
pub(crate) const MAX_LISTED: usize = 5;
/// A merchant pay code's digits.
const PAY_CODE_DIGITS: usize = 6;

/// The USSD menu for one caller, in the caller's country.
#[derive(Clone, Copy, Debug)]
pub struct Menu<'a> {
    /// The served countries (to read recipients' numbers).
    pub countries: &'a Countries,
    /// The caller's country: currency, PIN rules and fees.
    pub country: &'a Country,
    /// The caller's number.
    pub caller: &'a Msisdn,
}

/// A `CON` screen, storing `state`.
fn show(state: State, text: impl Into<String>) -> Step {
    Step::Show { state, screen: Screen::con(text) }
}

/// An `END` screen; the session is over.
fn end(text: impl Into<String>) -> Step {
    Step::Show { state: State::Ended, screen: Screen::end(text) }
}

/// Asks the service to run `effect`, resuming in `state`.
fn run(state: State, effect: Effect) -> Step {
    Step::Run { state, effect }
}

/// A service bug (an outcome that does not fit, a hop index out of range): end politely.
fn went_wrong() -> Step {
    end(WENT_WRONG)
}

/// The main menu.
fn main_menu() -> Step {
    show(State::Main, MAIN_MENU)
}

/// Characters of the whole input the hops came from (hops plus the `*` between them).
fn text_chars(hops: &[&str]) -> usize {
    hops.iter().map(|h| h.chars().count()).fold(hops.len().saturating_sub(1), usize::saturating_add)
}

/// A name fit for a screen: control characters (newlines) become spaces, surrounding spaces
/// go, and at most `max` characters are kept.
pub fn clip(name: &str, max: usize) -> String {
    let clean: String = name.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    clean.trim().chars().take(max).collect::<String>().trim_end().to_owned()
}

/// `1 attempt` / `2 attempts`.
fn attempts(n: u8) -> String {
    if n == 1 {
        "1 attempt".to_owned()
    } else {
        format!("{n} attempts")
    }
}

impl Menu<'_> {
    /// First request of a session (empty `text`).
    pub fn start(&self, caller: Caller) -> Step {
        match caller {
            Caller::Unknown => end(NO_WALLET),
            Caller::Locked => end(LOCKED),
            Caller::NoPin => end(NO_PIN),
            Caller::Active => main_menu(),
        }
    }

    /// A new hop: `hops` is the whole input so far (`text` split on `*`, see
    /// [`crate::split_hops`]); the new input is `hops.last()`, at index `hops.len() - 1`.
    /// `state` is what the previous step stored.
    ///
    /// Invalid input never ends the session: the same screen is shown again after a short
    /// message, the state unchanged. A whole input longer than [`MAX_TEXT_CHARS`] ends it.
    pub fn input(&self, state: &State, hops: &[&str]) -> Step {
        if *state == State::Ended {
            return end(SESSION_ENDED);
        }
        if text_chars(hops) > MAX_TEXT_CHARS {
            return end(TOO_MUCH_INPUT);
        }
        let hop = hops.last().copied().unwrap_or("");
        if hop.is_empty() || hop.chars().count() > MAX_HOP_CHARS {
            return self.invalid(state);
        }
        match state {
            State::Main => match hop {
                "1" => show(State::SendTo, SEND_TO),
                "2" => show(State::PayCode, PAY_CODE),
                "3" => run(State::Main, Effect::LoadApprovals),
                "4" => show(State::BalancePin, ENTER_PIN),
                "5" => show(State::Account, ACCOUNT_MENU),
                _ => self.invalid(state),
            },
            State::SendTo => match self.recipient(hop) {
                Ok(to) => run(State::SendTo, Effect::LookupRecipient { to }),
                Err(message) => self.reprompt(state, &message),
            },
            State::SendAmount { to, name } => match self.country.currency.parse_amount(hop) {
                Ok(amount) => {
                    let fee = self.country.fee(FeeOperation::P2p, amount);
                    let next = State::SendPin { to: to.clone(), name: name.clone(), amount: amount.get(), fee: fee.get() };
                    let text = self.prompt(&next);
                    show(next, text)
                }
                Err(_) => self.invalid(state),
            },
            State::SendPin { to, amount, .. } => self.with_pin(state, hop, |pin| {
                let to = Msisdn::parse(to).ok()?;
                Some(Effect::SendMoney { to, amount: MinorUnit::new(*amount), pin })
            }),
            State::PayCode => {
                if hop.len() == PAY_CODE_DIGITS && hop.bytes().all(|b| b.is_ascii_digit()) {
                    run(State::PayCode, Effect::LookupPayCode { code: hop.to_owned() })
                } else {
                    self.invalid(state)
                }
            }
            State::PayPin { code, prompt } => {
                self.with_pin(state, hop, |pin| Some(Effect::PayCode { code: code.clone(), prompt: prompt.clone(), pin }))
            }
            State::Approvals { prompts } => {
                if hop == "0" {
                    return main_menu();
                }
                match prompts.iter().enumerate().find(|(i, _)| i.saturating_add(1).to_string() == hop) {
                    Some((_, prompt)) => {
                        let next = State::ApprovalAction { prompt: prompt.clone() };
                        let text = self.prompt(&next);
                        show(next, text)
                    }
                    None => self.invalid(state),
                }
            }
            State::ApprovalAction { prompt } => match hop {
                "1" => show(State::ApprovalPin { prompt: prompt.clone() }, APPROVE_PIN),
                "2" => run(state.clone(), Effect::Decline { prompt: prompt.clone() }),
                "0" => main_menu(),
                _ => self.invalid(state),
            },
            State::ApprovalPin { prompt } => self.with_pin(state, hop, |pin| Some(Effect::Approve { prompt: prompt.clone(), pin })),
            State::BalancePin => self.with_pin(state, hop, |pin| Some(Effect::Balance { pin })),
            State::Account => match hop {
                "1" => show(State::ChangePinCurrent, CURRENT_PIN),
                "2" => run(State::Account, Effect::AccountInfo),
                "0" => main_menu(),
                _ => self.invalid(state),
            },
            State::ChangePinCurrent => self.with_pin(state, hop, |pin| Some(Effect::VerifyPin { pin })),
            State::ChangePinNew { current_at } => {
                let new_at = hops.len().saturating_sub(1);
                let Some(current) = hops.get(*current_at).filter(|_| *current_at < new_at) else { return went_wrong() };
                match self.country.check_new_pin(hop) {
                    Err(PinError::Format(_)) => self.invalid(state),
                    Err(PinError::Weak) => show(state.clone(), WEAK_PIN),
                    Ok(()) if hop == *current => show(state.clone(), SAME_PIN),
                    Ok(()) => show(State::ChangePinConfirm { current_at: *current_at, new_at }, CONFIRM_PIN),
                }
            }
            State::ChangePinConfirm { current_at, new_at } => {
                let confirm_at = hops.len().saturating_sub(1);
                let (Some(current), Some(new)) = (hops.get(*current_at), hops.get(*new_at)) else { return went_wrong() };
                if *current_at >= *new_at || *new_at >= confirm_at {
                    return went_wrong();
                }
                if !self.country.is_pin_format(hop) {
                    self.invalid(state)
                } else if hop != *new {
                    show(State::ChangePinNew { current_at: *current_at }, MISMATCH)
                } else {
                    run(state.clone(), Effect::ChangePin { current: (*current).to_owned(), new: (*new).to_owned() })
                }
            }
            State::Ended => end(SESSION_ENDED),
        }
    }

    /// The outcome of the effect a [`Step::Run`] asked for, `state` being that step's state and
    /// `hops` the same input as when the effect was asked for.
    ///
    /// An outcome that does not fit the state (a service bug) ends the session politely.
    pub fn resume(&self, state: &State, hops: &[&str], outcome: Outcome) -> Step {
        let pin_state = matches!(
            state,
            State::SendPin { .. } | State::PayPin { .. } | State::ApprovalPin { .. } | State::BalancePin | State::ChangePinCurrent
        );
        match (state, outcome) {
            (State::Ended | State::SendAmount { .. } | State::Approvals { .. } | State::ChangePinNew { .. }, _) => went_wrong(),
            (_, Outcome::Refused(message)) => end(message),
            (State::PayCode, Outcome::PaymentRequest(prompt)) => {
                let Some(code) = hops.last().filter(|c| c.len() == PAY_CODE_DIGITS) else { return went_wrong() };
                if prompt.kind != PromptKind::PaymentRequest {
                    return went_wrong();
                }
                let next = State::PayPin { code: (*code).to_owned(), prompt };
                let text = self.prompt(&next);
                show(next, text)
            }
            (State::PayCode, _) => went_wrong(),
            (State::Main, Outcome::Approvals(prompts)) => self.approvals(prompts),
            (State::SendTo, Outcome::Recipient { name }) => {
                let Some(Ok(to)) = hops.last().map(|hop| self.recipient(hop)) else { return went_wrong() };
                let name = name.map(|n| clip(&n, NAME_CHARS)).filter(|n| !n.is_empty());
                let next = State::SendAmount { to: to.as_str().to_owned(), name };
                let text = self.prompt(&next);
                show(next, text)
            }
            (
                State::SendPin { .. }
                | State::PayPin { .. }
                | State::ApprovalPin { .. }
                | State::ApprovalAction { .. }
                | State::ChangePinConfirm { .. },
                Outcome::Done(message),
            ) => end(message),
            (State::ChangePinConfirm { .. }, Outcome::WrongPin { attempts_left }) => {
                show(State::ChangePinCurrent, format!("Wrong PIN. {} left.\n{CURRENT_PIN}", attempts(attempts_left)))
            }
            (_, Outcome::WrongPin { attempts_left }) if pin_state => {
                let again = if *state == State::ChangePinCurrent { CURRENT_PIN } else { ENTER_PIN };
                show(state.clone(), format!("Wrong PIN. {} left.\n{again}", attempts(attempts_left)))
            }
            (State::ChangePinConfirm { .. }, Outcome::Locked) => end(LOCKED_NOW),
            (_, Outcome::Locked) if pin_state => end(LOCKED_NOW),
            (State::BalancePin, Outcome::Balance { available }) => {
                end(format!("Your balance is {}", display_amount(self.country.currency, available)))
            }
            (State::Account, Outcome::Account { tier, per_transaction, daily, daily_used, max_balance }) => {
                let amount = |v| display_amount(self.country.currency, v);
                end(format!(
                    "KYC tier {tier}\nPer transaction: {}\nDaily: {} (used {})\nMax balance: {}",
                    amount(per_transaction),
                    amount(daily),
                    amount(daily_used),
                    amount(max_balance)
                ))
            }
            (State::ChangePinCurrent, Outcome::PinOk) => {
                let Some(current_at) = hops.len().checked_sub(1) else { return went_wrong() };
                if !hops.get(current_at).is_some_and(|pin| self.country.is_pin_format(pin)) {
                    return went_wrong();
                }
                show(State::ChangePinNew { current_at }, NEW_PIN)
            }
            _ => went_wrong(),
        }
    }

    /// Reads the recipient of a transfer: international digits, with or without a leading `+`,
    /// or a local number starting with `0` (the `0` standing for the caller's dialling code). It
    /// must be a number of the caller's country and not the caller's own.
    fn recipient(&self, hop: &str) -> Result<Msisdn, String> {
        let digits = match (hop.strip_prefix('+'), hop.strip_prefix('0')) {
            (Some(international), _) => international.to_owned(),
            (None, Some(local)) => format!("{}{local}", self.country.dialling_code),
            (None, None) => hop.to_owned(),
        };
        let Ok((to, country)) = self.countries.parse_msisdn(&digits) else { return Err(INVALID_NUMBER.to_owned()) };
        if country.code != self.country.code {
            return Err(format!("You can only send to {} numbers.", clip(&self.country.name, NAME_CHARS)));
        }
        if to == *self.caller {
            return Err(OWN_NUMBER.to_owned());
        }
        Ok(to)
    }

    /// Runs the effect made from the PIN in `hop` when it has the country's PIN format; an
    /// ill-formed PIN is invalid input (not an attempt).
    fn with_pin(&self, state: &State, hop: &str, effect: impl FnOnce(String) -> Option<Effect>) -> Step {
        if !self.country.is_pin_format(hop) {
            return self.invalid(state);
        }
        match effect(hop.to_owned()) {
            Some(effect) => run(state.clone(), effect),
            None => went_wrong(),
        }
    }

    /// Invalid input: the same screen again, after a short message (naming what was expected
    /// on the number and amount screens).
    fn invalid(&self, state: &State) -> Step {
        let message = match state {
            State::SendTo => INVALID_NUMBER,
            State::SendAmount { .. } => INVALID_AMOUNT,
            _ => INVALID,
        };
        self.reprompt(state, message)
    }

    /// The same screen again, after `message`, the state unchanged.
    fn reprompt(&self, state: &State, message: &str) -> Step {
        show(state.clone(), format!("{message}\n{}", self.prompt(state)))
    }

    /// An amount in the caller's currency.
    fn amount(&self, minor: i64) -> String {
        display_amount(self.country.currency, MinorUnit::new(minor))
    }

    /// The screen of a state, as first shown.
    pub(crate) fn prompt(&self, state: &State) -> String {
        match state {
            State::Main => MAIN_MENU.to_owned(),
            State::SendTo => SEND_TO.to_owned(),
            State::SendAmount { .. } => format!("Enter amount ({}):", self.country.currency),
            State::SendPin { to, name, amount, fee } => {
                let whom = name.as_deref().map(|n| clip(n, NAME_CHARS)).filter(|n| !n.is_empty()).unwrap_or_else(|| to.clone());
                format!("Send {} to {whom}\nFee {}\n{ENTER_PIN}", self.amount(*amount), self.amount(*fee))
            }
            State::PayCode => PAY_CODE.to_owned(),
            State::PayPin { prompt, .. } => {
                let mut text = format!("Pay {} to {}", self.amount(prompt.amount), clip(&prompt.payee, NAME_CHARS));
                if prompt.fee > 0 {
                    text.push_str(&format!("\nFee {}", self.amount(prompt.fee)));
                }
                text.push('\n');
                text.push_str(ENTER_PIN);
                text
            }
            State::Approvals { prompts } => self.approvals_text(prompts),
            State::ApprovalAction { prompt } => self.approval_text(prompt),
            State::ApprovalPin { .. } => APPROVE_PIN.to_owned(),
            State::BalancePin => ENTER_PIN.to_owned(),
            State::Account => ACCOUNT_MENU.to_owned(),
            State::ChangePinCurrent => CURRENT_PIN.to_owned(),
            State::ChangePinNew { .. } => NEW_PIN.to_owned(),
            State::ChangePinConfirm { .. } => CONFIRM_PIN.to_owned(),
            State::Ended => SESSION_ENDED.to_owned(),
        }
    }

    /// One line of the approvals list, without its number.
    fn approval_line(&self, prompt: &Prompt) -> String {
        let payee = clip(&prompt.payee, LIST_NAME_CHARS);
        match prompt.kind {
            PromptKind::CashOut => format!("Withdraw {} at {payee}", self.amount(prompt.amount)),
            PromptKind::Charge | PromptKind::PaymentRequest => format!("{payee} {}", self.amount(prompt.amount)),
        }
    }

    /// The approvals list screen.
    fn approvals_text(&self, prompts: &[Prompt]) -> String {
        let mut text = APPROVALS_TITLE.to_owned();
        for (i, prompt) in prompts.iter().enumerate() {
            text.push_str(&format!("\n{}. {}", i.saturating_add(1), self.approval_line(prompt)));
        }
        text
    }

    /// The list of pending prompts: as many as fit (at most [`MAX_LISTED`]), leaving room for
    /// the invalid-input message shown above the list when the choice is bad.
    fn approvals(&self, pending: Vec<Prompt>) -> Step {
        if pending.is_empty() {
            return end(NO_APPROVALS);
        }
        let room = MAX_SCREEN_CHARS.saturating_sub("CON ".len()).saturating_sub(INVALID.len()).saturating_sub(1);
        let mut used = APPROVALS_TITLE.chars().count();
        let mut listed = Vec::new();
        for prompt in pending.into_iter().take(MAX_LISTED) {
            let line = format!("\n{}. {}", listed.len().saturating_add(1), self.approval_line(&prompt)).chars().count();
            if used.saturating_add(line) > room && !listed.is_empty() {
                break;
            }
            used = used.saturating_add(line);
            listed.push(prompt);
        }
        let next = State::Approvals { prompts: listed };
        let text = self.prompt(&next);
        show(next, text)
    }

    /// The screen asking to approve or decline one prompt.
    fn approval_text(&self, prompt: &Prompt) -> String {
        let payee = clip(&prompt.payee, NAME_CHARS);
        let amount = self.amount(prompt.amount);
        let mut text = match prompt.kind {
            PromptKind::CashOut => format!("Withdraw {amount} at {payee}?"),
            PromptKind::Charge | PromptKind::PaymentRequest => format!("Pay {amount} to {payee}?"),
        };
        if prompt.fee > 0 {
            text.push_str(&format!("\nFee {}", self.amount(prompt.fee)));
        }
        text.push_str("\n1. Approve\n2. Decline");
        text
    }
}
