//! The charge record.

use malipo_core::{AccountId, ChargeRef, Currency, MinorUnit, Mode, Msisdn, OrgId, Timestamp, TransactionId};

use crate::state::{transition, ChargeEvent, ChargeState, FailureReason, TransitionError};

/// A collection from a customer's wallet into a merchant's collection account.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Charge {
    /// `ch_…`.
    pub id: ChargeRef,
    /// The merchant.
    pub org_id: OrgId,
    /// Test or live.
    pub mode: Mode,
    /// The customer asked to pay.
    pub payer_msisdn: Msisdn,
    /// Amount the payer pays.
    pub amount: MinorUnit,
    /// The merchant's fee, from the country's configuration.
    pub fee: MinorUnit,
    /// The charge's currency (the merchant's collection currency).
    pub currency: Currency,
    /// Sum of reversals against this charge.
    pub amount_reversed: MinorUnit,
    /// The integrator's own reference.
    pub reference: String,
    /// Optional text shown to the payer.
    pub description: Option<String>,
    /// Lifecycle state.
    pub state: ChargeState,
    /// Why it ended, when not completed.
    pub failure_reason: Option<FailureReason>,
    /// The ledger transaction once completed.
    pub transaction_id: Option<TransactionId>,
    /// Where the money lands.
    pub merchant_account: AccountId,
    /// The payer's wallet account once known.
    pub payer_account: Option<AccountId>,
    /// When created.
    pub created_at: Timestamp,
    /// When last changed.
    pub updated_at: Timestamp,
    /// When a pending charge expires.
    pub expires_at: Timestamp,
    /// When it completed.
    pub completed_at: Option<Timestamp>,
    /// When background work is next due for this charge (`None` once final).
    pub next_action_at: Option<Timestamp>,
}

impl Charge {
    /// Applies an event through the state machine, stamping `updated_at` (and `completed_at`).
    /// Final states clear `next_action_at`.
    ///
    /// # Errors
    /// [`TransitionError`] when the event is not allowed; the charge is unchanged.
    pub fn apply(&mut self, event: ChargeEvent, now: Timestamp) -> Result<(), TransitionError> {
        let (state, reason) = transition(self.state, event)?;
        self.state = state;
        self.failure_reason = reason;
        self.updated_at = now;
        if state == ChargeState::Completed {
            self.completed_at = Some(now);
        }
        if state.is_final() {
            self.next_action_at = None;
        }
        Ok(())
    }

    /// What the merchant receives: `amount - fee`.
    pub fn net(&self) -> MinorUnit {
        MinorUnit::new(self.amount.get() - self.fee.get())
    }
}

/// Filters of `GET /partner/charges`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ChargeFilter {
    /// Only this state.
    pub state: Option<ChargeState>,
    /// Created at or after.
    pub from: Option<Timestamp>,
    /// Created before.
    pub to: Option<Timestamp>,
    /// Only this reference.
    pub reference: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn charge() -> Charge {
        let t = Timestamp::from_micros(1_000_000);
        Charge {
            id: ChargeRef::new(),
            org_id: OrgId::new(),
            mode: Mode::Test,
            payer_msisdn: Msisdn::parse("254712345678").unwrap_or_else(|e| panic!("{e}")),
            amount: MinorUnit::new(25_000),
            fee: MinorUnit::new(100),
            currency: Currency::KES,
            amount_reversed: MinorUnit::ZERO,
            reference: "ORDER-1".into(),
            description: None,
            state: ChargeState::Pending,
            failure_reason: None,
            transaction_id: None,
            merchant_account: AccountId::new(),
            payer_account: None,
            created_at: t,
            updated_at: t,
            expires_at: t.plus_seconds(90),
            completed_at: None,
            next_action_at: Some(t),
        }
    }

    #[test]
    fn completing_stamps_times_and_clears_work() {
        let mut c = charge();
        let t1 = Timestamp::from_micros(2_000_000);
        let t2 = Timestamp::from_micros(3_000_000);
        assert_eq!(c.apply(ChargeEvent::Approve, t1), Ok(()));
        assert_eq!((c.state, c.updated_at, c.completed_at), (ChargeState::Authorised, t1, None));
        assert!(c.next_action_at.is_some(), "an authorised charge still has work due");
        assert_eq!(c.apply(ChargeEvent::Complete, t2), Ok(()));
        assert_eq!((c.state, c.completed_at, c.next_action_at), (ChargeState::Completed, Some(t2), None));
        assert_eq!(c.net(), MinorUnit::new(24_900));
    }

    #[test]
    fn refused_event_leaves_the_charge_unchanged() {
        let mut c = charge();
        let before = c.clone();
        assert!(c.apply(ChargeEvent::Complete, Timestamp::from_micros(9)).is_err());
        assert_eq!(c, before);
    }
}
