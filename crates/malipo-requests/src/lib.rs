//! Merchant payment requests (contract section 11): a merchant asks to be paid, a customer pays
//! it from the USSD menu with its pay code. Pure: the state machine decides, the service layer
//! stores and moves the money.

// Integers never meet `+ - *` unchecked here: money goes through `MinorUnit`'s checked
// operations, times saturate (an overflow must not wrap silently).
#![cfg_attr(not(test), deny(clippy::arithmetic_side_effects))]

pub mod pay_code;
pub mod request;

pub use pay_code::{BadPayCode, PayCode, PAY_CODE_DIGITS};
pub use request::{
    PaymentRequest, RequestEvent, RequestFilter, RequestState, TransitionError, UnknownRequestState, DEFAULT_EXPIRES_IN_SECONDS,
    EXPIRES_IN_SECONDS,
};
