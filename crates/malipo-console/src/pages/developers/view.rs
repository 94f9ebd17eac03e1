//! The Developers page as shown: the organisation's API keys (both modes) and the session mode's
//! webhook endpoints, with their forms; a secret just made is shown once, in the answer to the
//! post that made it (never stored, never in a URL).

use std::collections::HashMap;

use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use askama::Template;
use malipo_auth::{Credential, Permission};
use malipo_core::Mode;
use malipo_webhooks::{Endpoint, EventFilter, EVENT_KINDS};
use serde::Deserialize;

use crate::chrome::{page_response, Chrome, Notice};
use crate::pages::form::FieldErrors;
use crate::pages::local_time::LocalTime;
use crate::session::{console_of, Person};
use crate::{idem, run, ConsoleError};

/// `/console/developers`.
pub const PATH: &str = "/console/developers";

/// A key pair as listed.
pub struct KeyRow {
    /// `ck_test_…`.
    pub client_id: String,
    /// `Test` or `Live`.
    pub mode: &'static str,
    /// Space-separated scopes.
    pub scopes: String,
    /// When created, local time.
    pub created: String,
    /// Who created it: a person, or the operator who issued it.
    pub created_by: String,
    /// When it last got a token, or "Never".
    pub last_used: String,
    /// Whether it still works.
    pub active: bool,
    /// "Active" or "Revoked 2026-…".
    pub state: String,
}

/// A webhook endpoint as listed.
pub struct EndpointRow {
    /// `we_…`.
    pub id: String,
    /// Where deliveries go.
    pub url: String,
    /// Its description, if any.
    pub description: String,
    /// The event kinds ("All events" for `*`).
    pub events: String,
    /// Whether deliveries are made.
    pub enabled: bool,
    /// "Yes", or "No (why)".
    pub enabled_text: String,
    /// When registered, local time.
    pub created: String,
    /// The one-time key of its "Rotate secret" form.
    pub rotate_key: String,
    /// The one-time key of its "Disable" form.
    pub disable_key: String,
}

/// A key pair just created: its secret, shown this once.
pub struct NewKey {
    /// `ck_…`.
    pub client_id: String,
    /// `cs_…`.
    pub client_secret: String,
    /// `test` or `live`.
    pub mode: Mode,
}

/// A signing secret just made (an endpoint added, or its secret rotated), shown this once.
pub struct NewSecret {
    /// The endpoint's URL.
    pub url: String,
    /// `whsec_…`.
    pub secret: String,
    /// Whether it replaced an earlier secret (which keeps signing for 24 hours).
    pub rotated: bool,
}

/// The callback secret, shown in the answer of the post that asked.
pub struct CallbackShown {
    /// `whsec_…`.
    pub secret: String,
    /// Whether it was just rotated.
    pub rotated: bool,
}

/// One checkbox of the "Events" field.
pub struct KindBox {
    /// `charge.completed`, or `*`.
    pub value: &'static str,
    /// Its label.
    pub label: &'static str,
    /// Its element id.
    pub id: String,
    /// Whether ticked.
    pub checked: bool,
}

/// The forms' values and errors (a refused form is shown again with them).
#[derive(Default)]
pub struct Forms {
    /// "Create key pair": the chosen mode.
    pub key_mode: String,
    /// Its errors (`mode`, `code`).
    pub key_errors: FieldErrors,
    /// "Add endpoint": the URL typed.
    pub url: String,
    /// The kinds ticked.
    pub events: Vec<String>,
    /// The description typed.
    pub description: String,
    /// The form's one-time key (kept while it is refused, so a resubmission acts once).
    pub endpoint_key: String,
    /// Its errors (`url`, `events`, `description`).
    pub endpoint_errors: FieldErrors,
    /// The key pair or endpoint whose row form was refused ("Revoke", "Rotate secret").
    pub row: String,
    /// That form's errors (`code`).
    pub row_errors: FieldErrors,
}

/// What the page shows besides the lists.
#[derive(Default)]
pub struct Shown {
    /// A message about the last action.
    pub notice: Option<Notice>,
    /// A key pair just created.
    pub new_key: Option<NewKey>,
    /// A signing secret just made.
    pub new_secret: Option<NewSecret>,
    /// The callback secret, asked for or just rotated.
    pub callback: Option<CallbackShown>,
}

#[derive(Template)]
#[template(path = "developers/index.html")]
struct DevelopersPage {
    chrome: Chrome,
    may_keys: bool,
    may_webhooks: bool,
    keys: Vec<KeyRow>,
    endpoints: Vec<EndpointRow>,
    kinds: Vec<KindBox>,
    shown: Shown,
    forms: Forms,
    test_selected: bool,
    callback_key: String,
}

/// Refuses unless `who` may manage API keys or webhook endpoints.
///
/// # Errors
/// [`ConsoleError::Forbidden`].
pub fn require_developer(who: &Person) -> Result<(), ConsoleError> {
    who.require(Permission::ManageKeys).or_else(|_| who.require(Permission::ManageWebhooks))
}

fn mode_name(mode: Mode) -> &'static str {
    match mode {
        Mode::Test => "Test",
        Mode::Live => "Live",
    }
}

fn events_text(filter: &EventFilter) -> String {
    match filter {
        EventFilter::All => "All events".to_owned(),
        EventFilter::Kinds(k) => k.join(", "),
    }
}

fn key_row(c: &Credential, names: &HashMap<String, String>, clock: &LocalTime) -> KeyRow {
    let created_by = match &c.created_by {
        Some(id) => names.get(id.as_str()).cloned().unwrap_or_else(|| id.to_string()),
        None => "Malipo operator".to_owned(),
    };
    KeyRow {
        client_id: c.client_id.clone(),
        mode: mode_name(c.mode),
        scopes: c.scopes.to_string(),
        created: clock.time(c.created_at),
        created_by,
        last_used: c.last_used_at.map_or_else(|| "Never".to_owned(), |t| clock.time(t)),
        active: c.revoked_at.is_none(),
        state: c.revoked_at.map_or_else(|| "Active".to_owned(), |t| format!("Revoked {}", clock.time(t))),
    }
}

fn endpoint_row(e: &Endpoint, clock: &LocalTime) -> EndpointRow {
    EndpointRow {
        id: e.id.to_string(),
        url: e.url.clone(),
        description: e.description.clone().unwrap_or_default(),
        events: events_text(&e.events),
        enabled: e.enabled,
        enabled_text: if e.enabled { "Yes".to_owned() } else { format!("No ({})", e.disabled_reason.as_deref().unwrap_or("disabled")) },
        created: clock.time(e.created_at),
        rotate_key: idem::new_key(),
        disable_key: idem::new_key(),
    }
}

/// The checkboxes of the "Events" field, `ticked` ticked.
pub fn kind_boxes(ticked: &[String]) -> Vec<KindBox> {
    let is = |v: &str| ticked.iter().any(|t| t == v);
    std::iter::once(KindBox { value: "*", label: "All events", id: "f-events-all".into(), checked: is("*") })
        .chain(EVENT_KINDS.iter().map(|k| KindBox {
            value: k,
            label: k,
            id: format!("f-events-{}", k.replace(['.', '_'], "-")),
            checked: is(k),
        }))
        .collect()
}

/// The page for `who`, answered with `status`.
///
/// # Errors
/// The use cases'.
pub async fn render(
    req: &HttpRequest,
    who: &Person,
    status: StatusCode,
    shown: Shown,
    mut forms: Forms,
) -> Result<HttpResponse, ConsoleError> {
    require_developer(who)?;
    let console = console_of(req)?;
    let clock = LocalTime::of(&console, who);
    let (may_keys, may_webhooks) = (who.may(Permission::ManageKeys), who.may(Permission::ManageWebhooks));
    let w = who.0.clone();
    let (credentials, team, endpoints) = run(&console, move |p| {
        let credentials = if may_keys { p.people().keys(&w)? } else { Vec::new() };
        // The names of the people who created key pairs, where the role may see the team.
        let team = if may_keys && w.may(Permission::ManageTeam) { p.people().team(&w)? } else { Vec::new() };
        let endpoints = if may_webhooks { p.webhooks().endpoints(&w.principal())? } else { Vec::new() };
        Ok((credentials, team, endpoints))
    })
    .await?;
    let names: HashMap<String, String> = team
        .into_iter()
        .map(|u| (u.id.to_string(), if u.name.is_empty() { u.email.clone() } else { format!("{} ({})", u.name, u.email) }))
        .collect();
    if forms.key_mode.is_empty() {
        forms.key_mode = who.mode().as_str().to_owned();
    }
    if forms.endpoint_key.is_empty() {
        forms.endpoint_key = idem::new_key();
    }
    let chrome = Chrome::new(who, "Developers", "Developers", PATH).with_notice(shown.notice.clone());
    let page = DevelopersPage {
        chrome,
        may_keys,
        may_webhooks,
        keys: credentials.iter().map(|c| key_row(c, &names, &clock)).collect(),
        endpoints: endpoints.iter().map(|e| endpoint_row(e, &clock)).collect(),
        kinds: kind_boxes(&forms.events),
        test_selected: forms.key_mode != "live",
        callback_key: idem::new_key(),
        shown,
        forms,
    };
    Ok(page_response(status, &page))
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct DoneQuery {
    #[serde(default)]
    done: Option<String>,
}

/// `GET /console/developers` (`?done=` names the action just done).
pub(super) async fn developers_page(req: HttpRequest, who: Person, query: web::Query<DoneQuery>) -> Result<HttpResponse, ConsoleError> {
    let notice = match query.done.as_deref() {
        Some("key-revoked") => Notice::done("The key pair is revoked: its tokens no longer work."),
        Some("endpoint-disabled") => Notice::done("The endpoint is disabled: no more deliveries go to it."),
        Some("endpoint-added") => Notice::done("The endpoint was added. Its signing secret was shown when it was added."),
        Some("secret-rotated") => Notice::done("The secret was rotated. The new secret was shown when it was rotated."),
        Some("callback-rotated") => Notice::done("The callback secret was rotated. The new secret was shown when it was rotated."),
        _ => None,
    };
    render(&req, &who, StatusCode::OK, Shown { notice, ..Shown::default() }, Forms::default()).await
}
