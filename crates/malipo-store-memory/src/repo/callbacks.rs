//! [`CallbackRepo`] over the in-memory tables.

use malipo_core::{Mode, OrgId, Timestamp};
use malipo_service::{Callback, CallbackRepo, CallbackSecret, CallbackState, StoreError};

use crate::tx::{foreign_key, MemoryTx};

impl CallbackRepo for MemoryTx<'_> {
    fn insert_callback(&mut self, callback: &Callback) -> Result<(), StoreError> {
        let s = self.w()?;
        if s.callbacks.contains_key(&callback.id) {
            return Err(StoreError::Duplicate);
        }
        foreign_key(s.orgs.contains_key(&callback.org_id), "the callback's organisation")?;
        if (callback.state == CallbackState::Pending) != callback.next_attempt_at.is_some() {
            return Err(StoreError::Other("callbacks_next_attempt_check: a callback is due exactly while pending".into()));
        }
        s.callbacks.insert(callback.id.clone(), callback.clone());
        Ok(())
    }

    fn callbacks_due(&mut self, object_id: &str, now: Timestamp) -> Result<(), StoreError> {
        let s = self.w()?;
        for c in s.callbacks.values_mut().filter(|c| c.object_id == object_id && c.state == CallbackState::Waiting) {
            c.state = CallbackState::Pending;
            c.next_attempt_at = Some(now);
            c.updated_at = now;
        }
        Ok(())
    }

    fn claim_due_callbacks(&mut self, now: Timestamp, lease_until: Timestamp, limit: usize) -> Result<Vec<Callback>, StoreError> {
        let s = self.w()?;
        let mut due: Vec<(Timestamp, String)> = s
            .callbacks
            .values()
            .filter(|c| c.state == CallbackState::Pending)
            .filter_map(|c| c.next_attempt_at.filter(|at| *at <= now).map(|at| (at, c.id.clone())))
            .collect();
        due.sort();
        due.truncate(limit);
        let mut claimed = Vec::with_capacity(due.len());
        for (_, id) in due {
            if let Some(c) = s.callbacks.get_mut(&id) {
                c.next_attempt_at = Some(lease_until);
                claimed.push(c.clone());
            }
        }
        Ok(claimed)
    }

    fn lock_callbacks(&mut self, ids: &[String]) -> Result<Vec<Callback>, StoreError> {
        let s = self.r();
        let mut ids: Vec<&String> = ids.iter().collect();
        ids.sort();
        ids.dedup();
        Ok(ids.into_iter().filter_map(|id| s.callbacks.get(id).cloned()).collect())
    }

    fn update_callback(&mut self, callback: &Callback) -> Result<(), StoreError> {
        if (callback.state == CallbackState::Pending) != callback.next_attempt_at.is_some() {
            return Err(StoreError::Other("callbacks_next_attempt_check: a callback is due exactly while pending".into()));
        }
        let s = self.w()?;
        let Some(stored) = s.callbacks.get_mut(&callback.id) else {
            return Err(StoreError::Other(format!("no callback {} to update", callback.id)));
        };
        stored.state = callback.state;
        stored.attempts = callback.attempts;
        stored.next_attempt_at = callback.next_attempt_at;
        stored.last_status = callback.last_status;
        stored.last_error.clone_from(&callback.last_error);
        stored.updated_at = callback.updated_at;
        Ok(())
    }

    fn callbacks_of_object(&mut self, org_id: &OrgId, mode: Mode, object_id: &str) -> Result<Vec<Callback>, StoreError> {
        let mut found: Vec<Callback> =
            self.r().callbacks.values().filter(|c| &c.org_id == org_id && c.mode == mode && c.object_id == object_id).cloned().collect();
        found.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        Ok(found)
    }

    fn callback_secret(&mut self, org_id: &OrgId, mode: Mode) -> Result<Option<CallbackSecret>, StoreError> {
        Ok(self.r().callback_secrets.get(&(org_id.clone(), mode)).cloned())
    }

    fn insert_callback_secret(&mut self, secret: &CallbackSecret) -> Result<(), StoreError> {
        let s = self.w()?;
        let key = (secret.org_id.clone(), secret.mode);
        if s.callback_secrets.contains_key(&key) {
            return Err(StoreError::Duplicate);
        }
        foreign_key(s.orgs.contains_key(&secret.org_id), "the callback secret's organisation")?;
        s.callback_secrets.insert(key, secret.clone());
        Ok(())
    }

    fn update_callback_secret(&mut self, secret: &CallbackSecret) -> Result<(), StoreError> {
        let s = self.w()?;
        let Some(stored) = s.callback_secrets.get_mut(&(secret.org_id.clone(), secret.mode)) else {
            return Err(StoreError::Other(format!("no callback secret of {} to update", secret.org_id)));
        };
        stored.secret.clone_from(&secret.secret);
        stored.previous.clone_from(&secret.previous);
        stored.updated_at = secret.updated_at;
        Ok(())
    }

    fn purge_callbacks(&mut self, before: Timestamp) -> Result<u64, StoreError> {
        let s = self.w()?;
        let n = s.callbacks.len();
        s.callbacks.retain(|_, c| c.created_at >= before || matches!(c.state, CallbackState::Waiting | CallbackState::Pending));
        Ok(u64::try_from(n.saturating_sub(s.callbacks.len())).unwrap_or(u64::MAX))
    }
}
