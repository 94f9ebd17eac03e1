//! The wire shapes of the Channels group (contract section 11): the USSD callback, the
//! countries' configuration and the sandbox helpers' bodies.

use std::collections::BTreeMap;

use malipo_countries::Country;
use malipo_service::{NewSandboxWallet, NewSimulation};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use utoipa::ToSchema;

use crate::problem::ApiError;
use crate::schema::Msisdn;
use crate::wire::{amount_text, money, DecimalAmount};

/// The fields of an Africa's Talking USSD callback (`POST /ussd`), as JSON or as a form.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UssdCallback {
    /// The gateway's session id (1–128 visible ASCII characters). Required.
    #[serde(rename = "sessionId")]
    #[schema(value_type = String, required = true, pattern = "^[!-~]{1,128}$", example = "ATUid_0f6bc1c1a8b3f5d2")]
    pub session_id: Option<String>,
    /// The dialled code.
    #[serde(rename = "serviceCode")]
    #[schema(max_length = 64, example = "*384*1#")]
    pub service_code: Option<String>,
    /// The caller's number, international digits (a leading `+` is accepted). Required.
    #[serde(rename = "phoneNumber")]
    #[schema(value_type = String, required = true, pattern = "^\\+?[1-9][0-9]{7,14}$", example = "+254712345678")]
    pub phone_number: Option<String>,
    /// Every input of the session joined by `*` (empty or absent on the first request).
    #[schema(example = "1*254798765432")]
    pub text: Option<String>,
    /// The caller's network, if the gateway says.
    #[serde(rename = "networkCode")]
    #[schema(max_length = 64, example = "63902")]
    pub network_code: Option<String>,
}

/// A configured identity document type.
#[derive(Debug, Serialize, ToSchema)]
pub struct IdTypeDto {
    /// The name used in requests, e.g. `national_id`.
    pub name: String,
    /// The regular expression an ID number must match in full (anchored).
    pub pattern: String,
    /// The KYC tier a wallet opened with this document gets.
    pub grants_tier: u8,
}

/// A KYC tier and its limits.
#[derive(Debug, Serialize, ToSchema)]
pub struct KycTierDto {
    /// Tier number; 0 is a wallet opened without an ID.
    pub tier: u8,
    /// Largest single movement.
    #[schema(value_type = f64)]
    pub per_transaction: Box<RawValue>,
    /// Largest total per local calendar day.
    #[schema(value_type = f64)]
    pub daily: Box<RawValue>,
    /// Largest wallet balance.
    #[schema(value_type = f64)]
    pub max_balance: Box<RawValue>,
    /// What a customer must present, for people.
    pub requirements: Vec<String>,
}

/// A fee band: the fee for amounts from `min` to `max` inclusive.
#[derive(Debug, Serialize, ToSchema)]
pub struct FeeBandDto {
    /// Smallest amount in the band.
    #[schema(value_type = f64)]
    pub min: Box<RawValue>,
    /// Largest amount in the band.
    #[schema(value_type = f64)]
    pub max: Box<RawValue>,
    /// The fee.
    #[schema(value_type = f64)]
    pub fee: Box<RawValue>,
    /// The part of the fee that goes to the agent (cash-out).
    #[schema(value_type = f64)]
    pub agent_commission: Box<RawValue>,
}

/// One operation's fees.
#[derive(Debug, Serialize, ToSchema)]
pub struct FeeScheduleDto {
    /// Who bears the fee: `payer` (pays amount + fee) or `payee` (receives amount − fee).
    pub paid_by: &'static str,
    /// Contiguous bands, ascending; amounts above the last band pay the last band's fee.
    pub bands: Vec<FeeBandDto>,
}

/// A served country's configuration.
#[derive(Debug, Serialize, ToSchema)]
pub struct CountryDto {
    /// ISO 3166-1 alpha-2.
    #[schema(example = "KE")]
    pub country: String,
    /// English name.
    #[schema(example = "Kenya")]
    pub name: String,
    /// E.164 country calling code, digits only.
    #[schema(example = "254")]
    pub dialling_code: String,
    /// Total digits of a number, the dialling code included.
    #[schema(example = 12)]
    pub msisdn_length: usize,
    /// ISO 4217 wallet currency.
    #[schema(example = "KES")]
    pub currency: String,
    /// ISO 4217 minor units of the currency.
    pub minor_units: u8,
    /// IANA time zone (daily limits follow its calendar day).
    #[schema(example = "Africa/Nairobi")]
    pub time_zone: String,
    /// The zone's fixed offset from UTC in minutes.
    #[schema(example = 180)]
    pub utc_offset_minutes: i32,
    /// Accepted identity documents.
    pub id_types: Vec<IdTypeDto>,
    /// Digits of a wallet PIN.
    pub pin_length: u8,
    /// Wrong PINs in a row after which the wallet locks.
    pub max_pin_attempts: u8,
    /// Largest single charge.
    #[schema(value_type = f64)]
    pub max_charge: Box<RawValue>,
    /// KYC tiers, ascending from 0.
    pub kyc_tiers: Vec<KycTierDto>,
    /// Fee schedules by operation (`charge`, `payout`, `p2p`, `cash_in`, `cash_out`,
    /// `payment_request`); an operation without a schedule is free.
    pub fees: BTreeMap<&'static str, FeeScheduleDto>,
}

impl From<&Country> for CountryDto {
    fn from(c: &Country) -> Self {
        let cur = c.currency;
        CountryDto {
            country: c.code.clone(),
            name: c.name.clone(),
            dialling_code: c.dialling_code.clone(),
            msisdn_length: c.msisdn_length,
            currency: cur.to_string(),
            minor_units: c.minor_units,
            time_zone: c.time_zone.clone(),
            utc_offset_minutes: c.utc_offset_minutes,
            id_types: c
                .id_types
                .iter()
                .map(|t| IdTypeDto { name: t.name.clone(), pattern: t.pattern.clone(), grants_tier: t.grants_tier })
                .collect(),
            pin_length: c.pin_length,
            max_pin_attempts: c.max_pin_attempts,
            max_charge: money(c.max_charge, cur),
            kyc_tiers: c
                .kyc_tiers
                .iter()
                .map(|t| KycTierDto {
                    tier: t.tier,
                    per_transaction: money(t.per_transaction, cur),
                    daily: money(t.daily, cur),
                    max_balance: money(t.max_balance, cur),
                    requirements: t.requirements.clone(),
                })
                .collect(),
            fees: c
                .fees
                .iter()
                .map(|(op, s)| {
                    let bands = s
                        .bands
                        .iter()
                        .map(|b| FeeBandDto {
                            min: money(b.min, cur),
                            max: money(b.max, cur),
                            fee: money(b.fee, cur),
                            agent_commission: money(b.agent_commission, cur),
                        })
                        .collect();
                    (op.as_str(), FeeScheduleDto { paid_by: s.paid_by.as_str(), bands })
                })
                .collect(),
        }
    }
}

/// `POST /sandbox/charges/{charge_ref}/simulate` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SimulateRequest {
    /// `approve`, `decline`, `wrong_pin`, `expire` or `fail`.
    #[schema(pattern = "^(approve|decline|wrong_pin|expire|fail)$")]
    pub action: String,
}

impl SimulateRequest {
    /// The use case's raw input for the charge `charge_ref` (the path's).
    pub fn into_new(self, charge_ref: String) -> NewSimulation {
        NewSimulation { charge_ref, action: self.action }
    }
}

/// `POST /sandbox/wallets` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SandboxWalletRequest {
    /// The test customer's number.
    #[schema(value_type = Msisdn)]
    pub msisdn: String,
    /// Sets the balance (major units); new wallets start with 1,000,000.00.
    #[schema(value_type = Option<DecimalAmount>)]
    pub balance: Option<Box<RawValue>>,
    /// Sets the KYC tier; test wallets start at the country's top tier.
    #[serde(default, deserialize_with = "crate::wire::optional_whole_u8")]
    #[schema(minimum = 0, maximum = 255)]
    pub kyc_tier: Option<u8>,
}

impl SandboxWalletRequest {
    /// The use case's raw input.
    ///
    /// # Errors
    /// 400 when the balance is neither a number nor a string.
    pub fn into_new(self) -> Result<NewSandboxWallet, ApiError> {
        let balance = self.balance.as_deref().map(|b| amount_text("balance", b)).transpose()?;
        Ok(NewSandboxWallet { msisdn: self.msisdn, balance, kyc_tier: self.kyc_tier })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use malipo_countries::Countries;

    use crate::testing::TWO_COUNTRIES;

    #[test]
    fn a_country_renders_every_field_with_two_decimal_amounts() {
        let countries = Countries::from_toml_str(TWO_COUNTRIES).unwrap();
        let ke = countries.get("KE").unwrap();
        let json = serde_json::to_string(&CountryDto::from(ke)).unwrap();
        assert!(json.starts_with(r#"{"country":"KE","name":"Kenya","dialling_code":"254","msisdn_length":12,"currency":"KES","minor_units":2,"time_zone":"Africa/Nairobi","utc_offset_minutes":180,"id_types":[{"name":"national_id","pattern":"^[0-9]{7,8}$","grants_tier":1}],"pin_length":4,"max_pin_attempts":3,"max_charge":250000.00,"#), "{json}");
        assert!(json.contains(r#""kyc_tiers":[{"tier":0,"per_transaction":5000.00,"daily":10000.00,"max_balance":20000.00,"requirements":["registered SIM card"]},{"tier":1,"#), "{json}");
        assert!(json.contains(r#""fees":{"cash_out":{"paid_by":"payer","bands":[{"min":0.01,"max":100.00,"fee":11.00,"agent_commission":7.00},{"min":100.01,"max":250000.00,"fee":29.00,"agent_commission":19.50}]},"charge":{"paid_by":"payee","bands":[{"min":0.01,"max":200.00,"fee":0.00,"agent_commission":0.00},{"min":200.01,"max":250000.00,"fee":2.50,"agent_commission":0.00}]}}}"#), "{json}");
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v["fees"].as_object().unwrap().len(), 2, "one key per configured operation");

        let ug = countries.get("UG").unwrap();
        let json = serde_json::to_string(&CountryDto::from(ug)).unwrap();
        assert!(json.contains(r#""currency":"UGX","minor_units":0,"#), "{json}");
        assert!(json.contains(r#""max_charge":5000000.00,"kyc_tiers":[{"tier":0,"per_transaction":5000000.00,"daily":7000000.00,"max_balance":10000000.00,"requirements":[]}],"fees":{}}"#), "{json}");
        assert!(json.contains(r#""id_types":[],"pin_length":5,"max_pin_attempts":4,"#), "{json}");
    }

    #[test]
    fn every_builtin_amount_has_exactly_two_decimals() {
        let countries = Countries::builtin().unwrap();
        let two = |v: &RawValue| {
            let t = v.get();
            let (int, frac) = t.split_once('.').unwrap_or((t, ""));
            assert!(frac.len() == 2 && !int.is_empty() && int.bytes().all(|b| b.is_ascii_digit()), "{t}");
        };
        for c in countries.all() {
            let dto = CountryDto::from(c);
            two(&dto.max_charge);
            for t in &dto.kyc_tiers {
                [&t.per_transaction, &t.daily, &t.max_balance].into_iter().for_each(|v| two(v));
            }
            for s in dto.fees.values() {
                for b in &s.bands {
                    [&b.min, &b.max, &b.fee, &b.agent_commission].into_iter().for_each(|v| two(v));
                }
            }
        }
    }
}
