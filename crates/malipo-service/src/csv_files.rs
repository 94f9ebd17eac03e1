//! The CSV files Malipo writes, which the API and the console both serve (the transactions
//! export, its day for reconciliation): one writer, so that the two front ends write the same
//! bytes, and one guard against spreadsheet formulas (OWASP "CSV injection").
//!
//! A spreadsheet opening a CSV file reads a cell that starts with `=`, `+`, `-`, `@`, a tab or a
//! carriage return as a formula, which can run commands or send the sheet's data elsewhere. So a
//! column that holds text a person or an integrator typed ([`Column::Text`]: references,
//! narrations, descriptions) is written with a leading `'` where it starts with one of those,
//! which every spreadsheet shows as text. Columns Malipo writes itself ([`Column::Data`]: ids,
//! times, kinds, currencies, amounts) are written as they are, so that `-250.00` stays a number.
//! Records are RFC 4180 (quoted where a field needs it, `\n` line ends), by the `csv` crate.

use std::borrow::Cow;

use malipo_ledger::Transaction;

/// The first characters that make a spreadsheet read a cell as a formula.
pub const FORMULA_STARTS: [char; 6] = ['=', '+', '-', '@', '\t', '\r'];

/// Text as a CSV field that a spreadsheet shows as text: with a leading `'` where it starts
/// with one of [`FORMULA_STARTS`], else as it is.
pub fn formula_safe(text: &str) -> Cow<'_, str> {
    if text.starts_with(FORMULA_STARTS) {
        Cow::Owned(format!("'{text}"))
    } else {
        Cow::Borrowed(text)
    }
}

/// What a column holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Column {
    /// Values Malipo writes (ids, times, kinds, currencies, amounts such as `-250.00`): written
    /// as they are.
    Data,
    /// Text a person or an integrator typed, or that may hold such text: written through
    /// [`formula_safe`].
    Text,
}

/// The shape of a CSV file: its header row and what each column holds.
#[derive(Clone, Copy, Debug)]
pub struct CsvFormat<const N: usize> {
    /// The header row.
    pub header: [&'static str; N],
    /// What each column holds.
    pub columns: [Column; N],
}

impl<const N: usize> CsvFormat<N> {
    /// The header row, as bytes.
    pub fn header_bytes(&self) -> Vec<u8> {
        write_records(std::iter::once(self.header.map(Cow::Borrowed)))
    }

    /// Records in this format, as bytes; the [`Column::Text`] fields guarded.
    pub fn records_bytes(&self, records: &[[String; N]]) -> Vec<u8> {
        write_records(records.iter().map(|r| -> [Cow<'_, str>; N] {
            std::array::from_fn(|i| {
                let field = r.get(i).map_or("", String::as_str);
                match self.columns.get(i) {
                    Some(Column::Data) => Cow::Borrowed(field),
                    _ => formula_safe(field),
                }
            })
        }))
    }
}

/// RFC 4180 records with `\n` line ends.
fn write_records<'a, const N: usize>(records: impl Iterator<Item = [Cow<'a, str>; N]>) -> Vec<u8> {
    let mut w = csv::WriterBuilder::new().terminator(csv::Terminator::Any(b'\n')).from_writer(Vec::new());
    for r in records {
        // Writing to a Vec cannot fail.
        let _ = w.write_record(r.iter().map(|f| f.as_bytes()));
    }
    w.into_inner().unwrap_or_default()
}

/// The transactions export (`GET /transactions/export`, the console's "Export CSV" and
/// "Download CSV"): one row per transaction, in ledger order. `source_ref` is an id today (a
/// charge's, a payout's, an organisation's, a wallet's number), guarded all the same as the one
/// free-text column of the ledger.
pub const TRANSACTIONS: CsvFormat<10> = CsvFormat {
    header: ["transaction_id", "created_at", "type", "source_ref", "account", "amount", "fee", "net", "currency", "balance_after"],
    columns: [
        Column::Data,
        Column::Data,
        Column::Data,
        Column::Text,
        Column::Data,
        Column::Data,
        Column::Data,
        Column::Data,
        Column::Data,
        Column::Data,
    ],
};

/// A transaction's fields in [`TRANSACTIONS`] order: times in RFC 3339 UTC, amounts as in the
/// API (`-250.00`).
pub fn transaction_record(t: &Transaction) -> [String; 10] {
    let c = t.currency;
    [
        t.id.to_string(),
        t.created_at.to_rfc3339(),
        t.type_name().to_owned(),
        t.source_ref.clone(),
        t.account_kind.as_str().to_owned(),
        c.format_amount(t.amount),
        c.format_amount(t.fee),
        c.format_amount(t.net),
        c.to_string(),
        c.format_amount(t.balance_after),
    ]
}

/// Transactions as rows of the export, as bytes.
pub fn transaction_rows(transactions: &[Transaction]) -> Vec<u8> {
    let records: Vec<[String; 10]> = transactions.iter().map(transaction_record).collect();
    TRANSACTIONS.records_bytes(&records)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use malipo_core::{AccountId, Currency, MinorUnit, Timestamp, TransactionId};
    use malipo_ledger::{AccountKind, JournalKind};

    use super::*;

    fn transaction(source_ref: &str, amount: i64) -> Transaction {
        Transaction {
            seq: 3,
            id: TransactionId::from_trusted("tx_1".into()),
            kind: JournalKind::Charge,
            source_ref: source_ref.into(),
            account: AccountId::from_trusted("acc_1".into()),
            account_kind: AccountKind::Collection,
            amount: MinorUnit::new(amount),
            fee: MinorUnit::new(250),
            net: MinorUnit::new(amount - 250),
            currency: Currency::KES,
            balance_after: MinorUnit::new(124_750),
            created_at: Timestamp::from_micros(1_763_805_600_000_000),
        }
    }

    #[test]
    fn the_export_has_the_contracts_header_and_fields_in_order() {
        assert_eq!(
            String::from_utf8(TRANSACTIONS.header_bytes()).unwrap(),
            "transaction_id,created_at,type,source_ref,account,amount,fee,net,currency,balance_after\n"
        );
        assert_eq!(
            String::from_utf8(transaction_rows(&[transaction("ch_1", 25_000)])).unwrap(),
            "tx_1,2025-11-22T10:00:00Z,charge,ch_1,collection,250.00,2.50,247.50,KES,1247.50\n"
        );
    }

    #[test]
    fn typed_text_cannot_become_a_formula_and_amounts_stay_numbers() {
        for (typed, written) in [
            ("=HYPERLINK(\"http://x\")", "'=HYPERLINK(\"http://x\")"),
            ("+254", "'+254"),
            ("-1", "'-1"),
            ("@SUM(A1)", "'@SUM(A1)"),
            ("\tx", "'\tx"),
            ("\rx", "'\rx"),
            ("INV-1", "INV-1"),
            ("", ""),
            (" =1", " =1"),
        ] {
            assert_eq!(formula_safe(typed), written, "{typed:?}");
        }
        // A negative amount is Malipo's, not typed: it stays `-2.50`; a typed source is guarded
        // and quoted as RFC 4180 wants.
        let row = String::from_utf8(transaction_rows(&[transaction("=1+2,\"x\"", -250)])).unwrap();
        assert_eq!(row, "tx_1,2025-11-22T10:00:00Z,charge,\"'=1+2,\"\"x\"\"\",collection,-2.50,2.50,-5.00,KES,1247.50\n");
    }
}
