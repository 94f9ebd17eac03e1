//! The background step of charges and cash-outs: sandbox decisions, live checks, completion,
//! expiry. Each step is one transaction on a locked charge, so concurrent workers and instances
//! settle every charge exactly once.

use malipo_charges::{Charge, ChargeEvent, ChargeState, FailureReason, SandboxOutcome};
use malipo_core::{ChargeRef, Mode, Timestamp};

use crate::core::Core;
use crate::customers::Customers;
use crate::error::{ServiceError, StoreError};
use crate::lifecycle::{Entered, Funds, Lifecycle};
use crate::ports::{ChargeFlow, WalletState};
use crate::views::{Charging, ChargingInBatches, OnCharges, View};

/// The charge worker's use cases.
pub struct Processing<'a> {
    core: &'a Core,
}

impl<'a> Processing<'a> {
    pub(crate) fn new(core: &'a Core) -> Self {
        Processing { core }
    }

    fn lifecycle(&self) -> Lifecycle<'a> {
        Lifecycle(self.core)
    }

    /// Claims due charges and advances them, [`crate::ServiceConfig::charge_settle_chunk`] at a
    /// time in one transaction, so that each ends exactly as it would alone: all together, or,
    /// when one of them fails, each charge in a savepoint of its own (a charge whose step fails,
    /// its posting refused included, is undone alone and advanced by itself after the chunk):
    /// one commit for the chunk instead of two or three per charge. If a chunk's transaction
    /// fails as a whole, each of its charges is advanced alone. Test charges are claimed first
    /// by the chunks' own transactions (`advance_due_in_place`); the rest, live charges among
    /// them, are leased. Returns how many were claimed, either way.
    ///
    /// # Errors
    /// Storage failures of the claim itself; a failing charge is logged and left to its lease.
    pub fn process_due(&self, limit: usize) -> Result<usize, ServiceError> {
        let chunk = self.core.config.charge_settle_chunk;
        let locked = if chunk > 1 { self.advance_due_in_place(limit, chunk)? } else { 0 };
        let limit = limit.saturating_sub(locked);
        if limit == 0 {
            return Ok(locked);
        }
        let now = self.core.now();
        let lease = now.plus_seconds(self.core.config.worker_lease_seconds);
        let ids = OnCharges::write(self.core.store(), |tx| Ok(tx.claim_due_charges(now, lease, limit)?))?;
        let claimed = ids.len();
        self.count_claimed(claimed);
        let chunk = self.core.config.charge_settle_chunk;
        let alone = if chunk <= 1 {
            ids
        } else {
            let mut alone = Vec::new();
            for part in ids.chunks(chunk) {
                match self.advance_together(part, lease) {
                    Ok(left) => alone.extend(left),
                    Err(e) => {
                        tracing::warn!(charges = part.len(), error = %e, "advancing charges together failed; advancing each alone");
                        alone.extend_from_slice(part);
                    }
                }
            }
            alone
        };
        for id in &alone {
            match self.advance_charge(id, lease) {
                Ok(()) => {}
                // Every remaining charge would wait for a connection in turn: leave them to
                // their leases rather than hold this worker (and a shutdown) for the whole batch.
                Err(e @ ServiceError::Store(StoreError::Unavailable(_))) => {
                    tracing::warn!(charge = %id, error = %e, "database unavailable; the claimed batch is left to its leases");
                    break;
                }
                Err(e) => tracing::warn!(charge = %id, error = %e, "charge step failed; it will be retried after its lease"),
            }
        }
        Ok(locked.saturating_add(claimed))
    }

    /// Advances due test charges, up to `limit`, `chunk` at a time, each chunk claimed by the
    /// transaction that advances it (locked, skipped by other workers) rather than leased
    /// first: one write of each charge instead of two. The sandbox decides a test charge in the
    /// worker's own step, so nothing waits on its lock; live charges, whose customers answer
    /// over USSD, are leased ([`Processing::process_due`]). A chunk that fails is rolled back,
    /// its claim with it, and this stops: its charges, still due and oldest, are then leased by
    /// the caller and advanced as leased ones are (each in a savepoint, then alone, a charge
    /// that still fails left to its lease). Returns how many were advanced.
    fn advance_due_in_place(&self, limit: usize, chunk: usize) -> Result<usize, ServiceError> {
        let mut advanced = 0_usize;
        while advanced < limit {
            let now = self.core.now();
            let mut taken = 0_usize;
            let all = ChargingInBatches::write(self.core.store(), |tx| {
                tx.queue_writes();
                let ids = tx.lock_due_charges(Mode::Test, now, chunk.min(limit.saturating_sub(advanced)))?;
                taken = ids.len();
                let mut entered: Entered = vec![];
                // Each read as it comes: a step may change another charge of the chunk (a PIN
                // lockout declines the payer's other prompts).
                for id in &ids {
                    self.steps(tx, id, now, None, &mut entered)?;
                }
                Ok(entered)
            });
            match all {
                Ok(entered) => self.core.report(&entered),
                Err(e @ ServiceError::Store(StoreError::Unavailable(_))) => return Err(e),
                Err(e) => {
                    tracing::debug!(charges = taken, error = %e, "a chunk of due test charges failed; leasing them instead");
                    return Ok(advanced);
                }
            }
            self.count_claimed(taken);
            advanced = advanced.saturating_add(taken);
            if taken < chunk {
                break;
            }
        }
        Ok(advanced)
    }

    /// Adds `n` claimed charges to the backlog monitor's measure of this instance's drain.
    fn count_claimed(&self, n: usize) {
        self.core.backlog.claimed.fetch_add(u64::try_from(n).unwrap_or(u64::MAX), std::sync::atomic::Ordering::Relaxed);
    }

    /// Advances the claimed charges in one transaction as far as each can go now. First all of
    /// them without savepoints (a step that fails is rare, and a savepoint per charge costs two
    /// round trips on PostgreSQL and a copy of every page it touches on SQLite), their journals
    /// and events queued and written together (`WriteQueue::queue_writes`); if any fails, that
    /// transaction is rolled back and those charges run again with a savepoint each. A live
    /// charge ends its transaction: its customer's USSD PIN hop waits for its lock, which a
    /// transaction of sandbox charges would hold until the last of them (a live charge's step
    /// is a check or an expiry, with nothing to write together). Returns the charges to advance
    /// alone (their savepoint failed, a refused posting included).
    fn advance_together(&self, ids: &[ChargeRef], lease: Timestamp) -> Result<Vec<ChargeRef>, ServiceError> {
        let mut alone = vec![];
        let mut rest = ids;
        while !rest.is_empty() {
            let now = self.core.now();
            let mut taken: usize = 0;
            let all = ChargingInBatches::write(self.core.store(), |tx| {
                // A refused posting fails this transaction whichever call finds it: the chunk's
                // journals may be posted together (each account's lines by one update: the
                // merchant's collection account once for the chunk, not once a charge).
                tx.queue_writes();
                let mut entered: Entered = vec![];
                taken = 0;
                // Each locked and read as it comes: a step may change another charge of the
                // chunk (a PIN lockout declines the payer's other prompts).
                for id in rest {
                    taken = taken.saturating_add(1);
                    if self.steps(tx, id, now, Some(lease), &mut entered)? == Some(Mode::Live) {
                        break;
                    }
                }
                Ok(entered)
            });
            let (part, next) = rest.split_at(taken.clamp(1, rest.len()));
            match all {
                Ok(entered) => self.core.report(&entered),
                Err(e @ ServiceError::Store(StoreError::Unavailable(_))) => return Err(e),
                Err(e) => {
                    tracing::debug!(charges = part.len(), error = %e, "a charge of the chunk failed; advancing each in a savepoint");
                    alone.extend(self.advance_in_savepoints(part, lease)?);
                }
            }
            rest = next;
        }
        Ok(alone)
    }

    /// [`Processing::advance_together`] with a savepoint per charge, so that each ends as it
    /// would alone.
    fn advance_in_savepoints(&self, ids: &[ChargeRef], lease: Timestamp) -> Result<Vec<ChargeRef>, ServiceError> {
        let now = self.core.now();
        let (entered, left) = ChargingInBatches::write(self.core.store(), |tx| {
            let mut entered: Entered = vec![];
            let mut left = vec![];
            for id in ids {
                let mut mine: Entered = vec![];
                let steps = tx.savepoint(&mut |tx| {
                    mine.clear();
                    self.steps(tx, id, now, Some(lease), &mut mine).map(drop)
                });
                match steps {
                    Ok(()) => entered.append(&mut mine),
                    // The connection is gone: the whole batch goes with it.
                    Err(e @ ServiceError::Store(StoreError::Unavailable(_))) => return Err(e),
                    // Any other failure, a refused posting included, undid every step of the
                    // charge with its savepoint (an authorisation before the posting too): the
                    // charge is advanced alone after the chunk, where a refused posting ends it
                    // authorised, then failed `processing_error` with its hold released.
                    Err(_) => left.push(id.clone()),
                }
            }
            Ok((entered, left))
        })?;
        self.core.report(&entered);
        Ok(left)
    }

    /// Every step of one charge that is due now, in the caller's transaction. Returns the
    /// charge's mode (`None`: no such charge).
    pub(crate) fn steps(
        &self,
        tx: &mut (impl ChargeFlow + ?Sized),
        id: &ChargeRef,
        now: Timestamp,
        claim: Option<Timestamp>,
        entered: &mut Entered,
    ) -> Result<Option<Mode>, ServiceError> {
        // Locked once: each step writes the whole charge back, so the row stays what `charge` holds.
        let Some(mut charge) = tx.lock_charge(id)? else {
            return Ok(None);
        };
        self.steps_on(tx, &mut charge, now, claim, entered)?;
        Ok(Some(charge.mode))
    }

    /// [`Processing::steps`] of a charge the caller's transaction has locked (and holds as the
    /// row is).
    pub(crate) fn steps_on(
        &self,
        tx: &mut (impl ChargeFlow + ?Sized),
        charge: &mut Charge,
        now: Timestamp,
        mut claim: Option<Timestamp>,
        entered: &mut Entered,
    ) -> Result<(), ServiceError> {
        loop {
            // Every step here ends with the caller's transaction: an approval pays at once, and a
            // refused posting fails it (every caller then advances the charge step by step).
            let (again, mut e) = self.step_locked(tx, charge, now, claim, Funds::PayNow)?;
            entered.append(&mut e);
            if !again {
                return Ok(());
            }
            claim = None;
        }
    }

    /// Advances one charge, claimed with `lease`, as far as it can go now. A charge rescheduled
    /// since the claim (a customer answered, or another worker re-claimed it after the lease) is
    /// left alone: only the current claim acts.
    ///
    /// # Errors
    /// Transient storage failures (the charge stays claimed until its lease lapses).
    pub fn advance_charge(&self, id: &ChargeRef, lease: Timestamp) -> Result<(), ServiceError> {
        self.advance(id, Some(lease))
    }

    /// Advances a charge whose work is due now (a customer just approved it): the same steps
    /// the worker takes, without a claim.
    ///
    /// # Errors
    /// As [`Processing::advance_charge`]; the worker finishes what this leaves.
    pub fn settle_now(&self, id: &ChargeRef) -> Result<(), ServiceError> {
        self.advance(id, None)
    }

    /// Every step that is due now in one transaction (an approval and its completion: one
    /// commit instead of two). A charge whose step fails in it, a refused posting included, is
    /// advanced step by step instead (the failed transaction undid its authorisation too), so it
    /// ends as it always did: authorised, then failed `processing_error` with its hold released.
    fn advance(&self, id: &ChargeRef, claim: Option<Timestamp>) -> Result<(), ServiceError> {
        let now = self.core.now();
        let together = Charging::write(self.core.store(), |tx| {
            let mut entered: Entered = vec![];
            self.steps(tx, id, now, claim, &mut entered)?;
            Ok(entered)
        });
        match together {
            Ok(entered) => {
                self.core.report(&entered);
                Ok(())
            }
            Err(e) if is_processing_failure(&e) => self.advance_stepwise(id, claim),
            Err(e) => Err(e),
        }
    }

    /// [`Processing::advance`] one step, and one transaction, at a time.
    fn advance_stepwise(&self, id: &ChargeRef, mut claim: Option<Timestamp>) -> Result<(), ServiceError> {
        loop {
            let now = self.core.now();
            match Charging::write(self.core.store(), |tx| self.step(tx, id, now, claim)) {
                Ok((again, entered)) => {
                    self.core.report(&entered);
                    if !again {
                        return Ok(());
                    }
                    claim = None;
                }
                Err(e) if is_processing_failure(&e) => {
                    tracing::error!(charge = %id, error = %e, "posting failed; failing the charge");
                    let entered = Charging::write(self.core.store(), |tx| self.fail_processing(tx, id, now))?;
                    self.core.report(&entered);
                    return Ok(());
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// One step of a locked charge. Returns whether more work is due at once.
    /// `claim` is the lease the charge was claimed with (first step), or `None` for a follow-up
    /// step this worker made due itself.
    fn step(
        &self,
        tx: &mut (impl ChargeFlow + ?Sized),
        id: &ChargeRef,
        now: Timestamp,
        claim: Option<Timestamp>,
    ) -> Result<(bool, Entered), ServiceError> {
        let Some(mut charge) = tx.lock_charge(id)? else {
            return Ok((false, vec![]));
        };
        self.step_locked(tx, &mut charge, now, claim, Funds::Hold)
    }

    /// [`Processing::step`] of a charge this transaction has locked; a sandbox approval takes
    /// the payer's money as `funds` says.
    fn step_locked(
        &self,
        tx: &mut (impl ChargeFlow + ?Sized),
        charge: &mut Charge,
        now: Timestamp,
        claim: Option<Timestamp>,
        funds: Funds,
    ) -> Result<(bool, Entered), ServiceError> {
        let ours = match claim {
            Some(lease) => charge.next_action_at == Some(lease),
            None => charge.next_action_at.is_some_and(|t| t <= now),
        };
        if !ours {
            return Ok((false, vec![]));
        }
        let mut entered = vec![];
        match charge.state {
            ChargeState::Pending if now >= charge.expires_at => {
                self.lifecycle().apply(tx, charge, ChargeEvent::Expire, now, &mut entered)?;
            }
            ChargeState::Pending => match charge.mode {
                Mode::Test => self.sandbox_decide(tx, charge, now, &mut entered, funds)?,
                Mode::Live => self.live_check(tx, charge, now, &mut entered)?,
            },
            ChargeState::Authorised => self.lifecycle().complete(tx, charge, now, &mut entered)?,
            _ => {}
        }
        let again = charge.state == ChargeState::Authorised && charge.next_action_at.is_some_and(|t| t <= now);
        Ok((again, entered))
    }

    fn sandbox_decide(
        &self,
        tx: &mut (impl ChargeFlow + ?Sized),
        charge: &mut Charge,
        now: Timestamp,
        entered: &mut Entered,
        funds: Funds,
    ) -> Result<(), ServiceError> {
        let fail = |r| ChargeEvent::PayerFailure(r);
        let lifecycle = self.lifecycle();
        match SandboxOutcome::for_payer(&charge.payer_msisdn) {
            SandboxOutcome::Approve => lifecycle.authorise(tx, charge, now, entered, funds, None),
            SandboxOutcome::Decline => lifecycle.apply(tx, charge, ChargeEvent::Decline, now, entered),
            SandboxOutcome::Expire | SandboxOutcome::StayPending => lifecycle.park(tx, charge, now),
            SandboxOutcome::InsufficientFunds => lifecycle.apply(tx, charge, fail(FailureReason::InsufficientFunds), now, entered),
            SandboxOutcome::PinLockout => {
                let payer = charge.payer_msisdn.clone();
                let mut wallet = Customers(self.core).ensure_test_wallet(tx, &payer, now)?;
                if wallet.state == WalletState::Locked {
                    // Already locked by an earlier lockout: no prompt reaches the customer.
                    return lifecycle.apply(tx, charge, fail(FailureReason::WalletLocked), now, entered);
                }
                lifecycle.lock_out(tx, &mut wallet, Some(charge), now, entered)
            }
            SandboxOutcome::WalletLocked => lifecycle.apply(tx, charge, fail(FailureReason::WalletLocked), now, entered),
            SandboxOutcome::LimitExceeded => lifecycle.apply(tx, charge, fail(FailureReason::LimitExceeded), now, entered),
            SandboxOutcome::PayerNotFound => lifecycle.apply(tx, charge, fail(FailureReason::PayerNotFound), now, entered),
        }
    }

    /// Live mode: fail at once when the payer cannot pay at all (no wallet, locked, over a
    /// limit); otherwise wait for the customer. Creation parks a charge whose payer could pay
    /// then, so this runs for the others (and for cash-outs).
    fn live_check(
        &self,
        tx: &mut (impl ChargeFlow + ?Sized),
        charge: &mut Charge,
        now: Timestamp,
        entered: &mut Entered,
    ) -> Result<(), ServiceError> {
        let lifecycle = self.lifecycle();
        match lifecycle.live_refusal(tx, charge.mode, &charge.payer_msisdn, (charge.amount, charge.payer_debit()?), now)? {
            Some(reason) => lifecycle.apply(tx, charge, ChargeEvent::PayerFailure(reason), now, entered),
            None => lifecycle.park(tx, charge, now),
        }
    }

    /// After a failed posting: release the reservation and fail the charge `processing_error`.
    fn fail_processing(&self, tx: &mut (impl ChargeFlow + ?Sized), id: &ChargeRef, now: Timestamp) -> Result<Entered, ServiceError> {
        let mut entered = vec![];
        if let Some(mut charge) = tx.lock_charge(id)? {
            if charge.state == ChargeState::Authorised {
                self.lifecycle().release_and_fail(tx, &mut charge, now, &mut entered)?;
            }
        }
        Ok(entered)
    }
}

/// Failures of posting that end the charge `processing_error` rather than being retried.
pub(crate) fn is_processing_failure(e: &ServiceError) -> bool {
    matches!(e, ServiceError::Store(StoreError::Ledger(_)) | ServiceError::InsufficientFunds | ServiceError::Internal(_))
}
