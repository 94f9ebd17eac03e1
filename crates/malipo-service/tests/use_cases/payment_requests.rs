//! Merchant payment requests: validation and the fee band, cancelling, expiry by the worker,
//! paying over USSD (PIN, limits, a request paid once), each paid or expired request reported by
//! exactly one event written with the change.

use malipo_auth::{OrgKind, Principal};
use malipo_core::{MinorUnit, Mode};
use malipo_requests::{PaymentRequest, RequestState};
use malipo_service::{Happened, NewPaymentRequest, NewWallet, ServiceError};

use crate::support::{idem, number, World};

const PIN: &str = "4826";

struct Cast {
    world: World,
    shop: Principal,
    operator: Principal,
    agent: Principal,
    gateway: Principal,
}

impl Cast {
    fn new(world: World) -> Self {
        let shop = world.org(OrgKind::Merchant, Mode::Live);
        let operator = world.org(OrgKind::Operator, Mode::Live);
        let agent = world.org(OrgKind::Agent, Mode::Live);
        let gateway = world.org(OrgKind::Gateway, Mode::Live);
        world.platform.accounts().fund(&agent.org_id, Mode::Live, "1000000").unwrap();
        Cast { world, shop, operator, agent, gateway }
    }

    /// A tier-0 wallet with a PIN holding `balance`.
    fn customer(&self, balance: &str) -> String {
        let msisdn = number("5600");
        let new = NewWallet { msisdn: msisdn.clone(), first_name: "Achieng".into(), last_name: "Otieno".into(), ..NewWallet::default() };
        self.world.open_wallet(&self.operator, &new).unwrap();
        self.world.set_pin(&self.operator, &msisdn, PIN).unwrap();
        self.world.cash_in(&self.agent, &msisdn, balance).unwrap();
        msisdn
    }

    fn ask(&self, new: NewPaymentRequest) -> Result<PaymentRequest, ServiceError> {
        let requests = self.world.platform.payment_requests();
        let request = self.world.platform.parse(&self.shop, &new)?;
        let out = requests.create(&self.shop, &request, &idem(&self.shop, "POST /biz/request"))?;
        Ok(requests.get(&self.shop, &out.value.id.to_string()).unwrap())
    }

    fn open(&self, amount: &str) -> PaymentRequest {
        self.ask(NewPaymentRequest { amount: amount.into(), reference: "INV-1".into(), ..NewPaymentRequest::default() }).unwrap()
    }

    fn reload(&self, r: &PaymentRequest) -> PaymentRequest {
        self.world.platform.payment_requests().get(&self.shop, r.id.as_str()).unwrap()
    }

    /// Dials Pay merchant with the request's code and `pin`; returns the last screen (the
    /// session may end before the PIN).
    fn pay(&self, msisdn: &str, r: &PaymentRequest, pin: &str) -> String {
        let session = format!("s-{}-{msisdn}", r.id);
        let code = r.pay_code.as_str();
        let mut last = String::new();
        for text in [String::new(), "2".into(), format!("2*{code}"), format!("2*{code}*{pin}")] {
            last = self.world.dial(&self.gateway, &session, msisdn, &text);
            if last.starts_with("END ") {
                break;
            }
        }
        last
    }

    fn balance(&self, msisdn: &str) -> MinorUnit {
        self.world.platform.wallets().details(&self.operator, msisdn).unwrap().account.balance
    }

    fn collected(&self) -> MinorUnit {
        self.world.platform.accounts().balance(&self.shop, malipo_ledger::AccountKind::Collection).unwrap().account.balance
    }

    fn clean_ledger(&self) {
        assert_eq!(self.world.verified_ledger(None), vec![]);
    }
}

#[test]
fn a_request_takes_the_fee_band_and_refuses_bad_fields() {
    let cast = Cast::new(World::new());
    for (amount, fee) in [("100", 0), ("500", 200), ("500.01", 400), ("250000", 20_000)] {
        assert_eq!(cast.open(amount).fee, MinorUnit::new(fee), "{amount}");
    }
    let r = cast.open("500");
    assert_eq!((r.state, r.expires_at), (RequestState::Open, r.created_at.plus_seconds(86_400)));
    for (new, field) in [
        (NewPaymentRequest { amount: "0".into(), reference: "R".into(), ..NewPaymentRequest::default() }, "amount"),
        (NewPaymentRequest { amount: "250000.01".into(), reference: "R".into(), ..NewPaymentRequest::default() }, "amount"),
        (
            NewPaymentRequest { amount: "1".into(), reference: "R".into(), expires_in: Some(59), ..NewPaymentRequest::default() },
            "expires_in",
        ),
        (
            NewPaymentRequest { amount: "1".into(), reference: "R".into(), expires_in: Some(604_801), ..NewPaymentRequest::default() },
            "expires_in",
        ),
        (
            NewPaymentRequest { amount: "1".into(), reference: "R".into(), payer_msisdn: Some("1".into()), ..NewPaymentRequest::default() },
            "payer_msisdn",
        ),
    ] {
        match cast.ask(new) {
            Err(ServiceError::Validation(errors)) => assert_eq!(errors[0].field, field),
            other => panic!("{field}: {other:?}"),
        }
    }
    let ugandan = NewPaymentRequest {
        amount: "1".into(),
        reference: "R".into(),
        payer_msisdn: Some("256712345678".into()),
        ..NewPaymentRequest::default()
    };
    assert!(matches!(cast.ask(ugandan), Err(ServiceError::CurrencyMismatch(_))));
}

#[test]
fn only_an_open_request_is_cancelled() {
    let cast = Cast::new(World::new());
    let r = cast.open("500");
    let requests = cast.world.platform.payment_requests();
    let cancellation = cast.world.platform.parse(&cast.shop, r.id.as_str()).unwrap();
    let cancel = || requests.cancel(&cast.shop, &cancellation, &idem(&cast.shop, "cancel"));
    cancel().unwrap();
    assert_eq!(cast.reload(&r).state, RequestState::Cancelled);
    assert!(matches!(cancel(), Err(ServiceError::InvalidState(_))));
    let other = cast.world.org(OrgKind::Merchant, Mode::Live);
    let theirs = requests.cancel(&other, &cancellation, &idem(&other, "cancel"));
    assert_eq!(theirs, Err(ServiceError::NotFound));
}

/// The payment request events the shop was told of, by kind and the request's state then (read
/// from the store, decoded from their snapshots): any other event fails the test.
fn request_events(cast: &Cast) -> Vec<(String, RequestState)> {
    cast.world
        .happened(&cast.shop, None)
        .into_iter()
        .map(|(kind, h)| match h {
            Happened::PaymentRequest(r) => (kind, r.state),
            other => panic!("{other:?}"),
        })
        .collect()
}

#[test]
fn the_worker_expires_what_is_past_its_time_once_with_its_event() {
    let cast = Cast::new(World::new());
    let r = cast
        .ask(NewPaymentRequest { amount: "10".into(), reference: "R".into(), expires_in: Some(60), ..NewPaymentRequest::default() })
        .unwrap();
    let expire = || cast.world.platform.payment_requests().expire_due(100).unwrap();
    cast.world.advance(59);
    assert_eq!(expire(), 0, "not yet");
    cast.world.advance(1);
    assert_eq!(expire(), 1);
    assert_eq!(expire(), 0, "once");
    assert_eq!(cast.reload(&r).state, RequestState::Expired);
    assert_eq!(cast.world.platform.webhooks().events(&cast.shop, Some("payment_request.expired"), None, 10).unwrap().data.len(), 1);
    assert_eq!(request_events(&cast), [("payment_request.expired".to_owned(), RequestState::Expired)]);
}

#[test]
fn paying_moves_amount_less_fee_to_the_merchant_once_with_its_event() {
    let cast = Cast::new(World::new());
    let n = cast.customer("1000");
    let r = cast.open("500");
    assert_eq!(cast.pay(&n, &r, PIN), "END Paid KES 500.00 to Duka Letu. Your balance is KES 500.00.");
    let paid = cast.reload(&r);
    assert_eq!((paid.state, paid.paid_by_msisdn.map(|m| m.to_string())), (RequestState::Paid, Some(n.clone())));
    assert_eq!((cast.balance(&n), cast.collected()), (MinorUnit::new(50_000), MinorUnit::new(49_800)));
    let again = cast.customer("1000");
    assert_eq!(cast.pay(&again, &r, PIN), "END This payment request has already been paid.");
    assert_eq!((cast.balance(&again), cast.collected()), (MinorUnit::new(100_000), MinorUnit::new(49_800)));
    assert_eq!(cast.world.platform.webhooks().events(&cast.shop, Some("payment_request.paid"), None, 10).unwrap().data.len(), 1);
    assert_eq!(request_events(&cast), [("payment_request.paid".to_owned(), RequestState::Paid)]);
    cast.clean_ledger();
}

#[test]
fn a_wrong_pin_or_a_limit_moves_nothing() {
    let cast = Cast::new(World::new());
    let n = cast.customer("1000");
    let r = cast.open("500");
    assert_eq!(cast.pay(&n, &r, "7391"), "CON Wrong PIN. 2 attempts left.\nEnter PIN:");
    let big = cast.open("5001");
    assert_eq!(cast.pay(&n, &big, PIN), "END This payment is above your wallet's limits.");
    let short = cast.open("1200");
    assert_eq!(cast.pay(&n, &short, PIN), "END You do not have enough money for this payment.");
    for r in [&r, &big, &short] {
        assert_eq!(cast.reload(r).state, RequestState::Open);
    }
    assert_eq!((cast.balance(&n), cast.collected()), (MinorUnit::new(100_000), MinorUnit::ZERO));
    cast.clean_ledger();
}
