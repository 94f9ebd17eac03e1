//! Scopes (contract section 2).

use std::collections::BTreeSet;
use std::fmt;
use std::str::FromStr;

/// One permission a credential can carry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scope {
    /// Charges, balance, accounts, transactions, events, webhooks.
    Payments,
    /// Single payouts.
    Payouts,
    /// Create bulk payouts (maker).
    BulkCreate,
    /// Approve or reject bulk payouts (checker).
    BulkApprove,
    /// Reversals.
    Reversals,
    /// Operator back office: wallets, KYC, PINs.
    Wallets,
    /// Agent operations.
    Agent,
    /// The USSD gateway callback.
    Ussd,
}

impl Scope {
    /// Every scope.
    pub const ALL: [Scope; 8] = [
        Scope::Payments,
        Scope::Payouts,
        Scope::BulkCreate,
        Scope::BulkApprove,
        Scope::Reversals,
        Scope::Wallets,
        Scope::Agent,
        Scope::Ussd,
    ];

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Payments => "payments",
            Scope::Payouts => "payouts",
            Scope::BulkCreate => "bulk:create",
            Scope::BulkApprove => "bulk:approve",
            Scope::Reversals => "reversals",
            Scope::Wallets => "wallets",
            Scope::Agent => "agent",
            Scope::Ussd => "ussd",
        }
    }
}

/// Why a scope list was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq, Clone)]
pub enum ScopeError {
    /// An unknown scope name.
    #[error("unknown scope `{0}`")]
    Unknown(String),
    /// `bulk:create` and `bulk:approve` on one credential.
    #[error("bulk:create and bulk:approve cannot be held by the same credential")]
    MakerChecker,
}

impl FromStr for Scope {
    type Err = ScopeError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Scope::ALL.into_iter().find(|x| x.as_str() == s).ok_or_else(|| ScopeError::Unknown(s.to_owned()))
    }
}

/// A set of scopes, written space-separated in a fixed order.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Scopes(BTreeSet<Scope>);

impl Scopes {
    /// From a list, refusing maker and checker together.
    ///
    /// # Errors
    /// [`ScopeError::MakerChecker`].
    pub fn new(scopes: impl IntoIterator<Item = Scope>) -> Result<Self, ScopeError> {
        let set: BTreeSet<Scope> = scopes.into_iter().collect();
        if set.contains(&Scope::BulkCreate) && set.contains(&Scope::BulkApprove) {
            return Err(ScopeError::MakerChecker);
        }
        Ok(Scopes(set))
    }

    /// Parses a space-separated list (RFC 6749 `scope`).
    ///
    /// # Errors
    /// [`ScopeError`].
    pub fn parse(text: &str) -> Result<Self, ScopeError> {
        Scopes::new(text.split(' ').filter(|s| !s.is_empty()).map(str::parse).collect::<Result<Vec<_>, _>>()?)
    }

    /// Whether `scope` is in the set.
    pub fn contains(&self, scope: Scope) -> bool {
        self.0.contains(&scope)
    }

    /// Whether every scope of `other` is in this set.
    pub fn covers(&self, other: &Scopes) -> bool {
        other.0.is_subset(&self.0)
    }

    /// Whether empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The scopes in order.
    pub fn iter(&self) -> impl Iterator<Item = Scope> + '_ {
        self.0.iter().copied()
    }
}

impl fmt::Display for Scopes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.0.iter().map(|s| s.as_str()).collect();
        f.write_str(&names.join(" "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_print_in_canonical_order() {
        let s = Scopes::parse("payouts  payments").unwrap_or_default();
        assert_eq!(s.to_string(), "payments payouts");
        assert_eq!(Scopes::parse("payments nope"), Err(ScopeError::Unknown("nope".into())));
        assert_eq!(Scopes::parse("bulk:create bulk:approve"), Err(ScopeError::MakerChecker));
        assert_eq!(Scopes::parse("").map(|s| s.is_empty()), Ok(true));
    }

    #[test]
    fn covers_is_subset() {
        let all = Scopes::parse("payments payouts reversals").unwrap_or_default();
        assert!(all.covers(&Scopes::parse("payouts").unwrap_or_default()));
        assert!(!all.covers(&Scopes::parse("wallets").unwrap_or_default()));
    }
}
