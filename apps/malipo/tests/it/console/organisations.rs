//! The operator's Organisations in the console (contract section 4, Operator): list and create,
//! issue credentials (a fresh authentication code; the secret shown once), fund a float or payout
//! account once per form, invite a user (the one-time link shown once); the use cases of the
//! operator's commands, audited; who may.

use super::operator::{audited_in, operator_person};
use super::payment_requests::post_keyed;
use super::{join, Browser, Page};
use crate::harness::{ok, Creds, Db, TestApp};
use crate::on_both;

on_both!(
    an_operator_creates_an_agent_issues_a_live_credential_funds_its_float_and_invites_it,
    a_fund_submitted_twice_funds_once_and_refusals_do_nothing,
    only_operators_reach_organisations,
);

/// The text of the element labelled by `id`.
fn labelled(page: &Page, id: &str) -> String {
    page.text(&format!("[aria-labelledby={id}]"))
}

/// Creates an organisation from the console; the page that shows its credential.
async fn create(b: &mut Browser, name: &str, kind: &str) -> Page {
    let page = b.submit("/console/organisations", "/console/organisations", &[("name", name), ("kind", kind), ("country", "KE")]).await;
    assert_eq!(page.status, 200, "{}", page.html);
    page
}

async fn an_operator_creates_an_agent_issues_a_live_credential_funds_its_float_and_invites_it(db: Db) {
    let app = TestApp::shared(db);
    let (op, mut b, someone) = operator_person(app).await;
    let list = b.get("/console/organisations").await;
    assert_eq!(list.text("h1"), "Organisations");
    for label in ["Name", "Kind", "Country"] {
        assert!(list.texts("label").contains(&label.to_owned()), "{label}");
    }
    let name = format!("Kiosk <b>{}</b>", uuid::Uuid::new_v4().simple());
    let created = create(&mut b, &name, "agent").await;
    assert!(!created.html.contains("<b>"), "the name escaped");
    let org_id = labelled(&created, "created-org-label");
    let test = Creds {
        org_id: org_id.clone(),
        client_id: labelled(&created, "created-client-id-label"),
        client_secret: labelled(&created, "created-client-secret-label"),
    };
    let test_token = app.token(&test).await;
    assert!(b.get("/console/organisations").await.html.contains(&org_id), "listed");

    let page_path = format!("/console/organisations/{org_id}");
    let page = b.get(&page_path).await;
    assert_eq!(page.status, 200, "{}", page.html);
    let issued = b.submit(&page_path, &format!("{page_path}/credentials"), &[("mode", "live"), ("code", &someone.recovery[0])]).await;
    assert_eq!(issued.status, 200, "{}", issued.html);
    let live = Creds {
        org_id: org_id.clone(),
        client_id: labelled(&issued, "issued-client-id-label"),
        client_secret: labelled(&issued, "issued-client-secret-label"),
    };
    assert!(live.client_id.contains("live"), "{}", live.client_id);
    let live_token = app.token(&live).await;
    assert_eq!(b.get(&page_path).await.texts("[aria-labelledby=issued-client-secret-label]").len(), 0, "shown once");

    let page = b.get(&page_path).await;
    let funded = post_keyed(&mut b, &page, &format!("{page_path}/fund"), &[("mode", "test"), ("amount", "2500")]).await;
    assert_eq!(funded.status, 303, "{}", funded.html);
    assert!(b.follow(&funded).await.status_message().unwrap().contains("funded"));
    assert_eq!(ok(app.get_answer(&test_token, "/agents/float").await, "float").raw("available"), "2500.00");
    assert_eq!(ok(app.get_answer(&live_token, "/agents/float").await, "float").raw("available"), "0.00", "the test float only");

    let page = b.get(&page_path).await;
    assert_eq!(page.texts("#f-role option"), vec!["agent"], "the kind's roles");
    let email = format!("{}@example.com", uuid::Uuid::new_v4().simple());
    let invited = b.submit(&page_path, &format!("{page_path}/invite"), &[("email", &email), ("role", "agent")]).await;
    assert_eq!(invited.status, 200, "{}", invited.html);
    let link = invited.text("#invite-link");
    let path = link.split_once("/console/").map(|(_, p)| format!("/console/{p}")).unwrap();
    let mut agent = Browser::new(app);
    let accepted = agent
        .post(&path, &[("name", "Juma"), ("new_password", "a long passphrase 42"), ("confirm_password", "a long passphrase 42")])
        .await;
    assert_eq!(accepted.status, 303, "{}", accepted.html);

    for (action, object) in [("organisation.created", org_id.clone()), ("credential.issued", live.client_id.clone())] {
        assert_eq!(audited_in(&mut b, &op.org_id, action).await, vec![object], "{action}");
    }
    // The operator's own invitation (by command) and the agent's (by the operator).
    assert_eq!(audited_in(&mut b, &op.org_id, "user.invited").await.len(), 2);
    assert_eq!(audited_in(&mut b, &op.org_id, "account.funded").await.len(), 1);
}

async fn a_fund_submitted_twice_funds_once_and_refusals_do_nothing(db: Db) {
    let app = TestApp::shared(db);
    let (op, mut b, someone) = operator_person(app).await;
    let m = app.merchant().await;
    let token = app.token(&m).await;
    let page_path = format!("/console/organisations/{}", m.org_id);
    let page = b.get(&page_path).await;
    let first = post_keyed(&mut b, &page, &format!("{page_path}/fund"), &[("mode", "test"), ("amount", "1000")]).await;
    let again = post_keyed(&mut b, &page, &format!("{page_path}/fund"), &[("mode", "test"), ("amount", "1000")]).await;
    assert_eq!((first.status, again.status), (303, 303), "{}", again.html);
    let accounts = app.get_json(&token, "/accounts").await;
    assert!(accounts.to_string().contains("1000.00"), "{accounts}");
    assert_eq!(audited_in(&mut b, &op.org_id, "account.funded").await.len(), 1, "funded once");

    let page = b.get(&page_path).await;
    let refused = post_keyed(&mut b, &page, &format!("{page_path}/fund"), &[("mode", "test"), ("amount", "-5")]).await;
    assert_eq!(refused.status, 422, "{}", refused.html);
    assert!(refused.field_error("amount").is_some(), "{}", refused.html);
    assert_eq!(refused.value_of("amount").as_deref(), Some("-5"), "kept");
    let wrong = b.submit(&page_path, &format!("{page_path}/credentials"), &[("mode", "test"), ("code", "000000")]).await;
    assert_eq!(wrong.status, 422, "{}", wrong.html);
    assert!(wrong.field_error("code").is_some());
    assert!(audited_in(&mut b, &op.org_id, "credential.issued").await.is_empty());
    let bad = b.submit(&page_path, &format!("{page_path}/invite"), &[("email", "not-an-email"), ("role", "checker")]).await;
    assert_eq!(bad.status, 422, "{}", bad.html);
    assert!(bad.field_error("email").is_some() && bad.field_error("role").is_some(), "{}", bad.html);
    let nameless =
        b.submit("/console/organisations", "/console/organisations", &[("name", " "), ("kind", "merchant"), ("country", "KE")]).await;
    assert_eq!(nameless.status, 422, "{}", nameless.html);
    assert!(nameless.field_error("name").is_some(), "{}", nameless.html);
    let _ = someone;
}

async fn only_operators_reach_organisations(db: Db) {
    let app = TestApp::shared(db);
    let m = app.merchant().await;
    let (mut admin, _) = join(app, &m.org_id, "admin").await;
    assert!(!admin.get("/console/").await.texts("nav a").contains(&"Organisations".to_owned()));
    assert_eq!(admin.get("/console/organisations").await.status, 403);
    assert_eq!(admin.get(&format!("/console/organisations/{}", m.org_id)).await.status, 403);
    let csrf = admin.get("/console/").await.csrf();
    let key = uuid::Uuid::new_v4().to_string();
    let fund = admin
        .post(
            &format!("/console/organisations/{}/fund", m.org_id),
            &[("csrf_token", &csrf), ("idempotency_key", &key), ("mode", "test"), ("amount", "1")],
        )
        .await;
    assert_eq!(fund.status, 403);
    let create =
        admin.post("/console/organisations", &[("csrf_token", &csrf), ("name", "Mine"), ("kind", "operator"), ("country", "KE")]).await;
    assert_eq!(create.status, 403);
    let token = app.token(&m).await;
    assert!(!app.get_json(&token, "/accounts").await.to_string().contains("\"1.00\""), "nothing funded");
}
