//! The USSD channel: a gateway's session, driven hop by hop through the pure menu model of
//! `malipo-ussd`, with the model's effects carried out here over the same use cases as every
//! other channel (one PIN attempt counter, the same limits, the same charge state machine).
//!
//! Hops that only move through the menu or read are answered without a transaction: the
//! session read as committed and written back by compare-and-swap ([`Ussd::navigate`]); when
//! another request moved it in between, or the hops need more, the locked path below handles
//! them. There a session row is claimed before its new hops are handled (its `last_screen`
//! emptied, the in-progress mark), so a gateway that repeats a request while the first is still
//! running cannot make an effect happen twice; a repeat after it finished replays the last screen.

use malipo_auth::Principal;
use malipo_core::{Mode, Msisdn, OrgId, Timestamp};
use malipo_countries::Country;
use malipo_ussd::{
    clip, display_amount, split_hops, text_too_long, Caller, Effect, Menu, Outcome, Prompt, PromptKind, Screen, State, NAME_CHARS,
};

use malipo_idempotency::{Fingerprint, IdempotencyKey, KeyScope};

use crate::core::Core;
use crate::error::{FieldError, ServiceError};
use crate::idempotency::Idem;
use crate::lifecycle::Entered;
use crate::needs::{self, require};
use crate::p2p::P2p;
use crate::payment_requests::pay::RequestPayments;
use crate::ports::{UssdFlow, UssdSession};
use crate::processing::is_processing_failure;
use crate::views::{Dialling, OnUssd, OnWallets, Requesting, View};
use crate::wallets::{Pins, Wallets};

mod approvals;
mod hops;

use self::approvals::{amount, approved, pin_outcome, Approvals, InClaim, Quiet};
use self::hops::{caller_in, handle_hops, prompts_in, recipient_in, Effects, Reads};

/// Sessions end after this long without a hop.
pub const SESSION_TIMEOUT_SECONDS: i64 = 180;

/// A hop that only moves through the menu (nothing read, nothing done, more input expected) is
/// answered without writing the session when the session was written at most this long ago: the
/// next hop that needs the session handles it again from the stored state, which the menu does
/// alike. Its inactivity is then counted from the stored hop, with this much allowance.
pub const QUIET_HOP_SECONDS: i64 = 30;

/// The fields of an Africa's Talking USSD callback.
#[derive(Clone, Debug, Default)]
pub struct UssdRequest {
    /// The gateway's session id.
    pub session_id: String,
    /// The dialled code, e.g. `*384*1#`.
    pub service_code: String,
    /// The caller's number (a leading `+` is accepted).
    pub phone_number: String,
    /// Every input of the session joined by `*` (empty on the first request).
    pub text: String,
    /// The caller's network, if the gateway says.
    pub network_code: Option<String>,
}

const EXPIRED: &str = "Your session has expired. Please dial again.";
const BUSY: &str = "Your previous request is still being processed. Please dial again shortly.";
const OUT_OF_STEP: &str = "Sorry, this session is out of step. Please dial again.";
const TOO_LONG: &str = "Too much input. Please dial again.";

/// Which session an effect runs for.
struct SessionAt<'a> {
    org_id: &'a OrgId,
    mode: Mode,
    session_id: &'a str,
}

impl SessionAt<'_> {
    /// The idempotency key of an effect of this session at `hop`, bound to `request`.
    fn key(&self, operation: &str, hop: usize, request: &str) -> Result<Idem, ServiceError> {
        let key = IdempotencyKey::parse(&format!("{}:{hop}", self.session_id))
            .map_err(|e| ServiceError::Internal(format!("USSD idempotency key: {e}")))?;
        Ok(Idem {
            scope: KeyScope { org_id: self.org_id.clone(), mode: self.mode, operation: format!("USSD {operation}") },
            key,
            fingerprint: Fingerprint::of("USSD", operation, request.as_bytes()),
            actor: None,
            callback: None,
        })
    }
}

/// What the first phase of a request decided.
enum Claim {
    /// Answer this at once.
    Answer(String),
    /// Handle the hops from `from` on, starting in `state` (`None`: a new session); `session`
    /// is the row as it was before the claim.
    Handle { state: Option<State>, from: usize, session: Box<UssdSession> },
}

/// What [`Ussd::navigate`] found to do with a request's hops.
enum Moved {
    /// Answer this; nothing to write.
    Answer(String),
    /// The locked path must handle them.
    Locked,
    /// Answer `rendered` if the session, still `seen` (`None`: not yet started), becomes `next`.
    Swap { seen: Option<Box<UssdSession>>, next: Box<UssdSession>, rendered: String },
}

/// Where a stored session stands for a request of `hop_count` inputs.
enum Standing {
    /// Answer this, nothing done: a repeat, a request out of step, an expired or ended session.
    Answer(String),
    /// The session's first answer failed: start it again.
    Restart,
    /// Handle the hops from `seen` on, from `state`.
    Go { state: State, seen: usize },
}

fn standing(session: &UssdSession, caller: &Msisdn, now: Timestamp, hop_count: usize) -> Result<Standing, ServiceError> {
    let answer = |text: &str| Ok(Standing::Answer(Screen::end(text).render()));
    if &session.msisdn != caller {
        return answer(OUT_OF_STEP);
    }
    let seen = usize::try_from(session.hops).unwrap_or(usize::MAX);
    // Hops between the stored one and this request's last were answered without writing the
    // session (or came at once), at most QUIET_HOP_SECONDS after it.
    let allowance = if hop_count > seen.saturating_add(1) { QUIET_HOP_SECONDS } else { 0 };
    if now > session.updated_at.plus_seconds(SESSION_TIMEOUT_SECONDS).plus_seconds(allowance) {
        return answer(EXPIRED);
    }
    if session.state.is_empty() && hop_count == 0 {
        return Ok(Standing::Restart);
    }
    if session.last_screen.is_empty() {
        return answer(BUSY);
    }
    if hop_count == seen {
        // The gateway repeated its last request: the same answer, nothing done twice.
        return Ok(Standing::Answer(session.last_screen.clone()));
    }
    if hop_count < seen {
        return answer(OUT_OF_STEP);
    }
    let state: State = serde_json::from_str(&session.state).map_err(|e| ServiceError::Internal(format!("stored USSD state: {e}")))?;
    if state == State::Ended {
        return answer("Session ended.");
    }
    Ok(Standing::Go { state, seen })
}

/// A session of `caller` starting now, before its first answer.
fn new_session(principal: &Principal, req: &UssdRequest, caller: &Msisdn, now: Timestamp) -> UssdSession {
    UssdSession {
        org_id: principal.org_id.clone(),
        mode: principal.mode,
        session_id: req.session_id.clone(),
        msisdn: caller.clone(),
        state: String::new(),
        hops: 0,
        last_screen: String::new(),
        created_at: now,
        updated_at: now,
    }
}

fn check_request(req: &UssdRequest) -> Result<(), ServiceError> {
    let mut errors = Vec::new();
    let visible = |s: &str| s.bytes().all(|b| b.is_ascii_graphic());
    if req.session_id.is_empty() || req.session_id.len() > 128 || !visible(&req.session_id) {
        errors.push(FieldError::new("sessionId", "invalid_value", "sessionId must be 1 to 128 visible ASCII characters"));
    }
    if req.service_code.chars().count() > 64 {
        errors.push(FieldError::new("serviceCode", "too_long", "serviceCode must be at most 64 characters"));
    }
    if req.network_code.as_ref().is_some_and(|n| n.chars().count() > 64) {
        errors.push(FieldError::new("networkCode", "too_long", "networkCode must be at most 64 characters"));
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(ServiceError::Validation(errors))
    }
}

/// The USSD channel: a gateway's sessions, hop by hop.
pub struct Ussd<'a> {
    core: &'a Core,
}

impl<'a> Ussd<'a> {
    pub(crate) fn new(core: &'a Core) -> Self {
        Ussd { core }
    }

    /// Handles one USSD callback and answers the plain-text screen (`CON …` or `END …`, at
    /// most 182 characters).
    ///
    /// # Errors
    /// [`ServiceError::Validation`] for a malformed callback (session id, phone number);
    /// storage failures.
    pub fn handle(&self, principal: &Principal, req: &UssdRequest) -> Result<String, ServiceError> {
        require(principal, &needs::USSD)?;
        check_request(req)?;
        let number = req.phone_number.strip_prefix('+').unwrap_or(&req.phone_number);
        let (caller, country) = self
            .core
            .countries
            .parse_msisdn(number)
            .map_err(|e| ServiceError::field("phoneNumber", "invalid_msisdn", format!("phoneNumber {e}")))?;
        if text_too_long(&req.text) {
            return Ok(Screen::end(TOO_LONG).render());
        }
        let hops = split_hops(&req.text);
        let menu = Menu { countries: &self.core.countries, country, caller: &caller };
        if let Some(screen) = self.navigate(principal, req, &menu, &hops)? {
            return Ok(screen);
        }
        let claim = match self.claim_session(principal, req, &menu, &hops, true) {
            // The approval done in the claim failed past its PIN check (or could not finish the
            // hop there): all of it rolled back; claim the hop and handle it apart.
            Err(e) if is_processing_failure(&e) => {
                tracing::warn!(error = %e, "handling a USSD hop in the transaction that claims it failed; handling it apart");
                self.claim_session(principal, req, &menu, &hops, false)?
            }
            other => other?,
        };
        let (state, from, claimed) = match claim {
            Claim::Answer(screen) => return Ok(screen),
            Claim::Handle { state, from, session } => (state, from, session),
        };
        let at = SessionAt { org_id: &principal.org_id, mode: principal.mode, session_id: &req.session_id };
        let mut live = Live { ussd: self, at: &at, country, caller: &caller };
        let handled = handle_hops(&menu, &hops, state, from, &mut live)
            .map(|done| done.unwrap_or_else(|| (State::Ended, Screen::end("Sorry, something went wrong. Please try again."))));
        let (state, screen) = match handled {
            Ok(shown) => shown,
            Err(e) => {
                // Give the session back as it was, so the gateway's retry is handled afresh.
                if let Err(restore) = OnUssd::write(self.core.store(), |tx| Ok(tx.put_ussd_session(claimed.as_ref())?)) {
                    tracing::warn!(error = %restore, "could not release a USSD session after a failure");
                }
                return Err(e);
            }
        };
        let (session, rendered) = self.moved_on(&claimed, &state, &screen, hops.len())?;
        OnUssd::write(self.core.store(), |tx| Ok(tx.put_ussd_session(&session)?))?;
        Ok(rendered)
    }

    /// The session as it was, moved on to `state` after `hops` inputs, with `screen` rendered as
    /// its last screen; and that rendering.
    fn moved_on(&self, session: &UssdSession, state: &State, screen: &Screen, hops: usize) -> Result<(UssdSession, String), ServiceError> {
        let rendered = screen.render();
        let moved = UssdSession {
            state: serde_json::to_string(state).map_err(|e| ServiceError::Internal(e.to_string()))?,
            hops: u32::try_from(hops).unwrap_or(u32::MAX),
            last_screen: rendered.clone(),
            updated_at: self.core.now(),
            ..session.clone()
        };
        Ok((moved, rendered))
    }

    /// Finds or starts the session and claims it for this request's hops.
    /// Hops that need no effect but reads (the menu's navigation, the caller's pending prompts,
    /// a recipient's name), and with `approvals` the approval of a prompt with a PIN (see
    /// [`InClaim`]), are answered here, in the same transaction: the session row is locked,
    /// read, moved on and written once. Hops that need more are claimed (the session marked in
    /// progress) and handled by [`Ussd::handle`] afterwards.
    fn claim_session(
        &self,
        principal: &Principal,
        req: &UssdRequest,
        menu: &Menu<'_>,
        hops: &[&str],
        approvals: bool,
    ) -> Result<Claim, ServiceError> {
        let (caller, hop_count) = (menu.caller, hops.len());
        let mut entered = Entered::new();
        let claim = Dialling::write(self.core.store(), |tx| {
            entered.clear();
            let now = self.core.now();
            let mut quiet = Quiet { approvals, now, entered: &mut entered };
            let Some(mut session) = tx.ussd_session(&principal.org_id, principal.mode, &req.session_id)? else {
                if hop_count > 0 {
                    // Input for a session this platform never started (or long purged).
                    return Ok(Claim::Answer(Screen::end(EXPIRED).render()));
                }
                let session = new_session(principal, req, caller, now);
                if let Some(screen) = self.quietly(tx, menu, hops, None, 0, &session, &mut quiet)? {
                    return Ok(Claim::Answer(screen));
                }
                tx.put_ussd_session(&session)?;
                // Restoring a new session after a failure leaves it claimed-looking but empty:
                // the gateway's retry (no hops) then starts it afresh, see below.
                return Ok(Claim::Handle { state: None, from: 0, session: Box::new(session) });
            };
            let (state, seen) = match standing(&session, caller, now, hop_count)? {
                Standing::Answer(screen) => return Ok(Claim::Answer(screen)),
                Standing::Restart => {
                    // A session whose first answer failed: start it again.
                    session.updated_at = now;
                    if let Some(screen) = self.quietly(tx, menu, hops, None, 0, &session, &mut quiet)? {
                        return Ok(Claim::Answer(screen));
                    }
                    tx.put_ussd_session(&session)?;
                    return Ok(Claim::Handle { state: None, from: 0, session: Box::new(session) });
                }
                Standing::Go { state, seen } => (state, seen),
            };
            if let Some(screen) = self.quietly(tx, menu, hops, Some(state.clone()), seen, &session, &mut quiet)? {
                return Ok(Claim::Answer(screen));
            }
            let before = session.clone();
            session.last_screen = String::new();
            session.updated_at = now;
            tx.put_ussd_session(&session)?;
            Ok(Claim::Handle { state: Some(state), from: seen, session: Box::new(before) })
        })?;
        self.core.report(&entered);
        Ok(claim)
    }

    /// Answers hops that only move through the menu or read (and the repeats and refusals
    /// [`standing`] answers) without a transaction: the session as last committed and the reads,
    /// each on its own, then the session moved on in one compare-and-swap that writes only if no
    /// other request moved it meanwhile (the only statement that takes SQLite's writer turn; none
    /// for a hop that only moves, see [`QUIET_HOP_SECONDS`]). `None`: [`Ussd::claim_session`]
    /// must handle them (an effect, a PIN, a restart, or another request of the session in
    /// between), on the locked session as before.
    fn navigate(&self, principal: &Principal, req: &UssdRequest, menu: &Menu<'_>, hops: &[&str]) -> Result<Option<String>, ServiceError> {
        let hop_count = hops.len();
        let moved = Dialling::query(self.core.store(), |tx| {
            let now = self.core.now();
            // A first request starts a session without reading it first: if one exists (a
            // repeat, or a restart), the insert finds its key taken and the locked path answers.
            let peeked = if hop_count == 0 { None } else { tx.peek_ussd_session(&principal.org_id, principal.mode, &req.session_id)? };
            let (seen, state, from) = match peeked {
                // As on the locked path: input for a session this platform never started.
                None if hop_count > 0 => return Ok(Moved::Answer(Screen::end(EXPIRED).render())),
                None => (None, None, 0),
                Some(session) => match standing(&session, menu.caller, now, hop_count)? {
                    Standing::Answer(screen) => return Ok(Moved::Answer(screen)),
                    Standing::Restart => return Ok(Moved::Locked),
                    Standing::Go { state, seen } => (Some(session), Some(state), seen),
                },
            };
            let mut reads = Reads::new(self.core, &mut *tx, principal.mode, menu.caller);
            let Some((state, screen)) = handle_hops(menu, hops, state, from, &mut reads)? else { return Ok(Moved::Locked) };
            if let Some(stored) = &seen {
                if !reads.asked && !screen.end && now <= stored.updated_at.plus_seconds(QUIET_HOP_SECONDS) {
                    // Only moved through the menu: the stored session leads here again.
                    return Ok(Moved::Answer(screen.render()));
                }
            }
            let base = seen.clone().unwrap_or_else(|| new_session(principal, req, menu.caller, now));
            let (next, rendered) = self.moved_on(&base, &state, &screen, hop_count)?;
            Ok(Moved::Swap { seen: seen.map(Box::new), next: Box::new(next), rendered })
        })?;
        Ok(match moved {
            Moved::Answer(screen) => Some(screen),
            Moved::Locked => None,
            Moved::Swap { seen, next, rendered } => {
                OnUssd::autocommit(self.core.store(), |tx| Ok(tx.swap_ussd_session(seen.as_deref(), &next)?))?.then_some(rendered)
            }
        })
    }

    /// The answer to `hops` when they need no effect but what [`InClaim`] does, done on `tx`,
    /// with the session (as it was) moved on and written; `None` when they need more.
    #[allow(clippy::too_many_arguments)]
    fn quietly(
        &self,
        tx: &mut dyn UssdFlow,
        menu: &Menu<'_>,
        hops: &[&str],
        state: Option<State>,
        from: usize,
        session: &UssdSession,
        quiet: &mut Quiet<'_>,
    ) -> Result<Option<String>, ServiceError> {
        let mut effects =
            InClaim { reads: Reads::new(self.core, &mut *tx, session.mode, menu.caller), country: menu.country, quiet, wrote: false };
        let Some((state, screen)) = handle_hops(menu, hops, state, from, &mut effects)? else {
            return Ok(None);
        };
        let (done, rendered) = self.moved_on(session, &state, &screen, hops.len())?;
        tx.put_ussd_session(&done)?;
        Ok(Some(rendered))
    }

    /// One effect of the menu, done for the caller.
    fn ussd_effect(
        &self,
        at: &SessionAt<'_>,
        caller: &Msisdn,
        country: &Country,
        effect: Effect,
        hop: usize,
    ) -> Result<Outcome, ServiceError> {
        let mode = at.mode;
        let money = |m| display_amount(country.currency, m);
        // Checks the PIN; `Err(outcome)` is the answer when it is not right.
        let pin_gate =
            |pin: &str| -> Result<Result<(), Outcome>, ServiceError> { Ok(pin_outcome(Pins(self.core).check_pin(mode, caller, pin)?)) };
        Ok(match effect {
            Effect::LoadApprovals => Outcome::Approvals(Requesting::read(self.core.store(), |tx| prompts_in(self.core, tx, mode, caller))?),
            Effect::LookupRecipient { to } => OnWallets::read(self.core.store(), |tx| recipient_in(tx, mode, &to))?,
            Effect::SendMoney { to, amount, pin } => {
                if let Err(o) = pin_gate(&pin)? {
                    return Ok(o);
                }
                // Keyed by the session and hop: a retry after a failure past the transfer's commit
                // finds the transfer instead of sending again.
                let once = at.key("send_money", hop, &format!("{caller} {to} {}", amount.get()))?;
                match P2p(self.core).send_money(mode, caller, &to, amount, &format!("ussd:{}:{hop}", at.session_id), Some(&once)) {
                    Ok(t) => Outcome::Done(format!(
                        "Sent {} to {to}. Fee {}. Your balance is {}.",
                        money(t.amount),
                        money(t.fee),
                        money(t.sender_balance)
                    )),
                    Err(e) => Outcome::Refused(refusal(&e)?),
                }
            }
            Effect::LookupPayCode { code } => match RequestPayments(self.core).lookup(mode, &code)? {
                Ok(prompt) => Outcome::PaymentRequest(prompt),
                Err(why) => Outcome::Refused(why),
            },
            Effect::PayCode { code: _, prompt, pin } => {
                if let Err(o) = pin_gate(&pin)? {
                    return Ok(o);
                }
                self.pay_request(at, caller, country, &prompt, hop)?
            }
            Effect::Approve { prompt, pin } => {
                if prompt.kind == PromptKind::PaymentRequest {
                    if let Err(o) = pin_gate(&pin)? {
                        return Ok(o);
                    }
                    return self.pay_request(at, caller, country, &prompt, hop);
                }
                // Reached only when the claim could not approve: a PIN under an older hash, or a
                // completion that failed there. The check, the approval and the completion one
                // transaction after another (a failed completion left to the worker).
                if let Err(o) = pin_gate(&pin)? {
                    return Ok(o);
                }
                approved(country, &prompt, Approvals(self.core).answer_prompt(mode, caller, &prompt, true)?)
            }
            Effect::Decline { prompt } if prompt.kind == PromptKind::PaymentRequest => {
                match RequestPayments(self.core).decline(mode, caller, &prompt.id)? {
                    Ok(()) => {
                        Outcome::Done(format!("You declined {} to {}.", money(amount(prompt.amount)), clip(&prompt.payee, NAME_CHARS)))
                    }
                    Err(msg) => Outcome::Refused(msg),
                }
            }
            Effect::Decline { prompt } => match Approvals(self.core).answer_prompt(mode, caller, &prompt, false)? {
                Ok(_) => Outcome::Done(format!("You declined {} to {}.", money(amount(prompt.amount)), prompt.payee)),
                Err(msg) => Outcome::Refused(msg),
            },
            Effect::Balance { pin } => {
                if let Err(o) = pin_gate(&pin)? {
                    return Ok(o);
                }
                Outcome::Balance { available: Wallets::new(self.core).details_of(mode, caller)?.account.available() }
            }
            Effect::VerifyPin { pin } => match pin_gate(&pin)? {
                Ok(()) => Outcome::PinOk,
                Err(o) => o,
            },
            Effect::ChangePin { current, new } => {
                if let Err(o) = pin_gate(&current)? {
                    return Ok(o);
                }
                match Pins(self.core).replace_pin(mode, caller, &new) {
                    Ok(()) => Outcome::Done("Your Malipo PIN has been changed.".into()),
                    Err(e) => Outcome::Refused(refusal(&e)?),
                }
            }
            Effect::AccountInfo => {
                let d = Wallets::new(self.core).details_of(mode, caller)?;
                Outcome::Account {
                    tier: d.wallet.kyc_tier,
                    per_transaction: d.tier.per_transaction,
                    daily: d.tier.daily,
                    daily_used: d.daily_used,
                    max_balance: d.tier.max_balance,
                }
            }
        })
    }

    /// Pays a payment request shown to the caller (the PIN already checked), once per session
    /// and hop: a retry after a failure past the payment's commit finds the payment.
    fn pay_request(
        &self,
        at: &SessionAt<'_>,
        caller: &Msisdn,
        country: &Country,
        prompt: &Prompt,
        hop: usize,
    ) -> Result<Outcome, ServiceError> {
        let money = |m| display_amount(country.currency, m);
        let once = at.key("pay_request", hop, &format!("{caller} {}", prompt.id))?;
        Ok(match RequestPayments(self.core).pay(at.mode, caller, &prompt.id, &once)? {
            Ok(paid) => Outcome::Done(format!(
                "Paid {} to {}. Your balance is {}.",
                money(amount(prompt.amount)),
                clip(&prompt.payee, NAME_CHARS),
                money(paid.balance)
            )),
            Err(why) => Outcome::Refused(why),
        })
    }
}

/// The channel's own effects, each in its own transactions through the use cases.
struct Live<'a> {
    ussd: &'a Ussd<'a>,
    at: &'a SessionAt<'a>,
    country: &'a Country,
    caller: &'a Msisdn,
}

impl Effects for Live<'_> {
    fn caller(&mut self) -> Result<Caller, ServiceError> {
        OnWallets::read(self.ussd.core.store(), |tx| caller_in(tx, self.at.mode, self.caller))
    }

    fn effect(&mut self, effect: Effect, hops: &[&str]) -> Result<Option<Outcome>, ServiceError> {
        self.ussd.ussd_effect(self.at, self.caller, self.country, effect, hops.len()).map(Some)
    }
}

/// A business refusal, worded for the caller's screen; other failures stay errors.
fn refusal(e: &ServiceError) -> Result<String, ServiceError> {
    Ok(match e {
        ServiceError::InsufficientFunds => "You do not have enough money for this.".to_owned(),
        ServiceError::LimitExceeded(_) => "This is above your wallet's limits.".to_owned(),
        ServiceError::WalletLocked => "One of the wallets is locked.".to_owned(),
        ServiceError::CurrencyMismatch(_) => "You can only send to wallets in your currency.".to_owned(),
        ServiceError::Validation(errors) => errors.first().map_or_else(|| "That could not be done.".to_owned(), |f| sentence(&f.message)),
        ServiceError::InvalidState(msg) => sentence(msg),
        other => return Err(other.clone()),
    })
}

/// A message on a USSD screen: a sentence of at most 150 characters.
fn sentence(msg: &str) -> String {
    crate::validate::sentence(&msg.chars().take(150).collect::<String>())
}
