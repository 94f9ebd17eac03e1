//! Charges in the console (console contract section 4, Merchant): the list and its filters, a
//! charge's page (state history, webhook deliveries), and "Refund" with its refusals, as a
//! browser without script meets them.

use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::{join, Browser, Page};
use crate::harness::{msisdn, Creds, Db, Options, TestApp};
use crate::on_both;

on_both!(
    the_list_is_newest_first_and_each_filter_narrows_it,
    the_list_pages_with_next_page,
    a_refused_filter_keeps_its_values_with_errors_beside_the_fields,
    a_charge_page_shows_its_history_and_webhook_deliveries,
    a_pending_charge_page_refreshes_its_history_from_a_fragment,
    refunds_half_then_the_rest_and_a_third_is_refused,
    a_refused_refund_form_keeps_its_values_with_errors_beside_the_fields,
    a_refund_form_submitted_twice_makes_one_reversal,
    a_viewer_sees_no_refund_form_and_a_hand_made_post_is_refused,
    a_refund_from_another_origin_or_without_its_token_is_refused,
    a_test_session_cannot_see_or_refund_a_live_charge,
    markup_and_direction_overrides_are_shown_as_text,
);

const WAIT: Duration = Duration::from_secs(10);

/// A new merchant of the shared server, its API token, and a signed-in person with `role`.
async fn merchant_with(app: &TestApp, role: &str) -> (Creds, String, Browser) {
    let (m, token) = app.merchant_token().await;
    let (b, _) = join(app, &m.org_id, role).await;
    (m, token, b)
}

/// Pushes a test charge with this reference and returns its ref.
async fn push(app: &TestApp, token: &str, payer: &str, amount: &str, reference: &str) -> String {
    let body = json!({"payer_msisdn": payer, "amount": amount, "reference": reference, "idem": uuid::Uuid::new_v4().to_string()});
    let r = app.post(token, "/partner/stk", &body, None).await;
    let status = r.status().as_u16();
    let v: Value = r.json().await.unwrap();
    assert_eq!(status, 200, "{v}");
    v["charge_ref"].as_str().unwrap().to_owned()
}

/// A completed charge of `amount`.
async fn completed(app: &TestApp, token: &str, amount: &str) -> String {
    let r = push(app, token, &msisdn("0001"), amount, "ORDER-1").await;
    app.wait_for(token, &r, "completed", WAIT).await;
    r
}

/// The charge refs of the list's rows, in order.
fn listed(page: &Page) -> Vec<String> {
    page.texts("tbody tr td:first-child a")
}

/// The charge's reversals, as the API lists them.
async fn reversals_of(app: &TestApp, token: &str, charge: &str) -> Vec<Value> {
    let v = app.get_json(token, "/reversals?limit=100").await;
    v["data"].as_array().unwrap().iter().filter(|r| r["charge_ref"] == charge).cloned().collect()
}

/// The value shown for `label` in the charge's facts.
fn fact(page: &Page, label: &str) -> String {
    let labels = page.texts("dl.facts dt");
    let values = page.texts("dl.facts dd");
    let i = labels.iter().position(|l| l == label).unwrap_or_else(|| panic!("no {label} in {labels:?}"));
    values[i].clone()
}

/// Posts the charge page's refund form with these values (its CSRF token and one-time key).
async fn refund(b: &mut Browser, charge: &str, amount: &str, reason: &str) -> Page {
    let page = b.get(&format!("/console/charges/{charge}")).await;
    let key = page.value_of("idempotency_key").unwrap_or_else(|| panic!("no refund form:\n{}", page.html));
    b.post(
        &format!("/console/charges/{charge}/refund"),
        &[("csrf_token", &page.csrf()), ("idempotency_key", &key), ("amount", amount), ("reason", reason)],
    )
    .await
}

async fn the_list_is_newest_first_and_each_filter_narrows_it(db: Db) {
    let app = TestApp::shared(db);
    let (_, token, mut b) = merchant_with(app, "viewer").await;
    let (amina, baraka) = (msisdn("0001"), msisdn("1003"));
    let first = push(app, &token, &amina, "100.00", "INV-A").await;
    let failed = push(app, &token, &baraka, "200.00", "INV-B").await;
    let last = push(app, &token, &amina, "300.00", "INV-C").await;
    app.wait_for(&token, &first, "completed", WAIT).await;
    app.wait_for(&token, &failed, "failed", WAIT).await;
    app.wait_for(&token, &last, "completed", WAIT).await;

    let all = b.get("/console/charges").await;
    assert_eq!(all.status, 200, "{}", all.html);
    assert_eq!(all.text("h1"), "Charges");
    assert!(all.texts("nav a").contains(&"Charges".to_owned()));
    assert_eq!(listed(&all), vec![last.clone(), failed.clone(), first.clone()], "newest first");
    let row = all.texts("tbody tr").into_iter().find(|r| r.contains(&first)).unwrap();
    for shown in ["completed", "KES 100.00", amina.as_str(), "INV-A", "Africa/Nairobi"] {
        assert!(row.contains(shown), "{shown} in {row}");
    }
    assert_eq!(all.attrs(&format!("a[href='/console/charges/{first}']"), "href").len(), 1, "each row links to its charge");

    let by = |q: &str| format!("/console/charges?{q}");
    assert_eq!(listed(&b.get(&by("state=failed")).await), vec![failed.clone()]);
    assert_eq!(listed(&b.get(&by("state=completed")).await), vec![last.clone(), first.clone()]);
    assert_eq!(listed(&b.get(&by("state=expired")).await), Vec::<String>::new());
    assert_eq!(listed(&b.get(&by(&format!("phone={amina}"))).await), vec![last.clone(), first.clone()]);
    // As people type it: with a plus, spaces, or the national 0.
    let national = format!("0{}", &amina[3..]);
    let spaced = format!("+{} {} {}", &amina[..3], &amina[3..6], &amina[6..]);
    for typed in [national.as_str(), spaced.as_str()] {
        let page = b.get(&by(&format!("phone={}", urlencode(typed)))).await;
        assert_eq!(listed(&page), vec![last.clone(), first.clone()], "{typed}");
        assert_eq!(page.value_of("phone").as_deref(), Some(typed), "the value is kept");
    }
    assert_eq!(listed(&b.get(&by("reference=INV-B")).await), vec![failed.clone()]);
    assert_eq!(listed(&b.get(&by(&format!("phone={amina}&state=completed&reference=INV-C"))).await), vec![last.clone()]);
    let selected = b.get(&by("state=failed")).await;
    assert_eq!(selected.attrs("select[name=state] option[selected]", "value"), vec!["failed".to_owned()], "the choice is kept");

    // Dates are the country's local days (Nairobi, UTC+3), "To" included.
    let today = (time::OffsetDateTime::now_utc() + time::Duration::hours(3)).date();
    let (yesterday, tomorrow) = (today.previous_day().unwrap(), today.next_day().unwrap());
    assert_eq!(listed(&b.get(&by(&format!("from={today}&to={today}"))).await).len(), 3);
    assert_eq!(listed(&b.get(&by(&format!("to={yesterday}"))).await), Vec::<String>::new());
    assert_eq!(listed(&b.get(&by(&format!("from={tomorrow}"))).await), Vec::<String>::new());
    assert_eq!(listed(&b.get(&by(&format!("from={yesterday}&state=failed"))).await), vec![failed.clone()]);
    let none = b.get(&by("reference=NOTHING")).await;
    assert_eq!((none.status, listed(&none).len()), (200, 0));
    assert!(none.html.contains("No charges match"), "{}", none.html);
}

async fn the_list_pages_with_next_page(db: Db) {
    let app = TestApp::shared(db);
    let (_, token, mut b) = merchant_with(app, "viewer").await;
    let mut made = Vec::new();
    for i in 0..22 {
        made.push(push(app, &token, &msisdn("1009"), "10.00", &format!("PAGE-{i}")).await);
    }
    made.reverse();
    let first = b.get("/console/charges?reference=").await;
    assert_eq!(listed(&first), made[..20].to_vec(), "20 a page, newest first");
    let next = first.attrs("a.button", "href").into_iter().find(|h| h.contains("cursor=")).expect("a Next page link");
    assert!(first.texts("a.button").contains(&"Next page".to_owned()));
    let second = b.get(&next).await;
    assert_eq!(listed(&second), made[20..].to_vec());
    assert!(!second.texts("a").contains(&"Next page".to_owned()), "the last page has none");
    // The filters ride along.
    let filtered = b.get("/console/charges?state=pending&reference=PAGE-3").await;
    assert_eq!(listed(&filtered).len(), 1);
    let bad = b.get("/console/charges?cursor=nonsense").await;
    assert_eq!(bad.status, 400, "{}", bad.html);
}

async fn a_refused_filter_keeps_its_values_with_errors_beside_the_fields(db: Db) {
    let app = TestApp::shared(db);
    let (_, token, mut b) = merchant_with(app, "viewer").await;
    push(app, &token, &msisdn("1009"), "10.00", "KEEP").await;
    let page = b.get("/console/charges?phone=12ab&from=yesterday&to=2026-13-40&state=lost&reference=KEEP").await;
    assert_eq!(page.status, 422, "{}", page.html);
    assert!(page.field_error("phone").unwrap().contains("phone number"), "{:?}", page.field_error("phone"));
    assert!(page.field_error("from").unwrap().contains("YYYY-MM-DD"));
    assert!(page.field_error("to").is_some());
    assert!(page.field_error("state").is_some());
    assert_eq!(page.value_of("phone").as_deref(), Some("12ab"));
    assert_eq!(page.value_of("from").as_deref(), Some("yesterday"));
    assert_eq!(page.value_of("reference").as_deref(), Some("KEEP"));
    assert!(listed(&page).is_empty(), "no rows under refused filters");
    let backwards = b.get("/console/charges?from=2026-11-20&to=2026-11-10").await;
    assert_eq!(backwards.status, 422);
    assert!(backwards.field_error("to").unwrap().contains("before From"));
}

/// A receiver answering every request with 200.
async fn receiver() -> (String, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let task = tokio::spawn(async move {
        loop {
            let Ok((mut s, _)) = listener.accept().await else { return };
            tokio::spawn(async move {
                let mut buf = vec![0_u8; 65536];
                let mut seen = Vec::new();
                // Reads the request (its head and the body its Content-Length announces).
                loop {
                    let Ok(n) = s.read(&mut buf).await else { return };
                    if n == 0 {
                        return;
                    }
                    seen.extend_from_slice(&buf[..n]);
                    let text = String::from_utf8_lossy(&seen).to_string();
                    if let Some(head_end) = text.find("\r\n\r\n") {
                        let length = text[..head_end]
                            .lines()
                            .find_map(|l| {
                                l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().parse::<usize>().unwrap_or(0))
                            })
                            .unwrap_or(0);
                        if seen.len() >= head_end + 4 + length {
                            let _ = s.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok").await;
                            return;
                        }
                    }
                }
            });
        }
    });
    (url, task)
}

async fn a_charge_page_shows_its_history_and_webhook_deliveries(db: Db) {
    let app = TestApp::shared(db);
    let (_, token, mut b) = merchant_with(app, "viewer").await;
    let (url, task) = receiver().await;
    let r = app.post(&token, "/webhooks/endpoints", &json!({"url": url, "events": ["*"]}), Some(&uuid::Uuid::new_v4().to_string())).await;
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    let charge = completed(app, &token, "1000.00").await;
    let path = format!("/console/charges/{charge}");
    // Both events (authorised, completed) delivered and their attempts recorded.
    let started = std::time::Instant::now();
    let page = loop {
        let page = b.get(&path).await;
        if page.texts("tbody tr").iter().filter(|r| r.contains("succeeded")).count() >= 2 {
            break page;
        }
        assert!(started.elapsed() < WAIT, "deliveries not shown:\n{}", page.html);
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(page.status, 200);
    assert_eq!(page.text("h1"), format!("Charge {charge}"));
    assert_eq!(fact(&page, "State"), "completed");
    assert_eq!(fact(&page, "Amount"), "KES 1,000.00");
    assert_eq!(fact(&page, "Amount reversed"), "KES 0.00");
    assert!(fact(&page, "Transaction").starts_with("tx_"));
    assert_eq!(fact(&page, "Reference"), "ORDER-1");
    let history = page.texts("ol.timeline li");
    assert_eq!(history.len(), 3, "{history:?}");
    for (step, state) in history.iter().zip(["pending", "authorised", "completed"]) {
        assert!(step.starts_with(state) && step.contains("Africa/Nairobi"), "{step}");
    }
    assert!(page.html.contains("data-final"), "a final history refreshes no more");
    assert!(!page.html.contains("data-live="), "no live region once final");
    let rows = page.texts("tbody tr");
    for kind in ["charge.authorised", "charge.completed"] {
        let row = rows.iter().find(|r| r.contains(kind)).unwrap_or_else(|| panic!("no {kind} in {rows:?}"));
        assert!(row.contains(&url) && row.contains("200") && row.contains(" ms") && row.contains("succeeded"), "{row}");
    }
    task.abort();

    // An organisation without an endpoint: no deliveries, said so.
    let (_, token, mut b) = merchant_with(app, "viewer").await;
    let quiet = completed(app, &token, "10.00").await;
    let page = b.get(&format!("/console/charges/{quiet}")).await;
    assert!(page.html.contains("no webhook endpoint was subscribed"), "{}", page.html);
    assert_eq!(b.get("/console/charges/ch_0000000000000000000000000000000").await.status, 404);
}

async fn a_pending_charge_page_refreshes_its_history_from_a_fragment(db: Db) {
    let app = TestApp::with(db, Options::manual()).await;
    let (_, token, mut b) = merchant_with(&app, "viewer").await;
    let charge = push(&app, &token, &msisdn("0001"), "50.00", "LIVE-REGION").await;
    let page = b.get(&format!("/console/charges/{charge}")).await;
    assert_eq!(fact(&page, "State"), "pending");
    let csp = page.headers.get("content-security-policy").unwrap().to_str().unwrap().to_owned();
    assert!(csp.contains("connect-src 'self'"), "the script may fetch the fragment: {csp}");
    let live = page.attrs("[data-live]", "data-live");
    assert_eq!(live, vec![format!("/console/charges/{charge}/timeline")]);
    let fragment = b.get(&live[0]).await;
    assert_eq!(fragment.status, 200);
    assert_eq!(fragment.texts("li").len(), 1);
    assert!(!fragment.html.contains("data-final") && !fragment.html.contains("<html"), "{}", fragment.html);
    assert!(page.value_of("idempotency_key").is_none(), "no refund before completion");

    app.advance(Duration::from_secs(5));
    app.run_workers().await;
    let fragment = b.get(&live[0]).await;
    assert!(fragment.html.contains("data-final"), "{}", fragment.html);
    assert!(fragment.texts("li").iter().any(|s| s.starts_with("completed")), "{}", fragment.html);
    let signed_out = Browser::new(&app).get(&live[0]).await;
    assert_eq!(signed_out.status, 303, "the fragment needs a session too");
    app.stop().await;
}

async fn refunds_half_then_the_rest_and_a_third_is_refused(db: Db) {
    let app = TestApp::shared(db);
    let (_, token, mut b) = merchant_with(app, "finance").await;
    let charge = completed(app, &token, "1000.00").await;
    let path = format!("/console/charges/{charge}");
    let page = b.get(&path).await;
    assert_eq!(page.value_of("amount").as_deref(), Some("1000.00"), "the remaining amount by default");
    assert!(page.texts("button").contains(&"Confirm refund".to_owned()));

    let done = refund(&mut b, &charge, "500.00", "Customer returned half").await;
    assert_eq!(done.status, 303, "{}", done.html);
    let location = done.location.clone().unwrap();
    assert!(location.starts_with(&format!("{path}?done=refund&reversal=rv_")), "{location}");
    let after = b.follow(&done).await;
    let notice = after.status_message().unwrap();
    assert!(notice.starts_with("Refund of KES 500.00 done: rv_"), "{notice}");
    assert_eq!(fact(&after, "Amount reversed"), "KES 500.00");
    assert_eq!(after.value_of("amount").as_deref(), Some("500.00"), "what is left, by default");
    assert_eq!(reversals_of(app, &token, &charge).await.len(), 1);

    let rest = refund(&mut b, &charge, "500.00", "The rest").await;
    assert_eq!(rest.status, 303, "{}", rest.html);
    let after = b.follow(&rest).await;
    assert_eq!(fact(&after, "Amount reversed"), "KES 1,000.00");
    assert!(after.value_of("idempotency_key").is_none(), "nothing left: no form");
    assert!(after.html.contains("fully refunded"));
    let v = app.get_json(&token, &format!("/partner/charges/{charge}")).await;
    assert_eq!(v["amount_reversed"].to_string(), "1000.00", "{v}");

    // A third, posted by hand with a fresh key: refused with the use case's message.
    let third = b
        .post(
            &format!("{path}/refund"),
            &[
                ("csrf_token", &after.csrf()),
                ("idempotency_key", &uuid::Uuid::new_v4().to_string()),
                ("amount", "1.00"),
                ("reason", "Again"),
            ],
        )
        .await;
    assert_eq!(third.status, 422, "{}", third.html);
    let error = third.field_error("amount").unwrap();
    assert!(error.contains("is left to reverse"), "{error}");
    assert_eq!(third.value_of("amount").as_deref(), Some("1.00"));
    assert_eq!(third.value_of("reason").as_deref(), Some("Again"));
    assert!(third.alert().unwrap().contains("refund was not made"));
    assert_eq!(reversals_of(app, &token, &charge).await.len(), 2, "nothing more reversed");
    app.assert_ledger_ok().await;
}

async fn a_refused_refund_form_keeps_its_values_with_errors_beside_the_fields(db: Db) {
    let app = TestApp::shared(db);
    let (_, token, mut b) = merchant_with(app, "admin").await;
    let charge = completed(app, &token, "100.00").await;
    let over = refund(&mut b, &charge, "150.00", "Too much").await;
    assert_eq!(over.status, 422, "{}", over.html);
    assert!(over.field_error("amount").unwrap().contains("100.00"), "{:?}", over.field_error("amount"));
    assert_eq!(over.value_of("amount").as_deref(), Some("150.00"));
    assert_eq!(over.value_of("reason").as_deref(), Some("Too much"));

    let both = refund(&mut b, &charge, "ten shillings", "   ").await;
    assert_eq!(both.status, 422, "{}", both.html);
    assert!(both.field_error("amount").is_some(), "a bad amount");
    assert!(both.field_error("reason").unwrap().contains("must not be empty"), "{:?}", both.field_error("reason"));
    assert_eq!(both.value_of("amount").as_deref(), Some("ten shillings"));
    let empty = refund(&mut b, &charge, "", "Forgot the amount").await;
    assert_eq!(empty.status, 422);
    assert!(empty.field_error("amount").is_some());
    let zero = refund(&mut b, &charge, "0", "Nothing").await;
    assert_eq!(zero.status, 422);
    assert!(zero.field_error("amount").is_some());
    assert_eq!(reversals_of(app, &token, &charge).await.len(), 0, "nothing reversed");

    // The corrected form, with the key it kept, acts once.
    let key = over.value_of("idempotency_key").unwrap();
    let fixed = b
        .post(
            &format!("/console/charges/{charge}/refund"),
            &[("csrf_token", &over.csrf()), ("idempotency_key", &key), ("amount", "40.00"), ("reason", "Too much")],
        )
        .await;
    assert_eq!(fixed.status, 303, "{}", fixed.html);
    assert_eq!(reversals_of(app, &token, &charge).await.len(), 1);
}

async fn a_refund_form_submitted_twice_makes_one_reversal(db: Db) {
    let app = TestApp::shared(db);
    let (_, token, mut b) = merchant_with(app, "admin").await;
    let charge = completed(app, &token, "300.00").await;
    let page = b.get(&format!("/console/charges/{charge}")).await;
    let (csrf, key) = (page.csrf(), page.value_of("idempotency_key").unwrap());
    let form = [("csrf_token", csrf.as_str()), ("idempotency_key", key.as_str()), ("amount", "100.00"), ("reason", "Double click")];
    let action = format!("/console/charges/{charge}/refund");
    let (first, second) = {
        let mut b2 = Browser::new(app);
        b2.cookie = b.cookie.clone();
        tokio::join!(b.post(&action, &form), b2.post(&action, &form))
    };
    let again = b.post(&action, &form).await;
    let ok: Vec<&Page> = [&first, &second, &again].into_iter().filter(|p| p.status == 303).collect();
    assert!(!ok.is_empty(), "{} {}", first.html, second.html);
    for p in [&first, &second, &again] {
        // The one at the same moment may still be in progress (409); every answer goes to the one refund.
        assert!(p.status == 303 || p.status == 409, "{} {}", p.status, p.html);
        if p.status == 303 {
            assert_eq!(p.location, ok[0].location, "the same answer, replayed");
        }
    }
    assert_eq!(again.status, 303, "a resubmitted form goes where the first went");
    assert_eq!(reversals_of(app, &token, &charge).await.len(), 1, "one reversal");
    let v = app.get_json(&token, &format!("/partner/charges/{charge}")).await;
    assert_eq!(v["amount_reversed"].to_string(), "100.00", "{v}");
    app.assert_ledger_ok().await;
}

async fn a_viewer_sees_no_refund_form_and_a_hand_made_post_is_refused(db: Db) {
    let app = TestApp::shared(db);
    let (m, token, mut viewer) = merchant_with(app, "viewer").await;
    let charge = completed(app, &token, "100.00").await;
    let page = viewer.get(&format!("/console/charges/{charge}")).await;
    assert_eq!(page.status, 200);
    assert!(!page.texts("button").contains(&"Confirm refund".to_owned()), "no refund for a viewer");
    let posted = viewer
        .post(
            &format!("/console/charges/{charge}/refund"),
            &[
                ("csrf_token", &page.csrf()),
                ("idempotency_key", &uuid::Uuid::new_v4().to_string()),
                ("amount", "100.00"),
                ("reason", "Mine"),
            ],
        )
        .await;
    assert_eq!(posted.status, 403, "{}", posted.html);
    assert_eq!(reversals_of(app, &token, &charge).await.len(), 0, "nothing reversed");
    // An admin of another organisation cannot touch it either.
    let (_, _, mut other) = merchant_with(app, "admin").await;
    let theirs = other.get("/console/").await;
    let refused = other
        .post(
            &format!("/console/charges/{charge}/refund"),
            &[
                ("csrf_token", &theirs.csrf()),
                ("idempotency_key", &uuid::Uuid::new_v4().to_string()),
                ("amount", "1.00"),
                ("reason", "Not mine"),
            ],
        )
        .await;
    assert_eq!(refused.status, 404);
    assert_eq!(other.get(&format!("/console/charges/{charge}")).await.status, 404);
    assert_eq!(reversals_of(app, &token, &charge).await.len(), 0);
    let _ = m;
}

async fn a_refund_from_another_origin_or_without_its_token_is_refused(db: Db) {
    let app = TestApp::shared(db);
    let (_, token, mut b) = merchant_with(app, "admin").await;
    let charge = completed(app, &token, "100.00").await;
    let page = b.get(&format!("/console/charges/{charge}")).await;
    let key = page.value_of("idempotency_key").unwrap();
    let action = format!("/console/charges/{charge}/refund");
    let without = b.post(&action, &[("idempotency_key", &key), ("amount", "10.00"), ("reason", "No token")]).await;
    assert_eq!(without.status, 403);
    b.origin = Some("https://evil.example".into());
    let elsewhere =
        b.post(&action, &[("csrf_token", &page.csrf()), ("idempotency_key", &key), ("amount", "10.00"), ("reason", "Elsewhere")]).await;
    assert_eq!(elsewhere.status, 403);
    assert_eq!(reversals_of(app, &token, &charge).await.len(), 0, "nothing reversed");
}

async fn a_test_session_cannot_see_or_refund_a_live_charge(db: Db) {
    let app = TestApp::shared(db);
    let (m, token, mut b) = merchant_with(app, "admin").await;
    let live = app.live(&m.org_id).await;
    let live_token = app.token(&live).await;
    let live_charge = push(app, &live_token, &msisdn("0001"), "100.00", "LIVE-1").await;
    let test_charge = push(app, &token, &msisdn("1009"), "100.00", "TEST-1").await;
    let list = b.get("/console/charges").await;
    assert_eq!(listed(&list), vec![test_charge.clone()], "test objects only");
    assert_eq!(b.get(&format!("/console/charges/{live_charge}")).await.status, 404);
    assert_eq!(b.get(&format!("/console/charges/{live_charge}/timeline")).await.status, 404);
    let posted = b
        .post(
            &format!("/console/charges/{live_charge}/refund"),
            &[
                ("csrf_token", &list.csrf()),
                ("idempotency_key", &uuid::Uuid::new_v4().to_string()),
                ("amount", "1.00"),
                ("reason", "Cross"),
            ],
        )
        .await;
    assert_eq!(posted.status, 404, "{}", posted.html);
    // Switched to live, the other way round.
    let switched = b.post("/console/mode", &[("csrf_token", &list.csrf()), ("back", "/console/charges")]).await;
    assert_eq!(switched.status, 303);
    let live_list = b.get("/console/charges").await;
    assert_eq!(listed(&live_list), vec![live_charge.clone()]);
    assert_eq!(b.get(&format!("/console/charges/{test_charge}")).await.status, 404);
    assert_eq!(b.get(&format!("/console/charges/{live_charge}")).await.status, 200);
}

async fn markup_and_direction_overrides_are_shown_as_text(db: Db) {
    let app = TestApp::shared(db);
    let (_, token, mut b) = merchant_with(app, "admin").await;
    let reference = "<script>alert('x')</script><b>&";
    let charge = push(app, &token, &msisdn("0001"), "100.00", reference).await;
    app.wait_for(&token, &charge, "completed", WAIT).await;
    let escaped = "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;&lt;b&gt;&amp;";
    let list = b.get("/console/charges").await;
    assert!(list.html.contains(escaped), "{}", list.html);
    assert!(!list.html.contains("<script>alert"), "never markup");
    assert!(list.texts("tbody td").contains(&reference.to_owned()), "shown as the text it is");
    let page = b.get(&format!("/console/charges/{charge}")).await;
    assert!(page.html.contains(escaped) && !page.html.contains("<script>alert"));
    assert_eq!(fact(&page, "Reference"), reference);
    // The API refuses direction overrides in references; what a person types into the filter
    // and the refund form comes back as text, the override shown as [U+202E].
    let filter = b.get(&format!("/console/charges?reference={}", urlencode("INV\u{202E}1-<i>"))).await;
    assert!(filter.html.contains("INV[U+202E]1-&lt;i&gt;"), "{}", filter.html);
    assert!(!filter.html.contains('\u{202E}'));
    let refused = refund(&mut b, &charge, "10.00", "moc.live\u{202E}<b>x</b>").await;
    assert_eq!(refused.status, 422, "{}", refused.html);
    assert!(refused.field_error("reason").is_some());
    assert!(refused.html.contains("moc.live[U+202E]&lt;b&gt;x&lt;/b&gt;"), "{}", refused.html);
    assert!(!refused.html.contains('\u{202E}'));
    assert_eq!(reversals_of(app, &token, &charge).await.len(), 0);
}

fn urlencode(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}
