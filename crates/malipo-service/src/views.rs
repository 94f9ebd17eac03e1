//! Views: what one use case's transaction may touch. A use case runs its closure through a view
//! (`OnWallets::read(store, |tx| …)`), and the closure is given the transaction narrowed to that
//! view's ports, so the compiler, not a reviewer, says what the use case can reach. Adapters and
//! the contract suite keep the whole [`Tx`] ([`ports::write`] and the others).

use crate::error::ServiceError;
use crate::ports::{
    self, AuditRepo, AuthRepo, BulkRepo, CallbackFlow, ChainRepo, ChargeBatchFlow, ChargeFlow, ChargeRepo, DeliveryFlow, EndpointRepo,
    IdempotencyRepo, LedgerRepo, OrgFlow, OutboxRepo, PaymentRequestRepo, PayoutFlow, PayoutRepo, PeopleFlow, ReportFlow, RequestFlow,
    ReversalFlow, ReversalRepo, SessionRepo, Store, Tx, UserRepo, UssdFlow, UssdRepo, WalletRepo,
};

/// A narrowing of the whole transaction to a few ports.
pub trait View {
    /// The narrowed transaction.
    type Of<'a>: ?Sized;

    /// Narrows `tx`.
    fn narrow<'a>(tx: &'a mut (dyn Tx + 'a)) -> &'a mut Self::Of<'a>;

    /// [`ports::write`] through this view.
    ///
    /// # Errors
    /// As [`Store::run`].
    fn write<T>(store: &dyn Store, mut f: impl for<'a> FnMut(&'a mut Self::Of<'a>) -> Result<T, ServiceError>) -> Result<T, ServiceError> {
        ports::write(store, |tx| f(Self::narrow(tx)))
    }

    /// [`ports::read`] through this view.
    ///
    /// # Errors
    /// As [`Store::read`].
    fn read<T>(store: &dyn Store, mut f: impl for<'a> FnMut(&'a mut Self::Of<'a>) -> Result<T, ServiceError>) -> Result<T, ServiceError> {
        ports::read(store, |tx| f(Self::narrow(tx)))
    }

    /// [`ports::report`] through this view.
    ///
    /// # Errors
    /// As [`Store::report`].
    fn report<T>(store: &dyn Store, mut f: impl for<'a> FnMut(&'a mut Self::Of<'a>) -> Result<T, ServiceError>) -> Result<T, ServiceError> {
        ports::report(store, |tx| f(Self::narrow(tx)))
    }

    /// [`ports::query`] through this view.
    ///
    /// # Errors
    /// As [`Store::query`].
    fn query<T>(store: &dyn Store, mut f: impl for<'a> FnMut(&'a mut Self::Of<'a>) -> Result<T, ServiceError>) -> Result<T, ServiceError> {
        ports::query(store, |tx| f(Self::narrow(tx)))
    }

    /// [`ports::autocommit`] through this view.
    ///
    /// # Errors
    /// As [`Store::autocommit`].
    fn autocommit<T>(
        store: &dyn Store,
        mut f: impl for<'a> FnMut(&'a mut Self::Of<'a>) -> Result<T, ServiceError>,
    ) -> Result<T, ServiceError> {
        ports::autocommit(store, |tx| f(Self::narrow(tx)))
    }
}

/// Declares each view's marker and its narrowing to a supertrait of [`Tx`].
macro_rules! views {
    ($( $(#[$doc:meta])* $marker:ident => $ports:ident;)*) => {
        $(
            $(#[$doc])*
            #[derive(Debug, Clone, Copy)]
            pub struct $marker;

            impl View for $marker {
                type Of<'a> = dyn $ports + 'a;

                fn narrow<'a>(tx: &'a mut (dyn Tx + 'a)) -> &'a mut (dyn $ports + 'a) {
                    tx
                }
            }
        )*
    };
}

views! {
    /// A wallet read or write alone.
    OnWallets => WalletRepo;
    /// Organisations, credentials and tokens.
    OnAuth => AuthRepo;
    /// The ledger alone.
    OnLedger => LedgerRepo;
    /// The audit chain's seals.
    OnChain => ChainRepo;
    /// Charges alone.
    OnCharges => ChargeRepo;
    /// USSD sessions alone.
    OnUssd => UssdRepo;
    /// Webhook endpoints alone.
    OnEndpoints => EndpointRepo;
    /// The outbox alone.
    OnOutbox => OutboxRepo;
    /// Payouts alone.
    OnPayouts => PayoutRepo;
    /// Bulk payouts alone.
    OnBulk => BulkRepo;
    /// Reversals alone.
    OnReversals => ReversalRepo;
    /// Payment requests alone.
    OnRequests => PaymentRequestRepo;
    /// People alone.
    OnUsers => UserRepo;
    /// Console sessions alone.
    OnSessions => SessionRepo;
    /// The audit log alone.
    OnAudit => AuditRepo;
    /// Idempotency keys alone.
    OnKeys => IdempotencyRepo;
    /// What moving a charge through its states touches: the charge, the payer's wallet and its
    /// limits, the ledger, and the outbox that reports the move. The shared rules that move
    /// charges (`lifecycle.rs`) are bound to it, not to the whole [`Tx`].
    Charging => ChargeFlow;
    /// What settling payouts touches: the payouts and their batches, the payees' wallets, the
    /// ledger (its lines queued for hot accounts), and the outbox (`payouts/worker.rs`).
    PayingOut => PayoutFlow;
    /// What a reversal touches: the reversal, the charge or payout it gives back, the wallet it
    /// credits, the ledger, and the outbox (`reversals.rs`).
    Reversing => ReversalFlow;
    /// Reads across the money records (transactions, statements, reports).
    Reporting => ReportFlow;
    /// Who people are and what they did: people, sessions, organisations, the audit log.
    Staffing => PeopleFlow;
    /// What advancing a chunk of charges in one transaction touches: [`Charging`]'s ports, the
    /// queue that writes the chunk's journals and events together, and a savepoint per charge
    /// (`processing.rs`).
    ChargingInBatches => ChargeBatchFlow;
    /// What a payment request touches: the request, the merchant's name and accounts, and
    /// [`Charging`]'s ports for paying it (`payment_requests`).
    Requesting => RequestFlow;
    /// What the transaction that claims a USSD session touches: the session, and
    /// [`Requesting`]'s ports for the reads and approvals done in it (`ussd`).
    Dialling => UssdFlow;
    /// What opening an organisation touches: organisations and credentials, accounts, and the
    /// audit log (`access.rs`).
    Onboarding => OrgFlow;
    /// What sending webhooks touches: the outbox and the endpoints (`webhooks/delivery.rs`).
    Delivering => DeliveryFlow;
    /// What sending callbacks touches: the callbacks, the callback secrets and the credentials
    /// that asked (`callbacks.rs`).
    CallingBack => CallbackFlow;
}
