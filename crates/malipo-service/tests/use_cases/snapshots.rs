//! The snapshot format pinned: what a key keeps of its request's result (`snapshot::encode`),
//! which a repeat reads back, maybe on another instance of another version within the key's 48
//! hours. A change to a domain type's serde form fails here; it must then read the older form
//! too and raise `snapshot::VERSION`.

use malipo_charges::{Charge, ChargeKind, ChargeState, FailureReason};
use malipo_core::{
    AccountId, BulkPayoutId, ChargeRef, Currency, MinorUnit, Mode, Msisdn, OrgId, PayoutRef, ReversalId, Timestamp, TransactionId,
};
use malipo_payouts::{BatchCounts, BatchState, BulkPayout, Payout, PayoutState, Reversal, ReversalOriginal};
use malipo_service::snapshot;

fn t(s: i64) -> Timestamp {
    Timestamp::from_micros(1_764_633_600_000_000 + s * 1_000_000)
}

fn pinned<T: serde::Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug>(value: &T, expected: &str) {
    let written = String::from_utf8(snapshot::encode(value).unwrap()).unwrap();
    assert_eq!(written, expected, "the snapshot format changed: read the older form too, and raise snapshot::VERSION");
    assert_eq!(&snapshot::decode::<T>(expected.as_bytes()).unwrap(), value, "read back whole");
}

#[test]
fn a_charge_snapshot_has_the_pinned_form() {
    let charge = Charge {
        id: ChargeRef::from_trusted("ch_1".into()),
        kind: ChargeKind::Charge,
        org_id: OrgId::from_trusted("org_1".into()),
        mode: Mode::Test,
        payer_msisdn: Msisdn::parse("254712345678").unwrap(),
        amount: MinorUnit::new(25_000),
        fee: MinorUnit::new(250),
        commission: MinorUnit::ZERO,
        currency: Currency::KES,
        amount_reversed: MinorUnit::ZERO,
        reference: "ORDER-1042".into(),
        description: Some("Two loaves".into()),
        state: ChargeState::Failed,
        failure_reason: Some(FailureReason::InsufficientFunds),
        transaction_id: None,
        merchant_account: AccountId::from_trusted("acc_1".into()),
        payer_account: None,
        created_at: t(0),
        updated_at: t(3),
        expires_at: t(90),
        completed_at: None,
        next_action_at: None,
    };
    pinned(
        &charge,
        r#"{"v":1,"value":{"id":"ch_1","kind":"Charge","org_id":"org_1","mode":"test","payer_msisdn":"254712345678","amount":25000,"fee":250,"commission":0,"currency":"KES","amount_reversed":0,"reference":"ORDER-1042","description":"Two loaves","state":"Failed","failure_reason":"InsufficientFunds","transaction_id":null,"merchant_account":"acc_1","payer_account":null,"created_at":1764633600000000,"updated_at":1764633603000000,"expires_at":1764633690000000,"completed_at":null,"next_action_at":null}}"#,
    );
}

#[test]
fn a_payout_and_a_batch_snapshot_have_the_pinned_form() {
    let payout = Payout {
        id: PayoutRef::from_trusted("po_1".into()),
        org_id: OrgId::from_trusted("org_1".into()),
        mode: Mode::Live,
        payee_msisdn: Msisdn::parse("254712345678").unwrap(),
        amount: MinorUnit::new(100_000),
        fee: MinorUnit::new(1_500),
        currency: Currency::KES,
        amount_reversed: MinorUnit::ZERO,
        reference: "SALARY-NOV".into(),
        narration: None,
        state: PayoutState::Completed,
        failure_reason: None,
        transaction_id: Some(TransactionId::from_trusted("tx_1".into())),
        bulk_payout_id: Some(BulkPayoutId::from_trusted("bp_1".into())),
        bulk_index: Some(3),
        payout_account: AccountId::from_trusted("acc_2".into()),
        created_at: t(0),
        updated_at: t(1),
        completed_at: Some(t(1)),
        next_action_at: None,
    };
    pinned(
        &payout,
        r#"{"v":1,"value":{"id":"po_1","org_id":"org_1","mode":"live","payee_msisdn":"254712345678","amount":100000,"fee":1500,"currency":"KES","amount_reversed":0,"reference":"SALARY-NOV","narration":null,"state":"Completed","failure_reason":null,"transaction_id":"tx_1","bulk_payout_id":"bp_1","bulk_index":3,"payout_account":"acc_2","created_at":1764633600000000,"updated_at":1764633601000000,"completed_at":1764633601000000,"next_action_at":null}}"#,
    );
    let batch = BulkPayout {
        id: BulkPayoutId::from_trusted("bp_1".into()),
        org_id: OrgId::from_trusted("org_1".into()),
        mode: Mode::Test,
        reference: "PAYROLL-NOV".into(),
        currency: Currency::KES,
        item_count: 2,
        total_amount: MinorUnit::new(300_000),
        total_fees: MinorUnit::new(3_000),
        payout_account: AccountId::from_trusted("acc_2".into()),
        created_by: "ck_test_maker".into(),
        created_by_person: None,
        approved_by: None,
        approved_by_person: None,
        rejected_by: None,
        rejected_by_person: None,
        rejection_reason: None,
        state: BatchState::AwaitingApproval,
        counts: BatchCounts { pending: 2, completed: 0, failed: 0 },
        created_at: t(0),
        approved_at: None,
        completed_at: None,
        updated_at: t(0),
    };
    pinned(
        &batch,
        r#"{"v":1,"value":{"id":"bp_1","org_id":"org_1","mode":"test","reference":"PAYROLL-NOV","currency":"KES","item_count":2,"total_amount":300000,"total_fees":3000,"payout_account":"acc_2","created_by":"ck_test_maker","created_by_person":null,"approved_by":null,"approved_by_person":null,"rejected_by":null,"rejected_by_person":null,"rejection_reason":null,"state":"AwaitingApproval","counts":{"pending":2,"completed":0,"failed":0},"created_at":1764633600000000,"approved_at":null,"completed_at":null,"updated_at":1764633600000000}}"#,
    );
}

#[test]
fn a_reversal_snapshot_has_the_pinned_form() {
    let reversal = Reversal {
        id: ReversalId::from_trusted("rv_1".into()),
        org_id: OrgId::from_trusted("org_1".into()),
        mode: Mode::Test,
        original: ReversalOriginal::Charge(ChargeRef::from_trusted("ch_1".into())),
        original_transaction_id: TransactionId::from_trusted("tx_1".into()),
        amount: MinorUnit::new(5_000),
        fee_reversed: MinorUnit::new(50),
        currency: Currency::KES,
        reason: "customer returned goods".into(),
        transaction_id: TransactionId::from_trusted("tx_2".into()),
        created_at: t(60),
    };
    pinned(
        &reversal,
        r#"{"v":1,"value":{"id":"rv_1","org_id":"org_1","mode":"test","original":{"Charge":"ch_1"},"original_transaction_id":"tx_1","amount":5000,"fee_reversed":50,"currency":"KES","reason":"customer returned goods","transaction_id":"tx_2","created_at":1764633660000000}}"#,
    );
}

/// An event's snapshot (`Happened`) is the outbox's row, read by every channel when it sends,
/// maybe weeks later by a newer version: its form is pinned as the results' are.
#[test]
fn an_events_snapshot_has_the_pinned_form() {
    let reversal = Reversal {
        id: ReversalId::from_trusted("rv_1".into()),
        org_id: OrgId::from_trusted("org_1".into()),
        mode: Mode::Live,
        original: ReversalOriginal::Charge(ChargeRef::from_trusted("ch_1".into())),
        original_transaction_id: TransactionId::from_trusted("tx_1".into()),
        amount: MinorUnit::new(5_000),
        fee_reversed: MinorUnit::new(50),
        currency: Currency::KES,
        reason: "returned".into(),
        transaction_id: TransactionId::from_trusted("tx_2".into()),
        created_at: t(60),
    };
    pinned(
        &malipo_service::Happened::Reversal(reversal),
        r#"{"v":1,"value":{"Reversal":{"id":"rv_1","org_id":"org_1","mode":"live","original":{"Charge":"ch_1"},"original_transaction_id":"tx_1","amount":5000,"fee_reversed":50,"currency":"KES","reason":"returned","transaction_id":"tx_2","created_at":1764633660000000}}}"#,
    );
}
