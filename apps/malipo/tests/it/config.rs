//! Contract section 11, configuration: `GET /config/countries`.

use serde_json::Value;

use crate::harness::{raw_at, raw_items, raw_member, Cast, Db, TestApp};

crate::on_both!(
    countries_lists_the_five_with_kenya_as_configured,
    any_token_reads_the_countries,
    fee_bands_are_contiguous_two_decimal_amounts
);

/// Members holding amounts: every one a JSON number written with exactly two decimals.
const AMOUNT_MEMBERS: [&str; 8] = ["min", "max", "fee", "agent_commission", "per_transaction", "daily", "max_balance", "max_charge"];

async fn countries(app: &TestApp, token: &str) -> String {
    let r = app.get(token, "/config/countries").await;
    assert_eq!(r.status(), 200);
    let ct = r.headers()["content-type"].to_str().unwrap().to_owned();
    assert!(ct.starts_with("application/json"), "{ct}");
    r.text().await.unwrap()
}

/// The raw text of the country with this code.
fn country<'a>(items: &'a [String], code: &str) -> &'a str {
    items.iter().find(|c| raw_member(c, "country") == format!("\"{code}\"")).unwrap_or_else(|| panic!("no {code}"))
}

/// Every value written after `"name":` in `text`, up to the next `,`, `}` or `]`.
fn written_values(text: &str, name: &str) -> Vec<String> {
    let needle = format!("\"{name}\":");
    let mut out = vec![];
    let mut rest = text;
    while let Some(i) = rest.find(&needle) {
        rest = &rest[i + needle.len()..];
        let end = rest.find([',', '}', ']']).unwrap_or(rest.len());
        out.push(rest[..end].trim().to_owned());
    }
    out
}

fn two_decimals(v: &str) -> bool {
    match v.split_once('.') {
        Some((int, frac)) => {
            !int.is_empty() && int.bytes().all(|b| b.is_ascii_digit()) && frac.len() == 2 && frac.bytes().all(|b| b.is_ascii_digit())
        }
        None => false,
    }
}

/// A written amount in minor units of a currency with `minor_units` decimals.
fn minor(v: &str, minor_units: u32) -> i64 {
    let (int, frac) = v.split_once('.').unwrap_or((v, ""));
    let scale = 10_i64.pow(minor_units);
    let frac_value = if minor_units == 0 {
        assert!(frac.bytes().all(|b| b == b'0'), "{v} has decimals its currency lacks");
        0
    } else {
        format!("{frac:0<width$}", width = minor_units as usize)[..minor_units as usize].parse::<i64>().unwrap()
    };
    int.parse::<i64>().unwrap() * scale + frac_value
}

async fn countries_lists_the_five_with_kenya_as_configured(db: Db) {
    let app = TestApp::shared(db);
    let (_, token) = app.merchant_token().await;
    let body = countries(app, &token).await;
    let v: Value = serde_json::from_str(&body).unwrap();
    let codes: Vec<&str> = v["data"].as_array().unwrap().iter().map(|c| c["country"].as_str().unwrap()).collect();
    for code in ["KE", "UG", "TZ", "RW", "GH"] {
        assert!(codes.contains(&code), "{code} missing from {codes:?}");
    }
    let items = raw_items(&raw_member(&body, "data"));
    let ke_text = country(&items, "KE");
    let ke: Value = serde_json::from_str(ke_text).unwrap();
    assert_eq!(ke["name"], "Kenya");
    assert_eq!(ke["dialling_code"], "254");
    assert_eq!(ke["msisdn_length"], 12);
    assert_eq!(ke["currency"], "KES");
    assert_eq!(ke["minor_units"], 2);
    assert_eq!(ke["time_zone"], "Africa/Nairobi");
    assert_eq!(ke["utc_offset_minutes"], 180);
    assert_eq!(ke["pin_length"], 4);
    assert_eq!(ke["max_pin_attempts"], 3);
    assert_eq!(raw_member(ke_text, "max_charge"), "250000.00");
    // ID types with their patterns and the tier each grants.
    let ids = ke["id_types"].as_array().unwrap();
    let id = |name: &str| ids.iter().find(|t| t["name"] == name).unwrap_or_else(|| panic!("id type {name} in {ke}")).clone();
    assert_eq!(id("national_id")["pattern"], "^[0-9]{7,8}$");
    assert_eq!(id("national_id")["grants_tier"], 1);
    assert_eq!(id("kra_pin")["pattern"], "^[AP][0-9]{9}[A-Z]$");
    assert_eq!(id("kra_pin")["grants_tier"], 2);
    // KYC tiers, amounts as written.
    let tiers = raw_items(&raw_member(ke_text, "kyc_tiers"));
    assert_eq!(tiers.len(), 3, "{ke_text}");
    let expected = [
        ("0", "5000.00", "10000.00", "20000.00"),
        ("1", "150000.00", "300000.00", "300000.00"),
        ("2", "250000.00", "500000.00", "500000.00"),
    ];
    for (t, (tier, per_tx, daily, max_balance)) in tiers.iter().zip(expected) {
        assert_eq!(raw_member(t, "tier"), tier);
        assert_eq!(raw_member(t, "per_transaction"), per_tx, "tier {tier}");
        assert_eq!(raw_member(t, "daily"), daily, "tier {tier}");
        assert_eq!(raw_member(t, "max_balance"), max_balance, "tier {tier}");
        let requirements: Value = serde_json::from_str(&raw_member(t, "requirements")).unwrap();
        assert!(requirements.as_array().is_some_and(|r| !r.is_empty() && r.iter().all(Value::is_string)), "tier {tier}: {t}");
    }
    // Fees: a charge is paid by the payee; a cash-out's fee shares an agent commission.
    assert_eq!(ke["fees"]["charge"]["paid_by"], "payee");
    assert_eq!(ke["fees"]["p2p"]["paid_by"], "payer");
    let charge_bands = raw_items(&raw_at(ke_text, &["fees", "charge", "bands"]));
    assert_eq!(raw_member(&charge_bands[1], "min"), "200.01");
    assert_eq!(raw_member(&charge_bands[1], "max"), "500.00");
    assert_eq!(raw_member(&charge_bands[1], "fee"), "2.00");
    let p2p = raw_items(&raw_at(ke_text, &["fees", "p2p", "bands"]));
    assert_eq!(raw_member(&p2p[2], "min"), "500.01");
    assert_eq!(raw_member(&p2p[2], "max"), "1000.00");
    assert_eq!(raw_member(&p2p[2], "fee"), "13.00");
    let cash_out = raw_items(&raw_at(ke_text, &["fees", "cash_out", "bands"]));
    assert_eq!(raw_member(&cash_out[1], "fee"), "29.00");
    assert_eq!(raw_member(&cash_out[1], "agent_commission"), "19.00");
    app.assert_ledger_ok().await;
}

async fn any_token_reads_the_countries(db: Db) {
    let app = TestApp::shared(db);
    let test = Cast::new(app, malipo_core::Mode::Test, "0").await;
    let (_, merchant) = app.merchant_token().await;
    let reference = countries(app, &merchant).await;
    for token in [&test.operator, &test.agent_token, &test.gateway] {
        assert_eq!(countries(app, token).await, reference, "every principal reads the same configuration");
    }
    let live = app.live(&test.merchant.org_id).await;
    assert_eq!(countries(app, &app.token(&live).await).await, reference, "live tokens too");
    let anonymous = app.http.get(app.url("/config/countries")).send().await.unwrap();
    assert_eq!(anonymous.status(), 401, "a token is required");
    app.assert_ledger_ok().await;
}

async fn fee_bands_are_contiguous_two_decimal_amounts(db: Db) {
    let app = TestApp::shared(db);
    let (_, token) = app.merchant_token().await;
    let body = countries(app, &token).await;
    // Every amount in the body is a number with exactly two decimals.
    for name in AMOUNT_MEMBERS {
        let values = written_values(&body, name);
        assert!(!values.is_empty(), "no {name} in the body");
        for v in values {
            assert!(two_decimals(&v), "{name} written {v}");
        }
    }
    for c in raw_items(&raw_member(&body, "data")) {
        let code = raw_member(&c, "country");
        let minor_units: u32 = raw_member(&c, "minor_units").parse().unwrap();
        let unit = 1;
        let tiers = raw_items(&raw_member(&c, "kyc_tiers"));
        let top_per_tx = minor(&raw_member(tiers.last().unwrap(), "per_transaction"), minor_units);
        let fees: serde_json::Map<String, Value> = serde_json::from_str(&raw_member(&c, "fees")).unwrap();
        assert!(fees.contains_key("charge") && fees.contains_key("cash_out") && fees.contains_key("p2p"), "{code}: {fees:?}");
        for op in fees.keys() {
            let schedule = raw_at(&c, &["fees", op]);
            let paid_by = raw_member(&schedule, "paid_by");
            assert!(paid_by == "\"payer\"" || paid_by == "\"payee\"", "{code} {op}: paid_by {paid_by}");
            let bands = raw_items(&raw_member(&schedule, "bands"));
            assert!(!bands.is_empty(), "{code} {op}");
            let mut expected_min = unit;
            for (i, band) in bands.iter().enumerate() {
                let (min, max, fee) = (
                    minor(&raw_member(band, "min"), minor_units),
                    minor(&raw_member(band, "max"), minor_units),
                    minor(&raw_member(band, "fee"), minor_units),
                );
                assert_eq!(min, expected_min, "{code} {op} band {i}: min follows the previous max by one minor unit");
                assert!(max >= min, "{code} {op} band {i}");
                assert!(fee >= 0, "{code} {op} band {i}");
                if paid_by == "\"payee\"" {
                    assert!(fee < min, "{code} {op} band {i}: a payee fee is below the band's min");
                }
                let commission = raw_member(band, "agent_commission");
                if !commission.is_empty() && commission != "null" {
                    assert!(minor(&commission, minor_units) <= fee, "{code} {op} band {i}: commission above the fee");
                }
                expected_min = max + unit;
            }
            assert!(expected_min - unit >= top_per_tx, "{code} {op}: bands reach the top tier's per-transaction limit");
        }
    }
    app.assert_ledger_ok().await;
}
