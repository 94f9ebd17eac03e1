//! Approvals (a checker's): the batches awaiting approval, newest first, with maker, total and
//! count; each links to its page, where "Approve" and "Reject" are (or why this checker cannot).

use actix_web::{HttpRequest, HttpResponse};
use askama::Template;
use malipo_auth::Permission;
use malipo_payouts::BatchState;

use super::rows::{BatchRow, Names};
use crate::chrome::{page, Chrome};
use crate::pages::local_time::LocalTime;
use crate::session::{console_of, Person};
use crate::{run, ConsoleError};

/// How many batches are read to find the ones awaiting approval (newest first).
const LOOK_AT: usize = 500;

#[derive(Template)]
#[template(path = "corporate/approvals.html")]
struct ApprovalsPage {
    chrome: Chrome,
    rows: Vec<(BatchRow, bool)>,
}

/// `GET /console/approvals`.
pub async fn show(req: HttpRequest, who: Person) -> Result<HttpResponse, ConsoleError> {
    who.require(Permission::ApproveBulk)?;
    let console = console_of(&req)?;
    let principal = who.principal();
    let me = principal.clone();
    let waiting = run(&console, move |p| {
        let mut waiting = Vec::new();
        let mut cursor: Option<String> = None;
        let mut seen = 0usize;
        loop {
            let page = p.bulk_payouts().list(&principal, cursor.as_deref(), 100)?;
            seen = seen.saturating_add(page.data.len());
            waiting.extend(page.data.into_iter().filter(|b| b.state == BatchState::AwaitingApproval));
            match page.next_cursor {
                Some(c) if seen < LOOK_AT => cursor = Some(c),
                _ => return Ok(waiting),
            }
        }
    })
    .await?;
    let names = Names::of(&console, &who).await?;
    let clock = LocalTime::of(&console, &who);
    let rows = waiting.iter().map(|b| (BatchRow::of(b, &names, &clock), b.is_maker(&me.client_id, me.person.as_ref()))).collect();
    Ok(page(&ApprovalsPage { chrome: Chrome::new(&who, "Approvals", "Approvals", "/console/approvals"), rows }))
}
