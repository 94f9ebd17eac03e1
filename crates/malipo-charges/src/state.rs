//! The charge state machine of contract section 3.
//!
//! `pending → authorised → completed`; `pending → declined | expired | failed`;
//! `authorised → failed`. Final states never move.

use std::fmt;
use std::str::FromStr;

/// Where a charge is in its lifecycle.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub enum ChargeState {
    /// The prompt is on the payer's phone.
    Pending,
    /// The payer approved; funds are reserved on the wallet.
    Authorised,
    /// The ledger transaction is posted.
    Completed,
    /// The payer declined, or locked the wallet with wrong PINs.
    Declined,
    /// Nobody answered within the time-to-live.
    Expired,
    /// A payer-side condition or a posting failure stopped it.
    Failed,
}

impl ChargeState {
    /// Every state, in lifecycle order.
    pub const ALL: [ChargeState; 6] = [
        ChargeState::Pending,
        ChargeState::Authorised,
        ChargeState::Completed,
        ChargeState::Declined,
        ChargeState::Expired,
        ChargeState::Failed,
    ];

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            ChargeState::Pending => "pending",
            ChargeState::Authorised => "authorised",
            ChargeState::Completed => "completed",
            ChargeState::Declined => "declined",
            ChargeState::Expired => "expired",
            ChargeState::Failed => "failed",
        }
    }

    /// Whether nothing can move out of this state.
    pub fn is_final(self) -> bool {
        !matches!(self, ChargeState::Pending | ChargeState::Authorised)
    }
}

impl fmt::Display for ChargeState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Text that names no state.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("unknown charge state `{0}`")]
pub struct UnknownState(pub String);

impl FromStr for ChargeState {
    type Err = UnknownState;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ChargeState::ALL.into_iter().find(|st| st.as_str() == s).ok_or_else(|| UnknownState(s.to_owned()))
    }
}

/// Why a charge ended other than `completed`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum FailureReason {
    /// The payer declined the prompt.
    DeclinedByCustomer,
    /// Too many wrong PINs; the wallet is locked.
    PinAttemptsExceeded,
    /// No answer within the time-to-live.
    Expired,
    /// The number has no wallet.
    PayerNotFound,
    /// The wallet is locked.
    WalletLocked,
    /// A KYC tier or daily limit would be exceeded.
    LimitExceeded,
    /// The wallet cannot cover the amount.
    InsufficientFunds,
    /// Posting the ledger transaction failed.
    ProcessingError,
}

impl FailureReason {
    /// Every reason.
    pub const ALL: [FailureReason; 8] = [
        FailureReason::DeclinedByCustomer,
        FailureReason::PinAttemptsExceeded,
        FailureReason::Expired,
        FailureReason::PayerNotFound,
        FailureReason::WalletLocked,
        FailureReason::LimitExceeded,
        FailureReason::InsufficientFunds,
        FailureReason::ProcessingError,
    ];

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            FailureReason::DeclinedByCustomer => "declined_by_customer",
            FailureReason::PinAttemptsExceeded => "pin_attempts_exceeded",
            FailureReason::Expired => "expired",
            FailureReason::PayerNotFound => "payer_not_found",
            FailureReason::WalletLocked => "wallet_locked",
            FailureReason::LimitExceeded => "limit_exceeded",
            FailureReason::InsufficientFunds => "insufficient_funds",
            FailureReason::ProcessingError => "processing_error",
        }
    }

    /// Whether this reason may end a pending charge as `failed` (payer-side conditions).
    pub fn is_payer_side(self) -> bool {
        matches!(
            self,
            FailureReason::PayerNotFound | FailureReason::WalletLocked | FailureReason::LimitExceeded | FailureReason::InsufficientFunds
        )
    }
}

impl FromStr for FailureReason {
    type Err = UnknownState;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        FailureReason::ALL.into_iter().find(|r| r.as_str() == s).ok_or_else(|| UnknownState(s.to_owned()))
    }
}

/// Something that happens to a charge.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChargeEvent {
    /// The payer approved with the right PIN and the funds were reserved.
    Approve,
    /// The payer declined.
    Decline,
    /// The wallet locked after too many wrong PINs.
    PinLockout,
    /// The time-to-live passed.
    Expire,
    /// A payer-side condition (`reason` must be payer-side).
    PayerFailure(FailureReason),
    /// The ledger transaction was posted.
    Complete,
    /// Posting failed; the reservation was released.
    ProcessingFailed,
}

impl ChargeEvent {
    /// Every event, with each payer-side failure reason.
    pub fn all() -> Vec<ChargeEvent> {
        let mut v = vec![
            ChargeEvent::Approve,
            ChargeEvent::Decline,
            ChargeEvent::PinLockout,
            ChargeEvent::Expire,
            ChargeEvent::Complete,
            ChargeEvent::ProcessingFailed,
        ];
        v.extend(FailureReason::ALL.into_iter().map(ChargeEvent::PayerFailure));
        v
    }
}

/// The event is not allowed in the charge's state.
#[derive(Debug, thiserror::Error, PartialEq, Eq, Clone, Copy)]
#[error("a {state} charge cannot take {event:?}")]
pub struct TransitionError {
    /// The state the charge was in.
    pub state: ChargeState,
    /// The refused event.
    pub event: ChargeEvent,
}

/// The next state and failure reason for `event` in `state`.
///
/// # Errors
/// [`TransitionError`] when the move is not in the state machine.
pub fn transition(state: ChargeState, event: ChargeEvent) -> Result<(ChargeState, Option<FailureReason>), TransitionError> {
    use ChargeEvent as E;
    use ChargeState as S;
    let next = match (state, event) {
        (S::Pending, E::Approve) => (S::Authorised, None),
        (S::Pending, E::Decline) => (S::Declined, Some(FailureReason::DeclinedByCustomer)),
        (S::Pending, E::PinLockout) => (S::Declined, Some(FailureReason::PinAttemptsExceeded)),
        (S::Pending, E::Expire) => (S::Expired, Some(FailureReason::Expired)),
        (S::Pending, E::PayerFailure(r)) if r.is_payer_side() => (S::Failed, Some(r)),
        (S::Authorised, E::Complete) => (S::Completed, None),
        (S::Authorised, E::ProcessingFailed) => (S::Failed, Some(FailureReason::ProcessingError)),
        _ => return Err(TransitionError { state, event }),
    };
    Ok(next)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The complete table: every (state, event) pair and its expected outcome.
    fn expected(state: ChargeState, event: ChargeEvent) -> Option<(ChargeState, Option<FailureReason>)> {
        use ChargeEvent as E;
        use ChargeState as S;
        use FailureReason as R;
        match (state, event) {
            (S::Pending, E::Approve) => Some((S::Authorised, None)),
            (S::Pending, E::Decline) => Some((S::Declined, Some(R::DeclinedByCustomer))),
            (S::Pending, E::PinLockout) => Some((S::Declined, Some(R::PinAttemptsExceeded))),
            (S::Pending, E::Expire) => Some((S::Expired, Some(R::Expired))),
            (S::Pending, E::PayerFailure(R::PayerNotFound)) => Some((S::Failed, Some(R::PayerNotFound))),
            (S::Pending, E::PayerFailure(R::WalletLocked)) => Some((S::Failed, Some(R::WalletLocked))),
            (S::Pending, E::PayerFailure(R::LimitExceeded)) => Some((S::Failed, Some(R::LimitExceeded))),
            (S::Pending, E::PayerFailure(R::InsufficientFunds)) => Some((S::Failed, Some(R::InsufficientFunds))),
            (S::Authorised, E::Complete) => Some((S::Completed, None)),
            (S::Authorised, E::ProcessingFailed) => Some((S::Failed, Some(R::ProcessingError))),
            _ => None,
        }
    }

    #[test]
    fn every_state_event_pair_matches_the_contract_table() {
        let mut allowed = 0;
        for state in ChargeState::ALL {
            for event in ChargeEvent::all() {
                let got = transition(state, event).ok();
                assert_eq!(got, expected(state, event), "{state} + {event:?}");
                allowed += usize::from(got.is_some());
            }
        }
        assert_eq!(allowed, 10, "exactly the ten moves of the contract are allowed");
    }

    #[test]
    fn final_states_never_move() {
        for state in ChargeState::ALL.into_iter().filter(|s| s.is_final()) {
            for event in ChargeEvent::all() {
                assert_eq!(transition(state, event), Err(TransitionError { state, event }));
            }
        }
    }

    #[test]
    fn non_payer_reasons_cannot_fail_a_pending_charge() {
        for r in
            [FailureReason::DeclinedByCustomer, FailureReason::Expired, FailureReason::ProcessingError, FailureReason::PinAttemptsExceeded]
        {
            assert!(transition(ChargeState::Pending, ChargeEvent::PayerFailure(r)).is_err(), "{r:?}");
        }
    }

    #[test]
    fn names_round_trip() {
        for s in ChargeState::ALL {
            assert_eq!(s.as_str().parse::<ChargeState>(), Ok(s));
        }
        for r in FailureReason::ALL {
            assert_eq!(r.as_str().parse::<FailureReason>(), Ok(r));
        }
        assert!("done".parse::<ChargeState>().is_err());
    }
}
