//! [`PayoutRepo`] and [`BulkRepo`] over the in-memory tables.

use std::collections::BTreeSet;
use std::ops::Bound;

use malipo_core::{BulkPayoutId, Mode, OrgId, PayoutRef, Timestamp};
use malipo_payouts::{BatchState, BulkPayout, Payout, PayoutFailure, PayoutFilter, PayoutState};
use malipo_service::{BulkRepo, PayoutRepo, StoreError};

use crate::state::State;
use crate::tx::{check, foreign_key, MemoryTx};

/// The check constraints of the `payouts` table: amounts in range, the fields tied to the state
/// (a ledger transaction and completion time exactly when completed, a failure reason exactly
/// when failed, work due only while pending, reversals only of a completed payout), a bulk item
/// with both its batch and its place, and values the columns can hold.
fn check_payout(p: &Payout) -> Result<(), StoreError> {
    let (amount, fee, reversed) = (p.amount.get(), p.fee.get(), p.amount_reversed.get());
    check(p.id.as_str().starts_with("po_"), "payouts_id_prefix_check")?;
    check(amount > 0, "payouts_amount_check")?;
    check(fee >= 0, "payouts_fee_check")?;
    check((0..=amount).contains(&reversed), "payouts_amount_reversed_check")?;
    let completed = p.state == PayoutState::Completed;
    check(completed == p.transaction_id.is_some(), "payouts_transaction_check")?;
    check(completed == p.completed_at.is_some(), "payouts_completed_at_check")?;
    check((p.state == PayoutState::Failed) == p.failure_reason.is_some(), "payouts_failure_reason_check")?;
    check(p.state == PayoutState::Pending || p.next_action_at.is_none(), "payouts_next_action_check")?;
    check(reversed == 0 || completed, "payouts_reversal_check")?;
    check(p.bulk_payout_id.is_some() == p.bulk_index.is_some(), "payouts_bulk_check")?;
    check(p.bulk_index.is_none_or(|i| i32::try_from(i).is_ok()), "payouts_bulk_index_check (INTEGER)")
}

/// The check constraints of the `bulk_payouts` table: sizes and amounts in range, counts that sum
/// to the item count and fit the state, the checker never the maker, and the approval, rejection
/// and completion fields set exactly in their states.
fn check_batch(b: &BulkPayout) -> Result<(), StoreError> {
    let c = b.counts;
    check(b.id.as_str().starts_with("bp_"), "bulk_payouts_id_prefix_check")?;
    check((1..=10_000).contains(&b.item_count), "bulk_payouts_item_count_check")?;
    check(b.total_amount.get() > 0, "bulk_payouts_total_amount_check")?;
    check(b.total_fees.get() >= 0, "bulk_payouts_total_fees_check")?;
    let fits = [c.pending, c.completed, c.failed].into_iter().all(|n| i32::try_from(n).is_ok());
    check(fits, "bulk_payouts_*_count_check (INTEGER)")?;
    let sum = u64::from(c.pending) + u64::from(c.completed) + u64::from(c.failed);
    check(sum == u64::from(b.item_count), "bulk_payouts_counts_check")?;
    let not_maker = |by: &Option<String>| by.as_ref().is_none_or(|by| *by != b.created_by);
    check(not_maker(&b.approved_by) && not_maker(&b.rejected_by), "bulk_payouts_maker_checker_check")?;
    let not_maker_person = |by: &Option<malipo_core::UserId>| by.is_none() || b.created_by_person.is_none() || *by != b.created_by_person;
    check(not_maker_person(&b.approved_by_person) && not_maker_person(&b.rejected_by_person), "bulk_payouts_people_check")?;
    let approved = matches!(b.state, BatchState::Processing | BatchState::Completed);
    check(approved == b.approved_by.is_some() && approved == b.approved_at.is_some(), "bulk_payouts_approval_check")?;
    let rejected = b.state == BatchState::Rejected;
    check(rejected == b.rejected_by.is_some() && rejected == b.rejection_reason.is_some(), "bulk_payouts_rejection_check")?;
    let finished = matches!(b.state, BatchState::Completed | BatchState::Rejected);
    check(finished == b.completed_at.is_some(), "bulk_payouts_completed_at_check")?;
    let counts_fit = match b.state {
        BatchState::AwaitingApproval => c.pending == b.item_count,
        BatchState::Processing => c.pending > 0,
        BatchState::Completed => c.pending == 0,
        BatchState::Rejected => c.failed == b.item_count,
    };
    check(counts_fit, "bulk_payouts_counts_state_check")
}

/// Whether a payout passes a list filter (`from` inclusive, `to` exclusive).
fn matches_filter(p: &Payout, filter: &PayoutFilter) -> bool {
    filter.state.is_none_or(|s| p.state == s)
        && filter.from.is_none_or(|from| p.created_at >= from)
        && filter.to.is_none_or(|to| p.created_at < to)
        && filter.bulk_payout_id.as_ref().is_none_or(|b| p.bulk_payout_id.as_ref() == Some(b))
}

/// The ids of a batch's items in its order, with index above `after` when given.
fn items_of(s: &State, batch: &BulkPayoutId, after: Option<u32>) -> Vec<PayoutRef> {
    let start = match after {
        Some(a) => Bound::Excluded((batch.clone(), a)),
        None => Bound::Included((batch.clone(), 0)),
    };
    s.batch_items.range((start, Bound::Included((batch.clone(), u32::MAX)))).map(|(_, id)| id.clone()).collect()
}

/// Refuses what a unique key of the table would: an id, a (batch, index) or a transaction
/// that exists, or appears twice among the new ones.
fn check_unique(s: &State, payouts: &[Payout]) -> Result<(), StoreError> {
    let mut ids = BTreeSet::new();
    let mut places = BTreeSet::new();
    let mut transactions = BTreeSet::new();
    for p in payouts {
        let place = p.bulk_payout_id.clone().zip(p.bulk_index);
        let transaction = p.transaction_id.as_ref();
        if s.payouts.contains_key(&p.id)
            || !ids.insert(&p.id)
            || place.as_ref().is_some_and(|k| s.batch_items.contains_key(k) || !places.insert(k.clone()))
            || transaction.is_some_and(|t| s.payout_transactions.contains_key(t) || !transactions.insert(t))
        {
            return Err(StoreError::Duplicate);
        }
    }
    Ok(())
}

impl PayoutRepo for MemoryTx<'_> {
    fn insert_payouts(&mut self, payouts: &[Payout]) -> Result<(), StoreError> {
        let s = self.w()?;
        // Every check before the first write: a refused payout leaves none of the others.
        check_unique(s, payouts)?;
        for p in payouts {
            foreign_key(s.orgs.contains_key(&p.org_id), "the payout's organisation")?;
            foreign_key(s.accounts.contains_key(&p.payout_account), "the payout's payout account")?;
            if let Some(batch) = &p.bulk_payout_id {
                foreign_key(s.batches.contains_key(batch), "the payout's bulk payout")?;
            }
            check_payout(p)?;
        }
        for p in payouts {
            if let Some(place) = p.bulk_payout_id.clone().zip(p.bulk_index) {
                s.batch_items.insert(place, p.id.clone());
            }
            if let Some(t) = &p.transaction_id {
                s.payout_transactions.insert(t.clone(), p.id.clone());
            }
            s.payouts.insert(p.id.clone(), p.clone());
        }
        Ok(())
    }

    fn payout(&mut self, org_id: &OrgId, mode: Mode, id: &PayoutRef) -> Result<Option<Payout>, StoreError> {
        Ok(self.r().payouts.get(id).filter(|p| &p.org_id == org_id && p.mode == mode).cloned())
    }

    fn lock_payout(&mut self, id: &PayoutRef) -> Result<Option<Payout>, StoreError> {
        // The whole store is locked for the transaction already.
        Ok(self.r().payouts.get(id).cloned())
    }

    fn update_payout(&mut self, payout: &Payout) -> Result<(), StoreError> {
        let s = self.w()?;
        let Some(stored) = s.payouts.get(&payout.id) else {
            return Err(StoreError::Other(format!("no payout {} to update", payout.id)));
        };
        let updated = Payout {
            state: payout.state,
            failure_reason: payout.failure_reason,
            transaction_id: payout.transaction_id.clone(),
            amount_reversed: payout.amount_reversed,
            updated_at: payout.updated_at,
            completed_at: payout.completed_at,
            next_action_at: payout.next_action_at,
            ..stored.clone()
        };
        check_payout(&updated)?;
        if let Some(t) = &updated.transaction_id {
            if s.payout_transactions.get(t).is_some_and(|owner| *owner != updated.id) {
                return Err(StoreError::Duplicate);
            }
        }
        if let Some(old) = &stored.transaction_id {
            s.payout_transactions.remove(old);
        }
        if let Some(t) = &updated.transaction_id {
            s.payout_transactions.insert(t.clone(), updated.id.clone());
        }
        s.payouts.insert(updated.id.clone(), updated);
        Ok(())
    }

    fn list_payouts(
        &mut self,
        org_id: &OrgId,
        mode: Mode,
        filter: &PayoutFilter,
        before: Option<&PayoutRef>,
        limit: usize,
    ) -> Result<Vec<Payout>, StoreError> {
        let s = self.r();
        let below = match before {
            Some(b) => s.payouts.range::<PayoutRef, _>(..b),
            None => s.payouts.range::<PayoutRef, _>(..),
        };
        Ok(below
            .rev()
            .map(|(_, p)| p)
            .filter(|p| &p.org_id == org_id && p.mode == mode && matches_filter(p, filter))
            .take(limit)
            .cloned()
            .collect())
    }

    fn batch_items(
        &mut self,
        batch: &BulkPayoutId,
        state: Option<PayoutState>,
        after: Option<u32>,
        limit: usize,
    ) -> Result<Vec<Payout>, StoreError> {
        let s = self.r();
        Ok(items_of(s, batch, after)
            .iter()
            .filter_map(|id| s.payouts.get(id))
            .filter(|p| state.is_none_or(|st| p.state == st))
            .take(limit)
            .cloned()
            .collect())
    }

    fn claim_due_payouts(&mut self, now: Timestamp, lease_until: Timestamp, limit: usize) -> Result<Vec<PayoutRef>, StoreError> {
        let s = self.w()?;
        let mut due: Vec<(Timestamp, PayoutRef)> =
            s.payouts.values().filter_map(|p| p.next_action_at.filter(|at| *at <= now).map(|at| (at, p.id.clone()))).collect();
        due.sort();
        due.truncate(limit);
        let mut claimed = Vec::with_capacity(due.len());
        for (_, id) in due {
            if let Some(p) = s.payouts.get_mut(&id) {
                p.next_action_at = Some(lease_until);
            }
            claimed.push(id);
        }
        Ok(claimed)
    }

    fn oldest_due_payout(&mut self, now: Timestamp) -> Result<Option<Timestamp>, StoreError> {
        Ok(self.r().payouts.values().filter_map(|p| p.next_action_at).filter(|at| *at <= now).min())
    }

    fn schedule_batch_items(&mut self, batch: &BulkPayoutId, at: Timestamp) -> Result<u64, StoreError> {
        let s = self.w()?;
        let mut scheduled: u64 = 0;
        for id in items_of(s, batch, None) {
            if let Some(p) = s.payouts.get_mut(&id).filter(|p| p.state == PayoutState::Pending) {
                p.next_action_at = Some(at);
                scheduled = scheduled.saturating_add(1);
            }
        }
        Ok(scheduled)
    }

    fn fail_batch_items(&mut self, batch: &BulkPayoutId, reason: PayoutFailure, now: Timestamp) -> Result<u64, StoreError> {
        let s = self.w()?;
        let mut failed: u64 = 0;
        for id in items_of(s, batch, None) {
            if let Some(p) = s.payouts.get_mut(&id).filter(|p| p.state == PayoutState::Pending) {
                p.state = PayoutState::Failed;
                p.failure_reason = Some(reason);
                p.updated_at = now;
                p.next_action_at = None;
                failed = failed.saturating_add(1);
            }
        }
        Ok(failed)
    }
}

impl BulkRepo for MemoryTx<'_> {
    fn insert_batch(&mut self, batch: &BulkPayout) -> Result<(), StoreError> {
        let s = self.w()?;
        if s.batches.contains_key(&batch.id) {
            return Err(StoreError::Duplicate);
        }
        foreign_key(s.orgs.contains_key(&batch.org_id), "the bulk payout's organisation")?;
        foreign_key(s.accounts.contains_key(&batch.payout_account), "the bulk payout's payout account")?;
        check_batch(batch)?;
        s.batches.insert(batch.id.clone(), batch.clone());
        Ok(())
    }

    fn batch(&mut self, org_id: &OrgId, mode: Mode, id: &BulkPayoutId) -> Result<Option<BulkPayout>, StoreError> {
        Ok(self.r().batches.get(id).filter(|b| &b.org_id == org_id && b.mode == mode).cloned())
    }

    fn lock_batch(&mut self, id: &BulkPayoutId) -> Result<Option<BulkPayout>, StoreError> {
        // The whole store is locked for the transaction already.
        Ok(self.r().batches.get(id).cloned())
    }

    fn update_batch(&mut self, batch: &BulkPayout) -> Result<(), StoreError> {
        let s = self.w()?;
        let Some(stored) = s.batches.get_mut(&batch.id) else {
            return Err(StoreError::Other(format!("no bulk payout {} to update", batch.id)));
        };
        let updated = BulkPayout {
            state: batch.state,
            approved_by: batch.approved_by.clone(),
            approved_by_person: batch.approved_by_person.clone(),
            rejected_by_person: batch.rejected_by_person.clone(),
            approved_at: batch.approved_at,
            rejected_by: batch.rejected_by.clone(),
            rejection_reason: batch.rejection_reason.clone(),
            counts: batch.counts,
            completed_at: batch.completed_at,
            updated_at: batch.updated_at,
            ..stored.clone()
        };
        check_batch(&updated)?;
        *stored = updated;
        Ok(())
    }

    fn list_batches(
        &mut self,
        org_id: &OrgId,
        mode: Mode,
        before: Option<&BulkPayoutId>,
        limit: usize,
    ) -> Result<Vec<BulkPayout>, StoreError> {
        let s = self.r();
        let below = match before {
            Some(b) => s.batches.range::<BulkPayoutId, _>(..b),
            None => s.batches.range::<BulkPayoutId, _>(..),
        };
        Ok(below.rev().map(|(_, b)| b).filter(|b| &b.org_id == org_id && b.mode == mode).take(limit).cloned().collect())
    }
}
