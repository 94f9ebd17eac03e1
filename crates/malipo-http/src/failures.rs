//! Failed token requests, limited per client id and per source address (contract section 2).
//!
//! Credentials are always checked first: a right client id and secret gets its token (or its
//! revocation) whatever came before it from its client id or its address, and is never held.
//! Integrators share egress addresses (a NAT gateway, a hosting platform), so a limit that
//! refused an address before its credentials were looked up would let one tenant's attacker
//! lock the others out; checking a secret costs one read and one keyed hash.
//! Only failures are limited and slowed:
//!
//! - Each failed client authentication at `/oauth/token` or `/oauth/revoke` takes one cell from
//!   the client id's bucket and one from the source address's (IPv6 addresses by their /64, the
//!   block a single host usually holds); a request that succeeds takes nothing. A bucket refills
//!   at its rate per minute, and holds that many cells. A failure that finds either bucket empty
//!   is answered 429 `rate_limited` with `Retry-After` (the seconds until the later of the empty
//!   buckets' next cells) instead of 401, and an empty address bucket marks the address refused until then.
//! - **An address that goes on** failing while refused (a client that ignores `Retry-After`)
//!   has as many of its 429s answered at once as its limit; after that each is held for [`HOLD`]
//!   (never past the refusal's end) before it is sent. A flooder that waits for its answers, as
//!   any client on a connection does, then sends one request a second per connection instead of
//!   thousands, so its checks cost next to nothing. At most [`MAX_HELD`] answers are held at once,
//!   so a flood from more connections than that costs memory no further: the rest are answered
//!   at once.
//! - **Checks from a refused address** wait for one of [`REFUSED_CHECKS`] turns shared by every
//!   refused address, so that however many connections a flood uses (past [`MAX_HELD`] too), it
//!   takes at most that many blocking threads and database connections at once, and requests
//!   from other addresses never queue behind it. A right credential from a refused address takes
//!   its turn like any request from there: it is never held, it may wait behind the checks of
//!   the flood's requests that are not held.
//! - **A client id** whose bucket is empty has its failures answered 429 instead of 401; its
//!   right secret still gets a token, since anyone who knows a client id (it is not a secret)
//!   could otherwise lock its integrator out by failing on purpose.
//!
//! The buckets live in each instance's memory, like the per-credential request buckets (see
//! `docs/api-decisions.md`, "Rate limits across instances"), swept of idle entries every
//! 4,096 failures.

use std::collections::HashMap;
use std::hash::Hash;
use std::net::IpAddr;
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use governor::clock::{Clock, DefaultClock};
use governor::state::keyed::DefaultKeyedStateStore;
use governor::{Quota, RateLimiter};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

type Buckets<K> = RateLimiter<K, DefaultKeyedStateStore<K>, DefaultClock>;

/// How long a 429 is held once the refused address has had its prompt ones.
pub const HOLD: Duration = Duration::from_secs(1);

/// How long after its refusal's end an address's count of 429s is remembered.
const REMEMBER: Duration = Duration::from_secs(60);

/// 429s held at once, over every address; more are answered at once.
pub const MAX_HELD: usize = 4096;

/// Credentials from refused addresses checked at once, over every such address.
pub const REFUSED_CHECKS: usize = 1;

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
    /// Addresses refused, until when and how many 429s since.
    refused: Mutex<HashMap<IpAddr, Refusing>>,
    failures: AtomicU64,
    held: AtomicUsize,
    /// The turns of checks from refused addresses.
    turns: Arc<Semaphore>,
}

/// An address's refusal: until when, and how many of its failures it has answered 429.
#[derive(Debug, Clone, Copy)]
struct Refusing {
    until: Instant,
    answered: u32,
}

/// A failure answered 429: the seconds to wait (at least 1, `Retry-After`), and how long to
/// hold the answer first, with a place among the answers held at once (`None`: answer at once).
#[derive(Debug)]
pub struct Refusal<'a> {
    pub wait: u64,
    pub hold: Option<(Duration, Held<'a>)>,
}

/// A place among the answers held at once, given back when dropped (the answer is sent or
/// its client went away).
#[derive(Debug)]
pub struct Held<'a>(&'a AtomicUsize);

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A refused address's turn to have credentials checked, given back when dropped (owned, so
/// that it goes with the check to its blocking thread and is held until the check ends, also
/// when the request is dropped meanwhile).
pub type Turn = OwnedSemaphorePermit;

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
            turns: Arc::new(Semaphore::new(REFUSED_CHECKS)),
        }
    }

    fn refusals(&self) -> std::sync::MutexGuard<'_, HashMap<IpAddr, Refusing>> {
        self.refused.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether the address is refused now (its bucket is empty until its next cell).
    pub fn refusing(&self, addr: Option<IpAddr>) -> bool {
        let Some(key) = addr.map(address_key) else {
            return false;
        };
        self.refusals().get(&key).is_some_and(|r| r.until > Instant::now())
    }

    /// Waits for a turn to check credentials from `addr` when it is refused (`None`: it is not,
    /// check at once). Hold the turn over the check only, never over a held answer.
    pub async fn turn(&self, addr: Option<IpAddr>) -> Option<Turn> {
        if !self.refusing(addr) {
            return None;
        }
        self.turns.clone().acquire_owned().await.ok()
    }

    /// A place among the answers held at once, if one is free.
    fn take_place(&self) -> Option<Held<'_>> {
        self.held.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| (n < MAX_HELD).then_some(n + 1)).ok()?;
        Some(Held(&self.held))
    }

    /// Counts a failed client authentication against the client id and the address: the
    /// refusal (429) when either bucket was empty, `None` when the failure is answered 401. An
    /// empty address bucket refuses the address until its next cell, and once the address has
    /// had as many 429s as its limit, each further one is held.
    pub fn failed(&self, client_id: &str, addr: Option<IpAddr>) -> Option<Refusal<'_>> {
        let now = Instant::now();
        let by_client = take(&self.clients, &client_id.to_owned());
        let mut hold = None;
        let by_address = addr.map(address_key).and_then(|key| {
            let wait = take(&self.addresses, &key)?;
            // An address refused again within a minute of its last refusal's end keeps the
            // count of 429s it was answered, so a flood that goes on is not given its prompt
            // answers again every time a cell comes due.
            let mut refusals = self.refusals();
            let kept = refusals.get(&key).filter(|r| r.until + REMEMBER > now).map_or(0, |r| r.answered);
            let answered = kept.saturating_add(1);
            refusals.insert(key, Refusing { until: now + wait, answered });
            if answered > self.per_address {
                hold = Some(HOLD.min(wait));
            }
            Some(wait)
        });
        if self.failures.fetch_add(1, Ordering::Relaxed) % SWEEP_EVERY == SWEEP_EVERY - 1 {
            self.sweep(now);
        }
        let wait = by_client.max(by_address)?;
        let hold = hold.filter(|d| !d.is_zero()).and_then(|d| Some((d, self.take_place()?)));
        Some(Refusal { wait: seconds(wait), hold })
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
    use futures_util::FutureExt;

    use super::*;

    const HOME: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(192, 0, 2, 1));
    const AWAY: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(198, 51, 100, 7));

    fn wait(r: Option<Refusal<'_>>) -> Option<u64> {
        r.map(|r| r.wait)
    }

    #[test]
    fn a_client_ids_failures_past_its_limit_are_answered_with_a_wait() {
        let limits = FailureLimits::new(3, 1000);
        for _ in 0..3 {
            assert_eq!(wait(limits.failed("cli_a", Some(HOME))), None);
        }
        let w = wait(limits.failed("cli_a", Some(AWAY))).expect("one failure too many, from any address");
        assert!((1..=20).contains(&w), "{w}");
        assert_eq!(wait(limits.failed("cli_b", Some(HOME))), None, "another client id has its own bucket");
        assert!(!limits.refusing(Some(HOME)), "a client id's failures do not refuse its addresses");
    }

    #[test]
    fn a_client_ids_refusals_from_addresses_under_their_limit_are_never_held() {
        let limits = FailureLimits::new(1, 1000);
        assert!(limits.failed("cli_a", Some(HOME)).is_none());
        for _ in 0..20 {
            let r = limits.failed("cli_a", Some(HOME)).expect("refused");
            assert!(r.hold.is_none());
        }
        assert!(!limits.refusing(Some(HOME)));
    }

    #[test]
    fn an_address_past_its_limit_is_refused_whatever_client_id_it_tries() {
        let limits = FailureLimits::new(1000, 4);
        for i in 0..4 {
            assert_eq!(wait(limits.failed(&format!("cli_{i}"), Some(AWAY))), None);
            assert!(!limits.refusing(Some(AWAY)));
        }
        let first = wait(limits.failed("cli_4", Some(AWAY))).expect("one failure too many");
        assert!((1..=15).contains(&first), "{first}");
        assert!(limits.refusing(Some(AWAY)), "refused until its next cell");
        let again = wait(limits.failed("cli_5", Some(AWAY))).expect("still too many");
        assert!(again <= first, "{again} {first}");
        assert!(!limits.refusing(Some(HOME)));
        assert!(!limits.refusing(None));
        assert_eq!(wait(limits.failed("cli_6", None)), None, "no address, no address limit");
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
        assert!(limits.refusing(Some(b)), "same /64");
        assert!(!limits.refusing(Some(other)), "another /64");
        assert_eq!(address_key("::ffff:192.0.2.1".parse().unwrap()), HOME);
    }

    #[test]
    fn sweeping_keeps_current_refusals() {
        let limits = FailureLimits::new(1_000_000, 1);
        assert!(limits.failed("cli_a", Some(AWAY)).is_none());
        assert!(limits.failed("cli_a", Some(AWAY)).is_some());
        for i in 0..SWEEP_EVERY {
            let _ = limits.failed(&format!("cli_{i}"), None);
        }
        assert!(limits.refusing(Some(AWAY)), "a sweep must not lift a refusal that has not lapsed");
    }

    #[test]
    fn an_address_that_goes_on_failing_has_its_429s_held() {
        let limits = FailureLimits::new(1000, 3);
        for _ in 0..3 {
            assert!(limits.failed("cli_a", Some(AWAY)).is_none());
        }
        // As many 429s as its limit are answered at once, then each is held.
        for i in 0..3 {
            let r = limits.failed("cli_a", Some(AWAY)).expect("refused");
            assert!(r.hold.is_none(), "429 {i} is answered at once");
        }
        let held = limits.failed("cli_b", Some(AWAY)).expect("refused");
        let (hold, _place) = held.hold.as_ref().expect("the fourth 429 is held");
        assert!(*hold <= HOLD && !hold.is_zero(), "{hold:?}");
        assert!(held.wait >= 1);
        assert_eq!(limits.held.load(Ordering::Relaxed), 1);
        drop(held);
        assert_eq!(limits.held.load(Ordering::Relaxed), 0, "an answer sent gives its place back");
        // Refused again after its refusal lapses (its next cell came due), it is held at once.
        let again = FailureLimits::new(1000, 1);
        assert!(again.failed("cli_a", Some(AWAY)).is_none());
        assert!(again.failed("cli_a", Some(AWAY)).expect("refused").hold.is_none());
        assert!(again.failed("cli_a", Some(AWAY)).expect("refused").hold.is_some());
        again.refusals().get_mut(&AWAY).expect("refusing").until = Instant::now();
        assert!(!again.refusing(Some(AWAY)), "lapsed");
        assert!(again.failed("cli_a", Some(AWAY)).expect("its bucket is still empty").hold.is_some(), "its count was kept");
        // A refusal that lapsed over a minute ago is forgotten.
        again.refusals().get_mut(&AWAY).expect("refusing").until = Instant::now() - REMEMBER - Duration::from_secs(1);
        assert!(again.failed("cli_a", Some(AWAY)).expect("its bucket is still empty").hold.is_none(), "a fresh count");
        // Another address's first 429s are its own.
        for _ in 0..3 {
            let _ = limits.failed("cli_c", Some(HOME));
        }
        assert!(limits.failed("cli_c", Some(HOME)).expect("refused").hold.is_none());
    }

    #[test]
    fn at_most_max_held_429s_are_held_at_once() {
        let limits = FailureLimits::new(1_000_000, 1);
        assert!(limits.failed("cli_a", Some(AWAY)).is_none());
        let _prompt = limits.failed("cli_a", Some(AWAY)).expect("refused");
        let held: Vec<_> = (0..MAX_HELD).map(|_| limits.failed("cli_a", Some(AWAY)).expect("refused")).collect();
        assert!(held.iter().all(|r| r.hold.is_some()));
        assert!(limits.failed("cli_a", Some(AWAY)).expect("refused").hold.is_none(), "no place is free: answered at once");
        drop(held);
        assert!(limits.failed("cli_a", Some(AWAY)).expect("refused").hold.is_some(), "places given back");
    }

    #[test]
    fn checks_from_refused_addresses_take_turns_and_others_go_at_once() {
        let limits = FailureLimits::new(1000, 1);
        assert!(limits.turn(Some(AWAY)).now_or_never().expect("at once").is_none(), "not refused: no turn needed");
        assert!(limits.failed("cli_a", Some(AWAY)).is_none());
        assert!(limits.failed("cli_a", Some(AWAY)).is_some());
        let turns: Vec<_> =
            (0..REFUSED_CHECKS).map(|_| limits.turn(Some(AWAY)).now_or_never().expect("a turn is free").expect("a turn")).collect();
        assert!(limits.turn(Some(AWAY)).now_or_never().is_none(), "every turn taken: the next check waits");
        assert!(limits.turn(Some(HOME)).now_or_never().expect("at once").is_none(), "another address does not wait");
        assert!(limits.turn(None).now_or_never().expect("at once").is_none());
        drop(turns);
        assert!(limits.turn(Some(AWAY)).now_or_never().expect("a turn given back").is_some());
    }
}
