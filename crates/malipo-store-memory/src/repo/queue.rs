//! [`WriteQueue`]: journals posted whole and events held back until a read could see them, a
//! savepoint or the commit, as the SQL adapters hold them (there to write them together; here
//! so that the service's callers meet a refusal where those adapters report it).

use malipo_service::{LedgerRepo, QueuedWrites, StoreError, WriteQueue};

use crate::tx::MemoryTx;

impl WriteQueue for MemoryTx<'_> {
    fn queue_writes(&mut self) {
        self.queued.get_or_insert_with(QueuedWrites::default);
    }
}

impl MemoryTx<'_> {
    /// Writes everything queued: before a savepoint and before the commit.
    pub(crate) fn flush_queued(&mut self) -> Result<(), StoreError> {
        self.flush_events()?;
        self.flush_journals()
    }

    /// Posts the queued journals in order: before every other ledger call.
    pub(crate) fn flush_journals(&mut self) -> Result<(), StoreError> {
        QueuedWrites::take_journals(&mut self.queued).iter().try_for_each(|j| self.post_journal(j))
    }

    /// Inserts the queued events in order: before every other outbox call.
    pub(crate) fn flush_events(&mut self) -> Result<(), StoreError> {
        QueuedWrites::take_events(&mut self.queued).iter().try_for_each(|e| self.insert_event_now(e))
    }
}
