//! The wire shape of the Organisation group.

use malipo_service::Profile;
use serde::Serialize;
use utoipa::ToSchema;

/// `GET /organisation` response: which organisation a key pair acts for.
#[derive(Debug, Serialize, ToSchema)]
pub struct OrganisationDto {
    /// `org_…`.
    #[schema(example = "org_0193a1b2c3d4e5f6a7b8c9d0e1f2a3b4")]
    pub id: String,
    /// `merchant`, `corporate`, `agent`, `operator` or `gateway`.
    #[schema(example = "merchant")]
    pub kind: &'static str,
    /// Its name.
    pub name: String,
    /// ISO 3166-1 alpha-2.
    #[schema(example = "KE")]
    pub country: String,
    /// IANA time zone of the country: the day of reconciliation reports and daily limits.
    #[schema(example = "Africa/Nairobi")]
    pub time_zone: String,
    /// ISO 4217: the currency of every amount of the organisation.
    #[schema(example = "KES")]
    pub currency: String,
    /// The credential's mode: `test` or `live`.
    #[schema(example = "test")]
    pub mode: &'static str,
    /// The token's scopes, space-separated.
    #[schema(example = "payments payouts bulk:create reversals")]
    pub scope: String,
}

impl From<&Profile> for OrganisationDto {
    fn from(p: &Profile) -> Self {
        OrganisationDto {
            id: p.id.to_string(),
            kind: p.kind.as_str(),
            name: p.name.clone(),
            country: p.country.clone(),
            time_zone: p.time_zone.clone(),
            currency: p.currency.to_string(),
            mode: p.mode.as_str(),
            scope: p.scopes.to_string(),
        }
    }
}
