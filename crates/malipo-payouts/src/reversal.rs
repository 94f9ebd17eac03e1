//! Reversals (contract section 8): compensating entries for all or part of a completed charge
//! or payout, with the fee given back in proportion.

use malipo_core::{ChargeRef, Currency, MinorUnit, Mode, MoneyError, OrgId, PayoutRef, ReversalId, Timestamp, TransactionId};

/// What a reversal gives back.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum ReversalOriginal {
    /// A completed charge: the payer gets money back.
    Charge(ChargeRef),
    /// A completed payout: the payout account gets money back from the payee.
    Payout(PayoutRef),
}

/// A completed reversal.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Reversal {
    /// `rv_…`.
    pub id: ReversalId,
    /// The organisation whose charge or payout it reverses.
    pub org_id: OrgId,
    /// Test or live.
    pub mode: Mode,
    /// The charge or payout.
    pub original: ReversalOriginal,
    /// The original's ledger transaction.
    pub original_transaction_id: TransactionId,
    /// How much of the original's amount goes back.
    pub amount: MinorUnit,
    /// The share of the original's fee given back with it.
    pub fee_reversed: MinorUnit,
    /// The original's currency.
    pub currency: Currency,
    /// Why (the integrator's words).
    pub reason: String,
    /// The compensating ledger transaction.
    pub transaction_id: TransactionId,
    /// When.
    pub created_at: Timestamp,
}

/// The share of `fee` given back when `amount` more of `original` is reversed after
/// `reversed_before` already was. Computed on the running totals (`⌊fee × reversed / original⌋`
/// after minus before), so partial reversals never give back more than the fee in sum and a
/// reversal of the whole gives back exactly all of it.
///
/// # Errors
/// [`MoneyError::Overflow`] when `original` is not positive or a figure overflows.
pub fn fee_share(fee: MinorUnit, original: MinorUnit, reversed_before: MinorUnit, amount: MinorUnit) -> Result<MinorUnit, MoneyError> {
    if original.get() <= 0 {
        return Err(MoneyError::Overflow);
    }
    let after = reversed_before.checked_add(amount)?;
    let share_after = fee.checked_mul_div(after.get(), original.get())?;
    let share_before = fee.checked_mul_div(reversed_before.get(), original.get())?;
    share_after.checked_sub(share_before)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(v: i64) -> MinorUnit {
        MinorUnit::new(v)
    }

    #[test]
    fn a_full_reversal_gives_back_the_whole_fee() {
        assert_eq!(fee_share(m(700), m(25_000), m(0), m(25_000)), Ok(m(700)));
    }

    #[test]
    fn partial_reversals_sum_to_the_fee_whatever_the_rounding() {
        let (fee, original) = (m(100), m(300));
        let mut before = m(0);
        let mut total = m(0);
        for part in [m(1), m(1), m(97), m(1), m(200)] {
            let share = fee_share(fee, original, before, part).unwrap_or_else(|e| panic!("{e}"));
            assert!(share.get() >= 0);
            total = total.checked_add(share).unwrap_or_else(|e| panic!("{e}"));
            before = before.checked_add(part).unwrap_or_else(|e| panic!("{e}"));
        }
        assert_eq!((before, total), (original, fee));
        assert_eq!(fee_share(fee, original, m(0), m(150)), Ok(m(50)), "half back gives half the fee");
    }

    #[test]
    fn a_fee_of_zero_gives_nothing_back() {
        assert_eq!(fee_share(m(0), m(1_000), m(0), m(400)), Ok(m(0)));
        assert!(fee_share(m(10), m(0), m(0), m(1)).is_err());
    }
}
