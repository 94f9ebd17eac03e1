//! Organisations (console contract section 4, Operator): the list, "Create organisation"
//! ("Name", "Kind", "Country"; its test credential's secret shown once), and an organisation's
//! page with "Issue credentials" ("Mode", "Authentication code"; the secret shown once), "Fund"
//! ("Mode", "Amount": an agent's float or a payout account, once per form key) and "Send
//! invitation" ("Email", "Role"; the one-time link shown once). The use cases are those of the
//! operator's commands (`malipo org create`, `credentials issue`, `account fund`, `user
//! invite`), through `platform.back_office()`, audited. Needs `Permission::Organisations`.

use std::net::IpAddr;

use actix_web::{web, HttpRequest, HttpResponse, ResponseError};
use askama::Template;
use malipo_auth::{OrgKind, Organisation, Permission, Role};
use malipo_core::{Mode, OrgId};
use malipo_service::{Invitee, IssuedCredential, ServiceError};
use serde::Deserialize;

use super::form::FieldErrors;
use super::local_time::LocalTime;
use super::money_common::{form_errors, refusal_text};
use super::team::origin;
use crate::chrome::{page, page_response, see_other, Chrome, Notice};
use crate::csrf::Posted;
use crate::session::{console_of, Person};
use crate::{csrf_forms, idem, run, Console, ConsoleError};

/// `/console/organisations` (list, create), `/console/organisations/{org_id}` and its forms.
pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/organisations", web::get().to(list_page))
        .route("/organisations", web::post().to(create))
        .route("/organisations/{org_id}", web::get().to(org_page))
        .route("/organisations/{org_id}/credentials", web::post().to(issue))
        .route("/organisations/{org_id}/fund", web::post().to(fund))
        .route("/organisations/{org_id}/invite", web::post().to(invite));
}

const SECTION: &str = "Organisations";
const PATH: &str = "/console/organisations";
const KINDS: [OrgKind; 4] = [OrgKind::Merchant, OrgKind::Corporate, OrgKind::Agent, OrgKind::Operator];

/// Every form of the section (the fields a form does not post stay empty).
#[derive(Clone, Debug, Default, Deserialize)]
struct OrgForm {
    #[serde(default)]
    csrf_token: String,
    #[serde(default)]
    idempotency_key: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    kind: String,
    #[serde(default)]
    country: String,
    #[serde(default)]
    mode: String,
    #[serde(default)]
    amount: String,
    #[serde(default)]
    code: String,
    #[serde(default)]
    email: String,
    #[serde(default)]
    role: String,
}
csrf_forms!(OrgForm);

/// A choice of a `<select>`.
struct Pick {
    value: String,
    label: String,
    selected: bool,
}

fn picks(all: impl IntoIterator<Item = (String, String)>, chosen: &str) -> Vec<Pick> {
    all.into_iter().map(|(value, label)| Pick { selected: value == chosen, value, label }).collect()
}

/// An organisation as a row.
struct Row {
    id: String,
    name: String,
    kind: &'static str,
    country: String,
    created: String,
}

fn row(o: &Organisation, clock: &LocalTime) -> Row {
    Row { id: o.id.to_string(), name: o.name.clone(), kind: o.kind.as_str(), country: o.country.clone(), created: clock.time(o.created_at) }
}

/// A credential just issued: shown once.
struct NewCredential {
    org_id: String,
    mode: String,
    client_id: String,
    client_secret: String,
}

fn new_credential(c: &IssuedCredential) -> NewCredential {
    NewCredential {
        org_id: c.org_id.to_string(),
        mode: c.mode.to_string(),
        client_id: c.client_id.clone(),
        client_secret: c.client_secret.clone(),
    }
}

/// An invitation just sent: its link, shown once.
struct NewInvitation {
    email: String,
    link: String,
    expires: String,
}

#[derive(Template)]
#[template(path = "organisations/list.html")]
struct ListPage {
    chrome: Chrome,
    rows: Vec<Row>,
    kinds: Vec<Pick>,
    countries: Vec<Pick>,
    form: OrgForm,
    errors: FieldErrors,
    created: Option<NewCredential>,
}

#[derive(Template)]
#[template(path = "organisations/detail.html")]
struct OrgPage {
    chrome: Chrome,
    org: Row,
    /// Whether it has an account to fund (agent float, payout).
    fundable: bool,
    modes: Vec<Pick>,
    roles: Vec<Pick>,
    form: OrgForm,
    errors: FieldErrors,
    /// No errors (the forms that were not refused).
    none: FieldErrors,
    /// Which form was refused (`credentials`, `fund`, `invite`).
    refused: &'static str,
    issued: Option<NewCredential>,
    invited: Option<NewInvitation>,
}

async fn orgs(console: &Console, who: &Person) -> Result<Vec<Organisation>, ConsoleError> {
    let w = who.0.clone();
    run(console, move |p| p.back_office().organisations(&w)).await
}

async fn render_list(
    console: &Console,
    who: &Person,
    form: OrgForm,
    errors: FieldErrors,
    created: Option<NewCredential>,
    notice: Option<Notice>,
) -> Result<ListPage, ConsoleError> {
    let clock = LocalTime::of(console, who);
    let rows = orgs(console, who).await?.iter().map(|o| row(o, &clock)).collect();
    let kind = if form.kind.is_empty() { "merchant".to_owned() } else { form.kind.clone() };
    let country = if form.country.is_empty() { who.org.country.clone() } else { form.country.clone() };
    Ok(ListPage {
        chrome: Chrome::new(who, SECTION, "Organisations", PATH).with_notice(notice),
        rows,
        kinds: picks(KINDS.iter().map(|k| (k.as_str().to_owned(), k.as_str().to_owned())), &kind),
        countries: picks(console.platform.countries().all().iter().map(|c| (c.code.clone(), format!("{} ({})", c.name, c.code))), &country),
        form,
        errors,
        created,
    })
}

async fn list_page(req: HttpRequest, who: Person) -> Result<HttpResponse, ConsoleError> {
    who.require(Permission::Organisations)?;
    let console = console_of(&req)?;
    Ok(page(&render_list(&console, &who, OrgForm::default(), FieldErrors::none(), None, None).await?))
}

async fn create(req: HttpRequest, posted: Posted<OrgForm>) -> Result<HttpResponse, ConsoleError> {
    let Posted { person: who, form, ip } = posted;
    who.require(Permission::Organisations)?;
    let console = console_of(&req)?;
    let kind = form.kind.parse::<OrgKind>().ok().filter(|k| KINDS.contains(k));
    let result = match kind {
        None => Err(ConsoleError::Service(ServiceError::field("kind", "invalid_value", "Choose merchant, corporate, agent or operator"))),
        Some(kind) => {
            let (w, name, country) = (who.0.clone(), form.name.clone(), form.country.trim().to_owned());
            run(&console, move |p| p.back_office().create_org(&w, ip, &name, kind, &country)).await
        }
    };
    match result {
        Ok(issued) => {
            let notice = Notice::done("Organisation created, with its accounts in both modes and a test credential.");
            let fresh = OrgForm::default();
            Ok(page(&render_list(&console, &who, fresh, FieldErrors::none(), Some(new_credential(&issued)), notice).await?))
        }
        Err(ConsoleError::Service(e)) => {
            let errors = form_errors(&e, &[("name", "name", "Name"), ("country", "country", "Country"), ("kind", "kind", "Kind")]);
            let notice = Notice::alert(format!("Nothing was created. {}", if errors.is_some() { String::new() } else { refusal_text(&e) }));
            let status = ConsoleError::Service(e).status_code();
            let shown = render_list(&console, &who, form, errors.unwrap_or_default(), None, notice).await?;
            Ok(page_response(status, &shown))
        }
        Err(e) => Err(e),
    }
}

/// The organisation of a path.
async fn org_of(console: &Console, who: &Person, id: &str) -> Result<Organisation, ConsoleError> {
    let org_id = OrgId::parse(id).map_err(|_| ConsoleError::NotFound)?;
    let w = who.0.clone();
    run(console, move |p| p.back_office().organisation(&w, &org_id)).await
}

struct Shown {
    form: OrgForm,
    errors: FieldErrors,
    refused: &'static str,
    issued: Option<NewCredential>,
    invited: Option<NewInvitation>,
    notice: Option<Notice>,
}

impl Shown {
    fn fresh(notice: Option<Notice>) -> Self {
        Shown {
            form: OrgForm { idempotency_key: idem::new_key(), ..OrgForm::default() },
            errors: FieldErrors::none(),
            refused: "",
            issued: None,
            invited: None,
            notice,
        }
    }
}

fn render_org(console: &Console, who: &Person, org: &Organisation, shown: Shown) -> OrgPage {
    let clock = LocalTime::of(console, who);
    let mode = if shown.form.mode.is_empty() { "test".to_owned() } else { shown.form.mode.clone() };
    let role = shown.form.role.clone();
    OrgPage {
        chrome: Chrome::new(who, SECTION, format!("Organisation {}", org.name), &format!("{PATH}/{}", org.id)).with_notice(shown.notice),
        org: row(org, &clock),
        fundable: matches!(org.kind, OrgKind::Agent | OrgKind::Merchant | OrgKind::Corporate),
        modes: picks(Mode::ALL.iter().map(|m| (m.to_string(), m.to_string())), &mode),
        roles: picks(Role::for_kind(org.kind).iter().map(|r| (r.as_str().to_owned(), r.as_str().to_owned())), &role),
        form: shown.form,
        errors: shown.errors,
        none: FieldErrors::none(),
        refused: shown.refused,
        issued: shown.issued,
        invited: shown.invited,
    }
}

#[derive(Debug, Default, Deserialize)]
struct DoneQuery {
    done: Option<String>,
}

async fn org_page(
    req: HttpRequest,
    who: Person,
    path: web::Path<String>,
    query: web::Query<DoneQuery>,
) -> Result<HttpResponse, ConsoleError> {
    who.require(Permission::Organisations)?;
    let console = console_of(&req)?;
    let org = org_of(&console, &who, &path).await?;
    let notice = match query.done.as_deref() {
        Some("funded") => Notice::done("Account funded from the issuance account."),
        _ => None,
    };
    Ok(page(&render_org(&console, &who, &org, Shown::fresh(notice))))
}

/// The page again after a refused form: its values kept, each error beside its field.
fn refused_page(console: &Console, who: &Person, org: &Organisation, form: OrgForm, which: &'static str, e: ServiceError) -> HttpResponse {
    let fields =
        [("amount", "amount", "Amount"), ("code", "code", "Authentication code"), ("email", "email", "Email"), ("role", "role", "Role")];
    let (errors, notice) = match form_errors(&e, &fields) {
        Some(errors) => (errors, Notice::alert("Nothing was done: some fields need attention.")),
        None => (FieldErrors::none(), Notice::alert(format!("Nothing was done. {}", refusal_text(&e)))),
    };
    let status = ConsoleError::Service(e).status_code();
    let form = OrgForm { idempotency_key: idem::new_key(), code: String::new(), ..form };
    page_response(status, &render_org(console, who, org, Shown { form, errors, refused: which, issued: None, invited: None, notice }))
}

fn mode_of(text: &str) -> Result<Mode, ServiceError> {
    text.parse::<Mode>().map_err(|_| ServiceError::field("mode", "invalid_value", "Choose test or live"))
}

async fn issue(req: HttpRequest, path: web::Path<String>, posted: Posted<OrgForm>) -> Result<HttpResponse, ConsoleError> {
    let Posted { person: who, form, ip } = posted;
    who.require(Permission::Organisations)?;
    let console = console_of(&req)?;
    let org = org_of(&console, &who, &path).await?;
    let (w, id, code, mode) = (who.0.clone(), org.id.clone(), form.code.clone(), form.mode.clone());
    match run(&console, move |p| p.back_office().issue_credential(&w, ip, &id, mode_of(&mode)?, &code)).await {
        Ok(issued) => {
            let mut shown = Shown::fresh(Notice::done("Credential issued. Give it to the organisation: the secret is shown only now."));
            shown.issued = Some(new_credential(&issued));
            Ok(page(&render_org(&console, &who, &org, shown)))
        }
        Err(ConsoleError::Service(e)) => Ok(refused_page(&console, &who, &org, form, "credentials", e)),
        Err(e) => Err(e),
    }
}

async fn fund(req: HttpRequest, path: web::Path<String>, posted: Posted<OrgForm>) -> Result<HttpResponse, ConsoleError> {
    let Posted { person: who, form, ip } = posted;
    who.require(Permission::Organisations)?;
    let console = console_of(&req)?;
    let org = org_of(&console, &who, &path).await?;
    let fields = [("org", org.id.as_str()), ("mode", form.mode.as_str()), ("amount", form.amount.trim())];
    let idem = idem::by(idem::idem(&who, "organisation fund", &form.idempotency_key, &fields)?, &who, ip, "account.funded");
    let (w, id, mode, amount) = (who.0.clone(), org.id.clone(), form.mode.clone(), form.amount.trim().to_owned());
    let to = format!("{PATH}/{}?done=funded", org.id);
    let result = run(&console, move |p| idem::page(p.back_office().fund(&w, &id, mode_of(&mode)?, &amount, &idem), |_| to.clone())).await;
    match result {
        Ok(outcome) => Ok(see_other(&idem::location(&outcome))),
        Err(ConsoleError::Service(e)) => Ok(refused_page(&console, &who, &org, form, "fund", e)),
        Err(e) => Err(e),
    }
}

async fn send_invitation(
    console: &Console,
    who: &Person,
    org: &OrgId,
    form: &OrgForm,
    ip: IpAddr,
) -> Result<malipo_service::Invited, ConsoleError> {
    let (w, id) = (who.0.clone(), org.clone());
    let invitee = Invitee { email: form.email.clone(), role: form.role.clone(), name: None };
    run(console, move |p| p.back_office().invite(&w, ip, &id, &invitee)).await
}

async fn invite(req: HttpRequest, path: web::Path<String>, posted: Posted<OrgForm>) -> Result<HttpResponse, ConsoleError> {
    let Posted { person: who, form, ip } = posted;
    who.require(Permission::Organisations)?;
    let console = console_of(&req)?;
    let org = org_of(&console, &who, &path).await?;
    match send_invitation(&console, &who, &org.id, &form, ip).await {
        Ok(invited) => {
            let clock = LocalTime::of(&console, &who);
            let mut shown = Shown::fresh(Notice::done("Invitation created. Send them the link below: it is shown only now."));
            shown.invited = Some(NewInvitation {
                email: form.email.trim().to_owned(),
                link: format!("{}/console/invite/{}", origin(&req, &console), invited.token),
                expires: clock.time(invited.expires_at),
            });
            Ok(page(&render_org(&console, &who, &org, shown)))
        }
        Err(ConsoleError::Service(e)) => Ok(refused_page(&console, &who, &org, form, "invite", e)),
        Err(e) => Err(e),
    }
}
