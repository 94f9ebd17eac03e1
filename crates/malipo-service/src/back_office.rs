//! The operator's back office in the console: organisations listed, created, given credentials,
//! funded, and their first people invited. The same use cases as the operator's commands
//! (`malipo org create`, `malipo credentials issue`, `malipo account fund`, `malipo user invite`),
//! each recorded in the audit log as the person's (in the operator's organisation, naming the
//! object touched); funding moves money, so it runs under the form's one-time key.

use std::net::IpAddr;

use malipo_auth::{Credential, OrgKind, Organisation, Permission};
use malipo_core::{Mode, OrgId};

use crate::access::{Access, IssuedCredential};
use crate::accounts::{Accounts, Funded, LedgerCheck};
use crate::core::Core;
use crate::error::ServiceError;
use crate::idempotency::{Done, Idem};
use crate::people::{entry, Invited, Invitee, Inviter, People, SignedIn};
use crate::ports::{AuditEntry, AuditFilter};
use crate::views::{OnAudit, OnAuth, Reporting, View};

/// The audit log's action of a verification of the ledger.
pub const LEDGER_VERIFIED: &str = "ledger.verified";

/// What the back office shows of the ledger's health.
#[derive(Clone, Debug)]
pub struct LedgerHealth {
    /// The last verification, as the audit log recorded it (its detail is the outcome).
    pub last: Option<AuditEntry>,
    /// Journals committed but not yet sealed into their ledger's audit chain.
    pub unsealed: u64,
    /// How long the oldest of them has waited.
    pub lag: std::time::Duration,
}

/// The most organisations a list shows.
pub const ORG_LIST_LIMIT: usize = 500;

/// The operator's back office: organisations.
pub struct BackOffice<'a> {
    core: &'a Core,
}

impl<'a> BackOffice<'a> {
    pub(crate) fn new(core: &'a Core) -> Self {
        BackOffice { core }
    }

    /// Every organisation, newest first (at most [`ORG_LIST_LIMIT`]).
    ///
    /// # Errors
    /// [`ServiceError::Forbidden`] unless `who` may manage organisations.
    pub fn organisations(&self, who: &SignedIn) -> Result<Vec<Organisation>, ServiceError> {
        who.require(Permission::Organisations)?;
        self.all_organisations()
    }

    /// [`BackOffice::organisations`] for the operator's command line (whoever runs it holds the
    /// database, so there is no caller to check).
    ///
    /// # Errors
    /// Storage failures.
    pub fn all_organisations(&self) -> Result<Vec<Organisation>, ServiceError> {
        OnAuth::read(self.core.store(), |tx| Ok(tx.orgs(ORG_LIST_LIMIT)?))
    }

    /// One organisation.
    ///
    /// # Errors
    /// [`ServiceError::Forbidden`], [`ServiceError::NotFound`].
    pub fn organisation(&self, who: &SignedIn, org_id: &OrgId) -> Result<Organisation, ServiceError> {
        who.require(Permission::Organisations)?;
        OnAuth::read(self.core.store(), |tx| Ok(tx.org(org_id)?))?.ok_or(ServiceError::NotFound)
    }

    /// Creates an organisation (as `malipo org create`): its accounts in both modes and a test
    /// credential, whose secret is shown once.
    ///
    /// # Errors
    /// [`ServiceError::Forbidden`], [`ServiceError::Validation`] (`name`, `country`).
    pub fn create_org(
        &self,
        who: &SignedIn,
        ip: IpAddr,
        name: &str,
        kind: OrgKind,
        country: &str,
    ) -> Result<IssuedCredential, ServiceError> {
        who.require(Permission::Organisations)?;
        let now = self.core.now();
        let audit = |org: &Organisation| {
            entry(
                &who.user,
                "organisation.created",
                Some(org.id.to_string()),
                format!("{} {} in {}", org.kind, org.name, org.country),
                ip,
                now,
            )
        };
        Access::new(self.core).create_org_by(name, kind, country, Some(&audit))
    }

    /// Issues a credential of `mode` with the kind's scopes (as `malipo credentials issue`; a
    /// live one is the organisation's reviewed first); its secret is shown once. A step-up
    /// action: `code` is a fresh authentication code.
    ///
    /// # Errors
    /// [`ServiceError::Forbidden`], [`ServiceError::Validation`] (`code`),
    /// [`ServiceError::NotFound`].
    pub fn issue_credential(
        &self,
        who: &SignedIn,
        ip: IpAddr,
        org_id: &OrgId,
        mode: Mode,
        code: &str,
    ) -> Result<IssuedCredential, ServiceError> {
        who.require(Permission::Organisations)?;
        self.organisation(who, org_id)?;
        People::new(self.core).step_up(who, code, ip)?;
        let now = self.core.now();
        let audit = |c: &Credential| {
            entry(&who.user, "credential.issued", Some(c.client_id.clone()), format!("{} credential of {}", c.mode, c.org_id), ip, now)
        };
        Access::new(self.core).issue_credential_by(org_id, mode, None, Some(&audit))
    }

    /// Funds an agent's float or a merchant's or corporate's payout account from the issuance
    /// account (as `malipo account fund`), once per form key; `idem` carries the person.
    ///
    /// # Errors
    /// [`ServiceError::Forbidden`], [`ServiceError::NotFound`], [`ServiceError::Validation`]
    /// (`amount`, `org`), idempotency errors.
    pub fn fund(&self, who: &SignedIn, org_id: &OrgId, mode: Mode, amount: &str, idem: &Idem) -> Result<Done<Funded>, ServiceError> {
        who.require(Permission::Organisations)?;
        let accounts = Accounts::new(self.core);
        self.core.idempotent(idem, Reporting, |tx| accounts.fund_in(tx, org_id, mode, amount, self.core.now()))
    }

    /// "Verify now" (as `malipo ledger verify`): seals, then checks the whole ledger, and records
    /// the result in the audit log (`ledger.verified`, its detail the outcome), where
    /// [`BackOffice::ledger_health`] finds the last one. Slow on a large ledger: the console
    /// runs it in the background.
    ///
    /// # Errors
    /// [`ServiceError::Forbidden`], storage failures.
    pub fn verify_ledger(&self, who: &SignedIn, ip: IpAddr) -> Result<LedgerCheck, ServiceError> {
        who.require(Permission::BackOffice)?;
        let started = self.core.now();
        let (sealed, check) = Accounts::new(self.core).seal_and_check(None)?;
        let outcome = if check.violations.is_empty() { "ok".to_owned() } else { format!("{} violation(s)", check.violations.len()) };
        let mut detail = format!("{outcome}: {} journals checked, {sealed} sealed first, {} unsealed", check.journals, check.unsealed);
        for v in check.violations.iter().take(5) {
            detail.push_str(&format!("; {v}"));
        }
        let took = self.core.now().as_micros().saturating_sub(started.as_micros()) / 1000;
        detail.push_str(&format!(" ({took} ms)"));
        let record = entry(&who.user, LEDGER_VERIFIED, None, detail, ip, self.core.now());
        OnAudit::write(self.core.store(), |tx| Ok(tx.append_audit(&record)?))?;
        Ok(check)
    }

    /// The ledger's health: the last verification ("Verify now") and the audit chain's sealing
    /// lag (how many journals wait for their seal, and how long the oldest has waited).
    ///
    /// # Errors
    /// [`ServiceError::Forbidden`], storage failures.
    pub fn ledger_health(&self, who: &SignedIn) -> Result<LedgerHealth, ServiceError> {
        who.require(Permission::BackOffice)?;
        let filter = AuditFilter { action: Some(LEDGER_VERIFIED.into()), ..AuditFilter::default() };
        let last = OnAudit::read(self.core.store(), |tx| Ok(tx.audit_entries(&filter, None, 1)?))?.into_iter().next();
        let sealer = crate::sealer::Sealer::new(self.core);
        let unsealed = sealer.unsealed()?;
        let lag = sealer.lag(&unsealed);
        Ok(LedgerHealth { last, unsealed: unsealed.count, lag })
    }

    /// Invites a person into any organisation (as `malipo user invite`): the one-time link's
    /// token is shown once.
    ///
    /// # Errors
    /// [`ServiceError::Forbidden`], and those of [`People::invite`].
    pub fn invite(&self, who: &SignedIn, ip: IpAddr, org_id: &OrgId, invitee: &Invitee) -> Result<Invited, ServiceError> {
        who.require(Permission::Organisations)?;
        People::new(self.core).invite(Inviter::BackOffice(who, ip), org_id, invitee)
    }
}
