//! Prefixed, opaque, URL-safe identifiers (`ch_…`, `acc_…`). The body is a UUIDv7 in lower-case
//! hex, so identifiers sort by creation time and keep database indexes append-mostly.

use std::fmt;

/// The text did not have the identifier's prefix and shape.
#[derive(Debug, thiserror::Error, PartialEq, Eq, Clone)]
#[error("not a valid {kind} identifier")]
pub struct IdError {
    /// Which identifier was expected.
    pub kind: &'static str,
}

macro_rules! prefixed_ids {
    ($($(#[$doc:meta])* $name:ident => $prefix:literal,)*) => {$(
        $(#[$doc])*
        #[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            /// The prefix every identifier of this kind starts with.
            pub const PREFIX: &'static str = $prefix;

            /// A new time-ordered identifier.
            #[allow(clippy::new_without_default)]
            pub fn new() -> Self {
                $name(format!("{}{}", $prefix, uuid::Uuid::now_v7().simple()))
            }

            /// A new identifier carrying `at`'s millisecond, so that it sorts where its
            /// record's creation time does; those of one millisecond drawn by one process sort
            /// in the order they were drawn (a counter follows the millisecond). Unlike
            /// [`Self::new`]'s, the time is never moved on to keep the order: a clock that is
            /// set back, or one injected for a test, is what the identifier carries.
            pub fn at(at: crate::Timestamp) -> Self {
                static DRAWN: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
                let micros = u64::try_from(at.as_micros()).unwrap_or(0);
                let counter = DRAWN.fetch_add(1, std::sync::atomic::Ordering::Relaxed) & ((1 << 42) - 1);
                let nanos = u32::try_from(micros % 1_000_000).unwrap_or(0).saturating_mul(1_000);
                let ts = uuid::Timestamp::from_unix_time(micros / 1_000_000, nanos, u128::from(counter), 42);
                $name(format!("{}{}", $prefix, uuid::Uuid::new_v7(ts).simple()))
            }

            /// A bound, not an identifier: every identifier drawn at or after `at`'s
            /// millisecond sorts at or after it, every one drawn before sorts before it.
            pub fn floor(at: crate::Timestamp) -> Self {
                let millis = u64::try_from(at.as_micros()).unwrap_or(0) / 1_000;
                $name(format!("{}{:012x}", $prefix, millis & 0xffff_ffff_ffff))
            }

            /// Parses an identifier, checking its prefix and that the rest is 1 to 64 URL-safe
            /// characters (`[A-Za-z0-9_-]`).
            ///
            /// # Errors
            /// [`IdError`] otherwise.
            pub fn parse(s: &str) -> Result<Self, IdError> {
                let ok = s.strip_prefix($prefix).is_some_and(|rest| {
                    (1..=64).contains(&rest.len())
                        && rest.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
                });
                if ok { Ok($name(s.to_owned())) } else { Err(IdError { kind: stringify!($name) }) }
            }

            /// Wraps a value read back from storage without checking it.
            pub fn from_trusted(s: String) -> Self {
                $name(s)
            }

            /// The identifier as text.
            pub fn as_str(&self) -> &str {
                &self.0
            }

            /// The identifier as an owned string.
            pub fn into_string(self) -> String {
                self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
    )*};
}

prefixed_ids! {
    /// A charge (`ch_`).
    ChargeRef => "ch_",
    /// A payout (`po_`).
    PayoutRef => "po_",
    /// A bulk payout batch (`bp_`).
    BulkPayoutId => "bp_",
    /// A reversal (`rv_`).
    ReversalId => "rv_",
    /// A ledger transaction, one balanced journal entry (`tx_`).
    TransactionId => "tx_",
    /// A merchant payment request (`pr_`).
    PaymentRequestId => "pr_",
    /// A cash-out (`wd_`).
    WithdrawalRef => "wd_",
    /// A webhook endpoint (`we_`).
    EndpointId => "we_",
    /// An event (`evt_`).
    EventId => "evt_",
    /// A ledger account (`acc_`).
    AccountId => "acc_",
    /// An organisation (`org_`).
    OrgId => "org_",
    /// A person who uses the console (`usr_`).
    UserId => "usr_",
    /// An entry of the audit log (`aud_`).
    AuditId => "aud_",
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_ids_carry_their_prefix_and_parse_back() {
        let id = ChargeRef::new();
        assert!(id.as_str().starts_with("ch_"));
        assert_eq!(id.as_str().len(), 3 + 32);
        assert_eq!(ChargeRef::parse(id.as_str()), Ok(id));
    }

    #[test]
    fn new_ids_sort_by_creation() {
        let a = AccountId::new();
        let b = AccountId::new();
        assert!(a < b);
    }

    #[test]
    fn ids_drawn_at_a_time_sort_between_its_floor_and_the_next_milliseconds() {
        let t = crate::Timestamp::from_micros(1_767_225_600_123_456);
        let id = ChargeRef::at(t);
        assert!(id.as_str().starts_with("ch_019b76daa87b"), "{id}");
        assert_eq!(id.as_str().len(), 3 + 32);
        assert!(ChargeRef::floor(t) <= id);
        assert!(id < ChargeRef::floor(crate::Timestamp::from_micros(1_767_225_600_124_000)));
        assert!(ChargeRef::floor(crate::Timestamp::from_micros(1_767_225_600_122_999)) < id);
        let earlier = ChargeRef::at(crate::Timestamp::from_micros(1_767_225_599_000_000));
        assert!(earlier < ChargeRef::floor(t) && earlier < id, "a time set back is carried as it is");
        let drawn: Vec<ChargeRef> = (0..100).map(|_| ChargeRef::at(t)).collect();
        assert!(drawn.windows(2).all(|w| w[0] < w[1]), "one millisecond's in the order drawn");
    }

    #[test]
    fn wrong_prefix_or_characters_are_refused() {
        assert!(ChargeRef::parse("po_0193").is_err());
        assert!(ChargeRef::parse("ch_").is_err());
        assert!(ChargeRef::parse("ch_abc/def").is_err());
        assert!(ChargeRef::parse("ch_abc%20").is_err());
        assert!(ChargeRef::parse(&format!("ch_{}", "a".repeat(65))).is_err());
        assert!(ChargeRef::parse("ch_abc-DEF_1").is_ok());
    }
}
