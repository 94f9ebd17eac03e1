//! Which organisation a caller acts for, as Stripe's `GET /v1/account` answers it: the first
//! call a new integration makes to check its key pair.

use malipo_auth::{OrgKind, Principal, Scopes};
use malipo_core::{Currency, Mode, OrgId};

use crate::core::Core;
use crate::error::ServiceError;
use crate::needs::{self, require};
use crate::views::{OnAuth, View};

/// The caller's organisation and what its credential may do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Profile {
    /// `org_…`.
    pub id: OrgId,
    /// Its kind.
    pub kind: OrgKind,
    /// Its name.
    pub name: String,
    /// Its country (ISO 3166-1 alpha-2).
    pub country: String,
    /// The country's time zone (IANA): the day of reports and daily limits.
    pub time_zone: String,
    /// The country's currency: every amount of the organisation's.
    pub currency: Currency,
    /// The credential's mode.
    pub mode: Mode,
    /// The token's scopes.
    pub scopes: Scopes,
}

/// The organisation use case.
pub struct Profiles<'a> {
    core: &'a Core,
}

impl<'a> Profiles<'a> {
    pub(crate) fn new(core: &'a Core) -> Self {
        Profiles { core }
    }

    /// The caller's organisation.
    ///
    /// # Errors
    /// [`ServiceError::Forbidden`] for a person (their organisation is on every page),
    /// [`ServiceError::NotFound`] when the organisation is gone.
    pub fn get(&self, principal: &Principal) -> Result<Profile, ServiceError> {
        require(principal, &needs::ANY_CREDENTIAL)?;
        let org = OnAuth::read(self.core.store(), |tx| Ok(tx.org(&principal.org_id)?))?.ok_or(ServiceError::NotFound)?;
        let country = self.core.country(&org.country)?;
        Ok(Profile {
            id: org.id,
            kind: org.kind,
            name: org.name,
            country: org.country.clone(),
            time_zone: country.time_zone.clone(),
            currency: country.currency,
            mode: principal.mode,
            scopes: principal.scopes.clone(),
        })
    }
}
