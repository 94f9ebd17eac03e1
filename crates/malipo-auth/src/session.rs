//! Console sessions and the sign-in failure limits (console contract section 2).
//!
//! A session is a random token in a cookie; the database keeps only its digest, so a leaked
//! database yields no usable session. It ends after [`IDLE_SECONDS`] without a request or
//! [`ABSOLUTE_SECONDS`] after sign-in, whichever comes first.

use std::net::IpAddr;

use malipo_core::{Mode, Timestamp, UserId};

/// A session ends after this long without a request.
pub const IDLE_SECONDS: i64 = 30 * 60;
/// A session ends this long after sign-in, however busy.
pub const ABSOLUTE_SECONDS: i64 = 12 * 60 * 60;
/// A sign-in waiting for its second factor ends after this long.
pub const SECOND_FACTOR_SECONDS: i64 = 5 * 60;
/// A session's last request is written at most this often (every request would be a write).
pub const TOUCH_EVERY_SECONDS: i64 = 60;

/// Where a sign-in has got to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SessionStage {
    /// The password was right; the second factor is awaited (nothing else is open).
    SecondFactor,
    /// Signed in.
    Active,
}

impl SessionStage {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            SessionStage::SecondFactor => "second_factor",
            SessionStage::Active => "active",
        }
    }

    /// From the stored name.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "second_factor" => Some(SessionStage::SecondFactor),
            "active" => Some(SessionStage::Active),
            _ => None,
        }
    }
}

/// A session as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConsoleSession {
    /// SHA-256 hex of the token.
    pub digest: String,
    /// Whose.
    pub user_id: UserId,
    /// Where the sign-in has got to.
    pub stage: SessionStage,
    /// The mode every page shows and acts on ("Test mode").
    pub mode: Mode,
    /// When signed in.
    pub created_at: Timestamp,
    /// The last request (written at most every [`TOUCH_EVERY_SECONDS`]).
    pub last_seen_at: Timestamp,
    /// When it ends whatever happens.
    pub expires_at: Timestamp,
    /// The address it was signed in from.
    pub ip: String,
}

impl ConsoleSession {
    /// A new session of `user_id` at `now`, ending at the absolute timeout (or, waiting for the
    /// second factor, after [`SECOND_FACTOR_SECONDS`]).
    pub fn new(digest: String, user_id: UserId, stage: SessionStage, mode: Mode, now: Timestamp, ip: String) -> Self {
        let lifetime = match stage {
            SessionStage::SecondFactor => SECOND_FACTOR_SECONDS,
            SessionStage::Active => ABSOLUTE_SECONDS,
        };
        ConsoleSession { digest, user_id, stage, mode, created_at: now, last_seen_at: now, expires_at: now.plus_seconds(lifetime), ip }
    }

    /// Whether the session still works at `now`.
    pub fn is_live(&self, now: Timestamp) -> bool {
        now < self.expires_at && now < self.last_seen_at.plus_seconds(IDLE_SECONDS)
    }

    /// Whether a request at `now` should write the session's last request.
    pub fn needs_touch(&self, now: Timestamp) -> bool {
        now >= self.last_seen_at.plus_seconds(TOUCH_EVERY_SECONDS)
    }
}

/// A new session token (~256 bits).
pub fn generate_session_token() -> String {
    format!("mls_{}", crate::secret::random_alnum(43))
}

/// Failed sign-ins counted within this window.
pub const FAILURE_WINDOW_SECONDS: i64 = 15 * 60;
/// How long a locked account or address waits.
pub const LOCK_SECONDS: i64 = 15 * 60;
/// Failures of one account within the window that lock it.
pub const ACCOUNT_FAILURES: u32 = 10;
/// Failures from one address within the window that lock it.
pub const ADDRESS_FAILURES: u32 = 100;

/// What is counted: one account (by its email as compared, known or not, so that an unknown
/// email answers as a known one does) or one source address (IPv6 by its /64).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Subject {
    /// An email as compared.
    Account(String),
    /// A source address.
    Address(IpAddr),
}

impl Subject {
    /// The stored key: `account:<email>` or `address:<ip>` (an IPv6 address cut to its /64, the
    /// block one host usually holds).
    pub fn key(&self) -> String {
        match self {
            Subject::Account(email) => format!("account:{email}"),
            Subject::Address(IpAddr::V4(a)) => format!("address:{a}"),
            Subject::Address(IpAddr::V6(a)) => {
                let s = a.segments();
                format!("address:{:x}:{:x}:{:x}:{:x}::/64", s[0], s[1], s[2], s[3])
            }
        }
    }

    /// Failures within the window that lock this subject.
    pub fn limit(&self) -> u32 {
        match self {
            Subject::Account(_) => ACCOUNT_FAILURES,
            Subject::Address(_) => ADDRESS_FAILURES,
        }
    }
}

/// A subject's failures as stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Failures {
    /// When the current window began.
    pub window_start: Timestamp,
    /// Attempts counted in it (an attempt counts from its start; a success gives it back).
    pub count: u32,
    /// Locked until then.
    pub locked_until: Option<Timestamp>,
}

impl Failures {
    /// Whether the subject is locked at `now`; if so, until when.
    pub fn locked(&self, now: Timestamp) -> Option<Timestamp> {
        self.locked_until.filter(|until| *until > now)
    }

    /// One more attempt at `now` against `limit`: refused (with the end of the lock) while the
    /// subject is locked, counted otherwise. A window older than [`FAILURE_WINDOW_SECONDS`]
    /// starts again; the attempt that reaches the limit is still judged, and locks the subject
    /// for [`LOCK_SECONDS`] unless it succeeds.
    ///
    /// # Errors
    /// The time the lock ends.
    pub fn attempt(previous: Option<Failures>, now: Timestamp, limit: u32) -> Result<Failures, Timestamp> {
        match previous {
            Some(p) => match p.locked(now) {
                Some(until) => Err(until),
                None if now < p.window_start.plus_seconds(FAILURE_WINDOW_SECONDS) => {
                    Ok(Failures::counted(p.window_start, p.count, now, limit))
                }
                None => Ok(Failures::counted(now, 0, now, limit)),
            },
            None => Ok(Failures::counted(now, 0, now, limit)),
        }
    }

    fn counted(window_start: Timestamp, before: u32, now: Timestamp, limit: u32) -> Failures {
        let count = before.saturating_add(1);
        Failures { window_start, count, locked_until: (count >= limit).then(|| now.plus_seconds(LOCK_SECONDS)) }
    }

    /// The count after the attempt turned out to be a success: the attempt is given back, and
    /// so is the lock it set.
    pub fn succeeded(self, limit: u32) -> Failures {
        let count = self.count.saturating_sub(1);
        Failures { count, locked_until: self.locked_until.filter(|_| count >= limit), ..self }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: i64) -> Timestamp {
        Timestamp::from_micros(s * 1_000_000)
    }

    #[test]
    fn sessions_end_when_idle_or_at_the_absolute_timeout() {
        let s = ConsoleSession::new("d".into(), UserId::new(), SessionStage::Active, Mode::Test, t(0), "127.0.0.1".into());
        assert!(s.is_live(t(IDLE_SECONDS - 1)));
        assert!(!s.is_live(t(IDLE_SECONDS)), "idle for 30 minutes");
        let busy = ConsoleSession { last_seen_at: t(ABSOLUTE_SECONDS - 10), ..s.clone() };
        assert!(busy.is_live(t(ABSOLUTE_SECONDS - 1)));
        assert!(!busy.is_live(t(ABSOLUTE_SECONDS)), "12 hours after sign-in, however busy");
        assert!(!s.needs_touch(t(59)) && s.needs_touch(t(60)));
        let waiting = ConsoleSession::new("d".into(), UserId::new(), SessionStage::SecondFactor, Mode::Test, t(0), "ip".into());
        assert!(!waiting.is_live(t(SECOND_FACTOR_SECONDS)));
    }

    #[test]
    fn ten_failures_lock_an_account_for_fifteen_minutes() {
        let mut f = None;
        for i in 0..9 {
            let next = Failures::attempt(f, t(i), ACCOUNT_FAILURES);
            assert_eq!(next.map(|n| n.locked(t(i))), Ok(None), "attempt {}", i + 1);
            f = next.ok();
        }
        let tenth = Failures::attempt(f, t(9), ACCOUNT_FAILURES).unwrap_or(Failures { window_start: t(0), count: 0, locked_until: None });
        assert_eq!(tenth.locked(t(9)), Some(t(9 + LOCK_SECONDS)), "the tenth failure locks");
        assert_eq!(Failures::attempt(Some(tenth), t(100), ACCOUNT_FAILURES), Err(t(9 + LOCK_SECONDS)), "refused while locked");
        assert_eq!(tenth.locked(t(9 + LOCK_SECONDS)), None, "then it may try again");
        let after = Failures::attempt(Some(tenth), t(9 + LOCK_SECONDS), ACCOUNT_FAILURES);
        assert_eq!(after.map(|a| (a.count, a.locked_until)), Ok((1, None)), "a new window");
    }

    #[test]
    fn failures_spread_over_more_than_the_window_never_lock_and_successes_give_theirs_back() {
        let mut f = None;
        for i in 0..30 {
            let next = Failures::attempt(f, t(i * 100), ACCOUNT_FAILURES);
            assert_eq!(next.map(|n| n.locked(t(i * 100))), Ok(None), "attempt {i}: at most 9 fall in one window");
            f = next.ok();
        }
        let nine = Failures { window_start: t(0), count: 9, locked_until: None };
        let tenth = Failures::attempt(Some(nine), t(1), ACCOUNT_FAILURES).unwrap_or(nine);
        assert!(tenth.locked(t(1)).is_some());
        assert_eq!(tenth.succeeded(ACCOUNT_FAILURES), nine, "a tenth attempt that succeeds gives its count and lock back");
        assert_eq!(Failures { count: 3, ..nine }.succeeded(ACCOUNT_FAILURES).count, 2);
    }

    #[test]
    fn subjects_key_accounts_and_addresses_ipv6_by_64() {
        assert_eq!(Subject::Account("a@b.c".into()).key(), "account:a@b.c");
        let v4: IpAddr = "203.0.113.7".parse().unwrap_or(IpAddr::from([0, 0, 0, 0]));
        assert_eq!(Subject::Address(v4).key(), "address:203.0.113.7");
        let a: IpAddr = "2001:db8:1:2:aaaa::1".parse().unwrap_or(v4);
        let b: IpAddr = "2001:db8:1:2:bbbb::9".parse().unwrap_or(v4);
        assert_eq!(Subject::Address(a).key(), Subject::Address(b).key());
        assert_eq!(Subject::Address(a).key(), "address:2001:db8:1:2::/64");
        assert_eq!(Subject::Address(a).limit(), 100);
    }
}
