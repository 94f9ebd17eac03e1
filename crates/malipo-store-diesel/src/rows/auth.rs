//! Rows of organisations, credentials, tokens.

use std::str::FromStr;

use diesel::prelude::*;
use malipo_auth::{AccessToken, Credential, OrgKind, Organisation, Scopes};
use malipo_core::{OrgId, Timestamp, UserId};
use malipo_service::StoreError;

use super::columns::{corrupt, mode, ts};
use crate::schema::{access_tokens, credentials, organisations};

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = organisations, check_for_backend(diesel::pg::Pg, diesel::sqlite::Sqlite))]
pub(crate) struct OrgRow {
    pub(crate) id: String,
    pub(crate) name: String,
    pub(crate) kind: String,
    pub(crate) country: String,
    pub(crate) created_at: i64,
}

impl From<&Organisation> for OrgRow {
    fn from(o: &Organisation) -> Self {
        OrgRow {
            id: o.id.as_str().to_owned(),
            name: o.name.clone(),
            kind: o.kind.as_str().to_owned(),
            country: o.country.clone(),
            created_at: o.created_at.as_micros(),
        }
    }
}

impl TryFrom<OrgRow> for Organisation {
    type Error = StoreError;
    fn try_from(r: OrgRow) -> Result<Self, StoreError> {
        Ok(Organisation {
            kind: OrgKind::from_str(&r.kind).map_err(|_| corrupt("organisation kind", &r.kind))?,
            id: OrgId::from_trusted(r.id),
            name: r.name,
            country: r.country,
            created_at: ts(r.created_at),
        })
    }
}

fn scopes(value: &str) -> Result<Scopes, StoreError> {
    Scopes::parse(value).map_err(|_| corrupt("scopes", value))
}

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = credentials, check_for_backend(diesel::pg::Pg, diesel::sqlite::Sqlite))]
pub(crate) struct CredentialRow {
    pub(crate) client_id: String,
    pub(crate) org_id: String,
    pub(crate) mode: String,
    pub(crate) secret_hash: String,
    pub(crate) scopes: String,
    pub(crate) created_at: i64,
    pub(crate) revoked_at: Option<i64>,
    pub(crate) created_by: Option<String>,
    pub(crate) last_used_at: Option<i64>,
}

impl From<&Credential> for CredentialRow {
    fn from(c: &Credential) -> Self {
        CredentialRow {
            client_id: c.client_id.clone(),
            org_id: c.org_id.as_str().to_owned(),
            mode: c.mode.as_str().to_owned(),
            secret_hash: c.secret_hash.clone(),
            scopes: c.scopes.to_string(),
            created_at: c.created_at.as_micros(),
            revoked_at: c.revoked_at.map(Timestamp::as_micros),
            created_by: c.created_by.as_ref().map(|u| u.as_str().to_owned()),
            last_used_at: c.last_used_at.map(Timestamp::as_micros),
        }
    }
}

impl TryFrom<CredentialRow> for Credential {
    type Error = StoreError;
    fn try_from(r: CredentialRow) -> Result<Self, StoreError> {
        Ok(Credential {
            mode: mode(&r.mode)?,
            scopes: scopes(&r.scopes)?,
            client_id: r.client_id,
            org_id: OrgId::from_trusted(r.org_id),
            secret_hash: r.secret_hash,
            created_at: ts(r.created_at),
            revoked_at: r.revoked_at.map(ts),
            created_by: r.created_by.map(UserId::from_trusted),
            last_used_at: r.last_used_at.map(ts),
        })
    }
}

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = access_tokens, check_for_backend(diesel::pg::Pg, diesel::sqlite::Sqlite))]
pub(crate) struct TokenRow {
    pub(crate) digest: String,
    pub(crate) client_id: String,
    pub(crate) org_id: String,
    pub(crate) mode: String,
    pub(crate) scopes: String,
    pub(crate) created_at: i64,
    pub(crate) expires_at: i64,
    pub(crate) revoked_at: Option<i64>,
}

impl From<&AccessToken> for TokenRow {
    fn from(t: &AccessToken) -> Self {
        TokenRow {
            digest: t.digest.clone(),
            client_id: t.client_id.clone(),
            org_id: t.org_id.as_str().to_owned(),
            mode: t.mode.as_str().to_owned(),
            scopes: t.scopes.to_string(),
            created_at: t.created_at.as_micros(),
            expires_at: t.expires_at.as_micros(),
            revoked_at: t.revoked_at.map(Timestamp::as_micros),
        }
    }
}

impl TryFrom<TokenRow> for AccessToken {
    type Error = StoreError;
    fn try_from(r: TokenRow) -> Result<Self, StoreError> {
        Ok(AccessToken {
            mode: mode(&r.mode)?,
            scopes: scopes(&r.scopes)?,
            digest: r.digest,
            client_id: r.client_id,
            org_id: OrgId::from_trusted(r.org_id),
            created_at: ts(r.created_at),
            expires_at: ts(r.expires_at),
            revoked_at: r.revoked_at.map(ts),
        })
    }
}
