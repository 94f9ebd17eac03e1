//! The payment request record and its state machine.
//!
//! `open → paid` (a customer paid it before it expired), `open → cancelled` (the merchant
//! cancelled it, or the customer it was addressed to declined it), `open → expired` (its time
//! passed). Final states never move.

use std::fmt;
use std::str::FromStr;

use malipo_core::{AccountId, Currency, MinorUnit, Mode, MoneyError, Msisdn, OrgId, PaymentRequestId, Timestamp, TransactionId};

use crate::pay_code::PayCode;

/// `expires_in` when the merchant gives none: a day.
pub const DEFAULT_EXPIRES_IN_SECONDS: i64 = 86_400;
/// The `expires_in` a merchant may give: a minute to seven days.
pub const EXPIRES_IN_SECONDS: std::ops::RangeInclusive<i64> = 60..=7 * 86_400;

/// Where a payment request is in its lifecycle.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub enum RequestState {
    /// Waiting to be paid; its pay code is in use.
    Open,
    /// A customer paid it.
    Paid,
    /// Cancelled by the merchant, or declined by the customer it was addressed to.
    Cancelled,
    /// Its time passed unpaid.
    Expired,
}

impl RequestState {
    /// Every state.
    pub const ALL: [RequestState; 4] = [RequestState::Open, RequestState::Paid, RequestState::Cancelled, RequestState::Expired];

    /// The wire name.
    pub const fn as_str(self) -> &'static str {
        match self {
            RequestState::Open => "open",
            RequestState::Paid => "paid",
            RequestState::Cancelled => "cancelled",
            RequestState::Expired => "expired",
        }
    }

    /// Whether nothing can move out of this state.
    pub fn is_final(self) -> bool {
        self != RequestState::Open
    }
}

impl fmt::Display for RequestState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Text that names no payment request state.
#[derive(Debug, thiserror::Error, PartialEq, Eq, Clone)]
#[error("unknown payment request state `{0}`")]
pub struct UnknownRequestState(pub String);

impl FromStr for RequestState {
    type Err = UnknownRequestState;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        RequestState::ALL.into_iter().find(|x| x.as_str() == s).ok_or_else(|| UnknownRequestState(s.to_owned()))
    }
}

/// Something that happens to a payment request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RequestEvent {
    /// `payer` paid it with the ledger transaction `transaction_id`.
    Pay {
        /// Who paid.
        payer: Msisdn,
        /// The journal that moved the money.
        transaction_id: TransactionId,
    },
    /// The merchant cancelled it, or its addressee declined it.
    Cancel,
    /// Its time passed.
    Expire,
}

/// The event is not allowed now.
#[derive(Debug, thiserror::Error, PartialEq, Eq, Clone, Copy)]
pub enum TransitionError {
    /// Only an open request moves.
    #[error("the payment request is {state}")]
    NotOpen {
        /// Its state.
        state: RequestState,
    },
    /// It is still open but its time has passed: it can only expire.
    #[error("the payment request has expired")]
    PastExpiry,
    /// It cannot expire before its time.
    #[error("the payment request has not reached its expiry")]
    NotDue,
}

/// What a list of payment requests is narrowed to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequestFilter {
    /// Only requests in this state.
    pub state: Option<RequestState>,
}

/// A merchant's request to be paid.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PaymentRequest {
    /// `pr_…`.
    pub id: PaymentRequestId,
    /// The merchant.
    pub org_id: OrgId,
    /// Test or live.
    pub mode: Mode,
    /// What the customer types on the USSD menu.
    pub pay_code: PayCode,
    /// Lifecycle state.
    pub state: RequestState,
    /// What the customer pays.
    pub amount: MinorUnit,
    /// The country's `payment_request` fee, paid by the merchant out of the amount.
    pub fee: MinorUnit,
    /// The merchant's collection currency.
    pub currency: Currency,
    /// The merchant's reference.
    pub reference: String,
    /// Optional text.
    pub description: Option<String>,
    /// The customer it is addressed to (it shows in their pending approvals), if any.
    pub payer_msisdn: Option<Msisdn>,
    /// Who paid it.
    pub paid_by_msisdn: Option<Msisdn>,
    /// The ledger transaction that paid it.
    pub transaction_id: Option<TransactionId>,
    /// The merchant's collection account, credited with `amount - fee`.
    pub merchant_account: AccountId,
    /// When it stops being payable.
    pub expires_at: Timestamp,
    /// When created.
    pub created_at: Timestamp,
    /// When last changed.
    pub updated_at: Timestamp,
    /// When paid.
    pub paid_at: Option<Timestamp>,
}

impl PaymentRequest {
    /// What the merchant's collection account receives: `amount - fee`.
    ///
    /// # Errors
    /// [`MoneyError`] on overflow.
    pub fn merchant_credit(&self) -> Result<MinorUnit, MoneyError> {
        self.amount.checked_sub(self.fee)
    }

    /// Whether a customer may pay it at `now`: open and not past its expiry.
    ///
    /// # Errors
    /// [`TransitionError::NotOpen`] or [`TransitionError::PastExpiry`].
    pub fn payable(&self, now: Timestamp) -> Result<(), TransitionError> {
        if self.state != RequestState::Open {
            return Err(TransitionError::NotOpen { state: self.state });
        }
        if now >= self.expires_at {
            return Err(TransitionError::PastExpiry);
        }
        Ok(())
    }

    /// Applies an event at `now`: a payment only while payable, an expiry only once due, a
    /// cancellation while open.
    ///
    /// # Errors
    /// [`TransitionError`]; the request is unchanged.
    pub fn apply(&mut self, event: RequestEvent, now: Timestamp) -> Result<(), TransitionError> {
        if self.state != RequestState::Open {
            return Err(TransitionError::NotOpen { state: self.state });
        }
        match event {
            RequestEvent::Pay { payer, transaction_id } => {
                self.payable(now)?;
                self.state = RequestState::Paid;
                self.paid_by_msisdn = Some(payer);
                self.transaction_id = Some(transaction_id);
                self.paid_at = Some(now);
            }
            RequestEvent::Cancel => self.state = RequestState::Cancelled,
            RequestEvent::Expire => {
                if now < self.expires_at {
                    return Err(TransitionError::NotDue);
                }
                self.state = RequestState::Expired;
            }
        }
        self.updated_at = now;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    const T0: i64 = 1_763_805_600_000_000;

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_micros(T0 + seconds * 1_000_000)
    }

    fn request(state: RequestState) -> PaymentRequest {
        let payer = Msisdn::parse("254712345678").unwrap();
        let paid = state == RequestState::Paid;
        PaymentRequest {
            id: PaymentRequestId::new(),
            org_id: OrgId::new(),
            mode: Mode::Test,
            pay_code: PayCode::parse("482913").unwrap(),
            state,
            amount: MinorUnit::new(50_000),
            fee: MinorUnit::new(400),
            currency: Currency::KES,
            reference: "INV-1".into(),
            description: None,
            payer_msisdn: None,
            paid_by_msisdn: paid.then(|| payer.clone()),
            transaction_id: paid.then(TransactionId::new),
            merchant_account: AccountId::new(),
            expires_at: at(100),
            created_at: at(0),
            updated_at: at(0),
            paid_at: paid.then(|| at(1)),
        }
    }

    fn events() -> Vec<RequestEvent> {
        let payer = Msisdn::parse("254712000001").unwrap();
        vec![RequestEvent::Pay { payer, transaction_id: TransactionId::new() }, RequestEvent::Cancel, RequestEvent::Expire]
    }

    #[test]
    fn every_state_and_event_before_the_expiry() {
        for state in RequestState::ALL {
            for event in events() {
                let mut r = request(state);
                let before = r.clone();
                let result = r.apply(event.clone(), at(10));
                let expected = match (state, &event) {
                    (RequestState::Open, RequestEvent::Pay { .. }) => Ok(RequestState::Paid),
                    (RequestState::Open, RequestEvent::Cancel) => Ok(RequestState::Cancelled),
                    (RequestState::Open, RequestEvent::Expire) => Err(TransitionError::NotDue),
                    (s, _) => Err(TransitionError::NotOpen { state: s }),
                };
                match expected {
                    Ok(next) => {
                        assert_eq!(result, Ok(()), "{state} {event:?}");
                        assert_eq!((r.state, r.updated_at), (next, at(10)), "{state} {event:?}");
                    }
                    Err(e) => {
                        assert_eq!(result, Err(e), "{state} {event:?}");
                        assert_eq!(r, before, "a refused event changes nothing");
                    }
                }
            }
        }
    }

    #[test]
    fn every_state_and_event_at_and_after_the_expiry() {
        for when in [at(100), at(1000)] {
            for state in RequestState::ALL {
                for event in events() {
                    let mut r = request(state);
                    let before = r.clone();
                    let result = r.apply(event.clone(), when);
                    let expected = match (state, &event) {
                        (RequestState::Open, RequestEvent::Pay { .. }) => Err(TransitionError::PastExpiry),
                        (RequestState::Open, RequestEvent::Cancel) => Ok(RequestState::Cancelled),
                        (RequestState::Open, RequestEvent::Expire) => Ok(RequestState::Expired),
                        (s, _) => Err(TransitionError::NotOpen { state: s }),
                    };
                    match expected {
                        Ok(next) => assert_eq!((result, r.state), (Ok(()), next), "{state} {event:?}"),
                        Err(e) => assert_eq!((result, r), (Err(e), before), "{state} {event:?}"),
                    }
                }
            }
        }
    }

    #[test]
    fn paying_records_who_paid_with_which_transaction_and_when() {
        let mut r = request(RequestState::Open);
        let payer = Msisdn::parse("254712000009").unwrap();
        let tx = TransactionId::new();
        r.apply(RequestEvent::Pay { payer: payer.clone(), transaction_id: tx.clone() }, at(5)).unwrap();
        assert_eq!((r.paid_by_msisdn, r.transaction_id, r.paid_at), (Some(payer), Some(tx), Some(at(5))));
        let mut c = request(RequestState::Open);
        c.apply(RequestEvent::Cancel, at(5)).unwrap();
        assert_eq!((c.paid_by_msisdn, c.transaction_id, c.paid_at), (None, None, None));
    }

    #[test]
    fn payable_only_while_open_and_before_the_expiry() {
        assert_eq!(request(RequestState::Open).payable(at(99)), Ok(()));
        assert_eq!(request(RequestState::Open).payable(at(100)), Err(TransitionError::PastExpiry));
        for s in [RequestState::Paid, RequestState::Cancelled, RequestState::Expired] {
            assert_eq!(request(s).payable(at(1)), Err(TransitionError::NotOpen { state: s }));
        }
    }

    #[test]
    fn the_merchant_receives_the_amount_less_the_fee() {
        assert_eq!(request(RequestState::Open).merchant_credit(), Ok(MinorUnit::new(49_600)));
    }

    #[test]
    fn states_round_trip_their_names() {
        for s in RequestState::ALL {
            assert_eq!(s.as_str().parse::<RequestState>(), Ok(s));
            assert_eq!(s.is_final(), s != RequestState::Open);
        }
        assert!("pending".parse::<RequestState>().is_err());
    }

    #[test]
    fn expiry_bounds() {
        assert!(EXPIRES_IN_SECONDS.contains(&DEFAULT_EXPIRES_IN_SECONDS));
        assert_eq!((*EXPIRES_IN_SECONDS.start(), *EXPIRES_IN_SECONDS.end()), (60, 604_800));
    }
}
