//! What the server writes to its log: one line per request, and never a secret that stands in
//! a path (an invitation link's one-time token, read from the log, would let its reader join
//! first, as any role).

use std::time::Duration;

use crate::cli::{blocking, malipo, org_create, Server, TempDir};

/// Lines the server printed until one contains `needle` (bounded), every one of them.
fn lines_until(server: &mut Server, needle: &str) -> Vec<String> {
    server.wait_for_line(needle);
    server.seen.clone()
}

#[actix_web::test]
async fn an_invitation_opened_and_accepted_leaves_its_token_out_of_the_log() {
    let dir = TempDir::new();
    let url = format!("sqlite://{}", dir.path().join("malipo.db").display());
    malipo(&url, &["migrate"]).await.ok();
    let org = org_create(&url, "merchant").await;
    let org_id = org["organisation_id"].as_str().unwrap().to_owned();
    let invited = malipo(&url, &["user", "invite", "--org", &org_id, "--email", "wanjiru@example.com", "--role", "viewer", "--json"]).await;
    let link = invited.ok().json()["invite_url"].as_str().unwrap().to_owned();
    let token = link.rsplit('/').next().unwrap().to_owned();
    assert!(token.starts_with("mls_") && token.len() > 20, "{link}");

    let (d, u) = (dir.path().to_owned(), url.clone());
    let mut server = blocking(move || Server::start_with(&d, Some(&u), &[("MALIPO_LOG", "info")])).await;
    let base = server.base();
    let origin = base.trim_end_matches("/api/v1").to_owned();
    let path = format!("/console/invite/{token}");
    let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let page = http.get(format!("{origin}{path}")).send().await.unwrap();
    assert_eq!(page.status(), 200, "the invitation opens");
    let pw = "a long enough passphrase";
    let accepted = http
        .post(format!("{origin}{path}"))
        .header("origin", &origin)
        .form(&[("name", "Wanjiru"), ("new_password", pw), ("confirm_password", pw)])
        .send()
        .await
        .unwrap();
    assert_eq!(accepted.status(), 303, "{}", accepted.text().await.unwrap());

    let log = blocking(move || {
        let lines = lines_until(&mut server, "\"method\":\"POST\"");
        let _ = server.terminate(Duration::from_secs(15));
        lines
    })
    .await;
    let requests: Vec<&String> = log.iter().filter(|l| l.contains("/console/invite/")).collect();
    assert_eq!(requests.len(), 2, "one line for the page, one for the form: {log:#?}");
    for line in &requests {
        assert!(line.contains("/console/invite/mls_[redacted]"), "{line}");
    }
    let secret = &token["mls_".len()..];
    assert!(!log.iter().any(|l| l.contains(secret)), "the token is nowhere in the log: {log:#?}");
}
