//! What every agent page shares: who may open it, and the float's account kind.

use malipo_auth::Permission;

use crate::session::Person;
use crate::ConsoleError;

/// The float account's kind, as the transactions use case names it.
pub(super) const FLOAT: &str = "agent_float";

/// The agent's pages are for people who may handle an agent's cash (the one table).
pub(super) fn require_agent(who: &Person) -> Result<(), ConsoleError> {
    who.require(Permission::AgentCash)
}
