//! Wallets in live mode: KYC tier limits (per transaction, per local day, maximum balance) on
//! approvals over USSD and on cash-in.

use malipo_auth::{OrgKind, Principal};
use malipo_charges::{Charge, ChargeState, FailureReason};
use malipo_core::{MinorUnit, Mode};
use malipo_service::{NewAgentCash, NewPin, NewPinReset, NewWallet, ResetPinAttempts, ServiceError, SetPin, WalletState};

use crate::support::{idem, number, World};

const PIN: &str = "4826";

struct Live {
    world: World,
    shop: Principal,
    operator: Principal,
    agent: Principal,
    gateway: Principal,
}

impl Live {
    fn new() -> Self {
        let world = World::new();
        let shop = world.org(OrgKind::Merchant, Mode::Live);
        let operator = world.org(OrgKind::Operator, Mode::Live);
        let agent = world.org(OrgKind::Agent, Mode::Live);
        let gateway = world.org(OrgKind::Gateway, Mode::Live);
        world.platform.accounts().fund(&agent.org_id, Mode::Live, "1000000").unwrap();
        Live { world, shop, operator, agent, gateway }
    }

    /// A tier-0 wallet (no ID) with a PIN, cashed in with `deposits`.
    fn customer(&self, deposits: &[&str]) -> String {
        let msisdn = number("5555");
        let new = NewWallet {
            msisdn: msisdn.clone(),
            first_name: "Achieng".into(),
            last_name: "Otieno".into(),
            id_type: None,
            id_number: None,
            date_of_birth: None,
        };
        self.world.open_wallet(&self.operator, &new).unwrap();
        self.world.set_pin(&self.operator, &msisdn, PIN).unwrap();
        for amount in deposits {
            self.cash_in(&msisdn, amount).unwrap();
        }
        msisdn
    }

    fn cash_in(&self, msisdn: &str, amount: &str) -> Result<(), ServiceError> {
        self.world.cash_in(&self.agent, msisdn, amount).map(drop)
    }

    /// A charge approved over USSD with the right PIN, then settled by the worker.
    fn pay(&self, msisdn: &str, amount: &str) -> Charge {
        let charge = self.world.charge(&self.shop, msisdn, amount).unwrap();
        let session = format!("s-{}", charge.id);
        for text in ["", "3", "3*1", "3*1*1", &format!("3*1*1*{PIN}")] {
            self.world.dial(&self.gateway, &session, msisdn, text);
        }
        while self.world.platform.processing().process_due(100).unwrap() > 0 {}
        self.world.reload(&self.shop, &charge)
    }

    fn daily_used(&self, msisdn: &str) -> MinorUnit {
        self.world.platform.wallets().details(&self.operator, msisdn).unwrap().daily_used
    }
}

fn ended(c: &Charge) -> (ChargeState, Option<FailureReason>) {
    (c.state, c.failure_reason)
}

#[test]
fn the_daily_limit_counts_every_payment_of_the_local_day() {
    let live = Live::new();
    let n = live.customer(&["5000", "5000", "5000"]);
    assert_eq!(ended(&live.pay(&n, "4000")), (ChargeState::Completed, None));
    assert_eq!(ended(&live.pay(&n, "4000")), (ChargeState::Completed, None));
    assert_eq!(live.daily_used(&n), MinorUnit::new(800_000));
    // 8,000 + 4,000 is over the tier's 10,000 a day: refused, and nothing counted.
    assert_eq!(ended(&live.pay(&n, "4000")), (ChargeState::Failed, Some(FailureReason::LimitExceeded)));
    assert_eq!(live.daily_used(&n), MinorUnit::new(800_000));
    // 2,000 still fits.
    assert_eq!(ended(&live.pay(&n, "2000")), (ChargeState::Completed, None));
    let details = live.world.platform.wallets().details(&live.operator, &n).unwrap();
    assert_eq!(details.account.balance, MinorUnit::new(500_000));
}

#[test]
fn the_day_is_the_countrys_local_day() {
    let live = Live::new();
    let n = live.customer(&["5000", "5000", "5000", "5000"]);
    assert_eq!(ended(&live.pay(&n, "5000")), (ChargeState::Completed, None));
    assert_eq!(ended(&live.pay(&n, "5000")), (ChargeState::Completed, None));
    // 09:00 UTC is 12:00 in Nairobi; 20:59:59 UTC is still the same local day.
    live.world.advance(12 * 3600 - 1);
    assert_eq!(ended(&live.pay(&n, "100")), (ChargeState::Failed, Some(FailureReason::LimitExceeded)));
    // 21:00 UTC is midnight in Nairobi: a new day.
    live.world.advance(1);
    assert_eq!(live.daily_used(&n), MinorUnit::ZERO);
    assert_eq!(ended(&live.pay(&n, "5000")), (ChargeState::Completed, None));
}

#[test]
fn a_payment_above_the_per_transaction_limit_fails_and_moves_nothing() {
    let live = Live::new();
    let n = live.customer(&["5000", "5000"]);
    assert_eq!(ended(&live.pay(&n, "5000.01")), (ChargeState::Failed, Some(FailureReason::LimitExceeded)));
    assert_eq!(live.daily_used(&n), MinorUnit::ZERO);
    let details = live.world.platform.wallets().details(&live.operator, &n).unwrap();
    assert_eq!(details.account.balance, MinorUnit::new(1_000_000));
}

#[test]
fn cash_in_stops_at_the_maximum_balance_and_the_per_transaction_limit() {
    let live = Live::new();
    let n = live.customer(&["5000", "5000", "5000", "5000"]);
    assert!(matches!(live.cash_in(&n, "0.01"), Err(ServiceError::LimitExceeded(_))), "20,000.00 is the tier's maximum balance");
    let other = live.customer(&[]);
    assert!(matches!(live.cash_in(&other, "5000.01"), Err(ServiceError::LimitExceeded(_))));
    assert!(live.world.verified_ledger(Some(Mode::Live)).is_empty());
}

#[test]
fn a_locked_wallet_pays_nothing() {
    let live = Live::new();
    let n = live.customer(&["5000"]);
    live.world.lock_wallet(&live.operator, &n, "suspected fraud").unwrap();
    let charge = live.world.charge(&live.shop, &n, "100").unwrap();
    while live.world.platform.processing().process_due(100).unwrap() > 0 {}
    let c = live.world.reload(&live.shop, &charge);
    assert_eq!(ended(&c), (ChargeState::Failed, Some(FailureReason::WalletLocked)));
}

/// A hasher of the kind used before keyed hashes (Argon2id, cheap parameters for tests).
fn older_hasher() -> malipo_auth::SecretHasher {
    malipo_auth::SecretHasher::with_params([7; 32], 8, 1, 1).unwrap()
}

/// Stores the wallet's PIN as it was stored before keyed hashes: an Argon2id hash of [`PIN`].
fn store_older_pin_hash(platform: &malipo_service::Platform, msisdn: &malipo_core::Msisdn) {
    malipo_service::ports::write(platform.store(), |tx| {
        let mut wallet = tx.lock_wallet(Mode::Live, msisdn)?.unwrap();
        wallet.pin_hash = Some(older_hasher().hash_argon2id(PIN).unwrap());
        tx.update_wallet(&wallet)?;
        Ok(())
    })
    .unwrap();
}

#[test]
fn older_argon2id_hashes_verify_once_and_are_replaced_by_keyed_ones() {
    let live = Live::new();
    let n = live.customer(&["5000"]);
    let platform = &live.world.platform;
    // A PIN and a client secret as stored before keyed hashes: Argon2id.
    let hasher = older_hasher();
    let msisdn = malipo_core::Msisdn::parse(&n).unwrap();
    let issued = platform.access().issue_credential(&live.shop.org_id, Mode::Live, None).unwrap();
    store_older_pin_hash(platform, &msisdn);
    malipo_service::ports::write(platform.store(), |tx| {
        let credential = tx.credential(&issued.client_id)?.unwrap();
        tx.replace_secret_hash(&issued.client_id, &credential.secret_hash, &hasher.hash_argon2id(&issued.client_secret).unwrap())?;
        Ok(())
    })
    .unwrap();
    let stored = |what: &str| {
        malipo_service::ports::read(platform.store(), |tx| {
            Ok(match what {
                "pin" => tx.wallet(Mode::Live, &msisdn)?.and_then(|w| w.pin_hash),
                _ => tx.credential(&issued.client_id)?.map(|c| c.secret_hash),
            })
        })
        .unwrap()
        .unwrap()
    };
    assert!(stored("pin").starts_with("$argon2id$") && stored("secret").starts_with("$argon2id$"));

    // A wrong PIN and a wrong secret change nothing.
    let balance = |session: &str, pin: &str| {
        live.world.dial(&live.gateway, session, &n, "");
        live.world.dial(&live.gateway, session, &n, "4");
        live.world.dial(&live.gateway, session, &n, &format!("4*{pin}"))
    };
    assert!(balance("s-old-1", "1111").starts_with("CON "), "wrong PIN: try again");
    assert!(platform.access().issue_token(&issued.client_id, "cs_live_wrong", None).is_err());
    assert!(stored("pin").starts_with("$argon2id$") && stored("secret").starts_with("$argon2id$"));

    // The right ones verify against the old hashes and replace them with keyed ones.
    assert!(balance("s-old-2", PIN).starts_with("END "), "balance shown");
    platform.access().issue_token(&issued.client_id, &issued.client_secret, None).unwrap();
    assert!(stored("pin").starts_with("$malipo-hmac-sha256$"), "{}", stored("pin"));
    assert!(stored("secret").starts_with("$malipo-hmac-sha256$"), "{}", stored("secret"));
    // And they keep working.
    assert!(balance("s-old-3", PIN).contains("5,000.00"), "{}", balance("s-old-4", PIN));
    platform.access().issue_token(&issued.client_id, &issued.client_secret, None).unwrap();
    assert_eq!(platform.wallets().details(&live.operator, &n).unwrap().wallet.pin_attempts, 0, "the right PIN reset the count");
}

/// A store that counts the write transactions it runs and its runs of statements that may write
/// outside a transaction (on the store of the platform it wraps).
struct Counting {
    inner: malipo_service::Platform,
    writes: std::sync::atomic::AtomicUsize,
    outside: std::sync::atomic::AtomicUsize,
}

impl Counting {
    /// Puts a counting store in front of the world's, and returns it.
    fn install(live: &mut Live) -> std::sync::Arc<Counting> {
        let counting = std::sync::Arc::new(Counting {
            inner: live.world.platform.clone(),
            writes: std::sync::atomic::AtomicUsize::new(0),
            outside: std::sync::atomic::AtomicUsize::new(0),
        });
        live.world.platform = live.world.platform.clone().with_store(counting.clone());
        counting
    }
}

impl malipo_service::Store for Counting {
    fn run(&self, f: &mut dyn FnMut(&mut dyn malipo_service::Tx) -> Result<(), ServiceError>) -> Result<(), ServiceError> {
        self.writes.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.inner.store().run(f)
    }

    fn read(&self, f: &mut dyn FnMut(&mut dyn malipo_service::Tx) -> Result<(), ServiceError>) -> Result<(), ServiceError> {
        self.inner.store().read(f)
    }

    fn query(&self, f: &mut dyn FnMut(&mut dyn malipo_service::Tx) -> Result<(), ServiceError>) -> Result<(), ServiceError> {
        self.inner.store().query(f)
    }

    fn autocommit(&self, f: &mut dyn FnMut(&mut dyn malipo_service::Tx) -> Result<(), ServiceError>) -> Result<(), ServiceError> {
        self.outside.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.inner.store().autocommit(f)
    }

    fn ready(&self) -> Result<(), malipo_service::StoreError> {
        self.inner.store().ready()
    }
}

#[test]
fn hops_that_only_read_take_no_transaction_and_the_approval_one() {
    let mut live = Live::new();
    let n = live.customer(&["5000"]);
    let charge = live.world.charge(&live.shop, &n, "100").unwrap();
    let counting = Counting::install(&mut live);
    let counts = |text: &str| {
        let load = |c: &std::sync::atomic::AtomicUsize| c.load(std::sync::atomic::Ordering::SeqCst);
        let before = (load(&counting.writes), load(&counting.outside));
        let screen = live.world.dial(&live.gateway, "s-quiet", &n, text);
        ((load(&counting.writes) - before.0, load(&counting.outside) - before.1), screen)
    };
    // The menu and the pending prompts (reads): no transaction, the reads on their own and one
    // run of statements that may write (the session's compare-and-swap, SQLite's writer turn).
    let mut last = String::new();
    for text in ["", "3"] {
        let (count, screen) = counts(text);
        assert_eq!(count, (0, 1), "`{text}` took {count:?} (write transactions, runs outside one): {screen}");
        assert!(screen.starts_with("CON "), "{screen}");
    }
    // The prompt and the PIN question only move through the menu: nothing written at all.
    for text in ["3*1", "3*1*1"] {
        let (count, screen) = counts(text);
        assert_eq!(count, (0, 0), "`{text}` took {count:?}: {screen}");
        assert!(screen.starts_with("CON "), "{screen}");
        last = screen;
    }
    // A repeat of the last request answers its screen again, writing nothing.
    assert_eq!(counts("3*1*1"), ((0, 0), last));
    // The PIN moves money: the session locked, the PIN checked, the charge approved and
    // completed, and the session moved on, all in the one transaction (after the session read
    // outside it that finds the hop needs more than reads).
    let (count, screen) = counts(&format!("3*1*1*{PIN}"));
    assert_eq!(count, (1, 0), "the approval took {count:?}: {screen}");
    assert!(screen.starts_with("END ") && screen.contains("approved"), "{screen}");
    assert_eq!(live.world.reload(&live.shop, &charge).state, ChargeState::Completed, "completed in the hop");
    assert_eq!(live.world.verified_ledger(None), vec![]);
}

#[test]
fn a_live_charge_ends_its_chunk_while_sandbox_charges_share_one() {
    // The worker's chunk (8 here) holds every charge it has locked until it commits; a live
    // charge's lock is what its customer's PIN hop waits for, so live charges are leased and
    // each advanced in a transaction of its own, while sandbox charges share one, which also
    // claims them.
    let mut live = Live::new();
    let sandbox_shop = live.world.org(OrgKind::Merchant, Mode::Test);
    let counting = Counting::install(&mut live);
    let worker_writes = |live: &Live| {
        live.world.advance(3);
        let before = counting.writes.load(std::sync::atomic::Ordering::SeqCst);
        let claimed = live.world.platform.processing().process_due(64).unwrap();
        (claimed, counting.writes.load(std::sync::atomic::Ordering::SeqCst) - before)
    };
    let sandbox: Vec<_> = (0..3).map(|_| live.world.charge(&sandbox_shop, &number("0000"), "100").unwrap()).collect();
    assert_eq!(worker_writes(&live), (3, 2), "one transaction claiming and advancing the three sandbox charges, then the live claim");
    assert!(sandbox.iter().all(|c| live.world.reload(&sandbox_shop, c).state == ChargeState::Completed));
    // Live prompts to numbers without a wallet: the worker's check fails each, one transaction
    // each (a live prompt whose payer can pay is parked at creation, see below).
    let checked: Vec<_> = (0..3).map(|_| live.world.charge(&live.shop, &number("0000"), "100").unwrap()).collect();
    assert_eq!(worker_writes(&live), (3, 5), "no sandbox charge due, the claim, then a transaction for each live charge's check");
    assert!(checked.iter().all(|c| ended(&live.world.reload(&live.shop, c)) == (ChargeState::Failed, Some(FailureReason::PayerNotFound))));
    assert_eq!(live.world.verified_ledger(None), vec![]);
}

#[test]
fn a_live_prompt_whose_payer_can_pay_waits_from_creation_and_the_others_fail_at_once() {
    let live = Live::new();
    let able = live.customer(&["5000"]);
    let locked = live.customer(&["5000"]);
    live.world.lock_wallet(&live.operator, &locked, "suspected fraud").unwrap();
    let waiting = live.world.charge(&live.shop, &able, "100").unwrap();
    let over = live.world.charge(&live.shop, &able, "5000.01").unwrap();
    let refused = live.world.charge(&live.shop, &locked, "100").unwrap();
    let nobody = live.world.charge(&live.shop, &number("0000"), "100").unwrap();
    // Every prompt is pending when created; the one its payer can pay is not due until it expires.
    for c in [&waiting, &over, &refused, &nobody] {
        assert_eq!(c.state, ChargeState::Pending);
    }
    assert_eq!(live.world.reload(&live.shop, &waiting).next_action_at, Some(waiting.expires_at));
    assert_eq!(live.world.platform.processing().process_due(100).unwrap(), 3, "only the three that cannot be paid are due");
    assert_eq!(ended(&live.world.reload(&live.shop, &waiting)), (ChargeState::Pending, None));
    assert_eq!(ended(&live.world.reload(&live.shop, &over)), (ChargeState::Failed, Some(FailureReason::LimitExceeded)));
    assert_eq!(ended(&live.world.reload(&live.shop, &refused)), (ChargeState::Failed, Some(FailureReason::WalletLocked)));
    assert_eq!(ended(&live.world.reload(&live.shop, &nobody)), (ChargeState::Failed, Some(FailureReason::PayerNotFound)));
    // Unanswered, it expires at its time to live.
    live.world.advance(89);
    assert_eq!(live.world.platform.processing().process_due(100).unwrap(), 0);
    live.world.advance(1);
    while live.world.platform.processing().process_due(100).unwrap() > 0 {}
    assert_eq!(ended(&live.world.reload(&live.shop, &waiting)), (ChargeState::Expired, Some(FailureReason::Expired)));
    assert_eq!(live.world.verified_ledger(None), vec![]);
}

#[test]
fn an_approval_under_an_older_pin_hash_checks_it_first_and_completes() {
    let live = Live::new();
    let n = live.customer(&["5000"]);
    let platform = &live.world.platform;
    let msisdn = malipo_core::Msisdn::parse(&n).unwrap();
    let pin_hash = || {
        malipo_service::ports::read(platform.store(), |tx| Ok(tx.wallet(Mode::Live, &msisdn)?.and_then(|w| w.pin_hash))).unwrap().unwrap()
    };
    store_older_pin_hash(platform, &msisdn);
    let wrong = live.world.charge(&live.shop, &n, "100").unwrap();
    for text in ["", "3", "3*1", "3*1*1"] {
        live.world.dial(&live.gateway, "s-old-wrong", &n, text);
    }
    let screen = live.world.dial(&live.gateway, "s-old-wrong", &n, "3*1*1*1111");
    assert!(!screen.contains("approved"), "{screen}");
    assert_eq!(live.world.reload(&live.shop, &wrong).state, ChargeState::Pending);
    assert!(pin_hash().starts_with("$argon2id$"));
    for text in ["", "3", "3*1", "3*1*1"] {
        live.world.dial(&live.gateway, "s-old-right", &n, text);
    }
    let screen = live.world.dial(&live.gateway, "s-old-right", &n, &format!("3*1*1*{PIN}"));
    assert!(screen.starts_with("END ") && screen.contains("approved"), "{screen}");
    assert_eq!(live.world.reload(&live.shop, &wrong).state, ChargeState::Completed);
    assert!(pin_hash().starts_with("$malipo-hmac-sha256$"), "{}", pin_hash());
    assert_eq!(platform.wallets().details(&live.operator, &n).unwrap().wallet.pin_attempts, 0, "the right PIN reset the count");
    assert_eq!(live.world.verified_ledger(None), vec![]);
}

#[test]
fn an_approval_whose_completion_fails_in_the_claim_is_undone_and_handled_apart() {
    let live = Live::new();
    let n = live.customer(&["5000"]);
    // A copy of a charge as if for another ledger's account (a test merchant's collection
    // account): its posting is refused, an error rather than an outcome, inside the claim's
    // transaction. The charge itself is approved first, so the copy is the one prompt left.
    let first = live.world.charge(&live.shop, &n, "100").unwrap();
    let test_shop = live.world.org(OrgKind::Merchant, Mode::Test);
    let elsewhere = live.world.platform.accounts().balance(&test_shop, malipo_ledger::AccountKind::Collection).unwrap().account.id;
    let charge = Charge { id: malipo_core::ChargeRef::new(), reference: "ROGUE".into(), merchant_account: elsewhere, ..first.clone() };
    malipo_service::write(live.world.platform.store(), |tx| Ok(tx.insert_charge(&charge)?)).unwrap();
    for text in ["", "3", "3*1", "3*1*1", &format!("3*1*1*{PIN}")] {
        live.world.dial(&live.gateway, "s-first", &n, text);
    }
    assert_eq!(live.world.reload(&live.shop, &first).state, ChargeState::Completed);
    for text in ["", "3", "3*1", "3*1*1"] {
        live.world.dial(&live.gateway, "s-refused", &n, text);
    }
    let screen = live.world.dial(&live.gateway, "s-refused", &n, &format!("3*1*1*{PIN}"));
    // Undone, then handled apart as before the claim did approvals: the PIN checked, the
    // charge authorised in one transaction, its completion refused in the next, which fails it
    // with its hold released. The screen is the approval's (it was authorised).
    assert!(screen.starts_with("END ") && screen.contains("approved"), "{screen}");
    let c = live.world.reload(&live.shop, &charge);
    assert_eq!(ended(&c), (ChargeState::Failed, Some(FailureReason::ProcessingError)));
    let details = live.world.platform.wallets().details(&live.operator, &n).unwrap();
    assert_eq!(details.wallet.pin_attempts, 0, "the right PIN counted as right");
    assert_eq!((details.account.balance, details.account.held), (MinorUnit::new(490_000), MinorUnit::ZERO), "nothing moved, no hold left");
    // A repeat of the PIN hop replays its screen and does nothing twice.
    assert_eq!(live.world.dial(&live.gateway, "s-refused", &n, &format!("3*1*1*{PIN}")), screen);
    live.world.advance(60);
    while live.world.platform.processing().process_due(100).unwrap() > 0 {}
    assert_eq!(ended(&live.world.reload(&live.shop, &charge)), (ChargeState::Failed, Some(FailureReason::ProcessingError)));
    assert_eq!(live.world.verified_ledger(None), vec![]);
}

/// The stored USSD session of the cast's gateway: (inputs it holds, its last screen).
fn stored_session(live: &Live, session: &str) -> (u32, String) {
    let (org, mode) = (live.gateway.org_id.clone(), live.gateway.mode);
    let s = malipo_service::read(live.world.platform.store(), |tx| Ok(tx.ussd_session(&org, mode, session)?)).unwrap().unwrap();
    (s.hops, s.last_screen)
}

#[test]
fn menu_hops_that_only_move_are_not_written_and_the_next_hop_handles_them_again() {
    let live = Live::new();
    let n = live.customer(&["5000"]);
    let charge = live.world.charge(&live.shop, &n, "100").unwrap();
    live.world.dial(&live.gateway, "s-quiet", &n, "");
    let list = live.world.dial(&live.gateway, "s-quiet", &n, "3");
    assert_eq!(stored_session(&live, "s-quiet"), (1, list.clone()), "the pending prompts are read, so the list is stored");
    let prompt = live.world.dial(&live.gateway, "s-quiet", &n, "3*1");
    assert!(prompt.starts_with("CON Pay KES 100.00"), "{prompt}");
    assert_eq!(live.world.dial(&live.gateway, "s-quiet", &n, "3*1"), prompt, "a repeat answers alike");
    assert_eq!(live.world.dial(&live.gateway, "s-quiet", &n, "3*1*1"), "CON Enter PIN to approve:");
    assert_eq!(stored_session(&live, "s-quiet"), (1, list), "moving through the menu wrote nothing");
    let done = live.world.dial(&live.gateway, "s-quiet", &n, &format!("3*1*1*{PIN}"));
    assert!(done.starts_with("END ") && done.contains("approved"), "{done}");
    assert_eq!(stored_session(&live, "s-quiet"), (4, done));
    assert_eq!(ended(&live.world.reload(&live.shop, &charge)), (ChargeState::Completed, None));
    // A hop that only moves, long after the stored one, is written: its time counts.
    let m = live.customer(&["5000"]);
    live.world.charge(&live.shop, &m, "100").unwrap();
    live.world.dial(&live.gateway, "s-late", &m, "");
    live.world.dial(&live.gateway, "s-late", &m, "3");
    live.world.advance(31);
    let prompt = live.world.dial(&live.gateway, "s-late", &m, "3*1");
    assert_eq!(stored_session(&live, "s-late"), (2, prompt));
    assert_eq!(live.world.verified_ledger(None), vec![]);
}

#[test]
fn a_session_expires_after_180_seconds_without_a_hop_counting_hops_not_written() {
    let live = Live::new();
    let n = live.customer(&["5000"]);
    live.world.charge(&live.shop, &n, "100").unwrap();
    let expired = "END Your session has expired. Please dial again.";
    // Hops not written (the prompt, 20 s after the list) still count as activity: 179 s after
    // the last of them the session goes on, though 199 s passed since the stored hop.
    live.world.dial(&live.gateway, "s-active", &n, "");
    live.world.dial(&live.gateway, "s-active", &n, "3");
    live.world.advance(20);
    live.world.dial(&live.gateway, "s-active", &n, "3*1");
    live.world.advance(179);
    assert_eq!(live.world.dial(&live.gateway, "s-active", &n, "3*1*1"), "CON Enter PIN to approve:");
    // 181 s after the last hop (written), it has expired.
    live.world.dial(&live.gateway, "s-idle", &n, "");
    live.world.dial(&live.gateway, "s-idle", &n, "3");
    live.world.advance(181);
    assert_eq!(live.world.dial(&live.gateway, "s-idle", &n, "3*1"), expired);
    // And 211 s after a hop stored with one not written 1 s after it: past the allowance.
    live.world.dial(&live.gateway, "s-gone", &n, "");
    live.world.dial(&live.gateway, "s-gone", &n, "3");
    live.world.advance(1);
    live.world.dial(&live.gateway, "s-gone", &n, "3*1");
    live.world.advance(211);
    assert_eq!(live.world.dial(&live.gateway, "s-gone", &n, "3*1*1"), expired);
}

/// The customer's PIN hop of a cash-out and an operator's lock at the same moment (the console's
/// "Lock" and the API's call the same use case): locked first means no cash-out; approved first
/// means the lock finds nothing pending. Never a cash-out out of a locked wallet, never half.
#[test]
fn a_cash_out_approval_racing_an_operator_lock_is_either_before_it_or_refused() {
    let live = Live::new();
    let p = &live.world.platform;
    for round in 0..16 {
        let n = live.customer(&["5000"]);
        let cash = p.parse(&live.agent, &NewAgentCash { customer_msisdn: n.clone(), amount: "1000".into() }).unwrap();
        let out = p.agents().cash_out(&live.agent, &cash, &idem(&live.agent, "POST /agents/cash-out"));
        let id = out.unwrap().value.id.to_string();
        let session = format!("s-{id}");
        for text in ["", "3", "3*1", "3*1*1"] {
            live.world.dial(&live.gateway, &session, &n, text);
        }
        let last = format!("3*1*1*{PIN}");
        let locked = std::thread::scope(|s| {
            let approve = s.spawn(|| live.world.dial(&live.gateway, &session, &n, &last));
            let lock = s.spawn(|| live.world.lock_wallet(&live.operator, &n, "suspected fraud"));
            let _screen = approve.join().unwrap();
            lock.join().unwrap()
        });
        locked.unwrap();
        while p.processing().process_due(100).unwrap() > 0 {}
        let c = p.agents().get_cash_out(&live.agent, &id).unwrap();
        let w = p.wallets().details(&live.operator, &n).unwrap();
        assert_eq!(w.wallet.state, WalletState::Locked, "round {round}");
        match c.state {
            // The approval came first: the lock found it no longer pending.
            ChargeState::Completed => assert!(w.account.balance < MinorUnit::new(500_000), "round {round}"),
            // The lock came first: nothing left the locked wallet.
            ChargeState::Failed => {
                assert_eq!(c.failure_reason, Some(FailureReason::WalletLocked), "round {round}");
                assert_eq!(w.account.balance, MinorUnit::new(500_000), "round {round}");
                assert_eq!(w.account.held, MinorUnit::ZERO, "round {round}");
            }
            other => panic!("round {round}: {other:?}"),
        }
    }
    assert!(live.world.verified_ledger(Some(Mode::Live)).is_empty());
}

#[test]
fn resetting_pin_attempts_forgets_them_on_an_active_wallet_only() {
    let live = Live::new();
    let p = &live.world.platform;
    let n = live.customer(&["100"]);
    // A wrong current PIN counts as a failed attempt.
    let change: SetPin =
        p.parse(&live.operator, &NewPin { msisdn: n.clone(), new_pin: "9137".into(), current_pin: Some("1357".into()) }).unwrap();
    assert!(p.wallets().set_pin(&live.operator, &change, &idem(&live.operator, "POST /wallets/pin")).is_err());
    assert_eq!(p.wallets().details(&live.operator, &n).unwrap().wallet.pin_attempts, 1);
    let reset = |who: &Principal| {
        let command: ResetPinAttempts = p.parse(who, &NewPinReset { msisdn: n.clone() }).unwrap();
        p.wallets().reset_pin_attempts(who, &command, &idem(who, "console reset"))
    };
    reset(&live.operator).unwrap();
    assert_eq!(p.wallets().details(&live.operator, &n).unwrap().wallet.pin_attempts, 0);
    live.world.lock_wallet(&live.operator, &n, "lost phone").unwrap();
    assert!(matches!(reset(&live.operator), Err(ServiceError::WalletLocked)), "a locked wallet is unlocked instead");
    let recent = p.wallets().recent(&live.operator, &n, 5).unwrap();
    assert_eq!(recent.len(), 1, "the cash-in");
    assert!(matches!(p.wallets().recent(&live.operator, "254700000000", 5), Err(ServiceError::NotFound)));
}

#[test]
fn a_wallets_history_pages_newest_first_within_its_window_for_the_operator_only() {
    let live = Live::new();
    let msisdn = live.customer(&["100", "200", "300"]);
    let wallets = live.world.platform.wallets();
    let (_, first) = wallets.history(&live.operator, &msisdn, (None, None), None, 2).unwrap();
    let amounts = |lines: &[malipo_service::StatementLine]| lines.iter().map(|l| l.posting.amount.get()).collect::<Vec<_>>();
    assert_eq!((amounts(&first.data), first.has_more), (vec![30_000, 20_000], true), "newest first");
    let (_, rest) = wallets.history(&live.operator, &msisdn, (None, None), first.next_cursor.as_deref(), 2).unwrap();
    assert_eq!((amounts(&rest.data), rest.has_more), (vec![10_000], false), "the next page joins the first");
    // The window is [from, to): from the second deposit, before the third.
    let (second, third) = (first.data[1].posting.created_at, first.data[0].posting.created_at);
    let (_, window) = wallets.history(&live.operator, &msisdn, (Some(second), Some(third)), None, 10).unwrap();
    assert!(amounts(&window.data) == vec![20_000] || second == third, "{:?}", amounts(&window.data));
    assert!(matches!(wallets.history(&live.shop, &msisdn, (None, None), None, 10), Err(ServiceError::Forbidden(_))));
    let test_operator = live.world.org(OrgKind::Operator, Mode::Test);
    assert!(
        matches!(wallets.history(&test_operator, &msisdn, (None, None), None, 10), Err(ServiceError::NotFound)),
        "a live wallet is not in test mode"
    );
    assert!(matches!(wallets.history(&live.operator, &msisdn, (None, None), Some("x"), 10), Err(ServiceError::Validation(_))));
}
