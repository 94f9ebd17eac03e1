//! Every use case checks its caller itself: a front door that forgot its own check (or a new
//! one that never had it) opens no hole. Each use case is called by a credential without scopes
//! and by a person whose role may not, and refuses both before it reads or changes anything.

use malipo_auth::{OrgKind, Principal, Role, Scopes};
use malipo_core::{Mode, UserId};
use malipo_service::{
    AgentCash, ApproveBulkPayout, BulkInput, CancelPaymentRequest, CreateBulkPayout, CreateCharge, CreateEndpoint, CreatePaymentRequest,
    CreatePayout, CreateReversal, CreateTransfer, EndpointTarget, NewAgentCash, NewBulkPayout, NewCharge, NewEndpoint, NewKyc,
    NewPaymentRequest, NewPayout, NewPin, NewPinReset, NewRedelivery, NewRejection, NewReversal, NewSandboxWallet, NewSimulation,
    NewTransfer, NewWallet, NewWalletLock, OpenWallet, Platform, RaiseKyc, Redeliver, RejectBulkPayout, ResetPinAttempts,
    RotateCallbackSecret, SandboxWallet, ServiceError, SetPin, Simulate, TransactionFilter, UssdRequest, WalletLock,
};

use crate::support::{idem, number, World};

/// The typed commands of every write, parsed as their rightful caller would send them.
struct Commands {
    charge: CreateCharge,
    request: CreatePaymentRequest,
    cancel: CancelPaymentRequest,
    payout: CreatePayout,
    bulk: CreateBulkPayout,
    approve: ApproveBulkPayout,
    reject: RejectBulkPayout,
    reversal: CreateReversal,
    simulate: Simulate,
    sandbox_wallet: SandboxWallet,
    transfer: CreateTransfer,
    open: OpenWallet,
    pin: SetPin,
    lock: WalletLock,
    kyc: RaiseKyc,
    reset: ResetPinAttempts,
    endpoint: CreateEndpoint,
    target: EndpointTarget,
    redeliver: Redeliver,
    cash: AgentCash,
    rotate_callback: RotateCallbackSecret,
}

fn commands(p: &Platform, merchant: &Principal, operator: &Principal, agent: &Principal) -> Commands {
    let payer = number("0001");
    let line = |payee: &str| malipo_payouts::RawItem {
        payee_msisdn: payee.into(),
        amount: "10.00".into(),
        reference: "SALARY-1".into(),
        narration: None,
    };
    Commands {
        charge: p
            .parse(
                merchant,
                &NewCharge {
                    payer_msisdn: payer.clone(),
                    amount: "10.00".into(),
                    currency: None,
                    reference: "O-1".into(),
                    description: None,
                },
            )
            .unwrap(),
        request: p
            .parse(
                merchant,
                &NewPaymentRequest {
                    amount: "10.00".into(),
                    reference: "R-1".into(),
                    description: None,
                    payer_msisdn: None,
                    expires_in: None,
                },
            )
            .unwrap(),
        cancel: p.parse(merchant, malipo_core::PaymentRequestId::new().as_str()).unwrap(),
        payout: p
            .parse(
                merchant,
                &NewPayout {
                    payee_msisdn: payer.clone(),
                    amount: "10.00".into(),
                    reference: "P-1".into(),
                    currency: None,
                    narration: None,
                },
            )
            .unwrap(),
        bulk: p.parse(merchant, &NewBulkPayout { reference: "B-1".into(), items: BulkInput::Items(vec![line(&payer)]) }).unwrap(),
        approve: p.parse(merchant, malipo_core::BulkPayoutId::new().as_str()).unwrap(),
        reject: p.parse(merchant, &NewRejection { batch_id: malipo_core::BulkPayoutId::new().to_string(), reason: "no".into() }).unwrap(),
        reversal: p
            .parse(
                merchant,
                &NewReversal {
                    charge_ref: Some(malipo_core::ChargeRef::new().to_string()),
                    payout_ref: None,
                    transaction_id: None,
                    amount: None,
                    reason: "refund".into(),
                },
            )
            .unwrap(),
        simulate: p
            .parse(merchant, &NewSimulation { charge_ref: malipo_core::ChargeRef::new().to_string(), action: "approve".into() })
            .unwrap(),
        sandbox_wallet: p.parse(merchant, &NewSandboxWallet { msisdn: payer.clone(), balance: None, kyc_tier: None }).unwrap(),
        transfer: p.parse(merchant, &NewTransfer { from: "collection".into(), to: "payout".into(), amount: "1.00".into() }).unwrap(),
        open: p
            .parse(
                operator,
                &NewWallet {
                    msisdn: payer.clone(),
                    first_name: "Amina".into(),
                    last_name: "Otieno".into(),
                    id_type: None,
                    id_number: None,
                    date_of_birth: None,
                },
            )
            .unwrap(),
        pin: p.parse(operator, &NewPin { msisdn: payer.clone(), new_pin: "4821".into(), current_pin: None }).unwrap(),
        lock: p.parse(operator, &NewWalletLock { msisdn: payer.clone(), reason: "fraud".into() }).unwrap(),
        kyc: p
            .parse(operator, &NewKyc { msisdn: payer.clone(), tier: 2, id_type: "national_id".into(), id_number: "12345678".into() })
            .unwrap(),
        reset: p.parse(operator, &NewPinReset { msisdn: payer.clone() }).unwrap(),
        endpoint: p
            .parse(
                merchant,
                &NewEndpoint { url: "https://shop.example/hooks".into(), events: vec!["charge.completed".into()], description: None },
            )
            .unwrap(),
        target: p.parse(merchant, malipo_core::EndpointId::new().as_str()).unwrap(),
        redeliver: p.parse(merchant, &NewRedelivery { event_id: malipo_core::EventId::new().to_string(), endpoint_id: None }).unwrap(),
        cash: p.parse(agent, &NewAgentCash { customer_msisdn: payer, amount: "10.00".into() }).unwrap(),
        rotate_callback: p.parse(merchant, &()).unwrap(),
    }
}

/// Calls every use case that acts for a caller as `who`; returns the name of each that did not
/// answer `Forbidden`.
fn admitted(p: &Platform, c: &Commands, who: &Principal) -> Vec<&'static str> {
    let k = |op: &str| idem(who, op);

    let none = TransactionFilter::default();
    let calls: Vec<(&'static str, Result<(), ServiceError>)> = vec![
        ("profiles.get", p.profiles().get(who).map(drop)),
        ("charges.create", p.charges().create(who, &c.charge, &k("charge")).map(drop)),
        ("charges.get", p.charges().get(who, "ch_x").map(drop)),
        ("charges.by_reference", p.charges().by_reference(who, "O-1").map(drop)),
        ("charges.list", p.charges().list(who, &Default::default(), None, 10).map(drop)),
        ("charges.days", p.charges().days(who, 7).map(drop)),
        ("charges.activity", p.charges().activity(who, "ch_x").map(drop)),
        ("accounts.balance", p.accounts().balance(who, malipo_ledger::AccountKind::Collection).map(drop)),
        ("accounts.list", p.accounts().list(who).map(drop)),
        ("payment_requests.create", p.payment_requests().create(who, &c.request, &k("request")).map(drop)),
        ("payment_requests.get", p.payment_requests().get(who, "pr_x").map(drop)),
        ("payment_requests.list", p.payment_requests().list(who, &Default::default(), None, 10).map(drop)),
        ("payment_requests.cancel", p.payment_requests().cancel(who, &c.cancel, &k("cancel")).map(drop)),
        ("payouts.create", p.payouts().create(who, &c.payout, &k("payout")).map(drop)),
        ("payouts.get", p.payouts().get(who, "po_x").map(drop)),
        ("payouts.list", p.payouts().list(who, &Default::default(), None, 10).map(drop)),
        ("bulk.create", p.bulk_payouts().create(who, &c.bulk, &k("bulk")).map(drop)),
        ("bulk.approve", p.bulk_payouts().approve(who, &c.approve, &k("approve")).map(drop)),
        ("bulk.reject", p.bulk_payouts().reject(who, &c.reject, &k("reject")).map(drop)),
        ("bulk.get", p.bulk_payouts().get(who, "bp_x").map(drop)),
        ("bulk.list", p.bulk_payouts().list(who, None, 10).map(drop)),
        ("bulk.items", p.bulk_payouts().items(who, "bp_x", None, None, 10).map(drop)),
        ("reversals.create", p.reversals().create(who, &c.reversal, &k("reversal")).map(drop)),
        ("reversals.get", p.reversals().get(who, "rv_x").map(drop)),
        ("reversals.list", p.reversals().list(who, None, 10).map(drop)),
        ("sandbox.simulate", p.sandbox().simulate(who, &c.simulate, &k("simulate")).map(drop)),
        ("sandbox.wallet", p.sandbox().wallet(who, &c.sandbox_wallet, &k("sandbox wallet")).map(drop)),
        ("transactions.list", p.transactions().list(who, &none, None, 10).map(drop)),
        ("transactions.get", p.transactions().get(who, "tx_x", None).map(drop)),
        ("transactions.export", p.transactions().export(who, &none).map(drop)),
        ("transactions.daily", p.transactions().daily(who, "2026-11-24", None).map(drop)),
        ("transfers.transfer", p.transfers().transfer(who, &c.transfer, &k("transfer")).map(drop)),
        ("transfers.statement", p.transfers().statement(who, "acc_x", (None, None), None, 10).map(drop)),
        ("wallets.open", p.wallets().open(who, &c.open, &k("open")).map(drop)),
        ("wallets.details", p.wallets().details(who, &number("0001")).map(drop)),
        ("wallets.set_pin", p.wallets().set_pin(who, &c.pin, &k("pin")).map(drop)),
        ("wallets.lock", p.wallets().lock(who, &c.lock, &k("lock")).map(drop)),
        ("wallets.unlock", p.wallets().unlock(who, &c.lock, &k("unlock")).map(drop)),
        ("wallets.reset_pin_attempts", p.wallets().reset_pin_attempts(who, &c.reset, &k("reset")).map(drop)),
        ("wallets.raise_kyc", p.wallets().raise_kyc(who, &c.kyc, &k("kyc")).map(drop)),
        ("wallets.statement", p.wallets().statement(who, &number("0001"), None, 10).map(drop)),
        ("wallets.recent", p.wallets().recent(who, &number("0001"), 10).map(drop)),
        ("wallets.history", p.wallets().history(who, &number("0001"), (None, None), None, 10).map(drop)),
        ("wallets.holder_name", p.wallets().holder_name(who, &number("0001")).map(drop)),
        ("recorded.made", p.recorded().made::<malipo_charges::Charge>(who, "POST /partner/stk", &k("made").key).map(drop)),
        ("webhooks.create_endpoint", p.webhooks().create_endpoint(who, &c.endpoint, &k("endpoint")).map(drop)),
        ("webhooks.endpoints", p.webhooks().endpoints(who).map(drop)),
        ("webhooks.endpoint", p.webhooks().endpoint(who, "we_x").map(drop)),
        ("webhooks.delete_endpoint", p.webhooks().delete_endpoint(who, &c.target, &k("delete")).map(drop)),
        ("webhooks.rotate_secret", p.webhooks().rotate_secret(who, &c.target, &k("rotate")).map(drop)),
        ("webhooks.events", p.webhooks().events(who, None, None, 10).map(drop)),
        ("webhooks.recent_events", p.webhooks().recent_events(who, None, None, 10).map(drop)),
        ("webhooks.event", p.webhooks().event(who, "evt_x").map(drop)),
        ("webhooks.redeliver", p.webhooks().redeliver(who, &c.redeliver, &k("redeliver")).map(drop)),
        ("callbacks.secret", p.callbacks().secret(who).map(drop)),
        ("callbacks.rotate", p.callbacks().rotate(who, &c.rotate_callback, &k("rotate callback")).map(drop)),
        ("callbacks.of_object", p.callbacks().of_object(who, "ch_x").map(drop)),
        ("agents.cash_in", p.agents().cash_in(who, &c.cash, &k("cash in")).map(drop)),
        ("agents.quote_cash_in", p.agents().quote_cash_in(who, &c.cash).map(drop)),
        ("agents.cash_out", p.agents().cash_out(who, &c.cash, &k("cash out")).map(drop)),
        ("agents.get_cash_out", p.agents().get_cash_out(who, "wd_x").map(drop)),
        ("agents.float", p.agents().float(who).map(drop)),
        (
            "ussd.handle",
            p.ussd()
                .handle(
                    who,
                    &UssdRequest {
                        session_id: "s-1".into(),
                        service_code: "*334#".into(),
                        phone_number: number("0001"),
                        text: String::new(),
                        network_code: None,
                    },
                )
                .map(drop),
        ),
    ];
    calls.into_iter().filter(|(_, r)| !matches!(r, Err(ServiceError::Forbidden(_)))).map(|(name, _)| name).collect()
}

#[test]
fn every_use_case_refuses_a_credential_without_its_scope() {
    let world = World::new();
    let p = &world.platform;
    let (merchant, operator, agent) =
        (world.org(OrgKind::Merchant, Mode::Test), world.org(OrgKind::Operator, Mode::Test), world.org(OrgKind::Agent, Mode::Test));
    let c = commands(p, &merchant, &operator, &agent);
    let nothing = Principal { scopes: Scopes::default(), ..merchant.clone() };
    assert_eq!(admitted(p, &c, &nothing), Vec::<&str>::new(), "a credential without scopes is refused everywhere");
    // The rightful scopes are admitted (whatever each call then finds).
    assert!(admitted(p, &c, &merchant).contains(&"charges.create") && admitted(p, &c, &operator).contains(&"wallets.lock"));
}

#[test]
fn every_use_case_refuses_a_person_whose_role_may_not() {
    let world = World::new();
    let p = &world.platform;
    let (merchant, operator, agent) =
        (world.org(OrgKind::Merchant, Mode::Test), world.org(OrgKind::Operator, Mode::Test), world.org(OrgKind::Agent, Mode::Test));
    let c = commands(p, &merchant, &operator, &agent);
    // A viewer acts with the `payments` scope in the console; their role reads, nothing more.
    let viewer = Principal { role: Some(Role::Viewer), person: Some(UserId::new()), ..merchant.clone() };
    let mut reads = admitted(p, &c, &viewer);
    reads.sort_unstable();
    assert_eq!(
        reads,
        vec![
            "accounts.balance",
            "accounts.list",
            "bulk.get",
            "bulk.items",
            "bulk.list",
            "charges.activity",
            "charges.by_reference",
            "charges.days",
            "charges.get",
            "charges.list",
            "payment_requests.get",
            "payment_requests.list",
            "payouts.get",
            "payouts.list",
            "reversals.get",
            "reversals.list",
            "transactions.daily",
            "transactions.export",
            "transactions.get",
            "transactions.list",
            "transfers.statement",
        ],
        "a viewer only reads"
    );
    // No person, whatever their role, does what only an integrator's or a gateway's key does.
    for role in Role::ALL {
        let person = Principal { role: Some(role), person: Some(UserId::new()), ..merchant.clone() };
        let done = admitted(p, &c, &person);
        for integrator_only in ["charges.create", "sandbox.simulate", "sandbox.wallet", "ussd.handle"] {
            assert!(!done.contains(&integrator_only), "{role} {integrator_only}");
        }
    }
}
