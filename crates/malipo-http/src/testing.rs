//! Fixtures of the unit tests.

/// A configuration of two countries: Kenya with an ID type, two tiers and two fee schedules,
/// and Uganda (a currency without minor units) with one tier and no fees.
pub(crate) const TWO_COUNTRIES: &str = r#"
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
max_charge = "250000"

[[countries.id_types]]
name = "national_id"
pattern = '^[0-9]{7,8}$'
grants_tier = 1

[[countries.kyc_tiers]]
tier = 0
per_transaction = "5000"
daily = "10000"
max_balance = "20000"
requirements = ["registered SIM card"]

[[countries.kyc_tiers]]
tier = 1
per_transaction = "250000"
daily = "500000"
max_balance = "500000"
requirements = ["national ID"]

[countries.fees.charge]
paid_by = "payee"
bands = [
  { min = "0.01",   max = "200",    fee = "0" },
  { min = "200.01", max = "250000", fee = "2.5" },
]

[countries.fees.cash_out]
paid_by = "payer"
bands = [
  { min = "0.01",   max = "100",    fee = "11", agent_commission = "7" },
  { min = "100.01", max = "250000", fee = "29", agent_commission = "19.5" },
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
pin_length = 5
max_pin_attempts = 4
max_charge = "5000000"
id_types = []
fees = {}

[[countries.kyc_tiers]]
tier = 0
per_transaction = "5000000"
daily = "7000000"
max_balance = "10000000"
requirements = []
"#;
