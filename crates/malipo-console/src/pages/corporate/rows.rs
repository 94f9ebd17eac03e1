//! What the corporate pages share: where Bulk payouts live, a batch as a table row, and the
//! names of the organisation's people (a batch's maker and checker).

use malipo_core::UserId;
use malipo_payouts::BulkPayout;

use crate::pages::local_time::LocalTime;
use crate::session::Person;
use crate::{format, run, Console, ConsoleError};

/// Where Bulk payouts live.
pub const BULK_PATH: &str = "/console/bulk-payouts";

/// The names of the organisation's people, to name a batch's maker and checker.
pub struct Names(Vec<(UserId, String)>);

impl Names {
    /// The names `who` may read.
    ///
    /// # Errors
    /// The use case's.
    pub async fn of(console: &Console, who: &Person) -> Result<Names, ConsoleError> {
        let w = who.0.clone();
        Ok(Names(run(console, move |p| p.people().names(&w)).await?))
    }

    /// A maker or checker as a person reads it: a person's name, or the key pair's client id.
    pub fn name(&self, client_id: &str, person: Option<&UserId>) -> String {
        let named = |id: &UserId| self.0.iter().find(|(u, _)| u == id).map(|(_, n)| n.clone());
        match person {
            Some(p) if p.as_str() == client_id => named(p).unwrap_or_else(|| client_id.to_owned()),
            Some(p) => format!("{client_id} ({})", named(p).unwrap_or_else(|| p.to_string())),
            None => client_id.to_owned(),
        }
    }
}

/// A batch as a row of a table, and the facts of its page.
pub struct BatchRow {
    /// `bp_…`.
    pub id: String,
    /// The batch's reference.
    pub reference: String,
    /// Its state's wire name.
    pub state: &'static str,
    /// Who made it.
    pub maker: String,
    /// Who approved or rejected it, once one did.
    pub checker: Option<String>,
    /// How many items.
    pub items: u32,
    /// Items still to be paid.
    pub pending: u32,
    /// Items paid.
    pub completed: u32,
    /// Items failed.
    pub failed: u32,
    /// The items' total.
    pub total: String,
    /// The items' fees.
    pub fees: String,
    /// When made, in the organisation's time zone.
    pub created: String,
    /// The checker's reason, once rejected.
    pub rejection: Option<String>,
    /// Whether nothing will change any more (completed or rejected).
    pub settled: bool,
}

impl BatchRow {
    /// The row of `b`.
    pub fn of(b: &BulkPayout, names: &Names, clock: &LocalTime) -> BatchRow {
        let checker = match (&b.approved_by, &b.rejected_by) {
            (Some(by), _) => Some(names.name(by, b.approved_by_person.as_ref())),
            (None, Some(by)) => Some(names.name(by, b.rejected_by_person.as_ref())),
            (None, None) => None,
        };
        BatchRow {
            id: b.id.to_string(),
            reference: b.reference.clone(),
            state: b.state.as_str(),
            maker: names.name(&b.created_by, b.created_by_person.as_ref()),
            checker,
            items: b.item_count,
            pending: b.counts.pending,
            completed: b.counts.completed,
            failed: b.counts.failed,
            total: format::money(b.total_amount, b.currency),
            fees: format::money(b.total_fees, b.currency),
            created: clock.time(b.created_at),
            rejection: b.rejection_reason.clone(),
            settled: matches!(b.state, malipo_payouts::BatchState::Completed | malipo_payouts::BatchState::Rejected),
        }
    }
}
