//! Team (console contract sections 2 and 4): invitations sent from the page, role changes (a
//! step-up; the person's sessions end), removal (they sign in no more), "Require two-factor for
//! everyone", and who may do any of it.

use super::{join, Browser, Page, Someone};
use crate::harness::{Creds, Db, TestApp};
use crate::on_both;

on_both!(
    an_invitation_sent_from_team_lets_a_new_person_join,
    a_role_change_needs_a_fresh_code_and_ends_the_persons_sessions,
    a_removed_person_signs_in_no_more,
    requiring_two_factor_sends_a_viewer_to_enrolment_at_their_next_request,
    finance_and_viewers_may_not_use_team,
    names_are_shown_as_text_and_a_direction_override_is_refused,
    team_forms_from_another_origin_or_without_their_token_do_nothing,
    an_email_used_elsewhere_is_invited_as_a_free_one_and_weak_passwords_and_markup_are_refused,
);

async fn sign_in(b: &mut Browser, email: &str, password: &str) -> Page {
    b.post("/console/login", &[("email", email), ("password", password), ("next", "/console/")]).await
}

/// The row of the Team table whose cells include `email`.
fn row_of(page: &Page, email: &str) -> Vec<String> {
    let rows = page.texts("table tbody tr");
    let row = rows.iter().position(|r| r.contains(email)).unwrap_or_else(|| panic!("{email} not listed:\n{}", page.html));
    page.texts(&format!("table tbody tr:nth-child({}) td", row + 1))
}

/// The `usr_` id of the person listed with `email` (from their row's forms).
fn id_of(page: &Page, email: &str) -> String {
    let rows = page.texts("table tbody tr");
    let n = rows.iter().position(|r| r.contains(email)).unwrap() + 1;
    let action = page.attrs(&format!("table tbody tr:nth-child({n}) form"), "action")[0].clone();
    action.split('/').nth(3).unwrap().to_owned()
}

async fn new_admin(app: &TestApp) -> (Creds, Browser, Someone) {
    let m = app.merchant().await;
    let (b, someone) = join(app, &m.org_id, "admin").await;
    (m, b, someone)
}

async fn an_invitation_sent_from_team_lets_a_new_person_join(db: Db) {
    let app = TestApp::shared(db);
    let (_, mut b, admin) = new_admin(app).await;
    let page = b.get("/console/team").await;
    assert_eq!(page.status, 200, "{}", page.html);
    assert_eq!(page.text("h1"), "Team");
    assert!(page.texts("nav a").contains(&"Team".to_owned()));
    assert_eq!(page.texts("#f-role option"), vec!["admin", "finance", "viewer"], "the roles of a merchant");
    let me = row_of(&page, &admin.email);
    assert_eq!((me[2].as_str(), me[3].as_str()), ("admin", "On"), "{me:?}");
    assert!(me[4].starts_with("Joined "), "{me:?}");
    assert_eq!(me[5], "You", "no Change role or Remove for oneself");

    // A refused invitation keeps its values, each error beside its field.
    let refused = b.submit("/console/team", "/console/team/invite", &[("email", "not an email"), ("role", "operator")]).await;
    assert_eq!(refused.status, 422, "{}", refused.html);
    assert!(refused.field_error("email").is_some());
    assert!(refused.field_error("role").unwrap().contains("admin, finance, viewer"));
    assert_eq!(refused.value_of("email").as_deref(), Some("not an email"));

    let email = format!("{}@example.com", uuid::Uuid::new_v4().simple());
    let sent = b.submit("/console/team", "/console/team/invite", &[("email", &email), ("role", "finance")]).await;
    assert_eq!(sent.status, 200, "{}", sent.html);
    let link = sent.text("[aria-labelledby=invite-link-label]");
    let prefix = format!("{}/console/invite/", app.base);
    assert!(link.starts_with(&prefix), "the full URL: {link}");
    let invited = row_of(&sent, &email);
    assert_eq!(invited[2], "finance");
    assert!(invited[4].starts_with("Invited "), "{invited:?}");
    assert!(!b.get("/console/team").await.html.contains(&link), "the link is shown once");
    let taken = b.submit("/console/team", "/console/team/invite", &[("email", &email.to_uppercase()), ("role", "viewer")]).await;
    assert!(taken.field_error("email").unwrap().contains("already"), "{:?}", taken.field_error("email"));

    // The link, opened in another browser: the person joins (and enrols: finance moves money).
    let mut newcomer = Browser::new(app);
    let path = &link[app.base.len()..];
    let form = newcomer.get(path).await;
    assert_eq!(form.status, 200);
    assert!(form.html.contains("finance"));
    let pw = "a long enough passphrase";
    let joined = newcomer.post(path, &[("name", "Baraka"), ("new_password", pw), ("confirm_password", pw)]).await;
    assert_eq!((joined.status, joined.location.as_deref()), (303, Some("/console/enrol")), "{}", joined.html);
    let row = row_of(&b.get("/console/team").await, &email);
    assert_eq!(row[0], "Baraka");
    assert!(row[4].starts_with("Joined "));
    assert_eq!(row[3], "Off", "not enrolled yet");
}

async fn a_role_change_needs_a_fresh_code_and_ends_the_persons_sessions(db: Db) {
    // Wrong codes count as failed sign-ins: a server of the test's own.
    let app = TestApp::spawn(db).await;
    let (m, mut b, admin) = new_admin(&app).await;
    let (mut viewer_b, viewer) = join(&app, &m.org_id, "viewer").await;
    let page = b.get("/console/team").await;
    let id = id_of(&page, &viewer.email);
    let action = format!("/console/team/{id}/role");
    for code in ["000000", admin.enrolled_with.as_str(), ""] {
        let refused = b.submit("/console/team", &action, &[("role", "finance"), ("code", code)]).await;
        assert_eq!(refused.status, 422, "{code:?}: {}", refused.html);
        assert!(!refused.texts(&format!("#f-code-{id}-error")).is_empty(), "beside the row's Authentication code");
        assert_eq!(refused.attrs(&format!("#f-role-{id} option[selected]"), "value"), vec!["finance"], "the choice is kept");
        assert_eq!(row_of(&refused, &viewer.email)[2], "viewer", "unchanged");
    }
    assert_eq!(viewer_b.get("/console/").await.status, 200, "their session lives");
    let bad_role = b.submit("/console/team", &action, &[("role", "checker"), ("code", &admin.recovery[0])]).await;
    assert_eq!(bad_role.status, 422);
    assert!(!bad_role.texts(&format!("#f-role-{id}-error")).is_empty());

    let done = b.submit("/console/team", &action, &[("role", "finance"), ("code", &admin.recovery[0])]).await;
    assert_eq!((done.status, done.location.as_deref()), (303, Some("/console/team?done=role")), "{}", done.html);
    let page = b.follow(&done).await;
    assert_eq!(row_of(&page, &viewer.email)[2], "finance");
    let ended = viewer_b.get("/console/").await;
    assert_eq!(ended.status, 303);
    assert!(ended.location.unwrap().starts_with("/console/login"), "their session ended");
    // Signed in again, the new role must enrol first (finance moves money).
    let mut again = Browser::new(&app);
    assert_eq!(sign_in(&mut again, &viewer.email, &viewer.password).await.status, 303);
    assert_eq!(again.get("/console/").await.location.as_deref(), Some("/console/enrol"));

    // One's own role: no form for it, and refused by hand.
    let me = id_of_self(&app, &admin.email).await;
    assert!(page.attrs(&format!("form[action='/console/team/{me}/role']"), "action").is_empty());
    let own = b.submit("/console/team", &format!("/console/team/{me}/role"), &[("role", "viewer"), ("code", &admin.recovery[1])]).await;
    assert_eq!(own.status, 409, "{}", own.html);
}

async fn id_of_self(app: &TestApp, email: &str) -> String {
    let (p, email) = (app.platform.clone(), email.to_owned());
    tokio::task::spawn_blocking(move || {
        let key = malipo_auth::User::email_key(&email);
        malipo_service::read(p.store(), |tx| Ok(tx.user_by_email(&key)?)).unwrap().unwrap().id.to_string()
    })
    .await
    .unwrap()
}

async fn a_removed_person_signs_in_no_more(db: Db) {
    // A refused sign-in counts against 127.0.0.1: a server of the test's own.
    let app = TestApp::spawn(db).await;
    let (m, mut b, admin) = new_admin(&app).await;
    let (mut gone_b, gone) = join(&app, &m.org_id, "viewer").await;
    let page = b.get("/console/team").await;
    let id = id_of(&page, &gone.email);
    let done = b.submit("/console/team", &format!("/console/team/{id}/remove"), &[]).await;
    assert_eq!((done.status, done.location.as_deref()), (303, Some("/console/team?done=removed")));
    let page = b.follow(&done).await;
    assert!(!page.html.contains(&gone.email), "no longer listed");
    assert!(page.status_message().unwrap().contains("removed"));
    assert_eq!(gone_b.get("/console/").await.status, 303, "their session ended");
    assert_eq!(sign_in(&mut Browser::new(&app), &gone.email, &gone.password).await.status, 401, "they sign in no more");
    // Removing them again, or oneself: refused.
    assert_eq!(b.submit("/console/team", &format!("/console/team/{id}/remove"), &[]).await.status, 404);
    let me = id_of_self(&app, &admin.email).await;
    assert_eq!(b.submit("/console/team", &format!("/console/team/{me}/remove"), &[]).await.status, 409);
    assert_eq!(b.get("/console/team").await.status, 200, "still an admin");
}

async fn requiring_two_factor_sends_a_viewer_to_enrolment_at_their_next_request(db: Db) {
    let app = TestApp::shared(db);
    let (m, mut b, _) = new_admin(app).await;
    let (mut viewer_b, _) = join(app, &m.org_id, "viewer").await;
    assert_eq!(viewer_b.get("/console/").await.status, 200);
    let page = b.get("/console/team").await;
    assert_eq!(page.attrs("#f-require-two-factor", "checked").len(), 0, "off by default");
    assert_eq!(page.texts("label[for=f-require-two-factor]"), vec!["Require two-factor for everyone"]);
    let done = b.submit("/console/team", "/console/team/two-factor", &[("require_two_factor", "on")]).await;
    assert_eq!((done.status, done.location.as_deref()), (303, Some("/console/team?done=two-factor-on")));
    let page = b.follow(&done).await;
    assert_eq!(page.attrs("#f-require-two-factor", "checked").len(), 1, "shown on");
    let next = viewer_b.get("/console/").await;
    assert_eq!((next.status, next.location.as_deref()), (303, Some("/console/enrol")), "the viewer enrols first");
    // Turned off again (the box unticked), the viewer goes on without.
    let off = b.submit("/console/team", "/console/team/two-factor", &[]).await;
    assert_eq!(off.location.as_deref(), Some("/console/team?done=two-factor-off"));
    assert_eq!(viewer_b.get("/console/").await.status, 200);
}

async fn finance_and_viewers_may_not_use_team(db: Db) {
    let app = TestApp::shared(db);
    let (m, mut admin_b, _) = new_admin(app).await;
    let (_, target) = join(app, &m.org_id, "viewer").await;
    let id = id_of(&admin_b.get("/console/team").await, &target.email);
    for role in ["finance", "viewer"] {
        let (mut b, someone) = join(app, &m.org_id, role).await;
        let home = b.get("/console/").await;
        assert!(!home.texts("nav a").contains(&"Team".to_owned()), "{role} sees no Team link");
        assert_eq!(b.get("/console/team").await.status, 403, "{role}");
        let csrf = home.csrf();
        let code = someone.recovery.first().cloned().unwrap_or_default();
        let email = format!("{}@example.com", uuid::Uuid::new_v4().simple());
        let posts: Vec<(String, Vec<(&str, &str)>)> = vec![
            ("/console/team/invite".into(), vec![("csrf_token", &csrf), ("email", &email), ("role", "admin")]),
            (format!("/console/team/{id}/role"), vec![("csrf_token", &csrf), ("role", "admin"), ("code", &code)]),
            (format!("/console/team/{id}/remove"), vec![("csrf_token", &csrf)]),
            ("/console/team/two-factor".into(), vec![("csrf_token", &csrf), ("require_two_factor", "on")]),
        ];
        for (path, fields) in &posts {
            let r = b.post(path, fields).await;
            assert_eq!(r.status, 403, "{role} POST {path}");
        }
        assert!(!admin_b.get("/console/team").await.html.contains(&email), "nobody invited");
    }
    let page = admin_b.get("/console/team").await;
    assert_eq!(row_of(&page, &target.email)[2], "viewer", "unchanged, not removed");
    assert_eq!(page.attrs("#f-require-two-factor", "checked").len(), 0);
}

async fn names_are_shown_as_text_and_a_direction_override_is_refused(db: Db) {
    let app = TestApp::shared(db);
    let (m, mut b, _) = new_admin(app).await;
    let (email, link) = super::invite(app, &m.org_id, "viewer").await;
    let mut newcomer = Browser::new(app);
    let pw = "a long enough passphrase";
    // A right-to-left override cannot be part of a name: refused beside "Name".
    let rlo = newcomer.post(&link, &[("name", "Amina \u{202E}gnp.exe"), ("new_password", pw), ("confirm_password", pw)]).await;
    assert_eq!(rlo.status, 422);
    assert!(rlo.field_error("name").unwrap().contains("U+202E"), "{:?}", rlo.field_error("name"));
    // Markup can: it is shown as text.
    let name = "<script>alert(1)</script><b>Amina</b> & \"Co\"";
    let joined = newcomer.post(&link, &[("name", name), ("new_password", pw), ("confirm_password", pw)]).await;
    assert_eq!(joined.status, 303, "{}", joined.html);
    let page = b.get("/console/team").await;
    assert_eq!(row_of(&page, &email)[0], name, "the name, as typed, as text");
    assert!(page.html.contains("&lt;script&gt;alert(1)&lt;/script&gt;&lt;b&gt;Amina&lt;/b&gt; &amp; &quot;Co&quot;"));
    assert!(!page.html.contains("<script>alert"));
    // The invitation form refuses one in the email too.
    let refused = b.submit("/console/team", "/console/team/invite", &[("email", "amina\u{202E}@example.com"), ("role", "viewer")]).await;
    assert_eq!(refused.status, 422);
    assert_eq!(refused.value_of("email").as_deref(), Some("amina[U+202E]@example.com"), "kept, the override shown visibly");
    assert!(refused.field_error("email").is_some());
}

async fn team_forms_from_another_origin_or_without_their_token_do_nothing(db: Db) {
    let app = TestApp::shared(db);
    let (m, mut b, _) = new_admin(app).await;
    let (_, target) = join(app, &m.org_id, "viewer").await;
    let page = b.get("/console/team").await;
    let (csrf, id) = (page.csrf(), id_of(&page, &target.email));
    let email = format!("{}@example.com", uuid::Uuid::new_v4().simple());
    b.origin = Some("https://evil.example".into());
    assert_eq!(b.post("/console/team/invite", &[("csrf_token", &csrf), ("email", &email), ("role", "admin")]).await.status, 403);
    assert_eq!(b.post(&format!("/console/team/{id}/remove"), &[("csrf_token", &csrf)]).await.status, 403);
    b.origin = Some(app.base.clone());
    assert_eq!(b.post("/console/team/invite", &[("email", &email), ("role", "admin")]).await.status, 403);
    assert_eq!(b.post(&format!("/console/team/{id}/remove"), &[("csrf_token", "nope")]).await.status, 403);
    assert_eq!(b.post("/console/team/two-factor", &[("require_two_factor", "on")]).await.status, 403);
    let page = b.get("/console/team").await;
    assert!(!page.html.contains(&email), "nobody invited");
    assert!(page.html.contains(&target.email), "nobody removed");
    assert_eq!(page.attrs("#f-require-two-factor", "checked").len(), 0);
}

/// Inviting an address that someone of another organisation uses answers exactly as a free
/// address does (nothing tells an admin who uses the platform); its link can never be accepted.
/// An address with markup is not an address; a guessable password is refused beside its field.
async fn an_email_used_elsewhere_is_invited_as_a_free_one_and_weak_passwords_and_markup_are_refused(db: Db) {
    let app = TestApp::shared(db);
    let elsewhere = app.merchant().await;
    let (_, someone) = join(app, &elsewhere.org_id, "viewer").await;
    let (_, mut b, _) = new_admin(app).await;
    let free = format!("{}@example.com", uuid::Uuid::new_v4().simple());
    let mut answers = Vec::new();
    for email in [free.as_str(), someone.email.as_str()] {
        let sent = b.submit("/console/team", "/console/team/invite", &[("email", email), ("role", "viewer")]).await;
        assert_eq!(sent.status, 200, "{email}: {}", sent.html);
        let link = sent.text("[aria-labelledby=invite-link-label]");
        let row = row_of(&sent, email);
        answers.push((sent.status_message(), sent.field_error("email"), row[2].clone(), row[4].starts_with("Invited "), link));
    }
    let (a, b2) = (&answers[0], &answers[1]);
    assert_eq!((&a.0, &a.1, &a.2, a.3), (&b2.0, &b2.1, &b2.2, b2.3), "the same answer for a used address");
    // The used address's link cannot be accepted; the free one's can.
    let path = |link: &str| link[app.base.len()..].to_owned();
    let mut visitor = Browser::new(app);
    let pw = "a long enough passphrase";
    let used = visitor.post(&path(&b2.4), &[("name", "X"), ("new_password", pw), ("confirm_password", pw)]).await;
    assert_eq!(used.status, 404, "{}", used.html);
    assert_eq!(sign_in(&mut Browser::new(app), &someone.email, &someone.password).await.status, 303, "its person is untouched");

    // A guessable password, beside its field; then a good one joins.
    let free_path = path(&a.4);
    for weak in ["            ", "abcabcabcabc", "qwertyuiop12"] {
        let refused = visitor.post(&free_path, &[("name", "Wanjiru"), ("new_password", weak), ("confirm_password", weak)]).await;
        assert_eq!(refused.status, 422, "{weak:?}: {}", refused.html);
        assert!(refused.field_error("new_password").is_some(), "{weak:?}: {}", refused.html);
    }
    let joined = visitor.post(&free_path, &[("name", "Wanjiru"), ("new_password", pw), ("confirm_password", pw)]).await;
    assert_eq!(joined.status, 303, "{}", joined.html);

    // Markup is not an address.
    for bad in ["x\"><script>alert(1)</script>@example.com", "\"<b>\"@example.com", "Amina <a@example.com>"] {
        let refused = b.submit("/console/team", "/console/team/invite", &[("email", bad), ("role", "viewer")]).await;
        assert_eq!(refused.status, 422, "{bad}");
        assert!(refused.field_error("email").is_some(), "{bad}");
    }
}
