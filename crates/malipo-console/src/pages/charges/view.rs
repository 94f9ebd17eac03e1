//! What the Charges pages share: the organisation's country (times and phone numbers), and the
//! state history as shown (on the charge's page and in its live fragment).

use actix_web::web;
use malipo_countries::Country;
use malipo_service::{ChargeStep, SignedIn};

use crate::format;
use crate::{Console, ConsoleError};

/// The person's organisation's country.
///
/// # Errors
/// [`ConsoleError::Internal`] for a country the configuration does not know.
pub(super) fn country(console: &web::Data<Console>, who: &SignedIn) -> Result<Country, ConsoleError> {
    console
        .platform
        .countries()
        .get(&who.org.country)
        .cloned()
        .ok_or_else(|| ConsoleError::Internal(format!("unknown country {}", who.org.country)))
}

/// A step of the state history as shown.
pub(super) struct Step {
    /// The state's name (`authorised`).
    pub(super) state: &'static str,
    /// When, in the country's time zone.
    pub(super) time: String,
}

/// The state history as shown: refreshed on its own while the charge is not final.
pub(super) struct Timeline {
    /// Oldest first.
    pub(super) steps: Vec<Step>,
    /// Whether the charge is final (nothing will be added).
    pub(super) is_final: bool,
}

impl Timeline {
    /// The history `steps` of a charge, final or not, in `country`'s time.
    pub(super) fn new(steps: &[ChargeStep], is_final: bool, country: &Country) -> Self {
        Timeline { steps: steps.iter().map(|s| Step { state: s.state.as_str(), time: format::time(s.at, country) }).collect(), is_final }
    }
}
