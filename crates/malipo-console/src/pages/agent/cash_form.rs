//! The form that cash-in and cash-out share: the customer's phone number and the amount, under
//! the form's one-time key.

use serde::Deserialize;

use crate::csrf_forms;

/// The use case's field names, the form's, and their labels.
pub(super) const FIELDS: [(&str, &str, &str); 2] = [("customer_msisdn", "customer_msisdn", "Phone number"), ("amount", "amount", "Amount")];

/// "Phone number" and "Amount", as typed.
#[derive(Clone, Debug, Default, Deserialize)]
pub(super) struct CashForm {
    #[serde(default)]
    pub(super) csrf_token: String,
    #[serde(default)]
    pub(super) idempotency_key: String,
    #[serde(default)]
    pub(super) customer_msisdn: String,
    #[serde(default)]
    pub(super) amount: String,
}
csrf_forms!(CashForm);
