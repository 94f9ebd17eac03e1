//! An account's history: `GET /accounts/{identifierType}/{identifier}/transactions` (the
//! document's `responseTransaction`) and `…/statemententries` (`responseStatementEntries`),
//! for `accountid` (one of the caller's own `acc_` accounts, as `GET /api/v1/transactions?account=`)
//! and `msisdn` (a customer's wallet, for the operator's back office, scope `wallets`).
//!
//! Both list the account's ledger postings newest first. The document pages by `offset` and
//! `limit` (default [`DEFAULT_LIMIT`], at most [`MAX_LIMIT`]); Malipo's use cases page by cursor,
//! so the door reads the newest [`REACH`] records of the window in cursor pages of [`PAGE`] and
//! answers the slice `[offset, offset + limit)` of them. A record beyond the reach is found by
//! narrowing the window (`toDateTime`), never by a larger offset: an `offset` of [`REACH`] or
//! more is `invalidOffset`. `X-Records-Available-Count` is the number of records the window's
//! offsets reach: the exact number of matching records when below [`REACH`], else [`REACH`]
//! ("at least"); `X-Records-Returned-Count` the number in the answer. Every read keeps to the
//! use cases' rules: the caller's own accounts in its mode, the operator's scope for a wallet.

use actix_web::{web, HttpResponse};
use malipo_auth::Principal;
use malipo_core::Timestamp;
use malipo_ledger::{AccountKind, Transaction};
use malipo_service::{Page, Platform, ServiceError, TransactionFilter};
use serde::Deserialize;

use crate::accounts::{identifier, Identifier};
use crate::caller::Caller;
use crate::error::{GsmaError, Pair};
use crate::objects::{self, party};
use crate::{run, Gsma};

/// Records answered when `limit` is not sent (the document's default).
pub const DEFAULT_LIMIT: usize = 50;
/// The largest `limit` (as the REST API's lists).
pub const MAX_LIMIT: usize = 100;
/// How many of a window's newest records its offsets reach: `offset` is below it.
pub const REACH: usize = 1000;
/// The size of each cursor page the door reads.
pub const PAGE: usize = 100;

/// The query parameters the document lists for these operations (read as text, so that a bad
/// value is answered in the document's error object naming it).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListQuery {
    offset: Option<String>,
    limit: Option<String>,
    from_date_time: Option<String>,
    to_date_time: Option<String>,
    transaction_status: Option<String>,
    transaction_type: Option<String>,
    display_type: Option<String>,
}

/// What a request selects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Window {
    offset: usize,
    limit: usize,
    from: Option<Timestamp>,
    /// Exclusive (the document's `toDateTime` is inclusive: one microsecond later).
    to: Option<Timestamp>,
    /// `transactionStatus` names a status no ledger record has (every one is `completed`).
    none: bool,
}

fn date_time(name: &str, value: Option<&str>) -> Result<Option<Timestamp>, GsmaError> {
    value
        .map(|v| Timestamp::parse_rfc3339(v.trim()).map_err(|_| GsmaError::field(name, format!("{name} must be an RFC 3339 date-time"))))
        .transpose()
}

fn window(q: &ListQuery, shape: Shape) -> Result<Window, GsmaError> {
    let offset = match q.offset.as_deref().map(str::trim) {
        None | Some("") => 0,
        Some(text) => text.parse::<usize>().map_err(|_| GsmaError::invalid_offset("offset must be a whole number, 0 or more"))?,
    };
    if offset >= REACH {
        return Err(GsmaError::invalid_offset(format!(
            "offset must be below {REACH}; reach older records by narrowing the window with toDateTime"
        )));
    }
    let limit = match q.limit.as_deref().map(str::trim) {
        None | Some("") => DEFAULT_LIMIT,
        Some(text) => text
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=MAX_LIMIT).contains(n))
            .ok_or_else(|| GsmaError::field("limit", format!("limit must be a whole number from 1 to {MAX_LIMIT}")))?,
    };
    // The document's other filter of each operation is not offered: refused rather than ignored.
    match shape {
        Shape::Transactions if q.transaction_type.is_some() => {
            return Err(GsmaError::field("transactionType", "transactionType is not offered as a filter; see docs/gsma.md"));
        }
        Shape::StatementEntries if q.display_type.is_some() => {
            return Err(GsmaError::field("displayType", "displayType is not offered as a filter; see docs/gsma.md"));
        }
        _ => {}
    }
    let from = date_time("fromDateTime", q.from_date_time.as_deref())?;
    let to = date_time("toDateTime", q.to_date_time.as_deref())?.map(|t| Timestamp::from_micros(t.as_micros().saturating_add(1)));
    let none = q.transaction_status.as_deref().is_some_and(|s| !s.trim().eq_ignore_ascii_case("completed"));
    Ok(Window { offset, limit, from, to, none })
}

/// The newest [`REACH`] records at most, reading cursor pages of [`PAGE`] newest first.
fn walk<T>(mut page: impl FnMut(Option<&str>, usize) -> Result<Page<T>, ServiceError>) -> Result<Vec<T>, ServiceError> {
    let mut all = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let next = page(cursor.as_deref(), PAGE.min(REACH - all.len()))?;
        all.extend(next.data);
        match next.next_cursor {
            Some(c) if next.has_more && all.len() < REACH => cursor = Some(c),
            _ => return Ok(all),
        }
    }
}

/// The account's records in the window (newest first, at most [`REACH`]) and how it is named
/// as a party.
fn history(p: &Platform, principal: &Principal, account: &Identifier, w: Window) -> Result<(Vec<Transaction>, Vec<Pair>), ServiceError> {
    match account {
        Identifier::Account(id) => {
            // Only an `acc_` id: the use case would also take an account kind.
            if !id.starts_with("acc_") {
                return Err(ServiceError::NotFound);
            }
            let filter = TransactionFilter { from: w.from, to: w.to, kind: None, account: Some(id.clone()) };
            let records = walk(|cursor, limit| p.transactions().list(principal, &filter, cursor, limit))?;
            Ok((records, party("accountid", id)))
        }
        Identifier::Msisdn(msisdn) => {
            let mut currency = None;
            let mut own = Vec::new();
            let lines = walk(|cursor, limit| {
                let (wallet, page) = p.wallets().history(principal, msisdn, (w.from, w.to), cursor, limit)?;
                currency = Some(wallet.currency);
                own = party("msisdn", &format!("+{}", wallet.msisdn.as_str()));
                Ok(page)
            })?;
            let currency = currency.ok_or(ServiceError::NotFound)?;
            let records = lines
                .into_iter()
                .map(|l| Transaction::of_posting(l.seq, l.posting, AccountKind::Wallet, currency).map_err(ServiceError::from))
                .collect::<Result<Vec<_>, _>>()?;
            Ok((records, own))
        }
    }
}

/// Which of the document's objects an operation answers.
#[derive(Clone, Copy)]
enum Shape {
    Transactions,
    StatementEntries,
}

async fn list(
    caller: Caller,
    path: web::Path<(String, String)>,
    query: &ListQuery,
    gsma: &Gsma,
    shape: Shape,
) -> Result<HttpResponse, GsmaError> {
    let principal = caller.0;
    let (kind, value) = path.into_inner();
    let account = identifier(&kind, &value)?;
    let w = window(query, shape)?;
    let (records, own) = run(&gsma.platform, move |p| history(p, &principal, &account, w)).await?;
    let records = if w.none { Vec::new() } else { records };
    let available = records.len();
    let page = records.get(w.offset.min(available)..w.offset.saturating_add(w.limit).min(available)).unwrap_or_default();
    let body = match shape {
        Shape::Transactions => serde_json::to_value(page.iter().map(|t| objects::ledger_of(t, own.clone())).collect::<Vec<_>>()),
        Shape::StatementEntries => serde_json::to_value(page.iter().map(|t| objects::statement_entry(t, own.clone())).collect::<Vec<_>>()),
    }
    .map_err(|e| GsmaError::from(ServiceError::Internal(e.to_string())))?;
    Ok(HttpResponse::Ok()
        .insert_header(("X-Records-Available-Count", available.to_string()))
        .insert_header(("X-Records-Returned-Count", page.len().to_string()))
        .json(body))
}

/// `GET /accounts/{identifierType}/{identifier}/transactions`: the account's ledger
/// transactions, newest first, as `responseTransaction` (the other side of each is what caused
/// it, as `transactionreference`).
///
/// # Errors
/// 404 for an account the caller has none of; 401 for a wallet without the `wallets` scope;
/// 400 for a bad `offset` (`invalidOffset`), `limit` or date-time.
pub async fn transactions(
    caller: Caller,
    path: web::Path<(String, String)>,
    query: web::Query<ListQuery>,
    gsma: web::Data<Gsma>,
) -> Result<HttpResponse, GsmaError> {
    list(caller, path, &query, &gsma, Shape::Transactions).await
}

/// `GET /accounts/{identifierType}/{identifier}/statemententries`: the same postings, newest
/// first, as `responseStatementEntries` (what the balance moved by, and the balance after).
///
/// # Errors
/// As [`transactions`].
pub async fn statement_entries(
    caller: Caller,
    path: web::Path<(String, String)>,
    query: web::Query<ListQuery>,
    gsma: web::Data<Gsma>,
) -> Result<HttpResponse, GsmaError> {
    list(caller, path, &query, &gsma, Shape::StatementEntries).await
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn query(offset: Option<&str>, limit: Option<&str>) -> ListQuery {
        ListQuery {
            offset: offset.map(str::to_owned),
            limit: limit.map(str::to_owned),
            from_date_time: None,
            to_date_time: None,
            transaction_status: None,
            transaction_type: None,
            display_type: None,
        }
    }

    fn window_of(q: &ListQuery) -> Result<Window, GsmaError> {
        window(q, Shape::Transactions)
    }

    #[test]
    fn offsets_and_limits_are_checked_against_the_reach() {
        let w = window_of(&query(None, None)).unwrap();
        assert_eq!((w.offset, w.limit), (0, DEFAULT_LIMIT));
        assert_eq!(window_of(&query(Some("999"), Some("100"))).unwrap().offset, 999);
        for bad in ["-1", "x", "1.5", "1000"] {
            assert_eq!(window_of(&query(Some(bad), None)).unwrap_err().code, "invalidOffset", "{bad}");
        }
        for bad in ["0", "101", "ten"] {
            let e = window_of(&query(None, Some(bad))).unwrap_err();
            assert_eq!((e.code, e.parameters[0].key.as_str()), ("formatError", "limit"), "{bad}");
        }
    }

    #[test]
    fn a_walk_stops_at_the_reach_or_the_last_page() {
        let mut reads = 0;
        let all = walk(|cursor, limit| {
            reads += 1;
            let start = cursor.map_or(0, |c| c.parse::<usize>().unwrap());
            let data: Vec<usize> = (start..start + limit + 1).collect();
            Ok(Page::from_fetched(data, limit, |n| (n + 1).to_string()))
        })
        .unwrap();
        assert_eq!((all.len(), reads), (REACH, REACH / PAGE));
        assert_eq!(all.iter().copied().collect::<std::collections::BTreeSet<_>>().len(), REACH, "no duplicates");
        let short = walk(|_, limit| Ok(Page::from_fetched(vec![1, 2, 3], limit, ToString::to_string))).unwrap();
        assert_eq!(short, vec![1, 2, 3]);
    }
}
