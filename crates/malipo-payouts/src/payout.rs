//! The payout record and its state machine (contract section 5).
//!
//! `pending → completed`; `pending → failed`. Final states never move (a reversal raises
//! `amount_reversed` and leaves the state alone).

use std::fmt;
use std::str::FromStr;

use malipo_core::{AccountId, BulkPayoutId, Currency, MinorUnit, Mode, MoneyError, Msisdn, OrgId, PayoutRef, Timestamp, TransactionId};

/// Where a payout is in its lifecycle.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub enum PayoutState {
    /// Accepted; `amount + fee` is reserved on the payout account.
    Pending,
    /// The payee's wallet is credited.
    Completed,
    /// Not paid; the reservation is released.
    Failed,
}

impl PayoutState {
    /// Every state.
    pub const ALL: [PayoutState; 3] = [PayoutState::Pending, PayoutState::Completed, PayoutState::Failed];

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            PayoutState::Pending => "pending",
            PayoutState::Completed => "completed",
            PayoutState::Failed => "failed",
        }
    }

    /// Whether nothing can move out of this state.
    pub fn is_final(self) -> bool {
        self != PayoutState::Pending
    }
}

impl fmt::Display for PayoutState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Text that names no payout state or failure reason.
#[derive(Debug, thiserror::Error, PartialEq, Eq, Clone)]
#[error("unknown payout state or reason `{0}`")]
pub struct UnknownPayoutName(pub String);

impl FromStr for PayoutState {
    type Err = UnknownPayoutName;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        PayoutState::ALL.into_iter().find(|x| x.as_str() == s).ok_or_else(|| UnknownPayoutName(s.to_owned()))
    }
}

/// Why a payout failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum PayoutFailure {
    /// The number has no wallet (live), or is the sandbox's `…1007`.
    PayeeNotFound,
    /// The payee's wallet is locked.
    WalletLocked,
    /// The payee's KYC tier refuses the credit (per transaction or maximum balance).
    LimitExceeded,
    /// An item of a bulk payout whose batch the checker rejected: never paid.
    BulkPayoutRejected,
    /// Posting the ledger transaction failed (a bug or a broken invariant; logged).
    ProcessingError,
}

impl PayoutFailure {
    /// Every reason.
    pub const ALL: [PayoutFailure; 5] = [
        PayoutFailure::PayeeNotFound,
        PayoutFailure::WalletLocked,
        PayoutFailure::LimitExceeded,
        PayoutFailure::BulkPayoutRejected,
        PayoutFailure::ProcessingError,
    ];

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            PayoutFailure::PayeeNotFound => "payee_not_found",
            PayoutFailure::WalletLocked => "wallet_locked",
            PayoutFailure::LimitExceeded => "limit_exceeded",
            PayoutFailure::BulkPayoutRejected => "bulk_payout_rejected",
            PayoutFailure::ProcessingError => "processing_error",
        }
    }
}

impl FromStr for PayoutFailure {
    type Err = UnknownPayoutName;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        PayoutFailure::ALL.into_iter().find(|x| x.as_str() == s).ok_or_else(|| UnknownPayoutName(s.to_owned()))
    }
}

/// Something that happens to a payout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PayoutEvent {
    /// The payee's wallet was credited (the ledger transaction is posted).
    Pay,
    /// It cannot be paid; the reservation was released.
    Fail(PayoutFailure),
}

impl PayoutEvent {
    /// Every event, with each failure reason.
    pub fn all() -> Vec<PayoutEvent> {
        let mut v = vec![PayoutEvent::Pay];
        v.extend(PayoutFailure::ALL.into_iter().map(PayoutEvent::Fail));
        v
    }
}

/// The event is not allowed in the payout's state.
#[derive(Debug, thiserror::Error, PartialEq, Eq, Clone, Copy)]
#[error("a {state} payout cannot take {event:?}")]
pub struct PayoutTransitionError {
    /// The state the payout was in.
    pub state: PayoutState,
    /// The refused event.
    pub event: PayoutEvent,
}

/// The next state and failure reason for `event` in `state`.
///
/// # Errors
/// [`PayoutTransitionError`] when the move is not in the state machine.
pub fn transition(state: PayoutState, event: PayoutEvent) -> Result<(PayoutState, Option<PayoutFailure>), PayoutTransitionError> {
    match (state, event) {
        (PayoutState::Pending, PayoutEvent::Pay) => Ok((PayoutState::Completed, None)),
        (PayoutState::Pending, PayoutEvent::Fail(r)) => Ok((PayoutState::Failed, Some(r))),
        _ => Err(PayoutTransitionError { state, event }),
    }
}

/// Money sent from an organisation's payout account to a customer's wallet.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Payout {
    /// `po_…`.
    pub id: PayoutRef,
    /// The paying organisation.
    pub org_id: OrgId,
    /// Test or live.
    pub mode: Mode,
    /// Who receives it.
    pub payee_msisdn: Msisdn,
    /// What the payee receives.
    pub amount: MinorUnit,
    /// The country's `payout` fee, paid by the organisation on top of the amount.
    pub fee: MinorUnit,
    /// The payout account's currency.
    pub currency: Currency,
    /// Sum of reversals against this payout.
    pub amount_reversed: MinorUnit,
    /// The integrator's reference.
    pub reference: String,
    /// Optional text for the payee.
    pub narration: Option<String>,
    /// Lifecycle state.
    pub state: PayoutState,
    /// Why it failed.
    pub failure_reason: Option<PayoutFailure>,
    /// The ledger transaction once completed.
    pub transaction_id: Option<TransactionId>,
    /// The batch it belongs to, for a bulk item.
    pub bulk_payout_id: Option<BulkPayoutId>,
    /// Its place in its batch (0-based), for a bulk item.
    pub bulk_index: Option<u32>,
    /// The account it is paid from (and whose reservation covers it).
    pub payout_account: AccountId,
    /// When created.
    pub created_at: Timestamp,
    /// When last changed.
    pub updated_at: Timestamp,
    /// When completed.
    pub completed_at: Option<Timestamp>,
    /// When background work next looks at it (`None` once final, and for an item of a batch
    /// not yet approved).
    pub next_action_at: Option<Timestamp>,
}

impl Payout {
    /// What leaves the payout account: amount plus fee (the reservation).
    ///
    /// # Errors
    /// [`MoneyError`] on overflow.
    pub fn debit(&self) -> Result<MinorUnit, MoneyError> {
        self.amount.checked_add(self.fee)
    }

    /// Applies an event at `now`.
    ///
    /// # Errors
    /// [`PayoutTransitionError`] when the move is not allowed; the payout is unchanged.
    pub fn apply(&mut self, event: PayoutEvent, now: Timestamp) -> Result<(), PayoutTransitionError> {
        let (state, reason) = transition(self.state, event)?;
        self.state = state;
        self.failure_reason = reason;
        self.updated_at = now;
        self.next_action_at = None;
        if state == PayoutState::Completed {
            self.completed_at = Some(now);
        }
        Ok(())
    }
}

/// Filters of `GET /payouts`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PayoutFilter {
    /// Only this state.
    pub state: Option<PayoutState>,
    /// Created at or after.
    pub from: Option<Timestamp>,
    /// Created before.
    pub to: Option<Timestamp>,
    /// Only the items of this batch.
    pub bulk_payout_id: Option<BulkPayoutId>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expected(state: PayoutState, event: PayoutEvent) -> Option<(PayoutState, Option<PayoutFailure>)> {
        match (state, event) {
            (PayoutState::Pending, PayoutEvent::Pay) => Some((PayoutState::Completed, None)),
            (PayoutState::Pending, PayoutEvent::Fail(r)) => Some((PayoutState::Failed, Some(r))),
            _ => None,
        }
    }

    #[test]
    fn every_state_event_pair_matches_the_contract() {
        let mut allowed = 0;
        for state in PayoutState::ALL {
            for event in PayoutEvent::all() {
                let got = transition(state, event).ok();
                assert_eq!(got, expected(state, event), "{state} + {event:?}");
                allowed += usize::from(got.is_some());
            }
        }
        assert_eq!(allowed, 1 + PayoutFailure::ALL.len());
    }

    #[test]
    fn final_states_never_move() {
        for state in PayoutState::ALL.into_iter().filter(|s| s.is_final()) {
            for event in PayoutEvent::all() {
                assert_eq!(transition(state, event), Err(PayoutTransitionError { state, event }));
            }
        }
    }

    fn payout() -> Payout {
        let now = Timestamp::from_micros(1_000_000);
        Payout {
            id: PayoutRef::new(),
            org_id: OrgId::new(),
            mode: Mode::Test,
            payee_msisdn: Msisdn::parse("254712345678").unwrap_or_else(|e| panic!("{e}")),
            amount: MinorUnit::new(10_000),
            fee: MinorUnit::new(150),
            currency: Currency::new("KES").unwrap_or_else(|e| panic!("{e}")),
            amount_reversed: MinorUnit::ZERO,
            reference: "PAY-1".into(),
            narration: None,
            state: PayoutState::Pending,
            failure_reason: None,
            transaction_id: None,
            bulk_payout_id: None,
            bulk_index: None,
            payout_account: AccountId::new(),
            created_at: now,
            updated_at: now,
            completed_at: None,
            next_action_at: Some(now),
        }
    }

    #[test]
    fn applying_moves_state_and_clears_the_schedule() {
        let mut p = payout();
        assert_eq!(p.debit(), Ok(MinorUnit::new(10_150)));
        let later = Timestamp::from_micros(2_000_000);
        p.apply(PayoutEvent::Pay, later).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((p.state, p.completed_at, p.next_action_at, p.updated_at), (PayoutState::Completed, Some(later), None, later));
        let before = p.clone();
        assert!(p.apply(PayoutEvent::Fail(PayoutFailure::WalletLocked), later).is_err());
        assert_eq!(p, before, "a refused event changes nothing");

        let mut f = payout();
        f.apply(PayoutEvent::Fail(PayoutFailure::LimitExceeded), later).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((f.state, f.failure_reason, f.completed_at), (PayoutState::Failed, Some(PayoutFailure::LimitExceeded), None));
    }

    #[test]
    fn names_round_trip() {
        for s in PayoutState::ALL {
            assert_eq!(s.as_str().parse::<PayoutState>(), Ok(s));
        }
        for r in PayoutFailure::ALL {
            assert_eq!(r.as_str().parse::<PayoutFailure>(), Ok(r));
        }
        assert!("authorised".parse::<PayoutState>().is_err());
    }
}
