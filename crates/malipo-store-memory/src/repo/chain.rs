//! [`ChainRepo`] over the in-memory tables: journals are posted unsealed and sealed here, as the
//! SQL adapters do.

use malipo_ledger::{ChainLink, GENESIS_HASH};
use malipo_service::{ChainRepo, StoreError, UnsealedStats};

use crate::state::LedgerHead;
use crate::tx::MemoryTx;

impl ChainRepo for MemoryTx<'_> {
    fn seal_pending(&mut self, limit: usize) -> Result<usize, StoreError> {
        self.flush_journals()?;
        let s = self.w()?;
        // Ledger by ledger, each in (created_at, id) order, as the SQL adapters read them.
        let mut pending: Vec<usize> = s.journals.iter().enumerate().filter(|(_, cj)| cj.link.is_none()).map(|(i, _)| i).collect();
        pending.sort_by(|&a, &b| {
            let (a, b) = (&s.journals[a].journal, &s.journals[b].journal);
            (a.mode, a.currency, a.created_at, &a.id).cmp(&(b.mode, b.currency, b.created_at, &b.id))
        });
        pending.truncate(limit);
        for &i in &pending {
            let cj = &mut s.journals[i];
            let ledger = (cj.journal.mode, cj.journal.currency);
            let link = match s.heads.get(&ledger) {
                Some(head) => ChainLink::after(head.seq, &head.hash, &cj.journal),
                None => ChainLink::after(0, GENESIS_HASH, &cj.journal),
            };
            s.heads.insert(ledger, LedgerHead { seq: link.seq, hash: link.hash.clone() });
            cj.link = Some(link);
        }
        Ok(pending.len())
    }

    fn unsealed_stats(&mut self) -> Result<UnsealedStats, StoreError> {
        self.flush_journals()?;
        let unsealed = self.r().journals.iter().filter(|cj| cj.link.is_none());
        let (count, oldest) = unsealed.fold((0_u64, None), |(n, oldest), cj| {
            let t = cj.journal.created_at;
            (n.saturating_add(1), Some(oldest.map_or(t, |o: malipo_core::Timestamp| o.min(t))))
        });
        Ok(UnsealedStats { count, oldest })
    }
}
