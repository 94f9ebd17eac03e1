//! The two modes: `test` (sandbox) and `live`. A credential decides the mode; objects never cross.

use std::fmt;
use std::str::FromStr;

/// Sandbox or live. Every object carries one; each mode has its own ledger.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// The sandbox: test credentials, simulated customers.
    Test,
    /// Real money.
    Live,
}

impl Mode {
    /// Both modes, test first.
    pub const ALL: [Mode; 2] = [Mode::Test, Mode::Live];

    /// The wire and storage name (`test` or `live`).
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Test => "test",
            Mode::Live => "live",
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The text was neither `test` nor `live`.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("mode must be `test` or `live`, got `{0}`")]
pub struct ParseModeError(pub String);

impl FromStr for Mode {
    type Err = ParseModeError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "test" => Ok(Mode::Test),
            "live" => Ok(Mode::Live),
            other => Err(ParseModeError(other.to_owned())),
        }
    }
}
