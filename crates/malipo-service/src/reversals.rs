//! Reversals (contract section 8): compensating ledger entries for all or part of a completed
//! charge or payout, never above the original in sum.

use malipo_auth::Principal;
use malipo_charges::{ChargeKind, ChargeState};
use malipo_core::{ChargeRef, Currency, MinorUnit, PayoutRef, ReversalId, Timestamp, TransactionId};
use malipo_idempotency::StoredResponse;
use malipo_ledger::{AccountKind, Journal, JournalKind, JournalLine};
use malipo_payouts::{fee_share, PayoutState, Reversal, ReversalOriginal};

use crate::agents::insufficient;
use crate::core::Core;
use crate::error::{FieldError, ServiceError};
use crate::events::Events;
use crate::idempotency::{Idem, IdemOutcome};
use crate::page::{bad_cursor, Page};
use crate::ports::{read, Tx};
use crate::validate::{check_amount, check_text};

/// What a reversal request names, checked for shape: the original itself, or its transaction.
enum Named {
    Original(ReversalOriginal),
    Transaction(TransactionId),
}

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

/// The fields of `POST /reversals` as received: exactly one of the three originals.
#[derive(Clone, Debug, Default)]
pub struct NewReversal {
    /// A charge (`ch_…`).
    pub charge_ref: Option<String>,
    /// A payout (`po_…`).
    pub payout_ref: Option<String>,
    /// A charge's or payout's ledger transaction (`tx_…`).
    pub transaction_id: Option<String>,
    /// Decimal text in major units; the whole remainder when left out.
    pub amount: Option<String>,
    /// Why (1 to 255 characters).
    pub reason: String,
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
    /// [`ServiceError::Validation`], [`ServiceError::NotFound`], [`ServiceError::InvalidState`],
    /// [`ServiceError::ReversalExceedsOriginal`], [`ServiceError::InsufficientFunds`],
    /// idempotency errors.
    pub fn create(
        &self,
        principal: &Principal,
        new: &NewReversal,
        idem: &Idem,
        render: &dyn Fn(&Reversal) -> StoredResponse,
    ) -> Result<IdemOutcome, ServiceError> {
        let mut errors = Vec::new();
        check_text("reason", &new.reason, 255, false, &mut errors);
        let charge = |c: ChargeRef| Named::Original(ReversalOriginal::Charge(c));
        let payout = |p: PayoutRef| Named::Original(ReversalOriginal::Payout(p));
        // `Ok(None)`: not exactly one given (already reported); `Err(field)`: it does not parse.
        let named: Result<Option<Named>, &str> = match (&new.charge_ref, &new.payout_ref, &new.transaction_id) {
            (Some(c), None, None) => ChargeRef::parse(c).map(|c| Some(charge(c))).map_err(|_| "charge_ref"),
            (None, Some(p), None) => PayoutRef::parse(p).map(|p| Some(payout(p))).map_err(|_| "payout_ref"),
            (None, None, Some(t)) => TransactionId::parse(t).map(|t| Some(Named::Transaction(t))).map_err(|_| "transaction_id"),
            (None, None, None) => {
                errors.push(FieldError::new("charge_ref", "missing_field", "give one of charge_ref, payout_ref and transaction_id"));
                Ok(None)
            }
            _ => {
                errors.push(FieldError::new("charge_ref", "invalid_value", "give only one of charge_ref, payout_ref and transaction_id"));
                Ok(None)
            }
        };
        let named = named.unwrap_or_else(|field| {
            errors.push(FieldError::new(field, "invalid_value", format!("{field} is not a valid identifier")));
            None
        });
        let currency = self.core.country(&principal.country)?.currency;
        let requested = new.amount.as_deref().and_then(|a| check_amount("amount", a, currency, &mut errors));
        let (Some(named), true) = (named, errors.is_empty()) else {
            return Err(ServiceError::Validation(errors));
        };
        let now = self.core.now();
        self.core.idempotent(idem, |tx| self.reverse(tx, principal, &named, requested, &new.reason, now), render)
    }

    fn reverse(
        &self,
        tx: &mut dyn Tx,
        principal: &Principal,
        named: &Named,
        requested: Option<MinorUnit>,
        reason: &str,
        now: Timestamp,
    ) -> Result<Reversal, ServiceError> {
        let original = match named {
            Named::Original(o) => o.clone(),
            Named::Transaction(t) => match tx.journal_source(principal.mode, t)? {
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
            reason: reason.to_owned(),
            transaction_id: journal.id,
            created_at: now,
        };
        tx.insert_reversal(&reversal)?;
        Events(self.core).reversal(tx, &reversal, now)?;
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
        tx: &mut dyn Tx,
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
        let revenue = self.core.system_account(tx, charge.mode, charge.currency, AccountKind::Revenue)?;
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
        tx: &mut dyn Tx,
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
        let revenue = self.core.system_account(tx, payout.mode, payout.currency, AccountKind::Revenue)?;
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
        let id = ReversalId::parse(id).map_err(|_| ServiceError::NotFound)?;
        read(self.core.store(), |tx| Ok(tx.reversal(&principal.org_id, principal.mode, &id)?))?.ok_or(ServiceError::NotFound)
    }

    /// The principal's reversals, newest first.
    ///
    /// # Errors
    /// [`ServiceError::Validation`] for a bad cursor.
    pub fn list(&self, principal: &Principal, cursor: Option<&str>, limit: usize) -> Result<Page<Reversal>, ServiceError> {
        let before = cursor.map(|c| ReversalId::parse(c).map_err(|_| bad_cursor("cursor"))).transpose()?;
        let data = read(self.core.store(), |tx| {
            Ok(tx.list_reversals(&principal.org_id, principal.mode, before.as_ref(), limit.saturating_add(1))?)
        })?;
        Ok(Page::from_fetched(data, limit, |r| r.id.to_string()))
    }
}
