//! Reversals (contract section 8): compensating ledger entries for all or part of a completed
//! charge or payout, never above the original in sum.

use malipo_auth::Principal;
use malipo_charges::{ChargeKind, ChargeState};
use malipo_core::{ChargeRef, Currency, MinorUnit, PayoutRef, ReversalId, Timestamp, TransactionId};
use malipo_ledger::{AccountKind, Journal, JournalKind, JournalLine};
use malipo_payouts::{fee_share, PayoutState, Reversal, ReversalOriginal};

use crate::agents::insufficient;
use crate::commands::{CreateReversal, ReversalTarget};
use crate::core::{system_account, Core};
use crate::error::ServiceError;
use crate::events::Events;
use crate::idempotency::{Done, Idem};
use crate::needs::{self, require};
use crate::page::{bad_cursor, Page};
use crate::ports::ReversalFlow;
use crate::views::{OnReversals, Reversing, View};

/// The original as found, locked: what the reversal computes with.
struct Original {
    which: ReversalOriginal,
    transaction_id: TransactionId,
    amount: MinorUnit,
    fee: MinorUnit,
    reversed: MinorUnit,
    currency: Currency,
}

/// The compensating entry for part of an original, before it is posted.
struct Compensation {
    original: Original,
    /// How much of the original's amount goes back.
    amount: MinorUnit,
    /// The share of its fee that goes back with it.
    fee_share: MinorUnit,
    /// The organisation's account (collection or payout) whose line carries the fee share.
    org_account: malipo_core::AccountId,
    lines: Vec<JournalLine>,
}

fn line(account: malipo_core::AccountId, amount: MinorUnit) -> JournalLine {
    JournalLine { account, amount }
}

/// The reversal use cases.
pub struct Reversals<'a> {
    core: &'a Core,
}

impl<'a> Reversals<'a> {
    pub(crate) fn new(core: &'a Core) -> Self {
        Reversals { core }
    }

    /// Reverses all or part of a completed charge or payout, exactly once per key.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`], [`ServiceError::Validation`] (`transaction_id` of a
    /// transaction that is neither a charge's nor a payout's), [`ServiceError::InvalidState`],
    /// [`ServiceError::ReversalExceedsOriginal`], [`ServiceError::InsufficientFunds`],
    /// idempotency errors.
    pub fn create(&self, principal: &Principal, command: &CreateReversal, idem: &Idem) -> Result<Done<Reversal>, ServiceError> {
        require(principal, &needs::REVERSE)?;
        let now = self.core.now();
        self.core.idempotent(idem, Reversing, |tx| self.reverse(tx, principal, command, now))
    }

    fn reverse(
        &self,
        tx: &mut (impl ReversalFlow + ?Sized),
        principal: &Principal,
        command: &CreateReversal,
        now: Timestamp,
    ) -> Result<Reversal, ServiceError> {
        let CreateReversal { target, amount: requested, reason } = command;
        let requested = *requested;
        let original = match target {
            ReversalTarget::Original(o) => o.clone(),
            ReversalTarget::Transaction(t) => match tx.journal_source(principal.mode, t)? {
                Some((JournalKind::Charge, source)) => ReversalOriginal::Charge(ChargeRef::from_trusted(source)),
                Some((JournalKind::Payout, source)) => ReversalOriginal::Payout(PayoutRef::from_trusted(source)),
                Some((kind, _)) => {
                    return Err(ServiceError::field(
                        "transaction_id",
                        "not_reversible",
                        format!("a {kind} transaction cannot be reversed; only charges and payouts can"),
                    ))
                }
                None => return Err(ServiceError::NotFound),
            },
        };
        // The original's row is locked first: concurrent reversals of one original run one
        // after the other, each seeing what the previous one reversed.
        let Compensation { original, amount, fee_share, org_account, lines } = match &original {
            ReversalOriginal::Charge(c) => self.charge_lines(tx, principal, c, requested)?,
            ReversalOriginal::Payout(p) => self.payout_lines(tx, principal, p, requested)?,
        };
        let id = ReversalId::new();
        // The fee share comes back to the organisation: a negative fee on its line.
        let journal = Journal::new_skipping_zero(principal.mode, original.currency, JournalKind::Reversal, id.as_str(), lines, now)?
            .with_fee(&org_account, fee_share.checked_neg()?);
        tx.post_journal(&journal).map_err(ServiceError::from).map_err(insufficient)?;
        let reversal = Reversal {
            id,
            org_id: principal.org_id.clone(),
            mode: principal.mode,
            original: original.which,
            original_transaction_id: original.transaction_id,
            amount,
            fee_reversed: fee_share,
            currency: original.currency,
            reason: reason.clone(),
            transaction_id: journal.id,
            created_at: now,
        };
        tx.insert_reversal(&reversal)?;
        Events.reversal(tx, &reversal, now)?;
        Ok(reversal)
    }

    /// The amount to reverse and its fee share, refusing more than remains.
    fn portion(original: &Original, requested: Option<MinorUnit>) -> Result<(MinorUnit, MinorUnit), ServiceError> {
        let remaining = original.amount.checked_sub(original.reversed)?;
        let amount = requested.unwrap_or(remaining);
        if amount > remaining || amount == MinorUnit::ZERO {
            let money = |m| original.currency.format_amount(m);
            return Err(ServiceError::ReversalExceedsOriginal(format!(
                "only {} {} of the original's {} is left to reverse",
                money(remaining),
                original.currency,
                money(original.amount)
            )));
        }
        Ok((amount, fee_share(original.fee, original.amount, original.reversed, amount)?))
    }

    /// A charge reversal: the payer gets `amount` back; the collection account gives
    /// `amount - fee share`, revenue the fee share.
    fn charge_lines(
        &self,
        tx: &mut (impl ReversalFlow + ?Sized),
        principal: &Principal,
        id: &ChargeRef,
        requested: Option<MinorUnit>,
    ) -> Result<Compensation, ServiceError> {
        let mut charge = match tx.lock_charge(id)? {
            Some(c) if c.org_id == principal.org_id && c.mode == principal.mode && c.kind == ChargeKind::Charge => c,
            _ => return Err(ServiceError::NotFound),
        };
        if charge.state != ChargeState::Completed {
            return Err(ServiceError::InvalidState(format!("the charge is {}; only a completed charge can be reversed", charge.state)));
        }
        let (Some(transaction_id), Some(payer)) = (charge.transaction_id.clone(), charge.payer_account.clone()) else {
            return Err(ServiceError::Internal(format!("completed charge {} without transaction or payer", charge.id)));
        };
        let original = Original {
            which: ReversalOriginal::Charge(charge.id.clone()),
            transaction_id,
            amount: charge.amount,
            fee: charge.fee,
            reversed: charge.amount_reversed,
            currency: charge.currency,
        };
        let (amount, share) = Self::portion(&original, requested)?;
        charge.amount_reversed = charge.amount_reversed.checked_add(amount)?;
        tx.update_charge(&charge)?;
        let revenue = system_account(tx, charge.mode, charge.currency, AccountKind::Revenue)?;
        let lines = vec![
            line(charge.merchant_account.clone(), amount.checked_sub(share)?.checked_neg()?),
            line(revenue, share.checked_neg()?),
            line(payer, amount),
        ];
        Ok(Compensation { original, amount, fee_share: share, org_account: charge.merchant_account, lines })
    }

    /// A payout reversal: the payee's wallet (locked first) gives `amount` back; the payout
    /// account gets it and the fee share, which revenue gives back.
    fn payout_lines(
        &self,
        tx: &mut (impl ReversalFlow + ?Sized),
        principal: &Principal,
        id: &PayoutRef,
        requested: Option<MinorUnit>,
    ) -> Result<Compensation, ServiceError> {
        let mut payout = match tx.lock_payout(id)? {
            Some(p) if p.org_id == principal.org_id && p.mode == principal.mode => p,
            _ => return Err(ServiceError::NotFound),
        };
        if payout.state != PayoutState::Completed {
            return Err(ServiceError::InvalidState(format!("the payout is {}; only a completed payout can be reversed", payout.state)));
        }
        let Some(transaction_id) = payout.transaction_id.clone() else {
            return Err(ServiceError::Internal(format!("completed payout {} without transaction", payout.id)));
        };
        let original = Original {
            which: ReversalOriginal::Payout(payout.id.clone()),
            transaction_id,
            amount: payout.amount,
            fee: payout.fee,
            reversed: payout.amount_reversed,
            currency: payout.currency,
        };
        let (amount, share) = Self::portion(&original, requested)?;
        let wallet = tx
            .lock_wallet(payout.mode, &payout.payee_msisdn)?
            .ok_or_else(|| ServiceError::Internal(format!("paid payout {} without a payee wallet", payout.id)))?;
        payout.amount_reversed = payout.amount_reversed.checked_add(amount)?;
        tx.update_payout(&payout)?;
        let revenue = system_account(tx, payout.mode, payout.currency, AccountKind::Revenue)?;
        let lines = vec![
            line(wallet.account_id, amount.checked_neg()?),
            line(revenue, share.checked_neg()?),
            line(payout.payout_account.clone(), amount.checked_add(share)?),
        ];
        Ok(Compensation { original, amount, fee_share: share, org_account: payout.payout_account, lines })
    }

    /// One of the principal's reversals.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`].
    pub fn get(&self, principal: &Principal, id: &str) -> Result<Reversal, ServiceError> {
        require(principal, &needs::READ_REVERSALS)?;
        let id = ReversalId::parse(id).map_err(|_| ServiceError::NotFound)?;
        OnReversals::read(self.core.store(), |tx| Ok(tx.reversal(&principal.org_id, principal.mode, &id)?))?.ok_or(ServiceError::NotFound)
    }

    /// The principal's reversals, newest first.
    ///
    /// # Errors
    /// [`ServiceError::Validation`] for a bad cursor.
    pub fn list(&self, principal: &Principal, cursor: Option<&str>, limit: usize) -> Result<Page<Reversal>, ServiceError> {
        require(principal, &needs::READ_REVERSALS)?;
        let before = cursor.map(|c| ReversalId::parse(c).map_err(|_| bad_cursor("cursor"))).transpose()?;
        let data = OnReversals::report(self.core.store(), |tx| {
            Ok(tx.list_reversals(&principal.org_id, principal.mode, before.as_ref(), limit.saturating_add(1))?)
        })?;
        Ok(Page::from_fetched(data, limit, |r| r.id.to_string()))
    }
}
