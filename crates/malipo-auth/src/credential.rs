//! Organisations, their credentials, and the tokens issued to them.

use std::fmt;
use std::str::FromStr;

use malipo_core::{Mode, OrgId, Timestamp, UserId};

use crate::scope::{Scope, Scopes};

/// Bearer tokens live one hour (the seed).
pub const TOKEN_LIFETIME_SECONDS: i64 = 3600;

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

/// An integrator, agent, operator or gateway.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Organisation {
    /// `org_…`.
    pub id: OrgId,
    /// Display name.
    pub name: String,
    /// Its kind.
    pub kind: OrgKind,
    /// ISO 3166 alpha-2 country: decides the currency of its accounts.
    pub country: String,
    /// When created.
    pub created_at: Timestamp,
}

/// A key pair as stored: the secret only as an Argon2id hash.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Credential {
    /// `ck_test_…` / `ck_live_…`.
    pub client_id: String,
    /// The owner.
    pub org_id: OrgId,
    /// Decided by the credential.
    pub mode: Mode,
    /// PHC string.
    pub secret_hash: String,
    /// What it may do.
    pub scopes: Scopes,
    /// When issued.
    pub created_at: Timestamp,
    /// When revoked.
    pub revoked_at: Option<Timestamp>,
    /// The person who created it in the console (it acts as that person for maker/checker);
    /// `None` when issued by an operator's command.
    pub created_by: Option<UserId>,
    /// When it last got a token.
    pub last_used_at: Option<Timestamp>,
}

/// An issued bearer token, stored by digest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AccessToken {
    /// SHA-256 hex of the token.
    pub digest: String,
    /// The credential it was issued to.
    pub client_id: String,
    /// Its organisation.
    pub org_id: OrgId,
    /// Its mode.
    pub mode: Mode,
    /// What was granted.
    pub scopes: Scopes,
    /// When issued.
    pub created_at: Timestamp,
    /// When it stops working.
    pub expires_at: Timestamp,
    /// When revoked.
    pub revoked_at: Option<Timestamp>,
}

/// Who is calling: resolved from a valid token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Principal {
    /// The credential.
    pub client_id: String,
    /// The organisation.
    pub org_id: OrgId,
    /// Its kind.
    pub org_kind: OrgKind,
    /// Its country.
    pub country: String,
    /// The mode.
    pub mode: Mode,
    /// Granted scopes.
    pub scopes: Scopes,
    /// The person acting: a person in the console (their `usr_` id stands in `client_id` too),
    /// or the person who created the key pair in the console (maker/checker compares people);
    /// `None` for a key pair an operator issued.
    pub person: Option<UserId>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_scopes_follow_the_contract() {
        assert_eq!(OrgKind::Merchant.default_scopes().to_string(), "payments payouts bulk:create reversals");
        assert_eq!(OrgKind::Corporate.default_scopes().to_string(), "payments payouts bulk:create reversals");
        assert_eq!("corporate".parse::<OrgKind>(), Ok(OrgKind::Corporate));
        assert_eq!(OrgKind::Agent.default_scopes().to_string(), "agent");
        assert_eq!(OrgKind::Operator.default_scopes().to_string(), "wallets");
        assert_eq!(OrgKind::Gateway.default_scopes().to_string(), "ussd");
        assert_eq!("gateway".parse::<OrgKind>(), Ok(OrgKind::Gateway));
        assert!("bank".parse::<OrgKind>().is_err());
    }
}
