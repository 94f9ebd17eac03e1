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
/// Failures of one account from one address within the window that lock the account there.
pub const ACCOUNT_FAILURES: u32 = 10;
/// Failures from one address within the window, over every account, that lock the address.
pub const ADDRESS_FAILURES: u32 = 100;
/// Failures of one account from every address within the window that lock it for browsers that
/// have not signed in as its person before (the brake on a guesser with many addresses).
pub const ACCOUNT_BRAKE: u32 = 50;

/// What is counted. An attempt at an account counts against the account from its address, the
/// address, and (unless the browser signed in as the account's person before) the account from
/// everywhere: so failures from an attacker's addresses lock the account at those addresses
/// only, and the brake on the account as a whole, reached only from many addresses, still lets
/// its person in from a browser they used before.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Subject {
    /// An email as compared (known or not, so that an unknown email answers as a known one
    /// does), tried from one address.
    AccountAt(String, IpAddr),
    /// A source address.
    Address(IpAddr),
    /// An email as compared, tried from anywhere: the brake.
    Account(String),
}

/// The address a request came from: the connection's peer; or, behind a reverse proxy the
/// operator trusts (`trust_proxy`), the last address of its `X-Forwarded-For`, the one that
/// proxy appended (those before it are whatever the client sent). A header that does not end in
/// an address leaves the peer.
pub fn source_address(peer: IpAddr, forwarded_for: Option<&str>, trust_proxy: bool) -> IpAddr {
    if !trust_proxy {
        return peer;
    }
    let last = forwarded_for.and_then(|v| v.rsplit(',').next()).map(str::trim).unwrap_or_default();
    // An IPv6 address may come bracketed, with or without a port; an IPv4 one with a port.
    let bare = last.strip_prefix('[').and_then(|r| r.split_once(']')).map_or(last, |(a, _)| a);
    bare.parse()
        .ok()
        .or_else(|| bare.rsplit_once(':').and_then(|(a, _)| a.parse::<std::net::Ipv4Addr>().ok()).map(IpAddr::V4))
        .unwrap_or(peer)
}

/// A source address as counted: IPv4 whole, IPv6 cut to its /64 (the block one host usually
/// holds).
fn address_key(address: IpAddr) -> String {
    match address {
        IpAddr::V4(a) => a.to_string(),
        IpAddr::V6(a) => {
            let s = a.segments();
            format!("{:x}:{:x}:{:x}:{:x}::/64", s[0], s[1], s[2], s[3])
        }
    }
}

impl Subject {
    /// The stored key: `account-at:<address>:<email>`, `address:<address>` or `account:<email>`
    /// (three prefixes, so that no typed email makes one kind's key another's).
    pub fn key(&self) -> String {
        match self {
            Subject::AccountAt(email, address) => format!("account-at:{}:{email}", address_key(*address)),
            Subject::Address(address) => format!("address:{}", address_key(*address)),
            Subject::Account(email) => format!("account:{email}"),
        }
    }

    /// Failures within the window that lock this subject.
    pub fn limit(&self) -> u32 {
        match self {
            Subject::AccountAt(..) => ACCOUNT_FAILURES,
            Subject::Address(_) => ADDRESS_FAILURES,
            Subject::Account(_) => ACCOUNT_BRAKE,
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
    fn the_source_is_the_peer_unless_a_trusted_proxy_says_whom_it_forwards() {
        let peer: IpAddr = "10.0.0.2".parse().unwrap_or(IpAddr::from([0, 0, 0, 0]));
        let client: IpAddr = "198.51.100.7".parse().unwrap_or(peer);
        assert_eq!(source_address(peer, Some("198.51.100.7"), false), peer, "not trusted: the header is the client's say");
        assert_eq!(source_address(peer, Some("198.51.100.7"), true), client);
        assert_eq!(source_address(peer, Some("1.2.3.4, 198.51.100.7"), true), client, "the proxy's own entry, not the client's");
        assert_eq!(source_address(peer, Some("198.51.100.7:5050"), true), client);
        let v6: IpAddr = "2001:db8::1".parse().unwrap_or(peer);
        assert_eq!(source_address(peer, Some("[2001:db8::1]:443"), true), v6);
        assert_eq!(source_address(peer, Some("2001:db8::1"), true), v6);
        assert_eq!(source_address(peer, Some("unknown"), true), peer);
        assert_eq!(source_address(peer, None, true), peer);
    }

    #[test]
    fn subjects_key_accounts_and_addresses_ipv6_by_64() {
        let v4: IpAddr = "203.0.113.7".parse().unwrap_or(IpAddr::from([0, 0, 0, 0]));
        assert_eq!(Subject::Account("a@b.c".into()).key(), "account:a@b.c");
        assert_eq!(Subject::AccountAt("a@b.c".into(), v4).key(), "account-at:203.0.113.7:a@b.c");
        assert_eq!(Subject::Address(v4).key(), "address:203.0.113.7");
        let a: IpAddr = "2001:db8:1:2:aaaa::1".parse().unwrap_or(v4);
        let b: IpAddr = "2001:db8:1:2:bbbb::9".parse().unwrap_or(v4);
        assert_eq!(Subject::Address(a).key(), Subject::Address(b).key());
        assert_eq!(Subject::Address(a).key(), "address:2001:db8:1:2::/64");
        assert_eq!(Subject::AccountAt("a@b.c".into(), a).key(), "account-at:2001:db8:1:2::/64:a@b.c");
        let limits = [Subject::AccountAt("a@b.c".into(), a).limit(), Subject::Address(a).limit(), Subject::Account("a@b.c".into()).limit()];
        assert_eq!(limits, [10, 100, 50]);
    }
}
