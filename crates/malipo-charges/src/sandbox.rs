//! The sandbox's magic numbers (contract section 11): the last four digits of a test payer's
//! MSISDN pick the charge's outcome.

use malipo_core::Msisdn;

/// What the sandbox does with a test charge once its approval delay has passed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SandboxOutcome {
    /// Approve with the right PIN, then complete.
    Approve,
    /// `1001`: the customer declines.
    Decline,
    /// `1002`: nobody answers; expires after the time-to-live.
    Expire,
    /// `1003`: fails with `insufficient_funds`.
    InsufficientFunds,
    /// `1004`: wrong PINs until the wallet locks; declined `pin_attempts_exceeded`.
    PinLockout,
    /// `1005`: fails with `wallet_locked`.
    WalletLocked,
    /// `1006`: fails with `limit_exceeded`.
    LimitExceeded,
    /// `1007`: fails with `payer_not_found`.
    PayerNotFound,
    /// `1009`: stays pending until simulated or expired.
    StayPending,
}

impl SandboxOutcome {
    /// The outcome for a test payer.
    pub fn for_payer(msisdn: &Msisdn) -> Self {
        match msisdn.last_four() {
            "1001" => SandboxOutcome::Decline,
            "1002" => SandboxOutcome::Expire,
            "1003" => SandboxOutcome::InsufficientFunds,
            "1004" => SandboxOutcome::PinLockout,
            "1005" => SandboxOutcome::WalletLocked,
            "1006" => SandboxOutcome::LimitExceeded,
            "1007" => SandboxOutcome::PayerNotFound,
            "1009" => SandboxOutcome::StayPending,
            _ => SandboxOutcome::Approve,
        }
    }

    /// Whether a payout to this number fails in the sandbox, and why.
    pub fn payout_failure(msisdn: &Msisdn) -> Option<&'static str> {
        match msisdn.last_four() {
            "1005" => Some("wallet_locked"),
            "1006" => Some("limit_exceeded"),
            "1007" => Some("payee_not_found"),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(n: &str) -> SandboxOutcome {
        SandboxOutcome::for_payer(&Msisdn::parse(n).unwrap_or_else(|e| panic!("{n}: {e}")))
    }

    #[test]
    fn magic_numbers_follow_the_table() {
        assert_eq!(outcome("254700001001"), SandboxOutcome::Decline);
        assert_eq!(outcome("254700001002"), SandboxOutcome::Expire);
        assert_eq!(outcome("254700001003"), SandboxOutcome::InsufficientFunds);
        assert_eq!(outcome("254700001004"), SandboxOutcome::PinLockout);
        assert_eq!(outcome("254700001005"), SandboxOutcome::WalletLocked);
        assert_eq!(outcome("254700001006"), SandboxOutcome::LimitExceeded);
        assert_eq!(outcome("254700001007"), SandboxOutcome::PayerNotFound);
        assert_eq!(outcome("254700001008"), SandboxOutcome::Approve);
        assert_eq!(outcome("254700001009"), SandboxOutcome::StayPending);
        assert_eq!(outcome("254712345678"), SandboxOutcome::Approve);
    }

    #[test]
    fn payouts_fail_only_for_1005_to_1007() {
        let p = |n: &str| SandboxOutcome::payout_failure(&Msisdn::parse(n).unwrap_or_else(|e| panic!("{e}")));
        assert_eq!(p("254700001001"), None);
        assert_eq!(p("254700001005"), Some("wallet_locked"));
        assert_eq!(p("254700001006"), Some("limit_exceeded"));
        assert_eq!(p("254700001007"), Some("payee_not_found"));
    }
}
