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
    fn wrong_prefix_or_characters_are_refused() {
        assert!(ChargeRef::parse("po_0193").is_err());
        assert!(ChargeRef::parse("ch_").is_err());
        assert!(ChargeRef::parse("ch_abc/def").is_err());
        assert!(ChargeRef::parse("ch_abc%20").is_err());
        assert!(ChargeRef::parse(&format!("ch_{}", "a".repeat(65))).is_err());
        assert!(ChargeRef::parse("ch_abc-DEF_1").is_ok());
    }
}
