//! Fee schedules: per operation, who bears the fee and fixed fees by amount band.

use std::fmt;
use std::str::FromStr;

use malipo_core::MinorUnit;

/// A name that is not one of an enumeration's spellings.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {kind} {name:?}; expected one of {expected}")]
pub struct UnknownName {
    /// What was being named (`fee operation`, `fee payer`).
    pub kind: &'static str,
    /// The text given.
    pub name: String,
    /// The accepted spellings, comma-separated.
    pub expected: &'static str,
}

/// A money movement that can carry a fee.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FeeOperation {
    /// A merchant collection (`POST /partner/stk`).
    Charge,
    /// A payout to a wallet (single or bulk).
    Payout,
    /// Wallet to wallet ("Send money").
    P2p,
    /// Agent float to a customer's wallet.
    CashIn,
    /// A customer's wallet to an agent's float.
    CashOut,
    /// A customer paying a merchant's payment request.
    PaymentRequest,
}

impl FeeOperation {
    /// Every operation, in declaration order.
    pub const ALL: [FeeOperation; 6] = [
        FeeOperation::Charge,
        FeeOperation::Payout,
        FeeOperation::P2p,
        FeeOperation::CashIn,
        FeeOperation::CashOut,
        FeeOperation::PaymentRequest,
    ];

    /// The name used in the configuration file and the API: `charge`, `payout`, `p2p`,
    /// `cash_in`, `cash_out`, `payment_request`.
    pub fn as_str(&self) -> &'static str {
        match self {
            FeeOperation::Charge => "charge",
            FeeOperation::Payout => "payout",
            FeeOperation::P2p => "p2p",
            FeeOperation::CashIn => "cash_in",
            FeeOperation::CashOut => "cash_out",
            FeeOperation::PaymentRequest => "payment_request",
        }
    }
}

impl fmt::Display for FeeOperation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for FeeOperation {
    type Err = UnknownName;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        FeeOperation::ALL.into_iter().find(|op| op.as_str() == s).ok_or_else(|| UnknownName {
            kind: "fee operation",
            name: s.to_owned(),
            expected: "charge, payout, p2p, cash_in, cash_out, payment_request",
        })
    }
}

/// Who bears a fee.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FeePayer {
    /// The side the money leaves: it pays `amount + fee`.
    Payer,
    /// The side the money arrives at (the merchant for a charge): it receives `amount - fee`.
    Payee,
}

impl FeePayer {
    /// `payer` or `payee`.
    pub fn as_str(&self) -> &'static str {
        match self {
            FeePayer::Payer => "payer",
            FeePayer::Payee => "payee",
        }
    }
}

impl fmt::Display for FeePayer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for FeePayer {
    type Err = UnknownName;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "payer" => Ok(FeePayer::Payer),
            "payee" => Ok(FeePayer::Payee),
            _ => Err(UnknownName { kind: "fee payer", name: s.to_owned(), expected: "payer, payee" }),
        }
    }
}

/// One operation's fees: who pays, and a fixed fee per amount band.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FeeSchedule {
    /// Who bears the fee.
    pub paid_by: FeePayer,
    /// Sorted, contiguous, non-overlapping bands starting at one minor unit.
    pub bands: Vec<FeeBand>,
}

impl FeeSchedule {
    /// The band with `min <= amount <= max`, if any.
    pub fn band_for(&self, amount: MinorUnit) -> Option<&FeeBand> {
        // Bands are sorted and disjoint, so a binary search finds the only candidate.
        let idx = self.bands.partition_point(|b| b.max < amount);
        self.bands.get(idx).filter(|b| b.min <= amount)
    }

    /// The band applying to `amount`: the covering band, or the last band for an amount above
    /// every band (a validated schedule covers every amount up to the top KYC tier's
    /// per-transaction limit, so this only matters for callers that skip the limit check).
    /// `None` for a non-positive amount or an empty schedule.
    pub fn band_applying_to(&self, amount: MinorUnit) -> Option<&FeeBand> {
        if !amount.is_positive() {
            return None;
        }
        self.band_for(amount).or_else(|| self.bands.last().filter(|last| amount > last.max))
    }
}

/// An amount band and its fee, all in minor units. The band covers `min..=max`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FeeBand {
    /// Smallest amount in the band (inclusive).
    pub min: MinorUnit,
    /// Largest amount in the band (inclusive).
    pub max: MinorUnit,
    /// The fee charged, borne by the schedule's `paid_by` side.
    pub fee: MinorUnit,
    /// The part of the fee that goes to the agent (cash-out); the operator keeps `fee - agent_commission`.
    pub agent_commission: MinorUnit,
}

impl FeeBand {
    /// Whether `amount` lies in `min..=max`.
    pub fn contains(&self, amount: MinorUnit) -> bool {
        self.min <= amount && amount <= self.max
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn m(v: i64) -> MinorUnit {
        MinorUnit::new(v)
    }

    fn schedule() -> FeeSchedule {
        let band = |min, max, fee| FeeBand { min: m(min), max: m(max), fee: m(fee), agent_commission: m(0) };
        FeeSchedule { paid_by: FeePayer::Payer, bands: vec![band(1, 100, 0), band(101, 500, 7), band(501, 1000, 13)] }
    }

    #[test]
    fn band_for_finds_the_covering_band_at_each_edge() {
        let s = schedule();
        for (i, b) in s.bands.iter().enumerate() {
            assert_eq!(s.band_for(b.min), Some(b), "band {i} min");
            assert_eq!(s.band_for(b.max), Some(b), "band {i} max");
            let beyond = s.band_for(m(b.max.get() + 1));
            assert_eq!(beyond, s.bands.get(i + 1), "band {i} max + 1");
        }
        assert_eq!(s.band_for(m(0)), None);
        assert_eq!(s.band_for(m(-5)), None);
        assert_eq!(s.band_for(m(1001)), None);
    }

    #[test]
    fn band_applying_to_caps_at_the_last_band() {
        let s = schedule();
        assert_eq!(s.band_applying_to(m(1001)).map(|b| b.fee), Some(m(13)));
        assert_eq!(s.band_applying_to(m(250)).map(|b| b.fee), Some(m(7)));
        assert_eq!(s.band_applying_to(m(0)), None);
        let empty = FeeSchedule { paid_by: FeePayer::Payee, bands: vec![] };
        assert_eq!(empty.band_applying_to(m(10)), None);
    }

    #[test]
    fn names_round_trip() {
        for op in FeeOperation::ALL {
            assert_eq!(op.as_str().parse::<FeeOperation>(), Ok(op));
            assert_eq!(op.to_string(), op.as_str());
        }
        assert_eq!(FeeOperation::CashOut.as_str(), "cash_out");
        assert_eq!(FeeOperation::PaymentRequest.as_str(), "payment_request");
        let err = "cashout".parse::<FeeOperation>().unwrap_err();
        assert!(err.to_string().contains("\"cashout\""), "{err}");
        assert_eq!("payee".parse::<FeePayer>(), Ok(FeePayer::Payee));
        assert_eq!("payer".parse::<FeePayer>(), Ok(FeePayer::Payer));
        assert!("merchant".parse::<FeePayer>().is_err());
    }
}
