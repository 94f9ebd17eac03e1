//! One country's configuration: numbering plan, currency, time zone, ID types, PIN rules, KYC
//! tiers and fees.

use std::collections::BTreeMap;

use malipo_core::{Currency, MinorUnit, Timestamp};
use regex::Regex;

use crate::fees::{FeeBand, FeeOperation, FeeSchedule};

/// Microseconds in a day (these countries have no daylight saving time, so every local day
/// lasts exactly 24 hours).
const DAY_MICROS: i64 = 86_400_000_000;

/// The configuration of one served country, validated at start-up.
#[derive(Clone, Debug)]
pub struct Country {
    /// ISO 3166-1 alpha-2 code, e.g. `KE`.
    pub code: String,
    /// English name, e.g. `Kenya`.
    pub name: String,
    /// E.164 country calling code, digits only, e.g. `254`.
    pub dialling_code: String,
    /// Total digits of an MSISDN, the dialling code included (Kenya: 12).
    pub msisdn_length: usize,
    /// The wallet currency.
    pub currency: Currency,
    /// ISO 4217 minor units of `currency` (always equal to `currency.minor_units()`).
    pub minor_units: u8,
    /// IANA time zone name, e.g. `Africa/Nairobi`.
    pub time_zone: String,
    /// The zone's fixed offset from UTC in minutes (+180 for Kenya); these zones have no DST.
    pub utc_offset_minutes: i32,
    /// Accepted identity documents, in file order.
    pub id_types: Vec<IdType>,
    /// Digits of a wallet PIN.
    pub pin_length: u8,
    /// Wrong PINs in a row after which the wallet locks.
    pub max_pin_attempts: u8,
    /// Largest single charge, in minor units.
    pub max_charge: MinorUnit,
    /// KYC tiers, ascending, numbered from 0 (tier 0 = no ID); never empty once validated.
    pub kyc_tiers: Vec<KycTier>,
    /// Fee schedules by operation; an operation without a schedule is free.
    pub fees: BTreeMap<FeeOperation, FeeSchedule>,
}

/// A tier with all-zero limits, answered by [`Country::top_tier`] for a hand-built country
/// without tiers: it permits nothing.
static NO_TIER: KycTier =
    KycTier { tier: 0, per_transaction: MinorUnit::ZERO, daily: MinorUnit::ZERO, max_balance: MinorUnit::ZERO, requirements: Vec::new() };

impl Country {
    /// The KYC tier numbered `tier`.
    pub fn tier(&self, tier: u8) -> Option<&KycTier> {
        self.kyc_tiers.iter().find(|t| t.tier == tier)
    }

    /// The highest KYC tier (a tier with zero limits if the country has none, which validation
    /// never lets through).
    pub fn top_tier(&self) -> &KycTier {
        self.kyc_tiers.last().unwrap_or(&NO_TIER)
    }

    /// The ID type called `name` (e.g. `national_id`).
    pub fn id_type(&self, name: &str) -> Option<&IdType> {
        self.id_types.iter().find(|t| t.name == name)
    }

    /// The tier an ID gives when a wallet is opened: no ID → 0; otherwise the ID type's
    /// `grants_tier`. An unknown ID type also gives 0: check it with [`Country::id_type`] first.
    pub fn tier_for_id(&self, id_type: Option<&str>) -> u8 {
        id_type.and_then(|name| self.id_type(name)).map_or(0, |t| t.grants_tier)
    }

    /// The fee schedule of `op`, if the operation carries fees in this country.
    pub fn fee_schedule(&self, op: FeeOperation) -> Option<&FeeSchedule> {
        self.fees.get(&op)
    }

    /// The band applying to `op` for `amount` (see [`FeeSchedule::band_applying_to`]).
    pub fn fee_band(&self, op: FeeOperation, amount: MinorUnit) -> Option<&FeeBand> {
        self.fee_schedule(op).and_then(|s| s.band_applying_to(amount))
    }

    /// Fee for an operation and amount: the band covering the amount (the last band above the
    /// last band's max); zero when the operation has no schedule or the amount is not positive.
    pub fn fee(&self, op: FeeOperation, amount: MinorUnit) -> MinorUnit {
        self.fee_band(op, amount).map_or(MinorUnit::ZERO, |b| b.fee)
    }

    /// The agent's share of the fee for an operation and amount (cash-out); zero otherwise.
    pub fn agent_commission(&self, op: FeeOperation, amount: MinorUnit) -> MinorUnit {
        self.fee_band(op, amount).map_or(MinorUnit::ZERO, |b| b.agent_commission)
    }

    /// Start (inclusive) and end (exclusive) of the country's local calendar day containing `t`,
    /// as UTC timestamps. Daily limits are counted over this window.
    pub fn local_day(&self, t: Timestamp) -> (Timestamp, Timestamp) {
        let offset = i64::from(self.utc_offset_minutes).saturating_mul(60_000_000);
        let local = t.as_micros().saturating_add(offset);
        let local_midnight = local.saturating_sub(local.rem_euclid(DAY_MICROS));
        let start = local_midnight.saturating_sub(offset);
        (Timestamp::from_micros(start), Timestamp::from_micros(start.saturating_add(DAY_MICROS)))
    }
}

/// An accepted identity document and the format of its number.
#[derive(Clone, Debug)]
pub struct IdType {
    /// Name used in requests, e.g. `national_id`.
    pub name: String,
    /// The pattern an ID number must match in full, anchored (`^...$`).
    pub pattern: String,
    /// The KYC tier a verified document of this type gives.
    pub grants_tier: u8,
    /// `pattern` compiled, always wrapped as `^(?:...)$`.
    regex: Regex,
}

impl IdType {
    /// Builds an ID type. The pattern must match the whole ID number: an unanchored pattern is
    /// wrapped in `^(?:...)$`, and `pattern` holds the anchored text.
    ///
    /// # Errors
    /// When `pattern` is not a valid regular expression.
    pub fn new(name: impl Into<String>, pattern: &str, grants_tier: u8) -> Result<Self, regex::Error> {
        // Compile the pattern alone first, so that text such as `a)|(b` cannot escape the wrapping group.
        Regex::new(pattern)?;
        let wrapped = format!("^(?:{pattern})$");
        let regex = Regex::new(&wrapped)?;
        let plainly_anchored = pattern.starts_with('^') && pattern.ends_with('$') && !pattern.ends_with("\\$") && !pattern.contains('|');
        let pattern = if plainly_anchored { pattern.to_owned() } else { wrapped };
        Ok(IdType { name: name.into(), pattern, grants_tier, regex })
    }

    /// Whether `id_number` matches the pattern in full.
    pub fn matches(&self, id_number: &str) -> bool {
        self.regex.is_match(id_number)
    }
}

/// A KYC tier and its limits, in minor units.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct KycTier {
    /// Tier number; 0 is a wallet opened without ID.
    pub tier: u8,
    /// Largest single movement.
    pub per_transaction: MinorUnit,
    /// Total moved per local calendar day (see [`Country::local_day`]).
    pub daily: MinorUnit,
    /// Largest wallet balance.
    pub max_balance: MinorUnit,
    /// What a customer must present for this tier, for people.
    pub requirements: Vec<String>,
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn unanchored_patterns_match_in_full() {
        let t = IdType::new("national_id", "[0-9]{7,8}", 1).unwrap();
        assert_eq!(t.pattern, "^(?:[0-9]{7,8})$");
        assert!(t.matches("12345678"));
        assert!(t.matches("1234567"));
        assert!(!t.matches("12345678x"));
        assert!(!t.matches("x12345678"));
        assert!(!t.matches("123456789"));
        assert!(!t.matches("123456"));
        assert!(!t.matches(""));
    }

    #[test]
    fn anchored_patterns_are_kept_as_written() {
        let t = IdType::new("national_id", "^[0-9]{7,8}$", 1).unwrap();
        assert_eq!(t.pattern, "^[0-9]{7,8}$");
        assert!(t.matches("12345678"));
        assert!(!t.matches("12345678x"));
        assert!(!t.matches("12345678\n"));
    }

    #[test]
    fn alternations_are_anchored_as_a_whole() {
        // `^A|B$` alone would accept anything starting with A or ending with B.
        let t = IdType::new("x", "^A[0-9]|B[0-9]$", 1).unwrap();
        assert_eq!(t.pattern, "^(?:^A[0-9]|B[0-9]$)$");
        assert!(t.matches("A1") && t.matches("B2"));
        assert!(!t.matches("A1zzz"));
        assert!(!t.matches("zzzB2"));
    }

    #[test]
    fn patterns_cannot_break_out_of_the_wrapping_group() {
        assert!(IdType::new("x", "a)|(b", 1).is_err());
        assert!(IdType::new("x", "[0-9", 1).is_err());
    }
}
