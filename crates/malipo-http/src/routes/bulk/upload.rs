//! The two forms of a bulk payout upload (contract section 6): a JSON body with the reference
//! and the items, or a `text/csv` file with the reference in the query (`?reference=`). Both
//! become the use case's raw input, [`NewBulkPayout`]; the CSV file itself is read strictly by
//! the service's parsing of it.

use std::collections::HashMap;

use actix_web::{web, HttpRequest};
use malipo_payouts::RawItem;
use malipo_service::{BulkInput, NewBulkPayout};

use super::dto::{BulkItemRequest, BulkRequest};
use crate::extract::{media_type, parse_json, parse_nested, Body, Parsed};
use crate::problem::{ApiError, ProblemField};
use crate::wire::amount_text;

/// Reads a bulk upload by its media type, with its canonical form for the idempotency
/// fingerprint: for JSON the canonical JSON, for CSV the reference and the file's bytes.
///
/// # Errors
/// 415 for another media type; for JSON [`parse_json`]'s rules, every item's unknown or missing
/// fields (422, `items[N].field`), 400 for an item of the wrong JSON type; for CSV 422
/// `missing_field` without a `reference` in the query.
pub fn read_upload(req: &HttpRequest, body: &Body) -> Result<Parsed<NewBulkPayout>, ApiError> {
    match media_type(req).as_deref() {
        Some("application/json") => json_upload(&body.0),
        Some("text/csv") => csv_upload(req, &body.0),
        other => Err(ApiError::UnsupportedMediaType(format!(
            "Content-Type must be application/json or text/csv, not {}",
            other.unwrap_or("absent")
        ))),
    }
}

fn json_upload(body: &[u8]) -> Result<Parsed<NewBulkPayout>, ApiError> {
    let Parsed { value, canonical } = parse_json::<BulkRequest>(body)?;
    let mut items = Vec::with_capacity(value.items.len());
    let mut problems: Vec<ProblemField> = Vec::new();
    for (n, raw) in value.items.iter().enumerate() {
        let at = format!("items[{n}]");
        match parse_nested::<BulkItemRequest>(raw, &at) {
            Ok(item) => items.push(RawItem {
                payee_msisdn: item.payee_msisdn,
                amount: amount_text(&format!("{at}.amount"), &item.amount)?,
                reference: item.reference,
                narration: item.narration,
            }),
            Err(ApiError::Fields(f)) => problems.extend(f),
            Err(other) => return Err(other),
        }
    }
    if !problems.is_empty() {
        return Err(ApiError::Fields(problems));
    }
    Ok(Parsed { value: NewBulkPayout { reference: value.reference, items: BulkInput::Items(items) }, canonical })
}

fn csv_upload(req: &HttpRequest, body: &[u8]) -> Result<Parsed<NewBulkPayout>, ApiError> {
    let query = web::Query::<HashMap<String, String>>::from_query(req.query_string())
        .map_err(|e| ApiError::InvalidRequest(format!("bad query string: {e}")))?;
    let reference = query.get("reference").cloned().ok_or_else(|| {
        ApiError::Fields(vec![ProblemField {
            field: "reference".into(),
            code: "missing_field".into(),
            message: "reference is required (in the query string for a text/csv upload)".into(),
        }])
    })?;
    // The query is not part of the fingerprint's path: the reference goes in with the file.
    let mut canonical = b"text/csv\n".to_vec();
    canonical.extend(serde_json::to_vec(&reference).map_err(|e| ApiError::InvalidRequest(e.to_string()))?);
    canonical.push(b'\n');
    canonical.extend_from_slice(body);
    Ok(Parsed { value: NewBulkPayout { reference, items: BulkInput::Csv(body.to_vec()) }, canonical })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use actix_web::test::TestRequest;

    const CSV: &str = "payee_msisdn,amount,reference,narration\n254712345678,1500.00,SALARY-1,November\n";

    fn read(content_type: Option<&str>, uri: &str, body: &[u8]) -> Result<Parsed<NewBulkPayout>, ApiError> {
        let mut req = TestRequest::post().uri(uri);
        if let Some(ct) = content_type {
            req = req.insert_header(("content-type", ct));
        }
        read_upload(&req.to_http_request(), &Body(web::Bytes::copy_from_slice(body)))
    }

    fn fields(e: ApiError) -> Vec<(String, String)> {
        match e {
            ApiError::Fields(f) => f.into_iter().map(|f| (f.field, f.code)).collect(),
            other => panic!("expected field errors, got {other:?}"),
        }
    }

    #[test]
    fn a_csv_upload_takes_the_file_as_it_is_and_the_reference_from_the_query() {
        let up = read(Some("text/csv; charset=utf-8"), "/api/v1/bulk-payouts?reference=PAYROLL%2011", CSV.as_bytes()).unwrap();
        assert_eq!(up.value.reference, "PAYROLL 11");
        assert!(matches!(up.value.items, BulkInput::Csv(ref bytes) if bytes == CSV.as_bytes()));
        assert!(up.canonical.ends_with(CSV.as_bytes()), "the fingerprint covers the file");
        let other_file = read(Some("text/csv"), "/api/v1/bulk-payouts?reference=PAYROLL%2011", b"payee_msisdn,amount,reference\n").unwrap();
        let other_reference = read(Some("text/csv"), "/api/v1/bulk-payouts?reference=PAYROLL-12", CSV.as_bytes()).unwrap();
        assert_ne!(up.canonical, other_file.canonical);
        assert_ne!(up.canonical, other_reference.canonical, "and the reference, which the path leaves out");
        let again = read(Some("TEXT/CSV"), "/api/v1/bulk-payouts?reference=PAYROLL%2011", CSV.as_bytes()).unwrap();
        assert_eq!(up.canonical, again.canonical);
    }

    #[test]
    fn a_csv_upload_needs_its_reference() {
        let e = read(Some("text/csv"), "/api/v1/bulk-payouts", CSV.as_bytes()).unwrap_err();
        assert_eq!(fields(e), [("reference".to_owned(), "missing_field".to_owned())]);
    }

    #[test]
    fn other_media_types_are_refused() {
        for ct in [Some("text/plain"), Some("application/x-www-form-urlencoded"), None] {
            let e = read(ct, "/api/v1/bulk-payouts?reference=R", CSV.as_bytes()).unwrap_err();
            assert!(matches!(e, ApiError::UnsupportedMediaType(_)), "{ct:?}: {e:?}");
        }
    }

    #[test]
    fn json_items_keep_their_amounts_exact() {
        let body = br#"{"reference":"PAYROLL-11","items":[
            {"payee_msisdn":"254712345678","amount":1500.10,"reference":"S-1","narration":"November"},
            {"payee_msisdn":"254712345679","amount":"0.1000000000000000055511151231257827","reference":"S-2"}]}"#;
        let up = read(Some("application/json"), "/api/v1/bulk-payouts", body).unwrap();
        assert_eq!(up.value.reference, "PAYROLL-11");
        let BulkInput::Items(items) = up.value.items else { panic!("JSON gives items") };
        assert_eq!(
            items,
            [
                RawItem {
                    payee_msisdn: "254712345678".into(),
                    amount: "1500.10".into(),
                    reference: "S-1".into(),
                    narration: Some("November".into())
                },
                RawItem {
                    payee_msisdn: "254712345679".into(),
                    amount: "0.1000000000000000055511151231257827".into(),
                    reference: "S-2".into(),
                    narration: None
                },
            ]
        );
        assert!(up.canonical.starts_with(b"{"), "canonical JSON");
    }

    #[test]
    fn every_bad_json_item_is_named_by_its_index() {
        let body = br#"{"reference":"R","items":[
            {"payee_msisdn":"254712345678","amount":"1","reference":"ok"},
            {"payee_msisdn":"254712345678","reference":"no amount"},
            {"payee_msisdn":"254712345678","amount":"1","reference":"ok"},
            {"payee_msisdn":"254712345678","amount":"1","reference":"x","tip":"1"}]}"#;
        let e = read(Some("application/json"), "/", body).unwrap_err();
        assert_eq!(
            fields(e),
            [("items[1].amount".to_owned(), "missing_field".to_owned()), ("items[3].tip".to_owned(), "unknown_field".to_owned())]
        );
        let e =
            read(Some("application/json"), "/", br#"{"reference":"R","items":[{"payee_msisdn":"2547","amount":true,"reference":"x"}]}"#)
                .unwrap_err();
        assert_eq!(e.to_string(), "items[0].amount must be a number or a numeric string");
        let e = read(Some("application/json"), "/", br#"{"reference":"R","items":[7]}"#).unwrap_err();
        assert!(matches!(e, ApiError::InvalidRequest(ref m) if m == "items[0] must be a JSON object"), "{e:?}");
        let e = read(Some("application/json"), "/", br#"{"items":[]}"#).unwrap_err();
        assert_eq!(fields(e), [("reference".to_owned(), "missing_field".to_owned())]);
    }
}
