//! [`SessionRepo`] over the in-memory tables: console sessions and the sign-in failure counts.
//! Transactions here serialise on the store's lock, so a locked count is the transaction's until
//! it ends, as the SQL adapters' row lock makes it.

use malipo_auth::{ConsoleSession, Failures};
use malipo_core::{Mode, Timestamp, UserId};
use malipo_service::{SessionRepo, StoreError};

use crate::tx::{check, foreign_key, MemoryTx};

impl SessionRepo for MemoryTx<'_> {
    fn insert_session(&mut self, session: &ConsoleSession) -> Result<(), StoreError> {
        let s = self.w()?;
        if s.console_sessions.contains_key(&session.digest) {
            return Err(StoreError::Duplicate);
        }
        foreign_key(s.users.contains_key(&session.user_id), "the session's user")?;
        check(session.expires_at > session.created_at && session.last_seen_at >= session.created_at, "console_sessions_times_check")?;
        s.console_sessions.insert(session.digest.clone(), session.clone());
        Ok(())
    }

    fn session(&mut self, digest: &str) -> Result<Option<ConsoleSession>, StoreError> {
        Ok(self.r().console_sessions.get(digest).cloned())
    }

    fn touch_session(&mut self, digest: &str, now: Timestamp) -> Result<(), StoreError> {
        let s = self.w()?;
        if let Some(session) = s.console_sessions.get_mut(digest) {
            // A request's time never goes back.
            session.last_seen_at = session.last_seen_at.max(now);
        }
        Ok(())
    }

    fn set_session_mode(&mut self, digest: &str, mode: Mode) -> Result<bool, StoreError> {
        let s = self.w()?;
        Ok(s.console_sessions.get_mut(digest).map(|session| session.mode = mode).is_some())
    }

    fn delete_session(&mut self, digest: &str) -> Result<bool, StoreError> {
        Ok(self.w()?.console_sessions.remove(digest).is_some())
    }

    fn delete_user_sessions(&mut self, user_id: &UserId) -> Result<usize, StoreError> {
        let s = self.w()?;
        let before = s.console_sessions.len();
        s.console_sessions.retain(|_, session| &session.user_id != user_id);
        Ok(before - s.console_sessions.len())
    }

    fn purge_sessions(&mut self, ended_before: Timestamp, idle_before: Timestamp) -> Result<usize, StoreError> {
        let s = self.w()?;
        let before = s.console_sessions.len();
        s.console_sessions.retain(|_, session| session.expires_at >= ended_before && session.last_seen_at >= idle_before);
        Ok(before - s.console_sessions.len())
    }

    fn purge_failures(&mut self, window_before: Timestamp, now: Timestamp) -> Result<usize, StoreError> {
        let s = self.w()?;
        let before = s.failures.len();
        s.failures.retain(|_, f| f.window_start >= window_before || f.locked(now).is_some());
        Ok(before - s.failures.len())
    }

    fn failures(&mut self, subject: &str) -> Result<Option<Failures>, StoreError> {
        Ok(self.r().failures.get(subject).copied())
    }

    fn lock_failures(&mut self, subject: &str, now: Timestamp) -> Result<Failures, StoreError> {
        let s = self.w()?;
        let fresh = Failures { window_start: now, count: 0, locked_until: None };
        Ok(*s.failures.entry(subject.to_owned()).or_insert(fresh))
    }

    fn put_failures(&mut self, subject: &str, failures: &Failures) -> Result<(), StoreError> {
        let s = self.w()?;
        check(i32::try_from(failures.count).is_ok(), "sign_in_failures_count_check")?;
        s.failures.insert(subject.to_owned(), *failures);
        Ok(())
    }

    fn clear_failures(&mut self, subject: &str) -> Result<(), StoreError> {
        self.w()?.failures.remove(subject);
        Ok(())
    }
}
