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
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use governor::clock::{Clock, DefaultClock};
use governor::state::keyed::DefaultKeyedStateStore;
use governor::{Quota, RateLimiter};

type Buckets<K> = RateLimiter<K, DefaultKeyedStateStore<K>, DefaultClock>;

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
    /// Addresses refused until the instant given.
    refused: Mutex<HashMap<IpAddr, Instant>>,
    failures: AtomicU64,
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
        }
    }

    fn refusals(&self) -> std::sync::MutexGuard<'_, HashMap<IpAddr, Instant>> {
        self.refused.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Seconds to wait (at least 1) when the address is refused now.
    pub fn refused(&self, addr: Option<IpAddr>) -> Option<u64> {
        let key = address_key(addr?);
        let until = *self.refusals().get(&key)?;
        until.checked_duration_since(Instant::now()).filter(|d| !d.is_zero()).map(seconds)
    }

    /// Counts a failed client authentication against the client id and the address: the
    /// seconds to wait when it was one too many for either (the address is then refused for
    /// that long).
    pub fn failed(&self, client_id: &str, addr: Option<IpAddr>) -> Option<u64> {
        let now = Instant::now();
        let by_client = take(&self.clients, &client_id.to_owned());
        let by_address = addr.map(address_key).and_then(|key| {
            let wait = take(&self.addresses, &key)?;
            self.refusals().insert(key, now + wait);
            Some(wait)
        });
        if self.failures.fetch_add(1, Ordering::Relaxed) % SWEEP_EVERY == SWEEP_EVERY - 1 {
            self.sweep(now);
        }
        by_client.max(by_address).map(seconds)
    }

    /// Forgets buckets back at full capacity and refusals that have lapsed.
    fn sweep(&self, now: Instant) {
        self.clients.retain_recent();
        self.clients.shrink_to_fit();
        self.addresses.retain_recent();
        self.addresses.shrink_to_fit();
        let mut refused = self.refusals();
        refused.retain(|_, until| *until > now);
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
        assert_eq!(limits.refused(Some(HOME)), None, "a client id's failures do not refuse its addresses");
    }

    #[test]
    fn an_address_is_refused_whatever_client_id_it_tries() {
        let limits = FailureLimits::new(1000, 4);
        for i in 0..4 {
            assert_eq!(limits.failed(&format!("cli_{i}"), Some(AWAY)), None);
            assert_eq!(limits.refused(Some(AWAY)), None);
        }
        let first = limits.failed("cli_4", Some(AWAY)).expect("one failure too many");
        let wait = limits.refused(Some(AWAY)).expect("refused from now on");
        assert!((1..=15).contains(&wait) && wait <= first, "{wait} {first}");
        assert_eq!(limits.refused(Some(HOME)), None);
        assert_eq!(limits.refused(None), None);
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
        assert_eq!(limits.refused(Some(other)), None, "another /64");
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
}
