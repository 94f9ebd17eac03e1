//! [`UserRepo`] on the transaction's connection: users, recovery codes, invitations and
//! organisations' console settings. Every change is one guarded `UPDATE` whose condition is in
//! its `WHERE` clause, answering whether it changed a row, so two requests racing on one person
//! change it once.

use diesel::prelude::*;
use malipo_auth::{Role, User};
use malipo_core::{OrgId, Timestamp, UserId};
use malipo_service::{Invitation, StoreError, UserRepo};

use crate::cached::written;
use crate::error::db_error;
use crate::rows::{InvitationRow, RecoveryCodeRow, UserRow};
use crate::schema::{invitations, organisation_settings, recovery_codes, users};
use crate::tx::{happened, inserted, DieselTx};

impl UserRepo for DieselTx<'_> {
    fn insert_user(&mut self, user: &User) -> Result<(), StoreError> {
        let row = UserRow::from(user);
        // `ON CONFLICT DO NOTHING` covers the id and the email's unique indexes alike.
        inserted(written!(&mut *self.conn, diesel::insert_into(users::table).values(&row).on_conflict_do_nothing()))
    }

    fn user(&mut self, id: &UserId) -> Result<Option<User>, StoreError> {
        users::table
            .find(id.as_str())
            .select(UserRow::as_select())
            .first(self.conn)
            .optional()
            .map_err(db_error)?
            .map(User::try_from)
            .transpose()
    }

    fn user_by_email(&mut self, email_key: &str) -> Result<Option<User>, StoreError> {
        // The one person who accepted an invitation to it, else the oldest invitation waiting.
        let of_email = || users::table.filter(users::email_key.eq(email_key)).select(UserRow::as_select());
        let joined = of_email().filter(users::activated_at.is_not_null()).first(self.conn).optional().map_err(db_error)?;
        let found = match joined {
            Some(row) => Some(row),
            None => of_email().order((users::created_at.asc(), users::id.asc())).first(self.conn).optional().map_err(db_error)?,
        };
        found.map(User::try_from).transpose()
    }

    fn users_of_org(&mut self, org_id: &OrgId) -> Result<Vec<User>, StoreError> {
        users::table
            .filter(users::org_id.eq(org_id.as_str()))
            .order((users::created_at.asc(), users::id.asc()))
            .select(UserRow::as_select())
            .load(self.conn)
            .map_err(db_error)?
            .into_iter()
            .map(User::try_from)
            .collect()
    }

    fn activate_user(&mut self, id: &UserId, name: &str, password_hash: &str, now: Timestamp) -> Result<bool, StoreError> {
        // Not yet active, and not removed: a person removed before accepting stays out. An email
        // another person accepted first is refused by the unique index (`Duplicate`).
        let invited = users::table.find(id.as_str()).filter(users::activated_at.is_null()).filter(users::removed_at.is_null());
        happened(written!(
            &mut *self.conn,
            diesel::update(invited).set((
                users::name.eq(name),
                users::password_hash.eq(password_hash),
                users::activated_at.eq(now.as_micros()),
            ))
        ))
    }

    fn set_password(&mut self, id: &UserId, password_hash: &str) -> Result<bool, StoreError> {
        happened(written!(&mut *self.conn, diesel::update(users::table.find(id.as_str())).set(users::password_hash.eq(password_hash))))
    }

    fn set_totp_secret(&mut self, id: &UserId, sealed: &[u8]) -> Result<bool, StoreError> {
        let not_on = users::table.find(id.as_str()).filter(users::totp_enabled_at.is_null());
        happened(written!(&mut *self.conn, diesel::update(not_on).set(users::totp_secret.eq(sealed))))
    }

    fn enable_totp(&mut self, id: &UserId, step: i64, now: Timestamp) -> Result<bool, StoreError> {
        let enrolling = users::table.find(id.as_str()).filter(users::totp_secret.is_not_null()).filter(users::totp_enabled_at.is_null());
        happened(written!(
            &mut *self.conn,
            diesel::update(enrolling).set((users::totp_enabled_at.eq(now.as_micros()), users::totp_last_step.eq(step)))
        ))
    }

    fn advance_totp_step(&mut self, id: &UserId, step: i64) -> Result<bool, StoreError> {
        let earlier = users::table.find(id.as_str()).filter(users::totp_last_step.lt(step));
        happened(written!(&mut *self.conn, diesel::update(earlier).set(users::totp_last_step.eq(step))))
    }

    fn set_role(&mut self, id: &UserId, role: Role) -> Result<bool, StoreError> {
        happened(written!(&mut *self.conn, diesel::update(users::table.find(id.as_str())).set(users::role.eq(role.as_str()))))
    }

    fn remove_user(&mut self, id: &UserId, now: Timestamp) -> Result<bool, StoreError> {
        let present = users::table.find(id.as_str()).filter(users::removed_at.is_null());
        happened(written!(&mut *self.conn, diesel::update(present).set(users::removed_at.eq(now.as_micros()))))
    }

    fn replace_recovery_codes(&mut self, id: &UserId, digests: &[String], now: Timestamp) -> Result<(), StoreError> {
        written!(&mut *self.conn, diesel::delete(recovery_codes::table.filter(recovery_codes::user_id.eq(id.as_str()))))
            .map_err(db_error)?;
        if digests.is_empty() {
            return Ok(());
        }
        let rows: Vec<RecoveryCodeRow<'_>> =
            digests.iter().map(|d| RecoveryCodeRow { user_id: id.as_str(), digest: d, created_at: now.as_micros() }).collect();
        // A person has ten: one statement of a bounded size (see `cached`).
        let stored = written!(rows &mut *self.conn, recovery_codes::table, &rows, on_conflict_do_nothing).map_err(db_error)?;
        if stored != rows.len() {
            // The same digest twice: the caller's transaction fails rather than keep fewer codes.
            return Err(StoreError::Duplicate);
        }
        Ok(())
    }

    fn use_recovery_code(&mut self, id: &UserId, digest: &str, now: Timestamp) -> Result<bool, StoreError> {
        let unused = recovery_codes::table.find((id.as_str(), digest)).filter(recovery_codes::used_at.is_null());
        happened(written!(&mut *self.conn, diesel::update(unused).set(recovery_codes::used_at.eq(now.as_micros()))))
    }

    fn recovery_codes_left(&mut self, id: &UserId) -> Result<usize, StoreError> {
        let left: i64 = recovery_codes::table
            .filter(recovery_codes::user_id.eq(id.as_str()))
            .filter(recovery_codes::used_at.is_null())
            .count()
            .get_result(self.conn)
            .map_err(db_error)?;
        Ok(usize::try_from(left).unwrap_or(0))
    }

    fn insert_invitation(&mut self, invitation: &Invitation) -> Result<(), StoreError> {
        let row = InvitationRow::from(invitation);
        inserted(written!(&mut *self.conn, diesel::insert_into(invitations::table).values(&row).on_conflict_do_nothing()))
    }

    fn invitation(&mut self, digest: &str) -> Result<Option<Invitation>, StoreError> {
        Ok(invitations::table
            .find(digest)
            .select(InvitationRow::as_select())
            .first(self.conn)
            .optional()
            .map_err(db_error)?
            .map(Invitation::from))
    }

    fn accept_invitation(&mut self, digest: &str, now: Timestamp) -> Result<bool, StoreError> {
        let open =
            invitations::table.find(digest).filter(invitations::accepted_at.is_null()).filter(invitations::expires_at.gt(now.as_micros()));
        happened(written!(&mut *self.conn, diesel::update(open).set(invitations::accepted_at.eq(now.as_micros()))))
    }

    fn org_requires_two_factor(&mut self, org_id: &OrgId) -> Result<bool, StoreError> {
        let stored: Option<bool> = organisation_settings::table
            .find(org_id.as_str())
            .select(organisation_settings::require_two_factor)
            .first(self.conn)
            .optional()
            .map_err(db_error)?;
        Ok(stored.unwrap_or(false))
    }

    fn set_org_requires_two_factor(&mut self, org_id: &OrgId, on: bool) -> Result<(), StoreError> {
        written!(
            &mut *self.conn,
            diesel::insert_into(organisation_settings::table)
                .values((organisation_settings::org_id.eq(org_id.as_str()), organisation_settings::require_two_factor.eq(on)))
                .on_conflict(organisation_settings::org_id)
                .do_update()
                .set(organisation_settings::require_two_factor.eq(on))
        )
        .map_err(db_error)?;
        Ok(())
    }
}
