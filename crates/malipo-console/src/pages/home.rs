//! Home: the organisation's balances at a glance; for a merchant also today's charges and the
//! last 14 days' completed amount per day, drawn by the server as SVG (console contract
//! section 4). "Today" is the organisation's country's local day.

use actix_web::{web, HttpRequest, HttpResponse};
use askama::Template;
use malipo_auth::{OrgKind, Permission};
use malipo_core::{Currency, MinorUnit};
use malipo_ledger::AccountKind;
use malipo_service::ChargeDay;

use crate::chrome::{page, see_other, Chrome};
use crate::format;
use crate::session::{console_of, Person};
use crate::{run, ConsoleError};

/// How many days the chart shows, today the last.
pub const CHART_DAYS: u32 = 14;

/// `/console/`.
pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/", web::get().to(home)).route("", web::get().to(|| async { see_other("/console/") }));
}

/// One figure as shown.
pub struct Figure {
    /// What it is.
    pub label: &'static str,
    /// `KES 1,250.00`, `12`, `75%`.
    pub value: String,
    /// A line under it, if any (`3 of 4`).
    pub note: String,
}

impl Figure {
    fn new(label: &'static str, value: String) -> Self {
        Figure { label, value, note: String::new() }
    }
}

/// A bar of the chart, in the SVG's units.
pub struct Bar {
    /// Left edge.
    pub x: i64,
    /// Top.
    pub y: i64,
    /// Height (0 for a day without completed charges).
    pub height: i64,
    /// Centre, for its label.
    pub mid: i64,
    /// The label under it: the day of the month.
    pub label: String,
    /// `2026-11-28: KES 1,000.00 completed (3 charges)`.
    pub title: String,
}

/// A day of the table under the chart.
pub struct DayRow {
    /// `2026-11-28`.
    pub date: String,
    /// Completed amount.
    pub completed: String,
    /// Charges created.
    pub count: u64,
}

/// The 14-day chart.
pub struct Chart {
    /// What it shows, in words (its accessible name).
    pub summary: String,
    /// Its bars, oldest first.
    pub bars: Vec<Bar>,
    /// The same days as a table.
    pub days: Vec<DayRow>,
    /// The SVG's width and height.
    pub width: i64,
    /// See `width`.
    pub height: i64,
    /// Where bars stand.
    pub baseline: i64,
    /// Where day labels go.
    pub label_y: i64,
}

#[derive(Template)]
#[template(path = "home.html")]
struct HomePage {
    chrome: Chrome,
    figures: Vec<Figure>,
    today: Vec<Figure>,
    chart: Option<Chart>,
    /// A corporate maker's "Transfer" between the organisation's own accounts.
    can_transfer: bool,
    form: super::corporate::transfer::TransferForm,
    errors: super::form::FieldErrors,
}

#[derive(Debug, Default, serde::Deserialize)]
struct HomeQuery {
    done: Option<String>,
    tx: Option<String>,
}

/// The SVG's geometry: a slot per day, bars in them, labels under them.
const SLOT: i64 = 30;
const BAR: i64 = 20;
const TOP: i64 = 10;
const BASELINE: i64 = 150;
const LABEL_Y: i64 = 166;
const HEIGHT: i64 = 176;

async fn home(req: HttpRequest, who: Person, query: web::Query<HomeQuery>) -> Result<HttpResponse, ConsoleError> {
    if !matches!(who.org.kind, OrgKind::Merchant | OrgKind::Corporate) || !who.may(Permission::Read) {
        let first = crate::chrome::nav(&who, "").into_iter().next().map_or("/console/account", |l| l.href);
        return Ok(see_other(first));
    }
    let console = console_of(&req)?;
    let principal = who.principal();
    let merchant = who.org.kind == OrgKind::Merchant;
    let (balances, days) = run(&console, move |p| {
        let balances = p.accounts().list(&principal)?;
        let days = if merchant { p.charges().days(&principal, CHART_DAYS)? } else { Vec::new() };
        Ok((balances, days))
    })
    .await?;
    let mut figures = Vec::new();
    let mut currency = None;
    for b in &balances {
        let c = b.account.currency;
        currency = currency.or(Some(c));
        match b.account.kind {
            AccountKind::Collection => {
                figures.push(Figure::new("Collection available", format::money(b.account.available(), c)));
                if merchant {
                    figures.push(Figure::new("Collection pending", format::money(b.pending, c)));
                }
            }
            AccountKind::Payout => {
                figures.push(Figure::new("Payout available", format::money(b.account.available(), c)));
                if !merchant {
                    figures.push(Figure::new("Payout reserved", format::money(b.account.held, c)));
                }
            }
            _ => {}
        }
    }
    let (today, chart) = match (merchant, currency) {
        (true, Some(c)) => (today_figures(days.last(), c), Some(chart(&days, c))),
        _ => (Vec::new(), None),
    };
    let notice = match (query.done.as_deref(), query.tx.as_deref()) {
        (Some("transferred"), tx) => crate::chrome::Notice::done(format!("Transfer done: {}", tx.unwrap_or_default())),
        _ => None,
    };
    let can_transfer = !merchant && who.may(Permission::Transfer);
    Ok(page(&HomePage {
        chrome: Chrome::new(&who, "Home", "Home", "/console/").with_notice(notice),
        figures,
        today,
        chart,
        can_transfer,
        form: super::corporate::transfer::TransferForm::fresh(),
        errors: super::form::FieldErrors::none(),
    }))
}

/// Today's charges: how many, their amount, and the share completed.
fn today_figures(today: Option<&ChargeDay>, currency: Currency) -> Vec<Figure> {
    let (count, amount, completed) = today.map_or((0, MinorUnit::ZERO, 0), |d| (d.count, d.amount, d.completed));
    let share = completed.saturating_mul(100).checked_div(count).map_or_else(|| "–".to_owned(), |p| format!("{p}%"));
    vec![
        Figure::new("Charges today", count.to_string()),
        Figure::new("Amount today", format::money(amount, currency)),
        Figure { label: "Completed today", value: share, note: format!("{completed} of {count}") },
    ]
}

/// The bars of the days' completed amounts, the tallest reaching the top.
fn chart(days: &[ChargeDay], currency: Currency) -> Chart {
    let max = days.iter().map(|d| d.completed_amount.get()).max().unwrap_or(0).max(1);
    let room = BASELINE.saturating_sub(TOP);
    let mut bars = Vec::with_capacity(days.len());
    let mut slot_x: i64 = 0;
    for d in days {
        let amount = d.completed_amount.get().max(0);
        let height = i128::from(amount)
            .checked_mul(i128::from(room))
            .and_then(|v| v.checked_div(i128::from(max)))
            .and_then(|v| i64::try_from(v).ok())
            .unwrap_or(0);
        // A day with completed charges shows at least a sliver.
        let height = if amount > 0 { height.max(2) } else { 0 };
        let x = slot_x.saturating_add(SLOT.saturating_sub(BAR) / 2);
        bars.push(Bar {
            x,
            y: BASELINE.saturating_sub(height),
            height,
            mid: slot_x.saturating_add(SLOT / 2),
            label: d.date.day().to_string(),
            title: format!(
                "{}: {} completed ({} of {} charges)",
                d.date,
                format::money(d.completed_amount, currency),
                d.completed,
                d.count
            ),
        });
        slot_x = slot_x.saturating_add(SLOT);
    }
    let total = days.iter().try_fold(MinorUnit::ZERO, |sum, d| sum.checked_add(d.completed_amount)).unwrap_or(MinorUnit::ZERO);
    let best = days.iter().filter(|d| d.completed_amount > MinorUnit::ZERO).max_by_key(|d| d.completed_amount);
    let (first, last) = (days.first().map(|d| d.date.to_string()), days.last().map(|d| d.date.to_string()));
    let summary = format!(
        "Completed amount per day, {} to {}: {} in all{}",
        first.unwrap_or_default(),
        last.unwrap_or_default(),
        format::money(total, currency),
        best.map_or_else(
            || ", no completed charges".to_owned(),
            |b| format!(", the most {} on {}", format::money(b.completed_amount, currency), b.date)
        )
    );
    let days = days
        .iter()
        .rev()
        .map(|d| DayRow { date: d.date.to_string(), completed: format::money(d.completed_amount, currency), count: d.count })
        .collect();
    Chart { summary, bars, days, width: slot_x, height: HEIGHT, baseline: BASELINE, label_y: LABEL_Y }
}
