//! Who may call which use case: the one table every front door goes through. Each use case asks
//! [`require`] first, so a front end that forgets its own check (or never had one) opens no hole.
//! A credential is admitted by its scopes, a person by their role's permissions
//! ([`malipo_auth::Role::may`]); the REST API and the console check the same rules first only to
//! answer in their own words.

use malipo_auth::{Need, Permission as P, Principal, Scope as S};

use crate::error::ServiceError;

/// Refuses a caller `need` does not admit.
///
/// # Errors
/// [`ServiceError::Forbidden`] with the reason.
pub(crate) fn require(principal: &Principal, need: &Need) -> Result<(), ServiceError> {
    match principal.refusal(need) {
        None => Ok(()),
        Some(why) => Err(ServiceError::Forbidden(why)),
    }
}

const fn need(scopes: &'static [S], permissions: &'static [P]) -> Need {
    Need { scopes, permissions }
}

/// Any credential, whatever its scopes (no person: the console shows their organisation).
pub(crate) const ANY_CREDENTIAL: Need = need(&S::ALL, &[]);
/// Create a charge (an integrator's call; no console page makes one).
pub(crate) const CREATE_CHARGE: Need = need(&[S::Payments], &[]);
/// Read charges, balances, accounts and statements.
pub(crate) const READ_PAYMENTS: Need = need(&[S::Payments], &[P::Read]);
/// Create and cancel payment requests.
pub(crate) const REQUEST_PAYMENT: Need = need(&[S::Payments], &[P::PaymentRequest]);
/// Pay one person.
pub(crate) const PAY_OUT: Need = need(&[S::Payouts], &[P::Payout]);
/// Read payouts.
pub(crate) const READ_PAYOUTS: Need = need(&[S::Payouts], &[P::Read]);
/// Upload a bulk payout (the maker).
pub(crate) const UPLOAD_BULK: Need = need(&[S::BulkCreate], &[P::UploadBulk]);
/// Approve or reject a bulk payout (the checker).
pub(crate) const APPROVE_BULK: Need = need(&[S::BulkApprove], &[P::ApproveBulk]);
/// Read bulk payouts.
pub(crate) const READ_BULK: Need = need(&[S::BulkCreate, S::BulkApprove, S::Payouts], &[P::Read]);
/// Reverse a charge or payout.
pub(crate) const REVERSE: Need = need(&[S::Reversals], &[P::Refund]);
/// Read reversals (the console shows a refund it has made).
pub(crate) const READ_REVERSALS: Need = need(&[S::Reversals], &[P::Read]);
/// Move money between the organisation's own accounts.
pub(crate) const TRANSFER: Need = need(&[S::Payments], &[P::Transfer]);
/// Read and rotate the organisation's callback secret (any credential that may make what a
/// callback reports; in the console, whoever manages webhooks).
pub(crate) const MANAGE_CALLBACKS: Need =
    need(&[S::Payments, S::Payouts, S::BulkCreate, S::BulkApprove, S::Reversals, S::Agent], &[P::ManageWebhooks]);
/// Add, rotate and delete webhook endpoints; redeliver events.
pub(crate) const MANAGE_WEBHOOKS: Need = need(&[S::Payments], &[P::ManageWebhooks]);
/// Read webhook endpoints and events.
pub(crate) const READ_WEBHOOKS: Need = need(&[S::Payments], &[P::ManageWebhooks]);
/// Read transactions and the daily reconciliation (an agent reads their float's).
pub(crate) const READ_TRANSACTIONS: Need = need(&[S::Payments, S::Payouts, S::Agent], &[P::Read, P::AgentCash]);
/// Export transactions.
pub(crate) const EXPORT_TRANSACTIONS: Need = need(&[S::Payments, S::Payouts, S::Agent], &[P::Export, P::AgentCash]);
/// Cash-in, cash-out and the float.
pub(crate) const AGENT_CASH: Need = need(&[S::Agent], &[P::AgentCash]);
/// The operator's wallet desk.
pub(crate) const WALLETS: Need = need(&[S::Wallets], &[P::Wallets]);
/// Name a wallet's holder before paying them (payouts, cash-in, the operator's desk).
pub(crate) const NAME_PAYEE: Need = need(&[S::Payouts, S::Agent, S::Wallets], &[P::Payout, P::AgentCash, P::Wallets]);
/// The USSD gateway's callback (no person).
pub(crate) const USSD: Need = need(&[S::Ussd], &[]);
/// The sandbox's helpers (an integrator's, with a test credential).
pub(crate) const SANDBOX: Need = need(&[S::Payments], &[]);

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use malipo_auth::{OrgKind, Role, Scopes};
    use malipo_core::{Mode, OrgId};

    use super::*;

    fn caller(kind: OrgKind, scopes: &str, role: Option<Role>) -> Principal {
        Principal {
            client_id: "ck_test_x".into(),
            org_id: OrgId::new(),
            org_kind: kind,
            country: "KE".into(),
            mode: Mode::Test,
            scopes: Scopes::parse(scopes).unwrap(),
            person: None,
            role,
        }
    }

    #[test]
    fn a_credential_needs_a_scope_and_a_person_a_permission() {
        let key = caller(OrgKind::Merchant, "payments", None);
        assert!(require(&key, &READ_PAYMENTS).is_ok());
        let refused = require(&key, &REVERSE).unwrap_err();
        assert_eq!(refused.to_string(), "this token lacks the `reversals` scope");
        // A viewer acts with the `payments` scope, yet may not manage webhooks or refund.
        let viewer = caller(OrgKind::Merchant, "payments", Some(Role::Viewer));
        assert!(require(&viewer, &READ_PAYMENTS).is_ok());
        assert_eq!(require(&viewer, &MANAGE_WEBHOOKS).unwrap_err().to_string(), "a viewer may not do this");
        assert!(require(&viewer, &REVERSE).is_err());
        // A person may never do what only an integrator does.
        let admin = caller(OrgKind::Merchant, "payments payouts reversals", Some(Role::Admin));
        assert!(require(&admin, &CREATE_CHARGE).is_err() && require(&admin, &REVERSE).is_ok());
        let agent = caller(OrgKind::Agent, "agent", Some(Role::Agent));
        assert!(require(&agent, &READ_TRANSACTIONS).is_ok() && require(&agent, &READ_PAYMENTS).is_err());
    }
}
