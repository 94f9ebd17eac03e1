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
        return Err(ConfigError::invalid(
            "version",
            format!("unsupported version {}; this build reads version {VERSION}", raw.version),
        ));
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
        if let Some(other) = countries.iter().find(|c| {
            c.dialling_code.starts_with(&country.dialling_code) || country.dialling_code.starts_with(&c.dialling_code)
        }) {
            let reason = if other.dialling_code == country.dialling_code {
                format!("{} is also countries[{}]'s dialling code", country.dialling_code, other.code)
            } else {
                format!(
                    "{} and countries[{}]'s {} are prefixes of one another, so numbers would be ambiguous",
                    country.dialling_code, other.code, other.dialling_code
                )
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
        p.bytes().next().is_some_and(|b| b.is_ascii_alphabetic())
            && p.bytes().all(|b| b.is_ascii_alphanumeric() || b"_+-".contains(&b))
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
    let currency = Currency::new(&raw.currency)
        .map_err(|e| ConfigError::invalid(field("currency"), format!("{:?} {e}", raw.currency)))?;
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
        return Err(ConfigError::invalid(
            field("max_pin_attempts"),
            format!("must be 1 to 10, not {}", raw.max_pin_attempts),
        ));
    }

    let kyc_tiers = build_tiers(&at, currency, raw.kyc_tiers)?;
    let top = kyc_tiers.last().map_or(MinorUnit::ZERO, |t| t.per_transaction);
    let id_types = build_id_types(&at, &kyc_tiers, raw.id_types)?;

    let max_charge = amount(currency, &raw.max_charge, &field("max_charge"), false)?;
    if max_charge > top {
        return Err(ConfigError::invalid(
            field("max_charge"),
            format!(
                "{} exceeds the top KYC tier's per_transaction {}",
                currency.format_amount(max_charge),
                currency.format_amount(top)
            ),
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
            return Err(ConfigError::invalid(
                format!("{entry}.grants_tier"),
                format!("there is no KYC tier {}", t.grants_tier),
            ));
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
    let paid_by: FeePayer =
        raw.paid_by.parse().map_err(|e| ConfigError::invalid(format!("{entry}.paid_by"), format!("{e}")))?;
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
            return Err(ConfigError::invalid(
                at,
                format!("min {} is above max {}", fmt(band.min), fmt(band.max)),
            ));
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
                let prev_index = k - 1;
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
                        format!(
                            "leaves a gap after band {prev_index}: min is {}, expected {}",
                            fmt(band.min),
                            fmt(expected)
                        ),
                    ));
                }
            }
        }
        bands.push(band);
    }
    if let Some(last) = bands.last() {
        if last.max < top_per_transaction {
            return Err(ConfigError::invalid(
                format!("{entry}.bands[{}].max", bands.len() - 1),
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
