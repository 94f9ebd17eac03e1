//! Payouts in the console (contract section 4, Merchant): "Pay one person", the list and a
//! payout's page; who may pay, double submits, refused forms, and test/live isolation.

use std::time::Duration;

use malipo_core::Mode;
use serde_json::{json, Value};

use super::payment_requests::{audited, post_keyed};
use super::{join, Browser};
use crate::harness::{key, msisdn, ok, Creds, Db, TestApp};
use crate::on_both;

on_both!(
    admin_and_finance_pay_one_person_and_follow_the_payout,
    a_viewer_sees_payouts_but_cannot_pay,
    pay_submitted_twice_pays_once,
    a_refused_payout_keeps_its_values_and_shows_each_error_beside_its_field,
    a_test_session_never_sees_a_live_payout,
);

const WAIT: Duration = Duration::from_secs(20);

/// The organisation's payouts as the API lists them.
async fn api_payouts(app: &TestApp, creds: &Creds) -> Vec<Value> {
    let t = app.token(creds).await;
    ok(app.get_answer(&t, "/payouts?limit=100").await, "GET /payouts").json["data"].as_array().unwrap().clone()
}

fn payout_id(location: &str) -> String {
    location.strip_prefix("/console/payouts/").unwrap_or_else(|| panic!("{location}")).split('?').next().unwrap().to_owned()
}

async fn admin_and_finance_pay_one_person_and_follow_the_payout(db: Db) {
    let app = TestApp::shared(db);
    let m = app.merchant().await;
    app.fund(&m.org_id, Mode::Test, "10000").await;
    let t = app.token(&m).await;
    for role in ["admin", "finance"] {
        let (mut b, _) = join(app, &m.org_id, role).await;
        let list = b.get("/console/payouts").await;
        assert_eq!(list.status, 200, "{}", list.html);
        assert_eq!(list.text("h1"), "Payouts");
        assert!(list.texts("nav a").contains(&"Payouts".to_owned()));
        for label in ["Phone number", "Amount", "Reference", "State"] {
            assert!(list.texts("label").contains(&label.to_owned()), "{label}");
        }
        assert!(list.texts("button").contains(&"Pay".to_owned()));
        let payee = msisdn("0000");
        let reference = format!("SALARY-{role}");
        let paid =
            post_keyed(&mut b, &list, "/console/payouts", &[("payee_msisdn", &payee), ("amount", "1000.00"), ("reference", &reference)])
                .await;
        assert_eq!(paid.status, 303, "{}", paid.html);
        let id = payout_id(paid.location.as_deref().unwrap());
        let page = b.follow(&paid).await;
        assert!(page.text("h1").contains(&id));
        assert!(page.status_message().unwrap().contains("Payout accepted"));
        let facts = page.texts("dl.facts dd");
        for fact in [payee.as_str(), "KES 1,000.00", "KES 5.00", "KES 1,005.00", reference.as_str()] {
            assert!(facts.iter().any(|f| f == fact), "{fact} in {facts:?}");
        }
        // The API's payout, paid in a moment; its page follows.
        let api = app.wait_state(&t, &format!("/payouts/{id}"), "completed", WAIT).await;
        assert_eq!((api["reference"].as_str(), api["payee_msisdn"].as_str()), (Some(reference.as_str()), Some(payee.as_str())));
        let done = b.get(&format!("/console/payouts/{id}")).await;
        assert_eq!(done.status, 200);
        assert!(done.texts("dl.facts dd span.state").contains(&"completed".to_owned()), "{}", done.html);
        assert!(done.texts("dl.facts dd code").contains(&api["transaction_id"].as_str().unwrap().to_owned()));
        // The page's facts are a live region, refreshed from a fragment until the payout settles.
        let live = format!("/console/payouts/{id}/live");
        assert_eq!(page.attrs("[data-live]", "data-live"), std::slice::from_ref(&live));
        let csp = page.headers["content-security-policy"].to_str().unwrap();
        assert!(csp.contains("connect-src 'self'") && csp.contains("default-src 'none'"), "the script may fetch the fragment: {csp}");
        assert_eq!(page.attrs("link[rel=icon]", "href"), ["data:,"], "no request for /favicon.ico");
        let fragment = b.get(&live).await;
        assert_eq!(fragment.status, 200);
        assert!(!fragment.html.contains("<html"), "a fragment, not a page");
        assert_eq!(fragment.attrs("dl.facts[data-final]", "class").len(), 1, "settled: the region stops asking");
        assert!(fragment.texts("dd span.state").contains(&"completed".to_owned()));
        // The list: newest first, filtered by state, each row linking to its page.
        let list = b.get("/console/payouts").await;
        assert_eq!(list.texts("tbody tr td:first-child a")[0], id);
        assert!(b.get("/console/payouts?state=completed").await.html.contains(&id));
        let failed = b.get("/console/payouts?state=failed").await;
        assert!(!failed.html.contains(&id));
        assert!(failed.text("main p.muted").contains("No payouts in this state"));
    }
    // 21 payouts: the list pages by 20 with "Next page".
    let bodies: Vec<Value> =
        (0..19).map(|i| json!({"payee_msisdn": msisdn("0000"), "amount": "1", "reference": format!("P-{i}")})).collect();
    let created: Vec<Value> = futures_util::future::join_all(bodies.iter().map(|body| app.post_new(&t, "/payouts", body)))
        .await
        .into_iter()
        .map(|a| ok(a, "POST /payouts").json)
        .collect();
    assert_eq!(created.len(), 19);
    let (mut b, _) = join(app, &m.org_id, "viewer").await;
    let first = b.get("/console/payouts").await;
    assert_eq!(first.texts("tbody tr").len(), 20);
    let next = first.attrs("p.pager a", "href");
    assert_eq!(next.len(), 1, "{next:?}");
    let second = b.get(&next[0]).await;
    assert_eq!(second.texts("tbody tr").len(), 1);
    assert!(second.texts("p.pager a").contains(&"First page".to_owned()));
    let api_all = api_payouts(app, &m).await;
    assert_eq!(second.texts("tbody tr td:first-child a")[0], api_all[20]["payout_ref"].as_str().unwrap(), "the API's order");
    // The two payouts made in the console are in the audit log as their people's; the API's are not.
    let (mut admin, _) = join(app, &m.org_id, "admin").await;
    let audited = audited(&mut admin, "payout.created").await;
    assert_eq!(audited, [api_all[19]["payout_ref"].as_str().unwrap(), api_all[20]["payout_ref"].as_str().unwrap()]);
}

async fn a_viewer_sees_payouts_but_cannot_pay(db: Db) {
    let app = TestApp::shared(db);
    let m = app.merchant().await;
    app.fund(&m.org_id, Mode::Test, "1000").await;
    let t = app.token(&m).await;
    let po =
        ok(app.post_new(&t, "/payouts", &json!({"payee_msisdn": msisdn("0000"), "amount": "10", "reference": "R-1"})).await, "pay").json;
    let id = po["payout_ref"].as_str().unwrap();
    let (mut b, _) = join(app, &m.org_id, "viewer").await;
    let list = b.get("/console/payouts").await;
    assert_eq!(list.status, 200);
    assert!(list.html.contains(id));
    assert!(!list.texts("button").contains(&"Pay".to_owned()), "no form for a viewer");
    assert_eq!(list.value_of("payee_msisdn"), None);
    assert_eq!(b.get(&format!("/console/payouts/{id}")).await.status, 200);
    let made = b
        .post(
            "/console/payouts",
            &[
                ("csrf_token", &list.csrf()),
                ("idempotency_key", &key()),
                ("payee_msisdn", &msisdn("0000")),
                ("amount", "10"),
                ("reference", "HAND"),
            ],
        )
        .await;
    assert_eq!(made.status, 403);
    assert_eq!(api_payouts(app, &m).await.len(), 1, "nothing paid");
    // An admin's form from another origin, or without its token: refused, nothing paid.
    let (mut admin, _) = join(app, &m.org_id, "admin").await;
    let form = admin.get("/console/payouts").await;
    let fields = [("payee_msisdn", msisdn("0000")), ("amount", "10".to_owned()), ("reference", "CROSS".to_owned())];
    let fields: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
    admin.origin = Some("https://evil.example".into());
    assert_eq!(post_keyed(&mut admin, &form, "/console/payouts", &fields).await.status, 403);
    admin.origin = Some(app.base.clone());
    let mut no_token: Vec<(&str, &str)> = fields.clone();
    let k = form.value_of("idempotency_key").unwrap();
    no_token.push(("idempotency_key", &k));
    assert_eq!(admin.post("/console/payouts", &no_token).await.status, 403);
    assert_eq!(api_payouts(app, &m).await.len(), 1, "nothing paid");
}

async fn pay_submitted_twice_pays_once(db: Db) {
    let app = TestApp::shared(db);
    let m = app.merchant().await;
    app.fund(&m.org_id, Mode::Test, "1000").await;
    let (mut b, _) = join(app, &m.org_id, "finance").await;
    let form = b.get("/console/payouts").await;
    let payee = msisdn("0000");
    let fields = [("payee_msisdn", payee.as_str()), ("amount", "400.00"), ("reference", "TWICE")];
    let mut other = Browser::new(app);
    other.cookie = b.cookie.clone();
    let (first, second) = futures_util::join!(
        post_keyed(&mut b, &form, "/console/payouts", &fields),
        post_keyed(&mut other, &form, "/console/payouts", &fields)
    );
    assert_eq!((first.status, second.status), (303, 303), "{}\n{}", first.html, second.html);
    assert_eq!(first.location, second.location);
    let third = post_keyed(&mut b, &form, "/console/payouts", &fields).await;
    assert_eq!(third.location, first.location, "back and submit again: the same payout");
    assert_eq!(api_payouts(app, &m).await.len(), 1);
    let (mut admin, _) = join(app, &m.org_id, "admin").await;
    assert_eq!(audited(&mut admin, "payout.created").await.len(), 1, "audited once");
    let t = app.token(&m).await;
    let balance = ok(app.get_answer(&t, "/partner/balance?account=payout").await, "balance").json;
    assert_eq!(balance["available"].to_string(), "595.00", "reserved once: {balance}");
}

async fn a_refused_payout_keeps_its_values_and_shows_each_error_beside_its_field(db: Db) {
    let app = TestApp::shared(db);
    let m = app.merchant().await;
    app.fund(&m.org_id, Mode::Test, "100").await;
    let (mut b, _) = join(app, &m.org_id, "admin").await;
    let form = b.get("/console/payouts").await;
    let refused =
        post_keyed(&mut b, &form, "/console/payouts", &[("payee_msisdn", "0712"), ("amount", "-5"), ("reference", "<i>Nov</i>")]).await;
    assert_eq!(refused.status, 422, "{}", refused.html);
    assert!(refused.field_error("payee_msisdn").unwrap().starts_with("Phone number"), "{:?}", refused.field_error("payee_msisdn"));
    assert!(refused.field_error("amount").unwrap().starts_with("Amount"));
    assert_eq!(refused.field_error("reference"), None);
    assert_eq!(refused.value_of("payee_msisdn").as_deref(), Some("0712"));
    assert_eq!(refused.value_of("reference").as_deref(), Some("<i>Nov</i>"));
    assert!(refused.html.contains("&lt;i&gt;Nov&lt;/i&gt;"));
    assert_eq!(refused.value_of("idempotency_key"), form.value_of("idempotency_key"));
    // More than the account holds: the form again with the problem, nothing paid.
    let payee = msisdn("0000");
    let short =
        post_keyed(&mut b, &refused, "/console/payouts", &[("payee_msisdn", &payee), ("amount", "100.00"), ("reference", "TOO-MUCH")])
            .await;
    assert_eq!(short.status, 422, "{}", short.html);
    assert!(short.alert().unwrap().contains("Insufficient funds"), "{:?}", short.alert());
    assert_eq!(short.value_of("amount").as_deref(), Some("100.00"));
    assert_eq!(short.value_of("payee_msisdn").as_deref(), Some(payee.as_str()));
    assert!(api_payouts(app, &m).await.is_empty());
    // Corrected on the same form: paid.
    let fine =
        post_keyed(&mut b, &short, "/console/payouts", &[("payee_msisdn", &payee), ("amount", "90.00"), ("reference", "<i>Nov</i>")]).await;
    assert_eq!(fine.status, 303, "{}", fine.html);
    let page = b.follow(&fine).await;
    assert!(page.texts("dl.facts dd").contains(&"<i>Nov</i>".to_owned()), "shown as text");
    assert!(!page.html.contains("<i>Nov"));
}

async fn a_test_session_never_sees_a_live_payout(db: Db) {
    let app = TestApp::shared(db);
    let m = app.merchant().await;
    app.fund(&m.org_id, Mode::Live, "1000").await;
    let live = app.live(&m.org_id).await;
    let lt = app.token(&live).await;
    let po =
        ok(app.post_new(&lt, "/payouts", &json!({"payee_msisdn": msisdn("0000"), "amount": "10", "reference": "LIVE"})).await, "live").json;
    let id = po["payout_ref"].as_str().unwrap();
    let (mut b, _) = join(app, &m.org_id, "admin").await;
    assert!(!b.get("/console/payouts").await.html.contains(id));
    assert_eq!(b.get(&format!("/console/payouts/{id}")).await.status, 404);
    assert_eq!(b.get(&format!("/console/payouts/{id}/live")).await.status, 404);
    let switched = b.submit("/console/payouts", "/console/mode", &[("back", "/console/payouts")]).await;
    assert_eq!(switched.status, 303);
    assert_eq!(b.get(&format!("/console/payouts/{id}")).await.status, 200, "the live session sees it");
}
