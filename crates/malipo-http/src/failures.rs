//! Failed token requests, limited per client id and per source address (contract section 2).
//!
//! Each failed client authentication at `/oauth/token` or `/oauth/revoke` takes one cell from the
//! client id's bucket and one from the source address's (IPv6 addresses by their /64, the block a
//! single host usually holds); a request that succeeds takes nothing. A bucket refills at its
//! rate per minute, and holds that many cells.
//!
//! - **An address** whose bucket is empty is refused with 429 `rate_limited` until its next cell
//!   is due, before its credentials are looked up: a flood from one place costs neither a
//!   database read nor a hash.
//! - **An address that goes on** after it is refused (a client that ignores `Retry-After`) has
//!   its refusals answered at once only as many times as its limit again; after that each
//!   refusal is held for [`HOLD`] (never past the refusal's end) before it is answered. A
//!   flooder that waits for its answers, as any client on a connection does, then sends one
//!   request a second per connection instead of tens of thousands, and the CPU it would have
//!   spent on 429s stays with everyone else. At most [`MAX_HELD`] answers are held at once,
//!   so a flood from more connections than that costs memory no further: the rest are answered
//!   at once.
//! - **A client id** whose bucket is empty has its failures answered 429 instead of 401, but its
//!   right secret still gets a token: anyone who knows a client id (it is not a secret) could
//!   otherwise lock its integrator out of tokens by failing on purpose. Checking a secret costs
//!   microseconds, so checking it under a flood is no burden.
//!
//! The buckets live in each instance's memory, like the per-credential request buckets (see
//! `docs/api-decisions.md`, "Rate limits across instances").

use std::collections::HashMap;
use std::hash::Hash;
use std::net::IpAddr;
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use governor::clock::{Clock, DefaultClock};
use governor::state::keyed::DefaultKeyedStateStore;
use governor::{Quota, RateLimiter};

type Buckets<K> = RateLimiter<K, DefaultKeyedStateStore<K>, DefaultClock>;

/// How long a refusal is held once the address has had its prompt refusals.
pub const HOLD: Duration = Duration::from_secs(1);

/// How long after its refusal's end an address's count of refusals is remembered.
const REMEMBER: Duration = Duration::from_secs(60);

/// Refusals held at once, over every address; more are answered at once.
pub const MAX_HELD: usize = 4096;

/// Failures between two sweeps of buckets back at full capacity and of lapsed refusals.
const SWEEP_EVERY: u64 = 4096;

/// The time until `key`'s next cell when its bucket is empty (taking a cell otherwise).
fn take<K: Hash + Eq + Clone>(buckets: &Buckets<K>, key: &K) -> Option<Duration> {
    let not_until = buckets.check_key(key).err()?;
    Some(not_until.wait_time_from(DefaultClock::default().now()))
}

fn buckets<K: Hash + Eq + Clone>(per_minute: u32) -> Buckets<K> {
    RateLimiter::keyed(Quota::per_minute(NonZeroU32::new(per_minute.max(1)).unwrap_or(NonZeroU32::MIN)))
}

/// Whole seconds to wait, at least 1 (`Retry-After`).
fn seconds(d: Duration) -> u64 {
    d.as_secs_f64().ceil().max(1.0) as u64
}

/// The failure limits of the token and revoke endpoints.
pub struct FailureLimits {
    per_client: u32,
    per_address: u32,
    clients: Buckets<String>,
    addresses: Buckets<IpAddr>,
    /// Addresses refused, until when and how often since.
    refused: Mutex<HashMap<IpAddr, Refusing>>,
    failures: AtomicU64,
    held: AtomicUsize,
}

/// An address's refusal: until when, and how many requests it has refused.
#[derive(Debug, Clone, Copy)]
struct Refusing {
    until: Instant,
    answered: u32,
}

/// A refused request: the seconds to wait (at least 1, `Retry-After`), and how long to hold
/// the answer first, with a place among the answers held at once (`None`: answer at once).
#[derive(Debug)]
pub struct Refusal<'a> {
    pub wait: u64,
    pub hold: Option<(Duration, Held<'a>)>,
}

/// A place among the refusals held at once, given back when dropped (the answer is sent or
/// its client went away).
#[derive(Debug)]
pub struct Held<'a>(&'a AtomicUsize);

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl std::fmt::Debug for FailureLimits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FailureLimits").field("per_client", &self.per_client).field("per_address", &self.per_address).finish()
    }
}

/// The address as its bucket's key: IPv4 whole, IPv6 by its /64 (an IPv4-mapped IPv6 address
/// is its IPv4 address).
fn address_key(addr: IpAddr) -> IpAddr {
    match addr {
        IpAddr::V4(_) => addr,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6((u128::from(v6) & !((1u128 << 64) - 1)).into()),
        },
    }
}

impl FailureLimits {
    /// Up to `per_client` failures a minute per client id and `per_address` per source address
    /// (each at least 1), each also the burst.
    pub fn new(per_client: u32, per_address: u32) -> Self {
        FailureLimits {
            per_client,
            per_address,
            clients: buckets(per_client),
            addresses: buckets(per_address),
            refused: Mutex::new(HashMap::new()),
            failures: AtomicU64::new(0),
            held: AtomicUsize::new(0),
        }
    }

    fn refusals(&self) -> std::sync::MutexGuard<'_, HashMap<IpAddr, Refusing>> {
        self.refused.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The refusal when the address is refused now (counting it).
    pub fn refused(&self, addr: Option<IpAddr>) -> Option<Refusal<'_>> {
        let key = address_key(addr?);
        let (left, answered) = {
            let mut refusals = self.refusals();
            let refusing = refusals.get_mut(&key)?;
            let left = refusing.until.checked_duration_since(Instant::now()).filter(|d| !d.is_zero())?;
            refusing.answered = refusing.answered.saturating_add(1);
            (left, refusing.answered)
        };
        let hold = (answered > self.per_address).then(|| self.take_place()).flatten().map(|place| (HOLD.min(left), place));
        Some(Refusal { wait: seconds(left), hold })
    }

    /// A place among the refusals held at once, if one is free.
    fn take_place(&self) -> Option<Held<'_>> {
        self.held.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| (n < MAX_HELD).then_some(n + 1)).ok()?;
        Some(Held(&self.held))
    }

    /// Counts a failed client authentication against the client id and the address: the
    /// seconds to wait when it was one too many for either (the address is then refused for
    /// that long).
    pub fn failed(&self, client_id: &str, addr: Option<IpAddr>) -> Option<u64> {
        let now = Instant::now();
        let by_client = take(&self.clients, &client_id.to_owned());
        let by_address = addr.map(address_key).and_then(|key| {
            let wait = take(&self.addresses, &key)?;
            // An address refused again within a minute of its last refusal's end keeps the
            // count of refusals it was answered, so a flood that goes on is not given its
            // prompt refusals again every time a cell comes due.
            let mut refusals = self.refusals();
            let answered = refusals.get(&key).filter(|r| r.until + REMEMBER > now).map_or(0, |r| r.answered);
            refusals.insert(key, Refusing { until: now + wait, answered });
            Some(wait)
        });
        if self.failures.fetch_add(1, Ordering::Relaxed) % SWEEP_EVERY == SWEEP_EVERY - 1 {
            self.sweep(now);
        }
        by_client.max(by_address).map(seconds)
    }

    /// Forgets buckets back at full capacity and refusals that lapsed over [`REMEMBER`] ago.
    fn sweep(&self, now: Instant) {
        self.clients.retain_recent();
        self.clients.shrink_to_fit();
        self.addresses.retain_recent();
        self.addresses.shrink_to_fit();
        let mut refused = self.refusals();
        refused.retain(|_, r| r.until + REMEMBER > now);
        refused.shrink_to_fit();
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    const HOME: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(192, 0, 2, 1));
    const AWAY: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(198, 51, 100, 7));

    #[test]
    fn a_client_ids_failures_past_its_limit_are_answered_with_a_wait() {
        let limits = FailureLimits::new(3, 1000);
        for _ in 0..3 {
            assert_eq!(limits.failed("cli_a", Some(HOME)), None);
        }
        let wait = limits.failed("cli_a", Some(AWAY)).expect("one failure too many, from any address");
        assert!((1..=20).contains(&wait), "{wait}");
        assert_eq!(limits.failed("cli_b", Some(HOME)), None, "another client id has its own bucket");
        assert!(limits.refused(Some(HOME)).is_none(), "a client id's failures do not refuse its addresses");
    }

    #[test]
    fn an_address_is_refused_whatever_client_id_it_tries() {
        let limits = FailureLimits::new(1000, 4);
        for i in 0..4 {
            assert_eq!(limits.failed(&format!("cli_{i}"), Some(AWAY)), None);
            assert!(limits.refused(Some(AWAY)).is_none());
        }
        let first = limits.failed("cli_4", Some(AWAY)).expect("one failure too many");
        let wait = limits.refused(Some(AWAY)).expect("refused from now on").wait;
        assert!((1..=15).contains(&wait) && wait <= first, "{wait} {first}");
        assert!(limits.refused(Some(HOME)).is_none());
        assert!(limits.refused(None).is_none());
    }

    #[test]
    fn ipv6_hosts_share_their_64_and_mapped_ipv4_is_ipv4() {
        let limits = FailureLimits::new(1000, 2);
        let a: IpAddr = "2001:db8:1:2::10".parse().unwrap();
        let b: IpAddr = "2001:db8:1:2:ffff::1".parse().unwrap();
        let other: IpAddr = "2001:db8:1:3::10".parse().unwrap();
        for _ in 0..3 {
            let _ = limits.failed("cli_x", Some(a));
        }
        assert!(limits.refused(Some(b)).is_some(), "same /64");
        assert!(limits.refused(Some(other)).is_none(), "another /64");
        assert_eq!(address_key("::ffff:192.0.2.1".parse().unwrap()), HOME);
    }

    #[test]
    fn sweeping_keeps_current_refusals() {
        let limits = FailureLimits::new(1_000_000, 1);
        assert_eq!(limits.failed("cli_a", Some(AWAY)), None);
        assert!(limits.failed("cli_a", Some(AWAY)).is_some());
        for i in 0..SWEEP_EVERY {
            let _ = limits.failed(&format!("cli_{i}"), None);
        }
        assert!(limits.refused(Some(AWAY)).is_some(), "a sweep must not lift a refusal that has not lapsed");
    }

    #[test]
    fn an_address_that_goes_on_after_its_refusal_has_its_answers_held() {
        let limits = FailureLimits::new(1000, 3);
        for _ in 0..3 {
            assert_eq!(limits.failed("cli_a", Some(AWAY)), None);
        }
        assert!(limits.failed("cli_a", Some(AWAY)).is_some());
        // As many refusals as its limit are answered at once, then each is held.
        for i in 0..3 {
            let r = limits.refused(Some(AWAY)).expect("refused");
            assert!(r.hold.is_none(), "refusal {i} is answered at once");
        }
        let held = limits.refused(Some(AWAY)).expect("refused");
        let (hold, _place) = held.hold.as_ref().expect("the fourth refusal is held");
        assert!(*hold <= HOLD && !hold.is_zero(), "{hold:?}");
        assert_eq!(limits.held.load(Ordering::Relaxed), 1);
        drop(held);
        assert_eq!(limits.held.load(Ordering::Relaxed), 0, "an answer sent gives its place back");
        // Refused again after its refusal lapses (its next cell came due), it is held at once.
        let again = FailureLimits::new(1000, 1);
        assert_eq!(again.failed("cli_a", Some(AWAY)), None);
        assert!(again.failed("cli_a", Some(AWAY)).is_some());
        assert!(again.refused(Some(AWAY)).expect("refused").hold.is_none());
        assert!(again.refused(Some(AWAY)).expect("refused").hold.is_some());
        again.refusals().get_mut(&AWAY).expect("refusing").until = Instant::now();
        assert!(again.refused(Some(AWAY)).is_none(), "lapsed");
        assert!(again.failed("cli_a", Some(AWAY)).is_some(), "its bucket is still empty");
        assert!(again.refused(Some(AWAY)).expect("refused").hold.is_some(), "its count was kept");
        // Another address's first refusals are its own.
        for _ in 0..4 {
            let _ = limits.failed("cli_b", Some(HOME));
        }
        assert!(limits.refused(Some(HOME)).expect("refused").hold.is_none());
    }

    #[test]
    fn at_most_max_held_refusals_are_held_at_once() {
        let limits = FailureLimits::new(1000, 1);
        for _ in 0..2 {
            let _ = limits.failed("cli_a", Some(AWAY));
        }
        let _prompt = limits.refused(Some(AWAY)).expect("refused");
        let held: Vec<_> = (0..MAX_HELD).map(|_| limits.refused(Some(AWAY)).expect("refused")).collect();
        assert!(held.iter().all(|r| r.hold.is_some()));
        assert!(limits.refused(Some(AWAY)).expect("refused").hold.is_none(), "no place is free: answered at once");
        drop(held);
        assert!(limits.refused(Some(AWAY)).expect("refused").hold.is_some(), "places given back");
    }
}
