//! The Rust client's wallets, sandbox and USSD resources against the real server on both
//! backends: an operator's key pair (scope `wallets`) opens, reads, PINs, locks, unlocks and
//! raises wallets and reads their statements; a merchant's test key pair tops up test wallets
//! and simulates customers' answers (a live one is refused); a gateway's key pair (scope `ussd`)
//! walks a balance session.

use futures_util::TryStreamExt;
use malipo_client::{
    AccountKind, ChargeState, Client, Error, ErrorCode, KycSubmission, Mode, NewCharge, NewWallet, SandboxWallet, SimulatedAction,
    UssdRequest, WalletState,
};
use rust_decimal::Decimal;
use serde_json::json;

use crate::harness::{kra_pin, msisdn, national_id, ok, session_id, Creds, Db, TestApp};

crate::on_both!(
    a_wallet_is_opened_read_and_its_pin_set_and_changed,
    a_wallet_is_locked_unlocked_and_raised_by_kyc,
    a_live_wallets_statement_lists_the_money_that_moved,
    a_test_wallet_is_topped_up_and_its_charges_simulated,
    the_sandbox_refuses_a_live_key_pair,
    a_ussd_balance_session_goes_through_the_client,
);

const PIN: &str = "4826";

fn amount(minor: i64) -> Decimal {
    Decimal::new(minor, 2)
}

/// A new organisation of `kind` in Kenya, its key pair in `mode`, and a client for it.
async fn principal(app: &TestApp, kind: &str, mode: Mode) -> (Creds, Client) {
    let test = app.org(kind, "KE").await;
    let creds = match mode {
        Mode::Test => test,
        Mode::Live => app.live(&test.org_id).await,
    };
    let client = Client::new(&app.base, &creds.client_id, &creds.client_secret).unwrap();
    (creds, client)
}

/// The API's error code and its field errors (`field`, `code`).
fn problem(e: &Error) -> (ErrorCode, Vec<(String, String)>) {
    match e {
        Error::Api(p) => (p.code.clone(), p.errors.iter().map(|f| (f.field.clone(), f.code.as_str().to_owned())).collect()),
        other => panic!("expected a problem document, got {other:?}"),
    }
}

/// Asserts `e` is a `validation_failed` with the field error `field`/`code`.
fn assert_field(e: &Error, field: &str, code: &str) {
    let (c, fields) = problem(e);
    assert_eq!(c, ErrorCode::ValidationFailed, "{e}");
    assert!(fields.iter().any(|(f, k)| f == field && k == code), "expected {field}/{code} in {e}");
}

/// Asserts `e` is a `validation_failed` with a field error on `field`, whatever its code.
fn assert_field_on(e: &Error, field: &str) {
    let (c, fields) = problem(e);
    assert_eq!(c, ErrorCode::ValidationFailed, "{e}");
    assert!(fields.iter().any(|(f, _)| f == field), "expected an error on {field} in {e}");
}

/// A cash-in by an agent (raw HTTP: another group's operation), returning its transaction id.
async fn cash_in(app: &TestApp, agent_token: &str, n: &str, amount: &str) -> String {
    let a = ok(app.post_new(agent_token, "/agents/cash-in", &json!({"customer_msisdn": n, "amount": amount})).await, "cash-in");
    a.json["transaction_id"].as_str().unwrap().to_owned()
}

async fn a_wallet_is_opened_read_and_its_pin_set_and_changed(db: Db) {
    let app = TestApp::shared(db);
    let (_, operator) = principal(app, "operator", Mode::Test).await;
    let wallets = operator.wallets();
    let n = msisdn("3100");
    let opened = wallets.open(&NewWallet::new(n.as_str(), "Amina", "Otieno")).await.unwrap();
    assert_eq!((opened.msisdn.as_str(), opened.mode, opened.state), (n.as_str(), Mode::Test, WalletState::Active));
    assert_eq!((opened.kyc_tier, opened.currency.as_str(), opened.pin_set), (0, "KES", false));
    assert_eq!((opened.balance, opened.available), (Decimal::ZERO, Decimal::ZERO));
    let l = &opened.limits;
    assert_eq!(
        (l.per_transaction, l.daily, l.daily_used, l.max_balance),
        (amount(500_000), amount(1_000_000), Decimal::ZERO, amount(2_000_000))
    );
    assert_eq!(
        (opened.first_name.as_deref(), opened.last_name.as_deref(), opened.id_type.as_deref()),
        (Some("Amina"), Some("Otieno"), None)
    );
    assert_eq!(opened.lock_reason, None);
    assert_eq!(wallets.get(&n).await.unwrap(), opened, "read back as opened");

    // Opening under the same key replays; under a new one it is a second opening: refused.
    let m = msisdn("3101");
    let with_id = NewWallet::new(m.as_str(), "Juma", "Mwangi").id("national_id", national_id()).date_of_birth("1990-04-17");
    let first = wallets.open_with_key(&with_id, &format!("open-{m}")).await.unwrap();
    assert_eq!((first.kyc_tier, first.date_of_birth.as_deref()), (1, Some("1990-04-17")));
    assert_eq!(first.limits.per_transaction, amount(15_000_000));
    assert_eq!(wallets.open_with_key(&with_id, &format!("open-{m}")).await.unwrap(), first, "replayed");
    let again = wallets.open(&NewWallet::new(n.as_str(), "Other", "Person")).await.unwrap_err();
    assert_eq!(again.code(), Some(&ErrorCode::InvalidState));
    let bad = wallets.open(&NewWallet::new("25471234", "A", "B")).await.unwrap_err();
    assert_field(&bad, "msisdn", "invalid_msisdn");
    assert_eq!(wallets.get(&msisdn("3102")).await.unwrap_err().code(), Some(&ErrorCode::NotFound));

    // Weak PINs are refused before anything is stored.
    for weak in ["1234", "0000", "1111"] {
        assert_field(&wallets.set_pin(&n, weak, None).await.unwrap_err(), "new_pin", "weak_pin");
    }
    assert!(!wallets.get(&n).await.unwrap().pin_set);
    // The first PIN needs no current one.
    let set = wallets.set_pin(&n, PIN, None).await.unwrap();
    assert!(set.pin_set);
    assert!(!format!("{set:?}").contains(PIN), "the PIN never comes back");
    // Changing it needs the current one, and the right one.
    assert_field(&wallets.set_pin(&n, "7391", None).await.unwrap_err(), "current_pin", "missing_field");
    assert_field(&wallets.set_pin(&n, "7391", Some("0582")).await.unwrap_err(), "current_pin", "wrong_pin");
    assert_field(&wallets.set_pin(&n, "1111", Some(PIN)).await.unwrap_err(), "new_pin", "weak_pin");
    let changed = wallets.set_pin(&n, "7391", Some(PIN)).await.unwrap();
    assert_eq!((changed.pin_set, changed.state), (true, WalletState::Active), "a right PIN resets the count");
    // The old PIN is no longer the current one.
    assert_field(&wallets.set_pin(&n, "0582", Some(PIN)).await.unwrap_err(), "current_pin", "wrong_pin");
    wallets.set_pin(&n, "0582", Some("7391")).await.unwrap();
    assert_eq!(wallets.get(&n).await.unwrap().state, WalletState::Active);
    let unknown = wallets.set_pin(&msisdn("3103"), PIN, None).await.unwrap_err();
    assert_eq!(unknown.code(), Some(&ErrorCode::NotFound));
    app.assert_ledger_ok().await;
}

async fn a_wallet_is_locked_unlocked_and_raised_by_kyc(db: Db) {
    let app = TestApp::shared(db);
    let (_, operator) = principal(app, "operator", Mode::Test).await;
    let wallets = operator.wallets();
    let n = msisdn("3104");
    wallets.open(&NewWallet::new(n.as_str(), "Amina", "Otieno")).await.unwrap();
    wallets.set_pin(&n, PIN, None).await.unwrap();

    let locked = wallets.lock(&n, "suspected fraud").await.unwrap();
    assert_eq!((locked.state, locked.lock_reason.as_deref()), (WalletState::Locked, Some("suspected fraud")));
    let read = wallets.get(&n).await.unwrap();
    assert_eq!((read.state, read.lock_reason.as_deref()), (WalletState::Locked, Some("suspected fraud")));
    assert_eq!(wallets.lock(&n, "again").await.unwrap_err().code(), Some(&ErrorCode::InvalidState));
    assert_field_on(&wallets.lock(&n, "  ").await.unwrap_err(), "reason");
    // Locked: even the right PIN cannot change it.
    assert_eq!(wallets.set_pin(&n, "7391", Some(PIN)).await.unwrap_err().code(), Some(&ErrorCode::WalletLocked));
    let unlocked = wallets.unlock(&n, "customer identified").await.unwrap();
    assert_eq!((unlocked.state, unlocked.lock_reason), (WalletState::Active, None));
    assert_eq!(wallets.get(&n).await.unwrap().state, WalletState::Active);
    assert_eq!(wallets.unlock(&n, "again").await.unwrap_err().code(), Some(&ErrorCode::InvalidState));

    // Three wrong current PINs lock it; unlocking resets the count.
    for _ in 0..3 {
        let e = wallets.set_pin(&n, "7391", Some("0582")).await.unwrap_err();
        assert!(matches!(problem(&e).0, ErrorCode::ValidationFailed | ErrorCode::WalletLocked), "{e}");
    }
    let out = wallets.get(&n).await.unwrap();
    assert_eq!(out.state, WalletState::Locked, "three wrong PINs lock the wallet");
    assert!(out.lock_reason.is_some());
    wallets.unlock_with_key(&n, "customer called", &format!("unlock-{n}")).await.unwrap();
    for attempt in 1..=2 {
        assert_field(&wallets.set_pin(&n, "7391", Some("0582")).await.unwrap_err(), "current_pin", "wrong_pin");
        assert_eq!(wallets.get(&n).await.unwrap().state, WalletState::Active, "wrong attempt {attempt} after unlocking");
    }
    wallets.set_pin(&n, "7391", Some(PIN)).await.unwrap();

    // KYC: tier 0 → 1 on a national ID → 2 on a KRA PIN, each with its limits.
    assert_field_on(&wallets.kyc(&n, &KycSubmission::new(1, "national_id", "12")).await.unwrap_err(), "id_number");
    assert_field_on(&wallets.kyc(&n, &KycSubmission::new(2, "national_id", national_id())).await.unwrap_err(), "tier");
    assert_eq!(wallets.get(&n).await.unwrap().kyc_tier, 0);
    let id = national_id();
    let one = wallets.kyc(&n, &KycSubmission::new(1, "national_id", id.as_str())).await.unwrap();
    assert_eq!((one.kyc_tier, one.id_type.as_deref(), one.id_number.as_deref()), (1, Some("national_id"), Some(id.as_str())));
    assert_eq!((one.limits.per_transaction, one.limits.max_balance), (amount(15_000_000), amount(30_000_000)));
    let same = wallets.kyc(&n, &KycSubmission::new(1, "national_id", national_id())).await.unwrap_err();
    assert_eq!(same.code(), Some(&ErrorCode::InvalidState));
    let two = wallets.kyc(&n, &KycSubmission::new(2, "kra_pin", kra_pin())).await.unwrap();
    let l = &two.limits;
    assert_eq!((two.kyc_tier, l.per_transaction, l.daily, l.max_balance), (2, amount(25_000_000), amount(50_000_000), amount(50_000_000)));
    assert_eq!(wallets.get(&n).await.unwrap(), two);
    app.assert_ledger_ok().await;
}

async fn a_live_wallets_statement_lists_the_money_that_moved(db: Db) {
    let app = TestApp::shared(db);
    let (_, operator) = principal(app, "operator", Mode::Live).await;
    let (agent, _) = principal(app, "agent", Mode::Live).await;
    app.fund(&agent.org_id, malipo_core::Mode::Live, "50000").await;
    let agent_token = app.token(&agent).await;
    let wallets = operator.wallets();
    let n = msisdn("3105");
    let opened = wallets.open(&NewWallet::new(n.as_str(), "Amina", "Otieno").id("national_id", national_id())).await.unwrap();
    assert_eq!(opened.mode, Mode::Live);
    let mut ids = Vec::new();
    for a in ["100", "250.50", "300"] {
        ids.push(cash_in(app, &agent_token, &n, a).await);
    }
    // One page of two, then the rest after its cursor: oldest first.
    let list = wallets.transactions(&n);
    let first = list.clone().limit(2).page(None).await.unwrap();
    assert_eq!(first.data.len(), 2);
    assert!(first.has_more);
    let expected = [(amount(10_000), amount(10_000)), (amount(25_050), amount(35_050)), (amount(30_000), amount(65_050))];
    for (i, line) in first.data.iter().enumerate() {
        assert_eq!(line.transaction_id, ids[i], "oldest first");
        assert_eq!((line.kind.as_str(), line.amount, line.balance_after), ("cash_in", expected[i].0, expected[i].1));
        assert!(!line.source_ref.is_empty() && line.created_at.offset().is_utc(), "{line:?}");
    }
    let second = list.clone().limit(2).page(first.next_cursor.as_deref()).await.unwrap();
    assert_eq!((second.data.len(), second.has_more, second.next_cursor.as_deref()), (1, false, None));
    assert_eq!((second.data[0].transaction_id.as_str(), second.data[0].balance_after), (ids[2].as_str(), expected[2].1));
    // The whole statement as one stream of pages of one.
    let all: Vec<_> = list.limit(1).stream().try_collect().await.unwrap();
    assert_eq!(all.iter().map(|l| l.transaction_id.as_str()).collect::<Vec<_>>(), ids);
    assert_eq!(wallets.get(&n).await.unwrap().balance, amount(65_050));
    // A test key pair sees no live wallet.
    let (_, test_operator) = principal(app, "operator", Mode::Test).await;
    assert_eq!(test_operator.wallets().get(&n).await.unwrap_err().code(), Some(&ErrorCode::NotFound));
    let hidden = test_operator.wallets().transactions(&n).page(None).await.unwrap_err();
    assert_eq!(hidden.code(), Some(&ErrorCode::NotFound));
    app.assert_ledger_ok().await;
}

async fn a_test_wallet_is_topped_up_and_its_charges_simulated(db: Db) {
    let app = TestApp::shared(db);
    let (_, merchant) = principal(app, "merchant", Mode::Test).await;
    let (_, operator) = principal(app, "operator", Mode::Test).await;
    let sandbox = merchant.sandbox();
    // A number ending 1009: its charges stay pending until simulated.
    let n = msisdn("1009");
    let made = sandbox.wallet(&SandboxWallet::new(n.as_str())).await.unwrap();
    assert_eq!((made.mode, made.state, made.currency.as_str()), (Mode::Test, WalletState::Active, "KES"));
    assert_eq!(made.balance, amount(100_000_000), "a new test wallet holds a million");
    let set = sandbox.wallet(&SandboxWallet::new(n.as_str()).balance(amount(50_000))).await.unwrap();
    assert_eq!((set.balance, set.available), (amount(50_000), amount(50_000)));
    assert_eq!(sandbox.wallet(&SandboxWallet::new(n.as_str())).await.unwrap().balance, amount(50_000), "unchanged without a balance");
    let tier0 = sandbox.wallet(&SandboxWallet::new(n.as_str()).kyc_tier(0)).await.unwrap();
    assert_eq!((tier0.kyc_tier, tier0.limits.per_transaction), (0, amount(500_000)));

    // Approve: the charge completes at once and the money moves.
    let charge = merchant.charges().create(&NewCharge::new(n.as_str(), amount(25_000), "SDK-SIM-1")).await.unwrap();
    assert_eq!(charge.state, ChargeState::Pending);
    let approved = sandbox.simulate(&charge.charge_ref, SimulatedAction::Approve).await.unwrap();
    assert_eq!((approved.charge_ref.as_str(), approved.state), (charge.charge_ref.as_str(), ChargeState::Completed));
    assert_eq!((approved.amount, approved.fee, approved.failure_reason.clone()), (amount(25_000), amount(200), None));
    assert!(approved.transaction_id.as_deref().is_some_and(|t| t.starts_with("tx_")) && approved.completed_at.is_some());
    assert_eq!(merchant.charges().get(&charge.charge_ref).await.unwrap(), approved, "the answer is the charge as stored");
    assert_eq!(sandbox.wallet(&SandboxWallet::new(n.as_str())).await.unwrap().balance, amount(25_000), "500 - 250");
    assert_eq!(merchant.accounts().balance(AccountKind::Collection).await.unwrap().available, amount(24_800), "250 - fee 2");
    // The operator sees the payment on the wallet's statement.
    let lines: Vec<_> = operator.wallets().transactions(&n).stream().try_collect().await.unwrap();
    let last = lines.last().unwrap();
    assert_eq!((last.kind.as_str(), last.amount, last.balance_after), ("charge", -amount(25_000), amount(25_000)), "{lines:?}");
    assert_eq!(Some(&last.transaction_id), approved.transaction_id.as_ref());
    // A final charge takes no more simulations.
    let twice = sandbox.simulate(&charge.charge_ref, SimulatedAction::Decline).await.unwrap_err();
    assert_eq!(twice.code(), Some(&ErrorCode::InvalidState));

    // Decline: nothing moves.
    let other = merchant.charges().create(&NewCharge::new(n.as_str(), amount(10_000), "SDK-SIM-2")).await.unwrap();
    let declined = sandbox.simulate_with_key(&other.charge_ref, SimulatedAction::Decline, &format!("decline-{n}")).await.unwrap();
    assert_eq!(
        (declined.state, declined.failure_reason.clone(), declined.transaction_id.as_deref()),
        (ChargeState::Declined, Some(malipo_client::ChargeFailure::DeclinedByCustomer), None)
    );
    let replayed = sandbox.simulate_with_key(&other.charge_ref, SimulatedAction::Decline, &format!("decline-{n}")).await.unwrap();
    assert_eq!(replayed, declined, "the same key replays the first answer");
    assert_eq!(sandbox.wallet(&SandboxWallet::new(n.as_str())).await.unwrap().balance, amount(25_000));
    assert_eq!(merchant.accounts().balance(AccountKind::Collection).await.unwrap().available, amount(24_800));

    // A wrong PIN leaves it pending; an unknown charge is not found.
    let third = merchant.charges().create(&NewCharge::new(n.as_str(), amount(1_000), "SDK-SIM-3")).await.unwrap();
    let wrong = sandbox.simulate(&third.charge_ref, SimulatedAction::WrongPin).await.unwrap();
    assert_eq!((wrong.state, wrong.failure_reason), (ChargeState::Pending, None));
    let expired = sandbox.simulate(&third.charge_ref, SimulatedAction::Expire).await.unwrap();
    assert_eq!((expired.state, expired.failure_reason), (ChargeState::Expired, Some(malipo_client::ChargeFailure::Expired)));
    let missing = sandbox.simulate("ch_0000000000000000000000", SimulatedAction::Approve).await.unwrap_err();
    assert_eq!(missing.code(), Some(&ErrorCode::NotFound));
    let bad = sandbox.wallet(&SandboxWallet::new(n.as_str()).balance(amount(-100))).await.unwrap_err();
    assert_field(&bad, "balance", "invalid_amount");
    app.assert_ledger_ok().await;
}

async fn the_sandbox_refuses_a_live_key_pair(db: Db) {
    let app = TestApp::shared(db);
    let (creds, test) = principal(app, "merchant", Mode::Test).await;
    let live_creds = app.live(&creds.org_id).await;
    let live = Client::new(&app.base, &live_creds.client_id, &live_creds.client_secret).unwrap();
    assert_eq!(live.mode(), Mode::Live);
    let n = msisdn("1009");
    let charge = test.charges().create(&NewCharge::new(n.as_str(), amount(10_000), "SDK-LIVE-SIM")).await.unwrap();
    let refused = live.sandbox().simulate(&charge.charge_ref, SimulatedAction::Approve).await.unwrap_err();
    assert_eq!(refused.code(), Some(&ErrorCode::TestModeOnly), "{refused}");
    let Error::Api(p) = &refused else { panic!("{refused:?}") };
    assert_eq!(p.status, 403);
    let wallet = live.sandbox().wallet(&SandboxWallet::new(n.as_str()).balance(amount(100))).await.unwrap_err();
    assert_eq!(wallet.code(), Some(&ErrorCode::TestModeOnly), "{wallet}");
    // Nothing moved: the charge is still pending.
    assert_eq!(test.charges().get(&charge.charge_ref).await.unwrap().state, ChargeState::Pending);
}

async fn a_ussd_balance_session_goes_through_the_client(db: Db) {
    let app = TestApp::shared(db);
    let (_, operator) = principal(app, "operator", Mode::Test).await;
    let (agent, _) = principal(app, "agent", Mode::Test).await;
    let (_, gateway) = principal(app, "gateway", Mode::Test).await;
    app.fund(&agent.org_id, malipo_core::Mode::Test, "50000").await;
    let n = msisdn("3106");
    operator.wallets().open(&NewWallet::new(n.as_str(), "Amina", "Otieno").id("national_id", national_id())).await.unwrap();
    operator.wallets().set_pin(&n, PIN, None).await.unwrap();
    cash_in(app, &app.token(&agent).await, &n, "1234.50").await;
    let ussd = gateway.ussd();
    let hop = |session: &str, inputs: &[&str]| UssdRequest::new(session, n.as_str(), "").inputs(inputs).service_code("*384*1#");

    // Main menu, "4. My balance", the PIN: CON, CON, END with the balance.
    let session = session_id();
    let menu = ussd.send(&hop(&session, &[])).await.unwrap();
    assert!(menu.more, "{menu:?}");
    assert_eq!(menu.text, "Malipo\n1. Send money\n2. Pay merchant\n3. Approve payments\n4. My balance\n5. My account");
    let ask = ussd.send(&hop(&session, &["4"])).await.unwrap();
    assert!(ask.more && ask.text.contains("PIN"), "{ask:?}");
    let balance = ussd.send(&hop(&session, &["4", PIN]).network_code("63902")).await.unwrap();
    assert!(!balance.more, "{balance:?}");
    assert_eq!(balance.text, "Your balance is KES 1,234.50");
    // The gateway retrying the last hop gets the same screen.
    assert_eq!(ussd.send(&hop(&session, &["4", PIN])).await.unwrap(), balance);

    // A wrong PIN: CON with the attempts left, and the wallet still active; a `+` is accepted.
    let other = session_id();
    let plus = UssdRequest::new(other.as_str(), format!("+{n}"), "");
    assert!(ussd.send(&plus).await.unwrap().more);
    assert!(ussd.send(&plus.clone().inputs(["4"])).await.unwrap().more);
    let wrong = ussd.send(&plus.clone().inputs(["4", "7391"])).await.unwrap();
    assert!(wrong.more && wrong.text.contains("2 attempts left"), "{wrong:?}");
    assert_eq!(operator.wallets().get(&n).await.unwrap().state, WalletState::Active);
    // Asking for the balance moved nothing.
    assert_eq!(operator.wallets().get(&n).await.unwrap().balance, amount(123_450));

    // An unknown number is sent to an agent at once.
    let stranger = ussd.send(&UssdRequest::new(session_id(), msisdn("3107"), "")).await.unwrap();
    assert!(!stranger.more && stranger.text.contains("agent"), "{stranger:?}");
    // A merchant's key pair has no `ussd` scope; a bad number is a field error.
    let (_, merchant) = principal(app, "merchant", Mode::Test).await;
    let scope = merchant.ussd().send(&hop(&session_id(), &[])).await.unwrap_err();
    assert_eq!(scope.code(), Some(&ErrorCode::InsufficientScope));
    let bad = ussd.send(&UssdRequest::new(session_id(), "0712345678", "")).await.unwrap_err();
    assert_eq!(bad.code(), Some(&ErrorCode::ValidationFailed), "{bad}");
    app.assert_ledger_ok().await;
}
