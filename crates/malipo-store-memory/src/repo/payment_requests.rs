//! [`PaymentRequestRepo`] over the in-memory tables.

use malipo_core::{Mode, Msisdn, OrgId, PaymentRequestId, Timestamp};
use malipo_requests::{PayCode, PaymentRequest, RequestFilter, RequestState};
use malipo_service::{PaymentRequestRepo, StoreError};

use crate::tx::{check, foreign_key, MemoryTx};

/// The check constraints of the `payment_requests` table: the id's prefix, amounts in range
/// (a fee within the amount), who paid with which transaction and when exactly when paid, and
/// an expiry after the creation.
fn check_request(r: &PaymentRequest) -> Result<(), StoreError> {
    let (amount, fee) = (r.amount.get(), r.fee.get());
    check(r.id.as_str().starts_with("pr_"), "payment_requests_id_prefix_check")?;
    check(amount > 0, "payment_requests_amount_check")?;
    check(fee >= 0 && fee <= amount, "payment_requests_fee_check")?;
    let paid = r.state == RequestState::Paid;
    let all_paid = paid == r.paid_by_msisdn.is_some() && paid == r.transaction_id.is_some() && paid == r.paid_at.is_some();
    check(all_paid, "payment_requests_paid_check")?;
    check(r.expires_at > r.created_at, "payment_requests_expires_at_check")
}

/// The unique index `payment_requests_open_code_key`: the open request of a mode with a code.
fn open_code_key(r: &PaymentRequest) -> Option<(Mode, PayCode)> {
    (r.state == RequestState::Open).then(|| (r.mode, r.pay_code.clone()))
}

impl PaymentRequestRepo for MemoryTx<'_> {
    fn insert_payment_request(&mut self, request: &PaymentRequest) -> Result<(), StoreError> {
        let s = self.w()?;
        let code_taken = open_code_key(request).is_some_and(|k| s.open_pay_codes.contains_key(&k));
        let transaction_taken = request.transaction_id.as_ref().is_some_and(|t| s.request_transactions.contains(t));
        if s.payment_requests.contains_key(&request.id) || code_taken || transaction_taken {
            return Err(StoreError::Duplicate);
        }
        foreign_key(s.orgs.contains_key(&request.org_id), "the payment request's organisation")?;
        foreign_key(s.accounts.contains_key(&request.merchant_account), "the payment request's merchant account")?;
        check_request(request)?;
        if let Some(k) = open_code_key(request) {
            s.open_pay_codes.insert(k, request.id.clone());
        }
        if let Some(t) = &request.transaction_id {
            s.request_transactions.insert(t.clone());
        }
        s.payment_requests.insert(request.id.clone(), request.clone());
        Ok(())
    }

    fn payment_request(&mut self, org_id: &OrgId, mode: Mode, id: &PaymentRequestId) -> Result<Option<PaymentRequest>, StoreError> {
        Ok(self.r().payment_requests.get(id).filter(|r| &r.org_id == org_id && r.mode == mode).cloned())
    }

    fn lock_payment_request(&mut self, id: &PaymentRequestId) -> Result<Option<PaymentRequest>, StoreError> {
        // The whole store is locked for the transaction already.
        Ok(self.r().payment_requests.get(id).cloned())
    }

    fn payment_request_by_code(&mut self, mode: Mode, code: &PayCode) -> Result<Option<PaymentRequest>, StoreError> {
        let s = self.r();
        if let Some(id) = s.open_pay_codes.get(&(mode, code.clone())) {
            return Ok(s.payment_requests.get(id).cloned());
        }
        Ok(s.payment_requests
            .values()
            .filter(|r| r.mode == mode && &r.pay_code == code)
            .max_by(|a, b| (a.updated_at, &a.id).cmp(&(b.updated_at, &b.id)))
            .cloned())
    }

    fn update_payment_request(&mut self, request: &PaymentRequest) -> Result<(), StoreError> {
        let s = self.w()?;
        let Some(stored) = s.payment_requests.get(&request.id).filter(|r| r.state == RequestState::Open) else {
            return Err(StoreError::Other(format!("no open payment request {} to update", request.id)));
        };
        let updated = PaymentRequest {
            state: request.state,
            paid_by_msisdn: request.paid_by_msisdn.clone(),
            transaction_id: request.transaction_id.clone(),
            paid_at: request.paid_at,
            updated_at: request.updated_at,
            ..stored.clone()
        };
        check_request(&updated)?;
        if updated.transaction_id.as_ref().is_some_and(|t| s.request_transactions.contains(t)) {
            return Err(StoreError::Duplicate);
        }
        if let Some(k) = open_code_key(stored) {
            if open_code_key(&updated).is_none() {
                s.open_pay_codes.remove(&k);
            }
        }
        if let Some(t) = &updated.transaction_id {
            s.request_transactions.insert(t.clone());
        }
        s.payment_requests.insert(updated.id.clone(), updated);
        Ok(())
    }

    fn list_payment_requests(
        &mut self,
        org_id: &OrgId,
        mode: Mode,
        filter: &RequestFilter,
        before: Option<&PaymentRequestId>,
        limit: usize,
    ) -> Result<Vec<PaymentRequest>, StoreError> {
        let s = self.r();
        let below = match before {
            Some(b) => s.payment_requests.range::<PaymentRequestId, _>(..b),
            None => s.payment_requests.range::<PaymentRequestId, _>(..),
        };
        Ok(below
            .rev()
            .map(|(_, r)| r)
            .filter(|r| &r.org_id == org_id && r.mode == mode && filter.state.is_none_or(|st| r.state == st))
            .take(limit)
            .cloned()
            .collect())
    }

    fn open_payment_requests_for_payer(&mut self, mode: Mode, payer: &Msisdn) -> Result<Vec<PaymentRequest>, StoreError> {
        Ok(self
            .r()
            .payment_requests
            .values()
            .filter(|r| r.mode == mode && r.state == RequestState::Open && r.payer_msisdn.as_ref() == Some(payer))
            .cloned()
            .collect())
    }

    fn lock_due_payment_requests(&mut self, now: Timestamp, limit: usize) -> Result<Vec<PaymentRequest>, StoreError> {
        let mut due: Vec<PaymentRequest> =
            self.r().payment_requests.values().filter(|r| r.state == RequestState::Open && r.expires_at <= now).cloned().collect();
        due.sort_by(|a, b| (a.expires_at, &a.id).cmp(&(b.expires_at, &b.id)));
        due.truncate(limit);
        Ok(due)
    }
}
