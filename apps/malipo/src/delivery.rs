//! The webhook delivery worker: claims due deliveries (signed, with their lease) and POSTs each in
//! its own task, at most N at once per instance, so a receiver that hangs only holds one permit
//! until its timeout and never delays the others. Outcomes go to one recorder, which records
//! whatever has arrived (up to [`RECORD_BATCH`]) in one transaction
//! (`Deliveries::record_attempts`, one commit for many attempts), each item as it would be alone;
//! if that transaction fails, it records them one by one. A send's permit is returned once its
//! outcome is recorded. All state is in the database; any number of instances may run this.
//!
//! Addresses are guarded at send time: a URL written as an IP address is checked before
//! sending, and a host name is resolved by [`GuardedResolver`], which drops every address the
//! endpoint's policy refuses (loopback, private, link-local, metadata…), so a name that resolved
//! to a public address when the endpoint was registered and to an internal one now is refused.
//! Redirects are not followed and proxies are not used, so neither can lead elsewhere.

use std::error::Error as StdError;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use malipo_service::{DeliveryJob, Platform, SendOutcome, WebhookSender};
use malipo_webhooks::{check_ip, check_url, UrlError, UrlPolicy};
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use tokio::sync::{mpsc, watch, OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinHandle;

/// At most this many deliveries are claimed per round.
const BATCH: usize = 64;
/// At most this many outcomes are recorded in one transaction.
pub const RECORD_BATCH: usize = 64;
/// Pause when there was nothing due.
const IDLE: Duration = Duration::from_millis(100);
/// A receiver's answer body is read (and discarded) up to this size, so the connection can be reused.
const MAX_DRAIN: usize = 64 * 1024;
/// Time allowed to read that body after the status arrived (the outcome is already known).
const DRAIN_TIME: Duration = Duration::from_secs(1);
/// Retry-After values beyond this are capped (the service caps at one day as well).
const MAX_RETRY_AFTER: Duration = Duration::from_secs(86_400);

/// Spawns the delivery loop with `concurrency` sends in flight at most. Once `stop` is true it
/// claims nothing more and waits (bounded by the send timeout) for the sends in flight, so their
/// outcomes are recorded.
pub fn spawn(platform: Platform, sender: Arc<dyn WebhookSender>, concurrency: usize, stop: watch::Receiver<bool>) -> JoinHandle<()> {
    tokio::spawn(run(platform, sender, concurrency.clamp(1, Semaphore::MAX_PERMITS), stop))
}

/// A send's outcome waiting to be recorded, holding the send's permit until it is.
struct Sent {
    job: DeliveryJob,
    outcome: SendOutcome,
    latency_ms: u32,
    _permit: OwnedSemaphorePermit,
}

async fn run(platform: Platform, sender: Arc<dyn WebhookSender>, concurrency: usize, mut stop: watch::Receiver<bool>) {
    let permits = Arc::new(Semaphore::new(concurrency));
    // Unbounded, yet never holds more than `concurrency` items: each holds a permit.
    let (sent_tx, sent_rx) = mpsc::unbounded_channel::<Sent>();
    let recorder = tokio::spawn(record_loop(platform.clone(), sent_rx));
    while !*stop.borrow() {
        let free = permits.available_permits().min(BATCH);
        if free == 0 {
            // Every permit is out: wait for one to come back (or for the stop).
            tokio::select! {
                p = permits.acquire() => drop(p),
                changed = stop.changed() => if changed.is_err() { break },
            }
            continue;
        }
        let p = platform.clone();
        let jobs = match tokio::task::spawn_blocking(move || p.deliveries().claim(free)).await {
            Ok(Ok(jobs)) => jobs,
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "claiming due webhook deliveries failed");
                Vec::new()
            }
            Err(e) => {
                tracing::error!(error = %e, "webhook claim task failed");
                Vec::new()
            }
        };
        let claimed = jobs.len();
        for job in jobs {
            // Never waits: no more were claimed than there were free permits, and only this loop takes them.
            let Ok(permit) = Arc::clone(&permits).acquire_owned().await else { break };
            let (sender, sent_tx) = (Arc::clone(&sender), sent_tx.clone());
            tokio::spawn(async move {
                let (outcome, latency_ms) = send(sender.as_ref(), &job).await;
                // The recorder outlives every send (it stops once all senders are gone).
                let _ = sent_tx.send(Sent { job, outcome, latency_ms, _permit: permit });
            });
        }
        if claimed == 0 {
            tokio::select! {
                _ = tokio::time::sleep(IDLE) => {}
                changed = stop.changed() => if changed.is_err() { break },
            }
        }
    }
    // Let the sends in flight finish and be recorded (each is bounded by its timeout).
    let all = u32::try_from(concurrency).unwrap_or(u32::MAX);
    let grace = platform.webhook_config().timeout + DRAIN_TIME + Duration::from_secs(5);
    if tokio::time::timeout(grace, permits.acquire_many(all)).await.is_err() {
        tracing::warn!("webhook sends still in flight at shutdown; their leases will lapse and another instance will retry them");
    }
    drop(sent_tx);
    let _ = tokio::time::timeout(Duration::from_secs(5), recorder).await;
    tracing::debug!("webhook delivery worker stopped");
}

/// Sends one job: its outcome and round trip in milliseconds.
async fn send(sender: &dyn WebhookSender, job: &DeliveryJob) -> (SendOutcome, u32) {
    let started = Instant::now();
    let outcome = sender.send(job).await;
    let latency_ms = u32::try_from(started.elapsed().as_millis()).unwrap_or(u32::MAX);
    tracing::debug!(event = %job.event_id, endpoint = %job.endpoint_id, ?outcome, latency_ms, "webhook attempt");
    (outcome, latency_ms)
}

/// Records outcomes as they arrive: whatever is waiting (up to [`RECORD_BATCH`]) in one
/// transaction; until every sender is gone.
async fn record_loop(platform: Platform, mut sent: mpsc::UnboundedReceiver<Sent>) {
    while let Some(first) = sent.recv().await {
        let mut batch = vec![first];
        while batch.len() < RECORD_BATCH {
            match sent.try_recv() {
                Ok(more) => batch.push(more),
                Err(_) => break,
            }
        }
        record(&platform, batch).await;
    }
}

/// Records a batch in one transaction; if that fails, each alone (retrying briefly if the
/// database is unavailable; if it stays unavailable the lease lapses and the delivery is
/// attempted again: delivery is at least once). The permits go back when `batch` is dropped.
async fn record(platform: &Platform, batch: Vec<Sent>) {
    let batch = Arc::new(batch);
    let (p, b) = (platform.clone(), Arc::clone(&batch));
    let together = tokio::task::spawn_blocking(move || {
        let items: Vec<(&DeliveryJob, &SendOutcome, u32)> = b.iter().map(|s| (&s.job, &s.outcome, s.latency_ms)).collect();
        p.deliveries().record_attempts(&items)
    })
    .await;
    match together {
        Ok(Ok(())) => return,
        Ok(Err(e)) => {
            tracing::warn!(attempts = batch.len(), error = %e, "recording webhook attempts together failed; recording each alone")
        }
        Err(e) => tracing::error!(error = %e, "webhook record task failed"),
    }
    for i in 0..batch.len() {
        for pause in [Duration::from_millis(100), Duration::from_millis(500), Duration::ZERO] {
            let (p, b) = (platform.clone(), Arc::clone(&batch));
            match tokio::task::spawn_blocking(move || p.deliveries().record_attempt(&b[i].job, &b[i].outcome, b[i].latency_ms)).await {
                Ok(Ok(())) => break,
                Ok(Err(e)) => tracing::warn!(event = %batch[i].job.event_id, error = %e, "recording a webhook attempt failed"),
                Err(e) => tracing::error!(event = %batch[i].job.event_id, error = %e, "webhook record task failed"),
            }
            tokio::time::sleep(pause).await;
        }
    }
}

/// HTTP clients, one per URL policy (built on first use, then shared: their connection pools
/// are reused across deliveries).
#[derive(Default)]
pub struct Sender {
    clients: Mutex<Vec<(UrlPolicy, reqwest::Client)>>,
}

impl std::fmt::Debug for Sender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Sender")
    }
}

impl Sender {
    /// The shared client of `policy`.
    ///
    /// # Errors
    /// The client could not be built.
    pub fn client(&self, policy: UrlPolicy, timeout: Duration) -> Result<reqwest::Client, String> {
        let mut clients = self.clients.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((_, c)) = clients.iter().find(|(p, _)| *p == policy) {
            return Ok(c.clone());
        }
        let client = client(policy, timeout).map_err(|e| format!("cannot build an HTTP client: {e}"))?;
        clients.push((policy, client.clone()));
        Ok(client)
    }
}

#[async_trait::async_trait]
impl WebhookSender for Sender {
    /// POSTs a job's body with its headers through the client of the job's URL policy.
    async fn send(&self, job: &DeliveryJob) -> SendOutcome {
        // A URL written as an address never reaches the resolver: check it here.
        if let Err(e) = check_url(&job.url, job.policy) {
            return SendOutcome::Failed(refused_text(&e));
        }
        match self.client(job.policy, job.timeout) {
            Ok(client) => send_with(&client, job).await,
            Err(e) => SendOutcome::Failed(e),
        }
    }
}

/// An HTTP client for one policy: no redirects, no proxies, and the guarded resolver.
///
/// # Errors
/// The TLS backend could not be initialised.
pub fn client(policy: UrlPolicy, timeout: Duration) -> reqwest::Result<reqwest::Client> {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .dns_resolver(Arc::new(GuardedResolver { policy }))
        .timeout(timeout)
        .connect_timeout(timeout)
        .pool_idle_timeout(Duration::from_secs(60))
        .build()
}

/// Sends `job` with `client` (which must carry the job's policy in its resolver).
pub async fn send_with(client: &reqwest::Client, job: &DeliveryJob) -> SendOutcome {
    let (headers, body) = malipo_http::webhook_request(job);
    answer(client.post(&job.url), job.timeout, &headers, body).await
}

/// Sends `request` with `headers` and `body` within `timeout`, and says what came back
/// (reading a little of the answer, so the connection can be reused).
pub async fn answer(request: reqwest::RequestBuilder, timeout: Duration, headers: &[(String, String)], body: Vec<u8>) -> SendOutcome {
    let mut request = request.timeout(timeout).body(body);
    for (name, value) in headers {
        request = request.header(name.as_str(), value.as_str());
    }
    match request.send().await {
        Ok(mut response) => {
            let status = response.status().as_u16();
            let retry_after = response
                .headers()
                .get(reqwest::header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| parse_retry_after(v, time::OffsetDateTime::now_utc()));
            // Read a little of the answer so the connection can serve the next delivery.
            let _ = tokio::time::timeout(DRAIN_TIME, async {
                let mut read = 0;
                while let Ok(Some(chunk)) = response.chunk().await {
                    read += chunk.len();
                    if read > MAX_DRAIN {
                        break;
                    }
                }
            })
            .await;
            SendOutcome::Answered { status, retry_after }
        }
        Err(e) => SendOutcome::Failed(describe(&e)),
    }
}

/// The text recorded for a refused address.
pub fn refused_text(e: &UrlError) -> String {
    format!("address refused: {e}")
}

/// A short, stable description of a failed send (shown to the integrator with the attempt).
fn describe(e: &reqwest::Error) -> String {
    let mut source: Option<&(dyn StdError + 'static)> = Some(e);
    while let Some(s) = source {
        if let Some(r) = s.downcast_ref::<AddressRefused>() {
            return r.to_string();
        }
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            if let Some(r) = io.get_ref().and_then(|inner| inner.downcast_ref::<AddressRefused>()) {
                return r.to_string();
            }
            match io.kind() {
                std::io::ErrorKind::ConnectionRefused => return "connection refused".into(),
                std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::ConnectionAborted => return "connection reset".into(),
                std::io::ErrorKind::TimedOut => return "timeout".into(),
                _ => {}
            }
        }
        source = s.source();
    }
    if e.is_timeout() {
        "timeout".into()
    } else if e.is_connect() {
        let text = e.source().map(ToString::to_string).unwrap_or_default();
        if text.contains("dns error") || text.contains("failed to lookup") {
            "host not found".into()
        } else if text.to_ascii_lowercase().contains("certificate") || text.contains("tls") {
            "TLS handshake failed".into()
        } else {
            "connection failed".into()
        }
    } else if e.is_body() || e.is_decode() {
        "the answer was cut off".into()
    } else {
        "request failed".into()
    }
}

/// Every address a host name resolved to was refused by the endpoint's policy.
#[derive(Debug, thiserror::Error)]
#[error("address refused: {host} resolves only to refused addresses ({addresses})")]
pub struct AddressRefused {
    host: String,
    addresses: String,
}

/// Resolves with the system resolver, then keeps only the addresses the policy allows; fails
/// when none remain. The guard is so applied to the address actually connected to.
#[derive(Clone, Copy, Debug)]
pub struct GuardedResolver {
    /// What the endpoint may reach.
    pub policy: UrlPolicy,
}

impl GuardedResolver {
    /// The allowed addresses of `host`.
    ///
    /// # Errors
    /// Resolution failed, or every address was refused ([`AddressRefused`]).
    pub async fn lookup(&self, host: &str) -> Result<Vec<SocketAddr>, Box<dyn StdError + Send + Sync>> {
        let all: Vec<SocketAddr> = tokio::net::lookup_host((host, 0)).await?.collect();
        let allowed: Vec<SocketAddr> = all.iter().copied().filter(|a| check_ip(a.ip(), self.policy).is_ok()).collect();
        if allowed.is_empty() {
            let addresses = all.iter().map(|a| a.ip().to_string()).collect::<Vec<_>>().join(", ");
            return Err(Box::new(AddressRefused { host: host.to_owned(), addresses }));
        }
        Ok(allowed)
    }
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let this = *self;
        Box::pin(async move {
            let addrs = this.lookup(name.as_str()).await?;
            Ok(Box::new(addrs.into_iter()) as Addrs)
        })
    }
}

/// Parses `Retry-After`: delta-seconds, or an HTTP-date (IMF-fixdate, RFC 850 or asctime form)
/// taken relative to `now` (a date in the past means at once). Capped at one day.
pub fn parse_retry_after(value: &str, now: time::OffsetDateTime) -> Option<Duration> {
    let value = value.trim();
    if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
        return Some(value.parse::<u64>().map_or(MAX_RETRY_AFTER, Duration::from_secs).min(MAX_RETRY_AFTER));
    }
    let at = parse_http_date(value)?;
    Some(Duration::try_from(at - now).unwrap_or(Duration::ZERO).min(MAX_RETRY_AFTER))
}

fn parse_http_date(value: &str) -> Option<time::OffsetDateTime> {
    use time::macros::format_description;
    use time::PrimitiveDateTime;
    // Sun, 06 Nov 1994 08:49:37 GMT
    let imf = format_description!("[weekday repr:short], [day] [month repr:short] [year] [hour]:[minute]:[second] GMT");
    // Sun Nov  6 08:49:37 1994
    let asctime = format_description!("[weekday repr:short] [month repr:short] [day padding:space] [hour]:[minute]:[second] [year]");
    if let Ok(t) = PrimitiveDateTime::parse(value, imf).or_else(|_| PrimitiveDateTime::parse(value, asctime)) {
        return Some(t.assume_utc());
    }
    // Sunday, 06-Nov-94 08:49:37 GMT: a two-digit year is the nearest such year not more than
    // 50 years ahead (RFC 9110 section 5.6.7); written out in full and parsed as above.
    let (weekday, rest) = value.split_once(", ")?;
    let (date, time_part) = rest.split_once(' ')?;
    let mut parts = date.split('-');
    let (day, month, yy) = (parts.next()?, parts.next()?, parts.next()?);
    if yy.len() != 2 || parts.next().is_some() {
        return None;
    }
    let yy: i32 = yy.parse().ok()?;
    let this_year = time::OffsetDateTime::now_utc().year();
    let mut year = this_year - this_year.rem_euclid(100) + yy;
    if year > this_year + 50 {
        year -= 100;
    }
    let short = weekday.get(..3)?;
    PrimitiveDateTime::parse(&format!("{short}, {day} {month} {year} {time_part}"), imf).ok().map(PrimitiveDateTime::assume_utc)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use time::macros::datetime;

    #[test]
    fn retry_after_as_seconds_or_http_date() {
        let now = datetime!(1994-11-06 08:49:30 UTC);
        assert_eq!(parse_retry_after("120", now), Some(Duration::from_secs(120)));
        assert_eq!(parse_retry_after(" 0 ", now), Some(Duration::ZERO));
        assert_eq!(parse_retry_after("99999999999999999999999", now), Some(MAX_RETRY_AFTER));
        assert_eq!(parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", now), Some(Duration::from_secs(7)));
        assert_eq!(parse_retry_after("Sun Nov  6 08:49:37 1994", now), Some(Duration::from_secs(7)));
        assert_eq!(parse_retry_after("Sun, 06 Nov 1994 08:49:00 GMT", now), Some(Duration::ZERO), "a past date means at once");
        assert_eq!(parse_retry_after("Mon, 07 Nov 1994 08:49:30 GMT", now), Some(Duration::from_secs(86_400)));
        assert_eq!(parse_retry_after("Tue, 08 Nov 1994 08:49:30 GMT", now), Some(MAX_RETRY_AFTER), "capped");
        for bad in ["", "-5", "1.5", "soon", "Sun, 06 Nov 1994 08:49:37 PST", "06 Nov 1994"] {
            assert_eq!(parse_retry_after(bad, now), None, "{bad:?}");
        }
        let now = time::OffsetDateTime::now_utc();
        let rfc850 = format!("Sunday, 06-Nov-{:02} 08:49:37 GMT", now.year() % 100);
        let when = parse_http_date(&rfc850);
        assert!(when.is_none() || when.is_some_and(|w| w.year() == now.year()), "{rfc850} -> {when:?}");
    }

    #[actix_web::test]
    async fn the_resolver_drops_refused_addresses() {
        let live = GuardedResolver { policy: UrlPolicy::live(false) };
        let test = GuardedResolver { policy: UrlPolicy::test(false) };
        let e = live.lookup("localhost").await.unwrap_err();
        let refused = e.downcast_ref::<AddressRefused>().expect("refused, not a resolution error");
        assert!(refused.to_string().starts_with("address refused: localhost resolves only to refused addresses"), "{refused}");
        assert!(test.lookup("localhost").await.unwrap().iter().all(|a| a.ip().is_loopback()));
        let allowed = GuardedResolver { policy: UrlPolicy::live(true) };
        assert!(!allowed.lookup("localhost").await.unwrap().is_empty(), "the operator may allow private addresses");
    }

    fn job(url: &str, policy: UrlPolicy) -> DeliveryJob {
        DeliveryJob {
            delivery_id: "dlv_x".into(),
            lease: malipo_core::Timestamp::from_micros(0),
            event_id: malipo_core::EventId::new(),
            endpoint_id: malipo_core::EndpointId::new(),
            url: url.into(),
            policy,
            event: malipo_webhooks::Event {
                id: malipo_core::EventId::new(),
                org_id: malipo_core::OrgId::new(),
                mode: malipo_core::Mode::Test,
                kind: "charge.completed".into(),
                object_id: "ch_x".into(),
                data: b"{}".to_vec(),
                summary: malipo_webhooks::Summary::default(),
                created_at: malipo_core::Timestamp::from_micros(0),
            },
            timestamp: 0,
            secret: malipo_webhooks::Secret::generate(),
            previous_secret: None,
            timeout: Duration::from_secs(2),
        }
    }

    #[actix_web::test]
    async fn the_guard_applies_at_send_time_after_resolution() {
        // A live endpoint whose name resolves to loopback is refused by the resolver, before
        // any connection (nothing listens on port 9, and the error says "address refused").
        let live = UrlPolicy::live(false);
        let c = client(live, Duration::from_secs(2)).unwrap();
        let outcome = send_with(&c, &job("https://localhost:9/hook", live)).await;
        match outcome {
            SendOutcome::Failed(e) => assert!(e.starts_with("address refused: localhost"), "{e}"),
            other => panic!("{other:?}"),
        }
        // A URL written as an internal address is refused before sending.
        let sender = Sender::default();
        for url in ["https://169.254.169.254/latest", "https://10.0.0.1/x", "https://[::1]:9/x", "https://2130706433/x"] {
            let outcome = sender.send(&job(url, live)).await;
            assert!(matches!(&outcome, SendOutcome::Failed(e) if e.starts_with("address refused:")), "{url}: {outcome:?}");
        }
        // Test mode may reach loopback: nothing listens on port 9, so the connection is refused.
        let outcome = sender.send(&job("http://127.0.0.1:9/hook", UrlPolicy::test(false))).await;
        assert_eq!(outcome, SendOutcome::Failed("connection refused".into()));
        let outcome = sender.send(&job("http://localhost:9/hook", UrlPolicy::test(false))).await;
        assert_eq!(outcome, SendOutcome::Failed("connection refused".into()));
    }
}

/// The delivery loop with the sender port mocked: what the loop does with a receiver's answers,
/// without a receiver.
#[cfg(test)]
mod loop_tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use std::sync::atomic::{AtomicUsize, Ordering};

    use malipo_auth::{OrgKind, Principal, SecretHasher};

    use malipo_core::{EventId, SystemClock};
    use malipo_countries::Countries;
    use malipo_idempotency::{Fingerprint, IdempotencyKey, KeyScope};
    use malipo_service::ports::MockWebhookSender;
    use malipo_service::{
        CreateCharge, CreateEndpoint, Idem, NewCharge, NewEndpoint, NewSimulation, ServiceConfig, Simulate, WebhookConfig,
    };
    use malipo_store_memory::MemoryStore;
    use malipo_webhooks::{DeliveryState, SecretCipher};

    use super::*;

    const URL: &str = "https://hooks.example.com/malipo";

    fn idem(p: &Principal, key: &str) -> Idem {
        Idem {
            scope: KeyScope { org_id: p.org_id.clone(), mode: p.mode, operation: key.into() },
            key: IdempotencyKey::parse(key).unwrap(),
            fingerprint: Fingerprint::of("POST", key, b""),
            actor: None,
            callback: None,
        }
    }

    /// A platform over the in-memory store with one completed test charge and an endpoint for
    /// it: one delivery due now. Returns the merchant and the event.
    fn one_due_delivery() -> (Platform, Principal, EventId) {
        let platform = Platform::new(
            Arc::new(MemoryStore::new()),
            Arc::new(Countries::builtin().unwrap()),
            Arc::new(SecretHasher::with_params([7; 32], 8, 1, 1).unwrap()),
            Arc::new(SystemClock),
            ServiceConfig::default(),
        )
        .with_webhooks(SecretCipher::ephemeral(), WebhookConfig::default());
        let access = platform.access();
        access.ensure_system_accounts().unwrap();
        let credential = access.create_org("Duka", OrgKind::Merchant, "KE").unwrap();
        let token = access.issue_token(&credential.client_id, &credential.client_secret, None).unwrap();
        let shop = access.authenticate(&token.access_token).unwrap();
        let endpoint = NewEndpoint { url: URL.into(), events: vec!["charge.completed".into()], description: None };
        let endpoint: CreateEndpoint = platform.parse(&shop, &endpoint).unwrap();
        platform.webhooks().create_endpoint(&shop, &endpoint, &idem(&shop, "e")).unwrap();
        let new = NewCharge {
            payer_msisdn: "254712340000".into(),
            amount: "150".into(),
            currency: None,
            reference: "ORDER-1".into(),
            description: None,
        };
        let charge: CreateCharge = platform.parse(&shop, &new).unwrap();
        let id = platform.charges().create(&shop, &charge, &idem(&shop, "c")).unwrap().value.id.to_string();
        let simulation: Simulate = platform.parse(&shop, &NewSimulation { charge_ref: id, action: "approve".into() }).unwrap();
        platform.sandbox().simulate(&shop, &simulation, &idem(&shop, "s")).unwrap();
        let event = platform.webhooks().events(&shop, Some("charge.completed"), None, 1).unwrap().data.remove(0).id;
        (platform, shop, event)
    }

    /// Runs the loop with `sender` until `done` holds (or 5 s pass), then stops it.
    async fn run_until(platform: &Platform, sender: MockWebhookSender, done: impl Fn() -> bool) {
        let (stop, stopped) = watch::channel(false);
        let worker = spawn(platform.clone(), Arc::new(sender), 4, stopped);
        let deadline = Instant::now() + Duration::from_secs(5);
        while !done() && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        stop.send(true).unwrap();
        worker.await.unwrap();
    }

    fn delivery(platform: &Platform, shop: &Principal, event: &EventId) -> malipo_webhooks::Delivery {
        platform.webhooks().event(shop, event.as_str()).unwrap().deliveries.remove(0)
    }

    #[actix_web::test]
    async fn a_due_job_is_sent_once_with_its_signature_and_a_2xx_settles_it() {
        let (platform, shop, event) = one_due_delivery();
        let calls = Arc::new(AtomicUsize::new(0));
        let mut sender = MockWebhookSender::new();
        let (counted, id) = (Arc::clone(&calls), event.clone());
        sender
            .expect_send()
            .withf(move |job| {
                let (headers, _) = malipo_http::webhook_request(job);
                job.url == URL && job.event_id == id && headers.iter().any(|(n, v)| n == "webhook-signature" && v.starts_with("v1,"))
            })
            .returning(move |_| {
                counted.fetch_add(1, Ordering::SeqCst);
                SendOutcome::Answered { status: 204, retry_after: None }
            });
        run_until(&platform, sender, || delivery(&platform, &shop, &event).state == DeliveryState::Succeeded).await;
        let d = delivery(&platform, &shop, &event);
        assert_eq!((d.state, d.attempts, d.next_attempt_at), (DeliveryState::Succeeded, 1, None));
        assert_eq!(calls.load(Ordering::SeqCst), 1, "sent exactly once");
    }

    #[actix_web::test]
    async fn a_503_with_retry_after_is_not_sent_again_before_its_time() {
        let (platform, shop, event) = one_due_delivery();
        let calls = Arc::new(AtomicUsize::new(0));
        let mut sender = MockWebhookSender::new();
        let counted = Arc::clone(&calls);
        sender.expect_send().returning(move |_| {
            counted.fetch_add(1, Ordering::SeqCst);
            SendOutcome::Answered { status: 503, retry_after: Some(Duration::from_secs(120)) }
        });
        let before = platform.now();
        // Several idle rounds of the loop (it polls every 100 ms) after the first attempt.
        let first = Arc::clone(&calls);
        let seen = std::sync::Mutex::new(None::<Instant>);
        run_until(&platform, sender, || {
            let mut at = seen.lock().unwrap();
            if first.load(Ordering::SeqCst) > 0 && at.is_none() {
                *at = Some(Instant::now());
            }
            at.is_some_and(|t| t.elapsed() > Duration::from_millis(500))
        })
        .await;
        assert_eq!(calls.load(Ordering::SeqCst), 1, "one attempt, then the wait");
        let d = delivery(&platform, &shop, &event);
        assert_eq!((d.state, d.attempts), (DeliveryState::Pending, 1));
        assert!(d.next_attempt_at.is_some_and(|t| t >= before.plus_seconds(120)), "{d:?}");
        let attempts = platform.webhooks().event(&shop, event.as_str()).unwrap().attempts;
        assert_eq!(attempts.iter().map(|a| a.status).collect::<Vec<_>>(), [Some(503)]);
    }
}
