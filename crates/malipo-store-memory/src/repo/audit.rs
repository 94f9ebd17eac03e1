//! [`AuditRepo`] over the in-memory tables: the audit log, append-only (nothing here changes or
//! removes an entry).

use malipo_core::AuditId;
use malipo_service::{AuditEntry, AuditFilter, AuditRepo, StoreError};

use crate::tx::{check, foreign_key, MemoryTx};

/// Whether `entry` is one `filter` asks for.
fn matches(filter: &AuditFilter, entry: &AuditEntry) -> bool {
    filter.org_id.as_ref().is_none_or(|o| entry.org_id.as_ref() == Some(o))
        && filter.user_id.as_ref().is_none_or(|u| entry.user_id.as_ref() == Some(u))
        && filter.action.as_ref().is_none_or(|prefix| entry.action.starts_with(prefix.as_str()))
        && filter.from.is_none_or(|from| entry.created_at >= from)
        && filter.to.is_none_or(|to| entry.created_at < to)
}

impl AuditRepo for MemoryTx<'_> {
    fn append_audit(&mut self, entry: &AuditEntry) -> Result<(), StoreError> {
        let s = self.w()?;
        if s.audit.contains_key(&entry.id) {
            return Err(StoreError::Duplicate);
        }
        foreign_key(entry.org_id.as_ref().is_none_or(|o| s.orgs.contains_key(o)), "the audit entry's organisation")?;
        foreign_key(entry.user_id.as_ref().is_none_or(|u| s.users.contains_key(u)), "the audit entry's user")?;
        check(entry.id.as_str().starts_with(AuditId::PREFIX), "audit_log_id_prefix_check")?;
        s.audit.insert(entry.id.clone(), entry.clone());
        Ok(())
    }

    fn audit_entries(&mut self, filter: &AuditFilter, before: Option<&AuditId>, limit: usize) -> Result<Vec<AuditEntry>, StoreError> {
        let entries = &self.r().audit;
        let newest_first: Box<dyn Iterator<Item = &AuditEntry>> = match before {
            Some(before) => Box::new(entries.range(..before.clone()).rev().map(|(_, e)| e)),
            None => Box::new(entries.values().rev()),
        };
        Ok(newest_first.filter(|e| matches(filter, e)).take(limit).cloned().collect())
    }
}
