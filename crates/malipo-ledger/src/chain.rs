//! The audit chain: each journal's hash covers its content and the previous journal's hash in
//! the same ledger (mode and currency), so any change to history breaks every later link.

use sha2::{Digest, Sha256};

use crate::journal::Journal;

/// The `prev_hash` of a ledger's first journal.
pub const GENESIS_HASH: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// SHA-256 (hex) over the previous hash and the journal's canonical text.
pub fn chain_hash(prev_hash: &str, seq: i64, journal: &Journal) -> String {
    let mut h = Sha256::new();
    h.update(prev_hash.as_bytes());
    h.update(
        format!(
            "\n{seq}\n{}\n{}\n{}\n{}\n{}\n{}\n",
            journal.id,
            journal.mode,
            journal.currency,
            journal.kind,
            journal.source_ref,
            journal.created_at.as_micros()
        )
        .as_bytes(),
    );
    for line in &journal.lines {
        h.update(format!("{}:{}\n", line.account, line.amount.get()).as_bytes());
    }
    // Fees were added to the chain later: a journal without fees hashes as before.
    for fee in &journal.fees {
        h.update(format!("fee:{}:{}\n", fee.account, fee.amount.get()).as_bytes());
    }
    hex::encode(h.finalize())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::{JournalKind, JournalLine};
    use malipo_core::{AccountId, Currency, MinorUnit, Mode, Timestamp};

    #[test]
    fn any_change_changes_the_hash() {
        let (a, b) = (AccountId::new(), AccountId::new());
        let j = Journal::new(
            Mode::Test,
            Currency::KES,
            JournalKind::Charge,
            "ch_1",
            vec![
                JournalLine { account: a.clone(), amount: MinorUnit::new(-5) },
                JournalLine { account: b.clone(), amount: MinorUnit::new(5) },
            ],
            Timestamp::from_micros(7),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let h = chain_hash(GENESIS_HASH, 1, &j);
        assert_eq!(h.len(), 64);
        assert_eq!(h, chain_hash(GENESIS_HASH, 1, &j), "deterministic");
        assert_ne!(h, chain_hash(&h, 1, &j), "covers the previous hash");
        assert_ne!(h, chain_hash(GENESIS_HASH, 2, &j), "covers the position");
        let mut tampered = j.clone();
        tampered.lines[0].amount = MinorUnit::new(-6);
        tampered.lines[1].amount = MinorUnit::new(6);
        assert_ne!(h, chain_hash(GENESIS_HASH, 1, &tampered), "covers the amounts");
        let with_fee = j.clone().with_fee(&b, MinorUnit::new(1));
        assert_ne!(h, chain_hash(GENESIS_HASH, 1, &with_fee), "covers the fees");
        let other_fee = j.clone().with_fee(&b, MinorUnit::new(2));
        assert_ne!(chain_hash(GENESIS_HASH, 1, &with_fee), chain_hash(GENESIS_HASH, 1, &other_fee), "covers the fee amounts");
        let none = j.clone().with_fee(&b, MinorUnit::ZERO);
        assert_eq!(h, chain_hash(GENESIS_HASH, 1, &none), "a journal without fees hashes as before fees existed");
        assert_eq!(j.clone().with_fee(&AccountId::new(), MinorUnit::new(1)), j, "a fee on an account without a line is not recorded");
        let mut forged = j.clone();
        forged.fees.push(crate::journal::JournalFee { account: AccountId::new(), amount: MinorUnit::new(1) });
        assert!(matches!(forged.check_balanced(), Err(crate::journal::LedgerError::FeeWithoutLine(_))));
    }
}
