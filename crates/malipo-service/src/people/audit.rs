//! The audit log as people read it: an organisation's on its "Audit log" page, every
//! organisation's for operators.

use malipo_auth::{OrgKind, Permission};
use malipo_core::AuditId;

use super::person::{People, SignedIn};
use crate::error::ServiceError;
use crate::page::{bad_cursor, Page};
use crate::ports::{AuditEntry, AuditFilter};
use crate::views::{OnAudit, View};

impl People<'_> {
    /// Audit entries matching `filter`, newest first: the person's organisation's only, unless
    /// they are an operator (who may read every organisation's, or one they name).
    ///
    /// # Errors
    /// [`ServiceError::Forbidden`] unless the role may read the audit log;
    /// [`ServiceError::Validation`] for a bad cursor.
    pub fn audit_log(
        &self,
        who: &SignedIn,
        filter: &AuditFilter,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<Page<AuditEntry>, ServiceError> {
        who.require(Permission::ViewAudit)?;
        let mut filter = filter.clone();
        if !(who.org.kind == OrgKind::Operator && who.may(Permission::BackOffice)) {
            filter.org_id = Some(who.org.id.clone());
        }
        let before = cursor.map(|c| AuditId::parse(c).map_err(|_| bad_cursor("cursor"))).transpose()?;
        let data = OnAudit::report(self.core.store(), |tx| Ok(tx.audit_entries(&filter, before.as_ref(), limit.saturating_add(1))?))?;
        Ok(Page::from_fetched(data, limit, |e| e.id.to_string()))
    }
}
