//! [`AuditRepo`] on the transaction's connection: the audit log, append-only (its triggers
//! refuse any `UPDATE` or `DELETE`).

use diesel::dsl::sql;
use diesel::prelude::*;
use diesel::sql_types::{Bool, Integer, Text};
use malipo_core::AuditId;
use malipo_service::{AuditEntry, AuditFilter, AuditRepo, StoreError};

use crate::cached::written;
use crate::error::db_error;
use crate::rows::AuditRow;
use crate::schema::audit_log;
use crate::tx::{inserted, limit_i64, DieselTx};

impl AuditRepo for DieselTx<'_> {
    fn append_audit(&mut self, entry: &AuditEntry) -> Result<(), StoreError> {
        let row = AuditRow::from(entry);
        inserted(written!(&mut *self.conn, diesel::insert_into(audit_log::table).values(&row).on_conflict_do_nothing()))
    }

    fn audit_entries(&mut self, filter: &AuditFilter, before: Option<&AuditId>, limit: usize) -> Result<Vec<AuditEntry>, StoreError> {
        let mut query = audit_log::table.into_boxed();
        if let Some(org_id) = &filter.org_id {
            query = query.filter(audit_log::org_id.eq(org_id.as_str()));
        }
        if let Some(user_id) = &filter.user_id {
            query = query.filter(audit_log::user_id.eq(user_id.as_str()));
        }
        if let Some(prefix) = &filter.action {
            // A prefix compared exactly: LIKE would take `_` and `%` in it for wildcards, and on
            // SQLite ignore case.
            let chars = i32::try_from(prefix.chars().count()).unwrap_or(i32::MAX);
            query = query
                .filter(sql::<Bool>("substr(audit_log.action, 1, ").bind::<Integer, _>(chars).sql(") = ").bind::<Text, _>(prefix.clone()));
        }
        if let Some(from) = filter.from {
            query = query.filter(audit_log::created_at.ge(from.as_micros()));
        }
        if let Some(to) = filter.to {
            query = query.filter(audit_log::created_at.lt(to.as_micros()));
        }
        if let Some(before) = before {
            query = query.filter(audit_log::id.lt(before.as_str()));
        }
        query
            .order(audit_log::id.desc())
            .limit(limit_i64(limit))
            .select(AuditRow::as_select())
            .load(self.conn)
            .map_err(db_error)?
            .into_iter()
            .map(AuditEntry::try_from)
            .collect()
    }
}
