//! Configuration (contract section 11): the countries the API serves, with their numbering
//! plans, currencies, identity documents, PIN rules, KYC tiers and fee schedules.

use std::collections::BTreeMap;

use rust_decimal::Decimal;
use serde::Deserialize;

use crate::client::Call;
use crate::operations as ops;
use crate::{Client, Error};

/// A served country's configuration.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[non_exhaustive]
pub struct Country {
    /// ISO 3166-1 alpha-2, e.g. `KE`.
    pub country: String,
    /// English name.
    pub name: String,
    /// The country calling code, digits only.
    pub dialling_code: String,
    /// Digits of a number, the dialling code included.
    pub msisdn_length: usize,
    /// ISO 4217 wallet currency.
    pub currency: String,
    /// The currency's minor units.
    pub minor_units: u8,
    /// IANA time zone (daily limits follow its calendar day).
    pub time_zone: String,
    /// The zone's offset from UTC in minutes.
    pub utc_offset_minutes: i32,
    /// Accepted identity documents.
    pub id_types: Vec<IdType>,
    /// Digits of a wallet PIN.
    pub pin_length: u8,
    /// Wrong PINs in a row after which a wallet locks.
    pub max_pin_attempts: u8,
    /// The largest single charge.
    #[serde(with = "crate::amount")]
    pub max_charge: Decimal,
    /// KYC tiers, ascending from 0.
    pub kyc_tiers: Vec<KycTier>,
    /// Fee schedules by operation (`charge`, `payout`, `p2p`, `cash_in`, `cash_out`,
    /// `payment_request`); an operation without one is free.
    pub fees: BTreeMap<String, FeeSchedule>,
}

/// An accepted identity document.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[non_exhaustive]
pub struct IdType {
    /// The name used in requests, e.g. `national_id`.
    pub name: String,
    /// The regular expression an ID number must match in full.
    pub pattern: String,
    /// The KYC tier a wallet opened with it gets.
    pub grants_tier: u8,
}

/// A KYC tier and its limits.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[non_exhaustive]
pub struct KycTier {
    /// 0 is a wallet opened without an ID.
    pub tier: u8,
    /// The largest single movement.
    #[serde(with = "crate::amount")]
    pub per_transaction: Decimal,
    /// The largest total per local calendar day.
    #[serde(with = "crate::amount")]
    pub daily: Decimal,
    /// The largest wallet balance.
    #[serde(with = "crate::amount")]
    pub max_balance: Decimal,
    /// What a customer must present.
    pub requirements: Vec<String>,
}

crate::names::names! {
    /// Who pays an operation's fee.
    FeePayer {
        Payer = "payer": "pays amount + fee.",
        Payee = "payee": "receives amount − fee.",
    }
}

/// One operation's fees.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[non_exhaustive]
pub struct FeeSchedule {
    /// Who pays the fee.
    pub paid_by: FeePayer,
    /// Contiguous bands, ascending; amounts above the last pay its fee.
    pub bands: Vec<FeeBand>,
}

impl FeeSchedule {
    /// The fee for `amount`: its band's, the last band's above them all, none below the first.
    pub fn fee_for(&self, amount: Decimal) -> Option<Decimal> {
        self.bands
            .iter()
            .find(|b| b.min <= amount && amount <= b.max)
            .or_else(|| self.bands.last().filter(|b| amount > b.max))
            .map(|b| b.fee)
    }
}

/// A fee band: the fee for amounts from `min` to `max` inclusive.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[non_exhaustive]
pub struct FeeBand {
    /// The smallest amount in the band.
    #[serde(with = "crate::amount")]
    pub min: Decimal,
    /// The largest amount in the band.
    #[serde(with = "crate::amount")]
    pub max: Decimal,
    /// The fee.
    #[serde(with = "crate::amount")]
    pub fee: Decimal,
    /// The agent's part of the fee (cash-out).
    #[serde(with = "crate::amount")]
    pub agent_commission: Decimal,
}

/// The served countries: `client.countries()`.
#[derive(Debug, Clone, Copy)]
pub struct Countries<'a> {
    pub(crate) client: &'a Client,
}

impl Client {
    /// The countries the API serves (any valid token may read them).
    pub fn countries(&self) -> Countries<'_> {
        Countries { client: self }
    }
}

#[derive(Deserialize)]
struct CountryList {
    data: Vec<Country>,
}

impl Countries<'_> {
    /// Every configured country, in the configuration's order (`listCountries`).
    ///
    /// # Errors
    /// As every call ([`Error`]).
    pub async fn list(&self) -> Result<Vec<Country>, Error> {
        let list: CountryList = self.client.json(&Call::to(ops::LIST_COUNTRIES, &[])).await?;
        Ok(list.data)
    }
}
