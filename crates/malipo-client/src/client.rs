//! The client and its one way of calling the API: a bearer token, an idempotency key on every
//! state-changing call (the same on every try), and retries with capped exponential backoff and
//! jitter for what is worth retrying.

use std::sync::Arc;
use std::time::{Duration, Instant};

use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use rand::Rng;
use reqwest::header::{HeaderValue, CONTENT_TYPE, RETRY_AFTER};
use reqwest::{Method, StatusCode};
use serde::de::DeserializeOwned;

use crate::operations::Operation;
use crate::token::{TokenFailure, Tokens};
use crate::{ApiError, Error, ErrorCode, Mode};

/// How calls are retried: network errors, 408 (the request did not reach the server in time),
/// 409 `idempotency_in_progress` (the same key still running), 429 and 503 (after their
/// `Retry-After`) and other 5xx; never another 4xx. A token that cannot be fetched because the
/// token endpoint cannot be reached is tried again the same way. Every try of a call carries the
/// same idempotency key and body.
///
/// The default: at most 20 tries and 60 s in all. The backoff doubles from 250 ms up to 8 s,
/// each wait drawn at random between half of it and all of it, and the waits go on until the
/// tries or the 60 s run out, the last wait cut short so that the last try still fits: a server
/// down for 20 s is reached again within a second or so of its return, however many calls wait for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Tries in all, the first included (1: no retry).
    pub max_attempts: u32,
    /// The whole call, every try and every wait, ends within this: each try's timeout is cut to
    /// what is left of it, a wait is cut to leave half a second for the try after it (none is
    /// made when less is left), and a `Retry-After` asking for longer than is left ends the call.
    pub max_elapsed: Duration,
    /// The first backoff; each next one doubles, up to `max_backoff`, and is drawn at random
    /// between half of it and all of it.
    pub initial_backoff: Duration,
    /// The longest backoff (a `Retry-After` may ask for longer, within `max_elapsed`).
    pub max_backoff: Duration,
}

/// The least time left for a try after a wait: none is made with less.
const LEAST_TRY: Duration = Duration::from_millis(500);

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 20,
            max_elapsed: Duration::from_secs(60),
            initial_backoff: Duration::from_millis(250),
            max_backoff: Duration::from_secs(8),
        }
    }
}

impl RetryPolicy {
    /// No retries at all.
    pub fn never() -> Self {
        RetryPolicy { max_attempts: 1, ..RetryPolicy::default() }
    }

    /// The wait before try `attempt + 1`.
    fn backoff(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        let doubled = self.initial_backoff.saturating_mul(2_u32.saturating_pow(attempt.saturating_sub(1)));
        let ceiling = doubled.min(self.max_backoff);
        let jittered = rand::thread_rng().gen_range(ceiling / 2..=ceiling);
        retry_after.map_or(jittered, |asked| asked.max(jittered / 4))
    }

    /// The wait before try `attempt + 1` when `left` is what remains of `max_elapsed`, or `None`
    /// when no try is left: the tries ran out, too little time is left, or the server asked
    /// (`Retry-After`) for a longer wait than the budget leaves.
    fn next_wait(&self, attempt: u32, left: Duration, retry_after: Option<Duration>) -> Option<Duration> {
        if attempt >= self.max_attempts {
            return None;
        }
        let room = left.checked_sub(LEAST_TRY).filter(|room| !room.is_zero())?;
        if retry_after.is_some_and(|asked| asked > room) {
            return None;
        }
        Some(self.backoff(attempt, retry_after).min(room))
    }
}

/// Builds a [`Client`].
#[derive(Debug, Clone)]
pub struct ClientBuilder {
    base_url: String,
    client_id: String,
    client_secret: String,
    retry: RetryPolicy,
    timeout: Duration,
}

impl ClientBuilder {
    /// How calls are retried (default: [`RetryPolicy::default`]).
    pub fn retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// How long one try may take, connection included (default 30 s; less when less is left of
    /// the retry budget, [`RetryPolicy::max_elapsed`]).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The client.
    ///
    /// # Errors
    /// [`Error::Config`] for a base URL that is not an `http` or `https` URL.
    pub fn build(self) -> Result<Client, Error> {
        let base = self.base_url.trim_end_matches('/').to_owned();
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(Error::config(format!("the base URL must be http:// or https://, not {base}")));
        }
        let api = if base.ends_with("/api/v1") { base } else { format!("{base}/api/v1") };
        let http = reqwest::Client::builder()
            .timeout(self.timeout)
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("malipo-client/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| Error::config(e.to_string()))?;
        let tokens = Tokens::new(&api, &self.client_id, &self.client_secret, http.clone())?;
        let mode = if self.client_id.starts_with("ck_live_") { Mode::Live } else { Mode::Test };
        Ok(Client { inner: Arc::new(Inner { http, api, tokens, retry: self.retry, timeout: self.timeout, mode }) })
    }
}

/// A client of the Malipo API for one key pair. Cheap to clone: clones share the connection pool
/// and the token.
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

struct Inner {
    http: reqwest::Client,
    /// `{base}/api/v1`.
    api: String,
    tokens: Tokens,
    retry: RetryPolicy,
    /// The longest try.
    timeout: Duration,
    mode: Mode,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client").field("api", &self.inner.api).field("mode", &self.inner.mode).finish_non_exhaustive()
    }
}

impl Client {
    /// A client of the API at `base_url` (`https://api.example.com`, with or without `/api/v1`)
    /// for a key pair; a test key pair (`ck_test_…`) works in the sandbox, a live one in live
    /// mode. Nothing is sent until the first call.
    ///
    /// # Errors
    /// As [`ClientBuilder::build`].
    pub fn new(base_url: &str, client_id: &str, client_secret: &str) -> Result<Self, Error> {
        Self::builder(base_url, client_id, client_secret).build()
    }

    /// A [`ClientBuilder`] with the defaults of [`Client::new`].
    pub fn builder(base_url: &str, client_id: &str, client_secret: &str) -> ClientBuilder {
        ClientBuilder {
            base_url: base_url.to_owned(),
            client_id: client_id.to_owned(),
            client_secret: client_secret.to_owned(),
            retry: RetryPolicy::default(),
            timeout: Duration::from_secs(30),
        }
    }

    /// Revokes the client's current token (`revokeToken`, RFC 7009) so that it answers 401 from
    /// now on, everywhere; the client's next call fetches a new one. Nothing is sent when the
    /// client holds no token yet.
    ///
    /// # Errors
    /// [`Error::Transport`] when the server cannot be reached, [`Error::Api`] when it refuses
    /// (the key pair, say); the client keeps its token then, so that the call can be repeated.
    pub async fn revoke_token(&self) -> Result<(), Error> {
        self.inner.tokens.revoke().await
    }

    /// The mode the key pair works in.
    pub fn mode(&self) -> Mode {
        self.inner.mode
    }

    /// Sends `call`, retrying as the [`RetryPolicy`] says, and decodes a successful answer.
    /// An error carries the call's idempotency key, when it has one.
    pub(crate) async fn json<T: DeserializeOwned>(&self, call: &Call) -> Result<T, Error> {
        let answer = self.send(call).await?;
        let decoded = match answer.bytes().await {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| Error::decode(format!("{} {}: {e}", call.method, call.path))),
            Err(e) => Err(Error::transport(e)),
        };
        decoded.map_err(|e| e.with_key(call.key.as_deref()))
    }

    /// Sends `call` until it succeeds, fails for good, or runs out of tries or time (the
    /// [`RetryPolicy`]): the successful answer. An error carries the call's idempotency key,
    /// when it has one.
    pub(crate) async fn send(&self, call: &Call) -> Result<reqwest::Response, Error> {
        self.send_tries(call).await.map_err(|e| e.with_key(call.key.as_deref()))
    }

    async fn send_tries(&self, call: &Call) -> Result<reqwest::Response, Error> {
        let policy = self.inner.retry;
        let deadline = Instant::now() + policy.max_elapsed;
        let left = || deadline.saturating_duration_since(Instant::now());
        let mut attempt = 0_u32;
        let mut refreshed = false;
        loop {
            attempt += 1;
            let token = match tokio::time::timeout(left(), self.inner.tokens.get()).await {
                Ok(Ok(token)) => Ok(token),
                Ok(Err(TokenFailure { error, retry: false })) => return Err(error),
                Ok(Err(TokenFailure { error, retry: true })) => Err(error),
                Err(_) => Err(Error::token(format!("no token within the retry budget of {:?}", policy.max_elapsed))),
            };
            let (failure, retry_after) = match token {
                Err(error) => (error, None),
                Ok(token) => match self.request(call, &token).timeout(self.inner.timeout.min(left())).send().await {
                    Ok(answer) if answer.status().is_success() => return Ok(answer),
                    Ok(answer) if answer.status() == StatusCode::UNAUTHORIZED && !refreshed => {
                        // Revoked, or expired early: one new token, and the same request again.
                        self.inner.tokens.refused(&token).await;
                        refreshed = true;
                        attempt -= 1;
                        continue;
                    }
                    Ok(answer) => {
                        let status = answer.status();
                        let retry_after = answer.headers().get(RETRY_AFTER).and_then(seconds);
                        let body = answer.bytes().await.unwrap_or_default();
                        let problem = ApiError::parse(status.as_u16(), &body, retry_after);
                        if !retried(status, &problem.code) {
                            return Err(Error::Api(Box::new(problem)));
                        }
                        (Error::Api(Box::new(problem)), retry_after)
                    }
                    Err(e) if e.is_builder() => return Err(Error::config(e.to_string())),
                    Err(e) => (Error::transport(e), None),
                },
            };
            let Some(wait) = policy.next_wait(attempt, left(), retry_after) else { return Err(failure) };
            tokio::time::sleep(wait).await;
        }
    }

    fn request(&self, call: &Call, token: &str) -> reqwest::RequestBuilder {
        let mut r = self.inner.http.request(call.method.clone(), format!("{}{}", self.inner.api, call.path)).bearer_auth(token);
        if !call.query.is_empty() {
            r = r.query(&call.query);
        }
        if let Some(key) = &call.key {
            r = r.header("Idempotency-Key", key);
        }
        if let Some((content_type, body)) = &call.body {
            r = r.header(CONTENT_TYPE, *content_type).body(body.clone());
        }
        r
    }
}

/// Whether an answer with `status` and `code` is worth another try of the same call: 408, 409
/// `idempotency_in_progress`, 429 and every 5xx.
fn retried(status: StatusCode, code: &ErrorCode) -> bool {
    status.is_server_error()
        || status == StatusCode::TOO_MANY_REQUESTS
        || status == StatusCode::REQUEST_TIMEOUT
        || (status == StatusCode::CONFLICT && *code == ErrorCode::IdempotencyInProgress)
}

/// `Retry-After` in seconds (the API never sends a date).
fn seconds(value: &HeaderValue) -> Option<Duration> {
    value.to_str().ok()?.trim().parse::<u64>().ok().map(Duration::from_secs)
}

/// One API call, as sent on every try.
#[derive(Debug, Clone)]
pub(crate) struct Call {
    pub(crate) method: Method,
    /// After `/api/v1`, e.g. `/partner/charges`.
    pub(crate) path: String,
    pub(crate) query: Vec<(String, String)>,
    pub(crate) key: Option<String>,
    /// The content type and the bytes, sent unchanged on every try.
    pub(crate) body: Option<(&'static str, Vec<u8>)>,
}

impl Call {
    /// A call of `op` without a body, its path parameters filled in order from `params`.
    pub(crate) fn to(op: Operation, params: &[&str]) -> Self {
        Call {
            method: Method::from_bytes(op.method.as_bytes()).unwrap_or(Method::GET),
            path: fill(op.path, params),
            query: Vec::new(),
            key: None,
            body: None,
        }
    }

    /// A state-changing call of `op` with `key` (a new random one when `None`) and a JSON body.
    pub(crate) fn json_body(op: Operation, params: &[&str], key: Option<&str>, body: &impl serde::Serialize) -> Result<Self, Error> {
        Call::keyed(op, params, &key.map_or_else(new_key, str::to_owned)).json(body)
    }

    /// A state-changing call of `op` without a body, under `key`.
    pub(crate) fn keyed(op: Operation, params: &[&str], key: &str) -> Self {
        Call { key: Some(key.to_owned()), ..Call::to(op, params) }
    }

    /// This call with `body` as JSON.
    pub(crate) fn json(self, body: &impl serde::Serialize) -> Result<Self, Error> {
        let bytes = serde_json::to_vec(body).map_err(|e| Error::config(format!("the request body: {e}")).with_key(self.key.as_deref()))?;
        Ok(self.body("application/json", bytes))
    }

    /// This call with `bytes` of `content_type` as its body, sent unchanged on every try.
    pub(crate) fn body(self, content_type: &'static str, bytes: Vec<u8>) -> Self {
        Call { body: Some((content_type, bytes)), ..self }
    }

    pub(crate) fn query(mut self, name: &str, value: Option<impl ToString>) -> Self {
        if let Some(v) = value {
            self.query.push((name.to_owned(), v.to_string()));
        }
        self
    }
}

/// `template` with each `{name}` replaced by the next of `params`, percent-encoded.
fn fill(template: &str, params: &[&str]) -> String {
    let mut out = String::with_capacity(template.len());
    let mut params = params.iter();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let close = rest[open..].find('}').map_or(rest.len(), |c| open + c);
        out.push_str(&segment(params.next().copied().unwrap_or_default()));
        rest = rest.get(close + 1..).unwrap_or_default();
    }
    out.push_str(rest);
    out
}

/// Everything but RFC 3986's unreserved characters.
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'_').remove(b'.').remove(b'~');

/// A path segment with everything but unreserved characters percent-encoded.
fn segment(text: &str) -> String {
    utf8_percent_encode(text, SEGMENT).to_string()
}

/// A fresh idempotency key.
pub(crate) fn new_key() -> String {
    uuid::Uuid::new_v4().to_string()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn path_parameters_are_filled_in_order_and_encoded() {
        assert_eq!(fill("/partner/charges/{charge_ref}", &["ch_1"]), "/partner/charges/ch_1");
        assert_eq!(fill("/a/{x}/b/{y}", &["1 2", "é/"]), "/a/1%202/b/%C3%A9%2F");
        assert_eq!(fill("/payouts", &[]), "/payouts");
    }

    #[test]
    fn backoff_doubles_within_its_cap_and_honours_retry_after() {
        let p =
            RetryPolicy { initial_backoff: Duration::from_millis(100), max_backoff: Duration::from_millis(400), ..RetryPolicy::default() };
        for attempt in 1..=6 {
            let ceiling = Duration::from_millis(100 * 2_u64.pow(attempt - 1)).min(Duration::from_millis(400));
            let wait = p.backoff(attempt, None);
            assert!(wait >= ceiling / 2 && wait <= ceiling, "attempt {attempt}: {wait:?}");
        }
        assert!(p.backoff(1, Some(Duration::from_secs(3))) >= Duration::from_secs(3));
    }

    /// Tries against a server that refuses at once, as `send` makes them: the waits and the tries.
    fn tries_against_a_dead_server(p: &RetryPolicy) -> (u32, Duration) {
        let (mut attempt, mut elapsed) = (1, Duration::ZERO);
        while let Some(wait) = p.next_wait(attempt, p.max_elapsed.saturating_sub(elapsed), None) {
            elapsed += wait;
            attempt += 1;
        }
        (attempt, elapsed)
    }

    #[test]
    fn the_default_budget_is_spent_in_full_within_60_s_and_20_tries() {
        let p = RetryPolicy::default();
        assert_eq!((p.max_attempts, p.max_elapsed), (20, Duration::from_secs(60)), "as docs/sdk.md says");
        for _ in 0..200 {
            let (tries, last_try_at) = tries_against_a_dead_server(&p);
            assert!(tries <= 20, "{tries} tries");
            assert!(last_try_at <= Duration::from_secs(60) - LEAST_TRY, "the last try starts at {last_try_at:?}");
            // The backoff never ends the call early: the waits go on to the budget's end.
            assert!(last_try_at >= Duration::from_millis(59_400), "gave up at {last_try_at:?} with {tries} tries");
        }
        let few = RetryPolicy { max_attempts: 3, ..p };
        let (tries, at) = tries_against_a_dead_server(&few);
        assert_eq!(tries, 3, "the tries run out first");
        assert!(at <= Duration::from_millis(750), "{at:?}");
    }

    #[test]
    fn a_retry_after_longer_than_the_budget_leaves_ends_the_call() {
        let p = RetryPolicy::default();
        assert_eq!(p.next_wait(1, Duration::from_secs(5), Some(Duration::from_secs(30))), None);
        assert_eq!(p.next_wait(1, Duration::from_secs(40), Some(Duration::from_secs(30))), Some(Duration::from_secs(30)));
        assert_eq!(p.next_wait(1, Duration::from_millis(400), None), None, "no room for a try");
        let cut = p.next_wait(1, Duration::from_millis(600), None).unwrap();
        assert!(cut <= Duration::from_millis(100), "cut to leave time for the try: {cut:?}");
    }

    #[test]
    fn what_is_retried_is_what_the_docs_say() {
        let in_progress = ErrorCode::IdempotencyInProgress;
        let other = ErrorCode::ValidationFailed;
        for (status, code, again) in [
            (408, &other, true),
            (409, &in_progress, true),
            (409, &ErrorCode::InvalidState, false),
            (429, &ErrorCode::RateLimited, true),
            (500, &ErrorCode::InternalError, true),
            (502, &other, true),
            (503, &ErrorCode::Unavailable, true),
            (504, &other, true),
            (400, &ErrorCode::InvalidRequest, false),
            (404, &ErrorCode::NotFound, false),
            (422, &other, false),
        ] {
            assert_eq!(retried(StatusCode::from_u16(status).unwrap(), code), again, "{status} {}", code.as_str());
        }
        // The crate's documentation names each of them.
        let docs: String = include_str!("lib.rs").lines().filter_map(|l| l.strip_prefix("//!")).collect::<Vec<_>>().join(" ");
        for named in ["network errors", "408", "409 `idempotency_in_progress`", "429", "503", "5xx", "20 tries", "60 s"] {
            assert!(docs.contains(named), "the crate docs do not name {named}");
        }
    }
}

#[cfg(test)]
mod key_tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use std::sync::{Arc, Mutex};

    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use crate::{Client, Error, NewCharge, RetryPolicy};

    /// A fake API answering every call but the token's 422, and the `Idempotency-Key` of each.
    async fn refusing_api() -> (String, Arc<Mutex<Vec<String>>>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let keys = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&keys);
        tokio::spawn(async move {
            while let Ok((mut s, _)) = listener.accept().await {
                let mut buf = vec![0_u8; 65_536];
                let n = s.read(&mut buf).await.unwrap_or(0);
                let request = String::from_utf8_lossy(&buf[..n]).into_owned();
                let body = if request.starts_with("POST /api/v1/oauth/token") {
                    r#"{"access_token":"tok","token_type":"Bearer","expires_in":3600}"#
                } else {
                    let key = request.lines().find_map(|l| l.strip_prefix("idempotency-key: ")).unwrap_or("").trim().to_owned();
                    seen.lock().unwrap().push(key);
                    r#"{"title":"t","status":422,"code":"validation_failed","detail":"no","errors":[]}"#
                };
                let status = if body.contains("access_token") { "200 OK" } else { "422 X" };
                let answer = format!(
                    "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = s.write_all(answer.as_bytes()).await;
                let _ = s.shutdown().await;
            }
        });
        (base, keys)
    }

    #[tokio::test]
    async fn the_error_of_a_write_carries_the_key_it_was_sent_under() {
        let (base, keys) = refusing_api().await;
        let client = Client::new(&base, "ck_test_x", "cs").unwrap();
        let charge = NewCharge::new("254712345678", rust_decimal::Decimal::new(100, 2), "R");
        let generated = client.charges().create(&charge).await.unwrap_err();
        let key = generated.idempotency_key().expect("the generated key").to_owned();
        assert_eq!(keys.lock().unwrap().last().unwrap(), &key, "the key sent is the key carried");
        let Error::Api(problem) = &generated else { panic!("{generated:?}") };
        assert_eq!(problem.idempotency_key.as_deref(), Some(key.as_str()));
        let given = client.charges().create_with_key(&charge, "my-key-1").await.unwrap_err();
        assert_eq!(given.idempotency_key(), Some("my-key-1"));
        assert_eq!(client.charges().get("ch_1").await.unwrap_err().idempotency_key(), None, "a read has no key");
    }

    #[tokio::test]
    async fn a_write_that_got_no_answer_carries_its_key_too() {
        // A port nothing listens on any more: connection refused, not retried.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        drop(listener);
        let client = Client::builder(&base, "ck_test_x", "cs").retry(RetryPolicy::never()).build().unwrap();
        let failed = client.payouts().create(&crate::NewPayout::new("254712345678", rust_decimal::Decimal::ONE, "R")).await.unwrap_err();
        assert!(matches!(failed, Error::Token { .. }), "{failed:?}");
        assert!(failed.idempotency_key().is_some_and(|k| k.len() == 36), "{failed:?}");
    }
}
