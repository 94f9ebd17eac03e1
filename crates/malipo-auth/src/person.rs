//! People who use the console: their roles, and what each role may do (console contract
//! section 2). [`Role::may`] is the one table of who may do what; pages and form posts ask it,
//! never a role's name.

use std::fmt;
use std::str::FromStr;

use malipo_core::{OrgId, Timestamp, UserId};

use crate::kind::OrgKind;
use crate::scope::{Scope, Scopes};

/// A person's role in their organisation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Role {
    /// Merchant or corporate: team, API keys, webhook endpoints, and (merchant) everything else.
    Admin,
    /// Merchant: read everything; refunds, payouts, payment requests, exports.
    Finance,
    /// Merchant: read everything.
    Viewer,
    /// Corporate: pay one person, upload bulk payouts, transfer between own accounts.
    Maker,
    /// Corporate: approve or reject batches (never their own).
    Checker,
    /// Agent: float, cash-in, cash-out, own statements.
    Agent,
    /// Operator: wallets, organisations, every audit log, ledger health.
    Operator,
}

/// What a person may do, asked of [`Role::may`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Permission {
    /// See the organisation's objects (charges, payouts, transactions, ...).
    Read,
    /// Download CSV exports (transactions, reconciliation, statements).
    Export,
    /// Refund (reverse) a charge or payout.
    Refund,
    /// Pay one person.
    Payout,
    /// Create and cancel payment requests.
    PaymentRequest,
    /// Invite people, change roles, remove people, require two-factor.
    ManageTeam,
    /// Create and revoke API key pairs.
    ManageKeys,
    /// Add, rotate and disable webhook endpoints; redeliver events.
    ManageWebhooks,
    /// See the organisation's audit log.
    ViewAudit,
    /// Upload bulk payouts.
    UploadBulk,
    /// Approve or reject bulk payouts.
    ApproveBulk,
    /// Move money between the organisation's own accounts.
    Transfer,
    /// Cash-in and cash-out, the float and its statements.
    AgentCash,
    /// Look up, open, raise, lock and unlock wallets.
    Wallets,
    /// List, create and fund organisations; issue their credentials; invite their people.
    Organisations,
    /// Every organisation's audit log and the ledger's health.
    BackOffice,
}

impl Role {
    /// Every role.
    pub const ALL: [Role; 7] = [Role::Admin, Role::Finance, Role::Viewer, Role::Maker, Role::Checker, Role::Agent, Role::Operator];

    /// The wire name (`admin`, `finance`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Admin => "admin",
            Role::Finance => "finance",
            Role::Viewer => "viewer",
            Role::Maker => "maker",
            Role::Checker => "checker",
            Role::Agent => "agent",
            Role::Operator => "operator",
        }
    }

    /// The roles an organisation of `kind` gives its people (a gateway has none).
    pub fn for_kind(kind: OrgKind) -> &'static [Role] {
        match kind {
            OrgKind::Merchant => &[Role::Admin, Role::Finance, Role::Viewer],
            OrgKind::Corporate => &[Role::Admin, Role::Maker, Role::Checker],
            OrgKind::Agent => &[Role::Agent],
            OrgKind::Operator => &[Role::Operator],
            OrgKind::Gateway => &[],
        }
    }

    /// Whether an organisation of `kind` has this role.
    pub fn fits(self, kind: OrgKind) -> bool {
        Role::for_kind(kind).contains(&self)
    }

    /// Whether the role moves money or grants access, so that its holder must turn on
    /// two-factor authentication before doing anything else.
    pub fn requires_two_factor(self) -> bool {
        !matches!(self, Role::Viewer | Role::Agent)
    }

    /// Whether a person of this role in an organisation of `kind` may do `what`: the console's
    /// one table of permissions.
    pub fn may(self, kind: OrgKind, what: Permission) -> bool {
        use Permission as P;
        match (kind, self) {
            (OrgKind::Merchant, Role::Admin) => {
                matches!(what, P::Read | P::Export | P::Refund | P::Payout | P::PaymentRequest | P::ManageTeam | P::ManageKeys)
                    || matches!(what, P::ManageWebhooks | P::ViewAudit)
            }
            (OrgKind::Merchant, Role::Finance) => matches!(what, P::Read | P::Export | P::Refund | P::Payout | P::PaymentRequest),
            (OrgKind::Merchant, Role::Viewer) => matches!(what, P::Read | P::Export),
            (OrgKind::Corporate, Role::Admin) => {
                matches!(what, P::Read | P::Export | P::ManageTeam | P::ManageKeys | P::ManageWebhooks | P::ViewAudit)
            }
            (OrgKind::Corporate, Role::Maker) => matches!(what, P::Read | P::Export | P::Payout | P::UploadBulk | P::Transfer),
            (OrgKind::Corporate, Role::Checker) => matches!(what, P::Read | P::Export | P::ApproveBulk),
            (OrgKind::Agent, Role::Agent) => matches!(what, P::AgentCash | P::Export),
            (OrgKind::Operator, Role::Operator) => matches!(what, P::Wallets | P::Organisations | P::BackOffice | P::ViewAudit),
            _ => false,
        }
    }

    /// The API scopes a person of this role acts with when the console calls a use case (the
    /// console checks [`Role::may`] first; scopes are what the use cases and their records see).
    pub fn scopes(self, kind: OrgKind) -> Scopes {
        let list: &[Scope] = match self {
            Role::Admin if kind == OrgKind::Merchant => &[Scope::Payments, Scope::Payouts, Scope::Reversals],
            Role::Admin | Role::Viewer => &[Scope::Payments],
            Role::Finance => &[Scope::Payments, Scope::Payouts, Scope::Reversals],
            Role::Maker => &[Scope::Payments, Scope::Payouts, Scope::BulkCreate],
            Role::Checker => &[Scope::Payments, Scope::BulkApprove],
            Role::Agent => &[Scope::Agent],
            Role::Operator => &[Scope::Wallets],
        };
        Scopes::new(list.iter().copied()).unwrap_or_default()
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Text that names no role.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("role must be one of admin, finance, viewer, maker, checker, agent, operator, got `{0}`")]
pub struct UnknownRole(pub String);

impl FromStr for Role {
    type Err = UnknownRole;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Role::ALL.into_iter().find(|r| r.as_str() == s).ok_or_else(|| UnknownRole(s.to_owned()))
    }
}

/// A person as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct User {
    /// `usr_…`.
    pub id: UserId,
    /// The organisation they belong to.
    pub org_id: OrgId,
    /// As typed at the invitation.
    pub email: String,
    /// Display name.
    pub name: String,
    /// Their role.
    pub role: Role,
    /// Argon2id PHC string; `None` until the invitation is accepted.
    pub password_hash: Option<String>,
    /// The TOTP secret, sealed (encrypted at rest); set at enrolment, before it is confirmed.
    pub totp_secret: Option<Vec<u8>>,
    /// When the second factor was turned on (a confirmed code).
    pub totp_enabled_at: Option<Timestamp>,
    /// The last TOTP time step accepted (a code is accepted once).
    pub totp_last_step: i64,
    /// The demo user of a first start (needs no second factor).
    pub demo: bool,
    /// When invited.
    pub created_at: Timestamp,
    /// When the invitation was accepted.
    pub activated_at: Option<Timestamp>,
    /// When removed from the organisation (signs in no more).
    pub removed_at: Option<Timestamp>,
}

impl User {
    /// The email as compared: trimmed and lower-cased (unique, case-insensitive).
    pub fn email_key(email: &str) -> String {
        email.trim().to_lowercase()
    }

    /// Whether `email` (trimmed) is an address a person can be invited at: RFC 5322's
    /// `local@domain` with a plain (dot-atom) local part, a domain name with at least two labels
    /// (no address literal, no display name, no quoted local part: what such forms allow is
    /// markup and spoofing, not anyone's mailbox), no hidden or control characters, and at most
    /// 254 characters.
    pub fn valid_email(email: &str) -> bool {
        use email_address::{EmailAddress, Options};
        let email = email.trim();
        let options = Options::default().with_required_tld().without_domain_literal().without_display_text();
        email.chars().count() <= 254
            && !email.starts_with('"')
            && email.chars().all(|c| c.is_ascii_graphic() || (!c.is_ascii() && !c.is_control() && !is_format(c)))
            && EmailAddress::parse_with_options(email, options).is_ok()
    }

    /// Whether the person has turned on the second factor.
    pub fn has_second_factor(&self) -> bool {
        self.totp_enabled_at.is_some()
    }

    /// Whether the person may sign in at all (invitation accepted, not removed).
    pub fn is_active(&self) -> bool {
        self.password_hash.is_some() && self.activated_at.is_some() && self.removed_at.is_none()
    }

    /// Whether the person must turn on two-factor before anything else: their role requires
    /// it, or their organisation requires it of everyone; never the demo user.
    pub fn must_enrol(&self, org_requires_two_factor: bool) -> bool {
        !self.demo && !self.has_second_factor() && (self.role.requires_two_factor() || org_requires_two_factor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_fit_their_organisation_kinds() {
        assert!(Role::Finance.fits(OrgKind::Merchant) && !Role::Finance.fits(OrgKind::Corporate));
        assert!(Role::Checker.fits(OrgKind::Corporate) && !Role::Checker.fits(OrgKind::Merchant));
        assert!(Role::Admin.fits(OrgKind::Merchant) && Role::Admin.fits(OrgKind::Corporate));
        assert!(Role::for_kind(OrgKind::Gateway).is_empty());
        assert_eq!("viewer".parse::<Role>(), Ok(Role::Viewer));
        assert!("root".parse::<Role>().is_err());
    }

    #[test]
    fn only_viewers_and_agents_may_go_without_a_second_factor() {
        let optional: Vec<Role> = Role::ALL.into_iter().filter(|r| !r.requires_two_factor()).collect();
        assert_eq!(optional, vec![Role::Viewer, Role::Agent]);
    }

    #[test]
    fn the_permission_table_follows_the_contract() {
        use Permission as P;
        let m = OrgKind::Merchant;
        assert!(Role::Admin.may(m, P::ManageKeys) && Role::Admin.may(m, P::Refund));
        assert!(Role::Finance.may(m, P::Refund) && !Role::Finance.may(m, P::ManageKeys) && !Role::Finance.may(m, P::ManageTeam));
        assert!(Role::Viewer.may(m, P::Read) && Role::Viewer.may(m, P::Export));
        for p in [P::Refund, P::Payout, P::PaymentRequest, P::ManageTeam, P::ManageKeys, P::ManageWebhooks, P::ViewAudit] {
            assert!(!Role::Viewer.may(m, p), "{p:?}");
        }
        let c = OrgKind::Corporate;
        assert!(!Role::Admin.may(c, P::Refund) && Role::Admin.may(c, P::ManageTeam));
        assert!(Role::Maker.may(c, P::UploadBulk) && !Role::Maker.may(c, P::ApproveBulk));
        assert!(Role::Checker.may(c, P::ApproveBulk) && !Role::Checker.may(c, P::UploadBulk));
        assert!(!Role::Finance.may(c, P::Read), "a role outside its kind may nothing");
        assert!(Role::Operator.may(OrgKind::Operator, P::Wallets) && !Role::Operator.may(OrgKind::Operator, P::Refund));
    }

    #[test]
    fn people_must_enrol_by_role_or_by_their_organisation() {
        let mut u = User {
            id: UserId::new(),
            org_id: OrgId::new(),
            email: "A@Example.com ".into(),
            name: "A".into(),
            role: Role::Viewer,
            password_hash: Some("x".into()),
            totp_secret: None,
            totp_enabled_at: None,
            totp_last_step: 0,
            demo: false,
            created_at: Timestamp::from_micros(0),
            activated_at: Some(Timestamp::from_micros(0)),
            removed_at: None,
        };
        assert_eq!(User::email_key(&u.email), "a@example.com");
        assert!(!u.must_enrol(false) && u.must_enrol(true));
        u.role = Role::Finance;
        assert!(u.must_enrol(false));
        u.demo = true;
        assert!(!u.must_enrol(true), "the demo user needs no second factor");
        u.demo = false;
        u.totp_enabled_at = Some(Timestamp::from_micros(1));
        assert!(!u.must_enrol(true));
    }
}

/// Whether `c` is an invisible formatting character (bidirectional overrides, zero-width ones).
fn is_format(c: char) -> bool {
    matches!(c, '\u{00ad}' | '\u{061c}' | '\u{180e}' | '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{2064}' | '\u{2066}'..='\u{206f}' | '\u{feff}')
}

#[cfg(test)]
mod email_tests {
    use super::User;

    #[test]
    fn emails_are_addresses_not_markup() {
        for ok in ["a@b.co", " amina@shop.example ", "first.last+tag@mail.example.org", "o'neil@shop.example"] {
            assert!(User::valid_email(ok), "{ok}");
        }
        for bad in [
            "",
            "a",
            "a@",
            "@b.co",
            "a@b",
            "a b@c.de",
            "a@b@c.de",
            "a@.com",
            "a@com.",
            "a@b.c\u{202e}",
            "x\"><script>alert(1)</script>@example.com",
            "\"x><script>\"@example.com",
            "<a@b.co>",
            "Amina <a@b.co>",
            "a@[127.0.0.1]",
            "a\u{200b}b@shop.example",
        ] {
            assert!(!User::valid_email(bad), "{bad:?}");
        }
    }
}
