//! The CSV files Malipo writes, for the API and the console alike (the transactions export and
//! its day for reconciliation, the console's audit log): one writer, so that both front ends
//! write the same bytes, and one guard against spreadsheet formulas (OWASP "CSV injection").
//!
//! Records are RFC 4180 (a field is quoted where it holds a comma, a quote or a line break, or
//! where spaces at either end would be lost) with `\n` line ends. A spreadsheet opening the file
//! reads a cell that starts with `=`, `+`, `-`, `@`, a tab or a carriage return as a formula,
//! which can run commands or send the sheet's data elsewhere; such a field is written with a `'`
//! in front, which every spreadsheet shows as text, so `=HYPERLINK(...)` typed into a reference,
//! a reason or a sign-in's email stays text. A plain number (`-250.00`, `42`) is left as it is:
//! it cannot run as a formula, and a spreadsheet should still add it up.

use malipo_ledger::Transaction;

/// The first characters that make a spreadsheet read a cell as a formula.
pub const FORMULA_STARTS: [char; 6] = ['=', '+', '-', '@', '\t', '\r'];

/// Whether `s` is a plain decimal number: an optional `-`, digits, and optionally `.` and digits.
fn is_plain_number(s: &str) -> bool {
    let digits = s.strip_prefix('-').unwrap_or(s);
    let (whole, fraction) = digits.split_once('.').map_or((digits, None), |(w, f)| (w, Some(f)));
    !whole.is_empty()
        && whole.bytes().all(|b| b.is_ascii_digit())
        && fraction.is_none_or(|f| !f.is_empty() && f.bytes().all(|b| b.is_ascii_digit()))
}

/// One field as written: with a `'` in front if a spreadsheet would run it as a formula, then
/// quoted where RFC 4180 asks (a comma, a quote, a line break) or where spaces at either end
/// would be lost.
pub fn field(value: &str) -> String {
    let risky = value.starts_with(FORMULA_STARTS) && !is_plain_number(value);
    let text = if risky { format!("'{value}") } else { value.to_owned() };
    let needs_quotes = text.contains([',', '"', '\r', '\n']) || text.starts_with(' ') || text.ends_with(' ');
    if needs_quotes {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text
    }
}

/// One record: its fields written by [`field`], separated by commas, ending with `\n`.
pub fn row<S: AsRef<str>>(fields: &[S]) -> String {
    let mut out = fields.iter().map(|f| field(f.as_ref())).collect::<Vec<_>>().join(",");
    out.push('\n');
    out
}

/// The header of the transactions export (`GET /transactions/export`, the console's "Export CSV"
/// and "Download CSV"), one row per transaction in ledger order after it.
pub const TRANSACTIONS_HEADER: [&str; 10] =
    ["transaction_id", "created_at", "type", "source_ref", "account", "amount", "fee", "net", "currency", "balance_after"];

/// The transactions export's header row.
pub fn transactions_header() -> String {
    row(&TRANSACTIONS_HEADER)
}

/// A transaction's fields in [`TRANSACTIONS_HEADER`] order: times in RFC 3339 UTC, amounts as in
/// the API (`-250.00`).
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

/// Transactions as rows of the export.
pub fn transaction_rows(transactions: &[Transaction]) -> String {
    transactions.iter().map(|t| row(&transaction_record(t))).collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use malipo_core::{AccountId, Currency, MinorUnit, Timestamp, TransactionId};
    use malipo_ledger::{AccountKind, JournalKind};

    use super::*;

    #[test]
    fn formulas_are_written_as_text() {
        assert_eq!(field("=1+1"), "'=1+1");
        assert_eq!(field("+254700000000"), "'+254700000000");
        assert_eq!(field("-2+3"), "'-2+3");
        assert_eq!(field("@SUM(A1:A2)"), "'@SUM(A1:A2)");
        assert_eq!(field("\tx"), "'\tx");
        assert_eq!(field("\rx"), "\"'\rx\"");
        assert_eq!(field("=HYPERLINK(\"http://evil.example\",\"x\")"), "\"'=HYPERLINK(\"\"http://evil.example\"\",\"\"x\"\")\"");
        assert_eq!(field("a=b"), "a=b", "only the first character counts");
    }

    #[test]
    fn plain_numbers_stay_numbers() {
        assert_eq!(field("-1250.00"), "-1250.00");
        assert_eq!(field("42"), "42");
        assert_eq!(field("-"), "'-");
        assert_eq!(field("-1."), "'-1.");
        assert_eq!(field("-.5"), "'-.5");
    }

    #[test]
    fn fields_are_quoted_as_rfc_4180_asks() {
        assert_eq!(field("plain"), "plain");
        assert_eq!(field("a,b"), "\"a,b\"");
        assert_eq!(field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(field("two\nlines"), "\"two\nlines\"");
        assert_eq!(field(" padded "), "\" padded \"");
        assert_eq!(field(""), "");
        assert_eq!(row(&["a", "=b", "c,d"]), "a,'=b,\"c,d\"\n");
    }

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
        assert_eq!(transactions_header(), "transaction_id,created_at,type,source_ref,account,amount,fee,net,currency,balance_after\n");
        assert_eq!(
            transaction_rows(&[transaction("ch_1", 25_000)]),
            "tx_1,2025-11-22T10:00:00Z,charge,ch_1,collection,250.00,2.50,247.50,KES,1247.50\n"
        );
        // Negative amounts stay numbers; a source that could run is text, quoted as RFC 4180 wants.
        assert_eq!(
            transaction_rows(&[transaction("=1+2,\"x\"", -250)]),
            "tx_1,2025-11-22T10:00:00Z,charge,\"'=1+2,\"\"x\"\"\",collection,-2.50,2.50,-5.00,KES,1247.50\n"
        );
    }
}
