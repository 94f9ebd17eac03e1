//! Organisations, their credentials, and the tokens issued to them.

use malipo_core::{Mode, OrgId, Timestamp, UserId};

pub use crate::kind::{OrgKind, UnknownOrgKind};
use crate::person::{Permission, Role};
use crate::scope::{Scope, Scopes};

/// Bearer tokens live one hour (the seed).
pub const TOKEN_LIFETIME_SECONDS: i64 = 3600;

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
    /// The person's role when a person calls (the console), `None` for a credential: a
    /// person's authority is their role's permissions, a credential's its scopes.
    pub role: Option<Role>,
}

/// What a use case asks of its caller: a credential needs one of `scopes`, a person one of
/// `permissions` of their role (none listed: no person may).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Need {
    /// Any one of these scopes admits a credential.
    pub scopes: &'static [Scope],
    /// Any one of these permissions admits a person.
    pub permissions: &'static [Permission],
}

impl Principal {
    /// Why the caller may not do what `need` describes, or `None` when they may.
    pub fn refusal(&self, need: &Need) -> Option<String> {
        match self.role {
            Some(role) if need.permissions.iter().any(|&p| role.may(self.org_kind, p)) => None,
            Some(role) => Some(format!("a {role} may not do this")),
            None if need.scopes.iter().any(|&s| self.scopes.contains(s)) => None,
            None => {
                let names: Vec<&str> = need.scopes.iter().map(|s| s.as_str()).collect();
                Some(match names.as_slice() {
                    [one] => format!("this token lacks the `{one}` scope"),
                    _ => format!("this token lacks one of the `{}` scopes", names.join(" ")),
                })
            }
        }
    }
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
