//! The console over HTTP, as a browser without script talks to it: forms posted, cookies kept,
//! redirects looked at. (The real-browser journeys are in `tests/browser/`.)

mod agent;
mod audit;
mod auth;
mod browser;
mod charges;
mod corporate;
mod developers;
mod home;
mod operator;
mod organisations;
mod payment_requests;
mod payouts;
mod reconciliation;
mod roles;
mod team;
mod transactions;

use std::time::Duration;

use malipo_auth::TotpSecret;
use malipo_core::{OrgId, Timestamp};
use scraper::{Html, Selector};

use crate::harness::TestApp;

/// One page as answered.
#[derive(Debug)]
pub struct Page {
    pub status: u16,
    pub location: Option<String>,
    pub html: String,
    pub headers: reqwest::header::HeaderMap,
}

impl Page {
    fn doc(&self) -> Html {
        Html::parse_document(&self.html)
    }

    /// The text of every element matching `css`, trimmed.
    pub fn texts(&self, css: &str) -> Vec<String> {
        let sel = Selector::parse(css).unwrap();
        self.doc().select(&sel).map(|e| e.text().collect::<String>().trim().to_owned()).collect()
    }

    /// The text of the one element matching `css`.
    pub fn text(&self, css: &str) -> String {
        let all = self.texts(css);
        assert_eq!(all.len(), 1, "expected one `{css}` in:\n{}", self.html);
        all[0].clone()
    }

    /// The value of attribute `attr` of every element matching `css`.
    pub fn attrs(&self, css: &str, attr: &str) -> Vec<String> {
        let sel = Selector::parse(css).unwrap();
        self.doc().select(&sel).filter_map(|e| e.value().attr(attr).map(str::to_owned)).collect()
    }

    /// The form's CSRF token (the first on the page).
    pub fn csrf(&self) -> String {
        self.attrs("input[name=csrf_token]", "value").into_iter().next().unwrap_or_else(|| panic!("no CSRF token in:\n{}", self.html))
    }

    /// The message of the `role="alert"` region, if any.
    pub fn alert(&self) -> Option<String> {
        self.texts("[role=alert]").into_iter().next()
    }

    /// The message of the `role="status"` region, if any.
    pub fn status_message(&self) -> Option<String> {
        self.texts("[role=status]").into_iter().next()
    }

    /// The error shown beside field `name`.
    pub fn field_error(&self, name: &str) -> Option<String> {
        self.texts(&format!("#f-{name}-error")).into_iter().next()
    }

    /// The value an input named `name` shows.
    pub fn value_of(&self, name: &str) -> Option<String> {
        self.attrs(&format!("input[name={name}]"), "value").into_iter().next()
    }
}

/// A browser without script: one cookie jar (the session cookie and the device cookie),
/// redirects not followed, and the console's own `Origin` on every post.
pub struct Browser {
    pub base: String,
    http: reqwest::Client,
    pub cookie: Option<String>,
    /// The device cookie a sign-in gave this browser.
    pub device: Option<String>,
    pub origin: Option<String>,
    /// Headers sent with every request (a proxy's, or forged ones).
    pub headers: Vec<(&'static str, String)>,
}

impl Browser {
    pub fn new(app: &TestApp) -> Browser {
        Browser::at(app, "127.0.0.1")
    }

    /// A browser on another host: its connections come from `address` (any of 127.0.0.0/8,
    /// which all reach the server's loopback address), so the server sees it as another source.
    pub fn at(app: &TestApp, address: &str) -> Browser {
        let local: std::net::IpAddr = address.parse().unwrap();
        let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).local_address(local).build().unwrap();
        Browser { base: app.base.clone(), http, cookie: None, device: None, origin: Some(app.base.clone()), headers: Vec::new() }
    }

    async fn answer(&mut self, r: reqwest::Response) -> Page {
        let status = r.status().as_u16();
        let headers = r.headers().clone();
        for c in headers.get_all("set-cookie") {
            let c = c.to_str().unwrap();
            if let Some(rest) = c.strip_prefix("malipo_session=") {
                let value = rest.split(';').next().unwrap();
                self.cookie = if value.is_empty() || c.contains("Max-Age=0") { None } else { Some(value.to_owned()) };
            }
            if let Some(rest) = c.strip_prefix("malipo_device=") {
                self.device = Some(rest.split(';').next().unwrap().to_owned());
            }
        }
        let location = headers.get("location").map(|l| l.to_str().unwrap().to_owned());
        Page { status, location, html: r.text().await.unwrap(), headers }
    }

    fn with_cookie(&self, r: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        let jar: Vec<String> = [("malipo_session", &self.cookie), ("malipo_device", &self.device)]
            .into_iter()
            .filter_map(|(name, value)| value.as_ref().map(|v| format!("{name}={v}")))
            .collect();
        let r = self.headers.iter().fold(r, |r, (name, value)| r.header(*name, value));
        if jar.is_empty() {
            r
        } else {
            r.header("cookie", jar.join("; "))
        }
    }

    pub async fn get(&mut self, path: &str) -> Page {
        let r = self.with_cookie(self.http.get(format!("{}{path}", self.base))).send().await.unwrap();
        self.answer(r).await
    }

    pub async fn post(&mut self, path: &str, fields: &[(&str, &str)]) -> Page {
        let mut r = self.with_cookie(self.http.post(format!("{}{path}", self.base))).form(fields);
        if let Some(o) = &self.origin {
            r = r.header("origin", o);
        }
        let r = r.send().await.unwrap();
        self.answer(r).await
    }

    /// Posts a form of the page at `form_page` (its CSRF token added).
    pub async fn submit(&mut self, form_page: &str, action: &str, fields: &[(&str, &str)]) -> Page {
        let csrf = self.get(form_page).await.csrf();
        let mut all: Vec<(&str, &str)> = vec![("csrf_token", &csrf)];
        all.extend_from_slice(fields);
        self.post(action, &all).await
    }

    /// Follows a redirect answer.
    pub async fn follow(&mut self, page: &Page) -> Page {
        let to = page.location.clone().unwrap_or_else(|| panic!("not a redirect: {} {}", page.status, page.html));
        self.get(&to).await
    }
}

/// A person as a test knows them.
#[derive(Clone, Debug)]
pub struct Someone {
    pub email: String,
    pub password: String,
    pub totp: Option<TotpSecret>,
    pub recovery: Vec<String>,
    /// The code used at enrolment (a replay of it must be refused; `code(0)` may be a fresh
    /// code by the time a test replays, once a 30-second step has passed).
    pub enrolled_with: String,
}

impl Someone {
    /// The code their app shows `steps` steps from now.
    pub fn code(&self, steps: i64) -> String {
        let now = Timestamp::now().as_micros() / 1_000_000;
        self.totp.as_ref().unwrap().code_at(now + steps * 30).unwrap()
    }
}

/// Invites someone into `org_id` as `role` (an operator's command) and returns the link's path.
pub async fn invite(app: &TestApp, org_id: &str, role: &str) -> (String, String) {
    let email = format!("{}@example.com", uuid::Uuid::new_v4().simple());
    let p = app.platform.clone();
    let (org, e, r) = (OrgId::parse(org_id).unwrap(), email.clone(), role.to_owned());
    let invited = tokio::task::spawn_blocking(move || {
        p.people().invite(malipo_service::Inviter::Operator, &org, &malipo_service::Invitee { email: e, role: r, name: None })
    })
    .await
    .unwrap()
    .unwrap();
    (email, format!("/console/invite/{}", invited.token))
}

/// A person of `org_id` with `role`, signed in (having accepted the invitation and, where the
/// role requires it, turned on the second factor with the code of the current step).
pub async fn join(app: &TestApp, org_id: &str, role: &str) -> (Browser, Someone) {
    let (email, link) = invite(app, org_id, role).await;
    let mut b = Browser::new(app);
    let password = format!("pw-{}", uuid::Uuid::new_v4().simple());
    let page = b.post(&link, &[("name", "Amina Njeri"), ("new_password", &password), ("confirm_password", &password)]).await;
    assert_eq!(page.status, 303, "{}", page.html);
    let mut someone = Someone { email, password, totp: None, recovery: Vec::new(), enrolled_with: String::new() };
    if page.location.as_deref() == Some("/console/enrol") {
        let enrol = b.follow(&page).await;
        let key = enrol.text("#setup-key");
        let secret = TotpSecret::from_setup_key(&key).unwrap();
        someone.totp = Some(secret);
        someone.enrolled_with = someone.code(0);
        let done = b.post("/console/enrol", &[("csrf_token", &enrol.csrf()), ("code", &someone.enrolled_with)]).await;
        assert_eq!(done.status, 200, "{}", done.html);
        someone.recovery = done.texts("ul.codes li");
        assert_eq!(someone.recovery.len(), 10);
    }
    (b, someone)
}

/// Waits until `check` holds (polling with a deadline).
pub async fn eventually<F, Fut>(timeout: Duration, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let started = std::time::Instant::now();
    while !check().await {
        assert!(started.elapsed() < timeout, "not within {timeout:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
