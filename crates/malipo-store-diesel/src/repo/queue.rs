//! [`WriteQueue`] on the transaction's connection: journals posted whole, events and callbacks
//! made due held back and written together (a chunk of charges: one insert of its journals, one
//! of their postings, one update per account, one insert of its events, one update of its
//! callbacks), before any read that could see them, any savepoint and the commit.

use malipo_core::{AccountId, Timestamp};
use malipo_ledger::Journal;
use malipo_service::{QueuedWrites, StoreError, WriteQueue};
use malipo_webhooks::Event;

use crate::repo::callbacks::make_due;
use crate::repo::outbox::insert_event_rows;
use crate::repo::posting;
use crate::tx::DieselTx;

/// At most this many journals or events wait: the statements that write them take a bounded
/// number of shapes (each row count is a statement kept prepared per connection) and bind
/// parameters. A PostgreSQL chunk of 16 charges queues at most 32 journals (a payment and a new
/// wallet's funding each), so it writes them once, the last charge's included, and locks their
/// accounts in one order.
const MAX_QUEUED: usize = 32;

impl WriteQueue for DieselTx<'_> {
    fn queue_writes(&mut self) {
        self.queued.get_or_insert_with(QueuedWrites::default);
    }
}

impl DieselTx<'_> {
    /// Queues `journals` if the transaction queues its writes (`true`), posting the queue once
    /// it is full; `false` when the caller must post them at once.
    pub(crate) fn queue_journals(&mut self, journals: &[&Journal]) -> Result<bool, StoreError> {
        let Some(queued) = self.queued.as_mut() else { return Ok(false) };
        if queued.add_journals(journals.iter().copied()) >= MAX_QUEUED {
            self.flush_journals()?;
        }
        Ok(true)
    }

    /// Queues `events` as [`DieselTx::queue_journals`] queues journals.
    pub(crate) fn queue_events(&mut self, events: &[Event]) -> Result<bool, StoreError> {
        let Some(queued) = self.queued.as_mut() else { return Ok(false) };
        if queued.add_events(events) >= MAX_QUEUED {
            self.flush_events()?;
        }
        Ok(true)
    }

    /// Queues making an object's waiting callbacks due if the transaction queues its writes
    /// (`true`), writing the queue once it is full; `false` when the caller must write at once.
    pub(crate) fn queue_due_callbacks(&mut self, object_id: &str, now: Timestamp) -> Result<bool, StoreError> {
        let Some(queued) = self.queued.as_mut() else { return Ok(false) };
        if queued.add_due_callbacks(object_id, now) >= MAX_QUEUED {
            self.flush_due_callbacks()?;
        }
        Ok(true)
    }

    /// Writes everything queued: before a savepoint and before the commit.
    pub(crate) fn flush_queued(&mut self) -> Result<(), StoreError> {
        self.flush_events()?;
        self.flush_due_callbacks()?;
        self.flush_journals()
    }

    /// Makes the queued objects' callbacks due, one update per time they were queued at (a
    /// chunk's moves share one): before every other callback call.
    pub(crate) fn flush_due_callbacks(&mut self) -> Result<(), StoreError> {
        let due = QueuedWrites::take_due_callbacks(&mut self.queued);
        let mut rest: &[(String, Timestamp)] = &due;
        while let Some((_, now)) = rest.first() {
            let same = rest.iter().take_while(|(_, t)| t == now).count();
            let (these, later) = rest.split_at(same);
            let objects: Vec<&str> = these.iter().map(|(id, _)| id.as_str()).collect();
            let made = make_due(self.conn, &objects, *now);
            self.poisoned |= made.is_err();
            made?;
            rest = later;
        }
        Ok(())
    }

    /// Posts the queued journals together, as `post_journals_whole` would have posted them
    /// call by call: a refusal poisons the transaction. Before every other ledger call.
    pub(crate) fn flush_journals(&mut self) -> Result<(), StoreError> {
        let journals = QueuedWrites::take_journals(&mut self.queued);
        if journals.is_empty() {
            return Ok(());
        }
        let refs: Vec<&Journal> = journals.iter().collect();
        let posted = posting::post_journals(self.conn, self.known, &mut self.learned, &refs).map_err(StoreError::from);
        self.poisoned |= posted.is_err();
        posted
    }

    /// Posts the queued journals if one of them has a line on `account`: before a call on that
    /// one account (its row, its postings, its holds). A call on another account leaves them
    /// queued, so that the commit locks every account of the queue in the posting's order.
    pub(crate) fn flush_journals_on(&mut self, account: &AccountId) -> Result<(), StoreError> {
        if QueuedWrites::touches(&self.queued, account) {
            self.flush_journals()?;
        }
        Ok(())
    }

    /// Inserts the queued events in one statement: a duplicate poisons the transaction. Before
    /// every other outbox call.
    pub(crate) fn flush_events(&mut self) -> Result<(), StoreError> {
        let events = QueuedWrites::take_events(&mut self.queued);
        if events.is_empty() {
            return Ok(());
        }
        let inserted = insert_event_rows(self.conn, &events);
        self.poisoned |= inserted.is_err();
        inserted
    }
}
