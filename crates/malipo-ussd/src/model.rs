//! The vocabulary between the menu and the service: the caller, the session's state, the work
//! the menu asks for and what came of it.

use std::fmt;

use malipo_core::{MinorUnit, Msisdn};
use serde::{Deserialize, Serialize};

use crate::screen::Screen;

/// The caller's wallet as the service found it when the session starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Caller {
    /// No wallet for this number.
    Unknown,
    /// The wallet is locked (too many wrong PINs, or by an operator).
    Locked,
    /// The wallet exists but has no PIN yet.
    NoPin,
    /// A usable wallet with a PIN.
    Active,
}

/// What a [`Prompt`] asks the caller to approve.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PromptKind {
    /// A merchant's charge pushed to the caller's phone.
    Charge,
    /// A cash-out started by an agent.
    CashOut,
    /// A payment request addressed to the caller.
    PaymentRequest,
}

/// Something waiting for the caller's approval.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Prompt {
    /// The charge's, cash-out's or payment request's identifier.
    pub id: String,
    /// What it is.
    pub kind: PromptKind,
    /// The merchant's or agent's name.
    pub payee: String,
    /// The amount, in minor units of the caller's currency.
    pub amount: i64,
    /// What the caller pays on top, in minor units; 0 for charges.
    pub fee: i64,
}

/// Where the session is (stored by the service as JSON between hops). Holds no PIN: PIN hops
/// are referred to by their index in the input.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "at", rename_all = "snake_case")]
pub enum State {
    /// The main menu.
    Main,
    /// Send money: asking for the recipient's number.
    SendTo,
    /// Send money: asking for the amount.
    SendAmount {
        /// The recipient's MSISDN.
        to: String,
        /// The recipient's name, for display.
        name: Option<String>,
    },
    /// Send money: showing amount and fee, asking for the PIN.
    SendPin {
        /// The recipient's MSISDN.
        to: String,
        /// The recipient's name, for display.
        name: Option<String>,
        /// The amount, in minor units.
        amount: i64,
        /// The caller's fee, in minor units.
        fee: i64,
    },
    /// Pay merchant: asking for the pay code.
    PayCode,
    /// Pay merchant: the request found by its pay code shown (merchant's name, amount, any
    /// fee the caller pays), asking for the PIN.
    PayPin {
        /// The merchant's pay code.
        code: String,
        /// The payment request the code named when it was looked up (kind `payment_request`):
        /// the PIN pays this request, even if the code is reused meanwhile.
        prompt: Prompt,
    },
    /// Approve payments: the listed prompts, asking which one.
    Approvals {
        /// The prompts shown, in order (choice `1` is the first).
        prompts: Vec<Prompt>,
    },
    /// Approve payments: one prompt, asking approve or decline.
    ApprovalAction {
        /// The prompt chosen.
        prompt: Prompt,
    },
    /// Approve payments: asking for the PIN to approve.
    ApprovalPin {
        /// The prompt being approved.
        prompt: Prompt,
    },
    /// My balance: asking for the PIN.
    BalancePin,
    /// My account menu.
    Account,
    /// Change PIN: asking for the current PIN.
    ChangePinCurrent,
    /// Change PIN: asking for the new PIN.
    ChangePinNew {
        /// Index of the hop holding the verified current PIN.
        current_at: usize,
    },
    /// Change PIN: asking to repeat the new PIN.
    ChangePinConfirm {
        /// Index of the hop holding the verified current PIN.
        current_at: usize,
        /// Index of the hop holding the new PIN.
        new_at: usize,
    },
    /// The session is over.
    Ended,
}

/// Work the service must do; its result comes back through [`crate::Menu::resume`].
///
/// `Debug` shows PINs as `"****"`, so that logging an effect never leaks one.
#[derive(Clone, PartialEq, Eq)]
pub enum Effect {
    /// Load the caller's pending charges, cash-outs and addressed payment requests.
    LoadApprovals,
    /// Check that the recipient has a usable wallet ([`Outcome::Recipient`] or [`Outcome::Refused`]).
    LookupRecipient {
        /// The recipient.
        to: Msisdn,
    },
    /// Verify the PIN and send money wallet to wallet.
    SendMoney {
        /// The recipient.
        to: Msisdn,
        /// The amount, in the caller's currency.
        amount: MinorUnit,
        /// The PIN entered.
        pin: String,
    },
    /// Find the open payment request with this pay code ([`Outcome::PaymentRequest`] or
    /// [`Outcome::Refused`] saying why it cannot be paid).
    LookupPayCode {
        /// The pay code entered.
        code: String,
    },
    /// Verify the PIN and pay the payment request found by its pay code.
    PayCode {
        /// The merchant's pay code.
        code: String,
        /// The request shown to the caller.
        prompt: Prompt,
        /// The PIN entered.
        pin: String,
    },
    /// Verify the PIN and approve the prompt.
    Approve {
        /// The prompt.
        prompt: Prompt,
        /// The PIN entered.
        pin: String,
    },
    /// Decline the prompt (no PIN needed).
    Decline {
        /// The prompt.
        prompt: Prompt,
    },
    /// Verify the PIN and read the available balance.
    Balance {
        /// The PIN entered.
        pin: String,
    },
    /// Verify the PIN (counting a wrong one like any other attempt).
    VerifyPin {
        /// The PIN entered.
        pin: String,
    },
    /// Verify the current PIN again and replace it with the new one.
    ChangePin {
        /// The current PIN.
        current: String,
        /// The new PIN (already checked against the PIN policy).
        new: String,
    },
    /// Read the caller's KYC tier, its limits and today's use.
    AccountInfo,
}

/// What `Debug` shows instead of a PIN.
const REDACTED: &str = "****";

impl fmt::Debug for Effect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Effect::LoadApprovals => f.write_str("LoadApprovals"),
            Effect::LookupRecipient { to } => f.debug_struct("LookupRecipient").field("to", to).finish(),
            Effect::SendMoney { to, amount, pin: _ } => {
                f.debug_struct("SendMoney").field("to", to).field("amount", amount).field("pin", &REDACTED).finish()
            }
            Effect::LookupPayCode { code } => f.debug_struct("LookupPayCode").field("code", code).finish(),
            Effect::PayCode { code, prompt, pin: _ } => {
                f.debug_struct("PayCode").field("code", code).field("prompt", prompt).field("pin", &REDACTED).finish()
            }
            Effect::Approve { prompt, pin: _ } => f.debug_struct("Approve").field("prompt", prompt).field("pin", &REDACTED).finish(),
            Effect::Decline { prompt } => f.debug_struct("Decline").field("prompt", prompt).finish(),
            Effect::Balance { pin: _ } => f.debug_struct("Balance").field("pin", &REDACTED).finish(),
            Effect::VerifyPin { pin: _ } => f.debug_struct("VerifyPin").field("pin", &REDACTED).finish(),
            Effect::ChangePin { current: _, new: _ } => {
                f.debug_struct("ChangePin").field("current", &REDACTED).field("new", &REDACTED).finish()
            }
            Effect::AccountInfo => f.write_str("AccountInfo"),
        }
    }
}

/// What the service found or did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The pending prompts, oldest first.
    Approvals(Vec<Prompt>),
    /// The open payment request a pay code names (kind `payment_request`: the merchant's
    /// display name, the amount, and the fee the caller pays on top, 0 when the merchant pays it).
    PaymentRequest(Prompt),
    /// The recipient has a usable wallet.
    Recipient {
        /// The name to show, if any.
        name: Option<String>,
    },
    /// Success, worded by the service (at most 160 characters); shown with `END`.
    Done(String),
    /// The available balance.
    Balance {
        /// Available to spend.
        available: MinorUnit,
    },
    /// The caller's KYC tier, its limits and today's use.
    Account {
        /// The KYC tier.
        tier: u8,
        /// Largest single movement.
        per_transaction: MinorUnit,
        /// Daily limit.
        daily: MinorUnit,
        /// Moved so far today.
        daily_used: MinorUnit,
        /// Largest balance.
        max_balance: MinorUnit,
    },
    /// The PIN is right.
    PinOk,
    /// The PIN is wrong; the wallet is still usable.
    WrongPin {
        /// Wrong PINs still allowed before the wallet locks.
        attempts_left: u8,
    },
    /// That wrong PIN locked the wallet.
    Locked,
    /// A business refusal (unknown recipient, insufficient funds, limit exceeded, prompt no
    /// longer pending, no such pay code), worded by the service (at most 160 characters); shown
    /// with `END`.
    Refused(String),
}

/// What to do with a hop.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// Reply with `screen` now and store `state` ([`State::Ended`] when the screen ends the
    /// session).
    Show {
        /// The state to store.
        state: State,
        /// The reply.
        screen: Screen,
    },
    /// Run `effect`, then call [`crate::Menu::resume`] with `state` and the outcome.
    Run {
        /// The state to pass to `resume`.
        state: State,
        /// The work to do.
        effect: Effect,
    },
}

impl Step {
    /// The state carried by the step.
    pub fn state(&self) -> &State {
        match self {
            Step::Show { state, .. } | Step::Run { state, .. } => state,
        }
    }

    /// The screen to show, for [`Step::Show`].
    pub fn screen(&self) -> Option<&Screen> {
        match self {
            Step::Show { screen, .. } => Some(screen),
            Step::Run { .. } => None,
        }
    }
}
