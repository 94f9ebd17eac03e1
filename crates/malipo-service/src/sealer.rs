//! The audit chain's sealer. Posting a journal commits it unsealed and takes no chain lock, so
//! completions, fundings and payouts of one ledger no longer queue on its chain head; the sealer
//! (a worker loop of the app, and `malipo ledger verify` before it verifies) chains committed
//! journals shortly after their commit, in batches, one sealer at a time per ledger.

use std::time::Duration;

use crate::core::Core;
use crate::error::ServiceError;
use crate::ports::UnsealedStats;
use crate::views::{OnChain, OnLedger, View};

/// Journals sealed in one transaction.
pub const SEAL_BATCH: usize = 500;

/// Sealing journals into their ledger's audit chain.
pub struct Sealer<'a> {
    core: &'a Core,
}

impl<'a> Sealer<'a> {
    pub(crate) fn new(core: &'a Core) -> Self {
        Sealer { core }
    }

    /// Seals at most `limit` committed journals in one transaction; returns how many.
    ///
    /// # Errors
    /// Storage failures (nothing is sealed then; a later pass takes the same journals).
    pub fn seal(&self, limit: usize) -> Result<usize, ServiceError> {
        OnChain::write(self.core.store(), |tx| Ok(tx.seal_pending(limit)?))
    }

    /// Seals in batches of [`SEAL_BATCH`] until a batch is not full: every journal committed
    /// before the call is then sealed. Returns how many it sealed.
    ///
    /// # Errors
    /// As [`Sealer::seal`]; the batches before the failure stay sealed.
    pub fn seal_all(&self) -> Result<usize, ServiceError> {
        let mut total = 0_usize;
        loop {
            let n = self.seal(SEAL_BATCH)?;
            total = total.saturating_add(n);
            if n < SEAL_BATCH {
                return Ok(total);
            }
        }
    }

    /// Applies the lines waiting on hot accounts (see
    /// [`crate::ports::LedgerRepo::waiting_accounts`]), at most `accounts` accounts, each in a
    /// transaction of its own, so that one applier holds one account's lock at a time and for a
    /// batch of lines rather than one journal's. Returns how many lines. Nothing depends on it
    /// for correctness (reads of postings apply first, and balances count waiting lines); it
    /// keeps the waiting lines few.
    ///
    /// # Errors
    /// Storage failures (the accounts applied before stay applied).
    pub fn apply_waiting(&self, accounts: usize) -> Result<usize, ServiceError> {
        let waiting = OnLedger::read(self.core.store(), |tx| Ok(tx.waiting_accounts(accounts)?))?;
        let mut applied = 0_usize;
        for account in &waiting {
            applied = applied.saturating_add(OnLedger::write(self.core.store(), |tx| Ok(tx.apply_waiting(account)?))?);
        }
        Ok(applied)
    }

    /// How many journals await their seal, and the oldest one's time.
    ///
    /// # Errors
    /// Storage failures.
    pub fn unsealed(&self) -> Result<UnsealedStats, ServiceError> {
        OnChain::read(self.core.store(), |tx| Ok(tx.unsealed_stats()?))
    }

    /// How long the oldest unsealed journal of `stats` has waited (zero when none waits): the
    /// time during which a journal is not yet protected by its chain.
    pub fn lag(&self, stats: &UnsealedStats) -> Duration {
        let now = self.core.now().as_micros();
        let waited = stats.oldest.map_or(0, |t| now.saturating_sub(t.as_micros()));
        Duration::from_micros(u64::try_from(waited).unwrap_or(0))
    }
}
