//! The document's objects as this door renders them from the use cases' results: the
//! transaction (`responseTransaction`), the request state (`requestStateObject`), parties,
//! amounts and fees.

use malipo_charges::{Charge, ChargeKind, ChargeState, FailureReason};
use malipo_core::{Currency, MinorUnit, Timestamp};
use malipo_ledger::{JournalKind, Transaction};
use malipo_payouts::{BatchState, BulkPayout, Payout, PayoutFailure, PayoutState, Reversal, ReversalOriginal};
use serde::Serialize;

use crate::error::{Category, GsmaError, Pair};

/// How many polls of one request state the door expects a client to need at most: the
/// document's `pollLimit`. Advisory: polls are limited by the credential's request budget only.
pub const POLL_LIMIT: u32 = 100;

/// An amount as the document writes it: major units, no trailing zeros (`250`, `12.5`).
pub fn amount(value: MinorUnit, currency: Currency) -> String {
    let text = currency.format_amount(MinorUnit::new(value.get().saturating_abs()));
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        text
    }
}

/// A key/value party entry (`msisdn`, `accountid`).
pub fn party(key: &str, value: &str) -> Vec<Pair> {
    vec![Pair { key: key.to_owned(), value: value.to_owned() }]
}

/// One fee of `feesArray`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Fee {
    fee_type: &'static str,
    fee_amount: String,
    fee_currency: String,
}

/// The document's `responseTransaction`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TransactionObject {
    transaction_reference: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    original_transaction_reference: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    requesting_organisation_transaction_reference: Option<String>,
    credit_party: Vec<Pair>,
    debit_party: Vec<Pair>,
    #[serde(rename = "type")]
    kind: &'static str,
    transaction_status: &'static str,
    amount: String,
    currency: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    description_text: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    fees: Option<Vec<Fee>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    transaction_receipt: Option<String>,
    creation_date: String,
    modification_date: String,
}

fn fees(kind: &'static str, fee: MinorUnit, currency: Currency) -> Option<Vec<Fee>> {
    fee.is_positive().then(|| vec![Fee { fee_type: kind, fee_amount: amount(fee, currency), fee_currency: currency.as_str().to_owned() }])
}

fn description(text: Option<&str>) -> Option<String> {
    text.filter(|t| !t.is_empty()).map(|t| t.chars().take(160).collect())
}

/// A charge (`merchantpay`) or an agent's cash-out (`withdrawal`).
pub fn charge(c: &Charge) -> TransactionObject {
    let kind = match c.kind {
        ChargeKind::Charge => "merchantpay",
        ChargeKind::CashOut => "withdrawal",
    };
    TransactionObject {
        transaction_reference: c.id.to_string(),
        original_transaction_reference: None,
        requesting_organisation_transaction_reference: Some(c.reference.clone()),
        credit_party: party("accountid", c.merchant_account.as_str()),
        debit_party: party("msisdn", &format!("+{}", c.payer_msisdn.as_str())),
        kind,
        transaction_status: c.state.as_str(),
        amount: amount(c.amount, c.currency),
        currency: c.currency.as_str().to_owned(),
        description_text: description(c.description.as_deref()),
        fees: fees("transaction", c.fee, c.currency),
        transaction_receipt: c.transaction_id.as_ref().map(ToString::to_string),
        creation_date: c.created_at.to_rfc3339(),
        modification_date: c.updated_at.to_rfc3339(),
    }
}

/// A payout (`disbursement`).
pub fn payout(p: &Payout) -> TransactionObject {
    TransactionObject {
        transaction_reference: p.id.to_string(),
        original_transaction_reference: None,
        requesting_organisation_transaction_reference: Some(p.reference.clone()),
        credit_party: party("msisdn", &format!("+{}", p.payee_msisdn.as_str())),
        debit_party: party("accountid", p.payout_account.as_str()),
        kind: "disbursement",
        transaction_status: p.state.as_str(),
        amount: amount(p.amount, p.currency),
        currency: p.currency.as_str().to_owned(),
        description_text: description(p.narration.as_deref()),
        fees: fees("transaction", p.fee, p.currency),
        transaction_receipt: p.transaction_id.as_ref().map(ToString::to_string),
        creation_date: p.created_at.to_rfc3339(),
        modification_date: p.updated_at.to_rfc3339(),
    }
}

/// The id of a reversal's original.
pub fn original_of(r: &Reversal) -> String {
    match &r.original {
        ReversalOriginal::Charge(id) => id.to_string(),
        ReversalOriginal::Payout(id) => id.to_string(),
    }
}

/// A reversal (`reversal`) of `original`: money goes back, so its parties are the original's
/// the other way round; the original is named in `originalTransactionReference`.
pub fn reversal(r: &Reversal, original: &TransactionObject) -> TransactionObject {
    TransactionObject {
        transaction_reference: r.id.to_string(),
        original_transaction_reference: Some(original.transaction_reference.clone()),
        requesting_organisation_transaction_reference: None,
        credit_party: original.debit_party.clone(),
        debit_party: original.credit_party.clone(),
        kind: "reversal",
        transaction_status: "completed",
        amount: amount(r.amount, r.currency),
        currency: r.currency.as_str().to_owned(),
        description_text: description(Some(&r.reason)),
        fees: None,
        transaction_receipt: Some(r.transaction_id.to_string()),
        creation_date: r.created_at.to_rfc3339(),
        modification_date: r.created_at.to_rfc3339(),
    }
}

/// The document's type of a ledger transaction's kind.
pub fn ledger_type(kind: JournalKind) -> &'static str {
    match kind {
        JournalKind::Charge | JournalKind::PaymentRequest => "merchantpay",
        JournalKind::Payout => "disbursement",
        JournalKind::Reversal => "reversal",
        JournalKind::Transfer | JournalKind::P2p => "transfer",
        JournalKind::CashIn => "deposit",
        JournalKind::CashOut => "withdrawal",
        JournalKind::Fee | JournalKind::Funding | JournalKind::SandboxFunding => "adjustment",
    }
}

/// A ledger transaction as one of the caller's accounts saw it (`tx_`): money in names the
/// account as the credit party, money out as the debit party; the other side is what caused it
/// (`source_ref`, as `transactionreference`).
pub fn ledger(t: &Transaction) -> TransactionObject {
    ledger_of(t, party("accountid", t.account.as_str()))
}

/// A ledger transaction as the account named `own` saw it (a wallet is named by its `msisdn`).
pub fn ledger_of(t: &Transaction, own: Vec<Pair>) -> TransactionObject {
    let other = party("transactionreference", &t.source_ref);
    let (credit_party, debit_party) = if t.amount.get() >= 0 { (own, other) } else { (other, own) };
    TransactionObject {
        transaction_reference: t.id.to_string(),
        original_transaction_reference: None,
        requesting_organisation_transaction_reference: None,
        credit_party,
        debit_party,
        kind: ledger_type(t.kind),
        transaction_status: "completed",
        amount: amount(t.amount, t.currency),
        currency: t.currency.as_str().to_owned(),
        description_text: None,
        fees: fees("transaction", t.fee, t.currency),
        transaction_receipt: Some(t.source_ref.clone()),
        creation_date: t.created_at.to_rfc3339(),
        modification_date: t.created_at.to_rfc3339(),
    }
}

/// The document's `responseStatementEntries`: one posting of an account's statement.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StatementEntry {
    transaction_reference: String,
    credit_party: Vec<Pair>,
    debit_party: Vec<Pair>,
    transaction_status: &'static str,
    amount: String,
    currency: String,
    display_type: &'static str,
    transaction_receipt: String,
    creation_date: String,
    modification_date: String,
    custom_data: Vec<Pair>,
}

/// A signed amount (`-12.5`), for a balance.
fn signed(value: MinorUnit, currency: Currency) -> String {
    let text = amount(value, currency);
    if value.get() < 0 {
        format!("-{text}")
    } else {
        text
    }
}

/// A posting as a statement entry of the account named `own`: `amount` is what the balance
/// moved by (the fee inside it), so that the entries chain with `customData`'s `balanceAfter`;
/// money in names the account as the credit party, money out as the debit party, the other
/// side being what caused it. `displayType` is the REST API's transaction type (`charge`,
/// `payout`, `cash_in`, …); `customData` also carries the `fee` when there is one.
pub fn statement_entry(t: &Transaction, own: Vec<Pair>) -> StatementEntry {
    let other = party("transactionreference", &t.source_ref);
    let (credit_party, debit_party) = if t.net.get() >= 0 { (own, other) } else { (other, own) };
    let mut custom_data = vec![Pair { key: "balanceAfter".into(), value: signed(t.balance_after, t.currency) }];
    if t.fee.get() != 0 {
        custom_data.push(Pair { key: "fee".into(), value: signed(t.fee, t.currency) });
    }
    StatementEntry {
        transaction_reference: t.id.to_string(),
        credit_party,
        debit_party,
        transaction_status: "completed",
        amount: amount(t.net, t.currency),
        currency: t.currency.as_str().to_owned(),
        display_type: malipo_ledger::transaction_type(t.kind),
        transaction_receipt: t.source_ref.clone(),
        creation_date: t.created_at.to_rfc3339(),
        modification_date: t.created_at.to_rfc3339(),
        custom_data,
    }
}

/// The document's `requestStateObject`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestState {
    server_correlation_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    object_reference: Option<String>,
    status: &'static str,
    notification_method: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pending_reason: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    expiry_time: Option<String>,
    poll_limit: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<serde_json::Value>,
}

/// Where a request stands: still going, done, or failed with the document's error.
pub enum Progress {
    /// Still going, with why.
    Pending(&'static str),
    /// Done.
    Completed,
    /// Failed.
    Failed(GsmaError),
}

/// The request state of the request that made the object `reference` (whose id's UUID is the
/// `serverCorrelationId`), last changed `at`; a pending one fails if not done by `expires`.
pub fn request_state(reference: &str, progress: Progress, expires: Option<Timestamp>, at: Timestamp, callback: bool) -> RequestState {
    let (status, pending_reason, error) = match progress {
        Progress::Pending(why) => ("pending", Some(why), None),
        Progress::Completed => ("completed", None, None),
        Progress::Failed(e) => ("failed", None, serde_json::to_value(e.object(at.to_rfc3339())).ok()),
    };
    RequestState {
        server_correlation_id: server_correlation_id(reference).unwrap_or_default(),
        object_reference: Some(reference.to_owned()),
        status,
        notification_method: if callback { "callback" } else { "polling" },
        pending_reason,
        expiry_time: if status == "pending" { expires.map(Timestamp::to_rfc3339) } else { None },
        poll_limit: POLL_LIMIT,
        error,
    }
}

/// The UUID in an object's id (`ch_0193…` → `0193…-…`): the `serverCorrelationId` of the
/// request that made it.
pub fn server_correlation_id(reference: &str) -> Option<String> {
    let (_, hex) = reference.split_once('_')?;
    uuid::Uuid::try_parse(hex).ok().map(|u| u.hyphenated().to_string())
}

/// The ids a `serverCorrelationId` may stand for, one per kind of object a request makes.
pub fn references_of(server_correlation_id: &str) -> Option<[String; 6]> {
    let simple = uuid::Uuid::try_parse(server_correlation_id).ok()?.simple().to_string();
    Some(["ch", "po", "wd", "rv", "tx", "bp"].map(|prefix| format!("{prefix}_{simple}")))
}

fn refused(code: &'static str, description: &str) -> GsmaError {
    GsmaError {
        status: actix_web::http::StatusCode::BAD_REQUEST,
        category: Category::BusinessRule,
        code,
        description: description.to_owned(),
        parameters: Vec::new(),
        retry_after: None,
        challenge: None,
    }
}

/// How a charge's request stands.
pub fn charge_progress(c: &Charge) -> Progress {
    match c.state {
        ChargeState::Pending => Progress::Pending("waiting for the payer to approve on their phone"),
        ChargeState::Authorised => Progress::Pending("approved by the payer; completing"),
        ChargeState::Completed => Progress::Completed,
        ChargeState::Declined | ChargeState::Expired | ChargeState::Failed => Progress::Failed(match c.failure_reason {
            Some(FailureReason::InsufficientFunds) => refused("insufficientFunds", "the payer's wallet cannot cover the amount"),
            Some(FailureReason::LimitExceeded) => refused("greaterThanTransactionMaxValue", "the payer's wallet limits refuse the amount"),
            Some(FailureReason::PayerNotFound) => {
                GsmaError { category: Category::Identification, ..refused("identifierError", "the payer's number has no wallet") }
            }
            Some(FailureReason::WalletLocked) => refused("incorrectState", "the payer's wallet is locked"),
            Some(FailureReason::Expired) => refused("requestDeclined", "the payer did not approve in time"),
            Some(FailureReason::PinAttemptsExceeded) => refused("requestDeclined", "too many wrong PINs; the payer's wallet is locked"),
            Some(FailureReason::DeclinedByCustomer) | None => refused("requestDeclined", "the payer declined"),
            Some(FailureReason::ProcessingError) => GsmaError {
                status: actix_web::http::StatusCode::INTERNAL_SERVER_ERROR,
                category: Category::Internal,
                ..refused("genericError", "the payment could not be completed")
            },
        }),
    }
}

/// How a payout's request stands.
pub fn payout_progress(p: &Payout) -> Progress {
    match p.state {
        PayoutState::Pending => Progress::Pending("paying the payee"),
        PayoutState::Completed => Progress::Completed,
        PayoutState::Failed => Progress::Failed(match p.failure_reason {
            Some(PayoutFailure::PayeeNotFound) => {
                GsmaError { category: Category::Identification, ..refused("identifierError", "the payee's number has no wallet") }
            }
            Some(PayoutFailure::WalletLocked) => refused("incorrectState", "the payee's wallet is locked"),
            Some(PayoutFailure::LimitExceeded) => refused("maxBalanceExceeded", "the payee's wallet limits refuse the amount"),
            Some(PayoutFailure::BulkPayoutRejected) => refused("requestDeclined", "the batch was rejected by its checker"),
            Some(PayoutFailure::ProcessingError) | None => GsmaError {
                status: actix_web::http::StatusCode::INTERNAL_SERVER_ERROR,
                category: Category::Internal,
                ..refused("genericError", "the payout could not be completed")
            },
        }),
    }
}

/// How a batch's request stands: pending while it waits for its checker and while its items
/// are paid; completed once every item settled (failed items are in `/rejections`); failed when
/// its checker rejected it.
pub fn batch_progress(b: &BulkPayout) -> Progress {
    match b.state {
        BatchState::AwaitingApproval => Progress::Pending("waiting for a checker to approve the batch"),
        BatchState::Processing => Progress::Pending("approved; paying the items"),
        BatchState::Completed => Progress::Completed,
        BatchState::Rejected => Progress::Failed(refused("requestDeclined", &rejected_text(b))),
    }
}

fn rejected_text(b: &BulkPayout) -> String {
    let reason = b.rejection_reason.as_deref().unwrap_or("no reason given");
    format!("the batch was rejected by its checker: {reason}").chars().take(256).collect()
}

/// What `approvalDate` and `completionDate` say before the approval or the completion happened:
/// the document requires both, and no date of the batch's life would be true. `batchStatus`
/// says which of them happened (`docs/gsma.md`).
pub const NOT_YET: &str = "1970-01-01T00:00:00Z";

/// The document's `responseBatchTransaction`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BatchObject {
    batch_id: String,
    batch_status: &'static str,
    approval_date: String,
    completion_date: String,
    batch_title: String,
    processing_flag: bool,
    completed_count: u32,
    rejection_count: u32,
    parsing_success_count: u32,
    creation_date: String,
    modification_date: String,
    custom_data: Vec<Pair>,
}

/// A batch (`bp_`): `created` while it waits for its checker, `approved` while its items are
/// paid, `completed` once every item settled. A batch its checker rejected is `completed` with
/// every item counted as a rejection (the document's `batchStatus` has no rejected state);
/// `customData` carries Malipo's own state (`state`) and the checker's reason
/// (`rejectionReason`).
pub fn batch(b: &BulkPayout) -> BatchObject {
    let date = |t: Option<Timestamp>| t.map_or_else(|| NOT_YET.to_owned(), Timestamp::to_rfc3339);
    let (status, completed, rejected) = match b.state {
        BatchState::AwaitingApproval => ("created", 0, 0),
        BatchState::Processing => ("approved", b.counts.completed, b.counts.failed),
        BatchState::Completed => ("completed", b.counts.completed, b.counts.failed),
        BatchState::Rejected => ("completed", 0, b.item_count),
    };
    let mut custom_data = party("state", b.state.as_str());
    if let Some(reason) = b.rejection_reason.as_deref().filter(|r| !r.is_empty()) {
        custom_data.push(Pair { key: "rejectionReason".into(), value: reason.chars().take(256).collect() });
    }
    BatchObject {
        batch_id: b.id.to_string(),
        batch_status: status,
        approval_date: date(b.approved_at),
        completion_date: date(b.completed_at),
        batch_title: b.reference.clone(),
        processing_flag: b.state == BatchState::Processing,
        completed_count: completed,
        rejection_count: rejected,
        parsing_success_count: b.item_count,
        creation_date: b.created_at.to_rfc3339(),
        modification_date: b.updated_at.to_rfc3339(),
        custom_data,
    }
}

/// The document's `responseBatchTransactionRejection`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BatchRejection {
    transaction_reference: String,
    requesting_organisation_transaction_reference: String,
    credit_party: Vec<Pair>,
    debit_party: Vec<Pair>,
    rejection_reason: String,
    rejection_date: String,
}

/// A failed item of batch `b`, with why: the payout's failure, or the checker's rejection of
/// the whole batch with its reason.
pub fn batch_rejection(b: &BulkPayout, p: &Payout) -> BatchRejection {
    let reason = match (p.failure_reason, payout_progress(p)) {
        (Some(PayoutFailure::BulkPayoutRejected), _) => rejected_text(b),
        (_, Progress::Failed(e)) => e.description,
        _ => "the payout could not be completed".to_owned(),
    };
    BatchRejection {
        transaction_reference: p.id.to_string(),
        requesting_organisation_transaction_reference: p.reference.clone(),
        credit_party: party("msisdn", &format!("+{}", p.payee_msisdn.as_str())),
        debit_party: party("accountid", p.payout_account.as_str()),
        rejection_reason: reason,
        rejection_date: p.updated_at.to_rfc3339(),
    }
}

/// The document's `responseBatchTransactionCompletion`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BatchCompletion {
    transaction_reference: String,
    requesting_organisation_transaction_reference: String,
    credit_party: Vec<Pair>,
    debit_party: Vec<Pair>,
    completion_date: String,
    link: String,
}

/// A paid item, with the link to it as a transaction.
pub fn batch_completion(p: &Payout) -> BatchCompletion {
    BatchCompletion {
        transaction_reference: p.id.to_string(),
        requesting_organisation_transaction_reference: p.reference.clone(),
        credit_party: party("msisdn", &format!("+{}", p.payee_msisdn.as_str())),
        debit_party: party("accountid", p.payout_account.as_str()),
        completion_date: p.completed_at.unwrap_or(p.updated_at).to_rfc3339(),
        link: format!("{}/transactions/{}", crate::BASE, p.id),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amounts_have_no_trailing_zeros_as_the_documents_pattern_requires() {
        let kes = Currency::KES;
        for (minor, text) in [(25_000, "250"), (1_250, "12.5"), (1_205, "12.05"), (0, "0"), (-1_250, "12.5")] {
            assert_eq!(amount(MinorUnit::new(minor), kes), text);
        }
    }

    #[test]
    fn a_server_correlation_id_is_the_uuid_of_the_objects_id() {
        let id = "ch_0193a1b2c3d47e8f9a0b1c2d3e4f5a6b";
        let uuid = server_correlation_id(id).unwrap_or_default();
        assert_eq!(uuid, "0193a1b2-c3d4-7e8f-9a0b-1c2d3e4f5a6b");
        assert_eq!(references_of(&uuid).map(|r| r[0].clone()).as_deref(), Some(id));
        assert!(references_of("not-a-uuid").is_none());
    }
}
