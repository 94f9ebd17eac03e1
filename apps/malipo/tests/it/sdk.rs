//! The Rust client (`crates/malipo-client`) against the real server on both backends: charges
//! created, read, listed as a stream; the API's problems as typed errors; one token for many
//! concurrent calls (counted by a relay in front of the server); and its retries: an answer the
//! relay drops after the server committed, and a fake that answers 503 with `Retry-After` or 422.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::TryStreamExt;
use malipo_client::{
    AccountKind, ChargeFilter, ChargeState, Client, Error, ErrorCode, NewCharge, NewPayout, NewReversal, Original, PayoutFilter,
    PayoutState, RetryPolicy, TransactionFilter,
};
use rust_decimal::Decimal;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::harness::{Db, TestApp};

crate::on_both!(
    a_charge_is_created_read_and_listed_through_the_client,
    a_payout_and_a_reversal_go_through_the_client_and_move_the_balance,
    a_days_export_streams_and_reconciles_with_its_report,
    real_deliveries_verify_and_the_endpoint_and_its_events_are_managed_through_the_client,
    the_apis_problems_are_typed_errors_and_a_4xx_is_not_retried,
    sixty_four_concurrent_calls_share_one_token,
    a_revoked_token_is_refused_and_the_client_fetches_another,
    an_answer_lost_after_the_commit_is_retried_with_the_same_key_and_one_charge_exists,
    a_failed_create_carries_its_key_and_the_with_key_retry_makes_one_charge,
);

async fn client(app: &TestApp) -> Client {
    let c = app.merchant().await;
    Client::new(&app.base, &c.client_id, &c.client_secret).unwrap()
}

fn amount(minor: i64) -> Decimal {
    Decimal::new(minor, 2)
}

async fn a_charge_is_created_read_and_listed_through_the_client(db: Db) {
    let app = TestApp::shared(db);
    let client = client(app).await;
    let made = client.charges().create(&NewCharge::new("254712345678", amount(25_050), "SDK-1").description("two things")).await.unwrap();
    assert!(made.charge_ref.starts_with("ch_"));
    assert_eq!((made.state, made.amount, made.currency.as_str()), (ChargeState::Pending, amount(25_050), "KES"));
    assert_eq!(made.description.as_deref(), Some("two things"));
    let deadline = Instant::now() + Duration::from_secs(20);
    let done = loop {
        let c = client.charges().get(&made.charge_ref).await.unwrap();
        if c.state.is_final() {
            break c;
        }
        assert!(Instant::now() < deadline, "still {:?}", c.state);
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(done.state, ChargeState::Completed);
    assert_eq!(client.charges().by_reference("SDK-1").await.unwrap().charge_ref, made.charge_ref);
    // Three more, and the list read as a stream of pages of two.
    for n in 2..=4 {
        client.charges().create(&NewCharge::new("254712345678", amount(100), format!("SDK-{n}"))).await.unwrap();
    }
    let all: Vec<_> = client.charges().list(ChargeFilter::default()).limit(2).stream().try_collect().await.unwrap();
    let refs: Vec<&str> = all.iter().map(|c| c.reference.as_str()).collect();
    assert_eq!(refs, ["SDK-4", "SDK-3", "SDK-2", "SDK-1"], "every page, newest first");
    let completed: Vec<_> =
        client.charges().list(ChargeFilter::default().state(ChargeState::Completed)).stream().try_collect().await.unwrap();
    assert!(completed.iter().any(|c| c.charge_ref == made.charge_ref) && completed.iter().all(|c| c.state == ChargeState::Completed));
}

async fn a_payout_and_a_reversal_go_through_the_client_and_move_the_balance(db: Db) {
    let app = TestApp::shared(db);
    let c = app.merchant().await;
    app.fund(&c.org_id, malipo_core::Mode::Test, "1000").await;
    let client = Client::new(&app.base, &c.client_id, &c.client_secret).unwrap();
    let before = client.accounts().balance(AccountKind::Payout).await.unwrap();
    assert_eq!((before.account.as_str(), before.available, before.currency.as_str()), ("payout", amount(100_000), "KES"));
    let org = client.accounts().organisation().await.unwrap();
    assert_eq!((org.id.as_str(), org.time_zone.as_str(), org.currency.as_str()), (c.org_id.as_str(), "Africa/Nairobi", "KES"));
    let payout = client.payouts().create(&NewPayout::new("254712345678", amount(5_000), "SDK-PO").narration("salary")).await.unwrap();
    assert_eq!((payout.state, payout.amount, payout.narration.as_deref()), (PayoutState::Pending, amount(5_000), Some("salary")));
    let deadline = Instant::now() + Duration::from_secs(20);
    let paid = loop {
        let p = client.payouts().get(&payout.payout_ref).await.unwrap();
        if p.state != PayoutState::Pending {
            break p;
        }
        assert!(Instant::now() < deadline, "payout still pending");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(paid.state, PayoutState::Completed);
    let after = client.accounts().balance(AccountKind::Payout).await.unwrap();
    assert_eq!(after.available, before.available - paid.amount - paid.fee, "amount and fee paid from the payout account");
    let listed: Vec<_> = client.payouts().list(PayoutFilter::default()).stream().try_collect().await.unwrap();
    assert_eq!(listed.iter().map(|p| p.payout_ref.as_str()).collect::<Vec<_>>(), [paid.payout_ref.as_str()]);
    let back = client
        .reversals()
        .create(&NewReversal::new(Original::Payout(paid.payout_ref.clone()), "paid twice").amount(amount(1_000)))
        .await
        .unwrap();
    assert_eq!(
        (back.payout_ref.as_deref(), back.amount, back.state.as_str()),
        (Some(paid.payout_ref.as_str()), amount(1_000), "completed")
    );
    assert_eq!(client.reversals().get(&back.reversal_id).await.unwrap(), back);
    assert_eq!(client.payouts().get(&paid.payout_ref).await.unwrap().amount_reversed, amount(1_000));
    let too_much = client
        .reversals()
        .create(&NewReversal::new(Original::Payout(paid.payout_ref.clone()), "again").amount(amount(5_000)))
        .await
        .unwrap_err();
    assert_eq!(too_much.code(), Some(&ErrorCode::ReversalExceedsOriginal));
    let all: Vec<_> = client.reversals().list().stream().try_collect().await.unwrap();
    assert_eq!(all, [back]);
}

async fn a_days_export_streams_and_reconciles_with_its_report(db: Db) {
    let app = TestApp::shared(db);
    let client = client(app).await;
    let mut refs = Vec::new();
    for n in 0..3 {
        refs.push(
            client.charges().create(&NewCharge::new("254712345678", amount(10_000 + n), format!("SDK-REC-{n}"))).await.unwrap().charge_ref,
        );
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    for r in &refs {
        while !client.charges().get(r).await.unwrap().state.is_final() {
            assert!(Instant::now() < deadline, "{r} never final");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    let listed: Vec<_> = client.transactions().list(TransactionFilter::default()).stream().try_collect().await.unwrap();
    assert_eq!(listed.len(), 3);
    assert_eq!(client.transactions().get(&listed[0].transaction_id).await.unwrap(), listed[0]);
    let mut csv = Vec::new();
    let written = client.transactions().export(&TransactionFilter::default().account("collection"), &mut csv).await.unwrap();
    let text = String::from_utf8(csv).unwrap();
    assert_eq!(written as usize, text.len());
    assert!(text.starts_with("transaction_id,created_at,type,source_ref,account,amount,fee,net,currency,balance_after"), "{text}");
    assert_eq!(text.lines().count(), 4, "a header and three rows: {text}");
    // Today in Nairobi (the merchant's country's day), as the report counts days: the client
    // finds it from the organisation's country, whatever this machine's zone.
    let nairobi = || (time::OffsetDateTime::now_utc() + time::Duration::hours(3)).date();
    let (before, today, after) = (nairobi(), client.transactions().today().await.unwrap(), nairobi());
    assert!(today == before || today == after, "{today} is not Nairobi's {before}");
    let balance = client.accounts().balance(AccountKind::Collection).await.unwrap();
    assert_eq!((balance.country.as_str(), balance.time_zone.as_str()), ("KE", "Africa/Nairobi"));
    let rec = client.transactions().reconcile_today(None).await.unwrap();
    assert_eq!(rec.report.date, today.to_string());
    assert!(rec.agrees(), "{:?}", rec.differences);
    assert_eq!((rec.transaction_count, rec.report.transaction_count), (3, 3));
    assert_eq!(rec.checksum, rec.report.checksum);
}

async fn real_deliveries_verify_and_the_endpoint_and_its_events_are_managed_through_the_client(db: Db) {
    use malipo_client::{EventKind, NewEndpoint, WebhookError, Webhooks};
    let app = TestApp::shared(db);
    let client = client(app).await;
    let receiver = crate::webhooks_delivery::Receiver::answering(200).await;
    let endpoint = client.webhooks().create(&NewEndpoint::for_kinds(receiver.url(), &[EventKind::ChargeCompleted])).await.unwrap();
    let secret = endpoint.secret.clone().unwrap();
    assert!(secret.starts_with("whsec_") && endpoint.enabled);
    assert_eq!(client.webhooks().get(&endpoint.endpoint_id).await.unwrap().secret, None, "the secret is shown once");
    let charge = client.charges().create(&NewCharge::new("254712345678", amount(4_200), "SDK-HOOK")).await.unwrap();
    let hits = receiver.wait("the charge.completed delivery", Duration::from_secs(20), |h| !h.is_empty()).await;
    let hit = &hits[0];
    let headers = |name: &str| Some(hit.header(name).to_owned()).filter(|v| !v.is_empty());
    let event = Webhooks::verify(&secret, &headers, &hit.body).unwrap();
    assert_eq!(event.kind, EventKind::ChargeCompleted);
    assert_eq!(event.charge().map(|c| c.charge_ref), Some(charge.charge_ref.clone()), "the typed charge of the event");
    // The same delivery verified from its parsed JSON alone, by the body's `signature` member.
    let parsed: serde_json::Value = serde_json::from_slice(&hit.body).unwrap();
    assert_eq!(Webhooks::new(&secret).unwrap().check_parsed_at(&parsed, event.timestamp).unwrap().id, event.id);
    let mut changed = parsed.clone();
    changed["amount"] = serde_json::json!("4200.01");
    assert_eq!(Webhooks::new(&secret).unwrap().check_parsed_at(&changed, event.timestamp).unwrap_err(), WebhookError::Signature);
    // Tampered, stale, or under another secret: refused.
    let mut tampered = hit.body.clone();
    tampered[10] ^= 1;
    assert_eq!(Webhooks::verify(&secret, &headers, &tampered).unwrap_err(), WebhookError::Signature);
    let stale = Webhooks::new(&secret).unwrap().check_at(&headers, &hit.body, event.timestamp + 3600).unwrap_err();
    assert_eq!(stale, WebhookError::Timestamp);
    // Rotated: the redelivery carries the new and the old secrets' signatures; each verifies.
    let rotated = client.webhooks().rotate_secret(&endpoint.endpoint_id).await.unwrap();
    let new_secret = rotated.secret.clone().unwrap();
    assert_ne!(new_secret, secret);
    assert!(rotated.previous_secret_expires_at.is_some());
    let events: Vec<_> = client.webhooks().events(Some(EventKind::ChargeCompleted)).stream().try_collect().await.unwrap();
    let stored = events.iter().find(|e| e.object_id == charge.charge_ref).expect("the event is listed");
    assert_eq!(stored.id, event.id);
    let queued = client.webhooks().redeliver(&event.id, None).await.unwrap();
    assert_eq!(queued.endpoint_ids, std::slice::from_ref(&endpoint.endpoint_id));
    let hits = receiver.wait("the redelivery", Duration::from_secs(20), |h| h.len() >= 2).await;
    let again = &hits[1];
    let headers = |name: &str| Some(again.header(name).to_owned()).filter(|v| !v.is_empty());
    assert_eq!(again.header("webhook-signature").split_whitespace().count(), 2, "signed with both secrets");
    assert_eq!(Webhooks::verify(&new_secret, &headers, &again.body).unwrap().id, event.id);
    assert_eq!(Webhooks::verify(&secret, &headers, &again.body).unwrap().id, event.id);
    let detail = client.webhooks().event(&event.id).await.unwrap();
    assert_eq!(detail.deliveries.len(), 2);
    assert!(detail.attempts.iter().all(|a| a.status == Some(200)));
    let listed: Vec<_> = client.webhooks().list().stream().try_collect().await.unwrap();
    assert_eq!(listed.iter().map(|e| e.endpoint_id.as_str()).collect::<Vec<_>>(), [endpoint.endpoint_id.as_str()]);
    let deleted = client.webhooks().delete(&endpoint.endpoint_id).await.unwrap();
    assert!(deleted.deleted && !deleted.enabled);
    // The callback secret (the GSMA door's callbacks): the same until rotated.
    let callback = client.webhooks().callback_secret().await.unwrap();
    assert!(callback.secret.starts_with("whsec_") && callback.previous_secret_expires_at.is_none());
    assert_eq!(client.webhooks().callback_secret().await.unwrap().secret, callback.secret);
    let turned = client.webhooks().rotate_callback_secret().await.unwrap();
    assert!(turned.secret != callback.secret && turned.previous_secret_expires_at.is_some());
    assert_eq!(client.webhooks().callback_secret().await.unwrap().secret, turned.secret);
}

/// The client's surface is the document's: every operation it calls exists in the served
/// document with the same method and path, and every documented operation is called, apart
/// from those it reaches otherwise (the token, through `oauth2`) or not at all (the server's own
/// probes); `operations::tests` holds each entry of the table to a method that sends it.
#[actix_web::test]
async fn the_client_calls_exactly_the_documented_operations() {
    let app = TestApp::shared(Db::Sqlite);
    let doc: serde_json::Value = app.http.get(app.url("/api/v1/openapi.json")).send().await.unwrap().json().await.unwrap();
    let mut documented = std::collections::BTreeMap::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            documented.insert(op["operationId"].as_str().unwrap().to_owned(), (method.to_uppercase(), path.clone()));
        }
    }
    for op in malipo_client::operations::OPERATIONS {
        let found = documented.get(op.id).unwrap_or_else(|| panic!("the client calls {}, which the document does not have", op.id));
        assert_eq!(found, &(op.method.to_owned(), format!("/api/v1{}", op.path)), "{}", op.id);
    }
    let called: std::collections::BTreeSet<&str> = malipo_client::operations::OPERATIONS.iter().map(|o| o.id).collect();
    const OTHERWISE: [&str; 4] = ["createToken", "getHealth", "getReadiness", "getOpenApiDocument"];
    let uncalled: Vec<&str> = documented.keys().map(String::as_str).filter(|id| !called.contains(id) && !OTHERWISE.contains(id)).collect();
    assert!(uncalled.is_empty(), "documented operations the client does not call: {uncalled:?}");
}

async fn the_apis_problems_are_typed_errors_and_a_4xx_is_not_retried(db: Db) {
    let app = TestApp::shared(db);
    let client = client(app).await;
    let started = Instant::now();
    let refused = client.charges().create(&NewCharge::new("12", amount(100), "SDK-BAD")).await.unwrap_err();
    let Error::Api(problem) = &refused else { panic!("{refused:?}") };
    assert_eq!((problem.status, &problem.code), (422, &ErrorCode::ValidationFailed));
    assert!(problem.errors.iter().any(|e| e.field == "payer_msisdn" && e.code == "invalid_msisdn"), "{problem:?}");
    assert!(problem.request_id.as_deref().is_some_and(|r| r.starts_with("req_")));
    assert!(started.elapsed() < Duration::from_secs(1), "no backoff: a 4xx is not retried");
    let missing = client.charges().get("ch_doesnotexist").await.unwrap_err();
    assert_eq!(missing.code(), Some(&ErrorCode::NotFound));
    let wrong = Client::new(&app.base, "ck_test_nobody", "cs_test_nothing").unwrap();
    assert!(matches!(wrong.charges().get("ch_x").await, Err(Error::Token { .. })), "a refused key pair is a token error");
}

async fn sixty_four_concurrent_calls_share_one_token(db: Db) {
    let app = TestApp::shared(db);
    let c = app.merchant().await;
    let upstream: std::net::SocketAddr = app.base.trim_start_matches("http://").parse().unwrap();
    let relay = Relay::start(upstream, false).await;
    let shared = Client::new(&format!("http://{}", relay.addr), &c.client_id, &c.client_secret).unwrap();
    // A new client's first calls, 64 at once from clones on as many tasks.
    let calls: Vec<_> = (0..64)
        .map(|n| {
            let client = shared.clone();
            tokio::spawn(async move { client.charges().get(&format!("ch_sdktoken{n}")).await })
        })
        .collect();
    for call in calls {
        assert_eq!(call.await.unwrap().unwrap_err().code(), Some(&ErrorCode::NotFound), "each call answered, with a token");
    }
    assert_eq!(relay.tokens.load(Ordering::SeqCst), 1, "one token request for 64 concurrent calls");
    assert!(relay.calls.load(Ordering::SeqCst) >= 65, "64 calls and the token request (and any retries)");
}

async fn a_revoked_token_is_refused_and_the_client_fetches_another(db: Db) {
    let app = TestApp::shared(db);
    let c = app.merchant().await;
    let upstream: std::net::SocketAddr = app.base.trim_start_matches("http://").parse().unwrap();
    let relay = Relay::start(upstream, false).await;
    let client = Client::new(&format!("http://{}", relay.addr), &c.client_id, &c.client_secret).unwrap();
    client.accounts().balance(AccountKind::Collection).await.unwrap();
    let first = relay.bearer.lock().unwrap().clone();
    assert!(!first.is_empty(), "the call carried a bearer token");
    assert_eq!(app.get(&first, "/api/v1/partner/balance").await.status(), 200, "the token works before");
    client.revoke_token().await.unwrap();
    let refused = app.get(&first, "/api/v1/partner/balance").await;
    assert_eq!(refused.status(), 401, "a revoked token is refused everywhere at once");
    client.accounts().balance(AccountKind::Collection).await.unwrap();
    let second = relay.bearer.lock().unwrap().clone();
    assert_ne!(second, first, "the next call fetched a new token");
    assert_eq!(relay.tokens.load(Ordering::SeqCst), 2, "one token before the revocation, one after");
    client.revoke_token().await.unwrap();
    client.revoke_token().await.unwrap(); // nothing held: nothing sent, no error
    assert_eq!(app.get(&second, "/api/v1/partner/balance").await.status(), 401);
}

/// A relay in front of the server that counts what passes; with `drop_first_stk`, the first
/// `POST /partner/stk` is relayed and committed by the server but its answer dropped (the
/// connection closed), as a network that fails after the commit would.
struct Relay {
    addr: std::net::SocketAddr,
    stk: Arc<AtomicUsize>,
    tokens: Arc<AtomicUsize>,
    calls: Arc<AtomicUsize>,
    /// The `Authorization` header of the last request that had one.
    bearer: Arc<std::sync::Mutex<String>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Relay {
    async fn start(upstream: std::net::SocketAddr, drop_first_stk: bool) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stk, tokens, calls) = (Arc::default(), Arc::default(), Arc::default());
        let counters: [Arc<AtomicUsize>; 3] = [Arc::clone(&stk), Arc::clone(&tokens), Arc::clone(&calls)];
        let bearer = Arc::new(std::sync::Mutex::new(String::new()));
        let seen = Arc::clone(&bearer);
        let task = tokio::spawn(async move {
            loop {
                let Ok((mut client, _)) = listener.accept().await else { continue };
                let [stk, tokens, calls] = counters.clone();
                let seen = Arc::clone(&seen);
                tokio::spawn(async move {
                    let Some(request) = read_message(&mut client).await else { return };
                    calls.fetch_add(1, Ordering::SeqCst);
                    let head = String::from_utf8_lossy(&request).into_owned();
                    if let Some(auth) = head.lines().find_map(|l| l.strip_prefix("authorization: Bearer ")) {
                        *seen.lock().unwrap() = auth.trim().to_owned();
                    }
                    if request.starts_with(b"POST /api/v1/oauth/token ") {
                        tokens.fetch_add(1, Ordering::SeqCst);
                    }
                    let first_stk = request.starts_with(b"POST /api/v1/partner/stk ") && stk.fetch_add(1, Ordering::SeqCst) == 0;
                    let mut server = TcpStream::connect(upstream).await.unwrap();
                    server.write_all(&close_after(&request)).await.unwrap();
                    let Some(answer) = read_message(&mut server).await else { return };
                    if drop_first_stk && first_stk {
                        return; // committed by the server; the answer is lost
                    }
                    let _ = client.write_all(&answer).await;
                    let _ = client.shutdown().await;
                });
            }
        });
        Relay { addr, stk, tokens, calls, bearer, task }
    }
}

/// One HTTP/1.1 message (headers and a `Content-Length` body) from `stream`.
async fn read_message(stream: &mut TcpStream) -> Option<Vec<u8>> {
    let mut buf = Vec::new();
    let mut chunk = [0_u8; 8192];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
            let length: usize =
                head.lines().find_map(|l| l.strip_prefix("content-length:")).and_then(|v| v.trim().parse().ok()).unwrap_or(0);
            if buf.len() >= end + 4 + length {
                buf.truncate(end + 4 + length);
                return Some(buf);
            }
        }
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// The request with `Connection: close`, so that the server's answer is the last thing on it.
fn close_after(request: &[u8]) -> Vec<u8> {
    let end = request.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let head = String::from_utf8_lossy(&request[..end]);
    let kept: Vec<&str> = head.split("\r\n").filter(|l| !l.to_ascii_lowercase().starts_with("connection:")).collect();
    let mut out = format!("{}\r\nConnection: close\r\n\r\n", kept.join("\r\n")).into_bytes();
    out.extend_from_slice(&request[end + 4..]);
    out
}

async fn an_answer_lost_after_the_commit_is_retried_with_the_same_key_and_one_charge_exists(db: Db) {
    let app = TestApp::shared(db);
    let c = app.merchant().await;
    let upstream: std::net::SocketAddr = app.base.trim_start_matches("http://").parse().unwrap();
    let fake = Relay::start(upstream, true).await;
    let policy = RetryPolicy { initial_backoff: Duration::from_millis(20), ..RetryPolicy::default() };
    let through = Client::builder(&format!("http://{}", fake.addr), &c.client_id, &c.client_secret).retry(policy).build().unwrap();
    let charge = through.charges().create(&NewCharge::new("254712345678", amount(700), "SDK-LOST")).await.unwrap();
    assert_eq!(fake.stk.load(Ordering::SeqCst), 2, "the first answer was dropped, the retry answered");
    let direct = Client::new(&app.base, &c.client_id, &c.client_secret).unwrap();
    let listed: Vec<_> = direct.charges().list(ChargeFilter::default()).stream().try_collect().await.unwrap();
    let lost: Vec<_> = listed.iter().filter(|x| x.reference == "SDK-LOST").collect();
    assert_eq!(lost.len(), 1, "one charge for the two tries: {lost:?}");
    assert_eq!(lost[0].charge_ref, charge.charge_ref, "the retry answered the committed charge");
}

/// The one safe retry `docs/sdk.md` prescribes: a create whose answer was lost (and that the
/// client did not retry) fails with the key it generated; the `_with_key` form with that key
/// answers the charge the first try made, and no second one exists.
async fn a_failed_create_carries_its_key_and_the_with_key_retry_makes_one_charge(db: Db) {
    let app = TestApp::shared(db);
    let c = app.merchant().await;
    let upstream: std::net::SocketAddr = app.base.trim_start_matches("http://").parse().unwrap();
    let fake = Relay::start(upstream, true).await;
    let through =
        Client::builder(&format!("http://{}", fake.addr), &c.client_id, &c.client_secret).retry(RetryPolicy::never()).build().unwrap();
    let order = NewCharge::new("254712345678", amount(900), "SDK-KEY");
    let failed = through.charges().create(&order).await.unwrap_err();
    assert!(matches!(failed, Error::Transport { .. }), "the answer was lost: {failed:?}");
    let key = failed.idempotency_key().expect("the error of a write carries its key").to_owned();
    let charge = through.charges().create_with_key(&order, &key).await.unwrap();
    assert_eq!(fake.stk.load(Ordering::SeqCst), 2);
    let listed: Vec<_> = through.charges().list(ChargeFilter::default()).stream().try_collect().await.unwrap();
    let made: Vec<_> = listed.iter().filter(|x| x.reference == "SDK-KEY").collect();
    assert_eq!(made.len(), 1, "one charge for the call and its retry: {made:?}");
    assert_eq!(made[0].charge_ref, charge.charge_ref);
}

/// A fake API that answers every call with `status` (and `Retry-After: 1` on 503), counting
/// the calls; the token endpoint answers a token.
async fn fake_api(status: u16) -> (String, Arc<AtomicUsize>, tokio::task::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&calls);
    let task = tokio::spawn(async move {
        loop {
            let Ok((mut s, _)) = listener.accept().await else { continue };
            let counted = Arc::clone(&counted);
            tokio::spawn(async move {
                let Some(request) = read_message(&mut s).await else { return };
                let (code, body, extra) = if request.starts_with(b"POST /api/v1/oauth/token ") {
                    (200, r#"{"access_token":"tok","token_type":"Bearer","expires_in":3600}"#.to_owned(), "")
                } else {
                    counted.fetch_add(1, Ordering::SeqCst);
                    let body = format!(
                        r#"{{"type":"about:blank","title":"t","status":{status},"code":"{}","request_id":"req_1"}}"#,
                        if status == 503 { "unavailable" } else { "validation_failed" }
                    );
                    (status, body, if status == 503 { "Retry-After: 1\r\n" } else { "" })
                };
                let answer = format!(
                    "HTTP/1.1 {code} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{extra}Connection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = s.write_all(answer.as_bytes()).await;
                let _ = s.shutdown().await;
            });
        }
    });
    (base, calls, task)
}

#[actix_web::test]
async fn a_503_with_retry_after_is_waited_for_and_retried_until_the_tries_run_out() {
    let (base, calls, task) = fake_api(503).await;
    let policy = RetryPolicy { max_attempts: 3, ..RetryPolicy::default() };
    let client = Client::builder(&base, "ck_test_x", "cs").retry(policy).build().unwrap();
    let started = Instant::now();
    let e = client.charges().get("ch_1").await.unwrap_err();
    let waited = started.elapsed();
    task.abort();
    assert_eq!(e.code(), Some(&ErrorCode::Unavailable));
    assert_eq!(calls.load(Ordering::SeqCst), 3, "three tries");
    assert!(waited >= Duration::from_secs(2), "waited Retry-After: 1 twice: {waited:?}");
    let Error::Api(problem) = e else { unreachable!() };
    assert_eq!(problem.retry_after, Some(Duration::from_secs(1)));
}

#[actix_web::test]
async fn a_422_is_answered_at_once_without_a_retry() {
    let (base, calls, task) = fake_api(422).await;
    let client = Client::new(&base, "ck_test_x", "cs").unwrap();
    let e = client.charges().create(&NewCharge::new("254712345678", amount(100), "R")).await.unwrap_err();
    task.abort();
    assert_eq!(e.code(), Some(&ErrorCode::ValidationFailed));
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

/// The client's failure reasons are the server's, name for name (an `Other` would hide a new one).
#[test]
fn the_clients_failure_reasons_are_the_servers() {
    let charge: Vec<&str> = malipo_charges::FailureReason::ALL.iter().map(|r| r.as_str()).collect();
    assert_eq!(charge, malipo_client::ChargeFailure::NAMES);
    let payout: Vec<&str> = malipo_payouts::PayoutFailure::ALL.iter().map(|r| r.as_str()).collect();
    assert_eq!(payout, malipo_client::PayoutFailure::NAMES);
}
