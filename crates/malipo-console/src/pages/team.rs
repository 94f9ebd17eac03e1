//! Team (console contract sections 2 and 4): the organisation's people; "Invite" ("Email",
//! "Role", "Send invitation") shows the one-time link to send them; per person "Change role"
//! ("Role" and a step-up "Authentication code"; their sessions end) and "Remove" (they sign in no
//! more), never for oneself; and "Require two-factor for everyone". Every action needs
//! `Permission::ManageTeam`; the use cases write the audit log themselves.

use std::net::IpAddr;

use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use askama::Template;
use malipo_auth::{Permission, Role, User};
use malipo_service::{Invited, Invitee, Inviter, ServiceError};
use serde::Deserialize;

use super::form::FieldErrors;
use super::local_time::LocalTime;
use crate::chrome::{page_response, see_other, Chrome, Notice};
use crate::csrf::Posted;
use crate::session::{console_of, Person};
use crate::{csrf_forms, run, Console, ConsoleError};

const PATH: &str = "/console/team";

/// `/console/team…`.
pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/team", web::get().to(team_page))
        .route("/team/invite", web::post().to(invite))
        .route("/team/two-factor", web::post().to(two_factor))
        .route("/team/{user_id}/role", web::post().to(change_role))
        .route("/team/{user_id}/remove", web::post().to(remove));
}

/// One role of a select.
struct RoleOption {
    value: &'static str,
    selected: bool,
}

/// A person as listed.
struct PersonRow {
    id: String,
    name: String,
    email: String,
    role: &'static str,
    two_factor: bool,
    status: String,
    is_self: bool,
    roles: Vec<RoleOption>,
}

/// An invitation just sent: its link, shown once.
struct InvitedView {
    email: String,
    link: String,
    expires: String,
}

/// The forms' values and errors.
#[derive(Default)]
struct Forms {
    email: String,
    role: String,
    invite_errors: FieldErrors,
    row: String,
    row_role: String,
    row_errors: FieldErrors,
}

#[derive(Template)]
#[template(path = "team/index.html")]
struct TeamPage {
    chrome: Chrome,
    people: Vec<PersonRow>,
    roles: Vec<RoleOption>,
    invited: Option<InvitedView>,
    forms: Forms,
    require_two_factor: bool,
}

fn options(roles: &[Role], chosen: &str) -> Vec<RoleOption> {
    roles.iter().map(|r| RoleOption { value: r.as_str(), selected: r.as_str() == chosen }).collect()
}

fn person_row(u: &User, who: &Person, clock: &LocalTime, forms: &Forms) -> PersonRow {
    let id = u.id.to_string();
    let chosen = if forms.row == id && !forms.row_role.is_empty() { forms.row_role.clone() } else { u.role.as_str().to_owned() };
    PersonRow {
        name: u.name.clone(),
        email: u.email.clone(),
        role: u.role.as_str(),
        two_factor: u.has_second_factor(),
        status: match u.activated_at {
            Some(t) => format!("Joined {}", clock.time(t)),
            None => format!("Invited {}", clock.time(u.created_at)),
        },
        is_self: u.id == who.user.id,
        roles: options(Role::for_kind(who.org.kind), &chosen),
        id,
    }
}

/// The page for `who`, answered with `status`.
async fn render(
    req: &HttpRequest,
    who: &Person,
    status: StatusCode,
    notice: Option<Notice>,
    invited: Option<InvitedView>,
    forms: Forms,
) -> Result<HttpResponse, ConsoleError> {
    who.require(Permission::ManageTeam)?;
    let console = console_of(req)?;
    let w = who.0.clone();
    let people = run(&console, move |p| p.people().team(&w)).await?;
    let clock = LocalTime::of(&console, who);
    let roles = Role::for_kind(who.org.kind);
    let default_role = if forms.role.is_empty() { roles.last().map_or("", |r| r.as_str()).to_owned() } else { forms.role.clone() };
    let page = TeamPage {
        chrome: Chrome::new(who, "Team", "Team", PATH).with_notice(notice),
        people: people.iter().map(|u| person_row(u, who, &clock, &forms)).collect(),
        roles: options(roles, &default_role),
        invited,
        require_two_factor: who.org_requires_two_factor,
        forms,
    };
    Ok(page_response(status, &page))
}

#[derive(Debug, Default, Deserialize)]
struct DoneQuery {
    #[serde(default)]
    done: Option<String>,
}

async fn team_page(req: HttpRequest, who: Person, query: web::Query<DoneQuery>) -> Result<HttpResponse, ConsoleError> {
    let notice = match query.done.as_deref() {
        Some("role") => Notice::done("The role is changed. Their sessions have ended: they sign in again with the new role."),
        Some("removed") => Notice::done("The person is removed: they can no longer sign in."),
        Some("two-factor-on") => {
            Notice::done("Everyone must now use two-factor authentication; those without it enrol at their next request.")
        }
        Some("two-factor-off") => Notice::done("Two-factor authentication is required only of the roles that move money or grant access."),
        _ => None,
    };
    render(&req, &who, StatusCode::OK, notice, None, Forms::default()).await
}

#[derive(Debug, Default, Deserialize)]
struct InviteForm {
    #[serde(default)]
    csrf_token: String,
    #[serde(default)]
    email: String,
    #[serde(default)]
    role: String,
}

#[derive(Debug, Default, Deserialize)]
struct RoleForm {
    #[serde(default)]
    csrf_token: String,
    #[serde(default)]
    role: String,
    #[serde(default)]
    code: String,
}

#[derive(Debug, Default, Deserialize)]
struct RemoveForm {
    #[serde(default)]
    csrf_token: String,
}

#[derive(Debug, Default, Deserialize)]
struct TwoFactorForm {
    #[serde(default)]
    csrf_token: String,
    #[serde(default)]
    require_two_factor: Option<String>,
}
csrf_forms!(InviteForm, RoleForm, RemoveForm, TwoFactorForm);

/// The console's own origin, as links to it are written: the first of its origins
/// (`MALIPO_CONSOLE_URL`'s, or the listening address's), or with none configured behind a
/// trusted proxy, the scheme and host the proxy forwards.
pub(super) fn origin(req: &HttpRequest, console: &Console) -> String {
    console.settings.origins.first().cloned().unwrap_or_else(|| {
        let info = req.connection_info();
        format!("{}://{}", info.scheme(), info.host())
    })
}

/// The use case of "Send invitation".
async fn send_invitation(console: &Console, who: &Person, form: &InviteForm, ip: IpAddr) -> Result<Invited, ConsoleError> {
    let w = who.0.clone();
    let invitee = Invitee { email: form.email.clone(), role: form.role.clone(), name: None };
    run(console, move |p| p.people().invite(Inviter::Member(&w, ip), &w.org.id, &invitee)).await
}

async fn invite(req: HttpRequest, posted: Posted<InviteForm>) -> Result<HttpResponse, ConsoleError> {
    let Posted { person: who, form, ip } = posted;
    who.require(Permission::ManageTeam)?;
    let console = console_of(&req)?;
    match send_invitation(&console, &who, &form, ip).await {
        Ok(invited) => {
            let clock = LocalTime::of(&console, &who);
            let view = InvitedView {
                email: form.email.trim().to_owned(),
                link: format!("{}/console/invite/{}", origin(&req, &console), invited.token),
                expires: clock.time(invited.expires_at),
            };
            let notice = Notice::done("Invitation created. Send them the link below: it is shown only now.");
            render(&req, &who, StatusCode::OK, notice, Some(view), Forms::default()).await
        }
        Err(ConsoleError::Service(e @ ServiceError::Validation(_))) => {
            let forms = Forms {
                email: form.email,
                role: form.role,
                invite_errors: FieldErrors::from_service(&e, &[]).unwrap_or_default(),
                ..Forms::default()
            };
            render(&req, &who, StatusCode::UNPROCESSABLE_ENTITY, Notice::alert("The invitation was not sent."), None, forms).await
        }
        Err(e) => Err(e),
    }
}

async fn change_role(req: HttpRequest, path: web::Path<String>, posted: Posted<RoleForm>) -> Result<HttpResponse, ConsoleError> {
    let Posted { person: who, form, ip } = posted;
    who.require(Permission::ManageTeam)?;
    let console = console_of(&req)?;
    let id = path.into_inner();
    let (w, target, role, code) = (who.0.clone(), id.clone(), form.role.clone(), form.code.clone());
    match run(&console, move |p| p.people().change_role(&w, &target, &role, &code, ip)).await {
        Ok(()) => Ok(see_other("/console/team?done=role")),
        Err(ConsoleError::Service(e @ ServiceError::Validation(_))) => {
            let forms = Forms {
                row: id,
                row_role: form.role,
                row_errors: FieldErrors::from_service(&e, &[]).unwrap_or_default(),
                ..Forms::default()
            };
            render(&req, &who, StatusCode::UNPROCESSABLE_ENTITY, Notice::alert("The role was not changed."), None, forms).await
        }
        Err(e) => Err(e),
    }
}

async fn remove(req: HttpRequest, path: web::Path<String>, posted: Posted<RemoveForm>) -> Result<HttpResponse, ConsoleError> {
    let Posted { person: who, ip, .. } = posted;
    who.require(Permission::ManageTeam)?;
    let console = console_of(&req)?;
    let (w, target) = (who.0.clone(), path.into_inner());
    run(&console, move |p| p.people().remove(&w, &target, ip)).await?;
    Ok(see_other("/console/team?done=removed"))
}

async fn two_factor(req: HttpRequest, posted: Posted<TwoFactorForm>) -> Result<HttpResponse, ConsoleError> {
    let Posted { person: who, form, ip } = posted;
    who.require(Permission::ManageTeam)?;
    let console = console_of(&req)?;
    let on = form.require_two_factor.as_deref() == Some("on");
    let w = who.0.clone();
    run(&console, move |p| p.people().require_two_factor(&w, on, ip)).await?;
    Ok(see_other(if on { "/console/team?done=two-factor-on" } else { "/console/team?done=two-factor-off" }))
}
