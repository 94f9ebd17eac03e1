//! The webhook endpoints and events API's commands (`POST /webhooks/endpoints`, `DELETE …/{id}`,
//! `…/rotate-secret`, `POST /events/{event_id}/redeliver`), parsed.

use malipo_core::{EndpointId, EventId};
use malipo_webhooks::{check_url, EventFilter};

use super::context::{checked, Command, ParseContext};
use crate::error::{FieldError, ServiceError};
use crate::validate::check_optional_text;

/// A new endpoint as received.
#[derive(Clone, Debug, Default)]
pub struct NewEndpoint {
    /// Where to deliver.
    pub url: String,
    /// Event kinds, or `*`.
    pub events: Vec<String>,
    /// Optional text (at most 200 characters).
    pub description: Option<String>,
}

/// An endpoint to register, parsed from [`NewEndpoint`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CreateEndpoint {
    /// The URL, allowed by the caller's mode's policy, normalised.
    pub url: String,
    /// The kinds it receives.
    pub events: EventFilter,
    /// At most 200 printable characters (empty as given).
    pub description: Option<String>,
}

impl Command for CreateEndpoint {
    type Raw = NewEndpoint;

    /// # Errors
    /// [`ServiceError::Validation`]: `url`, `events`, `description`.
    fn parse(new: &NewEndpoint, ctx: &ParseContext<'_>) -> Result<Self, ServiceError> {
        let mut errors = Vec::new();
        let url = match check_url(&new.url, ctx.url_policy()) {
            Ok(u) => Some(u.to_string()),
            Err(e) => {
                errors.push(FieldError::new("url", "invalid_url", format!("url {e}")));
                None
            }
        };
        let events = match EventFilter::parse(&new.events) {
            Ok(f) => Some(f),
            Err(e) => {
                errors.push(FieldError::new("events", "invalid_value", e.to_string()));
                None
            }
        };
        check_optional_text("description", new.description.as_deref(), 200, &mut errors);
        let endpoint = url.zip(events).map(|(url, events)| CreateEndpoint { url, events, description: new.description.clone() });
        checked(errors, endpoint)
    }
}

/// An object the caller names by an id: the id, or `Unknown` when the text is no id of its kind.
/// Such a name finds nothing: the use case answers `not_found` where it answers for an id it does
/// not find (inside its transaction, so that a repeated key is settled first, as for any other).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Named<I> {
    /// A well-formed id.
    Id(I),
    /// Text that is no id of the kind.
    Unknown,
}

impl Named<EndpointId> {
    fn endpoint(text: &str) -> Self {
        EndpointId::parse(text).map_or(Named::Unknown, Named::Id)
    }
}

/// An endpoint to delete or whose secret to rotate, named by its id (`we_…`).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct EndpointTarget {
    /// The endpoint.
    pub endpoint: Named<EndpointId>,
}

impl Command for EndpointTarget {
    type Raw = str;

    /// Never fails: text that is no endpoint id is [`Named::Unknown`].
    ///
    /// # Errors
    /// None.
    fn parse(endpoint_id: &str, _: &ParseContext<'_>) -> Result<Self, ServiceError> {
        Ok(EndpointTarget { endpoint: Named::endpoint(endpoint_id) })
    }
}

/// An event to deliver again, as received.
#[derive(Clone, Debug, Default)]
pub struct NewRedelivery {
    /// The event (`evt_…`).
    pub event_id: String,
    /// One endpoint (`we_…`), or every enabled endpoint subscribed to the event when `None`.
    pub endpoint_id: Option<String>,
}

/// An event to deliver again, parsed from [`NewRedelivery`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Redeliver {
    /// The event.
    pub event: EventId,
    /// One endpoint, or every enabled endpoint subscribed to the event when `None`.
    pub endpoint: Option<Named<EndpointId>>,
}

impl Command for Redeliver {
    type Raw = NewRedelivery;

    /// # Errors
    /// [`ServiceError::NotFound`] for text that is no event id.
    fn parse(new: &NewRedelivery, _: &ParseContext<'_>) -> Result<Self, ServiceError> {
        let event = EventId::parse(&new.event_id).map_err(|_| ServiceError::NotFound)?;
        Ok(Redeliver { event, endpoint: new.endpoint_id.as_deref().map(Named::endpoint) })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use malipo_auth::OrgKind;
    use malipo_core::Mode;

    use super::*;
    use crate::commands::context::testing::{config, principal, Fixed};

    #[test]
    fn every_field_error_of_a_new_endpoint_is_reported_at_once() {
        let (countries, webhooks) = config();
        let live = principal(OrgKind::Merchant, Mode::Live);
        let ctx = ParseContext::new(&countries, &live, &webhooks, &Fixed);
        let new = NewEndpoint { url: "http://example.com/hook".into(), events: Vec::new(), description: Some("d".repeat(201)) };
        let Err(ServiceError::Validation(errors)) = CreateEndpoint::parse(&new, &ctx) else { panic!("refused") };
        let got: Vec<(&str, &str)> = errors.iter().map(|e| (e.field.as_str(), e.code)).collect();
        assert_eq!(got, [("url", "invalid_url"), ("events", "invalid_value"), ("description", "too_long")]);
        let fine = NewEndpoint { url: "https://example.com/hook".into(), events: vec!["*".into()], description: None };
        assert_eq!(CreateEndpoint::parse(&fine, &ctx).unwrap().events, EventFilter::All);
        assert_eq!(EndpointTarget::parse("ch_1", &ctx).unwrap().endpoint, Named::Unknown, "answered inside the use case");
    }
}

/// Replacing the organisation's callback secret in the caller's mode: no input of its own.
#[derive(Clone, Copy, Debug, Default)]
#[non_exhaustive]
pub struct RotateCallbackSecret;

impl Command for RotateCallbackSecret {
    type Raw = ();

    /// Never fails.
    ///
    /// # Errors
    /// None.
    fn parse((): &(), _: &ParseContext<'_>) -> Result<Self, ServiceError> {
        Ok(RotateCallbackSecret)
    }
}
