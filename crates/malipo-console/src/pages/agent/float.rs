//! "Float": the float's available balance, the commission earned today and this month (the
//! cash-outs' commissions, read from the float's transactions of this month in the order of the
//! ledger, a batch at a time), and today's transactions.

use actix_web::{web, HttpRequest, HttpResponse};
use askama::Template;
use malipo_core::{MinorUnit, Timestamp};
use malipo_ledger::{JournalKind, Transaction};
use malipo_service::{Balance, Page, TransactionFilter};
use serde::Deserialize;

use super::gate::{require_agent, FLOAT};
use crate::chrome::{page, Chrome};
use crate::pages::local_time::LocalTime;
use crate::pages::money_common::{given, href, PAGE_SIZE};
use crate::session::{console_of, Person};
use crate::{format, run, ConsoleError};

/// `/console/float`.
pub(super) fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/float", web::get().to(float_page));
}

const PATH: &str = "/console/float";
/// Transactions read per step while adding up the month's commission.
const BATCH: usize = 2_000;

/// One transaction as a row (today's, and the statement's).
pub(super) struct Row {
    pub(super) id: String,
    pub(super) time: String,
    pub(super) kind: &'static str,
    pub(super) reference: String,
    pub(super) amount: String,
    pub(super) fee: String,
    pub(super) balance_after: String,
}

/// A transaction of the float as a row: what moved the float (`net`), what the agent paid on
/// it (`fee`, negative when it is a commission earned) and the balance after it.
pub(super) fn row(t: &Transaction, clock: &LocalTime) -> Row {
    let c = t.currency;
    Row {
        id: t.id.to_string(),
        time: clock.time(t.created_at),
        kind: t.type_name(),
        reference: t.source_ref.clone(),
        amount: format::money(t.net, c),
        fee: format::money(t.fee, c),
        balance_after: format::money(t.balance_after, c),
    }
}

#[derive(Template)]
#[template(path = "agent/float.html")]
struct FloatPage {
    chrome: Chrome,
    available: String,
    pending: Option<String>,
    today_commission: String,
    month_commission: String,
    today: String,
    rows: Vec<Row>,
    next: Option<String>,
    first: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
struct FloatQuery {
    cursor: Option<String>,
}

/// What the page shows, read by the use cases.
struct Figures {
    balance: Balance,
    today: MinorUnit,
    month: MinorUnit,
    transactions: Page<Transaction>,
}

/// The first instant of the local month and of the local day of `now`.
fn month_and_day(clock: &LocalTime, now: Timestamp) -> Result<(Timestamp, Timestamp), ConsoleError> {
    let date = clock.date(now);
    let month = format!("{}-01", date.get(..7).unwrap_or_default());
    let start = |d: &str| clock.day_start(d).ok_or_else(|| ConsoleError::Internal(format!("no local day {d}")));
    Ok((start(&month)?, start(&date)?))
}

async fn float_page(req: HttpRequest, who: Person, query: web::Query<FloatQuery>) -> Result<HttpResponse, ConsoleError> {
    require_agent(&who)?;
    let console = console_of(&req)?;
    let clock = LocalTime::of(&console, &who);
    let (month_start, day_start) = month_and_day(&clock, console.platform.now())?;
    let principal = who.principal();
    let cursor = given(query.cursor.as_deref()).map(str::to_owned);
    let after = cursor.clone();
    let figures = run(&console, move |p| {
        let balance = p.agents().float(&principal)?;
        let account = Some(FLOAT.to_owned());
        let month = TransactionFilter { from: Some(month_start), account: account.clone(), ..TransactionFilter::default() };
        let mut export = p.transactions().export(&principal, &month)?;
        let (mut today, mut month) = (MinorUnit::ZERO, MinorUnit::ZERO);
        loop {
            let batch = p.transactions().export_batch(&mut export, BATCH)?;
            if batch.is_empty() {
                break;
            }
            // A cash-out's commission is a fee the float earned: a negative fee.
            for t in batch.iter().filter(|t| t.kind == JournalKind::CashOut) {
                let earned = t.fee.checked_neg()?;
                month = month.checked_add(earned)?;
                if t.created_at >= day_start {
                    today = today.checked_add(earned)?;
                }
            }
        }
        let of_today = TransactionFilter { from: Some(day_start), account, ..TransactionFilter::default() };
        let transactions = p.transactions().list(&principal, &of_today, after.as_deref(), PAGE_SIZE)?;
        Ok(Figures { balance, today, month, transactions })
    })
    .await?;
    let c = figures.balance.account.currency;
    Ok(page(&FloatPage {
        chrome: Chrome::new(&who, "Float", "Float", PATH),
        available: format::money(figures.balance.account.available(), c),
        pending: (figures.balance.pending != MinorUnit::ZERO).then(|| format::money(figures.balance.pending, c)),
        today_commission: format::money(figures.today, c),
        month_commission: format::money(figures.month, c),
        today: clock.date(day_start),
        rows: figures.transactions.data.iter().map(|t| row(t, &clock)).collect(),
        next: figures.transactions.next_cursor.as_deref().map(|c| href(PATH, &[("cursor", Some(c))])),
        first: cursor.map(|_| PATH.to_owned()),
    }))
}
