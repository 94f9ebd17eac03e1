//! [`AuthRepo`] on the transaction's connection: organisations, credentials and tokens.

use diesel::prelude::*;
use malipo_auth::{AccessToken, Credential, Organisation};
use malipo_core::{OrgId, Timestamp};
use malipo_service::{AuthRepo, StoreError, TokenRecord};

use crate::cached::written;
use crate::error::db_error;
use crate::rows::{CredentialRow, OrgRow, TokenRow};
use crate::schema::{access_tokens, credentials, organisations};
use crate::tx::{inserted, limit_i64, per_backend, DieselTx};
use crate::DbConnection;

impl AuthRepo for DieselTx<'_> {
    fn insert_org(&mut self, org: &Organisation) -> Result<(), StoreError> {
        let row = OrgRow::from(org);
        inserted(per_backend!(&mut *self.conn, |c| diesel::insert_into(organisations::table)
            .values(&row)
            .on_conflict_do_nothing()
            .execute(c)))
    }

    fn org(&mut self, id: &OrgId) -> Result<Option<Organisation>, StoreError> {
        organisations::table
            .find(id.as_str())
            .select(OrgRow::as_select())
            .first(self.conn)
            .optional()
            .map_err(db_error)?
            .map(Organisation::try_from)
            .transpose()
    }

    fn org_name(&mut self, id: &OrgId) -> Result<Option<String>, StoreError> {
        if let Some(name) = self.known.name(id) {
            return Ok(Some(name));
        }
        let name = self.org(id)?.map(|o| o.name);
        if let Some(name) = &name {
            // Kept at once, unlike an account's id: an organisation whose creation is rolled
            // back leaves a name nothing will ask for (ids are never reused).
            self.known.remember_name(id, name);
        }
        Ok(name)
    }

    fn org_by_name(&mut self, name: &str) -> Result<Option<Organisation>, StoreError> {
        organisations::table
            .filter(organisations::name.eq(name))
            .order((organisations::created_at.asc(), organisations::id.asc()))
            .select(OrgRow::as_select())
            .first(self.conn)
            .optional()
            .map_err(db_error)?
            .map(Organisation::try_from)
            .transpose()
    }

    fn orgs(&mut self, limit: usize) -> Result<Vec<Organisation>, StoreError> {
        organisations::table
            .order((organisations::created_at.desc(), organisations::id.desc()))
            .limit(limit_i64(limit))
            .select(OrgRow::as_select())
            .load(self.conn)
            .map_err(db_error)?
            .into_iter()
            .map(Organisation::try_from)
            .collect()
    }

    fn insert_credential(&mut self, credential: &Credential) -> Result<(), StoreError> {
        let row = CredentialRow::from(credential);
        inserted(per_backend!(&mut *self.conn, |c| diesel::insert_into(credentials::table)
            .values(&row)
            .on_conflict_do_nothing()
            .execute(c)))
    }

    fn credential(&mut self, client_id: &str) -> Result<Option<Credential>, StoreError> {
        credentials::table
            .find(client_id)
            .select(CredentialRow::as_select())
            .first(self.conn)
            .optional()
            .map_err(db_error)?
            .map(Credential::try_from)
            .transpose()
    }

    fn revoke_credential(&mut self, client_id: &str, now: Timestamp) -> Result<bool, StoreError> {
        let revoked =
            diesel::update(credentials::table.filter(credentials::client_id.eq(client_id)).filter(credentials::revoked_at.is_null()))
                .set(credentials::revoked_at.eq(now.as_micros()))
                .execute(self.conn)
                .map_err(db_error)?;
        if revoked == 0 {
            return Ok(false);
        }
        diesel::update(access_tokens::table.filter(access_tokens::client_id.eq(client_id)).filter(access_tokens::revoked_at.is_null()))
            .set(access_tokens::revoked_at.eq(now.as_micros()))
            .execute(self.conn)
            .map_err(db_error)?;
        Ok(true)
    }

    fn replace_secret_hash(&mut self, client_id: &str, old: &str, new: &str) -> Result<bool, StoreError> {
        let replaced =
            diesel::update(credentials::table.filter(credentials::client_id.eq(client_id)).filter(credentials::secret_hash.eq(old)))
                .set(credentials::secret_hash.eq(new))
                .execute(self.conn)
                .map_err(db_error)?;
        Ok(replaced > 0)
    }

    fn insert_token(&mut self, token: &AccessToken) -> Result<(), StoreError> {
        let row = TokenRow::from(token);
        inserted(per_backend!(&mut *self.conn, |c| diesel::insert_into(access_tokens::table)
            .values(&row)
            .on_conflict_do_nothing()
            .execute(c)))
    }

    fn token(&mut self, digest: &str) -> Result<Option<TokenRecord>, StoreError> {
        let found: Option<(TokenRow, OrgRow, Option<i64>, Option<String>)> = access_tokens::table
            .inner_join(credentials::table)
            .inner_join(organisations::table.on(organisations::id.eq(access_tokens::org_id)))
            .filter(access_tokens::digest.eq(digest))
            .select((TokenRow::as_select(), OrgRow::as_select(), credentials::revoked_at, credentials::created_by))
            .first(self.conn)
            .optional()
            .map_err(db_error)?;
        found
            .map(|(token, org, credential_revoked_at, created_by)| {
                Ok(TokenRecord {
                    token: AccessToken::try_from(token)?,
                    org: Organisation::try_from(org)?,
                    credential_revoked: credential_revoked_at.is_some(),
                    credential_person: created_by.map(malipo_core::UserId::from_trusted),
                })
            })
            .transpose()
    }

    fn revoke_token(&mut self, digest: &str, client_id: &str, now: Timestamp) -> Result<bool, StoreError> {
        let mine = access_tokens::table.filter(access_tokens::digest.eq(digest)).filter(access_tokens::client_id.eq(client_id));
        let revoked = diesel::update(mine.filter(access_tokens::revoked_at.is_null()))
            .set(access_tokens::revoked_at.eq(now.as_micros()))
            .execute(self.conn)
            .map_err(db_error)?;
        if revoked > 0 {
            return Ok(true);
        }
        // Already revoked: still this client's token (revocation is idempotent).
        diesel::select(diesel::dsl::exists(mine)).get_result(self.conn).map_err(db_error)
    }

    fn org_credentials(&mut self, org_id: &OrgId) -> Result<Vec<Credential>, StoreError> {
        credentials::table
            .filter(credentials::org_id.eq(org_id.as_str()))
            .order((credentials::created_at.desc(), credentials::client_id.desc()))
            .select(CredentialRow::as_select())
            .load(self.conn)
            .map_err(db_error)?
            .into_iter()
            .map(Credential::try_from)
            .collect()
    }

    fn touch_credential(&mut self, client_id: &str, now: Timestamp) -> Result<(), StoreError> {
        // "Last used" never goes back (two tokens issued at once).
        let earlier = credentials::table
            .find(client_id)
            .filter(credentials::last_used_at.is_null().or(credentials::last_used_at.lt(now.as_micros())));
        written!(&mut *self.conn, diesel::update(earlier).set(credentials::last_used_at.eq(now.as_micros()))).map_err(db_error)?;
        Ok(())
    }
}
