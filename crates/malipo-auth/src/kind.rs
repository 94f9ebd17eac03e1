//! What kind of party an organisation is.

use std::fmt;
use std::str::FromStr;

use crate::scope::{Scope, Scopes};

/// What kind of party an organisation is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OrgKind {
    /// Collects and pays out.
    Merchant,
    /// A payroll or disbursement company: accounts and scopes as a merchant.
    Corporate,
    /// Cash-in and cash-out.
    Agent,
    /// Runs the platform's back office.
    Operator,
    /// Runs the USSD gateway.
    Gateway,
}

impl OrgKind {
    /// Every kind.
    pub const ALL: [OrgKind; 5] = [OrgKind::Merchant, OrgKind::Corporate, OrgKind::Agent, OrgKind::Operator, OrgKind::Gateway];

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            OrgKind::Merchant => "merchant",
            OrgKind::Corporate => "corporate",
            OrgKind::Agent => "agent",
            OrgKind::Operator => "operator",
            OrgKind::Gateway => "gateway",
        }
    }

    /// The scopes a new credential of this kind gets (contract section 13).
    pub fn default_scopes(self) -> Scopes {
        let list: &[Scope] = match self {
            OrgKind::Merchant | OrgKind::Corporate => &[Scope::Payments, Scope::Payouts, Scope::Reversals, Scope::BulkCreate],
            OrgKind::Agent => &[Scope::Agent],
            OrgKind::Operator => &[Scope::Wallets],
            OrgKind::Gateway => &[Scope::Ussd],
        };
        Scopes::new(list.iter().copied()).unwrap_or_default()
    }
}

impl fmt::Display for OrgKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Text that names no organisation kind.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("kind must be merchant, corporate, agent, operator or gateway, got `{0}`")]
pub struct UnknownOrgKind(pub String);

impl FromStr for OrgKind {
    type Err = UnknownOrgKind;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        OrgKind::ALL.into_iter().find(|k| k.as_str() == s).ok_or_else(|| UnknownOrgKind(s.to_owned()))
    }
}
