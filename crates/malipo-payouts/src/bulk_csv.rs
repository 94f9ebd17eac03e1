//! The strict reading of a bulk payout file (`text/csv`, contract section 6): RFC 4180, UTF-8
//! (a leading byte-order mark is allowed), the header `payee_msisdn,amount,reference,narration`
//! (the `narration` column may be left out), quoted fields allowed (with `""` for a quote inside
//! one), and blank lines ignored. Every problem is reported, each against its data row
//! (`items[N]`, N counted from 0 after the header), so one upload shows every bad line at once.
//! What the fields say (numbers, amounts, references) is checked by the service, exactly as for
//! JSON items.

/// The most items one batch may carry.
pub const MAX_BULK_ITEMS: usize = 10_000;

const HEADER: [&str; 4] = ["payee_msisdn", "amount", "reference", "narration"];

/// One data row, as text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawItem {
    /// The payee's number as written.
    pub payee_msisdn: String,
    /// The amount as written.
    pub amount: String,
    /// The item's reference.
    pub reference: String,
    /// Optional text for the payee (an empty field is none).
    pub narration: Option<String>,
}

/// One problem of a file: `field` is `header`, `items` or `items[N]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CsvProblem {
    /// Where.
    pub field: String,
    /// A stable code: `invalid_header`, `malformed_line`, `invalid_encoding`, `too_many_items`,
    /// `too_few_items`.
    pub code: &'static str,
    /// Human-readable.
    pub message: String,
}

fn problem(field: impl Into<String>, code: &'static str, message: impl Into<String>) -> CsvProblem {
    CsvProblem { field: field.into(), code, message: message.into() }
}

/// Whether a record's raw bytes (without its line terminator) follow RFC 4180's quoting: a
/// field is either unquoted and free of `"`, or wholly quoted with inner quotes doubled.
fn well_quoted(line: &[u8]) -> bool {
    let mut rest = line;
    loop {
        if let Some(quoted) = rest.strip_prefix(b"\"") {
            let mut i = 0usize;
            loop {
                match (quoted.get(i), quoted.get(i.saturating_add(1))) {
                    (None, _) => return false,
                    (Some(b'"'), Some(b'"')) => i = i.saturating_add(2),
                    (Some(b'"'), _) => break,
                    (Some(_), _) => i = i.saturating_add(1),
                }
            }
            let after = quoted.get(i.saturating_add(1)..).unwrap_or_default();
            match after.first() {
                None => return true,
                Some(b',') => rest = after.get(1..).unwrap_or_default(),
                Some(_) => return false,
            }
        } else {
            let end = rest.iter().position(|&b| b == b',').unwrap_or(rest.len());
            let field = rest.get(..end).unwrap_or_default();
            if field.contains(&b'"') {
                return false;
            }
            match rest.get(end.saturating_add(1)..) {
                Some(next) if end < rest.len() => rest = next,
                _ => return true,
            }
        }
    }
}

fn trim_terminators(mut raw: &[u8]) -> &[u8] {
    while let Some((&last, before)) = raw.split_last() {
        if last == b'\n' || last == b'\r' {
            raw = before;
        } else {
            break;
        }
    }
    raw
}

/// Reads a bulk payout file into its rows.
///
/// # Errors
/// Every problem found, each with its row: a missing or wrong header, a malformed line (bad
/// quoting, a wrong number of fields), bytes that are not UTF-8, no rows, or more than
/// [`MAX_BULK_ITEMS`].
pub fn parse_bulk_csv(body: &[u8]) -> Result<Vec<RawItem>, Vec<CsvProblem>> {
    let body = body.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(body);
    let mut reader = csv::ReaderBuilder::new().has_headers(false).flexible(true).from_reader(body);
    let mut records: Vec<(usize, Result<csv::ByteRecord, String>)> = Vec::new();
    let mut record = csv::ByteRecord::new();
    loop {
        // Stop reading well past the limit: a 5 MiB file of tiny rows is refused without
        // parsing all of it.
        if records.len() > MAX_BULK_ITEMS.saturating_add(1) {
            break;
        }
        let start = usize::try_from(reader.position().byte()).unwrap_or(usize::MAX);
        match reader.read_byte_record(&mut record) {
            Ok(false) => break,
            Ok(true) => {
                let start = record.position().map_or(start, |p| usize::try_from(p.byte()).unwrap_or(usize::MAX));
                records.push((start, Ok(record.clone())));
            }
            Err(e) => {
                records.push((start, Err(e.to_string())));
                break;
            }
        }
    }
    let mut problems = Vec::new();
    let Some(((_, header), rows)) = records.split_first() else {
        return Err(vec![problem(
            "header",
            "invalid_header",
            "the file is empty; the first line must be the header payee_msisdn,amount,reference,narration",
        )]);
    };
    let columns = match header {
        Ok(h) if h.len() >= 3 && h.len() <= 4 && h.iter().zip(HEADER).all(|(got, want)| got == want.as_bytes()) => h.len(),
        _ => {
            return Err(vec![problem(
                "header",
                "invalid_header",
                "the first line must be the header payee_msisdn,amount,reference,narration (narration may be left out)",
            )])
        }
    };
    if rows.len() > MAX_BULK_ITEMS {
        return Err(vec![problem("items", "too_many_items", format!("a bulk payout carries at most {MAX_BULK_ITEMS} items"))]);
    }
    if rows.is_empty() {
        return Err(vec![problem("items", "too_few_items", "a bulk payout needs at least one item")]);
    }
    let mut items = Vec::with_capacity(rows.len());
    for (n, (start, row)) in rows.iter().enumerate() {
        let field = format!("items[{n}]");
        let end = records.get(n.saturating_add(2)).map_or(body.len(), |(s, _)| *s);
        let raw = trim_terminators(body.get(*start..end).unwrap_or_default());
        let row = match row {
            Ok(r) if well_quoted(raw) => r,
            Ok(_) => {
                problems.push(problem(
                    field,
                    "malformed_line",
                    "the line is not valid CSV (a quote outside a quoted field, or one never closed)",
                ));
                continue;
            }
            Err(e) => {
                problems.push(problem(field, "malformed_line", format!("the line is not valid CSV: {e}")));
                continue;
            }
        };
        if row.len() != columns {
            problems.push(problem(field, "malformed_line", format!("the line has {} fields; the header has {columns}", row.len())));
            continue;
        }
        let text: Result<Vec<&str>, _> = row.iter().map(std::str::from_utf8).collect();
        let Ok(text) = text else {
            problems.push(problem(field, "invalid_encoding", "the line is not UTF-8"));
            continue;
        };
        let get = |i: usize| text.get(i).copied().unwrap_or_default().to_owned();
        let narration = get(3);
        items.push(RawItem {
            payee_msisdn: get(0),
            amount: get(1),
            reference: get(2),
            narration: (!narration.is_empty()).then_some(narration),
        });
    }
    if problems.is_empty() {
        Ok(items)
    } else {
        Err(problems)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(text: &str) -> Vec<RawItem> {
        parse_bulk_csv(text.as_bytes()).unwrap_or_else(|p| panic!("{p:?}"))
    }

    fn problems(text: &[u8]) -> Vec<(String, &'static str)> {
        match parse_bulk_csv(text) {
            Ok(items) => panic!("accepted {items:?}"),
            Err(p) => p.into_iter().map(|p| (p.field, p.code)).collect(),
        }
    }

    fn item(m: &str, a: &str, r: &str, n: Option<&str>) -> RawItem {
        RawItem { payee_msisdn: m.into(), amount: a.into(), reference: r.into(), narration: n.map(Into::into) }
    }

    #[test]
    fn reads_rows_with_quotes_commas_and_crlf() {
        let got = ok("payee_msisdn,amount,reference,narration\r\n254712345678,100.50,PAY-1,\"Salary, November\"\r\n254712345679,5,PAY-2,\r\n254712345670,7,\"PAY \"\"3\"\"\",\"two\nlines\"\r\n");
        assert_eq!(
            got,
            vec![
                item("254712345678", "100.50", "PAY-1", Some("Salary, November")),
                item("254712345679", "5", "PAY-2", None),
                item("254712345670", "7", "PAY \"3\"", Some("two\nlines")),
            ]
        );
    }

    #[test]
    fn a_byte_order_mark_blank_lines_and_a_missing_narration_column_are_fine() {
        let got = ok("\u{feff}payee_msisdn,amount,reference\n\n254712345678,1,A\n\n254712345679,2,B");
        assert_eq!(got, vec![item("254712345678", "1", "A", None), item("254712345679", "2", "B", None)]);
    }

    #[test]
    fn a_wrong_or_missing_header_is_refused() {
        assert_eq!(problems(b"msisdn,amount,reference,narration\n254712345678,1,A,\n"), vec![("header".into(), "invalid_header")]);
        assert_eq!(problems(b"254712345678,1,A,\n"), vec![("header".into(), "invalid_header")]);
        assert_eq!(problems(b""), vec![("header".into(), "invalid_header")]);
        assert_eq!(problems(b"amount,payee_msisdn,reference,narration\n1,254712345678,A,\n"), vec![("header".into(), "invalid_header")]);
    }

    #[test]
    fn bad_quoting_and_wrong_field_counts_name_their_row() {
        let text = b"payee_msisdn,amount,reference,narration\n254712345678,1,A,\n2547\"12,1,B,\n254712345678,1,C\n254712345678,1,\"D\"x,\n254712345678,1,E,ok\n254712345678,1,\"F,never closed\n";
        assert_eq!(
            problems(text),
            vec![
                ("items[1]".into(), "malformed_line"),
                ("items[2]".into(), "malformed_line"),
                ("items[3]".into(), "malformed_line"),
                ("items[5]".into(), "malformed_line"),
            ]
        );
    }

    #[test]
    fn bytes_that_are_not_utf8_are_refused() {
        assert_eq!(
            problems(b"payee_msisdn,amount,reference,narration\n254712345678,1,A,caf\xe9\n"),
            vec![("items[0]".into(), "invalid_encoding")]
        );
    }

    #[test]
    fn one_to_ten_thousand_items() {
        assert_eq!(problems(b"payee_msisdn,amount,reference,narration\n"), vec![("items".into(), "too_few_items")]);
        let mut text = String::from("payee_msisdn,amount,reference,narration\n");
        for i in 0..MAX_BULK_ITEMS {
            text.push_str(&format!("2547{i:08},1,R{i},\n"));
        }
        assert_eq!(ok(&text).len(), MAX_BULK_ITEMS);
        text.push_str("254700000000,1,ONE-TOO-MANY,\n");
        assert_eq!(problems(text.as_bytes()), vec![("items".into(), "too_many_items")]);
    }
}
