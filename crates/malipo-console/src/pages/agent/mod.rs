//! The agent's application (console contract section 4, Agent), made for a phone first (360 px,
//! a slow network: every page under 30 KB compressed with its script and CSS): "Float" (the
//! balance, commission today and this month, today's transactions, and the statement of a
//! period with "Export CSV"), "Cash in" (a confirmation page with the customer's registered
//! name before "Confirm", then a receipt that prints on one page) and "Cash out" (the customer
//! approves with the PIN over USSD; the page waits for them and follows to the receipt or the
//! reason it failed). Each calls the API's use cases (`Agents`, `Transactions`); the moving
//! ones under the form's one-time key, audited as the agent's.

mod cash_form;
mod cash_in;
mod cash_out;
mod float;
mod gate;
mod statement;

use actix_web::web;

/// `/console/float…`, `/console/cash-in…`, `/console/cash-out…`.
pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.configure(float::routes).configure(statement::routes).configure(cash_in::routes).configure(cash_out::routes);
}
