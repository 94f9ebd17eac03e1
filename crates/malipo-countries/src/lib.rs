//! Per-country configuration of Malipo: numbering plans, currencies, time zones, ID types, PIN
//! rules, KYC tiers with their limits, and fee schedules. Loaded from a versioned TOML file
//! (`config/countries.toml` is built in) and validated at start-up; a bad file is refused with a
//! message naming the entry. Pure domain crate: no I/O except [`Countries::load`].

mod country;
mod error;
mod fees;
mod file;

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

pub use country::{Country, IdType, KycTier};
pub use error::ConfigError;
pub use fees::{FeeBand, FeeOperation, FeePayer, FeeSchedule, UnknownName};
use malipo_core::{Currency, Msisdn, MsisdnError};

/// The countries file shipped in the repository.
pub const BUILTIN_TOML: &str = include_str!("../../../config/countries.toml");

/// The served countries, validated, in file order.
#[derive(Clone, Debug)]
pub struct Countries {
    countries: Vec<Country>,
}

impl Countries {
    /// The file shipped in the repository (`config/countries.toml`, built into the binary).
    ///
    /// # Errors
    /// When the shipped file is invalid (a test guards against it).
    pub fn builtin() -> Result<Self, ConfigError> {
        Self::from_toml_str(BUILTIN_TOML)
    }

    /// Parses and validates a countries file's text.
    ///
    /// # Errors
    /// [`ConfigError::Toml`] for bad TOML and unknown, missing or mistyped fields;
    /// [`ConfigError::Invalid`] for values that break a rule.
    pub fn from_toml_str(text: &str) -> Result<Self, ConfigError> {
        file::parse(text).map(|countries| Countries { countries })
    }

    /// Reads, parses and validates a countries file.
    ///
    /// # Errors
    /// [`ConfigError::Io`] naming the path when it cannot be read; otherwise as
    /// [`Countries::from_toml_str`].
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ConfigError::Io { path: path.to_owned(), source: Arc::new(e) })?;
        Self::from_toml_str(&text)
    }

    /// Every country, in file order.
    pub fn all(&self) -> &[Country] {
        &self.countries
    }

    /// The country with ISO 3166-1 alpha-2 code `code` (e.g. `KE`).
    pub fn get(&self, code: &str) -> Option<&Country> {
        self.countries.iter().find(|c| c.code == code)
    }

    /// Parses a phone number: syntax via [`Msisdn::parse`], then the country by dialling-code
    /// prefix, then the length of that country's numbering plan.
    ///
    /// # Errors
    /// [`MsisdnError::Syntax`], [`MsisdnError::UnknownCountry`] or [`MsisdnError::Length`].
    pub fn parse_msisdn(&self, text: &str) -> Result<(Msisdn, &Country), MsisdnError> {
        let msisdn = Msisdn::parse(text)?;
        let country = self.for_msisdn(&msisdn)?;
        Ok((msisdn, country))
    }

    /// The country of a syntactically valid MSISDN (no two dialling codes are prefixes of one
    /// another, so at most one matches).
    ///
    /// # Errors
    /// [`MsisdnError::UnknownCountry`] when no dialling code matches; [`MsisdnError::Length`] when
    /// the number's length is not the country's.
    pub fn for_msisdn(&self, msisdn: &Msisdn) -> Result<&Country, MsisdnError> {
        let digits = msisdn.as_str();
        let country = self
            .countries
            .iter()
            .find(|c| digits.starts_with(&c.dialling_code))
            .ok_or(MsisdnError::UnknownCountry)?;
        if digits.len() == country.msisdn_length {
            Ok(country)
        } else {
            Err(MsisdnError::Length { expected: country.msisdn_length })
        }
    }

    /// The distinct currencies of the served countries, sorted.
    pub fn currencies(&self) -> Vec<Currency> {
        self.countries.iter().map(|c| c.currency).collect::<BTreeSet<_>>().into_iter().collect()
    }
}
