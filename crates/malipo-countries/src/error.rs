//! Why a countries file was refused.

use std::path::PathBuf;
use std::sync::Arc;

/// Why the per-country configuration could not be loaded. The `Display` text names the bad entry
/// (`countries[KE].fees.charge.bands[2]: overlaps band 1`) so that start-up can stop with it.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read countries file {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error (shared so that the error stays `Clone`).
        #[source]
        source: Arc<std::io::Error>,
    },
    /// Not valid TOML, or a field is unknown, missing or of the wrong type. The TOML error carries
    /// the line, the column and the key.
    #[error("countries file: {0}")]
    Toml(#[from] toml::de::Error),
    /// A value breaks a rule.
    #[error("{entry}: {reason}")]
    Invalid {
        /// Where: `countries[KE].kyc_tiers[1].daily`.
        entry: String,
        /// What is wrong with it.
        reason: String,
    },
}

impl ConfigError {
    /// An [`ConfigError::Invalid`] for `entry`.
    pub fn invalid(entry: impl Into<String>, reason: impl Into<String>) -> Self {
        ConfigError::Invalid { entry: entry.into(), reason: reason.into() }
    }

    /// The entry a [`ConfigError::Invalid`] names; `None` for the other kinds.
    pub fn entry(&self) -> Option<&str> {
        match self {
            ConfigError::Invalid { entry, .. } => Some(entry),
            ConfigError::Io { .. } | ConfigError::Toml(_) => None,
        }
    }
}
