//! The tables of the in-memory database, with the indexes that back its unique constraints.

use std::collections::{BTreeMap, BTreeSet};

use malipo_auth::{AccessToken, ConsoleSession, Credential, Failures, Organisation, User};
use malipo_charges::Charge;
use malipo_core::{
    AccountId, AuditId, BulkPayoutId, ChargeRef, Currency, EndpointId, EventId, Mode, Msisdn, OrgId, PaymentRequestId, PayoutRef,
    ReversalId, Timestamp, TransactionId, UserId,
};
use malipo_idempotency::IdempotencyRecord;
use malipo_ledger::{Account, AccountKind, ChainedJournal, Posting};
use malipo_payouts::{BulkPayout, Payout, Reversal};
use malipo_requests::{PayCode, PaymentRequest};
use malipo_service::{AuditEntry, Callback, CallbackSecret, Invitation, UssdSession, Wallet};
use malipo_webhooks::{Attempt, Delivery, Endpoint, Event};

/// The last journal of one ledger (mode + currency): where its audit chain continues.
#[derive(Clone, Debug)]
pub(crate) struct LedgerHead {
    /// The last journal's `seq`.
    pub(crate) seq: i64,
    /// The last journal's hash.
    pub(crate) hash: String,
}

/// One of a person's recovery codes (keyed by user and digest; when it was issued is not read
/// back, so not kept here).
#[derive(Clone, Copy, Debug)]
pub(crate) struct RecoveryCode {
    /// When used (a code works once).
    pub(crate) used_at: Option<Timestamp>,
}

/// `(org_id, mode, operation, key)`: the primary key of an idempotency record.
pub(crate) type IdemKey = (OrgId, Mode, String, String);

/// Every table. Cloned at the start of each write transaction and swapped in on commit.
#[derive(Clone, Debug, Default)]
pub(crate) struct State {
    /// Organisations by id.
    pub(crate) orgs: BTreeMap<OrgId, Organisation>,
    /// Credentials by client id.
    pub(crate) credentials: BTreeMap<String, Credential>,
    /// Tokens by digest.
    pub(crate) tokens: BTreeMap<String, AccessToken>,
    /// Accounts by id.
    pub(crate) accounts: BTreeMap<AccountId, Account>,
    /// Unique index: an organisation's account of a kind in a mode.
    pub(crate) org_account_index: BTreeMap<(OrgId, Mode, AccountKind), AccountId>,
    /// Unique index: the platform's account of a kind in a mode and currency.
    pub(crate) system_account_index: BTreeMap<(Mode, Currency, AccountKind), AccountId>,
    /// Unique index: a wallet account by mode and owner's number.
    pub(crate) wallet_account_index: BTreeMap<(Mode, String), AccountId>,
    /// Where each ledger's audit chain continues.
    pub(crate) heads: BTreeMap<(Mode, Currency), LedgerHead>,
    /// Every journal, in posting order.
    pub(crate) journals: Vec<ChainedJournal>,
    /// Unique index of journal ids.
    pub(crate) journal_ids: BTreeSet<TransactionId>,
    /// Unique index `journals_source_key`: the charge, payout or payment request each
    /// `charge`, `payout` or `payment_request` journal paid.
    pub(crate) paid_sources: BTreeSet<String>,
    /// One posting per journal line, in posting order.
    pub(crate) postings: Vec<Posting>,
    /// `accounts.posted_at`: the time of each account's latest posting.
    pub(crate) posted_at: BTreeMap<AccountId, Timestamp>,
    /// Wallets by (mode, number).
    pub(crate) wallets: BTreeMap<(Mode, Msisdn), Wallet>,
    /// Charges by id.
    pub(crate) charges: BTreeMap<ChargeRef, Charge>,
    /// Payouts (single ones and bulk items) by id.
    pub(crate) payouts: BTreeMap<PayoutRef, Payout>,
    /// Unique index: a bulk item by its batch and place in it (also the batch's order).
    pub(crate) batch_items: BTreeMap<(BulkPayoutId, u32), PayoutRef>,
    /// Unique index: the ledger transaction of each completed payout.
    pub(crate) payout_transactions: BTreeMap<TransactionId, PayoutRef>,
    /// Bulk payout batches by id.
    pub(crate) batches: BTreeMap<BulkPayoutId, BulkPayout>,
    /// Reversals by id.
    pub(crate) reversals: BTreeMap<ReversalId, Reversal>,
    /// Unique index: the ledger transaction of each reversal.
    pub(crate) reversal_transactions: BTreeSet<TransactionId>,
    /// Merchant payment requests by id.
    pub(crate) payment_requests: BTreeMap<PaymentRequestId, PaymentRequest>,
    /// Unique index `payment_requests_open_code_key`: the open request of a mode with a pay code.
    pub(crate) open_pay_codes: BTreeMap<(Mode, PayCode), PaymentRequestId>,
    /// Unique index: the ledger transaction of each paid payment request.
    pub(crate) request_transactions: BTreeSet<TransactionId>,
    /// USSD sessions by (gateway organisation, mode, session id).
    pub(crate) ussd_sessions: BTreeMap<(OrgId, Mode, String), UssdSession>,
    /// Idempotency records.
    pub(crate) keys: BTreeMap<IdemKey, IdempotencyRecord>,
    /// Webhook endpoints by id (deleted ones too).
    pub(crate) endpoints: BTreeMap<EndpointId, Endpoint>,
    /// The event outbox, by id.
    pub(crate) events: BTreeMap<EventId, Event>,
    /// Deliveries by id.
    pub(crate) deliveries: BTreeMap<String, Delivery>,
    /// Every delivery attempt, in insertion order (the SQL tables' serial id).
    pub(crate) attempts: Vec<Attempt>,
    /// Callbacks by id.
    pub(crate) callbacks: BTreeMap<String, Callback>,
    /// Callback secrets by organisation and mode.
    pub(crate) callback_secrets: BTreeMap<(OrgId, Mode), CallbackSecret>,
    /// People by id.
    pub(crate) users: BTreeMap<UserId, User>,
    /// Unique index `users_email_key`: the person who accepted an invitation to an email, by the
    /// email as compared (invitations waiting are not in it; `users_org_email_key` is checked by
    /// a scan).
    pub(crate) user_emails: BTreeMap<String, UserId>,
    /// Invitations by digest.
    pub(crate) invitations: BTreeMap<String, Invitation>,
    /// Recovery codes by (user, digest).
    pub(crate) recovery_codes: BTreeMap<(UserId, String), RecoveryCode>,
    /// Console sessions by digest.
    pub(crate) console_sessions: BTreeMap<String, ConsoleSession>,
    /// Sign-in failure counts by subject.
    pub(crate) failures: BTreeMap<String, Failures>,
    /// The audit log by id (time-ordered), append-only.
    pub(crate) audit: BTreeMap<AuditId, AuditEntry>,
    /// Organisations' console settings: whether two-factor is required of everyone.
    pub(crate) require_two_factor: BTreeMap<OrgId, bool>,
}
