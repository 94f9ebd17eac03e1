//! Charges: fee bands, the sandbox's state moves, the time-to-live, and their events.

use malipo_auth::{OrgKind, Principal};
use malipo_charges::{Charge, ChargeFilter, ChargeState, FailureReason};
use malipo_core::{MinorUnit, Mode};
use malipo_ledger::AccountKind;
use malipo_service::{Happened, NewPayout, ServiceConfig, ServiceError};

use crate::support::{idem, number, World};

/// Runs the charge worker until nothing is due (a few rounds at most).
fn settle(world: &World) {
    for _ in 0..5 {
        if world.platform.processing().process_due(100).unwrap() == 0 {
            return;
        }
    }
    panic!("the worker still had due work after five rounds");
}

#[test]
fn a_sandbox_charge_completes_after_the_approval_delay_with_its_fee_band() {
    let world = World::new();
    let shop = world.org(OrgKind::Merchant, Mode::Test);
    let charge = world.charge(&shop, &number("0000"), "1000.00").unwrap();
    assert_eq!(charge.state, ChargeState::Pending);
    assert_eq!(charge.amount, MinorUnit::new(100_000));
    assert_eq!(charge.fee, MinorUnit::new(400), "KES 500.01-1,000 pays a 4.00 charge fee");

    // The sandbox answers for the customer after 2 s: not before.
    world.advance(1);
    settle(&world);
    assert_eq!(world.reload(&shop, &charge).state, ChargeState::Pending);
    world.advance(2);
    settle(&world);
    let done = world.reload(&shop, &charge);
    assert_eq!(done.state, ChargeState::Completed);
    assert!(done.transaction_id.is_some());
    assert_eq!(done.completed_at, Some(world.now()));

    // The merchant receives the amount less the fee; revenue holds the fee; the books balance.
    let collection = world.platform.accounts().balance(&shop, AccountKind::Collection).unwrap();
    assert_eq!(collection.account.balance, MinorUnit::new(99_600));
    assert!(world.platform.accounts().verify_org_ledger(std::slice::from_ref(&shop.org_id)).unwrap().is_empty());
    assert!(world.verified_ledger(Some(Mode::Test)).is_empty());
}

#[test]
fn fee_bands_are_chosen_by_amount_at_their_edges() {
    let world = World::new();
    let shop = world.org(OrgKind::Merchant, Mode::Test);
    for (amount, fee) in [("200.00", 0), ("200.01", 200), ("500.00", 200), ("500.01", 400), ("10000.01", 7_500)] {
        let charge = world.charge(&shop, &number("0000"), amount).unwrap();
        assert_eq!(charge.fee, MinorUnit::new(fee), "{amount}");
    }
}

#[test]
fn the_sandbox_numbers_end_charges_with_their_reasons_and_move_no_money() {
    let world = World::new();
    let shop = world.org(OrgKind::Merchant, Mode::Test);
    let cases = [
        ("1001", ChargeState::Declined, FailureReason::DeclinedByCustomer),
        ("1003", ChargeState::Failed, FailureReason::InsufficientFunds),
        ("1005", ChargeState::Failed, FailureReason::WalletLocked),
        ("1006", ChargeState::Failed, FailureReason::LimitExceeded),
        ("1007", ChargeState::Failed, FailureReason::PayerNotFound),
    ];
    let charges: Vec<_> = cases.iter().map(|(last4, ..)| world.charge(&shop, &number(last4), "150.00").unwrap()).collect();
    world.advance(3);
    settle(&world);
    for ((last4, state, reason), charge) in cases.iter().zip(&charges) {
        let c = world.reload(&shop, charge);
        assert_eq!((c.state, c.failure_reason), (*state, Some(*reason)), "number ending {last4}");
        assert_eq!(c.transaction_id, None, "number ending {last4}");
    }
    let collection = world.platform.accounts().balance(&shop, AccountKind::Collection).unwrap();
    assert_eq!(collection.account.balance, MinorUnit::ZERO);
}

#[test]
fn an_unanswered_prompt_expires_at_its_time_to_live_and_not_before() {
    let world = World::new();
    let shop = world.org(OrgKind::Merchant, Mode::Test);
    let charge = world.charge(&shop, &number("1002"), "150.00").unwrap();
    assert_eq!(charge.expires_at, world.now().plus_seconds(90));
    world.advance(89);
    settle(&world);
    assert_eq!(world.reload(&shop, &charge).state, ChargeState::Pending, "one second before the TTL");
    world.advance(1);
    settle(&world);
    let c = world.reload(&shop, &charge);
    assert_eq!((c.state, c.failure_reason), (ChargeState::Expired, Some(FailureReason::Expired)));
}

#[test]
fn wrong_pins_lock_the_wallet_at_the_countrys_limit_and_decline_the_prompt() {
    let world = World::new();
    let shop = world.org(OrgKind::Merchant, Mode::Test);
    let payer = number("1009");
    let charge = world.charge(&shop, &payer, "150.00").unwrap();
    let wrong = |n: usize| world.simulate(&shop, charge.id.as_str(), "wrong_pin", &format!("POST /sandbox/{n}"));
    // Kenya allows three attempts: the first two leave the prompt open.
    for n in 0..2 {
        wrong(n).unwrap();
        assert_eq!(world.reload(&shop, &charge).state, ChargeState::Pending, "after {} wrong PINs", n + 1);
    }
    wrong(2).unwrap();
    let c = world.reload(&shop, &charge);
    assert_eq!((c.state, c.failure_reason), (ChargeState::Declined, Some(FailureReason::PinAttemptsExceeded)));
    // The wallet is locked: the next charge to it fails wallet_locked.
    let next = world.charge(&shop, &payer, "150.00").unwrap();
    let err = world.simulate(&shop, next.id.as_str(), "approve", "POST /sandbox/a");
    assert!(err.is_ok(), "{err:?}");
    let next = world.reload(&shop, &next);
    assert_eq!((next.state, next.failure_reason), (ChargeState::Failed, Some(FailureReason::WalletLocked)));
}

#[test]
fn a_charge_above_the_countrys_maximum_is_refused_before_anything_is_stored() {
    let world = World::new();
    let shop = world.org(OrgKind::Merchant, Mode::Test);
    match world.charge(&shop, &number("0000"), "250000.01") {
        Err(ServiceError::Validation(errors)) => assert_eq!((errors[0].field.as_str(), errors[0].code), ("amount", "invalid_amount")),
        other => panic!("{other:?}"),
    }
    let page = world.platform.charges().list(&shop, &ChargeFilter::default(), None, 10).unwrap();
    assert!(page.data.is_empty());
}

#[test]
fn each_state_change_is_written_once_into_the_outbox_in_its_transaction() {
    // The approval authorises and then completes the charge: one event each, in that order,
    // each the snapshot of the charge as it was then.
    let world = World::new();
    let shop = world.org(OrgKind::Merchant, Mode::Test);
    let charge = world.charge(&shop, &number("0000"), "150.00").unwrap();
    world.simulate(&shop, charge.id.as_str(), "approve", "POST /sandbox").unwrap();
    let seen: Vec<(String, String, ChargeState)> = world
        .happened(&shop, None)
        .into_iter()
        .map(|(kind, h)| match h {
            Happened::Charge(c) => (kind, c.id.to_string(), c.state),
            other => panic!("{other:?}"),
        })
        .collect();
    let done = world.reload(&shop, &charge);
    let id = done.id.to_string();
    assert_eq!(
        seen,
        [
            ("charge.authorised".to_owned(), id.clone(), ChargeState::Authorised),
            ("charge.completed".to_owned(), id, ChargeState::Completed)
        ]
    );
    let last = world.happened(&shop, Some("charge.completed")).remove(0).1;
    assert_eq!(last, Happened::Charge(done), "the charge as it is now");
}

#[test]
fn new_work_is_refused_while_due_work_is_behind_until_it_is_under_half_the_bound() {
    // The default bound: refused past 10 s of backlog, admitted again at 5 s or less.
    let world = World::new();
    let shop = world.org(OrgKind::Merchant, Mode::Test);
    let corporate = world.org(OrgKind::Corporate, Mode::Test);
    // Sandbox decisions fall due 2 s after creation: A at +2 s, B at +7 s.
    let a = world.charge(&shop, &number("0000"), "10.00").unwrap();
    world.advance(5);
    let b = world.charge(&shop, &number("0000"), "10.00").unwrap();
    let reading = world.platform.backlog().measure().unwrap();
    assert_eq!((reading.charges_seconds, reading.refusing), (3.0, false), "A has waited 3 s: under the bound");

    // Nobody ran the worker: at +14 s, A has waited 12 s.
    world.advance(9);
    let reading = world.platform.backlog().measure().unwrap();
    assert_eq!((reading.charges_seconds, reading.payouts_seconds, reading.refusing, reading.refusing_payouts), (12.0, 0.0, true, true));
    match world.charge(&shop, &number("0000"), "10.00") {
        Err(ServiceError::Busy { retry_after }) => assert_eq!(retry_after, 7, "the excess over half the bound"),
        other => panic!("expected Busy, got {other:?}"),
    }
    // Payouts are due work too (refused before their funds are even looked at).
    let new = NewPayout { payee_msisdn: number("0001"), amount: "10".into(), reference: "SALARY".into(), ..NewPayout::default() };
    let payout = world.platform.parse(&corporate, &new).unwrap();
    let refused = world.platform.payouts().create(&corporate, &payout, &idem(&corporate, "POST /payouts"));
    assert!(matches!(refused, Err(ServiceError::Busy { .. })), "{refused:?}");

    // The worker takes A only: B has waited 7 s, under the bound but over half of it, so intake
    // stays closed (no flapping at the bound).
    assert_eq!(world.platform.processing().process_due(1).unwrap(), 1);
    assert_eq!(world.reload(&shop, &a).state, ChargeState::Completed);
    let reading = world.platform.backlog().measure().unwrap();
    assert_eq!((reading.charges_seconds, reading.refusing), (7.0, true));
    assert!(matches!(world.charge(&shop, &number("0000"), "10.00"), Err(ServiceError::Busy { .. })));

    // Caught up: admitted again.
    settle(&world);
    assert_eq!(world.reload(&shop, &b).state, ChargeState::Completed);
    let reading = world.platform.backlog().measure().unwrap();
    assert_eq!((reading.charges_seconds, reading.refusing), (0.0, false));
    world.charge(&shop, &number("0000"), "10.00").unwrap();
}

#[test]
fn once_the_drain_rate_is_measured_the_gate_closes_on_the_predicted_wait_before_anything_has_waited() {
    // The default bound: 10 s (refused past it, admitted again at 5 s or less).
    let world = World::new();
    let shop = world.org(OrgKind::Merchant, Mode::Test);
    let backlog = world.platform.backlog();
    let processing = world.platform.processing();
    for _ in 0..40 {
        world.charge(&shop, &number("0000"), "10.00").unwrap();
    }
    let reading = backlog.measure().unwrap();
    // No rate measured yet: 40 charges at the assumed 200 a second.
    assert_eq!((reading.charges_due, reading.predicted_seconds, reading.refusing), (40, 0.2, false));

    // Nobody runs the workers: refused on the oldest wait (13 - 2 s). While refused, nothing new
    // comes in, so the count falls only as the workers finish: 10 charges a second.
    world.advance(13);
    assert!(backlog.measure().unwrap().refusing);
    for due in [30, 20] {
        assert_eq!(processing.process_due(10).unwrap(), 10);
        world.advance(1);
        let reading = backlog.measure().unwrap();
        assert_eq!(
            (reading.charges_due, reading.predicted_seconds, reading.refusing),
            (due, f64::from(u8::try_from(due).unwrap()) / 10.0, true)
        );
    }
    settle(&world);
    let reading = backlog.measure().unwrap();
    assert_eq!((reading.charges_seconds, reading.charges_due, reading.refusing), (0.0, 0, false), "caught up");

    // New charges, none due yet (the sandbox decides 2 s after creation): at 10 a second the bound
    // holds 100, so the 101st, which would make 10.1 s of work, is refused at once, though no
    // charge has waited at all and no measurement came between them.
    for _ in 0..100 {
        world.charge(&shop, &number("0000"), "10.00").unwrap();
    }
    match world.charge(&shop, &number("0000"), "10.00") {
        Err(ServiceError::Busy { retry_after }) => assert_eq!(retry_after, 5, "the excess of the predicted wait over half the bound"),
        other => panic!("expected Busy, got {other:?}"),
    }
    let reading = backlog.measure().unwrap();
    assert_eq!((reading.charges_seconds, reading.charges_due, reading.predicted_seconds, reading.refusing), (0.0, 100, 10.0, true));
    // Two seconds later the workers have finished 60: the count fell 30 a second (averaged with
    // the 10 before: 20). Their own claims measure no pace here (nothing had waited when their
    // window began: they were not behind). At 20 a second the 40 left would take 2 s, under
    // half the bound: admitted again.
    world.advance(2);
    assert_eq!(processing.process_due(60).unwrap(), 60);
    let reading = backlog.measure().unwrap();
    assert_eq!((reading.charges_due, reading.predicted_seconds, reading.refusing), (40, 2.0, false));
    world.charge(&shop, &number("0000"), "10.00").unwrap();
    settle(&world);
    assert_eq!(world.verified_ledger(None), vec![]);
}

#[test]
fn the_workers_measured_pace_closes_the_gate_on_a_burst_before_it_ever_closed_on_age() {
    let world = World::new();
    let shop = world.org(OrgKind::Merchant, Mode::Test);
    let backlog = world.platform.backlog();
    close_the_gate_at_ten_a_second(&world, &shop);
    assert!(matches!(world.charge(&shop, &number("0000"), "10.00"), Err(ServiceError::Busy { .. })));

    world.advance(2);
    settle(&world);
    assert!(!backlog.measure().unwrap().refusing, "caught up");
    // A pace is kept through a quiet minute: a burst it drains in time is admitted.
    world.advance(60);
    for _ in 0..40 {
        world.charge(&shop, &number("0000"), "10.00").unwrap();
    }
    let reading = backlog.measure().unwrap();
    assert_eq!(reading.charges_due, 40);
    assert!(!reading.refusing && reading.predicted_seconds > 0.0 && reading.predicted_seconds < 5.0, "{reading:?}");
    world.advance(2);
    settle(&world);
    assert_eq!(world.verified_ledger(None), vec![]);
}

/// 30 charges, then the workers' pace measured at 10 a second, then 80 more, which fill the bound
/// at that pace: the 81st is refused with no measurement between them, and the next measurement
/// counts the 100 and keeps the gate closed.
fn close_the_gate_at_ten_a_second(world: &World, shop: &Principal) {
    let backlog = world.platform.backlog();
    let processing = world.platform.processing();
    for _ in 0..30 {
        world.charge(shop, &number("0000"), "10.00").unwrap();
    }
    world.advance(3);
    assert_eq!(backlog.measure().unwrap().predicted_seconds, 0.15, "no pace measured yet: 30 at the assumed 200 a second");
    // With charges due at both ends of a second, the workers claimed 10: their pace.
    assert_eq!(processing.process_due(10).unwrap(), 10);
    world.advance(1);
    let reading = backlog.measure().unwrap();
    assert_eq!((reading.charges_seconds, reading.charges_due, reading.predicted_seconds, reading.refusing), (2.0, 20, 2.0, false));

    // At 10 a second the bound (10 s) holds 100 charges, closed while the oldest has waited only
    // 2 s (the age alone would admit charges until one had waited 10 s): 80 more are admitted
    // with no measurement between them, and the 81st, which would make 10.1 s, is refused.
    for _ in 0..80 {
        world.charge(shop, &number("0000"), "10.00").unwrap();
    }
    match world.charge(shop, &number("0000"), "10.00") {
        Err(ServiceError::Busy { retry_after }) => assert_eq!(retry_after, 5, "the excess of 10.1 s over half the bound"),
        other => panic!("expected Busy, got {other:?}"),
    }
    // The next measurement counts the 100 and keeps the gate closed (over half the bound).
    let reading = backlog.measure().unwrap();
    assert_eq!((reading.charges_seconds, reading.charges_due, reading.predicted_seconds, reading.refusing), (2.0, 100, 10.0, true));
}

#[test]
fn behind_a_closed_gate_the_drain_measured_while_refusing_sets_the_pace() {
    let world = World::new();
    let shop = world.org(OrgKind::Merchant, Mode::Test);
    let backlog = world.platform.backlog();
    let processing = world.platform.processing();
    close_the_gate_at_ten_a_second(&world, &shop);
    // Behind the closed gate the count falls 5 a second (the workers' own pace, averaged, would
    // say 7.5): the drain measured while refusing is what the rest will take, 95 / 5 = 19 s.
    assert_eq!(processing.process_due(5).unwrap(), 5);
    world.advance(1);
    let reading = backlog.measure().unwrap();
    assert_eq!((reading.charges_due, reading.predicted_seconds, reading.refusing), (95, 19.0, true));
    // Two seconds that empty the count say only that the drain was at least 47.5 a second: left
    // out (averaged in, the estimate would be 26.25), the pace stays 5 a second.
    world.advance(2);
    settle(&world);
    assert!(!backlog.measure().unwrap().refusing, "caught up");
    for _ in 0..40 {
        world.charge(&shop, &number("0000"), "10.00").unwrap();
    }
    let reading = backlog.measure().unwrap();
    assert_eq!((reading.predicted_seconds, reading.refusing), (8.0, false), "under the bound, and the gate was open");
    world.advance(2);
    settle(&world);
    assert_eq!(world.verified_ledger(None), vec![]);
}

#[test]
fn a_first_burst_is_refused_at_the_assumed_pace_before_any_pace_was_measured() {
    let world = World::new();
    let shop = world.org(OrgKind::Merchant, Mode::Test);
    // 2,001 charges at once, none due yet (the sandbox decides 2 s after creation) and no pace
    // measured: at the assumed 200 a second they are 10.005 s of work, past the bound.
    for _ in 0..2_001 {
        world.charge(&shop, &number("0000"), "1.00").unwrap();
    }
    let reading = world.platform.backlog().measure().unwrap();
    assert_eq!((reading.charges_seconds, reading.charges_due, reading.refusing), (0.0, 2_001, true), "{reading:?}");
    assert!((reading.predicted_seconds - 10.005).abs() < 1e-9, "{reading:?}");
    assert!(matches!(world.charge(&shop, &number("0000"), "1.00"), Err(ServiceError::Busy { .. })));
}

#[test]
fn workers_that_keep_up_measure_no_pace_so_a_burst_is_not_refused_on_a_prediction() {
    let world = World::new();
    let shop = world.org(OrgKind::Merchant, Mode::Test);
    let backlog = world.platform.backlog();
    let processing = world.platform.processing();
    // One charge every two seconds, taken as soon as it is due: the workers keep up, and what
    // they claim is the arrivals (half a charge a second), not their pace.
    for _ in 0..5 {
        world.charge(&shop, &number("0000"), "10.00").unwrap();
        world.advance(2);
        assert!(!backlog.measure().unwrap().refusing);
        assert_eq!(processing.process_due(10).unwrap(), 1);
    }
    // A burst: 101 charges due within the bound. At the arrivals' rate they would take minutes,
    // but no pace was measured, so they are predicted at the assumed rate (200 a second), not
    // refused.
    for _ in 0..101 {
        world.charge(&shop, &number("0000"), "10.00").unwrap();
    }
    let reading = backlog.measure().unwrap();
    assert_eq!((reading.charges_due, reading.predicted_seconds, reading.refusing), (101, 0.505, false), "{reading:?}");
    world.charge(&shop, &number("0000"), "10.00").unwrap();
    world.advance(2);
    settle(&world);
    assert_eq!(world.verified_ledger(None), vec![]);
}

#[test]
fn journals_are_sealed_after_their_commit_and_the_lag_is_measured() {
    let world = World::new();
    let shop = world.org(OrgKind::Merchant, Mode::Test);
    let sealer = world.platform.sealer();
    assert_eq!(sealer.seal_all().unwrap(), 0);
    let nothing = sealer.unsealed().unwrap();
    assert_eq!((nothing.count, sealer.lag(&nothing)), (0, std::time::Duration::ZERO));

    let charge = world.charge(&shop, &number("0000"), "1000.00").unwrap();
    world.advance(2);
    settle(&world);
    assert_eq!(world.reload(&shop, &charge).state, ChargeState::Completed);
    let posted = world.now();
    world.advance(3);
    // Committed, not yet chained: sound, counted, and waiting for as long as the clock says.
    let check = world.platform.accounts().check_ledger(Some(Mode::Test)).unwrap();
    assert_eq!(check.violations, vec![]);
    assert!(check.unsealed >= 1 && check.unsealed == check.journals, "{check:?}");
    let waiting = sealer.unsealed().unwrap();
    assert_eq!(waiting.count, u64::try_from(check.unsealed).unwrap());
    assert!(waiting.oldest.is_some_and(|t| t <= posted));
    assert!(sealer.lag(&waiting) >= std::time::Duration::from_secs(3));

    assert_eq!(sealer.seal(1).unwrap(), 1, "at most the limit");
    assert_eq!(sealer.seal_all().unwrap(), check.unsealed - 1);
    assert_eq!(sealer.seal_all().unwrap(), 0, "a sealed journal is not sealed again");
    let done = sealer.unsealed().unwrap();
    assert_eq!((done.count, done.oldest, sealer.lag(&done)), (0, None, std::time::Duration::ZERO));
    assert_eq!(world.verified_ledger(None), vec![]);
}

/// Runs the charge worker until nothing is due, `rounds` at most.
fn drain(world: &World) {
    for _ in 0..10 {
        if world.platform.processing().process_due(100).unwrap() == 0 {
            return;
        }
    }
    panic!("the worker still had due work after ten rounds");
}

/// A copy of `charge`, stored as if for `elsewhere` (another ledger's account): its posting is
/// refused, an error rather than an outcome.
fn rogue_copy(world: &World, charge: &Charge, elsewhere: &malipo_core::AccountId) -> Charge {
    let rogue = Charge {
        id: malipo_core::ChargeRef::new(),
        reference: format!("ROGUE-{}", charge.reference),
        merchant_account: elsewhere.clone(),
        ..charge.clone()
    };
    malipo_service::write(world.platform.store(), |tx| Ok(tx.insert_charge(&rogue)?)).unwrap();
    rogue
}

/// What a charge and its payer ended with, comparable across two worlds.
fn outcome_of(world: &World, shop: &Principal, c: &Charge) -> (ChargeState, Option<FailureReason>, MinorUnit) {
    let c = world.reload(shop, c);
    (c.state, c.failure_reason, c.fee)
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 24, ..proptest::prelude::ProptestConfig::default() })]

    /// Charges advanced together (a chunk of 2 to 8 in one transaction, each in a savepoint, as
    /// the worker does on SQLite) end exactly as charges advanced one by one: the same states,
    /// failure reasons and fees, the same merchant balance, and a sound ledger. The sandbox's
    /// numbers make some charges fail (declined, insufficient funds, a PIN lockout that also
    /// declines the payer's other prompts in the same chunk, a locked wallet, a limit, an unknown
    /// payer) and some stay pending until they expire; payers repeat, so charges in one chunk
    /// share a wallet. Some charges fail as errors rather than outcomes (a posting refused: the
    /// charge stored as if for another ledger's account), which sends their chunk from one
    /// transaction to a savepoint per charge.
    #[test]
    fn charges_advanced_in_chunks_end_as_charges_advanced_alone(
        picks in proptest::collection::vec((0usize..9, 0u8..3, 1u32..3_000, proptest::bool::weighted(0.15)), 1..24),
        chunk in 2usize..9,
    ) {
        const SUFFIXES: [&str; 9] = ["0000", "1001", "1002", "1003", "1004", "1005", "1006", "1007", "1009"];
        let alone = World::with_config(ServiceConfig { charge_settle_chunk: 1, ..ServiceConfig::default() });
        let chunked = World::with_config(ServiceConfig { charge_settle_chunk: chunk, ..ServiceConfig::default() });
        let run = |world: &World| {
            let shop = world.org(OrgKind::Merchant, Mode::Test);
            let live = world.org(OrgKind::Merchant, Mode::Live);
            let elsewhere = world.platform.accounts().balance(&live, AccountKind::Collection).unwrap().account.id;
            let charges: Vec<Charge> = picks
                .iter()
                .map(|(s, payer, amount, rogue)| {
                    let charge = world.charge(&shop, &format!("2547120{payer}{}", SUFFIXES[*s]), &format!("{amount}.00")).unwrap();
                    if !rogue {
                        return charge;
                    }
                    rogue_copy(world, &charge, &elsewhere)
                })
                .collect();
            world.advance(3);
            drain(world);
            world.advance(120);
            drain(world);
            let ends: Vec<_> = charges.iter().map(|c| outcome_of(world, &shop, c)).collect();
            let balance = world.platform.accounts().balance(&shop, AccountKind::Collection).unwrap();
            (ends, balance.account.balance, balance.account.held, balance.pending)
        };
        let a = run(&alone);
        let b = run(&chunked);
        proptest::prop_assert_eq!(&a, &b);
        proptest::prop_assert_eq!(alone.verified_ledger(None), vec![]);
        proptest::prop_assert_eq!(chunked.verified_ledger(None), vec![]);
    }
}

#[test]
fn a_charge_whose_posting_is_refused_is_failed_with_its_hold_released() {
    // One by one, and in chunks: a chunk's savepoint undoes the authorisation with the refused
    // posting, and the charge must still end failed rather than wait for its expiry.
    for chunk in [1, 8] {
        let world = World::with_config(ServiceConfig { charge_settle_chunk: chunk, ..ServiceConfig::default() });
        let shop = world.org(OrgKind::Merchant, Mode::Test);
        let good = world.charge(&shop, &number("0000"), "100.00").unwrap();
        // A charge stored as if for another ledger's account (a live merchant's collection
        // account): its posting is refused, an error rather than an outcome.
        let live = world.org(OrgKind::Merchant, Mode::Live);
        let elsewhere = world.platform.accounts().balance(&live, AccountKind::Collection).unwrap().account.id;
        let rogue = rogue_copy(&world, &good, &elsewhere);
        world.advance(3);
        settle(&world);
        assert_eq!(world.reload(&shop, &good).state, ChargeState::Completed, "chunk {chunk}");
        let rogue = world.reload(&shop, &rogue);
        assert_eq!((rogue.state, rogue.failure_reason), (ChargeState::Failed, Some(FailureReason::ProcessingError)), "chunk {chunk}");
        let payer = rogue.payer_account.expect("authorised before its posting was refused");
        let wallet = malipo_service::read(world.platform.store(), |tx| Ok(tx.account(&payer)?)).unwrap().unwrap();
        assert_eq!(wallet.held, MinorUnit::ZERO, "chunk {chunk}: the hold is released");
        assert!(world.verified_ledger(None).is_empty(), "chunk {chunk}");
    }
}
