//! Sealing committed journals into their ledger's audit chain, off the posting path.

use malipo_core::Timestamp;

use crate::error::StoreError;

/// The journals committed but not yet sealed into their chain.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UnsealedStats {
    /// How many.
    pub count: u64,
    /// The oldest one's `created_at` (none when there is none).
    pub oldest: Option<Timestamp>,
}

/// The audit chain's sealer: part of the one transaction handle [`super::Tx`].
///
/// [`super::LedgerRepo::post_journal`] commits a journal unsealed (no `seq`, `prev_hash`, `hash`)
/// and takes no chain lock; the sealer gives committed journals their chain entries afterwards.
pub trait ChainRepo {
    /// Seals at most `limit` committed, unsealed journals, per ledger (mode + currency) in the
    /// order it reads them (`created_at`, then id): each gets `seq` = the ledger head's + 1,
    /// `prev_hash` = the head's hash, `hash` = `malipo_ledger::chain_hash` over them and the
    /// journal as stored (its lines as postings, in line order), and the head moves to it. Holds
    /// the ledger's head locked while it seals (PostgreSQL `FOR UPDATE`), so sealers of several
    /// instances chain one ledger one after the other and never fork it; a sealed journal is
    /// never sealed again. Returns how many it sealed.
    ///
    /// # Errors
    /// Storage failures; nothing is sealed then.
    fn seal_pending(&mut self, limit: usize) -> Result<usize, StoreError>;
    /// How many journals await their seal, and the oldest one's time.
    ///
    /// # Errors
    /// Storage failures.
    fn unsealed_stats(&mut self) -> Result<UnsealedStats, StoreError>;
}
