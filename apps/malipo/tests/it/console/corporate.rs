//! The corporate application in the console (contract section 4, Corporate; issue 31's bad
//! input): a maker uploads a CSV file, sees every invalid row, submits a valid one once however
//! often it is posted; the maker can never approve or reject their own batch (through the page,
//! a hand-made post, or a key pair they created), nothing reserved; a checker approves with a
//! fresh authentication code (a wrong or replayed one leaves the batch untouched); formulas in
//! a narration are kept as text and written guarded in "Download failed items"; other roles
//! are refused.

use std::time::Duration;

use malipo_core::Mode;
use serde_json::Value;

use super::{join, Browser, Page, Someone};
use crate::harness::{msisdn, ok, Creds, Db, TestApp};
use crate::on_both;

on_both!(
    a_maker_previews_every_invalid_row_submits_once_and_a_checker_approves,
    the_maker_never_approves_or_rejects_their_own_batch,
    a_batch_made_through_a_persons_key_pair_is_theirs_in_the_console,
    a_wrong_or_replayed_code_leaves_the_batch_untouched_and_reject_asks_a_reason,
    other_roles_and_other_origins_are_refused,
    a_maker_transfers_between_the_organisations_accounts,
    ten_thousand_rows_are_previewed_within_two_seconds,
    two_checkers_approving_at_once_make_one_approval_and_one_reservation,
    a_makers_single_payout_is_a_batch_of_one_that_waits_for_a_checker,
);

const WAIT: Duration = Duration::from_secs(30);
const HEADER: &str = "payee_msisdn,amount,reference,narration\n";
const FORMULA: &str = "=cmd|' /C calc'!A0";

/// A funded corporate organisation with a maker and a checker signed in.
async fn payroll(app: &TestApp, funds: &str) -> (Creds, (Browser, Someone), (Browser, Someone)) {
    let c = app.org("corporate", "KE").await;
    app.fund(&c.org_id, Mode::Test, funds).await;
    let maker = join(app, &c.org_id, "maker").await;
    let checker = join(app, &c.org_id, "checker").await;
    (c, maker, checker)
}

/// A multipart form post (a file field among text fields), as a browser sends one.
async fn post_multipart(b: &mut Browser, action: &str, fields: &[(&str, &str)], file: Option<(&str, &[u8])>) -> Page {
    let boundary = format!("----malipo{}", uuid::Uuid::new_v4().simple());
    let mut body = Vec::new();
    for (name, value) in fields {
        body.extend_from_slice(format!("--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n").as_bytes());
    }
    if let Some((name, data)) = file {
        body.extend_from_slice(
            format!("--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"; filename=\"payroll.csv\"\r\nContent-Type: text/csv\r\n\r\n")
                .as_bytes(),
        );
        body.extend_from_slice(data);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let mut r =
        http.post(format!("{}{action}", b.base)).header("content-type", format!("multipart/form-data; boundary={boundary}")).body(body);
    if let Some(c) = &b.cookie {
        r = r.header("cookie", format!("malipo_session={c}"));
    }
    if let Some(o) = &b.origin {
        r = r.header("origin", o);
    }
    let r = r.send().await.unwrap();
    let status = r.status().as_u16();
    let headers = r.headers().clone();
    let location = headers.get("location").map(|l| l.to_str().unwrap().to_owned());
    Page { status, location, html: r.text().await.unwrap(), headers }
}

/// "Upload" on Bulk payouts: the preview page.
async fn preview(b: &mut Browser, reference: &str, csv: &str) -> Page {
    let csrf = b.get("/console/bulk-payouts").await.csrf();
    post_multipart(b, "/console/bulk-payouts/preview", &[("csrf_token", &csrf), ("reference", reference)], Some(("file", csv.as_bytes())))
        .await
}

/// "Submit for approval" on a preview page.
async fn submit(b: &mut Browser, preview: &Page) -> Page {
    let fields: Vec<(String, String)> = ["csrf_token", "idempotency_key", "reference", "csv_hex"]
        .iter()
        .map(|n| ((*n).to_owned(), preview.value_of(n).unwrap_or_else(|| panic!("no {n} in:\n{}", preview.html))))
        .collect();
    let borrowed: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    post_multipart(b, "/console/bulk-payouts", &borrowed, None).await
}

fn batch_id(location: &str) -> String {
    location.strip_prefix("/console/bulk-payouts/").unwrap_or_else(|| panic!("{location}")).split('?').next().unwrap().to_owned()
}

/// A batch submitted by `b` from `csv`: its id.
async fn submitted(b: &mut Browser, reference: &str, csv: &str) -> String {
    let p = preview(b, reference, csv).await;
    assert_eq!(p.status, 200, "{}", p.html);
    let done = submit(b, &p).await;
    assert_eq!(done.status, 303, "{}", done.html);
    batch_id(done.location.as_deref().unwrap())
}

async fn api_batches(app: &TestApp, c: &Creds) -> Vec<Value> {
    let t = app.token(c).await;
    ok(app.get_answer(&t, "/bulk-payouts?limit=100").await, "GET /bulk-payouts").json["data"].as_array().unwrap().clone()
}

async fn api_batch(app: &TestApp, c: &Creds, id: &str) -> Value {
    let t = app.token(c).await;
    app.get_json(&t, &format!("/bulk-payouts/{id}")).await
}

/// The form fields of the batch page's form posting to `action`.
async fn decide(b: &mut Browser, id: &str, what: &str, fields: &[(&str, &str)]) -> Page {
    let page = b.get(&format!("/console/bulk-payouts/{id}")).await;
    let csrf = page.csrf();
    let key = page.value_of("idempotency_key").unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    let mut all = vec![("csrf_token", csrf.as_str()), ("idempotency_key", key.as_str())];
    all.extend_from_slice(fields);
    b.post(&format!("/console/bulk-payouts/{id}/{what}"), &all).await
}

async fn a_maker_previews_every_invalid_row_submits_once_and_a_checker_approves(db: Db) {
    let app = TestApp::shared(db);
    let (c, (mut maker, _), (mut checker, checker_someone)) = payroll(app, "10000").await;
    let page = maker.get("/console/bulk-payouts").await;
    assert_eq!(page.status, 200, "{}", page.html);
    for label in ["Batch reference", "CSV file"] {
        assert!(page.texts("label").contains(&label.to_owned()), "{label}");
    }
    assert!(page.texts("button").contains(&"Preview".to_owned()));
    let (good, missing, bad) = (msisdn("0000"), msisdn("1007"), "25471234");
    // Two bad rows (lines 3 and 5): both reasons, nothing created.
    let wrong = format!("{HEADER}{good},100.00,EMP-1,\n{bad},200.00,EMP-2,\n{missing},200.00,EMP-3,{FORMULA}\n{good},ten,EMP-4,\n");
    let p = preview(&mut maker, "PAYROLL-NOV", &wrong).await;
    assert_eq!(p.status, 422, "{}", p.html);
    let cells = p.texts("table tbody tr td");
    assert_eq!(p.texts("table tbody tr").len(), 2, "{cells:?}");
    assert_eq!((cells[0].as_str(), cells[1].as_str()), ("3", "payee_msisdn"));
    assert_eq!((cells[3].as_str(), cells[4].as_str()), ("5", "amount"));
    assert!(!p.texts("button").contains(&"Submit for approval".to_owned()), "nothing to submit");
    assert!(api_batches(app, &c).await.is_empty(), "nothing created while a row is invalid");
    // Fixed: count, total and fees; the formula in a narration is accepted as text.
    let fixed = format!("{HEADER}{good},100.00,EMP-1,\n{missing},200.00,EMP-3,{FORMULA}\n{good},300.00,EMP-4,\n");
    let p = preview(&mut maker, "PAYROLL-NOV", &fixed).await;
    assert_eq!(p.status, 200, "{}", p.html);
    assert_eq!(
        (p.text("#preview-count"), p.text("#preview-total"), p.text("#preview-fees")),
        ("3".into(), "KES 600.00".into(), "KES 15.00".into())
    );
    assert!(api_batches(app, &c).await.is_empty(), "a preview creates nothing");
    // Submitted twice (a double click): one batch.
    let first = submit(&mut maker, &p).await;
    let again = submit(&mut maker, &p).await;
    assert_eq!((first.status, again.status), (303, 303), "{}", again.html);
    assert_eq!(first.location, again.location);
    let id = batch_id(first.location.as_deref().unwrap());
    let batches = api_batches(app, &c).await;
    assert_eq!(batches.len(), 1);
    assert!(batches[0]["created_by"].as_str().unwrap().starts_with("usr_"), "the maker is a person: {}", batches[0]);
    assert_eq!(batches[0]["state"], "awaiting_approval");
    let shown = maker.follow(&first).await;
    assert!(shown.status_message().unwrap().contains("Submitted for approval"), "{}", shown.html);
    assert!(!shown.texts("button").contains(&"Approve".to_owned()));
    // The checker: Approvals lists it with its maker, total and count; Approve with a fresh code.
    let approvals = checker.get("/console/approvals").await;
    assert_eq!(approvals.status, 200);
    let row = approvals.texts("tbody tr td");
    assert!(row.contains(&id) && row.contains(&"Amina Njeri".to_owned()) && row.contains(&"KES 600.00".to_owned()), "{row:?}");
    let approved = decide(&mut checker, &id, "approve", &[("code", &checker_someone.code(1))]).await;
    assert_eq!(approved.status, 303, "{}", approved.html);
    let t = app.token(&c).await;
    let done = app.wait_state(&t, &format!("/bulk-payouts/{id}"), "completed", WAIT).await;
    assert_eq!(done["counts"], serde_json::json!({"pending": 0, "completed": 2, "failed": 1}), "{done}");
    assert!(done["approved_by"].as_str().unwrap().starts_with("usr_"));
    let page = maker.get(&format!("/console/bulk-payouts/{id}")).await;
    assert_eq!((page.text("#count-completed"), page.text("#count-failed")), ("2".into(), "1".into()));
    assert_eq!(page.attrs("dl.facts[data-final]", "class").len(), 1, "settled: the live region stops");
    let failed = maker.get(&format!("/console/bulk-payouts/{id}?state=failed")).await;
    assert_eq!(failed.texts("tbody tr").len(), 1);
    assert!(failed.html.contains("EMP-3") && failed.html.contains("payee_not_found"));
    // "Download failed items": the upload's format, the formula written as text.
    let csv = maker.get(&format!("/console/bulk-payouts/{id}/failed.csv")).await;
    assert_eq!(csv.status, 200);
    assert!(csv.headers["content-type"].to_str().unwrap().starts_with("text/csv"));
    assert_eq!(csv.html, format!("{HEADER}{missing},200.00,EMP-3,'{FORMULA}\n"));
    // The batches table names maker and checker.
    let list = maker.get("/console/bulk-payouts").await;
    let row = list.texts("tbody tr td");
    assert!(row.contains(&"completed".to_owned()) && row.iter().filter(|c| *c == "Amina Njeri").count() == 2, "{row:?}");
    app.assert_ledger_ok().await;
}

async fn the_maker_never_approves_or_rejects_their_own_batch(db: Db) {
    let app = TestApp::shared(db);
    let (c, (mut maker, maker_someone), _) = payroll(app, "10000").await;
    let id = submitted(&mut maker, "OWN", &format!("{HEADER}{},10.00,A,\n", msisdn("0000"))).await;
    let page = maker.get(&format!("/console/bulk-payouts/{id}")).await;
    assert!(!page.texts("button").contains(&"Approve".to_owned()));
    assert!(page.text("#why-not").contains("You made this batch"), "{}", page.html);
    // A hand-made post: refused before anything, whatever the form says.
    for what in ["approve", "reject"] {
        let fields = [("code", maker_someone.code(1)), ("reason", "mine".to_owned())];
        let fields: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let refused = decide(&mut maker, &id, what, &fields).await;
        assert_eq!(refused.status, 403, "{what}: {}", refused.html);
    }
    // Also as a checker: the person who made it is the maker whatever their role now.
    let b = api_batch(app, &c, &id).await;
    assert_eq!((b["state"].as_str(), b["approved_by"].is_null()), (Some("awaiting_approval"), true));
    let t = app.token(&c).await;
    let balance = ok(app.get_answer(&t, "/partner/balance?account=payout").await, "balance");
    assert_eq!(balance.raw("available"), "10000.00", "nothing reserved");
}

async fn a_batch_made_through_a_persons_key_pair_is_theirs_in_the_console(db: Db) {
    let app = TestApp::shared(db);
    let c = app.org("corporate", "KE").await;
    app.fund(&c.org_id, Mode::Test, "1000").await;
    // An admin creates a key pair in the console and makes a batch with it through the API.
    let (mut admin_b, admin) = join(app, &c.org_id, "admin").await;
    let created = admin_b.submit("/console/developers", "/console/developers/keys", &[("mode", "test"), ("code", &admin.code(1))]).await;
    assert_eq!(created.status, 200, "{}", created.html);
    let theirs = Creds {
        org_id: c.org_id.clone(),
        client_id: created.text("[aria-labelledby=new-client-id-label]"),
        client_secret: created.text("[aria-labelledby=new-client-secret-label]"),
    };
    let t = app.token(&theirs).await;
    let body = serde_json::json!({"reference": "BY-KEY", "items": [{"payee_msisdn": msisdn("0000"), "amount": "10", "reference": "A"}]});
    let b = ok(app.post_new(&t, "/bulk-payouts", &body).await, "POST /bulk-payouts").json;
    let id = b["batch_id"].as_str().unwrap().to_owned();
    assert_eq!(b["created_by"], theirs.client_id.as_str());
    // The batch page names the person behind the key pair.
    let page = admin_b.get(&format!("/console/bulk-payouts/{id}")).await;
    assert!(page.texts("dl.facts dd").iter().any(|d| d.contains(&theirs.client_id) && d.contains("Amina Njeri")), "{}", page.html);
    // Made a checker by another admin, then signed in again: still the batch's maker.
    let (mut other_admin, other) = join(app, &c.org_id, "admin").await;
    let team = other_admin.get("/console/team").await;
    let rows = team.texts("table tbody tr");
    let n = rows.iter().position(|r| r.contains(&admin.email)).unwrap() + 1;
    let action = team.attrs(&format!("table tbody tr:nth-child({n}) form"), "action")[0].clone();
    let user_id = action.split('/').nth(3).unwrap().to_owned();
    let changed = other_admin
        .submit("/console/team", &format!("/console/team/{user_id}/role"), &[("role", "checker"), ("code", &other.code(1))])
        .await;
    assert_eq!(changed.status, 303, "{}", changed.html);
    let mut again = Browser::new(app);
    let first = again.post("/console/login", &[("email", &admin.email), ("password", &admin.password), ("next", "/console/")]).await;
    assert_eq!(first.status, 303, "{}", first.html);
    let signed = again.post("/console/login/verify", &[("code", &admin.recovery[0]), ("next", "/console/")]).await;
    assert_eq!(signed.status, 303, "{}", signed.html);
    let page = again.get(&format!("/console/bulk-payouts/{id}")).await;
    assert!(page.text("#why-not").contains("You made this batch"), "{}", page.html);
    assert!(!page.texts("button").contains(&"Approve".to_owned()));
    for what in ["approve", "reject"] {
        let refused = decide(&mut again, &id, what, &[("code", &admin.recovery[1]), ("reason", "mine")]).await;
        assert_eq!(refused.status, 403, "{what}: {}", refused.html);
        assert!(refused.html.contains("Maker-checker violation"), "{}", refused.html);
    }
    let t_org = app.token(&c).await;
    assert_eq!(ok(app.get_answer(&t_org, "/partner/balance?account=payout").await, "b").raw("available"), "1000.00", "nothing reserved");
    // Another person approves it.
    let (mut checker_b, checker) = join(app, &c.org_id, "checker").await;
    let approved = decide(&mut checker_b, &id, "approve", &[("code", &checker.code(1))]).await;
    assert_eq!(approved.status, 303, "{}", approved.html);
    let tok = app.token(&c).await;
    app.wait_state(&tok, &format!("/bulk-payouts/{id}"), "completed", WAIT).await;
}

async fn a_wrong_or_replayed_code_leaves_the_batch_untouched_and_reject_asks_a_reason(db: Db) {
    let app = TestApp::shared(db);
    let (c, (mut maker, _), (mut checker, someone)) = payroll(app, "10000").await;
    let id = submitted(&mut maker, "CODES", &format!("{HEADER}{},10.00,A,\n", msisdn("0000"))).await;
    let page = checker.get(&format!("/console/bulk-payouts/{id}")).await;
    for label in ["Authentication code", "Reason"] {
        assert!(page.texts("label").contains(&label.to_owned()), "{label}");
    }
    for code in ["000000", someone.enrolled_with.as_str()] {
        let refused = decide(&mut checker, &id, "approve", &[("code", code)]).await;
        assert_eq!(refused.status, 422, "{code}: {}", refused.html);
        assert!(refused.field_error("code").is_some(), "beside Authentication code: {}", refused.html);
        assert_eq!(api_batch(app, &c, &id).await["state"], "awaiting_approval", "untouched");
    }
    let t = app.token(&c).await;
    assert_eq!(ok(app.get_answer(&t, "/partner/balance?account=payout").await, "balance").raw("available"), "10000.00");
    let no_reason = decide(&mut checker, &id, "reject", &[("reason", "")]).await;
    assert_eq!(no_reason.status, 422, "{}", no_reason.html);
    assert!(no_reason.field_error("reason").is_some());
    let rejected = decide(&mut checker, &id, "reject", &[("reason", "<b>wrong month</b>")]).await;
    assert_eq!(rejected.status, 303, "{}", rejected.html);
    let page = checker.follow(&rejected).await;
    assert!(page.html.contains("&lt;b&gt;wrong month&lt;/b&gt;"), "escaped: {}", page.html);
    let b = api_batch(app, &c, &id).await;
    assert_eq!((b["state"].as_str(), b["rejection_reason"].as_str()), (Some("rejected"), Some("<b>wrong month</b>")));
    assert_eq!(decide(&mut checker, &id, "approve", &[("code", &someone.code(1))]).await.status, 409, "decided already");
}

async fn other_roles_and_other_origins_are_refused(db: Db) {
    let app = TestApp::shared(db);
    let (c, (mut maker, _), (mut checker, someone)) = payroll(app, "100").await;
    let id = submitted(&mut maker, "ROLES", &format!("{HEADER}{},10.00,A,\n", msisdn("0000"))).await;
    // A checker uploads nothing; a maker has no Approvals; an admin does neither.
    let csrf = checker.get("/console/bulk-payouts").await.csrf();
    let upload =
        post_multipart(&mut checker, "/console/bulk-payouts/preview", &[("csrf_token", &csrf), ("reference", "X")], Some(("file", b"x")))
            .await;
    assert_eq!(upload.status, 403);
    assert!(!checker.get("/console/bulk-payouts").await.texts("button").contains(&"Preview".to_owned()));
    assert_eq!(maker.get("/console/approvals").await.status, 403);
    assert!(!maker.get("/console/").await.texts("nav a").contains(&"Approvals".to_owned()));
    assert!(checker.get("/console/").await.texts("nav a").contains(&"Approvals".to_owned()));
    let (mut admin, admin_someone) = join(app, &c.org_id, "admin").await;
    assert_eq!(admin.get("/console/approvals").await.status, 403);
    assert_eq!(decide(&mut admin, &id, "approve", &[("code", &admin_someone.code(1))]).await.status, 403);
    assert_eq!(admin.get(&format!("/console/bulk-payouts/{id}")).await.status, 200, "an admin reads");
    // From another origin, or without the session's token: 403, nothing done.
    let page = checker.get(&format!("/console/bulk-payouts/{id}")).await;
    checker.origin = Some("http://evil.example".into());
    let key = page.value_of("idempotency_key").unwrap();
    let code = someone.code(1);
    let forged = checker
        .post(&format!("/console/bulk-payouts/{id}/approve"), &[("csrf_token", &page.csrf()), ("idempotency_key", &key), ("code", &code)])
        .await;
    assert_eq!(forged.status, 403);
    checker.origin = Some(app.base.clone());
    let tokenless = checker.post(&format!("/console/bulk-payouts/{id}/approve"), &[("idempotency_key", &key), ("code", &code)]).await;
    assert_eq!(tokenless.status, 403);
    let no_token = post_multipart(&mut maker, "/console/bulk-payouts/preview", &[("reference", "X")], Some(("file", b"x"))).await;
    assert_eq!(no_token.status, 403);
    assert_eq!(api_batch(app, &c, &id).await["state"], "awaiting_approval");
    // Another organisation's batch is not found.
    let other = app.org("corporate", "KE").await;
    let (mut stranger, _) = join(app, &other.org_id, "checker").await;
    assert_eq!(stranger.get(&format!("/console/bulk-payouts/{id}")).await.status, 404);
}

async fn a_maker_transfers_between_the_organisations_accounts(db: Db) {
    let app = TestApp::shared(db);
    let (c, (mut maker, _), (mut checker, _)) = payroll(app, "100").await;
    let home = maker.get("/console/").await;
    assert!(home.texts("button").contains(&"Transfer".to_owned()), "{}", home.html);
    assert!(home.texts(".card .label").contains(&"Payout reserved".to_owned()));
    assert!(!checker.get("/console/").await.texts("button").contains(&"Transfer".to_owned()));
    let key = home.attrs("form[action='/console/transfer'] input[name=idempotency_key]", "value")[0].clone();
    let csrf = home.csrf();
    let post = |amount: &'static str| {
        [
            ("csrf_token", csrf.clone()),
            ("idempotency_key", key.clone()),
            ("from", "payout".into()),
            ("to", "collection".into()),
            ("amount", amount.into()),
        ]
    };
    let fields = post("40.00");
    let fields: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let moved = maker.post("/console/transfer", &fields).await;
    let again = maker.post("/console/transfer", &fields).await;
    assert_eq!((moved.status, again.status), (303, 303), "{}", moved.html);
    assert!(maker.follow(&moved).await.status_message().unwrap().contains("Transfer done"));
    let t = app.token(&c).await;
    assert_eq!(ok(app.get_answer(&t, "/partner/balance?account=payout").await, "b").raw("available"), "60.00", "once");
    let fresh = maker.get("/console/").await;
    let key = fresh.attrs("form[action='/console/transfer'] input[name=idempotency_key]", "value")[0].clone();
    let short = maker
        .post(
            "/console/transfer",
            &[("csrf_token", &csrf), ("idempotency_key", &key), ("from", "payout"), ("to", "collection"), ("amount", "1000")],
        )
        .await;
    assert_eq!(short.status, 422, "{}", short.html);
    assert!(short.alert().unwrap().contains("Insufficient funds"));
    assert_eq!(short.value_of("amount").as_deref(), Some("1000"));
    let checker_csrf = checker.get("/console/").await.csrf();
    let refused = checker
        .post(
            "/console/transfer",
            &[("csrf_token", &checker_csrf), ("idempotency_key", &key), ("from", "payout"), ("to", "collection"), ("amount", "1")],
        )
        .await;
    assert_eq!(refused.status, 403);
}

async fn ten_thousand_rows_are_previewed_within_two_seconds(db: Db) {
    let app = TestApp::shared(db);
    let (c, (mut maker, _), _) = payroll(app, "1").await;
    let mut csv = HEADER.to_owned();
    for i in 0..10_000 {
        csv.push_str(&format!("2547{:08},1.00,ROW-{i},salary\n", 10_000_000 + i));
    }
    // Five previews (the first warms the caches): each within 2 s; `bench/console_apps.sh` runs
    // this in a release build and reports the median.
    let mut took = Vec::new();
    for _ in 0..5 {
        let started = std::time::Instant::now();
        let p = preview(&mut maker, "BIG", &csv).await;
        took.push(started.elapsed());
        assert_eq!(p.status, 200, "{}", &p.html[..p.html.len().min(2000)]);
        assert_eq!(p.text("#preview-count"), "10000");
        let checking = p.text("dl.facts dd:last-child");
        println!(
            "BENCH {}",
            serde_json::json!({"backend": format!("{db:?}").to_lowercase(), "preview_rows": 10_000, "bytes": csv.len(), "ms": took.last().unwrap().as_secs_f64() * 1000.0, "checking": checking})
        );
    }
    assert!(took.iter().all(|t| *t < Duration::from_secs(2)), "10,000 rows previewed in {took:?}");
    assert!(api_batches(app, &c).await.is_empty());
}

async fn two_checkers_approving_at_once_make_one_approval_and_one_reservation(db: Db) {
    let app = TestApp::shared(db);
    let (c, (mut maker, _), (mut one, one_someone)) = payroll(app, "1000").await;
    let (mut two, two_someone) = join(app, &c.org_id, "checker").await;
    for round in 0..3usize {
        let id = submitted(&mut maker, &format!("RACE-{round}"), &format!("{HEADER}{},100.00,A,\n", msisdn("0000"))).await;
        // Recovery codes: each is fresh, however fast the rounds come.
        let (code_one, code_two) = (one_someone.recovery[round].clone(), two_someone.recovery[round].clone());
        let (fields_one, fields_two) = ([("code", code_one.as_str())], [("code", code_two.as_str())]);
        let (a, b) = futures_util::join!(decide(&mut one, &id, "approve", &fields_one), decide(&mut two, &id, "approve", &fields_two));
        let mut statuses = [a.status, b.status];
        statuses.sort_unstable();
        assert_eq!(statuses, [303, 409], "round {round}: one approval: {} / {}", a.html, b.html);
        let t = app.token(&c).await;
        let batch = app.wait_state(&t, &format!("/bulk-payouts/{id}"), "completed", WAIT).await;
        assert_eq!(batch["counts"]["completed"], 1);
        // Each round reserves and pays 100.00 + 5.00 once.
        let left = ok(app.get_answer(&t, "/partner/balance?account=payout").await, "b").raw("available");
        assert_eq!(left, format!("{}.00", 1000 - 105 * (round + 1)), "round {round}");
    }
    app.assert_ledger_ok().await;
}

/// "Pay" on Payouts with the form's token and key.
async fn pay_one(b: &mut Browser, csrf: &str, key: &str, payee: &str, amount: &str) -> Page {
    b.post(
        "/console/payouts",
        &[("csrf_token", csrf), ("idempotency_key", key), ("payee_msisdn", payee), ("amount", amount), ("reference", "RENT-DEC")],
    )
    .await
}

async fn a_makers_single_payout_is_a_batch_of_one_that_waits_for_a_checker(db: Db) {
    let app = TestApp::shared(db);
    let (c, (mut maker, _), (mut checker, checker_someone)) = payroll(app, "1000").await;
    let page = maker.get("/console/payouts").await;
    assert!(page.texts("button").contains(&"Pay".to_owned()), "{}", page.html);
    assert!(page.html.contains("Waits for a checker"));
    let (csrf, key, payee) = (page.csrf(), page.value_of("idempotency_key").unwrap(), msisdn("0000"));
    // A bad amount: the error beside its field, by the form's label, nothing created.
    let refused = pay_one(&mut maker, &csrf, &key, &payee, "ten").await;
    assert_eq!(refused.status, 422, "{}", refused.html);
    assert!(refused.html.contains("Amount"), "{}", refused.html);
    assert!(api_batches(app, &c).await.is_empty());
    // Paid twice with one form (a double click): one batch of one, awaiting approval, nothing reserved.
    let first = pay_one(&mut maker, &csrf, &key, &payee, "250.00").await;
    let again = pay_one(&mut maker, &csrf, &key, &payee, "250.00").await;
    assert_eq!((first.status, again.status), (303, 303), "{}", again.html);
    assert_eq!(first.location, again.location);
    let id = batch_id(first.location.as_deref().unwrap());
    let b = api_batch(app, &c, &id).await;
    assert_eq!(
        (b["state"].as_str(), b["item_count"].as_u64(), b["reference"].as_str()),
        (Some("awaiting_approval"), Some(1), Some("RENT-DEC")),
        "{b}"
    );
    let t = app.token(&c).await;
    let balance = ok(app.get_answer(&t, "/partner/balance?account=payout").await, "balance");
    assert_eq!(balance.raw("available"), "1000.00", "nothing reserved before a checker approves");
    // The maker cannot approve it; a checker does, and it is paid.
    let own = maker.get(&format!("/console/bulk-payouts/{id}")).await;
    assert!(own.text("#why-not").contains("You made this batch"), "{}", own.html);
    let approved = decide(&mut checker, &id, "approve", &[("code", &checker_someone.code(1))]).await;
    assert_eq!(approved.status, 303, "{}", approved.html);
    let done = app.wait_state(&t, &format!("/bulk-payouts/{id}"), "completed", WAIT).await;
    assert_eq!(done["counts"], serde_json::json!({"pending": 0, "completed": 1, "failed": 0}), "{done}");
    app.assert_ledger_ok().await;
}
