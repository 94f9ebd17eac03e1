//! Per-country configuration of Malipo: numbering plans, currencies, time zones, ID types, PIN
//! rules, KYC tiers with their limits, and fee schedules. Loaded from a versioned TOML file
//! (`config/countries.toml` is built in) and validated at start-up; a bad file is refused with a
//! message naming the entry. Pure domain crate: no I/O except [`Countries::load`].

// Integers never meet `+ - *` unchecked here: money goes through `MinorUnit`'s checked
// operations, counters and times saturate or are checked (an overflow must not wrap silently).
#![cfg_attr(not(test), deny(clippy::arithmetic_side_effects))]

mod country;
mod error;
mod fees;
mod file;
mod limits;
mod pin;

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

pub use country::{Country, IdType, KycTier};
pub use error::ConfigError;
pub use fees::{FeeBand, FeeOperation, FeePayer, FeeSchedule, UnknownName};
pub use limits::LimitBreach;
use malipo_core::{Currency, Msisdn, MsisdnError};
pub use pin::{is_weak_pin, PinError};

/// The countries file shipped in the repository.
pub const BUILTIN_TOML: &str = include_str!("../../../config/countries.toml");

/// The served countries, validated, in file order.
#[derive(Clone, Debug)]
pub struct Countries {
    countries: Vec<Country>,
}

impl Countries {
    /// The file shipped in the repository (`config/countries.toml`, built into the binary).
    ///
    /// # Errors
    /// When the shipped file is invalid (a test guards against it).
    pub fn builtin() -> Result<Self, ConfigError> {
        Self::from_toml_str(BUILTIN_TOML)
    }

    /// Parses and validates a countries file's text.
    ///
    /// # Errors
    /// [`ConfigError::Toml`] for bad TOML and unknown, missing or mistyped fields;
    /// [`ConfigError::Invalid`] for values that break a rule.
    pub fn from_toml_str(text: &str) -> Result<Self, ConfigError> {
        file::parse(text).map(|countries| Countries { countries })
    }

    /// Reads, parses and validates a countries file.
    ///
    /// # Errors
    /// [`ConfigError::Io`] naming the path when it cannot be read; otherwise as
    /// [`Countries::from_toml_str`].
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError::Io { path: path.to_owned(), source: Arc::new(e) })?;
        Self::from_toml_str(&text)
    }

    /// Every country, in file order.
    pub fn all(&self) -> &[Country] {
        &self.countries
    }

    /// The country with ISO 3166-1 alpha-2 code `code` (e.g. `KE`).
    pub fn get(&self, code: &str) -> Option<&Country> {
        self.countries.iter().find(|c| c.code == code)
    }

    /// Parses a phone number: syntax via [`Msisdn::parse`], then the country by dialling-code
    /// prefix, then the length of that country's numbering plan.
    ///
    /// # Errors
    /// [`MsisdnError::Syntax`], [`MsisdnError::UnknownCountry`] or [`MsisdnError::Length`].
    pub fn parse_msisdn(&self, text: &str) -> Result<(Msisdn, &Country), MsisdnError> {
        let msisdn = Msisdn::parse(text)?;
        let country = self.for_msisdn(&msisdn)?;
        Ok((msisdn, country))
    }

    /// The country of a syntactically valid MSISDN (no two dialling codes are prefixes of one
    /// another, so at most one matches).
    ///
    /// # Errors
    /// [`MsisdnError::UnknownCountry`] when no dialling code matches; [`MsisdnError::Length`] when
    /// the number's length is not the country's.
    pub fn for_msisdn(&self, msisdn: &Msisdn) -> Result<&Country, MsisdnError> {
        let digits = msisdn.as_str();
        let country = self.countries.iter().find(|c| digits.starts_with(&c.dialling_code)).ok_or(MsisdnError::UnknownCountry)?;
        if digits.len() == country.msisdn_length {
            Ok(country)
        } else {
            Err(MsisdnError::Length { expected: country.msisdn_length })
        }
    }

    /// The distinct currencies of the served countries, sorted.
    pub fn currencies(&self) -> Vec<Currency> {
        self.countries.iter().map(|c| c.currency).collect::<BTreeSet<_>>().into_iter().collect()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use malipo_core::{MinorUnit, Timestamp};

    fn builtin() -> Countries {
        Countries::builtin().unwrap_or_else(|e| panic!("builtin countries file: {e}"))
    }

    fn kenya() -> Country {
        builtin().get("KE").cloned().expect("Kenya")
    }

    fn kes(major: i64) -> MinorUnit {
        MinorUnit::new(major * 100)
    }

    fn ts(text: &str) -> Timestamp {
        Timestamp::parse_rfc3339(text).unwrap()
    }

    #[test]
    fn builtin_file_has_the_five_countries_in_order() {
        let c = builtin();
        let codes: Vec<&str> = c.all().iter().map(|c| c.code.as_str()).collect();
        assert_eq!(codes, ["KE", "UG", "TZ", "RW", "GH"]);
        let expect = [
            ("UG", "256", "UGX", 0, "Africa/Kampala", 180),
            ("TZ", "255", "TZS", 2, "Africa/Dar_es_Salaam", 180),
            ("RW", "250", "RWF", 0, "Africa/Kigali", 120),
            ("GH", "233", "GHS", 2, "Africa/Accra", 0),
        ];
        for (code, dial, cur, minor, tz, offset) in expect {
            let k = c.get(code).expect(code);
            assert_eq!(k.dialling_code, dial, "{code}");
            assert_eq!(k.msisdn_length, 12, "{code}");
            assert_eq!(k.currency.as_str(), cur, "{code}");
            assert_eq!(k.minor_units, minor, "{code}");
            assert_eq!(k.time_zone, tz, "{code}");
            assert_eq!(k.utc_offset_minutes, offset, "{code}");
        }
        for k in c.all() {
            assert_eq!((k.pin_length, k.max_pin_attempts), (4, 3), "{}", k.code);
            let tiers: Vec<u8> = k.kyc_tiers.iter().map(|t| t.tier).collect();
            assert_eq!(tiers, [0, 1, 2], "{}", k.code);
            assert!(k.id_types.iter().any(|t| t.grants_tier == 1), "{}", k.code);
            assert!(k.id_types.iter().any(|t| t.grants_tier == 2), "{}", k.code);
            for op in FeeOperation::ALL {
                assert!(k.fee_schedule(op).is_some(), "{} {op}", k.code);
            }
        }
        assert!(c.get("ke").is_none());
        assert!(c.get("NG").is_none());
        let currencies: Vec<String> = c.currencies().iter().map(Currency::to_string).collect();
        assert_eq!(currencies, ["GHS", "KES", "RWF", "TZS", "UGX"]);
    }

    #[test]
    fn kenya_has_the_documented_values() {
        let ke = kenya();
        assert_eq!(ke.name, "Kenya");
        assert_eq!(ke.dialling_code, "254");
        assert_eq!(ke.msisdn_length, 12);
        assert_eq!(ke.currency, Currency::KES);
        assert_eq!(ke.minor_units, 2);
        assert_eq!(ke.time_zone, "Africa/Nairobi");
        assert_eq!(ke.utc_offset_minutes, 180);
        assert_eq!(ke.max_charge, kes(250_000));
        let limits: Vec<(u8, MinorUnit, MinorUnit, MinorUnit)> =
            ke.kyc_tiers.iter().map(|t| (t.tier, t.per_transaction, t.daily, t.max_balance)).collect();
        assert_eq!(
            limits,
            [
                (0, kes(5_000), kes(10_000), kes(20_000)),
                (1, kes(150_000), kes(300_000), kes(300_000)),
                (2, kes(250_000), kes(500_000), kes(500_000)),
            ]
        );
        assert_eq!(ke.top_tier().tier, 2);
        assert_eq!(ke.tier(1).map(|t| t.daily), Some(kes(300_000)));
        assert!(ke.tier(3).is_none());
        assert_eq!(ke.tier_for_id(None), 0);
        assert_eq!(ke.tier_for_id(Some("national_id")), 1);
        assert_eq!(ke.tier_for_id(Some("passport")), 1);
        assert_eq!(ke.tier_for_id(Some("kra_pin")), 2);
        assert_eq!(ke.tier_for_id(Some("driving_licence")), 0);
        let payers: Vec<(FeeOperation, FeePayer)> = ke.fees.iter().map(|(op, s)| (*op, s.paid_by)).collect();
        assert_eq!(
            payers,
            [
                (FeeOperation::Charge, FeePayer::Payee),
                (FeeOperation::Payout, FeePayer::Payer),
                (FeeOperation::P2p, FeePayer::Payer),
                (FeeOperation::CashIn, FeePayer::Payer),
                (FeeOperation::CashOut, FeePayer::Payer),
                (FeeOperation::PaymentRequest, FeePayer::Payee),
            ]
        );
    }

    #[test]
    fn id_patterns_of_the_builtin_file() {
        let c = builtin();
        let check = |code: &str, id: &str, good: &[&str], bad: &[&str]| {
            let t = c.get(code).and_then(|k| k.id_type(id)).unwrap_or_else(|| panic!("{code} {id}"));
            for g in good {
                assert!(t.matches(g), "{code} {id} should accept {g:?}");
            }
            for b in bad {
                assert!(!t.matches(b), "{code} {id} should refuse {b:?}");
            }
        };
        check("KE", "national_id", &["1234567", "12345678"], &["123456", "123456789", "12345678x", "x1234567", ""]);
        check("KE", "kra_pin", &["A012345678Z", "P051234567K"], &["A012345678", "B012345678Z", "a012345678z"]);
        check("UG", "nin", &["CM12345678ABCD", "CF0000000000XY"], &["CX12345678ABCD", "CM12345678ABC", "CM12345678ABCDE"]);
        check("GH", "ghana_card", &["GHA-123456789-0"], &["GHA-12345678-0", "GHA123456789-0", "gha-123456789-0", "GHA-123456789-01"]);
        check("TZ", "nida", &["19900101-12345-00001-23", "19900101123450000123"], &["1990010112345000012", "19900101-12345-00001-2x"]);
        check("RW", "national_id", &["1199080012345678"], &["119908001234567", "4199080012345678"]);
        assert!(c.get("KE").and_then(|k| k.id_type("voter_id")).is_none());
    }

    #[test]
    fn msisdns_resolve_to_their_country() {
        let c = builtin();
        let (m, k) = c.parse_msisdn("254712345678").unwrap();
        assert_eq!((m.as_str(), k.code.as_str()), ("254712345678", "KE"));
        assert_eq!(c.parse_msisdn("25471234567").map(|_| ()), Err(MsisdnError::Length { expected: 12 }));
        assert_eq!(c.parse_msisdn("2547123456789").map(|_| ()), Err(MsisdnError::Length { expected: 12 }));
        assert_eq!(c.parse_msisdn("999123456789").map(|_| ()), Err(MsisdnError::UnknownCountry));
        assert_eq!(c.parse_msisdn("234803123456").map(|_| ()), Err(MsisdnError::UnknownCountry), "Nigeria");
        assert_eq!(c.parse_msisdn("0712345678").map(|_| ()), Err(MsisdnError::Syntax));
        assert_eq!(c.parse_msisdn("+254712345678").map(|_| ()), Err(MsisdnError::Syntax));
        let samples =
            [("KE", "254712345678"), ("UG", "256772123456"), ("TZ", "255754123456"), ("RW", "250788123456"), ("GH", "233244123456")];
        for (code, number) in samples {
            let (_, k) = c.parse_msisdn(number).unwrap_or_else(|e| panic!("{number}: {e}"));
            assert_eq!(k.code, code, "{number}");
            let m = Msisdn::parse(number).unwrap();
            assert_eq!(c.for_msisdn(&m).map(|k| k.code.as_str()), Ok(code));
        }
        assert_eq!(samples.len(), c.all().len(), "a sample number for every country");
    }

    #[test]
    fn every_band_is_found_at_its_edges() {
        for k in builtin().all() {
            for (op, s) in &k.fees {
                for (i, b) in s.bands.iter().enumerate() {
                    assert_eq!(s.band_for(b.min), Some(b), "{} {op} band {i} min", k.code);
                    assert_eq!(s.band_for(b.max), Some(b), "{} {op} band {i} max", k.code);
                    let beyond = MinorUnit::new(b.max.get() + 1);
                    assert_eq!(s.band_for(beyond), s.bands.get(i + 1), "{} {op} band {i} max + 1", k.code);
                    assert_eq!(k.fee(*op, b.min), b.fee);
                    assert_eq!(k.fee(*op, b.max), b.fee);
                    assert!(b.agent_commission <= b.fee);
                }
                assert_eq!(s.band_for(MinorUnit::new(1)).map(|b| b.min), Some(MinorUnit::new(1)));
                assert!(s.band_for(k.top_tier().per_transaction).is_some(), "{} {op} covers the top tier", k.code);
                assert!(s.band_for(k.max_charge).is_some(), "{} {op} covers max_charge", k.code);
            }
        }
    }

    #[test]
    fn kenya_fees() {
        let ke = kenya();
        let p2p = |major_cents: i64| ke.fee(FeeOperation::P2p, MinorUnit::new(major_cents));
        assert_eq!(p2p(1), MinorUnit::ZERO);
        assert_eq!(p2p(10_000), MinorUnit::ZERO, "100.00 is free");
        assert_eq!(p2p(10_001), kes(7), "100.01");
        assert_eq!(p2p(50_000), kes(7), "500.00");
        assert_eq!(p2p(50_001), kes(13), "500.01");
        assert_eq!(p2p(25_000_000), kes(108), "250,000.00");
        assert_eq!(ke.fee(FeeOperation::Charge, kes(200)), MinorUnit::ZERO);
        assert_eq!(ke.fee(FeeOperation::Charge, kes(1_000)), kes(4));
        assert_eq!(ke.fee(FeeOperation::Charge, kes(250_000)), kes(200));
        assert_eq!(ke.fee(FeeOperation::Charge, kes(300_000)), kes(200), "above the last band: its fee");
        assert_eq!(ke.fee(FeeOperation::Charge, MinorUnit::ZERO), MinorUnit::ZERO);
        assert_eq!(ke.fee(FeeOperation::CashOut, kes(5_000)), kes(69));
        assert_eq!(ke.agent_commission(FeeOperation::CashOut, kes(5_000)), kes(45));
        assert_eq!(ke.agent_commission(FeeOperation::P2p, kes(5_000)), MinorUnit::ZERO);
        let schedule = ke.fee_schedule(FeeOperation::Payout).unwrap();
        assert_eq!(schedule.paid_by, FeePayer::Payer);
        assert_eq!(schedule.band_for(kes(1_000)).map(|b| b.fee), Some(kes(5)));
        assert_eq!(schedule.band_for(MinorUnit::new(100_001)).map(|b| b.fee), Some(kes(9)));

        let mut no_p2p = ke.clone();
        no_p2p.fees.remove(&FeeOperation::P2p);
        assert_eq!(no_p2p.fee(FeeOperation::P2p, kes(5_000)), MinorUnit::ZERO, "no schedule: free");
        assert!(no_p2p.fee_schedule(FeeOperation::P2p).is_none());
    }

    #[test]
    fn cash_in_is_free_everywhere() {
        for k in builtin().all() {
            let s = k.fee_schedule(FeeOperation::CashIn).unwrap();
            assert_eq!(s.bands.len(), 1, "{}", k.code);
            for amount in [MinorUnit::new(1), k.top_tier().per_transaction, MinorUnit::new(123_456)] {
                assert_eq!(k.fee(FeeOperation::CashIn, amount), MinorUnit::ZERO, "{}", k.code);
            }
        }
    }

    #[test]
    fn payee_fees_never_exceed_the_amount() {
        for k in builtin().all() {
            for (op, s) in k.fees.iter().filter(|(_, s)| s.paid_by == FeePayer::Payee) {
                for b in &s.bands {
                    assert!(b.fee < b.min, "{} {op} {b:?}", k.code);
                }
            }
        }
    }

    #[test]
    fn kenya_local_day_starts_at_local_midnight() {
        let ke = kenya();
        let day = (ts("2026-11-22T21:00:00Z"), ts("2026-11-23T21:00:00Z"));
        assert_eq!(ke.local_day(ts("2026-11-22T21:30:00Z")), day, "local 2026-11-23 00:30");
        assert_eq!(ke.local_day(ts("2026-11-22T21:00:00Z")), day, "local midnight belongs to its day");
        assert_eq!(ke.local_day(ts("2026-11-23T20:59:59.999999Z")), day, "last microsecond");
        assert_eq!(ke.local_day(ts("2026-11-23T21:00:00Z")).0, day.1, "next day");
        assert_eq!(ke.local_day(ts("2026-11-22T20:59:59Z")).1, day.0, "previous day");
        assert_eq!(day.1.as_micros() - day.0.as_micros(), 86_400_000_000);
    }

    #[test]
    fn ghana_local_day_is_the_utc_day_and_rwanda_is_two_hours_ahead() {
        let c = builtin();
        let gh = c.get("GH").unwrap();
        assert_eq!(gh.local_day(ts("2026-11-22T21:30:00Z")), (ts("2026-11-22T00:00:00Z"), ts("2026-11-23T00:00:00Z")));
        assert_eq!(gh.local_day(ts("2026-11-22T00:00:00Z")).0, ts("2026-11-22T00:00:00Z"));
        let rw = c.get("RW").unwrap();
        assert_eq!(rw.local_day(ts("2026-11-22T22:30:00Z")), (ts("2026-11-22T22:00:00Z"), ts("2026-11-23T22:00:00Z")));
        assert_eq!(rw.local_day(ts("2026-11-22T21:30:00Z")), (ts("2026-11-21T22:00:00Z"), ts("2026-11-22T22:00:00Z")));
    }

    #[test]
    fn local_day_handles_negative_offsets_and_times_before_1970() {
        let mut west = kenya();
        west.utc_offset_minutes = -300;
        assert_eq!(west.local_day(ts("1969-12-31T23:00:00Z")), (ts("1969-12-31T05:00:00Z"), ts("1970-01-01T05:00:00Z")));
        assert_eq!(west.local_day(ts("1970-01-01T04:00:00Z")), (ts("1969-12-31T05:00:00Z"), ts("1970-01-01T05:00:00Z")));
    }

    #[test]
    fn load_reads_the_shipped_file_and_names_a_missing_one() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../config/countries.toml");
        let loaded = Countries::load(&path).unwrap();
        assert_eq!(loaded.all().len(), builtin().all().len());
        let missing = Path::new(env!("CARGO_MANIFEST_DIR")).join("no-such-countries.toml");
        let err = Countries::load(&missing).unwrap_err();
        assert!(matches!(err, ConfigError::Io { .. }), "{err:?}");
        assert!(err.to_string().contains("no-such-countries.toml"), "{err}");
    }

    #[test]
    fn top_tier_of_a_country_without_tiers_permits_nothing() {
        let mut k = kenya();
        k.kyc_tiers.clear();
        assert_eq!(k.top_tier().per_transaction, MinorUnit::ZERO);
        assert_eq!(k.top_tier().daily, MinorUnit::ZERO);
    }
}
