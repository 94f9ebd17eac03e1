//! What every command's parsing shares: the [`Command`] trait, the [`ParseContext`] it reads,
//! and the field checks several commands make.

use malipo_auth::Principal;
use malipo_core::{Clock, Mode, Msisdn, Timestamp};
use malipo_countries::{Countries, Country};
use malipo_webhooks::UrlPolicy;

use crate::config::WebhookConfig;
use crate::error::{FieldError, ServiceError};

/// A use case's input, parsed once at the edge from what a front end received (its raw input:
/// text, as the caller typed or sent it). A command's fields are typed (numbers, exact amounts,
/// prefixed ids, enums) or checked (references, names), and only its `parse` makes one
/// (commands are `#[non_exhaustive]`), so a use case never sees unchecked text.
///
/// Parsing reads configuration only (countries, the caller's country and mode, the clock),
/// never the store: rules that need stored state (funds, states, limits, a currency against
/// the merchant's) stay in the use case. Front ends call it through
/// [`crate::Platform::parse`].
pub trait Command: Sized {
    /// The raw input: what the front end received, as text.
    type Raw: ?Sized;

    /// Parses `raw` for the caller `ctx` describes, reporting every field's problem at once
    /// ([`ServiceError::Validation`], fields named as the API names them), or
    /// [`ServiceError::NotFound`] for an id that cannot name anything.
    ///
    /// # Errors
    /// As above; each command names its own.
    fn parse(raw: &Self::Raw, ctx: &ParseContext<'_>) -> Result<Self, ServiceError>;
}

/// What parsing may consult: the served countries, the caller, the webhook URL policy and the
/// clock. No store.
pub struct ParseContext<'a> {
    countries: &'a Countries,
    principal: &'a Principal,
    webhooks: &'a WebhookConfig,
    clock: &'a dyn Clock,
}

impl<'a> ParseContext<'a> {
    /// The context of `principal`'s requests.
    pub(crate) fn new(countries: &'a Countries, principal: &'a Principal, webhooks: &'a WebhookConfig, clock: &'a dyn Clock) -> Self {
        ParseContext { countries, principal, webhooks, clock }
    }

    /// The served countries.
    pub(crate) fn countries(&self) -> &'a Countries {
        self.countries
    }

    /// The caller's country (its currency, maximum charge, fees).
    ///
    /// # Errors
    /// [`ServiceError::Internal`] when the organisation names a country no longer configured.
    pub(crate) fn home(&self) -> Result<&'a Country, ServiceError> {
        let code = &self.principal.country;
        self.countries.get(code).ok_or_else(|| ServiceError::Internal(format!("country {code} is not configured")))
    }

    /// The caller's mode.
    pub(crate) fn mode(&self) -> Mode {
        self.principal.mode
    }

    /// The webhook URL policy of the caller's mode.
    pub(crate) fn url_policy(&self) -> UrlPolicy {
        self.webhooks.policy(self.principal.mode)
    }

    /// The time now.
    pub(crate) fn now(&self) -> Timestamp {
        self.clock.now()
    }
}

/// Parses a phone number of a served country given in `field`, reporting its problem there.
pub(crate) fn msisdn<'c>(countries: &'c Countries, field: &str, text: &str, errors: &mut Vec<FieldError>) -> Option<(Msisdn, &'c Country)> {
    match countries.parse_msisdn(text) {
        Ok(found) => Some(found),
        Err(e) => {
            errors.push(FieldError::new(field, "invalid_msisdn", format!("{field} {e}")));
            None
        }
    }
}

/// The command of fields whose problems are in `errors`: refused with them all, if any.
///
/// # Errors
/// [`ServiceError::Validation`] with `errors`.
pub(crate) fn checked<T>(errors: Vec<FieldError>, value: Option<T>) -> Result<T, ServiceError> {
    match value {
        Some(v) if errors.is_empty() => Ok(v),
        _ if errors.is_empty() => Err(ServiceError::Internal("validated fields missing".into())),
        _ => Err(ServiceError::Validation(errors)),
    }
}

/// Refuses a caller outside test mode: the sandbox's commands exist in test mode only.
///
/// # Errors
/// [`ServiceError::TestModeOnly`].
pub(crate) fn test_mode_only(ctx: &ParseContext<'_>) -> Result<(), ServiceError> {
    if ctx.mode() == Mode::Test {
        Ok(())
    } else {
        Err(ServiceError::TestModeOnly)
    }
}

/// A fixed context for the parse functions' unit tests: Kenya's test mode at 2026-11-24 09:00 UTC.
#[cfg(test)]
pub(crate) mod testing {
    use malipo_auth::{OrgKind, Principal, Scopes};
    use malipo_core::{Clock, Mode, OrgId, Timestamp};
    use malipo_countries::Countries;

    use crate::config::WebhookConfig;

    pub(crate) struct Fixed;

    impl Clock for Fixed {
        fn now(&self) -> Timestamp {
            Timestamp::from_micros(1_795_510_800_000_000)
        }
    }

    /// A caller of `kind` in Kenya, in `mode`.
    pub(crate) fn principal(kind: OrgKind, mode: Mode) -> Principal {
        Principal {
            client_id: "ck_test".into(),
            org_id: OrgId::new(),
            org_kind: kind,
            country: "KE".into(),
            mode,
            scopes: Scopes::default(),
            person: None,
            role: None,
        }
    }

    /// The built-in countries and default webhook settings.
    pub(crate) fn config() -> (Countries, WebhookConfig) {
        (Countries::builtin().unwrap_or_else(|e| panic!("{e}")), WebhookConfig::default())
    }
}
