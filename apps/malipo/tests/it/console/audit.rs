//! Audit log (console contract sections 2 and 4): what people did, newest first, an
//! organisation's own only (operators: every organisation's), filtered and paginated, and
//! exported as CSV that no spreadsheet runs as a formula.

use super::{join, Browser, Page, Someone};
use crate::harness::{Creds, Db, TestApp};
use crate::on_both;

on_both!(
    the_audit_log_lists_what_people_did_newest_first_and_only_their_own_organisations,
    the_export_has_the_pages_filter_and_runs_no_formula,
    operators_see_every_organisation_and_what_was_typed_at_sign_in_as_text,
    a_refused_filter_keeps_its_values_with_each_error_beside_its_field,
    finance_and_viewers_see_no_audit_log,
);

/// The audit table's rows as cells.
fn rows(page: &Page) -> Vec<Vec<String>> {
    let n = page.texts("table tbody tr").len();
    (1..=n).map(|i| page.texts(&format!("table tbody tr:nth-child({i}) td"))).collect()
}

/// The column `name` of the audit table's rows.
fn column(page: &Page, name: &str) -> Vec<String> {
    let headers = page.texts("table thead th");
    let i = headers.iter().position(|h| h == name).unwrap_or_else(|| panic!("no column {name}: {headers:?}"));
    rows(page).into_iter().map(|r| r[i].clone()).collect()
}

async fn new_admin(app: &TestApp) -> (Creds, Browser, Someone) {
    let m = app.merchant().await;
    let (b, someone) = join(app, &m.org_id, "admin").await;
    (m, b, someone)
}

async fn invite(b: &mut Browser, email: &str) -> Page {
    let sent = b.submit("/console/team", "/console/team/invite", &[("email", email), ("role", "viewer")]).await;
    assert_eq!(sent.status, 200, "{}", sent.html);
    sent
}

/// Today's date in Nairobi (the test merchants are Kenyan), as the filters take it.
fn today() -> String {
    let now = time::OffsetDateTime::now_utc().to_offset(time::UtcOffset::from_hms(3, 0, 0).unwrap());
    now.date().to_string()
}

async fn the_audit_log_lists_what_people_did_newest_first_and_only_their_own_organisations(db: Db) {
    let app = TestApp::shared(db);
    let (m, mut b, admin) = new_admin(app).await;
    let (_, colleague) = join(app, &m.org_id, "viewer").await;
    let invited = format!("{}@example.com", uuid::Uuid::new_v4().simple());
    invite(&mut b, &invited).await;
    let key = b.submit("/console/developers", "/console/developers/keys", &[("mode", "test"), ("code", &admin.recovery[0])]).await;
    assert_eq!(key.status, 200);
    let client_id = key.text("[aria-labelledby=new-client-id-label]");
    let revoke = format!("/console/developers/keys/{client_id}/revoke");
    assert_eq!(b.submit("/console/developers", &revoke, &[("code", &admin.recovery[1])]).await.status, 303);
    let team = b.get("/console/team").await;
    let n = team.texts("table tbody tr").iter().position(|r| r.contains(&colleague.email)).unwrap() + 1;
    let action = team.attrs(&format!("table tbody tr:nth-child({n}) form"), "action")[0].clone();
    let colleague_id = action.split('/').nth(3).unwrap().to_owned();
    let role = format!("/console/team/{colleague_id}/role");
    assert_eq!(b.submit("/console/team", &role, &[("role", "finance"), ("code", &admin.recovery[2])]).await.status, 303);
    assert_eq!(b.submit("/console/team", &format!("/console/team/{colleague_id}/remove"), &[]).await.status, 303);
    let two_factor = b.submit("/console/team", "/console/team/two-factor", &[("require_two_factor", "on")]).await;
    assert_eq!(two_factor.status, 303);

    let page = b.get("/console/audit").await;
    assert_eq!(page.status, 200, "{}", page.html);
    assert_eq!(page.text("h1"), "Audit log");
    assert!(page.texts("nav a").contains(&"Audit log".to_owned()));
    let headers = page.texts("table thead th");
    assert_eq!(headers, ["Time", "Person", "Action", "Object", "Detail", "IP address", "Mode"]);
    let actions = column(&page, "Action");
    let done = ["team.two_factor_required", "user.removed", "user.role_changed", "api_key.revoked", "api_key.created", "user.invited"];
    assert_eq!(actions[..6], done, "newest first: {actions:?}");
    let top = rows(&page);
    assert!(top[..6].iter().all(|r| r[1] == admin.email && r[5] == "127.0.0.1"), "the person and their address: {top:?}");
    assert_eq!((top[1][3].as_str(), top[2][3].as_str()), (colleague_id.as_str(), colleague_id.as_str()), "the objects");
    assert!(top[2][4].contains("viewer to finance"), "{:?}", top[2]);
    assert_eq!((top[3][3].as_str(), top[4][3].as_str()), (client_id.as_str(), client_id.as_str()));
    assert_eq!(top[4][6], "test", "the key pair's mode");
    assert!(top[5][4].contains(&invited), "{:?}", top[5]);
    assert!(top[0][0].ends_with("Africa/Nairobi"), "in the organisation's time zone: {}", top[0][0]);

    // Filters: an action's prefix, and dates.
    let keys = b.get("/console/audit?action=api_key").await;
    assert_eq!(column(&keys, "Action"), ["api_key.revoked", "api_key.created"]);
    assert_eq!(keys.value_of("action").as_deref(), Some("api_key"));
    assert!(keys.attrs("a", "href").iter().any(|h| h == "/console/audit/export?action=api_key&from=&to="), "Export CSV of the same filter");
    let today = today();
    let same_day = b.get(&format!("/console/audit?from={today}&to={today}")).await;
    assert_eq!(column(&same_day, "Action")[..6], actions[..6]);
    let tomorrow =
        (time::Date::parse(&today, time::macros::format_description!("[year]-[month]-[day]")).unwrap().next_day().unwrap()).to_string();
    assert!(rows(&b.get(&format!("/console/audit?from={tomorrow}")).await).is_empty());
    assert!(rows(&b.get("/console/audit?to=2020-01-01").await).is_empty());

    // More than a page: "Next page" goes on where the first stopped.
    for _ in 0..20 {
        invite(&mut b, &format!("{}@example.com", uuid::Uuid::new_v4().simple())).await;
    }
    let first = b.get("/console/audit").await;
    assert_eq!(rows(&first).len(), 20);
    let next = first.attrs(".pager a", "href");
    assert_eq!(first.texts(".pager a"), ["Next page"]);
    let second = b.get(&next[0]).await;
    let later = rows(&second);
    assert!(!later.is_empty());
    assert!(later.iter().any(|r| r[2] == "api_key.created"), "the older entries on the next page");
    assert!(!rows(&first).iter().any(|r| r[2] == "api_key.created"));

    // Another organisation's admin sees none of it.
    let (_, mut other, other_admin) = new_admin(app).await;
    let theirs = other.get("/console/audit").await;
    let people = column(&theirs, "Person");
    assert!(people.iter().all(|p| p == &other_admin.email || p == "operator command"), "{people:?}");
    for theirs_not in [&admin.email, &client_id, &invited, &colleague.email, &colleague_id] {
        assert!(!theirs.html.contains(theirs_not.as_str()), "{theirs_not}");
    }
    let export = other.get("/console/audit/export").await;
    assert!(!export.html.contains(&admin.email));
}

async fn the_export_has_the_pages_filter_and_runs_no_formula(db: Db) {
    let app = TestApp::shared(db);
    let (_, mut b, admin) = new_admin(app).await;
    let formula = format!("=1+2-{}@example.com", uuid::Uuid::new_v4().simple());
    invite(&mut b, &formula).await;
    invite(&mut b, &format!("{}@example.com", uuid::Uuid::new_v4().simple())).await;
    let page = b.get("/console/audit?action=user.invited").await;
    let href = page.attrs("a[download]", "href")[0].clone();
    assert_eq!(page.texts("a[download]"), ["Export CSV"]);
    let csv = b.get(&href).await;
    assert_eq!(csv.status, 200);
    assert!(csv.headers.get("content-type").unwrap().to_str().unwrap().starts_with("text/csv"));
    assert!(csv.headers.get("content-disposition").unwrap().to_str().unwrap().starts_with("attachment"));
    let lines: Vec<&str> = csv.html.lines().collect();
    assert_eq!(lines[0], "time,organisation,person,action,object,detail,ip_address,mode");
    let records = &lines[1..];
    assert_eq!(records.len(), rows(&page).len(), "the page's filter: {records:?}");
    assert!(records.iter().all(|r| r.contains(",user.invited,")));
    assert!(records.iter().all(|r| r.contains(&admin.email)));
    // The detail begins with `=`: written so that a spreadsheet shows it as text.
    let risky = records.iter().find(|r| r.contains(&formula)).unwrap();
    assert!(risky.contains(&format!(",'{formula} as viewer,")), "{risky}");
    assert!(!records.iter().any(|r| r.contains(&format!(",{formula}"))));
}

async fn operators_see_every_organisation_and_what_was_typed_at_sign_in_as_text(db: Db) {
    // Sign-ins fail here: a server of the test's own.
    let app = TestApp::spawn(db).await;
    let (m, mut merchant_b, merchant_admin) = new_admin(&app).await;
    let operator_org = app.org("operator", "KE").await;
    let (mut op, _) = join(&app, &operator_org.org_id, "operator").await;
    // Someone types markup, a right-to-left override and a formula as an email at sign-in.
    let typed = "<img src=x onerror=alert(1)>\u{202E}gnp.exe@evil.example";
    let formula = "=cmd|' /c calc'!a0@evil.example";
    for email in [typed, formula] {
        let r =
            Browser::new(&app).post("/console/login", &[("email", email), ("password", "a wrong password"), ("next", "/console/")]).await;
        assert_eq!(r.status, 401);
    }

    let home = op.get("/console/").await;
    assert_eq!(home.status, 303, "an operator's home is their first section");
    let page = op.get("/console/audit").await;
    assert_eq!(page.status, 200, "{}", page.html);
    assert!(page.texts("nav a").contains(&"Audit log".to_owned()));
    assert!(page.texts("label").contains(&"Organisation".to_owned()), "operators filter by organisation");
    assert!(page.texts("table thead th").contains(&"Organisation".to_owned()));
    let people = column(&page, "Person");
    assert!(people.contains(&merchant_admin.email), "every organisation's entries");
    assert!(people.contains(&"<img src=x onerror=alert(1)>[U+202E]gnp.exe@evil.example".to_owned()), "{people:?}");
    assert!(page.html.contains("&lt;img src=x onerror=alert(1)&gt;[U+202E]gnp.exe@evil.example"));
    assert!(!page.html.contains("<img src=x") && !page.html.contains('\u{202E}'));

    let only = op.get(&format!("/console/audit?org={}", m.org_id)).await;
    assert!(column(&only, "Organisation").iter().all(|o| o == &m.org_id), "one organisation");
    assert!(!column(&only, "Person").iter().any(|p| p.contains("evil.example")));
    assert_eq!(only.value_of("org").as_deref(), Some(m.org_id.as_str()));

    let csv = op.get("/console/audit/export?action=sign_in.failed").await;
    assert_eq!(csv.status, 200);
    assert!(csv.html.contains(",'=cmd|' /c calc'!a0@evil.example,sign_in.failed,"), "{}", csv.html);
    assert!(csv.html.contains("<img src=x onerror=alert(1)>\u{202E}gnp.exe@evil.example"), "CSV is data, not HTML");

    // The merchant's admin sees none of these failures (they belong to no organisation).
    let theirs = merchant_b.get("/console/audit").await;
    assert!(!theirs.html.contains("evil.example"));
    assert!(!theirs.texts("label").contains(&"Organisation".to_owned()));
    assert_eq!(merchant_b.get(&format!("/console/audit?org={}", operator_org.org_id)).await.status, 200);
    assert!(!merchant_b.get(&format!("/console/audit?org={}", operator_org.org_id)).await.html.contains("sign_in.failed"));
}

async fn a_refused_filter_keeps_its_values_with_each_error_beside_its_field(db: Db) {
    let app = TestApp::shared(db);
    let (_, mut b, _) = new_admin(app).await;
    let refused = b.get("/console/audit?action=sign_in&from=2026-13-45&to=yesterday").await;
    assert_eq!(refused.status, 422, "{}", refused.html);
    assert!(refused.field_error("from").unwrap().contains("YYYY-MM-DD"));
    assert!(refused.field_error("to").is_some());
    assert_eq!(refused.value_of("from").as_deref(), Some("2026-13-45"));
    assert_eq!(refused.value_of("action").as_deref(), Some("sign_in"));
    assert_eq!(refused.alert().as_deref(), Some("The filter was not applied."));
    let backwards = b.get("/console/audit?from=2026-03-02&to=2026-03-01").await;
    assert_eq!(backwards.status, 422);
    assert!(backwards.field_error("to").unwrap().contains("before"));
    assert_eq!(b.get("/console/audit/export?from=nope").await.status, 400);
    assert_eq!(b.get("/console/audit?cursor=nope").await.status, 400);
}

async fn finance_and_viewers_see_no_audit_log(db: Db) {
    let app = TestApp::shared(db);
    let m = app.merchant().await;
    for role in ["finance", "viewer"] {
        let (mut b, _) = join(app, &m.org_id, role).await;
        assert!(!b.get("/console/").await.texts("nav a").contains(&"Audit log".to_owned()), "{role}");
        assert_eq!(b.get("/console/audit").await.status, 403, "{role}");
        assert_eq!(b.get("/console/audit/export").await.status, 403, "{role}");
    }
}
