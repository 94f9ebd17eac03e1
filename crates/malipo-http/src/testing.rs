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

/// 2025-11-22T10:00:00Z plus `seconds`.
pub(crate) fn at(seconds: i64) -> malipo_core::Timestamp {
    malipo_core::Timestamp::from_micros(1_763_805_600_000_000 + seconds * 1_000_000)
}

/// A completed payout of KES 1,500.00 (fee 15.00, 500.00 reversed), an item of batch
/// `bp_batch1` with fixed ids.
pub(crate) fn payout() -> malipo_payouts::Payout {
    use malipo_core::{AccountId, BulkPayoutId, Currency, MinorUnit, Mode, Msisdn, OrgId, PayoutRef, TransactionId};
    malipo_payouts::Payout {
        id: PayoutRef::from_trusted("po_payout1".into()),
        org_id: OrgId::new(),
        mode: Mode::Test,
        payee_msisdn: Msisdn::parse("254712345678").unwrap_or_else(|e| panic!("{e}")),
        amount: MinorUnit::new(150_000),
        fee: MinorUnit::new(1_500),
        currency: Currency::KES,
        amount_reversed: MinorUnit::new(50_000),
        reference: "SALARY-11-007".into(),
        narration: Some("November salary".into()),
        state: malipo_payouts::PayoutState::Completed,
        failure_reason: None,
        transaction_id: Some(TransactionId::from_trusted("tx_paid1".into())),
        bulk_payout_id: Some(BulkPayoutId::from_trusted("bp_batch1".into())),
        bulk_index: Some(6),
        payout_account: AccountId::new(),
        created_at: at(0),
        updated_at: at(2),
        completed_at: Some(at(2)),
        next_action_at: None,
    }
}

/// A batch of three items (KES 4,500.00, fees 45.00) approved and being paid: one completed,
/// one failed, one pending.
pub(crate) fn batch() -> malipo_payouts::BulkPayout {
    use malipo_core::{AccountId, BulkPayoutId, Currency, MinorUnit, Mode, OrgId};
    use malipo_payouts::{BatchCounts, BatchState};
    malipo_payouts::BulkPayout {
        id: BulkPayoutId::from_trusted("bp_batch1".into()),
        org_id: OrgId::new(),
        mode: Mode::Live,
        reference: "PAYROLL-2025-11".into(),
        currency: Currency::KES,
        item_count: 3,
        total_amount: MinorUnit::new(450_000),
        total_fees: MinorUnit::new(4_500),
        payout_account: AccountId::new(),
        created_by: "ck_live_maker".into(),
        created_by_person: None,
        approved_by: Some("ck_live_checker".into()),
        approved_by_person: None,
        rejected_by: None,
        rejected_by_person: None,
        rejection_reason: None,
        state: BatchState::Processing,
        counts: BatchCounts { pending: 1, completed: 1, failed: 1 },
        created_at: at(0),
        approved_at: Some(at(60)),
        completed_at: None,
        updated_at: at(61),
    }
}

/// A partial reversal (KES 500.00, fee share 5.00) of payout `po_payout1`.
pub(crate) fn reversal() -> malipo_payouts::Reversal {
    use malipo_core::{Currency, MinorUnit, Mode, OrgId, PayoutRef, ReversalId, TransactionId};
    malipo_payouts::Reversal {
        id: ReversalId::from_trusted("rv_rev1".into()),
        org_id: OrgId::new(),
        mode: Mode::Test,
        original: malipo_payouts::ReversalOriginal::Payout(PayoutRef::from_trusted("po_payout1".into())),
        original_transaction_id: TransactionId::from_trusted("tx_paid1".into()),
        amount: MinorUnit::new(50_000),
        fee_reversed: MinorUnit::new(500),
        currency: Currency::KES,
        reason: "paid twice".into(),
        transaction_id: TransactionId::from_trusted("tx_back1".into()),
        created_at: at(3600),
    }
}
