//! Who is who: the names of an organisation's people, for pages that name the person behind
//! an object (a batch's maker and checker) instead of their `usr_` id.

use malipo_auth::Permission;
use malipo_core::UserId;

use super::person::{People, SignedIn};
use crate::error::ServiceError;
use crate::views::{OnUsers, View};

impl People<'_> {
    /// Every person of `who`'s organisation (removed ones too: they still made what they
    /// made) with their display name, or their email where they gave no name.
    ///
    /// # Errors
    /// [`ServiceError::Forbidden`] unless the role may read the organisation's objects.
    pub fn names(&self, who: &SignedIn) -> Result<Vec<(UserId, String)>, ServiceError> {
        who.require(Permission::Read)?;
        let all = OnUsers::read(self.core.store(), |tx| Ok(tx.users_of_org(&who.org.id)?))?;
        Ok(all.into_iter().map(|u| (u.id, if u.name.is_empty() { u.email } else { u.name })).collect())
    }
}
