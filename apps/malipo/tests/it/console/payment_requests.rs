//! Payment requests in the console (contract section 4, Merchant): the list, "New payment
//! request", the request's page with its pay code shown large, "Cancel request"; who may do what,
//! double submits, refused forms, and test/live isolation.

use serde_json::{json, Value};

use super::{join, Browser, Page};
use crate::harness::{key, ok, Creds, Db, TestApp};
use crate::on_both;

on_both!(
    admin_and_finance_create_a_request_see_its_pay_code_and_cancel_it,
    a_viewer_reads_requests_but_cannot_create_or_cancel_them,
    create_request_submitted_twice_makes_one_request,
    a_refused_request_keeps_its_values_and_shows_each_error_beside_its_field,
    a_test_session_never_sees_or_touches_a_live_request,
);

/// Posts the form of `form_page` to `action` with the page's CSRF token and one-time key.
pub(super) async fn post_keyed(b: &mut Browser, form_page: &Page, action: &str, fields: &[(&str, &str)]) -> Page {
    let csrf = form_page.csrf();
    let key = form_page.value_of("idempotency_key").unwrap_or_else(|| panic!("no one-time key in:\n{}", form_page.html));
    let mut all = vec![("csrf_token", csrf.as_str()), ("idempotency_key", key.as_str())];
    all.extend_from_slice(fields);
    b.post(action, &all).await
}

/// The objects of the audit log's entries of `action` (newest first), as an admin reads them.
pub(super) async fn audited(b: &mut Browser, action: &str) -> Vec<String> {
    let page = b.get(&format!("/console/audit?action={action}")).await;
    assert_eq!(page.status, 200, "{}", page.html);
    let headers = page.texts("table thead th");
    let (a, o) = (headers.iter().position(|h| h == "Action").unwrap(), headers.iter().position(|h| h == "Object").unwrap());
    let cells = page.texts("table tbody td");
    cells.chunks(headers.len()).filter(|r| r[a] == action).map(|r| r[o].clone()).collect()
}

/// The organisation's payment requests as the API lists them.
async fn api_requests(app: &TestApp, creds: &Creds) -> Vec<Value> {
    let t = app.token(creds).await;
    ok(app.get_answer(&t, "/biz/requests?limit=100").await, "GET /biz/requests").json["data"].as_array().unwrap().clone()
}

/// The request id of a request page's address.
fn request_id(location: &str) -> String {
    let rest = location.strip_prefix("/console/payment-requests/").unwrap_or_else(|| panic!("{location}"));
    rest.split('?').next().unwrap().to_owned()
}

async fn admin_and_finance_create_a_request_see_its_pay_code_and_cancel_it(db: Db) {
    let app = TestApp::shared(db);
    let m = app.merchant().await;
    for role in ["admin", "finance"] {
        let (mut b, _) = join(app, &m.org_id, role).await;
        let list = b.get("/console/payment-requests").await;
        assert_eq!(list.status, 200, "{}", list.html);
        assert_eq!(list.text("h1"), "Payment requests");
        assert!(list.texts("nav a").contains(&"Payment requests".to_owned()));
        assert!(list.texts("a").contains(&"New payment request".to_owned()), "{role}");
        let form = b.get("/console/payment-requests/new").await;
        assert_eq!(form.status, 200);
        for label in ["Amount", "Reference", "Description", "Phone number"] {
            assert!(form.texts("label").contains(&label.to_owned()), "{label}");
        }
        assert!(form.texts("button").contains(&"Create request".to_owned()));
        let reference = format!("INV-{role}");
        let created = post_keyed(
            &mut b,
            &form,
            "/console/payment-requests",
            &[("amount", "500.00"), ("reference", &reference), ("description", "Table 12"), ("payer_msisdn", "254712345678")],
        )
        .await;
        assert_eq!(created.status, 303, "{}", created.html);
        let id = request_id(created.location.as_deref().unwrap());
        let page = b.follow(&created).await;
        assert_eq!(page.status, 200);
        assert!(page.text("h1").contains(&id));
        assert!(page.status_message().unwrap().contains("Payment request created"), "{:?}", page.status_message());
        // The same object as the API sees, its pay code large, as the customer types it.
        let t = app.token(&m).await;
        let api = ok(app.get_answer(&t, &format!("/biz/requests/{id}")).await, "GET").json;
        let code = api["pay_code"].as_str().unwrap();
        assert_eq!(page.text("p.pay-code"), format!("{} {}", &code[..3], &code[3..]));
        assert_eq!(page.attrs("p.pay-code", "aria-labelledby"), vec!["pay-code-label"]);
        assert_eq!(page.text("#pay-code-label"), "Pay code");
        assert_eq!((api["amount"].to_string(), api["state"].as_str()), ("500.00".into(), Some("open")));
        assert_eq!((api["reference"].as_str(), api["payer_msisdn"].as_str()), (Some(reference.as_str()), Some("254712345678")));
        let facts = page.texts("dl.facts dd");
        assert!(facts.contains(&"KES 500.00".to_owned()), "{facts:?}");
        assert!(facts.contains(&format!("KES {}", api["fee"])), "the fee: {facts:?}");
        assert!(facts.iter().any(|f| f.ends_with("Africa/Nairobi")), "times in the country's zone: {facts:?}");
        assert!(facts.contains(&"open".to_owned()));
        // The facts are a live region (until it is paid, cancelled or expired).
        let live = format!("/console/payment-requests/{id}/live");
        assert_eq!(page.attrs("[data-live]", "data-live"), std::slice::from_ref(&live));
        let fragment = b.get(&live).await;
        assert_eq!((fragment.status, fragment.html.contains("<html")), (200, false));
        assert!(fragment.attrs("dl.facts[data-final]", "class").is_empty(), "open: the region keeps asking");
        // The list, newest first, links to it; the state filter keeps to its state.
        let list = b.get("/console/payment-requests").await;
        assert_eq!(list.texts("tbody tr td:first-child a")[0], id);
        let paid = b.get("/console/payment-requests?state=paid").await;
        assert!(!paid.html.contains(&id), "not paid");

        // Cancel request: once, then the request is cancelled and the button gone.
        assert!(page.texts("button").contains(&"Cancel request".to_owned()));
        let cancelled = post_keyed(&mut b, &page, &format!("/console/payment-requests/{id}/cancel"), &[]).await;
        assert_eq!(cancelled.status, 303, "{}", cancelled.html);
        let after = b.follow(&cancelled).await;
        assert!(after.status_message().unwrap().contains("cancelled"));
        assert!(!after.texts("button").contains(&"Cancel request".to_owned()));
        assert_eq!(ok(app.get_answer(&t, &format!("/biz/requests/{id}")).await, "GET").json["state"], "cancelled");
        assert_eq!(b.get(&live).await.attrs("dl.facts[data-final]", "class").len(), 1, "ended: the region stops");
        let again = post_keyed(&mut b, &page, &format!("/console/payment-requests/{id}/cancel"), &[]).await;
        assert_eq!(again.location, cancelled.location, "the same form again replays its answer");
        let listed = b.get("/console/payment-requests?state=cancelled").await;
        assert!(listed.html.contains(&id));
        if role == "admin" {
            // Recorded in the audit log as the person's, once each.
            assert_eq!(audited(&mut b, "payment_request.created").await, std::slice::from_ref(&id));
            assert_eq!(audited(&mut b, "payment_request.cancelled").await, std::slice::from_ref(&id));
        }
    }
}

async fn a_viewer_reads_requests_but_cannot_create_or_cancel_them(db: Db) {
    let app = TestApp::shared(db);
    let m = app.merchant().await;
    let t = app.token(&m).await;
    let open = ok(app.post_new(&t, "/biz/request", &json!({"amount": "120.00", "reference": "INV-V"})).await, "POST /biz/request").json;
    let id = open["request_id"].as_str().unwrap();
    let (mut b, _) = join(app, &m.org_id, "viewer").await;
    let list = b.get("/console/payment-requests").await;
    assert_eq!(list.status, 200);
    assert!(list.html.contains(id));
    assert!(!list.texts("a").contains(&"New payment request".to_owned()), "no link for a viewer");
    assert_eq!(b.get("/console/payment-requests/new").await.status, 403);
    let page = b.get(&format!("/console/payment-requests/{id}")).await;
    assert_eq!(page.status, 200);
    assert!(page.html.contains("pay-code"));
    assert!(!page.texts("button").contains(&"Cancel request".to_owned()), "no form for a viewer");
    // Forms made by hand: refused, nothing done.
    let csrf = page.csrf();
    let k = key();
    let create = b
        .post(
            "/console/payment-requests",
            &[("csrf_token", &csrf), ("idempotency_key", &k), ("amount", "5.00"), ("reference", "HAND-MADE")],
        )
        .await;
    assert_eq!(create.status, 403);
    let cancel = b.post(&format!("/console/payment-requests/{id}/cancel"), &[("csrf_token", &csrf), ("idempotency_key", &k)]).await;
    assert_eq!(cancel.status, 403);
    let all = api_requests(app, &m).await;
    assert_eq!(all.len(), 1, "nothing created: {all:?}");
    assert_eq!(all[0]["state"], "open", "nothing cancelled");

    // An admin's form from another origin, or without its token: refused, nothing done.
    let (mut admin, _) = join(app, &m.org_id, "admin").await;
    let form = admin.get("/console/payment-requests/new").await;
    admin.origin = Some("https://evil.example".into());
    let fields = [("amount", "5.00"), ("reference", "CROSS-SITE")];
    assert_eq!(post_keyed(&mut admin, &form, "/console/payment-requests", &fields).await.status, 403);
    admin.origin = Some(app.base.clone());
    let k = form.value_of("idempotency_key").unwrap();
    let no_token = admin.post("/console/payment-requests", &[("idempotency_key", &k), ("amount", "5.00"), ("reference", "NO-TOKEN")]).await;
    assert_eq!(no_token.status, 403);
    assert_eq!(api_requests(app, &m).await.len(), 1, "nothing created");
}

async fn create_request_submitted_twice_makes_one_request(db: Db) {
    let app = TestApp::shared(db);
    let m = app.merchant().await;
    let (mut b, _) = join(app, &m.org_id, "finance").await;
    let form = b.get("/console/payment-requests/new").await;
    let fields = [("amount", "75.50"), ("reference", "DOUBLE-1")];
    // A double click: two posts of one form at the same moment (one session, two connections).
    let mut other = Browser::new(app);
    other.cookie = b.cookie.clone();
    let (first, second) = futures_util::join!(
        post_keyed(&mut b, &form, "/console/payment-requests", &fields),
        post_keyed(&mut other, &form, "/console/payment-requests", &fields)
    );
    assert_eq!((first.status, second.status), (303, 303), "{}\n{}", first.html, second.html);
    assert_eq!(first.location, second.location, "both land on the one request");
    // Back and submit again: the same page, nothing new.
    let third = post_keyed(&mut b, &form, "/console/payment-requests", &fields).await;
    assert_eq!(third.location, first.location);
    let all = api_requests(app, &m).await;
    assert_eq!(all.len(), 1, "{all:?}");
    // The same form changed and sent again is refused: a new form is shown with the values.
    let changed = post_keyed(&mut b, &form, "/console/payment-requests", &[("amount", "80.00"), ("reference", "DOUBLE-1")]).await;
    assert_eq!(changed.status, 422, "{}", changed.html);
    assert!(changed.alert().unwrap().contains("already used"), "{:?}", changed.alert());
    assert_eq!(changed.value_of("amount").as_deref(), Some("80.00"));
    assert_ne!(changed.value_of("idempotency_key"), form.value_of("idempotency_key"), "a new one-time key");
    assert_eq!(api_requests(app, &m).await.len(), 1);
}

async fn a_refused_request_keeps_its_values_and_shows_each_error_beside_its_field(db: Db) {
    let app = TestApp::shared(db);
    let m = app.merchant().await;
    let (mut b, _) = join(app, &m.org_id, "admin").await;
    let form = b.get("/console/payment-requests/new").await;
    let refused = post_keyed(
        &mut b,
        &form,
        "/console/payment-requests",
        &[("amount", "12.345"), ("reference", ""), ("description", "<b>Table</b> 12"), ("payer_msisdn", "12345")],
    )
    .await;
    assert_eq!(refused.status, 422, "{}", refused.html);
    assert!(refused.alert().is_some());
    assert!(refused.field_error("amount").unwrap().starts_with("Amount"), "{:?}", refused.field_error("amount"));
    assert!(refused.field_error("reference").unwrap().starts_with("Reference"));
    assert!(refused.field_error("payer_msisdn").unwrap().starts_with("Phone number"), "{:?}", refused.field_error("payer_msisdn"));
    assert_eq!(refused.field_error("description"), None);
    assert_eq!(refused.attrs("#f-amount", "aria-invalid"), vec!["true"]);
    assert_eq!(refused.value_of("amount").as_deref(), Some("12.345"));
    assert_eq!(refused.value_of("description").as_deref(), Some("<b>Table</b> 12"), "kept, as text");
    assert!(refused.html.contains("&lt;b&gt;Table&lt;/b&gt; 12"));
    assert_eq!(refused.value_of("idempotency_key"), form.value_of("idempotency_key"), "the form's key is still unused");
    // A right-to-left override is refused beside its field and shown visibly, never reordering.
    let rtl = post_keyed(&mut b, &refused, "/console/payment-requests", &[("amount", "10"), ("reference", "INV\u{202E}1-VNI")]).await;
    assert_eq!(rtl.status, 422);
    assert!(rtl.field_error("reference").unwrap().contains("U+202E"), "{:?}", rtl.field_error("reference"));
    assert!(!rtl.html.contains('\u{202E}'), "the control is never written into the page");
    assert_eq!(rtl.value_of("reference").as_deref(), Some("INV[U+202E]1-VNI"));
    // Markup a person typed is shown as text on the request's page.
    let created = post_keyed(
        &mut b,
        &rtl,
        "/console/payment-requests",
        &[("amount", "10"), ("reference", "<script>alert(1)</script>"), ("description", "<img src=x onerror=alert(2)>")],
    )
    .await;
    assert_eq!(created.status, 303, "{}", created.html);
    let page = b.follow(&created).await;
    assert!(!page.html.contains("<script>alert(1)"), "escaped");
    assert!(page.texts("dl.facts dd").contains(&"<script>alert(1)</script>".to_owned()));
    assert!(page.texts("dl.facts dd").contains(&"<img src=x onerror=alert(2)>".to_owned()));
    assert_eq!(api_requests(app, &m).await.len(), 1, "only the accepted form made a request");
}

async fn a_test_session_never_sees_or_touches_a_live_request(db: Db) {
    let app = TestApp::shared(db);
    let m = app.merchant().await;
    let live = app.live(&m.org_id).await;
    let lt = app.token(&live).await;
    let live_request = ok(app.post_new(&lt, "/biz/request", &json!({"amount": "300.00", "reference": "LIVE-1"})).await, "live").json;
    let id = live_request["request_id"].as_str().unwrap();
    let (mut b, _) = join(app, &m.org_id, "admin").await;
    let list = b.get("/console/payment-requests").await;
    assert!(list.text(".test-banner").contains("Test mode"));
    assert!(!list.html.contains(id), "a live request is not listed in test mode");
    assert_eq!(b.get(&format!("/console/payment-requests/{id}")).await.status, 404);
    assert_eq!(b.get(&format!("/console/payment-requests/{id}/live")).await.status, 404);
    let csrf = list.csrf();
    let cancel = b.post(&format!("/console/payment-requests/{id}/cancel"), &[("csrf_token", &csrf), ("idempotency_key", &key())]).await;
    assert_eq!(cancel.status, 404);
    let still = ok(app.get_answer(&lt, &format!("/biz/requests/{id}")).await, "live GET").json;
    assert_eq!(still["state"], "open", "untouched");
    // A request made in test mode is not the live credential's either.
    let form = b.get("/console/payment-requests/new").await;
    let made = post_keyed(&mut b, &form, "/console/payment-requests", &[("amount", "1"), ("reference", "TEST-1")]).await;
    let test_id = request_id(made.location.as_deref().unwrap());
    assert_eq!(app.get(&lt, &format!("/biz/requests/{test_id}")).await.status(), 404);
    // Switched to live, the page shows the live one.
    let switched = b.submit("/console/payment-requests", "/console/mode", &[("back", "/console/payment-requests")]).await;
    assert_eq!(switched.status, 303);
    let live_list = b.get("/console/payment-requests").await;
    assert!(live_list.html.contains(id) && !live_list.html.contains(&test_id));
    assert_eq!(b.get(&format!("/console/payment-requests/{id}")).await.status, 200);
}
