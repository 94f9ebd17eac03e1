//! The versioned TOML file: raw serde structs mirroring it, and their conversion into validated
//! [`Country`] values. Amounts in the file are major-unit decimal strings; every rule failure
//! names the entry it concerns.

use std::collections::{BTreeMap, HashMap, HashSet};

use malipo_core::{Currency, MinorUnit, MoneyError};
use serde::Deserialize;

use crate::country::{Country, IdType, KycTier};
use crate::error::ConfigError;
use crate::fees::{FeeBand, FeeOperation, FeePayer, FeeSchedule};

/// The file format version this build reads.
pub(crate) const VERSION: i64 = 1;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    version: i64,
    countries: Vec<RawCountry>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCountry {
    code: String,
    name: String,
    dialling_code: String,
    msisdn_length: usize,
    currency: String,
    minor_units: u8,
    time_zone: String,
    utc_offset_minutes: i32,
    pin_length: u8,
    max_pin_attempts: u8,
    max_charge: String,
    id_types: Vec<RawIdType>,
    kyc_tiers: Vec<RawKycTier>,
    fees: BTreeMap<String, RawFeeSchedule>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawIdType {
    name: String,
    pattern: String,
    grants_tier: u8,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawKycTier {
    tier: u8,
    per_transaction: String,
    daily: String,
    max_balance: String,
    requirements: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFeeSchedule {
    paid_by: String,
    bands: Vec<RawFeeBand>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFeeBand {
    min: String,
    max: String,
    fee: String,
    #[serde(default)]
    agent_commission: Option<String>,
}

/// Parses and validates a whole file.
pub(crate) fn parse(text: &str) -> Result<Vec<Country>, ConfigError> {
    let raw: RawFile = toml::from_str(text)?;
    if raw.version != VERSION {
        return Err(ConfigError::invalid("version", format!("unsupported version {}; this build reads version {VERSION}", raw.version)));
    }
    if raw.countries.is_empty() {
        return Err(ConfigError::invalid("countries", "at least one country is required"));
    }
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut countries: Vec<Country> = Vec::with_capacity(raw.countries.len());
    for (index, raw_country) in raw.countries.into_iter().enumerate() {
        if let Some(first) = seen.get(&raw_country.code) {
            return Err(ConfigError::invalid(
                format!("countries[{index}].code"),
                format!("duplicate country code {} (also countries[{first}])", raw_country.code),
            ));
        }
        seen.insert(raw_country.code.clone(), index);
        let country = build_country(index, raw_country)?;
        if let Some(other) = countries
            .iter()
            .find(|c| c.dialling_code.starts_with(&country.dialling_code) || country.dialling_code.starts_with(&c.dialling_code))
        {
            let (mine, theirs) = (&country.dialling_code, &other.dialling_code);
            let reason = if mine == theirs {
                format!("{mine} is also countries[{}]'s dialling code", other.code)
            } else if theirs.starts_with(mine.as_str()) {
                format!("{mine} is a prefix of countries[{}]'s {theirs}, so numbers would be ambiguous", other.code)
            } else {
                format!("countries[{}]'s {theirs} is a prefix of {mine}, so numbers would be ambiguous", other.code)
            };
            return Err(ConfigError::invalid(format!("countries[{}].dialling_code", country.code), reason));
        }
        countries.push(country);
    }
    Ok(countries)
}

fn is_country_code(code: &str) -> bool {
    code.len() == 2 && code.bytes().all(|b| b.is_ascii_uppercase())
}

fn is_dialling_code(code: &str) -> bool {
    (1..=3).contains(&code.len()) && code.bytes().all(|b| b.is_ascii_digit()) && !code.starts_with('0')
}

/// `Area/Location` (possibly `Area/Region/Location`) with the characters IANA names use, or `UTC`.
fn is_time_zone_name(name: &str) -> bool {
    let part_ok = |p: &str| {
        p.bytes().next().is_some_and(|b| b.is_ascii_alphabetic()) && p.bytes().all(|b| b.is_ascii_alphanumeric() || b"_+-".contains(&b))
    };
    name == "UTC" || (name.contains('/') && name.split('/').all(part_ok))
}

fn is_id_type_name(name: &str) -> bool {
    name.bytes().next().is_some_and(|b| b.is_ascii_lowercase())
        && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

/// Reads a major-unit amount as minor units; `zero_ok` admits `"0"` (fees, commissions).
fn amount(currency: Currency, text: &str, entry: &str, zero_ok: bool) -> Result<MinorUnit, ConfigError> {
    match currency.parse_amount(text) {
        Ok(v) => Ok(v),
        Err(MoneyError::NotPositive) if zero_ok => Ok(MinorUnit::ZERO),
        Err(e) => Err(ConfigError::invalid(entry, format!("{text:?} {e}"))),
    }
}

fn build_country(index: usize, raw: RawCountry) -> Result<Country, ConfigError> {
    if !is_country_code(&raw.code) {
        return Err(ConfigError::invalid(
            format!("countries[{index}].code"),
            format!("{:?} must be two upper-case letters (ISO 3166-1 alpha-2)", raw.code),
        ));
    }
    let at = format!("countries[{}]", raw.code);
    let field = |f: &str| format!("{at}.{f}");

    if raw.name.trim().is_empty() {
        return Err(ConfigError::invalid(field("name"), "must not be empty"));
    }
    if !is_dialling_code(&raw.dialling_code) {
        return Err(ConfigError::invalid(
            field("dialling_code"),
            format!("{:?} must be 1 to 3 digits, not starting with 0", raw.dialling_code),
        ));
    }
    // With dialling codes of at most 3 digits, 8..=15 also makes the number longer than its code;
    // both are stated so that the rule survives a change to either.
    if !(8..=15).contains(&raw.msisdn_length) || raw.msisdn_length <= raw.dialling_code.len() {
        return Err(ConfigError::invalid(
            field("msisdn_length"),
            format!(
                "must be 8 to 15 digits (the dialling code {} included, and longer than it), not {}",
                raw.dialling_code, raw.msisdn_length
            ),
        ));
    }
    let currency = Currency::new(&raw.currency).map_err(|e| ConfigError::invalid(field("currency"), format!("{:?} {e}", raw.currency)))?;
    if raw.minor_units != currency.minor_units() {
        return Err(ConfigError::invalid(
            field("minor_units"),
            format!("{currency} has {} minor units, not {}", currency.minor_units(), raw.minor_units),
        ));
    }
    if !is_time_zone_name(&raw.time_zone) {
        return Err(ConfigError::invalid(
            field("time_zone"),
            format!("{:?} is not an IANA time zone name such as Africa/Nairobi", raw.time_zone),
        ));
    }
    if !(-840..=840).contains(&raw.utc_offset_minutes) {
        return Err(ConfigError::invalid(
            field("utc_offset_minutes"),
            format!("must be within ±14 hours (-840 to 840), not {}", raw.utc_offset_minutes),
        ));
    }
    if !(4..=6).contains(&raw.pin_length) {
        return Err(ConfigError::invalid(field("pin_length"), format!("must be 4 to 6, not {}", raw.pin_length)));
    }
    if !(1..=10).contains(&raw.max_pin_attempts) {
        return Err(ConfigError::invalid(field("max_pin_attempts"), format!("must be 1 to 10, not {}", raw.max_pin_attempts)));
    }

    let kyc_tiers = build_tiers(&at, currency, raw.kyc_tiers)?;
    let top = kyc_tiers.last().map_or(MinorUnit::ZERO, |t| t.per_transaction);
    let id_types = build_id_types(&at, &kyc_tiers, raw.id_types)?;

    let max_charge = amount(currency, &raw.max_charge, &field("max_charge"), false)?;
    if max_charge > top {
        return Err(ConfigError::invalid(
            field("max_charge"),
            format!("{} exceeds the top KYC tier's per_transaction {}", currency.format_amount(max_charge), currency.format_amount(top)),
        ));
    }

    let mut fees = BTreeMap::new();
    for (name, schedule) in raw.fees {
        let entry = format!("{at}.fees.{name}");
        let op: FeeOperation = name.parse().map_err(|e| ConfigError::invalid(&entry, format!("{e}")))?;
        fees.insert(op, build_schedule(&entry, currency, top, schedule)?);
    }

    Ok(Country {
        code: raw.code,
        name: raw.name,
        dialling_code: raw.dialling_code,
        msisdn_length: raw.msisdn_length,
        currency,
        minor_units: raw.minor_units,
        time_zone: raw.time_zone,
        utc_offset_minutes: raw.utc_offset_minutes,
        id_types,
        pin_length: raw.pin_length,
        max_pin_attempts: raw.max_pin_attempts,
        max_charge,
        kyc_tiers,
        fees,
    })
}

fn build_tiers(at: &str, currency: Currency, raw: Vec<RawKycTier>) -> Result<Vec<KycTier>, ConfigError> {
    if raw.is_empty() {
        return Err(ConfigError::invalid(format!("{at}.kyc_tiers"), "at least tier 0 is required"));
    }
    let fmt = |v: MinorUnit| currency.format_amount(v);
    let mut tiers: Vec<KycTier> = Vec::with_capacity(raw.len());
    for (i, t) in raw.into_iter().enumerate() {
        let entry = format!("{at}.kyc_tiers[{i}]");
        if usize::from(t.tier) != i {
            return Err(ConfigError::invalid(
                format!("{entry}.tier"),
                format!("expected tier {i} (tiers are numbered 0, 1, 2, ... in order), found {}", t.tier),
            ));
        }
        let tier = KycTier {
            tier: t.tier,
            per_transaction: amount(currency, &t.per_transaction, &format!("{entry}.per_transaction"), false)?,
            daily: amount(currency, &t.daily, &format!("{entry}.daily"), false)?,
            max_balance: amount(currency, &t.max_balance, &format!("{entry}.max_balance"), false)?,
            requirements: t.requirements,
        };
        if tier.per_transaction > tier.daily {
            return Err(ConfigError::invalid(
                format!("{entry}.per_transaction"),
                format!("{} exceeds the daily limit {}", fmt(tier.per_transaction), fmt(tier.daily)),
            ));
        }
        if let Some(prev) = tiers.last() {
            let pairs = [
                ("per_transaction", tier.per_transaction, prev.per_transaction),
                ("daily", tier.daily, prev.daily),
                ("max_balance", tier.max_balance, prev.max_balance),
            ];
            for (name, this, before) in pairs {
                if this < before {
                    return Err(ConfigError::invalid(
                        format!("{entry}.{name}"),
                        format!("{} is below tier {}'s {}; limits must not decrease", fmt(this), prev.tier, fmt(before)),
                    ));
                }
            }
        }
        tiers.push(tier);
    }
    Ok(tiers)
}

fn build_id_types(at: &str, tiers: &[KycTier], raw: Vec<RawIdType>) -> Result<Vec<IdType>, ConfigError> {
    let mut names = HashSet::new();
    let mut out = Vec::with_capacity(raw.len());
    for (i, t) in raw.into_iter().enumerate() {
        let entry = format!("{at}.id_types[{i}]");
        if !is_id_type_name(&t.name) {
            return Err(ConfigError::invalid(
                format!("{entry}.name"),
                format!("{:?} must be lower-case letters, digits and _, starting with a letter", t.name),
            ));
        }
        if !names.insert(t.name.clone()) {
            return Err(ConfigError::invalid(format!("{entry}.name"), format!("duplicate ID type {}", t.name)));
        }
        if !tiers.iter().any(|k| k.tier == t.grants_tier) {
            return Err(ConfigError::invalid(format!("{entry}.grants_tier"), format!("there is no KYC tier {}", t.grants_tier)));
        }
        let id_type = IdType::new(t.name, &t.pattern, t.grants_tier).map_err(|e| {
            ConfigError::invalid(format!("{entry}.pattern"), format!("{:?} is not a valid regular expression: {e}", t.pattern))
        })?;
        out.push(id_type);
    }
    Ok(out)
}

fn build_schedule(
    entry: &str,
    currency: Currency,
    top_per_transaction: MinorUnit,
    raw: RawFeeSchedule,
) -> Result<FeeSchedule, ConfigError> {
    let fmt = |v: MinorUnit| currency.format_amount(v);
    let paid_by: FeePayer = raw.paid_by.parse().map_err(|e| ConfigError::invalid(format!("{entry}.paid_by"), format!("{e}")))?;
    if raw.bands.is_empty() {
        return Err(ConfigError::invalid(format!("{entry}.bands"), "at least one band is required"));
    }
    let mut bands: Vec<FeeBand> = Vec::with_capacity(raw.bands.len());
    for (k, b) in raw.bands.into_iter().enumerate() {
        let at = format!("{entry}.bands[{k}]");
        let band = FeeBand {
            min: amount(currency, &b.min, &format!("{at}.min"), false)?,
            max: amount(currency, &b.max, &format!("{at}.max"), false)?,
            fee: amount(currency, &b.fee, &format!("{at}.fee"), true)?,
            agent_commission: match &b.agent_commission {
                Some(text) => amount(currency, text, &format!("{at}.agent_commission"), true)?,
                None => MinorUnit::ZERO,
            },
        };
        if band.min > band.max {
            return Err(ConfigError::invalid(at, format!("min {} is above max {}", fmt(band.min), fmt(band.max))));
        }
        if band.agent_commission > band.fee {
            return Err(ConfigError::invalid(
                format!("{at}.agent_commission"),
                format!("{} exceeds the band's fee {}", fmt(band.agent_commission), fmt(band.fee)),
            ));
        }
        if paid_by == FeePayer::Payee && band.fee >= band.min {
            return Err(ConfigError::invalid(
                format!("{at}.fee"),
                format!(
                    "{} is paid by the payee, so it must be below the band's min {} (the payee would receive nothing or less)",
                    fmt(band.fee),
                    fmt(band.min)
                ),
            ));
        }
        match bands.last() {
            None if band.min != MinorUnit::new(1) => {
                return Err(ConfigError::invalid(
                    format!("{at}.min"),
                    format!("the first band must start at the smallest unit {}, not {}", fmt(MinorUnit::new(1)), fmt(band.min)),
                ));
            }
            None => {}
            Some(prev) => {
                let prev_index = k.saturating_sub(1);
                if band.min <= prev.min {
                    return Err(ConfigError::invalid(
                        at,
                        format!("out of order: min {} is not above band {prev_index}'s min {}", fmt(band.min), fmt(prev.min)),
                    ));
                }
                if band.min <= prev.max {
                    return Err(ConfigError::invalid(at, format!("overlaps band {prev_index}")));
                }
                let expected = prev.max.checked_add(MinorUnit::new(1)).unwrap_or(prev.max);
                if band.min != expected {
                    return Err(ConfigError::invalid(
                        at,
                        format!("leaves a gap after band {prev_index}: min is {}, expected {}", fmt(band.min), fmt(expected)),
                    ));
                }
            }
        }
        bands.push(band);
    }
    if let Some(last) = bands.last() {
        if last.max < top_per_transaction {
            return Err(ConfigError::invalid(
                format!("{entry}.bands[{}].max", bands.len().saturating_sub(1)),
                format!(
                    "{} is below the top KYC tier's per_transaction {}; the bands must cover every allowed amount",
                    fmt(last.max),
                    fmt(top_per_transaction)
                ),
            ));
        }
    }
    Ok(FeeSchedule { paid_by, bands })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    /// A minimal valid file: Kenya written with `[[...]]` tables, Uganda with inline tables.
    const VALID: &str = r#"
version = 1

[[countries]]
code = "KE"
name = "Kenya"
dialling_code = "254"
msisdn_length = 12
currency = "KES"
minor_units = 2
time_zone = "Africa/Nairobi"
utc_offset_minutes = 180
pin_length = 4
max_pin_attempts = 3
max_charge = "1000"

[[countries.id_types]]
name = "national_id"
pattern = '^[0-9]{7,8}$'
grants_tier = 1

[[countries.id_types]]
name = "passport"
pattern = '[A-Z]{1,2}[0-9]{6,8}'
grants_tier = 1

[[countries.kyc_tiers]]
tier = 0
per_transaction = "100"
daily = "200"
max_balance = "500"
requirements = []

[[countries.kyc_tiers]]
tier = 1
per_transaction = "1000"
daily = "2000"
max_balance = "5000"
requirements = ["national ID"]

[countries.fees.charge]
paid_by = "payee"

[[countries.fees.charge.bands]]
min = "0.01"
max = "100"
fee = "0"

[[countries.fees.charge.bands]]
min = "100.01"
max = "500"
fee = "2"

[[countries.fees.charge.bands]]
min = "500.01"
max = "1000"
fee = "5"

[countries.fees.cash_out]
paid_by = "payer"
bands = [
  { min = "0.01", max = "1000", fee = "10", agent_commission = "6" },
]

[[countries]]
code = "UG"
name = "Uganda"
dialling_code = "256"
msisdn_length = 12
currency = "UGX"
minor_units = 0
time_zone = "Africa/Kampala"
utc_offset_minutes = 180
pin_length = 4
max_pin_attempts = 3
max_charge = "100000"
id_types = [{ name = "nin", pattern = 'C[MF][A-Z0-9]{12}', grants_tier = 1 }]
kyc_tiers = [
  { tier = 0, per_transaction = "50000", daily = "100000", max_balance = "100000", requirements = [] },
  { tier = 1, per_transaction = "100000", daily = "200000", max_balance = "500000", requirements = ["NIN"] },
]
fees = { p2p = { paid_by = "payer", bands = [{ min = "1", max = "500", fee = "0" }, { min = "501", max = "100000", fee = "100" }] } }
"#;

    fn mutated(from: &str, to: &str) -> String {
        assert_eq!(VALID.matches(from).count(), 1, "the fixture must contain {from:?} exactly once");
        VALID.replacen(from, to, 1)
    }

    fn error_of(text: &str) -> ConfigError {
        match parse(text) {
            Ok(_) => panic!("accepted an invalid file"),
            Err(e) => e,
        }
    }

    /// Applies one mutation and asserts the error text starts with (names) `entry` and contains `detail`.
    #[track_caller]
    fn refused(from: &str, to: &str, entry: &str, detail: &str) {
        let err = error_of(&mutated(from, to));
        let text = err.to_string();
        assert!(text.starts_with(&format!("{entry}: ")), "expected an error naming {entry}, got: {text}");
        assert_eq!(err.entry(), Some(entry));
        assert!(text.contains(detail), "expected {detail:?} in: {text}");
    }

    #[track_caller]
    fn accepted(from: &str, to: &str) -> Vec<Country> {
        parse(&mutated(from, to)).unwrap_or_else(|e| panic!("{from:?} -> {to:?} refused: {e}"))
    }

    #[test]
    fn the_fixture_is_valid() {
        let countries = parse(VALID).unwrap();
        assert_eq!(countries.len(), 2);
        let ke = &countries[0];
        assert_eq!(ke.max_charge, MinorUnit::new(100_000));
        assert_eq!(ke.fees[&FeeOperation::Charge].bands[1].min, MinorUnit::new(10_001));
        assert_eq!(ke.fees[&FeeOperation::CashOut].bands[0].agent_commission, MinorUnit::new(600));
        let ug = &countries[1];
        assert_eq!(ug.fees[&FeeOperation::P2p].bands[1].fee, MinorUnit::new(100));
        assert_eq!(ug.kyc_tiers[1].max_balance, MinorUnit::new(500_000));
        assert_eq!(ug.fees[&FeeOperation::P2p].bands[0].agent_commission, MinorUnit::ZERO, "default commission");
    }

    #[test]
    fn unanchored_patterns_in_the_file_are_anchored() {
        let countries = parse(VALID).unwrap();
        let passport = countries[0].id_type("passport").unwrap();
        assert_eq!(passport.pattern, "^(?:[A-Z]{1,2}[0-9]{6,8})$");
        assert!(passport.matches("AK123456"));
        assert!(!passport.matches("AK123456x"));
        assert!(!passport.matches("xAK123456"));
        let nin = countries[1].id_type("nin").unwrap();
        assert!(nin.matches("CM12345678ABCD"));
        assert!(!nin.matches("CM12345678ABCD0"));
        let unanchored = accepted("pattern = '^[0-9]{7,8}$'", "pattern = '[0-9]{7,8}'");
        let national_id = unanchored[0].id_type("national_id").unwrap();
        assert!(national_id.matches("12345678"));
        assert!(!national_id.matches("12345678x"));
        assert!(!national_id.matches("123456789"));
    }

    #[test]
    fn unknown_fields_are_refused_with_their_location() {
        let cases = [
            ("version = 1", "version = 1\nvresion = 2"),
            ("name = \"Kenya\"", "nmae = \"Kenya\""),
            ("grants_tier = 1\n\n[[countries.id_types]]", "grants_tier = 1\npatern = 'x'\n\n[[countries.id_types]]"),
            ("requirements = [\"national ID\"]", "requirements = [\"national ID\"]\nmonthly = \"5\""),
            ("paid_by = \"payee\"", "paid_by = \"payee\"\npaidby = \"payee\""),
            ("min = \"500.01\"", "min = \"500.01\"\nfees = \"5\""),
        ];
        for (from, to) in cases {
            let err = error_of(&mutated(from, to));
            assert!(matches!(err, ConfigError::Toml(_)), "{err:?}");
            let text = err.to_string();
            assert!(text.contains("unknown field"), "{text}");
            assert!(text.contains("line "), "{text}");
        }
    }

    #[test]
    fn missing_fields_are_refused() {
        let err = error_of(&mutated("max_charge = \"1000\"\n", ""));
        assert!(matches!(err, ConfigError::Toml(_)), "{err:?}");
        assert!(err.to_string().contains("missing field `max_charge`"), "{err}");
        let err = error_of(&mutated("min = \"100.01\"\n", ""));
        assert!(err.to_string().contains("missing field `min`"), "{err}");
        let err = error_of(&mutated("version = 1", ""));
        assert!(err.to_string().contains("missing field `version`"), "{err}");
    }

    #[test]
    fn wrong_types_are_refused() {
        let err = error_of(&mutated("max_charge = \"1000\"", "max_charge = 1000"));
        assert!(matches!(err, ConfigError::Toml(_)), "{err:?}");
        let err = error_of(&mutated(
            "pin_length = 4\nmax_pin_attempts = 3\nmax_charge = \"1000\"",
            "pin_length = -4\nmax_pin_attempts = 3\nmax_charge = \"1000\"",
        ));
        assert!(matches!(err, ConfigError::Toml(_)), "{err:?}");
    }

    #[test]
    fn version_must_be_1() {
        refused("version = 1", "version = 2", "version", "unsupported version 2");
    }

    #[test]
    fn at_least_one_country() {
        let err = error_of("version = 1\ncountries = []\n");
        assert_eq!(err.to_string(), "countries: at least one country is required");
    }

    #[test]
    fn duplicate_country_codes() {
        refused("code = \"UG\"", "code = \"KE\"", "countries[1].code", "duplicate country code KE (also countries[0])");
    }

    #[test]
    fn country_code_is_two_upper_case_letters() {
        refused("code = \"KE\"", "code = \"ke\"", "countries[0].code", "two upper-case letters");
        refused("code = \"KE\"", "code = \"KEN\"", "countries[0].code", "\"KEN\"");
        refused("code = \"UG\"", "code = \"U1\"", "countries[1].code", "two upper-case letters");
    }

    #[test]
    fn name_is_required() {
        refused("name = \"Kenya\"", "name = \" \"", "countries[KE].name", "must not be empty");
    }

    #[test]
    fn dialling_code_is_digits() {
        refused("dialling_code = \"254\"", "dialling_code = \"25a\"", "countries[KE].dialling_code", "1 to 3 digits");
        refused("dialling_code = \"254\"", "dialling_code = \"+254\"", "countries[KE].dialling_code", "1 to 3 digits");
        refused("dialling_code = \"254\"", "dialling_code = \"2544\"", "countries[KE].dialling_code", "1 to 3 digits");
        refused("dialling_code = \"254\"", "dialling_code = \"054\"", "countries[KE].dialling_code", "not starting with 0");
        refused("dialling_code = \"254\"", "dialling_code = \"\"", "countries[KE].dialling_code", "1 to 3 digits");
    }

    #[test]
    fn no_dialling_code_is_a_prefix_of_another() {
        refused(
            "dialling_code = \"256\"",
            "dialling_code = \"25\"",
            "countries[UG].dialling_code",
            "25 is a prefix of countries[KE]'s 254",
        );
        refused("dialling_code = \"256\"", "dialling_code = \"254\"", "countries[UG].dialling_code", "also countries[KE]'s");
        refused("dialling_code = \"254\"", "dialling_code = \"2\"", "countries[UG].dialling_code", "countries[KE]'s 2 is a prefix of 256");
        accepted("dialling_code = \"256\"", "dialling_code = \"26\"");
    }

    #[test]
    fn msisdn_length_is_8_to_15() {
        let ke = "dialling_code = \"254\"\nmsisdn_length = 12";
        refused(ke, "dialling_code = \"254\"\nmsisdn_length = 7", "countries[KE].msisdn_length", "not 7");
        refused(ke, "dialling_code = \"254\"\nmsisdn_length = 16", "countries[KE].msisdn_length", "8 to 15");
        refused(ke, "dialling_code = \"254\"\nmsisdn_length = 0", "countries[KE].msisdn_length", "longer than it");
        accepted(ke, "dialling_code = \"254\"\nmsisdn_length = 8");
        accepted(ke, "dialling_code = \"254\"\nmsisdn_length = 15");
    }

    #[test]
    fn currency_is_valid_and_minor_units_match() {
        refused("currency = \"KES\"", "currency = \"kes\"", "countries[KE].currency", "three-letter ISO 4217 code");
        refused("currency = \"KES\"", "currency = \"KESH\"", "countries[KE].currency", "\"KESH\"");
        let err = error_of(&mutated("minor_units = 0", "minor_units = 2"));
        assert_eq!(err.to_string(), "countries[UG].minor_units: UGX has 0 minor units, not 2");
        refused("minor_units = 2", "minor_units = 0", "countries[KE].minor_units", "KES has 2 minor units, not 0");
    }

    #[test]
    fn time_zone_is_an_iana_name() {
        refused("time_zone = \"Africa/Nairobi\"", "time_zone = \"Nairobi\"", "countries[KE].time_zone", "IANA");
        refused("time_zone = \"Africa/Nairobi\"", "time_zone = \"\"", "countries[KE].time_zone", "IANA");
        refused("time_zone = \"Africa/Nairobi\"", "time_zone = \"Africa/Nai robi\"", "countries[KE].time_zone", "IANA");
        refused("time_zone = \"Africa/Nairobi\"", "time_zone = \"Africa//Nairobi\"", "countries[KE].time_zone", "IANA");
        accepted("time_zone = \"Africa/Nairobi\"", "time_zone = \"America/Argentina/Buenos_Aires\"");
        accepted("time_zone = \"Africa/Nairobi\"", "time_zone = \"Etc/GMT-3\"");
    }

    #[test]
    fn utc_offset_is_within_14_hours() {
        let ke = "time_zone = \"Africa/Nairobi\"\nutc_offset_minutes = 180";
        let with = |m: i32| format!("time_zone = \"Africa/Nairobi\"\nutc_offset_minutes = {m}");
        refused(ke, &with(841), "countries[KE].utc_offset_minutes", "not 841");
        refused(ke, &with(-841), "countries[KE].utc_offset_minutes", "±14 hours");
        accepted(ke, &with(840));
        accepted(ke, &with(-840));
    }

    #[test]
    fn id_type_names_are_unique_and_well_formed() {
        refused("name = \"passport\"", "name = \"national_id\"", "countries[KE].id_types[1].name", "duplicate ID type national_id");
        refused("name = \"passport\"", "name = \"Passport\"", "countries[KE].id_types[1].name", "lower-case");
        refused("name = \"passport\"", "name = \"\"", "countries[KE].id_types[1].name", "lower-case");
    }

    #[test]
    fn id_type_patterns_compile() {
        refused(
            "pattern = '[A-Z]{1,2}[0-9]{6,8}'",
            "pattern = '[A-Z'",
            "countries[KE].id_types[1].pattern",
            "not a valid regular expression",
        );
        refused("pattern = '[A-Z]{1,2}[0-9]{6,8}'", "pattern = 'a)|(b'", "countries[KE].id_types[1].pattern", "\"a)|(b\"");
    }

    #[test]
    fn grants_tier_names_an_existing_tier() {
        refused(
            "pattern = '^[0-9]{7,8}$'\ngrants_tier = 1",
            "pattern = '^[0-9]{7,8}$'\ngrants_tier = 2",
            "countries[KE].id_types[0].grants_tier",
            "no KYC tier 2",
        );
        refused("grants_tier = 1 }", "grants_tier = 5 }", "countries[UG].id_types[0].grants_tier", "no KYC tier 5");
        accepted("pattern = '^[0-9]{7,8}$'\ngrants_tier = 1", "pattern = '^[0-9]{7,8}$'\ngrants_tier = 0");
    }

    #[test]
    fn pin_length_is_4_to_6() {
        let ke = "pin_length = 4\nmax_pin_attempts = 3\nmax_charge = \"1000\"";
        let with = |p: u8| format!("pin_length = {p}\nmax_pin_attempts = 3\nmax_charge = \"1000\"");
        refused(ke, &with(3), "countries[KE].pin_length", "4 to 6, not 3");
        refused(ke, &with(7), "countries[KE].pin_length", "4 to 6, not 7");
        accepted(ke, &with(6));
    }

    #[test]
    fn max_pin_attempts_is_1_to_10() {
        let ke = "max_pin_attempts = 3\nmax_charge = \"1000\"";
        let with = |a: u8| format!("max_pin_attempts = {a}\nmax_charge = \"1000\"");
        refused(ke, &with(0), "countries[KE].max_pin_attempts", "1 to 10, not 0");
        refused(ke, &with(11), "countries[KE].max_pin_attempts", "1 to 10, not 11");
        accepted(ke, &with(1));
        accepted(ke, &with(10));
    }

    #[test]
    fn tiers_are_numbered_from_zero_in_order() {
        refused("tier = 1\nper_transaction", "tier = 2\nper_transaction", "countries[KE].kyc_tiers[1].tier", "expected tier 1");
        refused("tier = 0\nper_transaction", "tier = 1\nper_transaction", "countries[KE].kyc_tiers[0].tier", "expected tier 0");
        refused(
            "{ tier = 1, per_transaction = \"100000\"",
            "{ tier = 0, per_transaction = \"100000\"",
            "countries[UG].kyc_tiers[1].tier",
            "found 0",
        );
    }

    #[test]
    fn at_least_one_tier() {
        let from = "kyc_tiers = [\n  { tier = 0, per_transaction = \"50000\", daily = \"100000\", max_balance = \"100000\", requirements = [] },\n  { tier = 1, per_transaction = \"100000\", daily = \"200000\", max_balance = \"500000\", requirements = [\"NIN\"] },\n]";
        refused(from, "kyc_tiers = []", "countries[UG].kyc_tiers", "at least tier 0");
    }

    #[test]
    fn per_transaction_is_at_most_daily() {
        refused(
            "daily = \"2000\"",
            "daily = \"900\"",
            "countries[KE].kyc_tiers[1].per_transaction",
            "1000.00 exceeds the daily limit 900.00",
        );
        accepted("daily = \"2000\"", "daily = \"1000\"");
    }

    #[test]
    fn limits_do_not_decrease_across_tiers() {
        refused("max_balance = \"5000\"", "max_balance = \"499.99\"", "countries[KE].kyc_tiers[1].max_balance", "below tier 0's 500.00");
        refused(
            "per_transaction = \"1000\"",
            "per_transaction = \"99\"",
            "countries[KE].kyc_tiers[1].per_transaction",
            "99.00 is below tier 0's 100.00",
        );
        refused(
            "max_balance = \"500000\"",
            "max_balance = \"99999\"",
            "countries[UG].kyc_tiers[1].max_balance",
            "below tier 0's 100000.00",
        );
        let err = error_of(&mutated("daily = \"200\"", "daily = \"2000.01\""));
        assert_eq!(err.entry(), Some("countries[KE].kyc_tiers[1].daily"), "{err}");
        accepted("max_balance = \"5000\"", "max_balance = \"500\"");
        accepted("max_balance = \"500000\"", "max_balance = \"100000\"");
    }

    #[test]
    fn limits_are_positive_exact_amounts() {
        refused("daily = \"200\"", "daily = \"0\"", "countries[KE].kyc_tiers[0].daily", "greater than zero");
        refused(
            "max_balance = \"500\"",
            "max_balance = \"500.001\"",
            "countries[KE].kyc_tiers[0].max_balance",
            "more decimals than KES allows (2)",
        );
        refused("max_balance = \"500\"", "max_balance = \"-500\"", "countries[KE].kyc_tiers[0].max_balance", "decimal number");
        refused("max_balance = \"500000\"", "max_balance = \"500000.5\"", "countries[UG].kyc_tiers[1].max_balance", "UGX allows (0)");
    }

    #[test]
    fn max_charge_is_positive_and_within_the_top_tier() {
        refused("max_charge = \"1000\"", "max_charge = \"0\"", "countries[KE].max_charge", "greater than zero");
        refused(
            "max_charge = \"1000\"",
            "max_charge = \"1000.01\"",
            "countries[KE].max_charge",
            "exceeds the top KYC tier's per_transaction 1000.00",
        );
        refused("max_charge = \"100000\"", "max_charge = \"100001\"", "countries[UG].max_charge", "exceeds");
        accepted("max_charge = \"1000\"", "max_charge = \"0.01\"");
    }

    #[test]
    fn fee_operation_and_payer_are_known() {
        refused("[countries.fees.cash_out]", "[countries.fees.cashout]", "countries[KE].fees.cashout", "unknown fee operation \"cashout\"");
        refused("paid_by = \"payee\"", "paid_by = \"merchant\"", "countries[KE].fees.charge.paid_by", "unknown fee payer \"merchant\"");
    }

    #[test]
    fn a_schedule_has_bands() {
        refused(
            "bands = [\n  { min = \"0.01\", max = \"1000\", fee = \"10\", agent_commission = \"6\" },\n]",
            "bands = []",
            "countries[KE].fees.cash_out.bands",
            "at least one band",
        );
    }

    #[test]
    fn bands_start_at_the_smallest_unit() {
        refused(
            "min = \"0.01\", max = \"1000\"",
            "min = \"0.02\", max = \"1000\"",
            "countries[KE].fees.cash_out.bands[0].min",
            "smallest unit 0.01, not 0.02",
        );
        refused(
            "{ min = \"1\", max = \"500\"",
            "{ min = \"2\", max = \"500\"",
            "countries[UG].fees.p2p.bands[0].min",
            "smallest unit 1.00",
        );
        refused(
            "min = \"0.01\", max = \"1000\"",
            "min = \"0\", max = \"1000\"",
            "countries[KE].fees.cash_out.bands[0].min",
            "greater than zero",
        );
    }

    #[test]
    fn bands_are_sorted() {
        refused(
            "min = \"500.01\"",
            "min = \"50\"",
            "countries[KE].fees.charge.bands[2]",
            "out of order: min 50.00 is not above band 1's min 100.01",
        );
    }

    #[test]
    fn bands_do_not_overlap() {
        let err = error_of(&mutated("min = \"500.01\"", "min = \"500\""));
        assert_eq!(err.to_string(), "countries[KE].fees.charge.bands[2]: overlaps band 1");
        refused(
            "{ min = \"501\", max = \"100000\"",
            "{ min = \"400\", max = \"100000\"",
            "countries[UG].fees.p2p.bands[1]",
            "overlaps band 0",
        );
    }

    #[test]
    fn bands_are_contiguous() {
        refused(
            "min = \"500.01\"",
            "min = \"500.02\"",
            "countries[KE].fees.charge.bands[2]",
            "leaves a gap after band 1: min is 500.02, expected 500.01",
        );
        refused(
            "{ min = \"501\", max = \"100000\"",
            "{ min = \"502\", max = \"100000\"",
            "countries[UG].fees.p2p.bands[1]",
            "gap after band 0",
        );
    }

    #[test]
    fn band_min_is_at_most_max() {
        refused("max = \"500\"\n", "max = \"100\"\n", "countries[KE].fees.charge.bands[1]", "min 100.01 is above max 100.00");
        // A band of a single amount is fine.
        accepted(
            "max = \"500\"\nfee = \"2\"\n\n[[countries.fees.charge.bands]]\nmin = \"500.01\"",
            "max = \"100.01\"\nfee = \"2\"\n\n[[countries.fees.charge.bands]]\nmin = \"100.02\"",
        );
    }

    #[test]
    fn bands_cover_the_top_tier() {
        refused(
            "min = \"500.01\"\nmax = \"1000\"",
            "min = \"500.01\"\nmax = \"999.99\"",
            "countries[KE].fees.charge.bands[2].max",
            "below the top KYC tier's per_transaction 1000.00",
        );
        refused(
            "max = \"100000\", fee = \"100\"",
            "max = \"99999\", fee = \"100\"",
            "countries[UG].fees.p2p.bands[1].max",
            "cover every allowed amount",
        );
    }

    #[test]
    fn fees_are_non_negative_exact_amounts() {
        refused("fee = \"2\"", "fee = \"-2\"", "countries[KE].fees.charge.bands[1].fee", "decimal number");
        refused("fee = \"2\"", "fee = \"2.001\"", "countries[KE].fees.charge.bands[1].fee", "more decimals");
        refused("fee = \"100\" }", "fee = \"0.5\" }", "countries[UG].fees.p2p.bands[1].fee", "UGX allows (0)");
        refused(
            "agent_commission = \"6\"",
            "agent_commission = \"-1\"",
            "countries[KE].fees.cash_out.bands[0].agent_commission",
            "decimal number",
        );
        accepted("fee = \"2\"", "fee = \"0.00\"");
        accepted("agent_commission = \"6\"", "agent_commission = \"0\"");
    }

    #[test]
    fn agent_commission_is_at_most_the_fee() {
        refused(
            "agent_commission = \"6\"",
            "agent_commission = \"10.01\"",
            "countries[KE].fees.cash_out.bands[0].agent_commission",
            "10.01 exceeds the band's fee 10.00",
        );
        accepted("agent_commission = \"6\"", "agent_commission = \"10\"");
    }

    #[test]
    fn a_payee_fee_is_below_the_band_min() {
        refused("fee = \"2\"", "fee = \"100.01\"", "countries[KE].fees.charge.bands[1].fee", "below the band's min 100.01");
        refused("fee = \"0\"\n", "fee = \"0.01\"\n", "countries[KE].fees.charge.bands[0].fee", "paid by the payee");
        accepted("fee = \"2\"", "fee = \"100\"");
        // The same fee is fine when the payer bears it.
        let text = mutated("fee = \"2\"", "fee = \"100.01\"").replacen("paid_by = \"payee\"", "paid_by = \"payer\"", 1);
        assert!(parse(&text).is_ok());
    }
}
