//! The operator's back office in the console (contract section 4, Operator): wallets found by
//! phone number, opened, KYC raised, locked and unlocked with a reason, PIN attempts reset; the
//! same use cases as the API's wallet endpoints (what the console did, the API sees), audited;
//! who may, double submits, refused forms, markup, and test/live isolation.

use super::payment_requests::post_keyed;
use super::{join, Browser, Page, Someone};
use crate::harness::{kra_pin, msisdn, national_id, ok, Creds, Db, TestApp};
use crate::on_both;

on_both!(
    an_operator_opens_a_wallet_raises_its_tier_locks_unlocks_and_resets_its_pin_attempts,
    a_refused_wallet_form_keeps_its_values_and_does_nothing,
    a_lock_submitted_twice_locks_once,
    only_operators_reach_wallets,
    a_test_session_never_sees_a_live_wallet,
    verify_now_runs_in_the_background_and_shows_its_result,
    an_operator_filters_and_exports_any_organisations_audit_log,
);

/// An operator organisation and one of its people, signed in.
pub(super) async fn operator(app: &TestApp) -> (Creds, Browser) {
    let (creds, b, _) = operator_person(app).await;
    (creds, b)
}

/// An operator organisation and one of its people, signed in, with their second factor.
pub(super) async fn operator_person(app: &TestApp) -> (Creds, Browser, Someone) {
    let creds = app.org("operator", "KE").await;
    let (b, someone) = join(app, &creds.org_id, "operator").await;
    (creds, b, someone)
}

/// The wallet page of `n`.
pub(super) async fn find(b: &mut Browser, n: &str) -> Page {
    let page = b.get(&format!("/console/wallets?phone={n}")).await;
    assert_eq!(page.status, 200, "{}", page.html);
    page
}

/// Opens a wallet for `n` from the console and returns its page.
pub(super) async fn open_wallet(b: &mut Browser, n: &str, first: &str) -> Page {
    let page = find(b, n).await;
    let opened = post_keyed(b, &page, "/console/wallets", &[("msisdn", n), ("first_name", first), ("last_name", "Otieno")]).await;
    assert_eq!(opened.status, 303, "{}", opened.html);
    b.follow(&opened).await
}

/// The objects of `org`'s audit entries of `action`, as the operator reads them (an operator
/// sees every organisation's: filtered to one).
pub(super) async fn audited_in(b: &mut Browser, org: &str, action: &str) -> Vec<String> {
    let page = b.get(&format!("/console/audit?action={action}&org={org}")).await;
    assert_eq!(page.status, 200, "{}", page.html);
    let headers = page.texts("table thead th");
    if headers.is_empty() {
        return Vec::new();
    }
    let (a, o) = (headers.iter().position(|h| h == "Action").unwrap(), headers.iter().position(|h| h == "Object").unwrap());
    page.texts("table tbody td").chunks(headers.len()).filter(|r| r[a] == action).map(|r| r[o].clone()).collect()
}

/// A fact of the wallet's `<dl>`, by its term.
fn fact(page: &Page, term: &str) -> String {
    let terms = page.texts("dl.facts dt");
    let i = terms.iter().position(|t| t == term).unwrap_or_else(|| panic!("no {term} in {terms:?}"));
    page.texts("dl.facts dd")[i].clone()
}

async fn an_operator_opens_a_wallet_raises_its_tier_locks_unlocks_and_resets_its_pin_attempts(db: Db) {
    let app = TestApp::shared(db);
    let (creds, mut b) = operator(app).await;
    let token = app.token(&creds).await;
    let n = msisdn("0000");
    let blank = b.get("/console/wallets").await;
    assert_eq!(blank.text("h1"), "Wallets");
    assert!(blank.texts("nav a").contains(&"Wallets".to_owned()));
    assert!(blank.texts("label").contains(&"Phone number".to_owned()));
    assert!(blank.texts("button").contains(&"Find".to_owned()));
    let missing = find(&mut b, &n).await;
    assert!(missing.texts("button").contains(&"Open wallet".to_owned()), "{}", missing.html);
    let ids = missing.texts("#f-id_type option");
    assert!(ids.iter().any(|t| t.starts_with("national_id")) && ids.iter().any(|t| t.starts_with("kra_pin")), "{ids:?}");

    let page = open_wallet(&mut b, &n, "Achieng").await;
    assert!(page.status_message().unwrap().contains("Wallet opened"));
    assert_eq!(fact(&page, "Holder"), "Achieng Otieno");
    assert_eq!(fact(&page, "KYC tier"), "0");
    assert_eq!(fact(&page, "State"), "active");
    assert_eq!(fact(&page, "Balance"), "KES 0.00");
    assert_eq!(fact(&page, "Used today"), "KES 0.00 of KES 10,000.00");
    let api = ok(app.get_answer(&token, &format!("/wallets/{n}")).await, "GET /wallets");
    assert_eq!(
        (api.json["state"].as_str(), api.json["kyc_tier"].as_u64()),
        (Some("active"), Some(0)),
        "the API sees what the console opened"
    );

    let id = national_id();
    let raised =
        post_keyed(&mut b, &page, &format!("/console/wallets/{n}/kyc"), &[("tier", "1"), ("id_type", "national_id"), ("id_number", &id)])
            .await;
    assert_eq!(raised.status, 303, "{}", raised.html);
    let page = b.follow(&raised).await;
    assert!(fact(&page, "KYC tier").starts_with('1'), "{}", fact(&page, "KYC tier"));
    assert_eq!(fact(&page, "Used today"), "KES 0.00 of KES 300,000.00");
    assert_eq!(app.get_json(&token, &format!("/wallets/{n}")).await["kyc_tier"], 1);

    let locked = post_keyed(&mut b, &page, &format!("/console/wallets/{n}/lock"), &[("reason", "Lost phone <b>today</b>")]).await;
    assert_eq!(locked.status, 303, "{}", locked.html);
    let page = b.follow(&locked).await;
    assert!(page.status_message().unwrap().contains("Wallet locked"));
    assert!(fact(&page, "State").starts_with("locked"), "{}", fact(&page, "State"));
    assert!(page.html.contains("Lost phone &lt;b&gt;today&lt;/b&gt;"), "the reason escaped");
    assert!(!page.html.contains("<b>today"));
    assert!(page.texts("button").contains(&"Unlock".to_owned()) && !page.texts("button").contains(&"Lock".to_owned()));
    assert_eq!(app.get_json(&token, &format!("/wallets/{n}")).await["state"], "locked");

    let unlocked = post_keyed(&mut b, &page, &format!("/console/wallets/{n}/unlock"), &[("reason", "Customer identified")]).await;
    assert_eq!(unlocked.status, 303, "{}", unlocked.html);
    let page = b.follow(&unlocked).await;
    assert_eq!(fact(&page, "State"), "active");

    let reset = post_keyed(&mut b, &page, &format!("/console/wallets/{n}/pin-attempts"), &[]).await;
    assert_eq!(reset.status, 303, "{}", reset.html);
    assert!(b.follow(&reset).await.status_message().unwrap().contains("PIN attempts reset"));

    for action in ["wallet.opened", "wallet.kyc_raised", "wallet.locked", "wallet.unlocked", "wallet.pin_attempts_reset"] {
        assert_eq!(audited_in(&mut b, &creds.org_id, action).await, vec![n.clone()], "{action}");
    }
    // A KRA PIN grants tier 2.
    let page = find(&mut b, &n).await;
    let kra = kra_pin();
    let raised =
        post_keyed(&mut b, &page, &format!("/console/wallets/{n}/kyc"), &[("tier", "2"), ("id_type", "kra_pin"), ("id_number", &kra)])
            .await;
    assert_eq!(raised.status, 303, "{}", raised.html);
    assert_eq!(app.get_json(&token, &format!("/wallets/{n}")).await["kyc_tier"], 2);
}

async fn a_refused_wallet_form_keeps_its_values_and_does_nothing(db: Db) {
    let app = TestApp::shared(db);
    let (creds, mut b) = operator(app).await;
    let token = app.token(&creds).await;
    let n = msisdn("0000");
    let page = find(&mut b, &n).await;
    let refused =
        post_keyed(&mut b, &page, "/console/wallets", &[("msisdn", &n), ("first_name", " "), ("last_name", "<script>x</script>")]).await;
    assert_eq!(refused.status, 422, "{}", refused.html);
    assert!(refused.field_error("first_name").is_some(), "{}", refused.html);
    assert_eq!(refused.value_of("last_name").as_deref(), Some("<script>x</script>"), "kept");
    assert!(!refused.html.contains("<script>x"), "escaped");
    assert_eq!(app.get(&token, &format!("/wallets/{n}")).await.status(), 404, "nothing opened");

    let page = open_wallet(&mut b, &n, "Achieng").await;
    let refused = post_keyed(&mut b, &page, &format!("/console/wallets/{n}/lock"), &[("reason", "   ")]).await;
    assert_eq!(refused.status, 422, "{}", refused.html);
    assert!(refused.field_error("reason").is_some(), "{}", refused.html);
    assert_eq!(app.get_json(&token, &format!("/wallets/{n}")).await["state"], "active", "nothing locked");
    let wrong =
        post_keyed(&mut b, &page, &format!("/console/wallets/{n}/kyc"), &[("tier", "1"), ("id_type", "national_id"), ("id_number", "12")])
            .await;
    assert_eq!(wrong.status, 422, "{}", wrong.html);
    assert!(wrong.field_error("id_number").is_some(), "{}", wrong.html);
    assert_eq!(wrong.value_of("id_number").as_deref(), Some("12"));
    let unlock = post_keyed(&mut b, &page, &format!("/console/wallets/{n}/unlock"), &[("reason", "why not")]).await;
    assert_eq!(unlock.status, 409, "not locked: {}", unlock.html);
    assert!(unlock.alert().unwrap().contains("not locked"), "{:?}", unlock.alert());
    assert!(audited_in(&mut b, &creds.org_id, "wallet.locked").await.is_empty());
}

async fn a_lock_submitted_twice_locks_once(db: Db) {
    let app = TestApp::shared(db);
    let (creds, mut b) = operator(app).await;
    let n = msisdn("0000");
    let page = open_wallet(&mut b, &n, "Achieng").await;
    let first = post_keyed(&mut b, &page, &format!("/console/wallets/{n}/lock"), &[("reason", "suspected fraud")]).await;
    let again = post_keyed(&mut b, &page, &format!("/console/wallets/{n}/lock"), &[("reason", "suspected fraud")]).await;
    assert_eq!((first.status, again.status), (303, 303), "{}", again.html);
    assert_eq!(first.location, again.location);
    assert_eq!(audited_in(&mut b, &creds.org_id, "wallet.locked").await.len(), 1);
    // Without the session's token, or from another origin: refused, nothing done.
    let page = find(&mut b, &n).await;
    let key = page.value_of("idempotency_key").unwrap();
    let forged = b.post(&format!("/console/wallets/{n}/unlock"), &[("idempotency_key", &key), ("reason", "x")]).await;
    assert_eq!(forged.status, 403);
    b.origin = Some("https://evil.example".into());
    let csrf = page.csrf();
    let forged =
        b.post(&format!("/console/wallets/{n}/unlock"), &[("csrf_token", &csrf), ("idempotency_key", &key), ("reason", "x")]).await;
    assert_eq!(forged.status, 403);
    b.origin = Some(app.base.clone());
    assert!(fact(&find(&mut b, &n).await, "State").starts_with("locked"));
}

async fn only_operators_reach_wallets(db: Db) {
    let app = TestApp::shared(db);
    let (_, mut op) = operator(app).await;
    let n = msisdn("0000");
    open_wallet(&mut op, &n, "Achieng").await;
    let m = app.merchant().await;
    let (mut admin, _) = join(app, &m.org_id, "admin").await;
    assert!(!admin.get("/console/").await.texts("nav a").contains(&"Wallets".to_owned()));
    assert_eq!(admin.get(&format!("/console/wallets?phone={n}")).await.status, 403);
    let csrf = admin.get("/console/").await.csrf();
    let key = uuid::Uuid::new_v4().to_string();
    let refused =
        admin.post(&format!("/console/wallets/{n}/lock"), &[("csrf_token", &csrf), ("idempotency_key", &key), ("reason", "x")]).await;
    assert_eq!(refused.status, 403);
    assert_eq!(fact(&find(&mut op, &n).await, "State"), "active", "nothing done");
}

async fn a_test_session_never_sees_a_live_wallet(db: Db) {
    let app = TestApp::shared(db);
    let (creds, mut b) = operator(app).await;
    let live = app.live(&creds.org_id).await;
    let token = app.token(&live).await;
    let n = msisdn("0000");
    let body = serde_json::json!({"msisdn": n, "first_name": "Live", "last_name": "Only"});
    ok(app.post_new(&token, "/wallets", &body).await, "POST /wallets (live)");
    let page = find(&mut b, &n).await;
    assert!(page.texts("button").contains(&"Open wallet".to_owned()), "the test session sees no live wallet");
}

async fn verify_now_runs_in_the_background_and_shows_its_result(db: Db) {
    let app = TestApp::shared(db);
    let (_, mut b, someone) = operator_person(app).await;
    let wallets = b.get("/console/wallets").await;
    assert!(wallets.texts("a").contains(&"Ledger health".to_owned()), "reached from Wallets");
    let page = b.get("/console/ledger").await;
    assert_eq!(page.status, 200, "{}", page.html);
    assert_eq!(page.text("h1"), "Ledger health");
    for term in ["Last verification", "Unsealed journals", "Sealing lag"] {
        assert!(page.texts("dl.facts dt").contains(&term.to_owned()), "{term}");
    }
    let started = b.submit("/console/ledger", "/console/ledger/verify", &[]).await;
    assert_eq!(started.status, 303, "{}", started.html);
    assert!(b.follow(&started).await.status_message().unwrap().contains("erification"));
    let email = someone.email.clone();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let last = loop {
        let live = b.get("/console/ledger/live").await;
        let last = live.text("#last-verification");
        if live.html.contains("data-final") && last.contains(email.as_str()) {
            break last;
        }
        assert!(std::time::Instant::now() < deadline, "no result: {}", live.html);
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    assert!(last.starts_with("ok"), "{last}");
    assert!(last.contains("journals checked"), "{last}");
    // Not for others.
    let m = app.merchant().await;
    let (mut admin, _) = join(app, &m.org_id, "admin").await;
    assert_eq!(admin.get("/console/ledger").await.status, 403);
    let csrf = admin.get("/console/").await.csrf();
    assert_eq!(admin.post("/console/ledger/verify", &[("csrf_token", &csrf)]).await.status, 403);
}

async fn an_operator_filters_and_exports_any_organisations_audit_log(db: Db) {
    let app = TestApp::shared(db);
    let (creds, mut b) = operator(app).await;
    let n = msisdn("0000");
    let page = open_wallet(&mut b, &n, "Achieng").await;
    let locked = post_keyed(&mut b, &page, &format!("/console/wallets/{n}/lock"), &[("reason", "=cmd|' /C calc'!A0")]).await;
    assert_eq!(locked.status, 303, "{}", locked.html);
    let page = b.get(&format!("/console/audit?org={}", creds.org_id)).await;
    assert!(page.texts("label").contains(&"Organisation".to_owned()));
    let export = page.attrs("a[download]", "href")[0].clone();
    assert!(export.contains(&creds.org_id), "{export}");
    let csv = b.get(&export).await;
    assert_eq!(csv.status, 200);
    let lines: Vec<&str> = csv.html.lines().collect();
    assert!(lines.len() >= 3, "{}", csv.html);
    assert!(lines[1..].iter().all(|l| l.contains(&creds.org_id)), "only the organisation asked for: {}", csv.html);
    let lock = lines.iter().find(|l| l.contains("wallet.locked")).unwrap();
    assert!(lock.contains("locked: =cmd|' /C calc'!A0") && lock.contains(&n), "{lock}");
    // Another organisation's entries too.
    let m = app.merchant().await;
    join(app, &m.org_id, "admin").await;
    assert_eq!(audited_in(&mut b, &m.org_id, "user.invited").await.len(), 1, "the merchant's own log, seen by the operator");
}
