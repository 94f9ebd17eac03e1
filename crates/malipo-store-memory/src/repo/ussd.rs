//! [`UssdRepo`] over the in-memory tables.

use malipo_core::{Mode, OrgId, Timestamp};
use malipo_service::{StoreError, UssdRepo, UssdSession};

use crate::tx::{foreign_key, MemoryTx};

impl UssdRepo for MemoryTx<'_> {
    fn ussd_session(&mut self, org_id: &OrgId, mode: Mode, session_id: &str) -> Result<Option<UssdSession>, StoreError> {
        Ok(self.r().ussd_sessions.get(&(org_id.clone(), mode, session_id.to_owned())).cloned())
    }

    fn peek_ussd_session(&mut self, org_id: &OrgId, mode: Mode, session_id: &str) -> Result<Option<UssdSession>, StoreError> {
        self.ussd_session(org_id, mode, session_id)
    }

    fn swap_ussd_session(&mut self, seen: Option<&UssdSession>, next: &UssdSession) -> Result<bool, StoreError> {
        let key = (next.org_id.clone(), next.mode, next.session_id.clone());
        let stored = self.r().ussd_sessions.get(&key).map(|s| (s.hops, s.updated_at, s.last_screen.clone()));
        let free = match (seen, stored) {
            (None, None) => true,
            (Some(seen), Some(stored)) => stored == (seen.hops, seen.updated_at, seen.last_screen.clone()),
            _ => false,
        };
        if free {
            self.put_ussd_session(next)?;
        }
        Ok(free)
    }

    fn put_ussd_session(&mut self, session: &UssdSession) -> Result<(), StoreError> {
        let s = self.w()?;
        foreign_key(s.orgs.contains_key(&session.org_id), "the USSD session's organisation")?;
        s.ussd_sessions.insert((session.org_id.clone(), session.mode, session.session_id.clone()), session.clone());
        Ok(())
    }

    fn purge_ussd_sessions(&mut self, before: Timestamp) -> Result<u64, StoreError> {
        let s = self.w()?;
        let count = s.ussd_sessions.len();
        s.ussd_sessions.retain(|_, v| v.updated_at >= before);
        Ok(u64::try_from(count - s.ussd_sessions.len()).unwrap_or(u64::MAX))
    }
}
