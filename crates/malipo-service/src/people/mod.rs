//! People who use the console (console contract section 2): invitations, sign-in with the
//! second factor, sessions, enrolment, step-up, the team and the audit log.
//!
//! A front end holds a session token (in a cookie) and asks [`People::session`] on every
//! request for the [`SignedIn`] person behind it; everything a person does is then done as
//! [`SignedIn::principal`], through the same use cases an API credential uses.

pub mod audit;
pub mod enrol;
mod failures;
pub mod keys;
pub mod names;
mod person;
pub(crate) use person::entry;
pub mod sign_in;
pub mod team;

pub use enrol::Enrolment;
pub use person::{People, SignedIn};
pub use sign_in::SignIn;
pub use team::{InvitationView, Invited, Invitee, Inviter};
