//! [`ChargeRepo`] over the in-memory tables.

use std::collections::BTreeMap;

use malipo_charges::{Charge, ChargeFilter, ChargeKind, ChargeState};
use malipo_core::{ChargeRef, Mode, Msisdn, OrgId, Timestamp};
use malipo_service::{ChargeDayTotal, ChargeRepo, StoreError, DAY_MICROS};

use crate::tx::{check, foreign_key, MemoryTx};

/// The check constraints of the `charges` table: amounts in range, and the fields tied to the
/// state (work due only while pending or authorised, a ledger transaction exactly when
/// completed, a failure reason exactly when declined, expired or failed).
fn check_charge(c: &Charge) -> Result<(), StoreError> {
    let (amount, fee, reversed) = (c.amount.get(), c.fee.get(), c.amount_reversed.get());
    check(amount > 0, "charges_amount_check")?;
    check((0..=amount).contains(&fee), "charges_fee_check")?;
    check((0..=amount).contains(&reversed), "charges_amount_reversed_check")?;
    check((0..=fee).contains(&c.commission.get()), "charges_commission_check")?;
    check(c.state.is_final() != c.next_action_at.is_some(), "charges_next_action_check")?;
    check((c.state == ChargeState::Completed) == c.transaction_id.is_some(), "charges_transaction_check")?;
    let failed = matches!(c.state, ChargeState::Declined | ChargeState::Expired | ChargeState::Failed);
    check(failed == c.failure_reason.is_some(), "charges_failure_reason_check")
}

/// Whether a charge passes a list filter (`from` inclusive, `to` exclusive).
fn matches_filter(charge: &Charge, filter: &ChargeFilter) -> bool {
    filter.state.is_none_or(|s| charge.state == s)
        && filter.from.is_none_or(|from| charge.created_at >= from)
        && filter.to.is_none_or(|to| charge.created_at < to)
        && filter.reference.as_deref().is_none_or(|r| charge.reference == r)
        && filter.payer.as_ref().is_none_or(|p| &charge.payer_msisdn == p)
}

impl ChargeRepo for MemoryTx<'_> {
    fn insert_charge(&mut self, charge: &Charge) -> Result<(), StoreError> {
        let s = self.w()?;
        if s.charges.contains_key(&charge.id) {
            return Err(StoreError::Duplicate);
        }
        foreign_key(s.orgs.contains_key(&charge.org_id), "the charge's organisation")?;
        foreign_key(s.accounts.contains_key(&charge.merchant_account), "the charge's merchant account")?;
        check_charge(charge)?;
        s.charges.insert(charge.id.clone(), charge.clone());
        Ok(())
    }

    fn insert_charges(&mut self, charges: &[Charge]) -> Result<(), StoreError> {
        charges.iter().try_for_each(|c| self.insert_charge(c))
    }

    fn charge(&mut self, org_id: &OrgId, mode: Mode, id: &ChargeRef) -> Result<Option<Charge>, StoreError> {
        Ok(self.r().charges.get(id).filter(|c| &c.org_id == org_id && c.mode == mode).cloned())
    }

    fn latest_charge_by_reference(&mut self, org_id: &OrgId, mode: Mode, reference: &str) -> Result<Option<Charge>, StoreError> {
        Ok(self
            .r()
            .charges
            .values()
            .filter(|c| c.kind == ChargeKind::Charge && &c.org_id == org_id && c.mode == mode && c.reference == reference)
            .max_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)))
            .cloned())
    }

    fn lock_charge(&mut self, id: &ChargeRef) -> Result<Option<Charge>, StoreError> {
        // The whole store is locked for the transaction already.
        Ok(self.r().charges.get(id).cloned())
    }

    fn update_charge(&mut self, charge: &Charge) -> Result<(), StoreError> {
        let s = self.w()?;
        // Like an UPDATE that matches no row: nothing to do.
        let Some(stored) = s.charges.get_mut(&charge.id) else {
            return Ok(());
        };
        let updated = Charge {
            state: charge.state,
            failure_reason: charge.failure_reason,
            transaction_id: charge.transaction_id.clone(),
            payer_account: charge.payer_account.clone(),
            amount_reversed: charge.amount_reversed,
            updated_at: charge.updated_at,
            completed_at: charge.completed_at,
            next_action_at: charge.next_action_at,
            ..stored.clone()
        };
        check_charge(&updated)?;
        *stored = updated;
        Ok(())
    }

    fn list_charges(
        &mut self,
        org_id: &OrgId,
        mode: Mode,
        filter: &ChargeFilter,
        before: Option<&ChargeRef>,
        limit: usize,
    ) -> Result<Vec<Charge>, StoreError> {
        let s = self.r();
        let below = match before {
            Some(b) => s.charges.range::<ChargeRef, _>(..b),
            None => s.charges.range::<ChargeRef, _>(..),
        };
        Ok(below
            .rev()
            .map(|(_, c)| c)
            .filter(|c| c.kind == ChargeKind::Charge && &c.org_id == org_id && c.mode == mode && matches_filter(c, filter))
            .take(limit)
            .cloned()
            .collect())
    }

    fn charge_day_totals(&mut self, org_id: &OrgId, mode: Mode, from: Timestamp, days: u32) -> Result<Vec<ChargeDayTotal>, StoreError> {
        let end = from.as_micros().saturating_add(i64::from(days).saturating_mul(DAY_MICROS));
        let mut totals: std::collections::BTreeMap<u32, ChargeDayTotal> = std::collections::BTreeMap::new();
        for c in self.r().charges.values() {
            let at = c.created_at.as_micros();
            if c.kind != ChargeKind::Charge || &c.org_id != org_id || c.mode != mode || at < from.as_micros() || at >= end {
                continue;
            }
            let day = u32::try_from((at - from.as_micros()) / DAY_MICROS).unwrap_or(u32::MAX);
            let zero = malipo_core::MinorUnit::ZERO;
            let t = totals.entry(day).or_insert(ChargeDayTotal { day, count: 0, amount: zero, completed: 0, completed_amount: zero });
            t.count += 1;
            t.amount = t.amount.checked_add(c.amount).map_err(|e| StoreError::Other(e.to_string()))?;
            if c.state == ChargeState::Completed {
                t.completed += 1;
                t.completed_amount = t.completed_amount.checked_add(c.amount).map_err(|e| StoreError::Other(e.to_string()))?;
            }
        }
        Ok(totals.into_values().collect())
    }

    fn claim_due_charges(&mut self, now: Timestamp, lease_until: Timestamp, limit: usize) -> Result<Vec<ChargeRef>, StoreError> {
        let s = self.w()?;
        let claimed = due(&s.charges, None, now, limit);
        for id in &claimed {
            if let Some(c) = s.charges.get_mut(id) {
                c.next_action_at = Some(lease_until);
            }
        }
        Ok(claimed)
    }

    fn lock_due_charges(&mut self, mode: Mode, now: Timestamp, limit: usize) -> Result<Vec<ChargeRef>, StoreError> {
        // The whole store is locked for the transaction already.
        Ok(due(&self.r().charges, Some(mode), now, limit))
    }

    fn oldest_due_charge(&mut self, now: Timestamp) -> Result<Option<Timestamp>, StoreError> {
        Ok(self.r().charges.values().filter_map(|c| c.next_action_at).filter(|at| *at <= now).min())
    }

    fn count_due_charges(&mut self, until: Timestamp, cap: usize) -> Result<u64, StoreError> {
        let due = self.r().charges.values().filter_map(|c| c.next_action_at).filter(|at| *at <= until).take(cap).count();
        Ok(u64::try_from(due).unwrap_or(u64::MAX))
    }

    fn pending_charges_of_payer(&mut self, mode: Mode, msisdn: &Msisdn) -> Result<Vec<Charge>, StoreError> {
        let mut pending: Vec<Charge> = self
            .r()
            .charges
            .values()
            .filter(|c| c.mode == mode && &c.payer_msisdn == msisdn && c.state == ChargeState::Pending)
            .cloned()
            .collect();
        pending.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        Ok(pending)
    }
}

/// The ids of at most `limit` charges (of `mode`, when given) whose `next_action_at <= now`,
/// oldest due first, ties by id.
fn due(charges: &BTreeMap<ChargeRef, Charge>, mode: Option<Mode>, now: Timestamp, limit: usize) -> Vec<ChargeRef> {
    let mut due: Vec<(Timestamp, &ChargeRef)> = charges
        .values()
        .filter(|c| mode.is_none_or(|m| c.mode == m))
        .filter_map(|c| c.next_action_at.filter(|at| *at <= now).map(|at| (at, &c.id)))
        .collect();
    due.sort();
    due.into_iter().take(limit).map(|(_, id)| id.clone()).collect()
}
