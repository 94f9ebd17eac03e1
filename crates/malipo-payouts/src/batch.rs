//! A bulk payout batch and its state machine (contract section 6).
//!
//! `awaiting_approval → processing → completed`; `awaiting_approval → rejected`. The checker
//! (who approves or rejects) must differ from the maker: another credential, and, when both
//! sides are people (a person in the console, or a key pair a person created there), another
//! person. A processing batch completes when its last item settles.

use std::fmt;
use std::str::FromStr;

use malipo_core::{AccountId, BulkPayoutId, Currency, MinorUnit, Mode, OrgId, Timestamp, UserId};

use crate::payout::UnknownPayoutName;

/// Where a batch is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum BatchState {
    /// Stored and validated; waits for a checker.
    AwaitingApproval,
    /// Approved: the total is reserved and the items are being paid.
    Processing,
    /// Every item is completed or failed.
    Completed,
    /// The checker refused it; nothing was paid.
    Rejected,
}

impl BatchState {
    /// Every state.
    pub const ALL: [BatchState; 4] = [BatchState::AwaitingApproval, BatchState::Processing, BatchState::Completed, BatchState::Rejected];

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            BatchState::AwaitingApproval => "awaiting_approval",
            BatchState::Processing => "processing",
            BatchState::Completed => "completed",
            BatchState::Rejected => "rejected",
        }
    }
}

impl fmt::Display for BatchState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for BatchState {
    type Err = UnknownPayoutName;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        BatchState::ALL.into_iter().find(|x| x.as_str() == s).ok_or_else(|| UnknownPayoutName(s.to_owned()))
    }
}

/// How many of a batch's items are in each state. Always sums to the item count.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct BatchCounts {
    /// Not yet settled.
    pub pending: u32,
    /// Paid.
    pub completed: u32,
    /// Failed (or never paid because the batch was rejected).
    pub failed: u32,
}

/// Something that happens to a batch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BatchEvent {
    /// The checker (a client id) approved it.
    Approve {
        /// The checker's client id.
        by: String,
        /// The person behind the checker, if a person acts.
        person: Option<UserId>,
    },
    /// The checker rejected it.
    Reject {
        /// The checker's client id.
        by: String,
        /// The person behind the checker, if a person acts.
        person: Option<UserId>,
        /// Why.
        reason: String,
    },
    /// One item settled.
    ItemSettled {
        /// Whether it was paid (else failed).
        completed: bool,
    },
}

/// Why a batch refused an event.
#[derive(Debug, thiserror::Error, PartialEq, Eq, Clone)]
pub enum BulkTransitionError {
    /// The batch's state does not take the event.
    #[error("a {state} bulk payout cannot be {action}")]
    InvalidState {
        /// The state it was in.
        state: BatchState,
        /// What was tried (`approved`, `rejected`, `settled`).
        action: &'static str,
    },
    /// The checker is the maker (the same credential, or the same person).
    #[error("the credential or person that created a bulk payout cannot approve or reject it")]
    MakerChecker,
}

/// A batch of payouts created by a maker and approved (or rejected) by a checker.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct BulkPayout {
    /// `bp_…`.
    pub id: BulkPayoutId,
    /// The paying organisation.
    pub org_id: OrgId,
    /// Test or live.
    pub mode: Mode,
    /// The integrator's reference for the batch.
    pub reference: String,
    /// The payout account's currency.
    pub currency: Currency,
    /// Fixed at creation.
    pub item_count: u32,
    /// Sum of the items' amounts, fixed at creation.
    pub total_amount: MinorUnit,
    /// Sum of the items' fees, fixed at creation.
    pub total_fees: MinorUnit,
    /// The account the items are paid from.
    pub payout_account: AccountId,
    /// The maker's client id (a person's `usr_` id when a person made it in the console).
    pub created_by: String,
    /// The person who made it: in the console, or through a key pair they created there.
    pub created_by_person: Option<UserId>,
    /// The checker's client id, once approved.
    pub approved_by: Option<String>,
    /// The person who approved it, if a person did.
    pub approved_by_person: Option<UserId>,
    /// The checker's client id, once rejected.
    pub rejected_by: Option<String>,
    /// The person who rejected it, if a person did.
    pub rejected_by_person: Option<UserId>,
    /// The checker's reason, once rejected.
    pub rejection_reason: Option<String>,
    /// Where it is.
    pub state: BatchState,
    /// Items by state.
    pub counts: BatchCounts,
    /// When created.
    pub created_at: Timestamp,
    /// When approved.
    pub approved_at: Option<Timestamp>,
    /// When its last item settled, or when rejected.
    pub completed_at: Option<Timestamp>,
    /// When last changed.
    pub updated_at: Timestamp,
}

impl BulkPayout {
    /// What approval reserves: every item's amount plus fee.
    ///
    /// # Errors
    /// [`malipo_core::MoneyError`] on overflow.
    pub fn total_debit(&self) -> Result<MinorUnit, malipo_core::MoneyError> {
        self.total_amount.checked_add(self.total_fees)
    }

    /// Whether `by` (a client id) with `person` behind it is the maker: the same credential,
    /// or the same person when both sides are people.
    pub fn is_maker(&self, by: &str, person: Option<&UserId>) -> bool {
        by == self.created_by || person.is_some_and(|p| self.created_by_person.as_ref() == Some(p))
    }

    /// Applies an event at `now`. Approval and rejection check the maker/checker rule first;
    /// the last item to settle completes the batch.
    ///
    /// # Errors
    /// [`BulkTransitionError`]; the batch is then unchanged.
    pub fn apply(&mut self, event: BatchEvent, now: Timestamp) -> Result<(), BulkTransitionError> {
        let invalid = |state, action| Err(BulkTransitionError::InvalidState { state, action });
        match event {
            BatchEvent::Approve { by, person } => {
                if self.state != BatchState::AwaitingApproval {
                    return invalid(self.state, "approved");
                }
                if self.is_maker(&by, person.as_ref()) {
                    return Err(BulkTransitionError::MakerChecker);
                }
                self.state = BatchState::Processing;
                self.approved_by = Some(by);
                self.approved_by_person = person;
                self.approved_at = Some(now);
            }
            BatchEvent::Reject { by, person, reason } => {
                if self.state != BatchState::AwaitingApproval {
                    return invalid(self.state, "rejected");
                }
                if self.is_maker(&by, person.as_ref()) {
                    return Err(BulkTransitionError::MakerChecker);
                }
                self.state = BatchState::Rejected;
                self.rejected_by = Some(by);
                self.rejected_by_person = person;
                self.rejection_reason = Some(reason);
                self.counts = BatchCounts { pending: 0, completed: 0, failed: self.item_count };
                self.completed_at = Some(now);
            }
            BatchEvent::ItemSettled { completed } => {
                if self.state != BatchState::Processing || self.counts.pending == 0 {
                    return invalid(self.state, "settled");
                }
                self.counts.pending = self.counts.pending.saturating_sub(1);
                if completed {
                    self.counts.completed = self.counts.completed.saturating_add(1);
                } else {
                    self.counts.failed = self.counts.failed.saturating_add(1);
                }
                if self.counts.pending == 0 {
                    self.state = BatchState::Completed;
                    self.completed_at = Some(now);
                }
            }
        }
        self.updated_at = now;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(items: u32) -> BulkPayout {
        let now = Timestamp::from_micros(1);
        BulkPayout {
            id: BulkPayoutId::new(),
            org_id: OrgId::new(),
            mode: Mode::Test,
            reference: "PAYROLL-11".into(),
            currency: Currency::new("KES").unwrap_or_else(|e| panic!("{e}")),
            item_count: items,
            total_amount: MinorUnit::new(30_000),
            total_fees: MinorUnit::new(300),
            payout_account: AccountId::new(),
            created_by: "ck_test_maker".into(),
            created_by_person: None,
            approved_by: None,
            approved_by_person: None,
            rejected_by: None,
            rejected_by_person: None,
            rejection_reason: None,
            state: BatchState::AwaitingApproval,
            counts: BatchCounts { pending: items, completed: 0, failed: 0 },
            created_at: now,
            approved_at: None,
            completed_at: None,
            updated_at: now,
        }
    }

    fn approve(by: &str) -> BatchEvent {
        BatchEvent::Approve { by: by.into(), person: None }
    }
    fn reject(by: &str) -> BatchEvent {
        BatchEvent::Reject { by: by.into(), person: None, reason: "wrong month".into() }
    }
    const SETTLED: BatchEvent = BatchEvent::ItemSettled { completed: true };

    /// Every state × event: which are allowed and where they lead.
    #[test]
    fn every_state_event_pair() {
        let now = Timestamp::from_micros(5);
        for state in BatchState::ALL {
            for (event, allowed_in, leads_to) in [
                (approve("ck_test_checker"), Some(BatchState::AwaitingApproval), BatchState::Processing),
                (reject("ck_test_checker"), Some(BatchState::AwaitingApproval), BatchState::Rejected),
                (SETTLED, Some(BatchState::Processing), BatchState::Processing),
            ] {
                let mut b = batch(2);
                b.state = state;
                let before = b.clone();
                let got = b.apply(event.clone(), now);
                if Some(state) == allowed_in {
                    assert_eq!(got, Ok(()), "{state} + {event:?}");
                    assert_eq!(b.state, leads_to, "{state} + {event:?}");
                } else {
                    assert!(matches!(got, Err(BulkTransitionError::InvalidState { .. })), "{state} + {event:?}: {got:?}");
                    assert_eq!(b, before, "a refused event changes nothing");
                }
            }
        }
    }

    #[test]
    fn the_maker_can_neither_approve_nor_reject() {
        let mut b = batch(1);
        assert_eq!(b.apply(approve("ck_test_maker"), Timestamp::from_micros(2)), Err(BulkTransitionError::MakerChecker));
        assert_eq!(b.apply(reject("ck_test_maker"), Timestamp::from_micros(2)), Err(BulkTransitionError::MakerChecker));
        assert_eq!(b.state, BatchState::AwaitingApproval);
    }

    #[test]
    fn a_person_can_neither_approve_nor_reject_what_they_made_through_another_credential() {
        let maker = UserId::new();
        let mut b = batch(1);
        b.created_by_person = Some(maker.clone());
        let now = Timestamp::from_micros(2);
        // Their key pair (another client id), or their console session: the same person.
        for by in ["ck_test_theirs", maker.as_str()] {
            let approve = BatchEvent::Approve { by: by.into(), person: Some(maker.clone()) };
            assert_eq!(b.apply(approve, now), Err(BulkTransitionError::MakerChecker), "{by}");
            let reject = BatchEvent::Reject { by: by.into(), person: Some(maker.clone()), reason: "no".into() };
            assert_eq!(b.apply(reject, now), Err(BulkTransitionError::MakerChecker), "{by}");
        }
        assert_eq!(b.state, BatchState::AwaitingApproval);
        // Another person, or a key pair nobody in the console made: allowed.
        let other = UserId::new();
        b.apply(BatchEvent::Approve { by: other.as_str().into(), person: Some(other.clone()) }, now).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(b.approved_by_person, Some(other));
    }

    #[test]
    fn the_last_settled_item_completes_the_batch_with_its_counts() {
        let mut b = batch(3);
        b.apply(approve("ck_test_checker"), Timestamp::from_micros(2)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((b.approved_by.as_deref(), b.approved_at), (Some("ck_test_checker"), Some(Timestamp::from_micros(2))));
        b.apply(BatchEvent::ItemSettled { completed: true }, Timestamp::from_micros(3)).unwrap_or_else(|e| panic!("{e}"));
        b.apply(BatchEvent::ItemSettled { completed: false }, Timestamp::from_micros(4)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(b.state, BatchState::Processing);
        b.apply(BatchEvent::ItemSettled { completed: true }, Timestamp::from_micros(5)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(b.state, BatchState::Completed);
        assert_eq!(b.counts, BatchCounts { pending: 0, completed: 2, failed: 1 });
        assert_eq!(b.completed_at, Some(Timestamp::from_micros(5)));
        assert!(b.apply(SETTLED, Timestamp::from_micros(6)).is_err(), "no item settles twice");
    }

    #[test]
    fn rejection_fails_every_item_and_keeps_the_reason() {
        let mut b = batch(4);
        b.apply(reject("ck_test_checker"), Timestamp::from_micros(2)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(b.counts, BatchCounts { pending: 0, completed: 0, failed: 4 });
        assert_eq!((b.rejected_by.as_deref(), b.rejection_reason.as_deref()), (Some("ck_test_checker"), Some("wrong month")));
        assert_eq!(b.total_debit(), Ok(MinorUnit::new(30_300)));
    }
}
