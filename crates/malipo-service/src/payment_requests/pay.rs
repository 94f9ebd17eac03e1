//! Paying a payment request from the USSD menu ("Pay merchant" with its pay code, or "Approve
//! payments" for a request addressed to the caller), and declining an addressed one.
//!
//! A payment is one transaction: the request is locked first (`SELECT … FOR UPDATE`; SQLite's
//! writers are serialised) and checked open and unexpired, then the payer's wallet is locked and
//! its state, limits and balance checked, then one balanced journal moves the money and the
//! request is marked paid (a guarded update that only an open request passes) with its
//! `payment_request.paid` event. Two customers paying one code at once therefore pay it once:
//! the second finds it paid. The database refuses a second `payment_request` journal for the
//! same request too (`journals_source_key`).

use malipo_core::{MinorUnit, Mode, Msisdn, PaymentRequestId, TransactionId};
use malipo_ledger::{AccountKind, Journal, JournalKind, JournalLine};
use malipo_requests::{PayCode, PaymentRequest, RequestEvent, RequestState, TransitionError};
use malipo_ussd::{Prompt, PromptKind};

use crate::agents::insufficient;
use crate::core::{payee_name, system_account, Core};
use crate::customers::Customers;
use crate::error::{Earlier, ServiceError};
use crate::events::Events;
use crate::idempotency::Idem;
use crate::limits::{limit_error, Limits};
use crate::ports::{AuthRepo, ChargeFlow, PaymentRequestRepo, WalletState};
use crate::views::{OnRequests, Requesting, View};

/// A request paid by the caller: what the screen needs beyond the request itself.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Paid {
    /// The journal that moved the money.
    pub(crate) transaction_id: TransactionId,
    /// The payer's balance right after.
    pub(crate) balance: MinorUnit,
}

impl Paid {
    /// A payment as versions before snapshots kept it under the session's key: `tx_id balance`.
    fn from_record(text: &str) -> Option<Self> {
        let (id, balance) = text.split_once(' ')?;
        Some(Paid { transaction_id: TransactionId::parse(id).ok()?, balance: MinorUnit::new(balance.parse().ok()?) })
    }
}

/// Why a request cannot be paid, for the caller's screen.
fn unpayable(e: TransitionError) -> String {
    match e {
        TransitionError::NotOpen { state: RequestState::Paid } => "This payment request has already been paid.",
        TransitionError::NotOpen { state: RequestState::Cancelled } => "This payment request was cancelled.",
        TransitionError::NotOpen { state: RequestState::Expired } | TransitionError::PastExpiry => "This payment request has expired.",
        TransitionError::NotOpen { state: RequestState::Open } | TransitionError::NotDue => "This payment request cannot be paid now.",
    }
    .to_owned()
}

const GONE: &str = "This payment request no longer exists.";

/// Pays and declines payment requests for a caller.
pub(crate) struct RequestPayments<'a>(pub(crate) &'a Core);

impl RequestPayments<'_> {
    /// The request a pay code names, as the prompt to show (the merchant's display name, the
    /// amount, no fee for the caller: the merchant pays it), or why it cannot be paid.
    ///
    /// # Errors
    /// Storage failures.
    pub(crate) fn lookup(&self, mode: Mode, code: &str) -> Result<Result<Prompt, String>, ServiceError> {
        let unknown = || format!("No payment request has pay code {code}.");
        let Ok(code) = PayCode::parse(code) else { return Ok(Err(unknown())) };
        let now = self.0.now();
        Requesting::read(self.0.store(), |tx| {
            let Some(request) = tx.payment_request_by_code(mode, &code)? else { return Ok(Err(unknown())) };
            if let Err(e) = request.payable(now) {
                return Ok(Err(unpayable(e)));
            }
            Ok(Ok(prompt(tx, &request)?))
        })
    }

    /// The open, unexpired requests addressed to the caller, oldest first, as prompts.
    ///
    /// # Errors
    /// Storage failures.
    pub(crate) fn prompts_for(
        &self,
        tx: &mut (impl PaymentRequestRepo + AuthRepo + ?Sized),
        mode: Mode,
        payer: &Msisdn,
    ) -> Result<Vec<Prompt>, ServiceError> {
        let now = self.0.now();
        let mut prompts = Vec::new();
        for request in tx.open_payment_requests_for_payer(mode, payer)? {
            if request.payable(now).is_ok() {
                prompts.push(prompt(tx, &request)?);
            }
        }
        Ok(prompts)
    }

    /// Pays the request `id` from the caller's wallet (the PIN already checked), at most once
    /// per `once` (the session and hop): a repeat answers the first payment. `Ok(Err(text))`
    /// is a refusal worded for the screen; nothing moved.
    ///
    /// # Errors
    /// Storage failures.
    pub(crate) fn pay(&self, mode: Mode, payer: &Msisdn, id: &str, once: &Idem) -> Result<Result<Paid, String>, ServiceError> {
        let Ok(id) = PaymentRequestId::parse(id) else { return Ok(Err(GONE.to_owned())) };
        match self.0.idempotent(once, Requesting, |tx| self.pay_in(tx, mode, payer, &id)) {
            Ok(done) => Ok(Ok(done.value)),
            // Kept by a version before snapshots, in this channel's own record.
            Err(ServiceError::AnsweredEarlier(Earlier(kept))) => std::str::from_utf8(&kept)
                .ok()
                .and_then(Paid::from_record)
                .map(Ok)
                .ok_or_else(|| ServiceError::Internal("a stored payment does not parse".into())),
            Err(e) => refusal(e).map(Err),
        }
    }

    fn pay_in(
        &self,
        tx: &mut (impl PaymentRequestRepo + ChargeFlow + AuthRepo + ?Sized),
        mode: Mode,
        payer: &Msisdn,
        id: &PaymentRequestId,
    ) -> Result<Paid, ServiceError> {
        let now = self.0.now();
        let mut request = tx.lock_payment_request(id)?.filter(|r| r.mode == mode).ok_or_else(|| ServiceError::InvalidState(GONE.into()))?;
        request.payable(now).map_err(|e| ServiceError::InvalidState(unpayable(e)))?;
        let Some((wallet, opened_now)) = Customers(self.0).payer_wallet(tx, mode, payer, now)? else {
            return Err(ServiceError::field("payer", "wallet_not_found", "this number has no Malipo wallet"));
        };
        if wallet.state == WalletState::Locked {
            return Err(ServiceError::WalletLocked);
        }
        if wallet.currency != request.currency {
            return Err(ServiceError::CurrencyMismatch("the payment request is in another currency".into()));
        }
        let limits = Limits(self.0);
        let amount = request.amount;
        // A wallet opened in this transaction (the sandbox's) has used nothing today.
        let within = if opened_now {
            limits.fresh_wallet_debit(&wallet, amount, amount)?
        } else {
            limits.check_debit(tx, &wallet, amount, amount, now)?
        };
        within.map_err(|b| limits.country(&wallet).map_or_else(|e| e, |country| limit_error(b, country)))?;
        let revenue = system_account(tx, mode, request.currency, AccountKind::Revenue)?;
        let journal = Journal::new_skipping_zero(
            mode,
            request.currency,
            JournalKind::PaymentRequest,
            request.id.as_str(),
            vec![
                JournalLine { account: wallet.account_id.clone(), amount: amount.checked_neg()? },
                JournalLine { account: request.merchant_account.clone(), amount: request.merchant_credit()? },
                JournalLine { account: revenue, amount: request.fee },
            ],
            now,
        )?
        .with_fee(&request.merchant_account, request.fee);
        request
            .apply(RequestEvent::Pay { payer: payer.clone(), transaction_id: journal.id.clone() }, now)
            .map_err(|e| ServiceError::InvalidState(unpayable(e)))?;
        // The request first, the shared ledger rows (revenue, the chain head) last, just before commit.
        tx.update_payment_request(&request)?;
        Events.payment_request(tx, &request, now)?;
        tx.post_journal(&journal).map_err(ServiceError::from).map_err(insufficient)?;
        let balance = tx.account(&wallet.account_id)?.map_or(MinorUnit::ZERO, |a| a.balance);
        Ok(Paid { transaction_id: journal.id, balance })
    }

    /// The caller declines a request addressed to them: it is cancelled (the merchant sees it
    /// `cancelled`; nobody can pay it any more). `Ok(Err(text))` when it can no longer be declined.
    ///
    /// # Errors
    /// Storage failures.
    pub(crate) fn decline(&self, mode: Mode, payer: &Msisdn, id: &str) -> Result<Result<(), String>, ServiceError> {
        let Ok(id) = PaymentRequestId::parse(id) else { return Ok(Err(GONE.to_owned())) };
        OnRequests::write(self.0.store(), |tx| {
            let now = self.0.now();
            let Some(mut request) = tx.lock_payment_request(&id)?.filter(|r| r.mode == mode && r.payer_msisdn.as_ref() == Some(payer))
            else {
                return Ok(Err(GONE.to_owned()));
            };
            if let Err(e) = request.payable(now) {
                return Ok(Err(unpayable(e)));
            }
            request.apply(RequestEvent::Cancel, now).map_err(|e| ServiceError::Internal(format!("declining {id}: {e}")))?;
            tx.update_payment_request(&request)?;
            Ok(Ok(()))
        })
    }
}

/// A request as the caller sees it: the merchant's display name (its organisation's name,
/// nothing more), the amount, and no fee (the merchant pays it out of the amount).
fn prompt(tx: &mut (impl AuthRepo + ?Sized), request: &PaymentRequest) -> Result<Prompt, ServiceError> {
    let payee = payee_name(tx, &request.org_id)?;
    Ok(Prompt { id: request.id.to_string(), kind: PromptKind::PaymentRequest, payee, amount: request.amount.get(), fee: 0 })
}

/// A business refusal worded for the screen; other failures stay errors.
fn refusal(e: ServiceError) -> Result<String, ServiceError> {
    Ok(match e {
        ServiceError::InvalidState(text) => text,
        ServiceError::InsufficientFunds => "You do not have enough money for this payment.".to_owned(),
        ServiceError::LimitExceeded(_) => "This payment is above your wallet's limits.".to_owned(),
        ServiceError::WalletLocked => "Your Malipo wallet is locked. Visit a Malipo agent to unlock it.".to_owned(),
        ServiceError::CurrencyMismatch(_) => "You can only pay requests in your wallet's currency.".to_owned(),
        ServiceError::Validation(_) => "This number has no Malipo wallet.".to_owned(),
        other => return Err(other),
    })
}

impl crate::idempotency::Subject for Paid {
    fn subject(&self) -> (String, String) {
        (self.transaction_id.to_string(), String::new())
    }
}
