//! Sign-in, the second factor, sessions, CSRF and the failure limits (console contract
//! section 2), as a browser without script meets them. Tests that fail sign-ins run on a
//! server of their own: every test connects from 127.0.0.1, whose failures count together.

use std::time::{Duration, Instant};

use super::{invite, join, Browser};
use crate::harness::{Db, Options, TestApp};
use crate::on_both;

on_both!(
    invited_people_enrol_sign_in_with_the_second_factor_and_sign_out_for_good,
    a_wrong_email_and_a_wrong_password_get_the_same_answer_in_the_same_time,
    ten_failures_lock_the_account_and_a_hundred_lock_the_address,
    forms_from_another_origin_or_without_their_token_are_refused_and_do_nothing,
    a_password_change_ends_every_other_session,
    sessions_end_when_idle_and_at_the_absolute_timeout,
    a_recovery_code_signs_in_once_and_a_code_is_never_accepted_twice,
    invitation_links_work_once_and_expire_after_72_hours,
    a_refused_form_keeps_its_values_and_shows_each_error_beside_its_field,
    people_whose_role_requires_it_enrol_before_anything_else,
    the_lockout_slows_the_guesser_and_lets_the_owner_in,
    a_control_character_in_a_return_address_gets_the_error_page_and_nothing_is_done,
    behind_a_trusted_proxy_its_forwarded_origin_and_source_count,
);

async fn sign_in(b: &mut Browser, email: &str, password: &str) -> super::Page {
    b.post("/console/login", &[("email", email), ("password", password), ("next", "/console/")]).await
}

async fn invited_people_enrol_sign_in_with_the_second_factor_and_sign_out_for_good(db: Db) {
    let app = TestApp::spawn(db).await;
    let m = app.merchant().await;
    let (mut b, admin) = join(&app, &m.org_id, "admin").await;
    let home = b.get("/console/").await;
    assert_eq!(home.status, 200, "{}", home.html);
    assert_eq!(home.text("h1"), "Home");
    assert!(home.texts("nav a").contains(&"Team".to_owned()), "an admin sees Team");
    // The cookie: HttpOnly, SameSite=Lax, path /console (Secure is off on a loopback test server).
    let fresh = sign_in(&mut Browser::new(&app), &admin.email, &admin.password).await;
    let cookie = fresh.headers.get("set-cookie").unwrap().to_str().unwrap().to_owned();
    for attr in ["HttpOnly", "SameSite=Lax", "Path=/console"] {
        assert!(cookie.contains(attr), "{cookie}");
    }
    assert!(home.headers.get("content-security-policy").unwrap().to_str().unwrap().contains("script-src 'self'"));

    let stolen = b.cookie.clone();
    let out = b.submit("/console/", "/console/logout", &[]).await;
    assert_eq!((out.status, out.location.as_deref()), (303, Some("/console/login?signed_out=1")));
    let mut thief = Browser::new(&app);
    thief.cookie = stolen;
    let refused = thief.get("/console/").await;
    assert_eq!(refused.status, 303, "a signed-out session's cookie is refused");
    assert!(refused.location.unwrap().starts_with("/console/login"));

    // Signing in again: password, then the second factor (the next step's code: this step's was
    // used at enrolment).
    let mut b = Browser::new(&app);
    let step1 = sign_in(&mut b, &admin.email, &admin.password).await;
    assert_eq!(step1.status, 303);
    assert!(step1.location.as_deref().unwrap().starts_with("/console/login/verify"));
    let pending = b.get("/console/").await;
    assert_eq!(pending.status, 303, "a session waiting for its second factor opens nothing");
    let verify = b.get(step1.location.as_deref().unwrap()).await;
    assert!(verify.html.contains("Authentication code"));
    let done = b.post("/console/login/verify", &[("code", &admin.code(1)), ("next", "/console/")]).await;
    assert_eq!((done.status, done.location.as_deref()), (303, Some("/console/")), "{}", done.html);
    assert_eq!(b.get("/console/").await.status, 200);
}

async fn a_wrong_email_and_a_wrong_password_get_the_same_answer_in_the_same_time(db: Db) {
    let app = TestApp::spawn(db).await;
    let m = app.merchant().await;
    let (_, someone) = join(&app, &m.org_id, "viewer").await;
    let mut b = Browser::new(&app);
    let (mut unknown, mut wrong) = (Vec::new(), Vec::new());
    let mut answers = Vec::new();
    // Interleaved, 8 of each: under the account's limit of 10 for the known email.
    for i in 0..8 {
        let started = Instant::now();
        let a = sign_in(&mut b, &format!("nobody-{i}@example.com"), "correct horse battery").await;
        unknown.push(started.elapsed());
        let started = Instant::now();
        let w = sign_in(&mut b, &someone.email, "correct horse battery").await;
        wrong.push(started.elapsed());
        answers.push((a.status, a.alert(), w.status, w.alert()));
    }
    for (s1, a1, s2, a2) in &answers {
        assert_eq!((s1, a1), (s2, a2), "the same answer");
        assert_eq!(*s1, 401);
        assert_eq!(a1.as_deref(), Some("The email or password is incorrect."));
    }
    // The fastest of each: a shared machine only ever adds time, so the minimum is the cost of
    // the path itself, where a median of eight moves with whatever else the machine runs.
    let fastest = |d: &[Duration]| d.iter().min().unwrap().as_secs_f64();
    let (u, w) = (fastest(&unknown), fastest(&wrong));
    eprintln!("sign-in refusal, fastest: unknown email {:.1} ms, wrong password {:.1} ms", u * 1e3, w * 1e3);
    assert!((u / w) > 0.5 && (u / w) < 2.0, "the paths differ: unknown {u:.4} s, wrong {w:.4} s");
    assert!(u > 0.002, "an unknown email is checked against a decoy hash, not answered at once ({u} s)");
}

async fn ten_failures_lock_the_account_and_a_hundred_lock_the_address(db: Db) {
    let app = TestApp::spawn(db).await;
    let m = app.merchant().await;
    let (_, victim) = join(&app, &m.org_id, "viewer").await;
    let (_, other) = join(&app, &m.org_id, "viewer").await;
    let mut b = Browser::new(&app);
    for _ in 0..10 {
        assert_eq!(sign_in(&mut b, &victim.email, "not the password!").await.status, 401);
    }
    let locked = sign_in(&mut b, &victim.email, &victim.password).await;
    assert_eq!(locked.status, 429, "the right password waits too");
    assert!(locked.alert().unwrap().contains("wait 15 minutes"), "{:?}", locked.alert());
    assert!(locked.headers.get("retry-after").is_some());
    let fine = sign_in(&mut Browser::new(&app), &other.email, &other.password).await;
    assert_eq!(fine.status, 303, "another account from the same address signs in");

    // 100 failures from one address (the 10 above and 90 more, over many emails) lock it.
    for i in 0..90 {
        let r = sign_in(&mut b, &format!("guess-{i}@example.com"), "not the password!").await;
        assert_eq!(r.status, 401, "failure {}", i + 11);
    }
    let started = std::time::Instant::now();
    let address_locked = sign_in(&mut Browser::new(&app), &other.email, &other.password).await;
    assert_eq!(address_locked.status, 429, "the address waits 15 minutes");
    assert!(address_locked.alert().unwrap().contains("address"));
    // A locked answer is held a second, so that a flood waiting for its answers sends one
    // attempt a second per connection (bench/console.sh measures what that spares others).
    assert!(started.elapsed() >= std::time::Duration::from_secs(1), "held {:?}", started.elapsed());
}

async fn forms_from_another_origin_or_without_their_token_are_refused_and_do_nothing(db: Db) {
    let app = TestApp::spawn(db).await;
    let m = app.merchant().await;
    let (mut b, _) = join(&app, &m.org_id, "viewer").await;
    let csrf = b.get("/console/account").await.csrf();
    // From another origin, with the right token: refused.
    b.origin = Some("https://evil.example".into());
    let evil = b.post("/console/account/sign-out-everywhere", &[("csrf_token", &csrf)]).await;
    assert_eq!(evil.status, 403);
    // Host and forwarded headers, which the client chooses, do not make its origin the console's.
    b.origin = Some("http://evil.example".into());
    b.headers = vec![
        ("host", "evil.example".into()),
        ("x-forwarded-host", "evil.example".into()),
        ("x-forwarded-proto", "http".into()),
        ("forwarded", "host=evil.example;proto=http".into()),
    ];
    let forged = b.post("/console/account/sign-out-everywhere", &[("csrf_token", &csrf)]).await;
    assert_eq!(forged.status, 403, "{}", forged.html);
    b.headers.clear();
    // Neither Origin nor Sec-Fetch-Site: refused.
    b.origin = None;
    assert_eq!(b.post("/console/account/sign-out-everywhere", &[("csrf_token", &csrf)]).await.status, 403);
    // The right origin, without the token or with another: refused.
    b.origin = Some(app.base.clone());
    assert_eq!(b.post("/console/account/sign-out-everywhere", &[]).await.status, 403);
    assert_eq!(b.post("/console/account/sign-out-everywhere", &[("csrf_token", "0123abc")]).await.status, 403);
    assert_eq!(b.get("/console/account").await.status, 200, "nothing was done: the session lives");
    // Sign-in from another origin: refused before any check.
    let mut other = Browser::new(&app);
    other.origin = Some("https://evil.example".into());
    assert_eq!(other.post("/console/login", &[("email", "a@b.co"), ("password", "x")]).await.status, 403);
    // The right origin and token: done.
    let out = b.post("/console/account/sign-out-everywhere", &[("csrf_token", &csrf)]).await;
    assert_eq!(out.status, 303);
    assert_eq!(b.get("/console/account").await.status, 303);
}

async fn a_password_change_ends_every_other_session(db: Db) {
    let app = TestApp::spawn(db).await;
    let m = app.merchant().await;
    let (mut b, someone) = join(&app, &m.org_id, "viewer").await;
    let mut laptop = Browser::new(&app);
    assert_eq!(sign_in(&mut laptop, &someone.email, &someone.password).await.status, 303);
    assert_eq!(laptop.get("/console/").await.status, 200);
    let old_cookie = b.cookie.clone();
    let new_password = "a much better passphrase";
    let changed = b
        .submit(
            "/console/account",
            "/console/account/password",
            &[("current_password", &someone.password), ("new_password", new_password), ("confirm_password", new_password)],
        )
        .await;
    assert_eq!(changed.status, 303, "{}", changed.html);
    assert_ne!(b.cookie, old_cookie, "a new token after the change");
    assert_eq!(b.get("/console/account").await.status, 200);
    assert_eq!(laptop.get("/console/").await.status, 303, "the other session ended");
    let mut thief = Browser::new(&app);
    thief.cookie = old_cookie;
    assert_eq!(thief.get("/console/").await.status, 303, "the old cookie ended too");
    assert_eq!(sign_in(&mut Browser::new(&app), &someone.email, new_password).await.status, 303);
    assert_eq!(sign_in(&mut Browser::new(&app), &someone.email, &someone.password).await.status, 401);
}

async fn sessions_end_when_idle_and_at_the_absolute_timeout(db: Db) {
    let app = TestApp::with(db, Options::manual()).await;
    let m = app.merchant().await;
    let (mut b, _) = join(&app, &m.org_id, "viewer").await;
    app.advance(Duration::from_secs(29 * 60));
    assert_eq!(b.get("/console/").await.status, 200, "29 minutes idle");
    app.advance(Duration::from_secs(30 * 60 + 1));
    assert_eq!(b.get("/console/").await.status, 303, "30 minutes idle: ended");

    let (mut busy, _) = join(&app, &m.org_id, "viewer").await;
    for _ in 0..(12 * 60 / 20 - 1) {
        app.advance(Duration::from_secs(20 * 60));
        assert_eq!(busy.get("/console/").await.status, 200);
    }
    app.advance(Duration::from_secs(20 * 60));
    assert_eq!(busy.get("/console/").await.status, 303, "12 hours after sign-in, however busy");
}

async fn a_recovery_code_signs_in_once_and_a_code_is_never_accepted_twice(db: Db) {
    let app = TestApp::spawn(db).await;
    let m = app.merchant().await;
    let (_, admin) = join(&app, &m.org_id, "admin").await;
    let mut b = Browser::new(&app);
    assert_eq!(sign_in(&mut b, &admin.email, &admin.password).await.status, 303);
    let code = &admin.recovery[3];
    let ok = b.post("/console/login/verify", &[("code", code), ("next", "/console/")]).await;
    assert_eq!(ok.status, 303, "{}", ok.html);
    let mut again = Browser::new(&app);
    assert_eq!(sign_in(&mut again, &admin.email, &admin.password).await.status, 303);
    let twice = again.post("/console/login/verify", &[("code", code), ("next", "/console/")]).await;
    assert_eq!(twice.status, 401, "a recovery code works once");
    // The TOTP code used at enrolment is refused: it was used.
    let replay = again.post("/console/login/verify", &[("code", &admin.enrolled_with), ("next", "/console/")]).await;
    assert_eq!(replay.status, 401, "a code is accepted once");
    // One code, read once: a code read again later may be of a later step (a new code).
    let next_code = admin.code(1);
    let next = again.post("/console/login/verify", &[("code", &next_code), ("next", "/console/")]).await;
    assert_eq!(next.status, 303);
    let mut third = Browser::new(&app);
    assert_eq!(sign_in(&mut third, &admin.email, &admin.password).await.status, 303);
    let reused = third.post("/console/login/verify", &[("code", &next_code), ("next", "/console/")]).await;
    assert_eq!(reused.status, 401, "the next step's code, once used, is refused too");
}

async fn invitation_links_work_once_and_expire_after_72_hours(db: Db) {
    let app = TestApp::with(db, Options::manual()).await;
    let m = app.merchant().await;
    let (_, link) = invite(&app, &m.org_id, "viewer").await;
    let mut b = Browser::new(&app);
    let form = b.get(&link).await;
    assert_eq!(form.status, 200);
    for label in ["Name", "Password", "Confirm password"] {
        assert!(form.texts("label").contains(&label.to_owned()), "{label}");
    }
    let pw = "a long enough passphrase";
    let fields = [("name", "Wanjiru"), ("new_password", pw), ("confirm_password", pw)];
    assert_eq!(b.post(&link, &fields).await.status, 303);
    let mut other = Browser::new(&app);
    assert_eq!(other.get(&link).await.status, 404, "used");
    assert_eq!(other.post(&link, &fields).await.status, 404);

    let (_, late) = invite(&app, &m.org_id, "viewer").await;
    app.advance(Duration::from_secs(72 * 3600 + 1));
    assert_eq!(Browser::new(&app).get(&late).await.status, 404, "expired");
}

async fn a_refused_form_keeps_its_values_and_shows_each_error_beside_its_field(db: Db) {
    let app = TestApp::spawn(db).await;
    let m = app.merchant().await;
    let (_, link) = invite(&app, &m.org_id, "viewer").await;
    let mut b = Browser::new(&app);
    let refused = b.post(&link, &[("name", "Achieng <b>O</b>"), ("new_password", "short"), ("confirm_password", "other")]).await;
    assert_eq!(refused.status, 422);
    assert_eq!(refused.value_of("name").as_deref(), Some("Achieng <b>O</b>"), "the value is kept (and escaped)");
    assert!(refused.html.contains("Achieng &lt;b&gt;O&lt;/b&gt;"));
    assert!(refused.field_error("new_password").unwrap().contains("at least 12"));
    assert!(refused.field_error("confirm_password").unwrap().contains("do not match"));
    assert_eq!(refused.attrs("#f-new_password", "aria-invalid"), vec!["true"]);
    let common = b.post(&link, &[("name", "A"), ("new_password", "password1234"), ("confirm_password", "password1234")]).await;
    assert!(common.field_error("new_password").unwrap().contains("too common"), "{}", common.html);
}

async fn people_whose_role_requires_it_enrol_before_anything_else(db: Db) {
    let app = TestApp::spawn(db).await;
    let m = app.merchant().await;
    let (_, link) = invite(&app, &m.org_id, "finance").await;
    let mut b = Browser::new(&app);
    let pw = "a long enough passphrase";
    let joined = b.post(&link, &[("name", "Otieno"), ("new_password", pw), ("confirm_password", pw)]).await;
    assert_eq!(joined.location.as_deref(), Some("/console/enrol"));
    for path in ["/console/", "/console/account"] {
        let r = b.get(path).await;
        assert_eq!((r.status, r.location.as_deref()), (303, Some("/console/enrol")), "{path}");
    }
    let enrol = b.get("/console/enrol").await;
    assert_eq!(enrol.status, 200);
    assert!(enrol.html.contains("<svg role=\"img\""), "a QR code drawn by the server");
    let wrong = b.post("/console/enrol", &[("csrf_token", &enrol.csrf()), ("code", "000000")]).await;
    assert_eq!(wrong.status, 422);
    assert!(wrong.field_error("code").is_some());
    // A viewer need not enrol.
    let (mut viewer, _) = join(&app, &m.org_id, "viewer").await;
    assert_eq!(viewer.get("/console/").await.status, 200);
}

/// The lockout cannot be turned against the account's person: failures from an attacker's
/// addresses lock the account there only, and the brake on many addresses' failures spares the
/// browser the person signed in from before.
async fn the_lockout_slows_the_guesser_and_lets_the_owner_in(db: Db) {
    let app = TestApp::spawn(db).await;
    let m = app.merchant().await;
    let (_, owner) = join(&app, &m.org_id, "viewer").await;
    // The person's own browser has signed in before: it holds a device cookie.
    let mut own = Browser::at(&app, "127.0.0.1");
    assert_eq!(sign_in(&mut own, &owner.email, &owner.password).await.status, 303);
    let device = own.device.clone().expect("a device cookie");

    // An attacker at one address is slowed; the person elsewhere is not.
    let mut attacker = Browser::at(&app, "127.0.0.2");
    for _ in 0..10 {
        assert_eq!(sign_in(&mut attacker, &owner.email, "not the password!").await.status, 401);
    }
    let slowed = sign_in(&mut attacker, &owner.email, &owner.password).await;
    assert_eq!(slowed.status, 429, "even the right password, from the guessing address");
    let elsewhere = sign_in(&mut Browser::at(&app, "127.0.0.3"), &owner.email, &owner.password).await;
    assert_eq!(elsewhere.status, 303, "the right password from an address that has not been failing: {}", elsewhere.html);

    // Guessing from many addresses (the fifty failures of the brake, with the ten above) brakes
    // the account for browsers it has not signed in from ...
    for host in 4..=7 {
        let mut b = Browser::at(&app, &format!("127.0.0.{host}"));
        for _ in 0..10 {
            assert_eq!(sign_in(&mut b, &owner.email, "not the password!").await.status, 401);
        }
    }
    let braked = sign_in(&mut Browser::at(&app, "127.0.0.9"), &owner.email, &owner.password).await;
    assert_eq!(braked.status, 429, "a new browser at a new address waits");
    // ... but not the person's own browser, wherever it is now.
    let mut travelling = Browser::at(&app, "127.0.0.9");
    travelling.device = Some(device);
    let home = sign_in(&mut travelling, &owner.email, &owner.password).await;
    assert_eq!(home.status, 303, "the person's browser signs in: {}", home.html);
    assert_eq!(travelling.get("/console/").await.status, 200);
}

/// A return address with a control character (which no browser sends) is refused with the
/// console's error page and its request id before anything is done: no session without its
/// cookie, no mode switched.
async fn a_control_character_in_a_return_address_gets_the_error_page_and_nothing_is_done(db: Db) {
    let app = TestApp::shared(db);
    let m = app.merchant().await;
    let (mut b, someone) = join(app, &m.org_id, "viewer").await;
    let signed_in_before = sign_ins(app, &someone.email).await;
    let mut fresh = Browser::new(app);
    for next in ["/console/\r\nSet-Cookie: x=1", "/console/\u{1}", "/console/\u{7f}"] {
        let r = fresh.post("/console/login", &[("email", &someone.email), ("password", &someone.password), ("next", next)]).await;
        assert_eq!(r.status, 400, "{next:?}: {}", r.html);
        assert!(r.html.contains("Request id:"), "the console's error page: {}", r.html);
        assert!(r.headers.get("set-cookie").is_none(), "no cookie");
        assert!(fresh.cookie.is_none());
    }
    assert_eq!(sign_ins(app, &someone.email).await, signed_in_before, "no session made or audited");

    // The mode switch: refused before switching.
    let page = b.get("/console/").await;
    assert!(page.html.contains("Test mode"), "{}", page.html);
    let r = b.post("/console/mode", &[("csrf_token", &page.csrf()), ("back", "/console/charges\u{0}")]).await;
    assert_eq!(r.status, 400, "{}", r.html);
    assert!(r.html.contains("Request id:"));
    let after = b.get("/console/account").await;
    assert_eq!(after.attrs("input[name=test_mode][checked]", "name").len(), 1, "still in test mode: {}", after.html);
}

/// How many successful sign-ins of `email` the audit log holds.
async fn sign_ins(app: &TestApp, email: &str) -> usize {
    let (p, email) = (app.platform.clone(), email.to_owned());
    tokio::task::spawn_blocking(move || {
        let filter = malipo_service::AuditFilter { action: Some("sign_in".into()), ..Default::default() };
        let all = malipo_service::read(p.store(), |tx| Ok(tx.audit_entries(&filter, None, 1000)?)).unwrap();
        all.iter().filter(|e| e.actor == email && e.action == "sign_in").count()
    })
    .await
    .unwrap()
}

/// With `MALIPO_TRUST_PROXY` (and no console address) the proxy's forwarded host and scheme are
/// the console's origin, and the last `X-Forwarded-For` address is the source the failure
/// limits and the audit log see.
async fn behind_a_trusted_proxy_its_forwarded_origin_and_source_count(db: Db) {
    let database = match db {
        Db::Sqlite => malipo_store_diesel::testing::TestDatabase::sqlite(),
        Db::Postgres => malipo_store_diesel::testing::TestDatabase::postgres(),
    };
    let mut settings = crate::harness::settings(&database.url, &Options::default());
    settings.trust_proxy = true;
    let app = TestApp::on(database, settings).await;
    let m = app.merchant().await;
    let (_, someone) = join(&app, &m.org_id, "viewer").await;
    let proxied = |client: &str| {
        let mut b = Browser::new(&app);
        b.origin = Some("https://pay.example".into());
        b.headers = vec![
            ("x-forwarded-host", "pay.example".into()),
            ("x-forwarded-proto", "https".into()),
            ("x-forwarded-for", format!("203.0.113.50, {client}")),
        ];
        b
    };
    let mut attacker = proxied("198.51.100.1");
    for _ in 0..10 {
        assert_eq!(sign_in(&mut attacker, &someone.email, "not the password!").await.status, 401);
    }
    assert_eq!(sign_in(&mut attacker, &someone.email, &someone.password).await.status, 429, "that client waits");
    let mut owner = proxied("198.51.100.2");
    let signed_in = sign_in(&mut owner, &someone.email, &someone.password).await;
    assert_eq!(signed_in.status, 303, "another client behind the same proxy: {}", signed_in.html);
    // Another forwarded origin than the one the proxy says is refused.
    let mut evil = proxied("198.51.100.3");
    evil.origin = Some("https://evil.example".into());
    assert_eq!(sign_in(&mut evil, &someone.email, &someone.password).await.status, 403);
    let (p, email) = (app.platform.clone(), someone.email.clone());
    let ips = tokio::task::spawn_blocking(move || {
        let filter = malipo_service::AuditFilter { action: Some("sign_in".into()), ..Default::default() };
        let all = malipo_service::read(p.store(), |tx| Ok(tx.audit_entries(&filter, None, 100)?)).unwrap();
        all.into_iter().filter(|e| e.actor == email).filter_map(|e| e.ip.map(|ip| (e.action, ip))).collect::<Vec<_>>()
    })
    .await
    .unwrap();
    assert!(ips.contains(&("sign_in".to_owned(), "198.51.100.2".to_owned())), "{ips:?}");
    assert!(ips.iter().any(|(a, ip)| a == "sign_in.failed" && ip == "198.51.100.1"), "{ips:?}");
}
