//! Home: the organisation's balances at a glance.

use actix_web::{web, HttpRequest, HttpResponse};
use askama::Template;
use malipo_auth::{OrgKind, Permission};
use malipo_ledger::AccountKind;

use crate::chrome::{page, see_other, Chrome};
use crate::format;
use crate::session::{console_of, Person};
use crate::{run, ConsoleError};

/// `/console/`.
pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/", web::get().to(home)).route("", web::get().to(|| async { see_other("/console/") }));
}

/// One balance as shown.
pub struct Figure {
    /// What it is.
    pub label: &'static str,
    /// `KES 1,250.00`.
    pub value: String,
}

#[derive(Template)]
#[template(path = "home.html")]
struct HomePage {
    chrome: Chrome,
    figures: Vec<Figure>,
}

async fn home(req: HttpRequest, who: Person) -> Result<HttpResponse, ConsoleError> {
    if !matches!(who.org.kind, OrgKind::Merchant | OrgKind::Corporate) || !who.may(Permission::Read) {
        let first = crate::chrome::nav(&who, "").into_iter().next().map_or("/console/account", |l| l.href);
        return Ok(see_other(first));
    }
    let console = console_of(&req)?;
    let principal = who.principal();
    let balances = run(&console, move |p| p.accounts().list(&principal)).await?;
    let mut figures = Vec::new();
    for b in &balances {
        let currency = b.account.currency;
        match b.account.kind {
            AccountKind::Collection => {
                figures.push(Figure { label: "Collection available", value: format::money(b.account.available(), currency) });
                figures.push(Figure { label: "Collection pending", value: format::money(b.pending, currency) });
            }
            AccountKind::Payout => {
                figures.push(Figure { label: "Payout available", value: format::money(b.account.available(), currency) })
            }
            _ => {}
        }
    }
    Ok(page(&HomePage { chrome: Chrome::new(&who, "Home", "Home", "/console/"), figures }))
}
