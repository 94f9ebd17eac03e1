//! The event renderer: the wire forms of events, implemented by the HTTP adapter, which owns the
//! JSON. The use cases write events into the outbox in the transaction of the change they
//! report, so they need each event's body at that moment without knowing its format.

use malipo_charges::Charge;
use malipo_core::MinorUnit;
use malipo_payouts::{BulkPayout, Payout, Reversal};
use malipo_requests::PaymentRequest;
use malipo_webhooks::{Event, Summary};

/// Renders the wire forms of events.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
pub trait EventRenderer: Send + Sync {
    /// A charge as the API shows it (the event's `data`), and the seed's top-level fields.
    fn charge(&self, charge: &Charge) -> (Vec<u8>, Summary);
    /// A cash-out (a prompt of kind `cash_out`) as the API shows it, and its summary.
    fn cash_out(&self, cash_out: &Charge) -> (Vec<u8>, Summary);
    /// A payout as the API shows it, with `payout_account_available` (the payout account's
    /// available balance right after it settled) added to the event's `data`.
    fn payout(&self, payout: &Payout, payout_account_available: MinorUnit) -> (Vec<u8>, Summary);
    /// A bulk payout batch as the API shows it.
    fn bulk_payout(&self, batch: &BulkPayout) -> (Vec<u8>, Summary);
    /// A reversal as the API shows it.
    fn reversal(&self, reversal: &Reversal) -> (Vec<u8>, Summary);
    /// A merchant payment request as the API shows it.
    fn payment_request(&self, request: &PaymentRequest) -> (Vec<u8>, Summary);
    /// The body of one delivery attempt: the envelope at `timestamp` with the body `signature`.
    fn delivery_body(&self, event: &Event, timestamp: i64, signature: &str) -> Vec<u8>;
}

/// Renders nothing useful: for platforms without an HTTP adapter (the CLI, tests of rules).
#[derive(Debug, Default)]
pub struct NoRenderer;

impl EventRenderer for NoRenderer {
    fn charge(&self, charge: &Charge) -> (Vec<u8>, Summary) {
        (b"{}".to_vec(), Summary { state: Some(charge.state.as_str().to_owned()), ..Summary::default() })
    }
    fn cash_out(&self, cash_out: &Charge) -> (Vec<u8>, Summary) {
        self.charge(cash_out)
    }
    fn payout(&self, payout: &Payout, _: MinorUnit) -> (Vec<u8>, Summary) {
        (b"{}".to_vec(), Summary { state: Some(payout.state.as_str().to_owned()), ..Summary::default() })
    }
    fn bulk_payout(&self, batch: &BulkPayout) -> (Vec<u8>, Summary) {
        (b"{}".to_vec(), Summary { state: Some(batch.state.as_str().to_owned()), ..Summary::default() })
    }
    fn reversal(&self, _: &Reversal) -> (Vec<u8>, Summary) {
        (b"{}".to_vec(), Summary { state: Some("completed".to_owned()), ..Summary::default() })
    }
    fn payment_request(&self, request: &PaymentRequest) -> (Vec<u8>, Summary) {
        (b"{}".to_vec(), Summary { state: Some(request.state.as_str().to_owned()), ..Summary::default() })
    }
    fn delivery_body(&self, _: &Event, _: i64, _: &str) -> Vec<u8> {
        b"{}".to_vec()
    }
}
