//! The charge record.

use malipo_core::{AccountId, ChargeRef, Currency, MinorUnit, Mode, MoneyError, Msisdn, OrgId, Timestamp, TransactionId};

use crate::state::{transition, ChargeEvent, ChargeState, FailureReason, TransitionError};

/// What a prompt on the customer's phone asks them to approve. Both kinds share the state
/// machine, the worker, expiry and PIN lockout; they differ in who pays the fee and where the
/// money goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum ChargeKind {
    /// A merchant's collection (`ch_…`): the merchant pays the fee out of the amount.
    Charge,
    /// An agent's cash-out (`wd_…`): the customer pays amount + fee, the agent's float receives
    /// the amount plus its commission, the operator the rest of the fee.
    CashOut,
}

impl ChargeKind {
    /// The storage name.
    pub fn as_str(self) -> &'static str {
        match self {
            ChargeKind::Charge => "charge",
            ChargeKind::CashOut => "cash_out",
        }
    }
}

impl std::str::FromStr for ChargeKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "charge" => Ok(ChargeKind::Charge),
            "cash_out" => Ok(ChargeKind::CashOut),
            other => Err(format!("unknown charge kind `{other}`")),
        }
    }
}

/// A prompt to a customer: a collection into a merchant's collection account, or a cash-out
/// into an agent's float (see [`ChargeKind`]).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Charge {
    /// `ch_…` for a charge; `wd_…` for a cash-out (stored in the same table).
    pub id: ChargeRef,
    /// Charge or cash-out.
    pub kind: ChargeKind,
    /// The merchant.
    pub org_id: OrgId,
    /// Test or live.
    pub mode: Mode,
    /// The customer asked to pay.
    pub payer_msisdn: Msisdn,
    /// Amount the payer pays.
    pub amount: MinorUnit,
    /// The fee, from the country's configuration (paid by the merchant for a charge, by the
    /// customer for a cash-out).
    pub fee: MinorUnit,
    /// The agent's share of a cash-out fee (zero for charges).
    pub commission: MinorUnit,
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
    ///
    /// # Errors
    /// [`MoneyError::Overflow`] (never for a charge whose fee is within its amount).
    pub fn net(&self) -> Result<MinorUnit, MoneyError> {
        self.amount.checked_sub(self.fee)
    }

    /// What leaves the customer's wallet (and is reserved on approval).
    ///
    /// # Errors
    /// [`MoneyError::Overflow`].
    pub fn payer_debit(&self) -> Result<MinorUnit, MoneyError> {
        match self.kind {
            ChargeKind::Charge => Ok(self.amount),
            ChargeKind::CashOut => self.amount.checked_add(self.fee),
        }
    }

    /// What the merchant's collection account or the agent's float receives.
    ///
    /// # Errors
    /// [`MoneyError::Overflow`].
    pub fn payee_credit(&self) -> Result<MinorUnit, MoneyError> {
        match self.kind {
            ChargeKind::Charge => self.net(),
            ChargeKind::CashOut => self.amount.checked_add(self.commission),
        }
    }

    /// What the operator's revenue account receives.
    ///
    /// # Errors
    /// [`MoneyError::Overflow`].
    pub fn revenue(&self) -> Result<MinorUnit, MoneyError> {
        self.fee.checked_sub(self.commission)
    }
}

/// Filters of `GET /partner/charges` and of the console's Charges list.
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
    /// Only charges to this payer (the console's "Phone number"; not a filter of the API).
    pub payer: Option<Msisdn>,
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn charge() -> Charge {
        let t = Timestamp::from_micros(1_000_000);
        Charge {
            id: ChargeRef::new(),
            kind: ChargeKind::Charge,
            commission: MinorUnit::ZERO,
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
        assert_eq!(c.net(), Ok(MinorUnit::new(24_900)));
    }

    #[test]
    fn the_money_of_each_kind_balances() {
        let c = charge();
        assert_eq!((c.payer_debit().unwrap().get(), c.payee_credit().unwrap().get(), c.revenue().unwrap().get()), (25_000, 24_900, 100));
        let w = Charge { kind: ChargeKind::CashOut, fee: MinorUnit::new(2_900), commission: MinorUnit::new(1_900), ..charge() };
        assert_eq!((w.payer_debit().unwrap().get(), w.payee_credit().unwrap().get(), w.revenue().unwrap().get()), (27_900, 26_900, 1_000));
        for x in [c, w] {
            assert_eq!(x.payer_debit().unwrap().get(), x.payee_credit().unwrap().get() + x.revenue().unwrap().get());
        }
    }

    #[test]
    fn refused_event_leaves_the_charge_unchanged() {
        let mut c = charge();
        let before = c.clone();
        assert!(c.apply(ChargeEvent::Complete, Timestamp::from_micros(9)).is_err());
        assert_eq!(c, before);
    }
}
