//! Money out: payouts (reservation, sandbox and live outcomes, limits), bulk payouts with
//! maker/checker, reversals with their fee share, and transfers between own accounts.

use malipo_auth::{OrgKind, Principal};
use malipo_charges::ChargeState;
use malipo_core::{MinorUnit, Mode};
use malipo_ledger::AccountKind;
use malipo_payouts::{BatchCounts, BatchState, BulkPayout, Payout, PayoutFailure, PayoutFilter, PayoutState, RawItem, Reversal};
use malipo_service::{
    happened, BulkInput, Happened, NewBulkPayout, NewPayout, NewRejection, NewReversal, NewTransfer, NewWalletLock, ServiceError,
};

use crate::support::{idem, number, World};

/// Runs the workers until nothing is due.
fn settle(world: &World) {
    for _ in 0..10 {
        let charges = world.platform.processing().process_due(100).unwrap();
        let payouts = world.platform.payout_processing().process_due(100).unwrap();
        if charges + payouts == 0 {
            return;
        }
    }
    panic!("the workers still had due work after ten rounds");
}

fn payout(world: &World, org: &Principal, payee: &str, amount: &str) -> Result<Payout, ServiceError> {
    let new = NewPayout { payee_msisdn: payee.into(), amount: amount.into(), reference: "SALARY".into(), ..NewPayout::default() };
    let payout = world.platform.parse(org, &new)?;
    let out = world.platform.payouts().create(org, &payout, &idem(org, "POST /payouts"))?;
    Ok(world.platform.payouts().get(org, &out.value.id.to_string()).unwrap())
}

fn reload(world: &World, org: &Principal, p: &Payout) -> Payout {
    world.platform.payouts().get(org, p.id.as_str()).unwrap()
}

fn payout_account(world: &World, org: &Principal) -> malipo_ledger::Account {
    world.platform.accounts().balance(org, AccountKind::Payout).unwrap().account
}

fn funded(world: &World, kind: OrgKind, mode: Mode, amount: &str) -> Principal {
    let org = world.org(kind, mode);
    world.platform.accounts().fund(&org.org_id, mode, amount).unwrap();
    org
}

fn clean_ledger(world: &World) {
    assert_eq!(world.verified_ledger(None), vec![]);
}

#[test]
fn a_payout_backlog_refuses_new_payouts_but_not_new_charges() {
    // The default bound: refused past 10 s of backlog, admitted again at 5 s or less.
    let world = World::new();
    let payroll = funded(&world, OrgKind::Corporate, Mode::Test, "10000.00");
    let shop = world.org(OrgKind::Merchant, Mode::Test);
    let waiting = payout(&world, &payroll, &number("0000"), "10.00").unwrap();
    // Nobody runs the workers: 12 s later the payout has waited over the bound.
    world.advance(12);
    let reading = world.platform.backlog().measure().unwrap();
    assert!(reading.payouts_seconds > 10.0, "{reading:?}");
    assert_eq!((reading.charges_seconds, reading.refusing, reading.refusing_payouts), (0.0, false, true));
    match payout(&world, &payroll, &number("0001"), "10.00") {
        Err(ServiceError::Busy { retry_after }) => assert!((1..=30).contains(&retry_after), "{retry_after}"),
        other => panic!("expected Busy, got {other:?}"),
    }
    // Charges expire and payouts do not: one organisation's payouts do not turn customers away.
    let charge = world.charge(&shop, &number("0000"), "10.00").unwrap();

    settle(&world);
    assert_eq!(reload(&world, &payroll, &waiting).state, PayoutState::Completed);
    let reading = world.platform.backlog().measure().unwrap();
    assert_eq!((reading.payouts_seconds, reading.refusing, reading.refusing_payouts), (0.0, false, false));
    payout(&world, &payroll, &number("0001"), "10.00").unwrap();
    world.advance(2);
    settle(&world);
    assert_eq!(world.reload(&shop, &charge).state, ChargeState::Completed);
    clean_ledger(&world);
}

#[test]
fn a_payout_reserves_amount_plus_fee_then_pays_the_wallet() {
    let world = World::new();
    let payroll = funded(&world, OrgKind::Corporate, Mode::Test, "10000.00");
    let p = payout(&world, &payroll, &number("0000"), "1000.00").unwrap();
    assert_eq!((p.state, p.fee, p.amount), (PayoutState::Pending, MinorUnit::new(500), MinorUnit::new(100_000)));
    let account = payout_account(&world, &payroll);
    assert_eq!((account.balance, account.held), (MinorUnit::new(1_000_000), MinorUnit::new(100_500)), "reserved at once");

    settle(&world);
    let done = reload(&world, &payroll, &p);
    assert_eq!((done.state, done.failure_reason, done.completed_at), (PayoutState::Completed, None, Some(world.now())));
    assert!(done.transaction_id.is_some());
    let account = payout_account(&world, &payroll);
    assert_eq!((account.balance, account.held), (MinorUnit::new(1_000_000 - 100_500), MinorUnit::ZERO));
    clean_ledger(&world);
}

#[test]
fn a_payout_above_the_available_balance_is_refused_and_stores_nothing() {
    let world = World::new();
    let payroll = funded(&world, OrgKind::Corporate, Mode::Test, "1000.00");
    // 995.00 + the 5.00 fee fits exactly; one cent more does not.
    assert!(matches!(payout(&world, &payroll, &number("0000"), "995.01"), Err(ServiceError::InsufficientFunds)));
    assert_eq!(world.platform.payouts().list(&payroll, &PayoutFilter::default(), None, 10).unwrap().data.len(), 0);
    let ok = payout(&world, &payroll, &number("0000"), "995.00").unwrap();
    assert_eq!(ok.state, PayoutState::Pending);
    assert!(matches!(payout(&world, &payroll, &number("0000"), "0.01"), Err(ServiceError::InsufficientFunds)), "all of it is reserved");
}

#[test]
fn sandbox_payouts_fail_for_1005_to_1007_and_release_the_reservation() {
    let world = World::new();
    let payroll = funded(&world, OrgKind::Merchant, Mode::Test, "10000.00");
    let cases = [("1005", PayoutFailure::WalletLocked), ("1006", PayoutFailure::LimitExceeded), ("1007", PayoutFailure::PayeeNotFound)];
    let made: Vec<(Payout, PayoutFailure)> =
        cases.iter().map(|(n, r)| (payout(&world, &payroll, &number(n), "100.00").unwrap(), *r)).collect();
    let completes = payout(&world, &payroll, &number("1001"), "100.00").unwrap();
    settle(&world);
    for (p, reason) in made {
        let p = reload(&world, &payroll, &p);
        assert_eq!((p.state, p.failure_reason, p.transaction_id), (PayoutState::Failed, Some(reason), None));
    }
    assert_eq!(reload(&world, &payroll, &completes).state, PayoutState::Completed, "a charge's decline number is paid");
    let account = payout_account(&world, &payroll);
    assert_eq!((account.balance, account.held), (MinorUnit::new(1_000_000 - 10_500), MinorUnit::ZERO));
    clean_ledger(&world);
}

#[test]
fn live_payouts_need_a_wallet_that_may_receive_them() {
    let world = World::new();
    let payroll = funded(&world, OrgKind::Corporate, Mode::Live, "100000.00");
    let operator = world.org(OrgKind::Operator, Mode::Live);
    let wallets = world.platform.wallets();
    let open = |msisdn: &str| {
        let new = malipo_service::NewWallet {
            msisdn: msisdn.into(),
            first_name: "Amina".into(),
            last_name: "Otieno".into(),
            ..malipo_service::NewWallet::default()
        };
        let wallet = world.platform.parse(&operator, &new).unwrap();
        wallets.open(&operator, &wallet, &idem(&operator, "POST /wallets")).unwrap();
    };
    let (tier0, absent) = ("254711000001", "254711000002");
    open(tier0);
    let missing = payout(&world, &payroll, absent, "100.00").unwrap();
    // Tier 0: at most 5,000 a transaction and 20,000 held.
    let too_big = payout(&world, &payroll, tier0, "5000.01").unwrap();
    let fits = payout(&world, &payroll, tier0, "5000.00").unwrap();
    settle(&world);
    assert_eq!(reload(&world, &payroll, &missing).failure_reason, Some(PayoutFailure::PayeeNotFound));
    assert_eq!(reload(&world, &payroll, &too_big).failure_reason, Some(PayoutFailure::LimitExceeded));
    assert_eq!(reload(&world, &payroll, &fits).state, PayoutState::Completed);
    for _ in 0..3 {
        payout(&world, &payroll, tier0, "5000.00").unwrap();
    }
    let over_max_balance = payout(&world, &payroll, tier0, "0.01").unwrap();
    settle(&world);
    assert_eq!(reload(&world, &payroll, &over_max_balance).failure_reason, Some(PayoutFailure::LimitExceeded), "20,000.00 is the maximum");
    clean_ledger(&world);
}

#[test]
fn payout_events_carry_the_payout_accounts_running_balance() {
    let world = World::new();
    let payroll = funded(&world, OrgKind::Corporate, Mode::Test, "1000.00");
    payout(&world, &payroll, &number("0000"), "500.00").unwrap();
    settle(&world);
    // One event in all: the payout's, completed, with the payout account's balance after it.
    let seen: Vec<(String, PayoutState, MinorUnit)> = world
        .happened(&payroll, None)
        .into_iter()
        .map(|(kind, h)| match h {
            Happened::Payout { payout, payout_account_available } => (kind, payout.state, payout_account_available),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(seen, [("payout.completed".to_owned(), PayoutState::Completed, MinorUnit::new(49_500))]);
    let summary = &world.platform.webhooks().events(&payroll, None, None, 10).unwrap().data[0].summary;
    assert_eq!(summary.state.as_deref(), Some("completed"));
}

fn items(specs: &[(&str, &str)]) -> Vec<RawItem> {
    specs
        .iter()
        .enumerate()
        .map(|(i, (m, a))| RawItem { payee_msisdn: (*m).into(), amount: (*a).into(), reference: format!("ROW-{i}"), narration: None })
        .collect()
}

fn bulk(world: &World, maker: &Principal, items: BulkInput) -> Result<BulkPayout, ServiceError> {
    let batch = world.platform.parse(maker, &NewBulkPayout { reference: "PAYROLL-NOV".into(), items })?;
    let out = world.platform.bulk_payouts().create(maker, &batch, &idem(maker, "POST /bulk-payouts"))?;
    Ok(world.platform.bulk_payouts().get(maker, &out.value.id.to_string()).unwrap())
}

fn approve(world: &World, checker: &Principal, b: &BulkPayout) -> Result<BulkPayout, ServiceError> {
    let approval = world.platform.parse(checker, b.id.as_str())?;
    world.platform.bulk_payouts().approve(checker, &approval, &idem(checker, "approve"))?;
    Ok(world.platform.bulk_payouts().get(checker, b.id.as_str()).unwrap())
}

#[test]
fn every_bad_item_is_named_and_nothing_is_stored() {
    let world = World::new();
    let maker = funded(&world, OrgKind::Corporate, Mode::Test, "1000.00");
    let bad = items(&[("254712345678", "10.00"), ("25471234", "10.00"), ("254712345679", "10.001"), ("256712345678", "1")]);
    let Err(ServiceError::Validation(errors)) = bulk(&world, &maker, BulkInput::Items(bad)) else { panic!("accepted") };
    let fields: Vec<(&str, &str)> = errors.iter().map(|e| (e.field.as_str(), e.code)).collect();
    assert_eq!(
        fields,
        vec![
            ("items[1].payee_msisdn", "invalid_msisdn"),
            ("items[2].amount", "invalid_amount"),
            ("items[3].payee_msisdn", "currency_mismatch")
        ]
    );
    let csv = b"payee_msisdn,amount,reference,narration\n254712345678,1,A,\n254712345678,x,B,\n".to_vec();
    let Err(ServiceError::Validation(errors)) = bulk(&world, &maker, BulkInput::Csv(csv)) else { panic!("accepted") };
    assert_eq!(errors.iter().map(|e| e.field.as_str()).collect::<Vec<_>>(), vec!["items[1].amount"]);
    assert!(world.platform.bulk_payouts().list(&maker, None, 10).unwrap().data.is_empty());
}

#[test]
fn a_batch_is_approved_by_a_checker_reserved_whole_and_paid_item_by_item() {
    let world = World::new();
    let maker = funded(&world, OrgKind::Corporate, Mode::Test, "10000.00");
    let checker = world.colleague(&maker, "bulk:approve");
    let specs = [(number("0000"), "100.00"), (number("1007"), "200.00"), (number("0000"), "300.00")];
    let specs: Vec<(&str, &str)> = specs.iter().map(|(m, a)| (m.as_str(), *a)).collect();
    let b = bulk(&world, &maker, BulkInput::Items(items(&specs))).unwrap();
    assert_eq!(
        (b.state, b.item_count, b.total_amount, b.total_fees),
        (BatchState::AwaitingApproval, 3, MinorUnit::new(60_000), MinorUnit::new(1_500))
    );
    settle(&world);
    assert_eq!(payout_account(&world, &maker).held, MinorUnit::ZERO, "nothing reserved or paid before approval");

    // The maker's credential holds no bulk:approve: refused before the rule of four eyes (which
    // the test below checks for one person behind two credentials).
    assert!(matches!(approve(&world, &maker, &b), Err(ServiceError::Forbidden(_))));
    let approved = approve(&world, &checker, &b).unwrap();
    assert_eq!((approved.state, approved.approved_by.as_deref()), (BatchState::Processing, Some(checker.client_id.as_str())));
    assert_eq!(payout_account(&world, &maker).held, MinorUnit::new(61_500), "the whole total at once");
    assert!(matches!(approve(&world, &checker, &b), Err(ServiceError::InvalidState(_))), "a second approval");

    settle(&world);
    let done = world.platform.bulk_payouts().get(&maker, b.id.as_str()).unwrap();
    assert_eq!((done.state, done.counts), (BatchState::Completed, BatchCounts { pending: 0, completed: 2, failed: 1 }));
    let failed = world.platform.bulk_payouts().items(&maker, b.id.as_str(), Some(PayoutState::Failed), None, 10).unwrap();
    assert_eq!(failed.data.iter().map(|p| p.bulk_index).collect::<Vec<_>>(), vec![Some(1)], "the failing item fails alone");
    let account = payout_account(&world, &maker);
    assert_eq!((account.balance, account.held), (MinorUnit::new(1_000_000 - 40_000 - 1_000), MinorUnit::ZERO));
    clean_ledger(&world);
}

#[test]
fn a_rejected_batch_pays_nothing_and_an_unfunded_approval_is_refused() {
    let world = World::new();
    let maker = funded(&world, OrgKind::Corporate, Mode::Test, "100.00");
    let checker = world.colleague(&maker, "bulk:approve");
    let b = bulk(&world, &maker, BulkInput::Items(items(&[("254712345678", "60.00"), ("254712345679", "60.00")]))).unwrap();
    assert_eq!(approve(&world, &checker, &b), Err(ServiceError::InsufficientFunds));
    assert_eq!(world.platform.bulk_payouts().get(&maker, b.id.as_str()).unwrap().state, BatchState::AwaitingApproval);
    let rejection = world.platform.parse(&checker, &NewRejection { batch_id: b.id.to_string(), reason: "wrong month".into() }).unwrap();
    world.platform.bulk_payouts().reject(&checker, &rejection, &idem(&checker, "reject")).unwrap();
    settle(&world);
    let rejected = world.platform.bulk_payouts().get(&maker, b.id.as_str()).unwrap();
    assert_eq!((rejected.state, rejected.rejection_reason.as_deref()), (BatchState::Rejected, Some("wrong month")));
    let items = world.platform.bulk_payouts().items(&maker, b.id.as_str(), None, None, 10).unwrap().data;
    assert!(items.iter().all(|p| p.state == PayoutState::Failed && p.failure_reason == Some(PayoutFailure::BulkPayoutRejected)));
    assert_eq!(payout_account(&world, &maker).balance, MinorUnit::new(10_000));
}

/// A person as the console's principal, or through a key pair they created there: another
/// client id, the same person.
fn as_person(org: &Principal, person: &malipo_core::UserId, client_id: &str, scopes: &str) -> Principal {
    Principal {
        client_id: client_id.to_owned(),
        scopes: malipo_auth::Scopes::parse(scopes).unwrap(),
        person: Some(person.clone()),
        ..org.clone()
    }
}

#[test]
fn a_person_neither_approves_nor_rejects_a_batch_they_made_whatever_credential_either_side_uses() {
    let world = World::new();
    let org = funded(&world, OrgKind::Corporate, Mode::Test, "1000.00");
    let (amina, baraka) = (malipo_core::UserId::new(), malipo_core::UserId::new());
    let amina_console = as_person(&org, &amina, amina.as_str(), "payments payouts bulk:create");
    let amina_key = as_person(&org, &amina, "ck_test_aminas_key", "payments bulk:approve");
    // A credential holds bulk:create or bulk:approve, never both: her maker's key pair and her
    // session as a checker are others again.
    let amina_making_key = as_person(&org, &amina, "ck_test_aminas_maker_key", "payments bulk:create");
    let amina_checking_console = as_person(&org, &amina, amina.as_str(), "payments bulk:approve");
    let baraka_console = as_person(&org, &baraka, baraka.as_str(), "payments bulk:approve");
    let reject = |who: &Principal, b: &BulkPayout| {
        let r = world.platform.parse(who, &NewRejection { batch_id: b.id.to_string(), reason: "no".into() })?;
        world.platform.bulk_payouts().reject(who, &r, &idem(who, "reject"))
    };
    // Made in the console: refused through her own key pair; made through her key pair: refused
    // in her console session.
    for (maker, checker) in [(&amina_console, &amina_key), (&amina_making_key, &amina_checking_console)] {
        let b = bulk(&world, maker, BulkInput::Items(items(&[("254712345678", "10.00")]))).unwrap();
        assert_eq!(b.created_by_person.as_ref(), Some(&amina));
        assert_eq!(approve(&world, checker, &b), Err(ServiceError::MakerChecker));
        assert_eq!(reject(checker, &b).map(|_| ()), Err(ServiceError::MakerChecker));
        let untouched = world.platform.bulk_payouts().get(&org, b.id.as_str()).unwrap();
        assert_eq!((untouched.state, untouched.approved_by_person), (BatchState::AwaitingApproval, None));
        assert_eq!(payout_account(&world, &org).held, MinorUnit::ZERO, "nothing reserved");
        let approved = approve(&world, &baraka_console, &b).unwrap();
        assert_eq!((approved.state, approved.approved_by_person.as_ref()), (BatchState::Processing, Some(&baraka)));
        settle(&world);
    }
    // A key pair an operator issued is no person: another person's approval of its batch is fine.
    let b = bulk(&world, &org, BulkInput::Items(items(&[("254712345678", "10.00")]))).unwrap();
    assert_eq!(b.created_by_person, None);
    assert_eq!(approve(&world, &amina_key, &b).map(|b| b.state), Ok(BatchState::Processing));
    settle(&world);
    clean_ledger(&world);
}

fn reverse(world: &World, org: &Principal, new: NewReversal) -> Result<Reversal, ServiceError> {
    let reversal = world.platform.parse(org, &new)?;
    let out = world.platform.reversals().create(org, &reversal, &idem(org, "POST /reversals"))?;
    Ok(world.platform.reversals().get(org, &out.value.id.to_string()).unwrap())
}

#[test]
fn charge_reversals_give_the_fee_back_in_proportion_and_never_exceed_the_charge() {
    let world = World::new();
    let shop = world.org(OrgKind::Merchant, Mode::Test);
    let charge = world.charge(&shop, &number("0000"), "1000.00").unwrap();
    let early = NewReversal { charge_ref: Some(charge.id.to_string()), reason: "refund".into(), ..NewReversal::default() };
    assert!(matches!(reverse(&world, &shop, early.clone()), Err(ServiceError::InvalidState(_))), "only completed charges");
    world.advance(3);
    settle(&world);
    assert_eq!(world.reload(&shop, &charge).state, ChargeState::Completed);

    let part = NewReversal { amount: Some("250.00".into()), ..early.clone() };
    let r = reverse(&world, &shop, part).unwrap();
    assert_eq!((r.amount, r.fee_reversed), (MinorUnit::new(25_000), MinorUnit::new(100)), "a quarter of the 4.00 fee");
    assert_eq!(world.reload(&shop, &charge).amount_reversed, MinorUnit::new(25_000));
    let too_much = NewReversal { amount: Some("750.01".into()), ..early.clone() };
    assert!(matches!(reverse(&world, &shop, too_much), Err(ServiceError::ReversalExceedsOriginal(_))));
    let rest = reverse(&world, &shop, early.clone()).unwrap();
    assert_eq!((rest.amount, rest.fee_reversed), (MinorUnit::new(75_000), MinorUnit::new(300)), "the remainder by default");
    assert!(matches!(reverse(&world, &shop, early), Err(ServiceError::ReversalExceedsOriginal(_))), "nothing is left");
    let collection = world.platform.accounts().balance(&shop, AccountKind::Collection).unwrap().account;
    assert_eq!(collection.balance, MinorUnit::ZERO, "the merchant gave back all it received");
    clean_ledger(&world);
}

#[test]
fn payout_reversals_take_the_money_back_from_the_payee_by_transaction_id() {
    let world = World::new();
    let payroll = funded(&world, OrgKind::Corporate, Mode::Test, "2000.00");
    let p = payout(&world, &payroll, &number("0000"), "1000.00").unwrap();
    settle(&world);
    let p = reload(&world, &payroll, &p);
    let new = NewReversal {
        transaction_id: p.transaction_id.as_ref().map(ToString::to_string),
        reason: "paid twice".into(),
        ..NewReversal::default()
    };
    let r = reverse(&world, &payroll, new).unwrap();
    assert_eq!((r.amount, r.fee_reversed), (MinorUnit::new(100_000), MinorUnit::new(500)));
    assert_eq!(reload(&world, &payroll, &p).amount_reversed, MinorUnit::new(100_000));
    assert_eq!(payout_account(&world, &payroll).balance, MinorUnit::new(200_000), "amount and fee are back");
    clean_ledger(&world);
}

#[test]
fn transfers_move_money_between_own_accounts_within_the_balance() {
    let world = World::new();
    let shop = funded(&world, OrgKind::Merchant, Mode::Test, "100.00");
    let move_money = |from: &str, to: &str, amount: &str| {
        let transfer = world.platform.parse(&shop, &NewTransfer { from: from.into(), to: to.into(), amount: amount.into() })?;
        world.platform.transfers().transfer(&shop, &transfer, &idem(&shop, "POST /accounts/transfers"))
    };
    move_money("payout", "collection", "60.00").unwrap();
    assert!(matches!(move_money("payout", "collection", "40.01"), Err(ServiceError::InsufficientFunds)));
    assert!(matches!(move_money("payout", "payout", "1"), Err(ServiceError::Validation(_))));
    let collection = world.platform.accounts().balance(&shop, AccountKind::Collection).unwrap().account;
    assert_eq!(collection.balance, MinorUnit::new(6_000));
    let (_, page) = world.platform.transfers().statement(&shop, collection.id.as_str(), (None, None), None, 10).unwrap();
    assert_eq!(
        page.data.iter().map(|l| (l.posting.amount, l.posting.balance_after)).collect::<Vec<_>>(),
        vec![(MinorUnit::new(6_000), MinorUnit::new(6_000))]
    );
    let other = world.org(OrgKind::Merchant, Mode::Test);
    assert!(matches!(
        world.platform.transfers().statement(&other, collection.id.as_str(), (None, None), None, 10),
        Err(ServiceError::NotFound)
    ));
    clean_ledger(&world);
}

#[test]
fn a_payout_that_errors_fails_alone_and_its_chunk_is_still_paid() {
    let world = World::new();
    let payroll = funded(&world, OrgKind::Corporate, Mode::Test, "1000.00");
    let good = payout(&world, &payroll, &number("0000"), "100.00").unwrap();
    // A payout stored as if reserved on an account that holds nothing: releasing it is refused by
    // the ledger, an error rather than an outcome, which rolls back the chunk it is settled in.
    let collection = world.platform.accounts().balance(&payroll, AccountKind::Collection).unwrap().account.id;
    let rogue = Payout { id: malipo_core::PayoutRef::new(), reference: "ROGUE".into(), payout_account: collection, ..good.clone() };
    malipo_service::write(world.platform.store(), |tx| Ok(tx.insert_payouts(std::slice::from_ref(&rogue))?)).unwrap();
    let later = payout(&world, &payroll, &number("0000"), "200.00").unwrap();
    settle(&world);
    assert_eq!(reload(&world, &payroll, &good).state, PayoutState::Completed);
    assert_eq!(reload(&world, &payroll, &later).state, PayoutState::Completed);
    let rogue = reload(&world, &payroll, &rogue);
    assert_eq!((rogue.state, rogue.failure_reason), (PayoutState::Failed, Some(PayoutFailure::ProcessingError)));
    let account = payout_account(&world, &payroll);
    assert_eq!((account.balance, account.held), (MinorUnit::new(100_000 - 30_000 - 1_000), MinorUnit::ZERO));
    clean_ledger(&world);
}

/// A payout event as `reference|state|failure|available` and a batch's as its state and counts
/// (decoded from their snapshots), so that two worlds' events compare.
fn recorded(event: &malipo_webhooks::Event) -> String {
    match happened(event).expect("a snapshot") {
        Happened::Payout { payout: p, payout_account_available: available } => {
            let reason = p.failure_reason.map(|r| r.as_str()).unwrap_or("-");
            format!("{}|{}|{reason}|{}", p.reference, p.state.as_str(), available.get())
        }
        Happened::BulkPayout(b) => format!("batch|{}|{:?}", b.state.as_str(), b.counts),
        other => panic!("{other:?}"),
    }
}

/// What one world's payouts ended with: each payout's (reference, state, failure reason), the
/// batch's state and counts, the payout account's balance and reservations, and the events'
/// bodies (sorted).
type Ends = (Vec<(String, PayoutState, Option<PayoutFailure>)>, (BatchState, BatchCounts), (MinorUnit, MinorUnit), Vec<String>);

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 24, ..proptest::prelude::ProptestConfig::default() })]

    /// Payouts settled together (a chunk of 2 to 8 in one transaction: decided one by one, their
    /// batch, reservations and journals written once at the chunk's end) end exactly as payouts
    /// settled one at a time: the same states and failure reasons, the same batch counts and
    /// payout account, a sound ledger, and every `payout.*` event carries the payout account's
    /// available balance just after that payout in the order the worker took them (ids, all due
    /// at once), as one at a time would. Live payouts, single and a batch's items mixed in the
    /// chunks: to three tier-0 wallets (at most 5,000.00 a payout and 20,000.00 held, so a
    /// payout may breach the balance limit only with an earlier one to the same payee paid, and
    /// payees repeat within chunks), to a number without a wallet and to a locked wallet; and
    /// some fail as errors rather than outcomes (a payout stored as if reserved on an account
    /// that holds nothing), which rolls their transaction back to be settled one at a time.
    #[test]
    fn payouts_settled_in_chunks_end_as_payouts_settled_alone(
        picks in proptest::collection::vec((0u8..5, 1u32..5_001, proptest::bool::ANY, proptest::bool::weighted(0.1)), 1..24),
        chunk in 2usize..9,
    ) {
        let config = |chunk| malipo_service::ServiceConfig { payout_settle_chunk: chunk, ..malipo_service::ServiceConfig::default() };
        let run = |world: &World| -> Ends {
            let payroll = funded(world, OrgKind::Corporate, Mode::Live, "200000.00");
            let checker = world.colleague(&payroll, "bulk:approve");
            let operator = world.org(OrgKind::Operator, Mode::Live);
            let wallets = world.platform.wallets();
            let payee = |p: u8| format!("25471200{p}000");
            // Payees 0 to 2 hold tier-0 wallets, 3 has none, 4's is locked.
            for p in [0, 1, 2, 4] {
                let new = malipo_service::NewWallet { msisdn: payee(p), first_name: "Amina".into(), last_name: "Otieno".into(), ..malipo_service::NewWallet::default() };
                let wallet = world.platform.parse(&operator, &new).unwrap();
                wallets.open(&operator, &wallet, &idem(&operator, "POST /wallets")).unwrap();
            }
            let lock = world.platform.parse(&operator, &NewWalletLock { msisdn: payee(4), reason: "Reported stolen".into() }).unwrap();
            wallets.lock(&operator, &lock, &idem(&operator, "POST /wallets/lock")).unwrap();
            let collection = world.platform.accounts().balance(&payroll, AccountKind::Collection).unwrap().account.id;
            let mut items = vec![];
            for (i, (p, amount, in_batch, rogue)) in picks.iter().enumerate() {
                let (payee, amount, reference) = (payee(*p), format!("{amount}.00"), format!("P{i:02}"));
                if *in_batch {
                    items.push(RawItem { payee_msisdn: payee, amount, reference, narration: None });
                    continue;
                }
                let new = NewPayout { payee_msisdn: payee, amount, reference, ..NewPayout::default() };
                let payout = world.platform.parse(&payroll, &new).unwrap();
                let out = world.platform.payouts().create(&payroll, &payout, &idem(&payroll, "POST /payouts")).unwrap();
                let p = world.platform.payouts().get(&payroll, &out.value.id.to_string()).unwrap();
                if *rogue {
                    // Reserved on the collection account, which holds nothing: its release is refused.
                    let r = Payout { id: malipo_core::PayoutRef::new(), reference: format!("R{i:02}"), payout_account: collection.clone(), ..p };
                    malipo_service::write(world.platform.store(), |tx| Ok(tx.insert_payouts(std::slice::from_ref(&r))?)).unwrap();
                }
            }
            items.push(RawItem { payee_msisdn: payee(3), amount: "1.00".into(), reference: "LAST".into(), narration: None });
            let batch = bulk(world, &payroll, BulkInput::Items(items)).unwrap();
            approve(world, &checker, &batch).unwrap();
            let before = payout_account(world, &payroll).available();
            settle(world);

            let mut all = vec![];
            let mut cursor = None;
            loop {
                let page = world.platform.payouts().list(&payroll, &PayoutFilter::default(), cursor.as_deref(), 100).unwrap();
                all.extend(page.data);
                match page.next_cursor {
                    Some(next) => cursor = Some(next),
                    None => break,
                }
            }
            // In the order the worker took them, each payout's event carries the payout
            // account's available balance after it: a failed payout frees its reservation.
            all.sort_by(|a, b| a.id.as_str().cmp(b.id.as_str()));
            let mut available = before;
            let mut expected = vec![];
            for p in all.iter().filter(|p| p.payout_account != collection) {
                if p.state == PayoutState::Failed {
                    available = available.checked_add(p.debit().unwrap()).unwrap();
                }
                let reason = p.failure_reason.map(|r| r.as_str()).unwrap_or("-");
                expected.push(format!("{}|{}|{reason}|{}", p.reference, p.state.as_str(), available.get()));
            }
            let events = world.platform.webhooks().events(&payroll, Some("payout.failed"), None, 100).unwrap().data.into_iter()
                .chain(world.platform.webhooks().events(&payroll, Some("payout.completed"), None, 100).unwrap().data);
            let mut seen: Vec<String> = events.map(|e| recorded(&e)).filter(|d| !d.starts_with('R')).collect();
            seen.sort();
            expected.sort();
            assert_eq!(seen, expected, "each payout's event has the available balance just after it");
            let completed = world.platform.webhooks().events(&payroll, Some("bulk_payout.completed"), None, 10).unwrap().data;
            let mut ends: Vec<_> = all.iter().map(|p| (p.reference.clone(), p.state, p.failure_reason)).collect();
            ends.sort_by(|a, b| a.0.cmp(&b.0));
            let done = world.platform.bulk_payouts().get(&payroll, batch.id.as_str()).unwrap();
            let account = payout_account(world, &payroll);
            let mut bodies: Vec<String> = completed.iter().map(recorded).collect();
            bodies.extend(seen.into_iter().map(|s| s.rsplit_once('|').unwrap().0.to_owned()));
            (ends, (done.state, done.counts), (account.balance, account.held), bodies)
        };
        let alone = World::with_config(config(1));
        let chunked = World::with_config(config(chunk));
        let a = run(&alone);
        let b = run(&chunked);
        proptest::prop_assert_eq!(&a, &b);
        proptest::prop_assert_eq!(a.1.0, BatchState::Completed);
        proptest::prop_assert_eq!(alone.verified_ledger(None), vec![]);
        proptest::prop_assert_eq!(chunked.verified_ledger(None), vec![]);
    }
}
