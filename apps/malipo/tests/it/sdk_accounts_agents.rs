//! The client's accounts (list, statement, transfers), agents (cash-in, cash-out, float) and
//! countries against the real server on both backends.

use std::time::{Duration, Instant};

use futures_util::TryStreamExt;
use malipo_client::{AccountKind, AgentCash, ChargeState, Client, ErrorCode, NewTransfer, NewWallet, StatementFilter, UssdRequest};
use malipo_core::Mode;
use rust_decimal::Decimal;

use crate::harness::{msisdn, national_id, session_id, Creds, Db, TestApp};

crate::on_both!(
    accounts_are_listed_and_a_transfer_moves_money_shown_in_both_statements,
    an_agent_cashes_in_and_out_and_reads_its_float_through_the_client,
    the_countries_are_read_typed_and_their_fees_apply,
);

fn amount(minor: i64) -> Decimal {
    Decimal::new(minor, 2)
}

fn client_of(app: &TestApp, c: &Creds) -> Client {
    Client::new(&app.base, &c.client_id, &c.client_secret).unwrap()
}

async fn accounts_are_listed_and_a_transfer_moves_money_shown_in_both_statements(db: Db) {
    let app = TestApp::shared(db);
    let c = app.merchant().await;
    app.fund(&c.org_id, Mode::Test, "1000").await;
    let client = client_of(app, &c);
    let accounts = client.accounts().list().await.unwrap();
    let kinds: Vec<&str> = accounts.iter().map(|a| a.kind.as_str()).collect();
    assert!(kinds.contains(&"collection") && kinds.contains(&"payout"), "{accounts:?}");
    let of = |accounts: &[malipo_client::Account], kind: &str| accounts.iter().find(|a| a.kind == kind).unwrap().clone();
    let (collection, payout) = (of(&accounts, "collection"), of(&accounts, "payout"));
    assert_eq!(
        (payout.balance, payout.available, payout.currency.as_str(), payout.mode),
        (amount(100_000), amount(100_000), "KES", malipo_client::Mode::Test)
    );
    assert_eq!(collection.balance, Decimal::ZERO);
    assert!(collection.account_id.starts_with("acc_") && collection.account_id != payout.account_id);

    let key = uuid::Uuid::new_v4().to_string();
    let move_250 = NewTransfer::new(AccountKind::Payout, AccountKind::Collection, amount(25_000));
    let moved = client.accounts().transfer_with_key(&move_250, &key).await.unwrap();
    assert!(moved.transfer_id.starts_with("tx_"));
    assert_eq!(
        (moved.from.as_str(), moved.to.as_str(), moved.amount, moved.currency.as_str()),
        ("payout", "collection", amount(25_000), "KES")
    );
    let again = client.accounts().transfer_with_key(&move_250, &key).await.unwrap();
    assert_eq!(again, moved, "the same key answers the same transfer");
    let after = client.accounts().list().await.unwrap();
    assert_eq!(of(&after, "payout").balance, amount(75_000), "moved once");
    assert_eq!(of(&after, "collection").balance, amount(25_000));
    assert_eq!(client.accounts().balance(AccountKind::Collection).await.unwrap().available, amount(25_000));

    let short =
        client.accounts().transfer(&NewTransfer::new(AccountKind::Collection, AccountKind::Payout, amount(25_001))).await.unwrap_err();
    assert_eq!(short.code(), Some(&ErrorCode::InsufficientFunds));

    // Two more, then both statements read as streams of pages of two, oldest first.
    for minor in [1_000, 2_000] {
        client.accounts().transfer(&NewTransfer::new(AccountKind::Collection, AccountKind::Payout, amount(minor))).await.unwrap();
    }
    let lines: Vec<_> =
        client.accounts().statement(&collection.account_id, StatementFilter::default()).limit(2).stream().try_collect().await.unwrap();
    let moves: Vec<(Decimal, Decimal)> = lines.iter().map(|l| (l.amount, l.balance_after)).collect();
    assert_eq!(moves, [(amount(25_000), amount(25_000)), (amount(-1_000), amount(24_000)), (amount(-2_000), amount(22_000))]);
    assert_eq!(lines[0].transaction_id, moved.transfer_id, "the transfer's id is the ledger transaction's");
    let payout_lines: Vec<_> =
        client.accounts().statement(&payout.account_id, StatementFilter::default()).stream().try_collect().await.unwrap();
    let mine = payout_lines.iter().find(|l| l.transaction_id == moved.transfer_id).expect("in the payout account's statement too");
    assert_eq!((mine.amount, mine.balance_after), (amount(-25_000), amount(75_000)));
    assert_eq!(payout_lines.last().unwrap().balance_after, amount(78_000));
    // A window before any posting: empty.
    let none: Vec<_> = client
        .accounts()
        .statement(&payout.account_id, StatementFilter::between("2020-01-01T00:00:00Z", "2020-01-02T00:00:00Z"))
        .stream()
        .try_collect()
        .await
        .unwrap();
    assert!(none.is_empty());
    let unknown = client.accounts().statement("acc_doesnotexist", StatementFilter::default()).page(None).await.unwrap_err();
    assert_eq!(unknown.code(), Some(&ErrorCode::NotFound));
}

async fn an_agent_cashes_in_and_out_and_reads_its_float_through_the_client(db: Db) {
    let app = TestApp::shared(db);
    // Live: a cash-in into a wallet the operator opened.
    let operator = app.live(&app.org("operator", "KE").await.org_id).await;
    let agent = app.live(&app.org("agent", "KE").await.org_id).await;
    app.fund(&agent.org_id, Mode::Live, "100000").await;
    let (operator, agent_client) = (client_of(app, &operator), client_of(app, &agent));
    let float = agent_client.agents().float().await.unwrap();
    assert_eq!((float.account.as_str(), float.available, float.currency.as_str()), ("agent_float", amount(10_000_000), "KES"));
    let customer = msisdn("4100");
    operator.wallets().open(&NewWallet::new(customer.clone(), "Amina", "Otieno").id("national_id", national_id())).await.unwrap();
    let key = uuid::Uuid::new_v4().to_string();
    let cash = AgentCash::new(customer.clone(), amount(250_000));
    let paid = agent_client.agents().cash_in_with_key(&cash, &key).await.unwrap();
    assert!(paid.transaction_id.starts_with("tx_"));
    assert_eq!(
        (paid.kind.as_str(), paid.state.as_str(), paid.amount, paid.float_balance),
        ("cash_in", "completed", amount(250_000), amount(9_750_000))
    );
    assert_eq!(agent_client.agents().cash_in_with_key(&cash, &key).await.unwrap(), paid, "replayed, not paid twice");
    assert_eq!(agent_client.agents().float().await.unwrap().available, amount(9_750_000));
    assert_eq!(operator.wallets().get(&customer).await.unwrap().balance, amount(250_000));
    // A cent more than the float (well inside the tier-1 limits): insufficient_funds, nothing moved.
    let over = agent_client.agents().cash_in(&AgentCash::new(customer.clone(), amount(9_750_001))).await.unwrap_err();
    assert_eq!(over.code(), Some(&ErrorCode::InsufficientFunds), "{over:?}");
    assert_eq!(agent_client.agents().float().await.unwrap().available, amount(9_750_000));

    // Live cash-out: nothing moves until the customer approves it over USSD with the PIN; then
    // the wallet pays amount + fee (1,029.00) and the float gets amount + commission (1,019.00).
    operator.wallets().set_pin(&customer, "4826", None).await.unwrap();
    let made = agent_client.agents().create_cash_out(&AgentCash::new(customer.clone(), amount(100_000))).await.unwrap();
    assert_eq!(
        (made.state, made.mode, made.fee, made.agent_commission),
        (ChargeState::Pending, malipo_client::Mode::Live, amount(2_900), amount(1_900))
    );
    assert!(made.transaction_id.is_none() && made.completed_at.is_none() && made.failure_reason.is_none());
    assert_eq!(operator.wallets().get(&customer).await.unwrap().balance, amount(250_000), "not before the approval");
    let gateway = client_of(app, &app.live(&app.org("gateway", "KE").await.org_id).await);
    let session = session_id();
    let mut screen = None;
    for inputs in [&[][..], &["3"], &["3", "1"], &["3", "1", "1"], &["3", "1", "1", "4826"]] {
        screen = Some(gateway.ussd().send(&UssdRequest::new(session.as_str(), customer.as_str(), "").inputs(inputs)).await.unwrap());
    }
    let screen = screen.unwrap();
    assert!(!screen.more && screen.text.contains("approved"), "{screen:?}");
    let done = settle(&agent_client, &made.withdrawal_ref).await;
    assert_eq!(done.state, ChargeState::Completed, "{done:?}");
    assert_eq!(operator.wallets().get(&customer).await.unwrap().balance, amount(147_100));
    assert_eq!(agent_client.agents().float().await.unwrap().available, amount(9_851_900));
    let lines: Vec<_> = operator.wallets().transactions(&customer).stream().try_collect().await.unwrap();
    let last = lines.last().unwrap();
    assert_eq!((last.kind.as_str(), last.amount, last.balance_after), ("cash_out", amount(-102_900), amount(147_100)));
    assert_eq!(Some(&last.transaction_id), done.transaction_id.as_ref());

    // Test mode: a cash-out the sandbox approves, and one it declines.
    let agent = app.org("agent", "KE").await;
    app.fund(&agent.org_id, Mode::Test, "50000").await;
    let agent_client = client_of(app, &agent);
    let made = agent_client.agents().create_cash_out(&AgentCash::new(msisdn("4112"), amount(250_000))).await.unwrap();
    assert!(made.withdrawal_ref.starts_with("wd_"));
    assert_eq!((made.state, made.mode), (ChargeState::Pending, malipo_client::Mode::Test));
    let done = settle(&agent_client, &made.withdrawal_ref).await;
    assert_eq!((done.state, done.fee, done.agent_commission), (ChargeState::Completed, amount(2_900), amount(1_900)));
    assert!(done.transaction_id.is_some() && done.completed_at.is_some());
    assert_eq!(agent_client.agents().float().await.unwrap().available, amount(5_251_900), "the cash and the commission");
    let declined = agent_client.agents().create_cash_out(&AgentCash::new(msisdn("1001"), amount(10_000))).await.unwrap();
    let declined = settle(&agent_client, &declined.withdrawal_ref).await;
    assert_eq!((declined.state, declined.failure_reason), (ChargeState::Declined, Some(malipo_client::ChargeFailure::DeclinedByCustomer)));
    assert_eq!(agent_client.agents().float().await.unwrap().available, amount(5_251_900), "a declined one moves nothing");
    assert_eq!(agent_client.agents().cash_out("wd_doesnotexist").await.unwrap_err().code(), Some(&ErrorCode::NotFound));
    // A merchant's key pair has no agent scope.
    let merchant = client_of(app, &app.merchant().await);
    assert_eq!(merchant.agents().float().await.unwrap_err().code(), Some(&ErrorCode::InsufficientScope));
}

/// The cash-out once it is final (polled with a deadline).
async fn settle(client: &Client, withdrawal_ref: &str) -> malipo_client::CashOut {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let now = client.agents().cash_out(withdrawal_ref).await.unwrap();
        if now.state.is_final() {
            return now;
        }
        assert!(Instant::now() < deadline, "{withdrawal_ref} still {:?}", now.state);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn the_countries_are_read_typed_and_their_fees_apply(db: Db) {
    let app = TestApp::shared(db);
    let client = client_of(app, &app.merchant().await);
    let countries = client.countries().list().await.unwrap();
    let codes: Vec<&str> = countries.iter().map(|c| c.country.as_str()).collect();
    for code in ["KE", "UG", "TZ", "RW", "GH"] {
        assert!(codes.contains(&code), "{codes:?}");
    }
    let ke = countries.iter().find(|c| c.country == "KE").unwrap();
    assert_eq!((ke.currency.as_str(), ke.dialling_code.as_str(), ke.msisdn_length, ke.minor_units), ("KES", "254", 12, 2));
    assert_eq!((ke.time_zone.as_str(), ke.utc_offset_minutes), ("Africa/Nairobi", 180));
    assert!(ke.id_types.iter().any(|t| t.name == "national_id" && t.grants_tier >= 1));
    let tiers: Vec<u8> = ke.kyc_tiers.iter().map(|t| t.tier).collect();
    assert_eq!(tiers, (0..u8::try_from(tiers.len()).unwrap()).collect::<Vec<_>>(), "ascending from 0");
    assert!(ke.kyc_tiers.windows(2).all(|w| w[0].per_transaction <= w[1].per_transaction));
    // The schedules agree with what the server charges: 2.00 on a 250.00 charge, and on a
    // 2,500.00 cash-out 29.00 of which 19.00 is the agent's (the test above).
    assert_eq!(ke.fees["charge"].fee_for(amount(25_000)), Some(amount(200)));
    let cash_out = &ke.fees["cash_out"];
    assert_eq!(cash_out.fee_for(amount(250_000)), Some(amount(2_900)));
    let band = cash_out.bands.iter().find(|b| b.min <= amount(250_000) && amount(250_000) <= b.max).unwrap();
    assert_eq!(band.agent_commission, amount(1_900));
    let ug = countries.iter().find(|c| c.country == "UG").unwrap();
    assert_eq!((ug.currency.as_str(), ug.minor_units), ("UGX", 0));
}
