//! KYC tier limits: what a wallet of a tier may send, receive and hold.
//!
//! - Money leaving a wallet: the movement's amount is at most `per_transaction`, and everything
//!   that left the wallet on the country's local calendar day (fees included, reservations of
//!   approved payments included) plus this debit is at most `daily`.
//! - Money arriving: the amount is at most `per_transaction`, and the balance after it at most
//!   `max_balance`.
//!
//! Exactly at a limit passes; one minor unit above is refused.

use malipo_core::MinorUnit;

use crate::country::KycTier;

/// Which limit a movement would break, with the limit (minor units).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LimitBreach {
    /// The amount is above the tier's single-movement limit.
    #[error("the amount is above the per-transaction limit")]
    PerTransaction {
        /// The limit.
        limit: MinorUnit,
    },
    /// Today's debits would go above the daily limit.
    #[error("the daily limit would be exceeded")]
    Daily {
        /// The limit.
        limit: MinorUnit,
        /// Already used today.
        used: MinorUnit,
    },
    /// The balance would go above the tier's maximum.
    #[error("the wallet's maximum balance would be exceeded")]
    MaxBalance {
        /// The limit.
        limit: MinorUnit,
    },
}

impl KycTier {
    /// Whether a wallet of this tier may send `amount` (its own part) with `debit` leaving the
    /// wallet in all (amount plus any fee the wallet pays), having already used `used_today`.
    ///
    /// # Errors
    /// [`LimitBreach::PerTransaction`] or [`LimitBreach::Daily`].
    pub fn check_debit(&self, amount: MinorUnit, debit: MinorUnit, used_today: MinorUnit) -> Result<(), LimitBreach> {
        if amount > self.per_transaction {
            return Err(LimitBreach::PerTransaction { limit: self.per_transaction });
        }
        let total = used_today.get().saturating_add(debit.get());
        if total > self.daily.get() {
            return Err(LimitBreach::Daily { limit: self.daily, used: used_today });
        }
        Ok(())
    }

    /// Whether a wallet of this tier may receive `amount`, its balance then being `balance_after`.
    /// `check_balance` is false where the maximum balance does not apply (sandbox wallets, which
    /// start above it).
    ///
    /// # Errors
    /// [`LimitBreach::PerTransaction`] or [`LimitBreach::MaxBalance`].
    pub fn check_credit(&self, amount: MinorUnit, balance_after: MinorUnit, check_balance: bool) -> Result<(), LimitBreach> {
        if amount > self.per_transaction {
            return Err(LimitBreach::PerTransaction { limit: self.per_transaction });
        }
        if check_balance && balance_after > self.max_balance {
            return Err(LimitBreach::MaxBalance { limit: self.max_balance });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(v: i64) -> MinorUnit {
        MinorUnit::new(v)
    }

    /// Kenya's tier 0 in minor units: 5,000 a transaction, 10,000 a day, 20,000 balance.
    fn tier() -> KycTier {
        KycTier { tier: 0, per_transaction: m(500_000), daily: m(1_000_000), max_balance: m(2_000_000), requirements: vec![] }
    }

    #[test]
    fn per_transaction_boundary() {
        let t = tier();
        assert_eq!(t.check_debit(m(500_000), m(500_000), m(0)), Ok(()));
        assert_eq!(t.check_debit(m(500_001), m(500_001), m(0)), Err(LimitBreach::PerTransaction { limit: m(500_000) }));
        assert_eq!(t.check_credit(m(500_000), m(500_000), true), Ok(()));
        assert_eq!(t.check_credit(m(500_001), m(500_001), true), Err(LimitBreach::PerTransaction { limit: m(500_000) }));
    }

    #[test]
    fn the_fee_does_not_count_towards_the_per_transaction_limit_but_towards_the_daily_one() {
        let t = tier();
        assert_eq!(t.check_debit(m(500_000), m(505_700), m(0)), Ok(()));
        assert_eq!(t.check_debit(m(500_000), m(505_700), m(494_300)), Ok(()), "exactly the daily limit");
        assert_eq!(t.check_debit(m(500_000), m(505_700), m(494_301)), Err(LimitBreach::Daily { limit: m(1_000_000), used: m(494_301) }));
    }

    #[test]
    fn daily_boundary() {
        let t = tier();
        assert_eq!(t.check_debit(m(1), m(1), m(999_999)), Ok(()));
        assert_eq!(t.check_debit(m(1), m(1), m(1_000_000)), Err(LimitBreach::Daily { limit: m(1_000_000), used: m(1_000_000) }));
        assert_eq!(t.check_debit(m(2), m(2), m(999_999)), Err(LimitBreach::Daily { limit: m(1_000_000), used: m(999_999) }));
    }

    #[test]
    fn max_balance_boundary() {
        let t = tier();
        assert_eq!(t.check_credit(m(100), m(2_000_000), true), Ok(()));
        assert_eq!(t.check_credit(m(100), m(2_000_001), true), Err(LimitBreach::MaxBalance { limit: m(2_000_000) }));
        assert_eq!(t.check_credit(m(100), m(2_000_001), false), Ok(()), "not checked where it does not apply");
    }

    #[test]
    fn overflowing_usage_is_refused_not_wrapped() {
        assert!(matches!(tier().check_debit(m(1), m(1), m(i64::MAX)), Err(LimitBreach::Daily { .. })));
    }
}
