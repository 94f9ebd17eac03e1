//! Unit tests of the menu model: every screen and transition, each kind of bad input on each
//! input screen, PIN flows, screen lengths, and that no state ever holds a PIN.

use malipo_core::{MinorUnit, Msisdn};
use malipo_countries::{Countries, Country};

use crate::menu::*;
use crate::{display_amount, Caller, Effect, Menu, Outcome, Prompt, PromptKind, Screen, State, Step, MAX_HOP_CHARS, MAX_SCREEN_CHARS};

/// The caller's PIN.
const PIN: &str = "4826";
/// A good new PIN.
const NEW_PIN: &str = "7391";
/// Another good new PIN.
const OTHER_PIN: &str = "0582";
/// A well-formed wrong PIN.
const WRONG_PIN: &str = "5093";
/// Every PIN typed in these tests: none may appear in a stored state.
const PINS: [&str; 4] = [PIN, NEW_PIN, OTHER_PIN, WRONG_PIN];

/// The caller, in Kenya.
const CALLER: &str = "254700111222";
/// A Kenyan recipient.
const RECIPIENT: &str = "254712345678";
/// Its local form.
const RECIPIENT_LOCAL: &str = "0712345678";

/// The built-in countries and one caller.
struct World {
    countries: Countries,
    code: &'static str,
    caller: Msisdn,
}

fn world(code: &'static str, caller: &str) -> World {
    let countries = Countries::builtin().unwrap_or_else(|e| panic!("builtin countries: {e}"));
    let caller = Msisdn::parse(caller).unwrap_or_else(|e| panic!("{caller}: {e}"));
    World { countries, code, caller }
}

fn kenya() -> World {
    world("KE", CALLER)
}

impl World {
    fn country(&self) -> &Country {
        let Some(country) = self.countries.get(self.code) else { panic!("{} is built in", self.code) };
        country
    }

    fn menu(&self) -> Menu<'_> {
        Menu { countries: &self.countries, country: self.country(), caller: &self.caller }
    }

    /// A session at the main menu.
    fn session(&self) -> Session<'_> {
        Session::start(self.menu())
    }
}

/// Checks what every step must satisfy: the state holds no PIN and survives JSON; a screen fits
/// without truncation, and ends exactly when the state is `Ended`.
fn check(step: &Step) {
    let state = step.state();
    let json = serde_json::to_string(state).unwrap_or_else(|e| panic!("serialize {state:?}: {e}"));
    for pin in PINS {
        assert!(!json.contains(pin), "state {json} holds PIN {pin}");
    }
    let back: State = serde_json::from_str(&json).unwrap_or_else(|e| panic!("deserialize {json}: {e}"));
    assert_eq!(&back, state);
    if let Step::Show { state, screen } = step {
        assert!(screen.fits(), "screen of {} chars: {:?}", screen.render().chars().count(), screen.text);
        assert!(screen.render().chars().count() <= MAX_SCREEN_CHARS);
        assert_eq!(screen.end, *state == State::Ended, "{step:?}");
        assert!(!screen.text.is_empty());
    }
}

/// Drives a session hop by hop, checking every step.
struct Session<'m> {
    menu: Menu<'m>,
    state: State,
    hops: Vec<String>,
    /// Whether the last step was a `Run` waiting for its outcome.
    pending: bool,
}

impl<'m> Session<'m> {
    fn start(menu: Menu<'m>) -> Self {
        let step = menu.start(Caller::Active);
        check(&step);
        assert_eq!(con(&step), MAIN_MENU);
        Session { menu, state: State::Main, hops: Vec::new(), pending: false }
    }

    fn hops(&self) -> Vec<&str> {
        self.hops.iter().map(String::as_str).collect()
    }

    /// The caller types `hop`.
    fn hop(&mut self, hop: &str) -> Step {
        assert!(!self.pending, "an effect is waiting for its outcome");
        self.hops.push(hop.to_owned());
        let step = self.menu.input(&self.state, &self.hops());
        self.take(step)
    }

    /// The service reports the outcome of the effect asked for.
    fn outcome(&mut self, outcome: Outcome) -> Step {
        assert!(self.pending, "no effect is waiting");
        let step = self.menu.resume(&self.state, &self.hops(), outcome);
        self.take(step)
    }

    fn take(&mut self, step: Step) -> Step {
        check(&step);
        self.state = step.state().clone();
        self.pending = matches!(step, Step::Run { .. });
        step
    }

    /// Types each hop, expecting a `CON` screen after each; answers the last screen.
    fn hops_con(&mut self, hops: &[&str]) -> String {
        let mut last = String::new();
        for hop in hops {
            last = con(&self.hop(hop));
        }
        last
    }
}

/// The text of a `CON` screen.
fn con(step: &Step) -> String {
    match step {
        Step::Show { screen, .. } if !screen.end => screen.text.clone(),
        other => panic!("expected a CON screen, got {other:?}"),
    }
}

/// The text of an `END` screen.
fn end_text(step: &Step) -> String {
    match step {
        Step::Show { screen, state: State::Ended } if screen.end => screen.text.clone(),
        other => panic!("expected an END screen, got {other:?}"),
    }
}

/// The effect of a `Run` step.
fn effect(step: &Step) -> Effect {
    match step {
        Step::Run { effect, .. } => effect.clone(),
        other => panic!("expected an effect, got {other:?}"),
    }
}

fn msisdn(text: &str) -> Msisdn {
    Msisdn::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"))
}

fn kes(minor: i64) -> MinorUnit {
    MinorUnit::new(minor)
}

/// Expects the bad `hop` to re-show the same screen after `message`, state unchanged.
fn expect_reprompt(s: &mut Session<'_>, hop: &str, message: &str) {
    let before = s.state.clone();
    let prompt = prompt_of(s, &before);
    let text = con(&s.hop(hop));
    assert_eq!(text, format!("{message}\n{prompt}"), "hop {hop:?} in {before:?}");
    assert_eq!(s.state, before, "hop {hop:?}");
}

/// The screen a state shows, as the menu words it.
fn prompt_of(s: &Session<'_>, state: &State) -> String {
    s.menu.prompt(state)
}

/// Bad input every screen refuses: empty, overlong, spaces, letters, symbols.
fn junk() -> Vec<String> {
    vec![
        String::new(),
        "1".repeat(MAX_HOP_CHARS + 1),
        "x".repeat(MAX_HOP_CHARS + 1),
        " ".to_owned(),
        "abc".to_owned(),
        "#".to_owned(),
        "١".to_owned(),
    ]
}

fn prompt(id: &str, kind: PromptKind, payee: &str, amount: i64, fee: i64) -> Prompt {
    Prompt { id: id.to_owned(), kind, payee: payee.to_owned(), amount, fee }
}

/// A charge, a cash-out and a payment request.
fn three_prompts() -> Vec<Prompt> {
    vec![
        prompt("ch_1", PromptKind::Charge, "Naivas Supermarket", 25_000, 0),
        prompt("co_2", PromptKind::CashOut, "Mama Njeri Agency", 50_000, 2_900),
        prompt("pr_3", PromptKind::PaymentRequest, "Kenya Power", 120_050, 0),
    ]
}

// ----- start -----

#[test]
fn start_answers_by_the_callers_wallet() {
    let w = kenya();
    let m = w.menu();
    let cases = [(Caller::Unknown, NO_WALLET), (Caller::Locked, LOCKED), (Caller::NoPin, NO_PIN)];
    for (caller, text) in cases {
        let step = m.start(caller);
        check(&step);
        assert_eq!(end_text(&step), text, "{caller:?}");
    }
    assert_eq!(NO_WALLET, "This number has no Malipo wallet. Visit a Malipo agent to open one.");
    assert_eq!(LOCKED, "Your Malipo wallet is locked. Visit a Malipo agent to unlock it.");
    assert!(NO_PIN.contains("PIN") && NO_PIN.contains("agent"));
    let step = m.start(Caller::Active);
    check(&step);
    assert_eq!(step, Step::Show { state: State::Main, screen: Screen::con(MAIN_MENU) });
    assert_eq!(
        Screen::con(MAIN_MENU).render(),
        "CON Malipo\n1. Send money\n2. Pay merchant\n3. Approve payments\n4. My balance\n5. My account"
    );
}

// ----- main menu -----

#[test]
fn main_menu_choices() {
    let w = kenya();
    let cases: [(&str, &str, State); 4] = [
        ("1", "Enter recipient's phone number:", State::SendTo),
        ("2", "Enter merchant pay code:", State::PayCode),
        ("4", "Enter PIN:", State::BalancePin),
        ("5", "My account\n1. Change PIN\n2. KYC tier and limits", State::Account),
    ];
    for (choice, text, state) in cases {
        let mut s = w.session();
        assert_eq!(con(&s.hop(choice)), text, "{choice}");
        assert_eq!(s.state, state, "{choice}");
    }
    let mut s = w.session();
    assert_eq!(s.hop("3"), Step::Run { state: State::Main, effect: Effect::LoadApprovals });
}

#[test]
fn main_menu_refuses_bad_choices() {
    let w = kenya();
    let mut s = w.session();
    let mut bad = junk();
    bad.extend(["0", "6", "9", "01", "11", "1 ", "+1", "-1", "1.0", "one"].map(String::from));
    for hop in &bad {
        expect_reprompt(&mut s, hop, INVALID);
    }
    assert_eq!(con(&s.hop("1")), SEND_TO, "still usable after bad input");
}

#[test]
fn input_after_the_end_ends_again() {
    let w = kenya();
    let m = w.menu();
    for hops in [vec!["1"], vec!["4", PIN], vec![""], vec![]] {
        let step = m.input(&State::Ended, &hops);
        check(&step);
        assert_eq!(end_text(&step), "Session ended.", "{hops:?}");
    }
}

#[test]
fn overlong_text_ends_the_session() {
    let w = kenya();
    let m = w.menu();
    let long: Vec<String> = (0..20).map(|_| "x".repeat(MAX_HOP_CHARS)).collect();
    let hops: Vec<&str> = long.iter().map(String::as_str).collect();
    assert!(crate::text_too_long(&long.join("*")));
    for state in [State::Main, State::SendTo, State::BalancePin, State::ChangePinNew { current_at: 0 }] {
        let step = m.input(&state, &hops);
        check(&step);
        assert_eq!(end_text(&step), TOO_MUCH_INPUT, "{state:?}");
    }
    // Exactly at the limit: still invalid input on the screen, not the end.
    let mut exact: Vec<String> = (0..15).map(|_| "1".repeat(MAX_HOP_CHARS)).collect();
    exact.push("9".repeat(640 - 15 * 41));
    let joined = exact.join("*");
    assert_eq!(joined.chars().count(), crate::MAX_TEXT_CHARS);
    assert!(!crate::text_too_long(&joined));
    let hops: Vec<&str> = exact.iter().map(String::as_str).collect();
    let step = m.input(&State::Main, &hops);
    check(&step);
    assert_eq!(con(&step), format!("{INVALID}\n{MAIN_MENU}"));
}

#[test]
fn an_empty_hop_list_is_invalid_input() {
    let w = kenya();
    let step = w.menu().input(&State::Main, &[]);
    check(&step);
    assert_eq!(con(&step), format!("{INVALID}\n{MAIN_MENU}"));
}

// ----- send money -----

#[test]
fn send_money_end_to_end() {
    let w = kenya();
    let mut s = w.session();
    s.hop("1");
    let step = s.hop(RECIPIENT_LOCAL);
    assert_eq!(step, Step::Run { state: State::SendTo, effect: Effect::LookupRecipient { to: msisdn(RECIPIENT) } });
    let text = con(&s.outcome(Outcome::Recipient { name: Some("Jane Wanjiku".into()) }));
    assert_eq!(text, "Enter amount (KES):");
    assert_eq!(s.state, State::SendAmount { to: RECIPIENT.into(), name: Some("Jane Wanjiku".into()) });
    let text = con(&s.hop("250"));
    assert_eq!(text, "Send KES 250.00 to Jane Wanjiku\nFee KES 7.00\nEnter PIN:");
    assert_eq!(s.state, State::SendPin { to: RECIPIENT.into(), name: Some("Jane Wanjiku".into()), amount: 25_000, fee: 700 });
    let step = s.hop(PIN);
    let state = s.state.clone();
    assert_eq!(step, Step::Run { state, effect: Effect::SendMoney { to: msisdn(RECIPIENT), amount: kes(25_000), pin: PIN.into() } });
    let done = "Sent KES 250.00 to Jane Wanjiku 254712345678. Ref TX8F2K. New balance KES 1,000.00.";
    assert_eq!(end_text(&s.outcome(Outcome::Done(done.into()))), done);
    assert_eq!(s.state, State::Ended);
    assert_eq!(end_text(&s.hop("1")), SESSION_ENDED);
}

#[test]
fn recipient_numbers_in_every_accepted_form() {
    let w = kenya();
    for typed in [RECIPIENT, "+254712345678", RECIPIENT_LOCAL] {
        let mut s = w.session();
        s.hop("1");
        assert_eq!(effect(&s.hop(typed)), Effect::LookupRecipient { to: msisdn(RECIPIENT) }, "{typed}");
    }
    let u = world("UG", "256772000111");
    let mut s = u.session();
    s.hop("1");
    assert_eq!(effect(&s.hop("0772123456")), Effect::LookupRecipient { to: msisdn("256772123456") }, "Uganda's dialling code");
}

#[test]
fn send_to_refuses_bad_numbers() {
    let w = kenya();
    let mut s = w.session();
    s.hop("1");
    let mut bad = junk();
    bad.extend(
        [
            "0",
            "071234567",
            "07123456789",
            "25471234567",
            "2547123456789",
            "+0712345678",
            "++254712345678",
            "254 712345678",
            "0712-345-678",
            "999123456789",
            "234803123456",
            "0072345678x",
            "712345678",
        ]
        .map(String::from),
    );
    for hop in &bad {
        expect_reprompt(&mut s, hop, INVALID_NUMBER);
    }
    for other_country in ["256772123456", "+255754123456", "233244123456"] {
        expect_reprompt(&mut s, other_country, "You can only send to Kenya numbers.");
    }
    for own in [CALLER, "+254700111222", "0700111222"] {
        expect_reprompt(&mut s, own, OWN_NUMBER);
    }
    assert_eq!(effect(&s.hop(RECIPIENT)), Effect::LookupRecipient { to: msisdn(RECIPIENT) });
}

#[test]
fn unknown_recipient_is_refused_by_the_service() {
    let w = kenya();
    let mut s = w.session();
    s.hop("1");
    s.hop(RECIPIENT);
    let refusal = "254712345678 has no Malipo wallet.";
    assert_eq!(end_text(&s.outcome(Outcome::Refused(refusal.into()))), refusal);
}

#[test]
fn recipient_without_a_name_is_shown_by_number_and_long_names_are_cut() {
    let w = kenya();
    let mut s = w.session();
    s.hop("1");
    s.hop(RECIPIENT_LOCAL);
    s.outcome(Outcome::Recipient { name: None });
    assert_eq!(con(&s.hop("100")), "Send KES 100.00 to 254712345678\nFee KES 0.00\nEnter PIN:");

    let mut s = w.session();
    s.hop("1");
    s.hop(RECIPIENT);
    s.outcome(Outcome::Recipient { name: Some("  Bartholomew\nAlexander Ochieng-Otieno the Third ".into()) });
    assert_eq!(s.state, State::SendAmount { to: RECIPIENT.into(), name: Some("Bartholomew Alexander Oc".into()) });
    assert_eq!(con(&s.hop("100.01")), "Send KES 100.01 to Bartholomew Alexander Oc\nFee KES 7.00\nEnter PIN:");

    let mut s = w.session();
    s.hop("1");
    s.hop(RECIPIENT);
    s.outcome(Outcome::Recipient { name: Some(" \n ".into()) });
    assert_eq!(s.state, State::SendAmount { to: RECIPIENT.into(), name: None }, "a blank name is no name");
}

#[test]
fn send_amount_refuses_bad_amounts() {
    let w = kenya();
    let mut s = w.session();
    s.hop("1");
    s.hop(RECIPIENT);
    s.outcome(Outcome::Recipient { name: Some("Jane".into()) });
    let mut bad = junk();
    bad.extend(
        [
            "0",
            "0.00",
            "-5",
            "+5",
            "1.005",
            "1e3",
            "1,000",
            ".5",
            "5.",
            "1.2.3",
            "NaN",
            "inf",
            "0x10",
            "99999999999999999999",
            "10000000000000.01",
        ]
        .map(String::from),
    );
    for hop in &bad {
        expect_reprompt(&mut s, hop, INVALID_AMOUNT);
    }
    assert_eq!(con(&s.hop("0.01")), "Send KES 0.01 to Jane\nFee KES 0.00\nEnter PIN:");
}

#[test]
fn send_pin_refuses_ill_formed_pins_without_an_attempt() {
    let w = kenya();
    let mut s = w.session();
    s.hop("1");
    s.hop(RECIPIENT);
    s.outcome(Outcome::Recipient { name: Some("Jane".into()) });
    s.hop("1000");
    let mut bad = junk();
    bad.extend(["482", "48261", "48a6", "0", "4826 ", "+482", "４８２６"].map(String::from));
    for hop in &bad {
        expect_reprompt(&mut s, hop, INVALID);
    }
    assert_eq!(effect(&s.hop(PIN)), Effect::SendMoney { to: msisdn(RECIPIENT), amount: kes(100_000), pin: PIN.into() });
}

#[test]
fn wrong_pin_then_right_pin_then_refusal() {
    let w = kenya();
    let mut s = w.session();
    s.hop("1");
    s.hop(RECIPIENT);
    s.outcome(Outcome::Recipient { name: Some("Jane".into()) });
    s.hop("600");
    let pin_state = s.state.clone();
    assert_eq!(effect(&s.hop(WRONG_PIN)), Effect::SendMoney { to: msisdn(RECIPIENT), amount: kes(60_000), pin: WRONG_PIN.into() });
    assert_eq!(con(&s.outcome(Outcome::WrongPin { attempts_left: 2 })), "Wrong PIN. 2 attempts left.\nEnter PIN:");
    assert_eq!(s.state, pin_state);
    s.hop(WRONG_PIN);
    assert_eq!(con(&s.outcome(Outcome::WrongPin { attempts_left: 1 })), "Wrong PIN. 1 attempt left.\nEnter PIN:");
    assert_eq!(s.state, pin_state);
    assert_eq!(effect(&s.hop(PIN)), Effect::SendMoney { to: msisdn(RECIPIENT), amount: kes(60_000), pin: PIN.into() });
    let refusal = "Insufficient funds. Your balance is KES 250.00.";
    assert_eq!(end_text(&s.outcome(Outcome::Refused(refusal.into()))), refusal);
}

#[test]
fn the_last_wrong_pin_locks_the_wallet() {
    let w = kenya();
    let mut s = w.session();
    s.hop("1");
    s.hop(RECIPIENT);
    s.outcome(Outcome::Recipient { name: None });
    s.hop("600");
    s.hop(WRONG_PIN);
    assert_eq!(end_text(&s.outcome(Outcome::Locked)), "Wrong PIN. Your wallet is now locked. Visit a Malipo agent to unlock it.");
    assert_eq!(end_text(&s.hop(PIN)), SESSION_ENDED);
}

#[test]
fn zero_decimal_currencies_in_uganda_and_rwanda() {
    let u = world("UG", "256772000111");
    let mut s = u.session();
    s.hop("1");
    s.hop("0772123456");
    assert_eq!(con(&s.outcome(Outcome::Recipient { name: Some("Okello".into()) })), "Enter amount (UGX):");
    expect_reprompt(&mut s, "5000.5", INVALID_AMOUNT);
    expect_reprompt(&mut s, "5000.50", INVALID_AMOUNT);
    assert_eq!(con(&s.hop("5000")), "Send UGX 5,000 to Okello\nFee UGX 150\nEnter PIN:");
    assert_eq!(effect(&s.hop(PIN)), Effect::SendMoney { to: msisdn("256772123456"), amount: MinorUnit::new(5_000), pin: PIN.into() });

    let r = world("RW", "250788000111");
    let mut s = r.session();
    s.hop("1");
    s.hop("0788123456");
    assert_eq!(con(&s.outcome(Outcome::Recipient { name: None })), "Enter amount (RWF):");
    assert_eq!(con(&s.hop("12000")), "Send RWF 12,000 to 250788123456\nFee RWF 250\nEnter PIN:");
    s.hop(PIN);
    assert_eq!(end_text(&s.outcome(Outcome::Done("Sent.".into()))), "Sent.");

    let mut s = r.session();
    s.hop("4");
    s.hop(PIN);
    assert_eq!(end_text(&s.outcome(Outcome::Balance { available: MinorUnit::new(1_250_000) })), "Your balance is RWF 1,250,000");
}

// ----- pay merchant -----

/// The payment request pay code 123456 names.
fn java_house() -> Prompt {
    prompt("pr_7", PromptKind::PaymentRequest, "Java House", 120_000, 0)
}

#[test]
fn pay_merchant_end_to_end() {
    let w = kenya();
    let mut s = w.session();
    s.hop("2");
    let step = s.hop("123456");
    assert_eq!(step, Step::Run { state: State::PayCode, effect: Effect::LookupPayCode { code: "123456".into() } });
    assert_eq!(con(&s.outcome(Outcome::PaymentRequest(java_house()))), "Pay KES 1,200.00 to Java House\nEnter PIN:");
    assert_eq!(s.state, State::PayPin { code: "123456".into(), prompt: java_house() });
    let step = s.hop(PIN);
    assert_eq!(
        step,
        Step::Run {
            state: State::PayPin { code: "123456".into(), prompt: java_house() },
            effect: Effect::PayCode { code: "123456".into(), prompt: java_house(), pin: PIN.into() }
        }
    );
    let done = "Paid KES 1,200.00 to Java House. Your balance is KES 800.00.";
    assert_eq!(end_text(&s.outcome(Outcome::Done(done.into()))), done);
}

#[test]
fn pay_merchant_shows_a_fee_the_caller_pays_and_clips_the_name() {
    let w = kenya();
    let mut s = w.session();
    s.hop("2");
    s.hop("000042");
    let shown = prompt("pr_8", PromptKind::PaymentRequest, "Mwananchi Wholesale & Retail\nDistributors", 50_000, 700);
    assert_eq!(con(&s.outcome(Outcome::PaymentRequest(shown))), "Pay KES 500.00 to Mwananchi Wholesale & Re\nFee KES 7.00\nEnter PIN:");
}

#[test]
fn pay_code_is_six_digits_and_bad_codes_are_refused() {
    let w = kenya();
    for good in ["000000", "012345", "999999"] {
        let mut s = w.session();
        s.hop("2");
        assert_eq!(effect(&s.hop(good)), Effect::LookupPayCode { code: good.into() });
    }
    let mut s = w.session();
    s.hop("2");
    let mut bad = junk();
    bad.extend(["0", "12345", "1234567", "1234567890", "12a456", "12 456", "+12345", "-12345", "1234.5"].map(String::from));
    for hop in &bad {
        expect_reprompt(&mut s, hop, INVALID);
    }
}

#[test]
fn an_unknown_or_closed_pay_code_ends_with_the_reason() {
    let w = kenya();
    let mut s = w.session();
    s.hop("2");
    s.hop("551234");
    let refusal = "This payment request has already been paid.";
    assert_eq!(end_text(&s.outcome(Outcome::Refused(refusal.into()))), refusal);
}

#[test]
fn pay_pin_bad_input_wrong_pin_and_refusal() {
    let w = kenya();
    let mut s = w.session();
    s.hop("2");
    s.hop("551234");
    s.outcome(Outcome::PaymentRequest(java_house()));
    for hop in &junk() {
        expect_reprompt(&mut s, hop, INVALID);
    }
    expect_reprompt(&mut s, "123", INVALID);
    s.hop(WRONG_PIN);
    assert_eq!(con(&s.outcome(Outcome::WrongPin { attempts_left: 2 })), "Wrong PIN. 2 attempts left.\nEnter PIN:");
    assert_eq!(s.state, State::PayPin { code: "551234".into(), prompt: java_house() });
    assert_eq!(effect(&s.hop(PIN)), Effect::PayCode { code: "551234".into(), prompt: java_house(), pin: PIN.into() });
    let refusal = "This payment request has expired.";
    assert_eq!(end_text(&s.outcome(Outcome::Refused(refusal.into()))), refusal);

    let mut s = w.session();
    s.hop("2");
    s.hop("551234");
    s.outcome(Outcome::PaymentRequest(java_house()));
    s.hop(WRONG_PIN);
    assert_eq!(end_text(&s.outcome(Outcome::Locked)), LOCKED_NOW);
}

#[test]
fn a_pay_code_lookup_answered_with_something_else_ends_politely() {
    let w = kenya();
    let m = w.menu();
    let charge = three_prompts().remove(0);
    for outcome in [Outcome::PaymentRequest(charge), Outcome::Approvals(vec![]), Outcome::PinOk] {
        assert_eq!(end_text(&m.resume(&State::PayCode, &["2", "123456"], outcome.clone())), WENT_WRONG, "{outcome:?}");
    }
    // The code hop is missing.
    assert_eq!(end_text(&m.resume(&State::PayCode, &["2"], Outcome::PaymentRequest(java_house()))), WENT_WRONG);
}

// ----- approve payments -----

#[test]
fn no_payments_to_approve() {
    let w = kenya();
    let mut s = w.session();
    s.hop("3");
    assert_eq!(end_text(&s.outcome(Outcome::Approvals(vec![]))), "You have no payments to approve.");
}

#[test]
fn approvals_list_and_approve_a_charge() {
    let w = kenya();
    let mut s = w.session();
    s.hop("3");
    let text = con(&s.outcome(Outcome::Approvals(three_prompts())));
    assert_eq!(
        text,
        "Approve payments\n1. Naivas Supermarket KES 250.00\n2. Withdraw KES 500.00 at Mama Njeri Agency\n3. Kenya Power KES 1,200.50"
    );
    assert_eq!(s.state, State::Approvals { prompts: three_prompts() });
    let charge = three_prompts().remove(0);
    assert_eq!(con(&s.hop("1")), "Pay KES 250.00 to Naivas Supermarket?\n1. Approve\n2. Decline");
    assert_eq!(s.state, State::ApprovalAction { prompt: charge.clone() });
    assert_eq!(con(&s.hop("1")), "Enter PIN to approve:");
    assert_eq!(s.state, State::ApprovalPin { prompt: charge.clone() });
    let step = s.hop(PIN);
    assert_eq!(
        step,
        Step::Run { state: State::ApprovalPin { prompt: charge.clone() }, effect: Effect::Approve { prompt: charge, pin: PIN.into() } }
    );
    let done = "Paid KES 250.00 to Naivas Supermarket. Ref TX1A2B.";
    assert_eq!(end_text(&s.outcome(Outcome::Done(done.into()))), done);
}

#[test]
fn approve_a_cash_out_shows_the_fee() {
    let w = kenya();
    let mut s = w.session();
    s.hop("3");
    s.outcome(Outcome::Approvals(three_prompts()));
    assert_eq!(con(&s.hop("2")), "Withdraw KES 500.00 at Mama Njeri Agency?\nFee KES 29.00\n1. Approve\n2. Decline");
    s.hop("1");
    s.hop(WRONG_PIN);
    assert_eq!(con(&s.outcome(Outcome::WrongPin { attempts_left: 1 })), "Wrong PIN. 1 attempt left.\nEnter PIN:");
    let cash_out = three_prompts().remove(1);
    assert_eq!(s.state, State::ApprovalPin { prompt: cash_out.clone() });
    assert_eq!(effect(&s.hop(PIN)), Effect::Approve { prompt: cash_out, pin: PIN.into() });
    assert_eq!(end_text(&s.outcome(Outcome::Locked)), LOCKED_NOW);
}

#[test]
fn a_payment_request_with_a_fee_shows_it() {
    let w = kenya();
    let mut s = w.session();
    s.hop("3");
    s.outcome(Outcome::Approvals(vec![prompt("pr_9", PromptKind::PaymentRequest, "City Water", 300_000, 1_000)]));
    assert_eq!(con(&s.hop("1")), "Pay KES 3,000.00 to City Water?\nFee KES 10.00\n1. Approve\n2. Decline");
}

#[test]
fn decline_a_payment_request() {
    let w = kenya();
    let mut s = w.session();
    s.hop("3");
    s.outcome(Outcome::Approvals(three_prompts()));
    assert_eq!(con(&s.hop("3")), "Pay KES 1,200.50 to Kenya Power?\n1. Approve\n2. Decline");
    let request = three_prompts().remove(2);
    let step = s.hop("2");
    assert_eq!(step, Step::Run { state: State::ApprovalAction { prompt: request.clone() }, effect: Effect::Decline { prompt: request } });
    assert_eq!(end_text(&s.outcome(Outcome::Done("Declined.".into()))), "Declined.");

    let mut s = w.session();
    s.hop("3");
    s.outcome(Outcome::Approvals(three_prompts()));
    s.hop("1");
    s.hop("2");
    let gone = "That payment is no longer pending.";
    assert_eq!(end_text(&s.outcome(Outcome::Refused(gone.into()))), gone);
}

#[test]
fn approvals_bad_choices_and_back() {
    let w = kenya();
    let mut s = w.session();
    s.hop("3");
    s.outcome(Outcome::Approvals(three_prompts()));
    let mut bad = junk();
    bad.extend(["4", "5", "9", "01", "00", "-1", "1.0", "10"].map(String::from));
    for hop in &bad {
        expect_reprompt(&mut s, hop, INVALID);
    }
    assert_eq!(con(&s.hop("0")), MAIN_MENU);
    assert_eq!(s.state, State::Main);

    s.hop("3");
    s.outcome(Outcome::Approvals(three_prompts()));
    s.hop("2");
    let mut bad = junk();
    bad.extend(["3", "9", "01", "00", "approve"].map(String::from));
    for hop in &bad {
        expect_reprompt(&mut s, hop, INVALID);
    }
    assert_eq!(con(&s.hop("0")), MAIN_MENU);
    assert_eq!(s.state, State::Main);

    s.hop("3");
    s.outcome(Outcome::Approvals(three_prompts()));
    s.hop("2");
    s.hop("1");
    let mut bad = junk();
    bad.extend(["0", "482", "48261", "48a6"].map(String::from));
    for hop in &bad {
        expect_reprompt(&mut s, hop, INVALID);
    }
}

#[test]
fn the_longest_approvals_fit_on_a_screen() {
    let w = kenya();
    let name40 = "Mwananchi Wholesale & Retail Distributor";
    assert_eq!(name40.chars().count(), 40);
    let huge = 999_999_999_999_999; // 15 digits: KES 9,999,999,999,999.99
    let kinds = [PromptKind::Charge, PromptKind::CashOut, PromptKind::PaymentRequest, PromptKind::CashOut, PromptKind::Charge];
    let pending: Vec<Prompt> = kinds.iter().enumerate().map(|(i, k)| prompt(&format!("id_{i}"), *k, name40, huge, huge)).collect();
    let mut s = w.session();
    s.hop("3");
    let text = con(&s.outcome(Outcome::Approvals(pending.clone())));
    let State::Approvals { prompts: listed } = s.state.clone() else { panic!("approvals expected, got {:?}", s.state) };
    assert!(!listed.is_empty() && listed.len() < 5, "only some of the longest fit: {}", listed.len());
    assert_eq!(listed[..], pending[..listed.len()], "the first ones, in order");
    assert!(text.contains("1. Mwananchi Wholesal KES 9,999,999,999,999.99"), "{text}");
    assert!(text.contains("2. Withdraw KES 9,999,999,999,999.99 at Mwananchi Wholesal"), "{text}");
    for hop in &junk() {
        expect_reprompt(&mut s, hop, INVALID);
    }
    for (i, p) in listed.iter().enumerate() {
        let mut s = w.session();
        s.hop("3");
        s.outcome(Outcome::Approvals(pending.clone()));
        let text = con(&s.hop(&(i + 1).to_string()));
        assert!(text.contains("Mwananchi Wholesale & Re"), "names cut to 24: {text}");
        assert!(text.contains("\nFee KES 9,999,999,999,999.99\n"), "{text}");
        expect_reprompt(&mut s, "x", INVALID);
        assert_eq!(s.state, State::ApprovalAction { prompt: p.clone() });
    }

    // Five ordinary payments fit; with long names and larger amounts, four do.
    let shops = ["Naivas", "Quickmart", "Java House", "Carrefour", "Kenya Power"];
    let ordinary: Vec<Prompt> =
        shops.iter().enumerate().map(|(i, n)| prompt(&format!("ch_{i}"), PromptKind::Charge, n, 100_000, 0)).collect();
    let mut s = w.session();
    s.hop("3");
    let text = con(&s.outcome(Outcome::Approvals(ordinary.clone())));
    assert!(text.ends_with("\n4. Carrefour KES 1,000.00\n5. Kenya Power KES 1,000.00"), "{text}");
    assert_eq!(s.state, State::Approvals { prompts: ordinary.clone() });
    expect_reprompt(&mut s, "6", INVALID);
    assert_eq!(con(&s.hop("5")), "Pay KES 1,000.00 to Kenya Power?\n1. Approve\n2. Decline");

    let shops = ["Naivas Supermarket", "Quickmart Kilimani", "Java House Junction", "Carrefour Two Rivers", "Kenya Power"];
    let longer: Vec<Prompt> =
        shops.iter().enumerate().map(|(i, n)| prompt(&format!("ch_{i}"), PromptKind::Charge, n, 1_000_000, 0)).collect();
    let mut s = w.session();
    s.hop("3");
    let text = con(&s.outcome(Outcome::Approvals(longer.clone())));
    assert!(text.ends_with("\n3. Java House Junctio KES 10,000.00\n4. Carrefour Two Rive KES 10,000.00"), "{text}");
    assert_eq!(s.state, State::Approvals { prompts: longer[..4].to_vec() });
    expect_reprompt(&mut s, "5", INVALID);

    // Never more than five.
    let many: Vec<Prompt> = (0..8).map(|i| prompt(&format!("ch_{i}"), PromptKind::Charge, "Duka", 100, 0)).collect();
    let mut s = w.session();
    s.hop("3");
    s.outcome(Outcome::Approvals(many.clone()));
    assert_eq!(s.state, State::Approvals { prompts: many[..5].to_vec() });
    expect_reprompt(&mut s, "6", INVALID);
}

// ----- balance -----

#[test]
fn my_balance() {
    let w = kenya();
    let mut s = w.session();
    s.hop("4");
    for hop in &junk() {
        expect_reprompt(&mut s, hop, INVALID);
    }
    expect_reprompt(&mut s, "0", INVALID);
    expect_reprompt(&mut s, "48261", INVALID);
    let step = s.hop(PIN);
    assert_eq!(step, Step::Run { state: State::BalancePin, effect: Effect::Balance { pin: PIN.into() } });
    assert_eq!(end_text(&s.outcome(Outcome::Balance { available: kes(123_450) })), "Your balance is KES 1,234.50");

    let mut s = w.session();
    s.hop("4");
    s.hop(WRONG_PIN);
    assert_eq!(con(&s.outcome(Outcome::WrongPin { attempts_left: 2 })), "Wrong PIN. 2 attempts left.\nEnter PIN:");
    assert_eq!(s.state, State::BalancePin);
    s.hop(WRONG_PIN);
    assert_eq!(end_text(&s.outcome(Outcome::Locked)), LOCKED_NOW);
}

#[test]
fn balance_in_uganda_has_no_decimals() {
    let u = world("UG", "256772000111");
    let mut s = u.session();
    s.hop("4");
    s.hop(PIN);
    assert_eq!(end_text(&s.outcome(Outcome::Balance { available: MinorUnit::new(5_000) })), "Your balance is UGX 5,000");
}

// ----- my account -----

#[test]
fn kyc_tier_and_limits() {
    let w = kenya();
    let mut s = w.session();
    s.hop("5");
    assert_eq!(s.hop("2"), Step::Run { state: State::Account, effect: Effect::AccountInfo });
    let text = end_text(&s.outcome(Outcome::Account {
        tier: 1,
        per_transaction: kes(15_000_000),
        daily: kes(30_000_000),
        daily_used: kes(123_450),
        max_balance: kes(30_000_000),
    }));
    assert_eq!(text, "KYC tier 1\nPer transaction: KES 150,000.00\nDaily: KES 300,000.00 (used KES 1,234.50)\nMax balance: KES 300,000.00");

    let mut s = w.session();
    s.hop("5");
    s.hop("2");
    let huge = kes(999_999_999_999_999);
    let step = s.outcome(Outcome::Account { tier: 255, per_transaction: huge, daily: huge, daily_used: huge, max_balance: huge });
    end_text(&step);
}

#[test]
fn account_menu_bad_choices_and_back() {
    let w = kenya();
    let mut s = w.session();
    s.hop("5");
    let mut bad = junk();
    bad.extend(["3", "9", "01", "00", "12"].map(String::from));
    for hop in &bad {
        expect_reprompt(&mut s, hop, INVALID);
    }
    assert_eq!(con(&s.hop("0")), MAIN_MENU);
    assert_eq!(s.state, State::Main);
    assert_eq!(con(&s.hop("5")), ACCOUNT_MENU);
}

#[test]
fn change_pin_end_to_end() {
    let w = kenya();
    let mut s = w.session();
    s.hop("5");
    assert_eq!(con(&s.hop("1")), "Enter current PIN:");
    assert_eq!(s.state, State::ChangePinCurrent);
    assert_eq!(s.hop(PIN), Step::Run { state: State::ChangePinCurrent, effect: Effect::VerifyPin { pin: PIN.into() } });
    assert_eq!(con(&s.outcome(Outcome::PinOk)), "Enter new PIN:");
    assert_eq!(s.state, State::ChangePinNew { current_at: 2 });
    assert_eq!(con(&s.hop(NEW_PIN)), "Confirm new PIN:");
    assert_eq!(s.state, State::ChangePinConfirm { current_at: 2, new_at: 3 });
    let step = s.hop(NEW_PIN);
    assert_eq!(
        step,
        Step::Run {
            state: State::ChangePinConfirm { current_at: 2, new_at: 3 },
            effect: Effect::ChangePin { current: PIN.into(), new: NEW_PIN.into() }
        }
    );
    assert_eq!(end_text(&s.outcome(Outcome::Done("Your PIN has been changed.".into()))), "Your PIN has been changed.");
}

#[test]
fn change_pin_refuses_weak_same_and_mismatched_pins() {
    let w = kenya();
    let mut s = w.session();
    s.hop("5");
    s.hop("1");
    // Retries at the current PIN: ill-formed input is not an attempt; a wrong PIN is.
    for hop in &junk() {
        expect_reprompt(&mut s, hop, INVALID);
    }
    s.hop(WRONG_PIN);
    assert_eq!(con(&s.outcome(Outcome::WrongPin { attempts_left: 2 })), "Wrong PIN. 2 attempts left.\nEnter current PIN:");
    assert_eq!(s.state, State::ChangePinCurrent);
    s.hop(PIN);
    s.outcome(Outcome::PinOk);
    let current_at = s.hops.len() - 1;
    assert_eq!(s.state, State::ChangePinNew { current_at });

    let mut bad = junk();
    bad.extend(["0", "739", "73911", "73a1"].map(String::from));
    for hop in &bad {
        expect_reprompt(&mut s, hop, INVALID);
    }
    for weak in ["1234", "0000", "1212", "9876", "2000"] {
        assert_eq!(con(&s.hop(weak)), "That PIN is too easy to guess. Enter another new PIN:", "{weak}");
        assert_eq!(s.state, State::ChangePinNew { current_at });
    }
    assert_eq!(con(&s.hop(PIN)), SAME_PIN);
    assert_eq!(s.state, State::ChangePinNew { current_at });

    s.hop(NEW_PIN);
    let new_at = s.hops.len() - 1;
    assert_eq!(s.state, State::ChangePinConfirm { current_at, new_at });
    for hop in &junk() {
        expect_reprompt(&mut s, hop, INVALID);
    }
    expect_reprompt(&mut s, "739", INVALID);
    assert_eq!(con(&s.hop(OTHER_PIN)), "PINs do not match. Enter new PIN:");
    assert_eq!(s.state, State::ChangePinNew { current_at });

    // The second try uses the new hops.
    s.hop(OTHER_PIN);
    let new_at = s.hops.len() - 1;
    assert_eq!(s.state, State::ChangePinConfirm { current_at, new_at });
    assert_eq!(effect(&s.hop(OTHER_PIN)), Effect::ChangePin { current: PIN.into(), new: OTHER_PIN.into() });
}

#[test]
fn change_pin_wrong_and_locked() {
    let w = kenya();
    let mut s = w.session();
    s.hop("5");
    s.hop("1");
    s.hop(WRONG_PIN);
    assert_eq!(end_text(&s.outcome(Outcome::Locked)), LOCKED_NOW);

    // The service checks the current PIN again when changing it.
    let mut s = w.session();
    s.hops_con(&["5", "1"]);
    s.hop(PIN);
    s.outcome(Outcome::PinOk);
    s.hops_con(&[NEW_PIN]);
    s.hop(NEW_PIN);
    assert_eq!(con(&s.outcome(Outcome::WrongPin { attempts_left: 1 })), "Wrong PIN. 1 attempt left.\nEnter current PIN:");
    assert_eq!(s.state, State::ChangePinCurrent);
    s.hop(PIN);
    s.outcome(Outcome::PinOk);
    assert_eq!(s.state, State::ChangePinNew { current_at: 5 });
    s.hop(NEW_PIN);
    assert_eq!(effect(&s.hop(NEW_PIN)), Effect::ChangePin { current: PIN.into(), new: NEW_PIN.into() });
    assert_eq!(end_text(&s.outcome(Outcome::Locked)), LOCKED_NOW);

    let mut s = w.session();
    s.hops_con(&["5", "1"]);
    s.hop(PIN);
    s.outcome(Outcome::PinOk);
    s.hop(NEW_PIN);
    s.hop(NEW_PIN);
    let refusal = "PIN changes are not possible right now.";
    assert_eq!(end_text(&s.outcome(Outcome::Refused(refusal.into()))), refusal);
}

// ----- service bugs and corrupted states -----

#[test]
fn outcomes_that_do_not_fit_end_politely() {
    let w = kenya();
    let m = w.menu();
    let charge = three_prompts().remove(0);
    let misfits: Vec<(State, Outcome)> = vec![
        (State::Main, Outcome::PinOk),
        (State::Main, Outcome::Done("ok".into())),
        (State::SendTo, Outcome::Approvals(vec![])),
        (State::SendTo, Outcome::WrongPin { attempts_left: 1 }),
        (State::SendAmount { to: RECIPIENT.into(), name: None }, Outcome::Refused("no".into())),
        (State::SendPin { to: RECIPIENT.into(), name: None, amount: 100, fee: 0 }, Outcome::PinOk),
        (State::SendPin { to: RECIPIENT.into(), name: None, amount: 100, fee: 0 }, Outcome::Recipient { name: None }),
        (State::PayCode, Outcome::Done("ok".into())),
        (State::PayPin { code: "123456".into(), prompt: java_house() }, Outcome::Balance { available: kes(1) }),
        (State::Approvals { prompts: vec![charge.clone()] }, Outcome::Done("ok".into())),
        (State::ApprovalAction { prompt: charge.clone() }, Outcome::WrongPin { attempts_left: 1 }),
        (State::ApprovalAction { prompt: charge.clone() }, Outcome::Locked),
        (State::ApprovalPin { prompt: charge }, Outcome::Approvals(vec![])),
        (State::BalancePin, Outcome::Done("ok".into())),
        (State::Account, Outcome::PinOk),
        (State::ChangePinCurrent, Outcome::Done("ok".into())),
        (State::ChangePinNew { current_at: 2 }, Outcome::PinOk),
        (State::ChangePinConfirm { current_at: 2, new_at: 3 }, Outcome::PinOk),
        (State::Ended, Outcome::Done("ok".into())),
        (State::Ended, Outcome::Refused("no".into())),
    ];
    let hops = ["5", "1", PIN, NEW_PIN, NEW_PIN];
    for (state, outcome) in misfits {
        let step = m.resume(&state, &hops, outcome.clone());
        check(&step);
        assert_eq!(end_text(&step), "Sorry, something went wrong. Please try again.", "{state:?} {outcome:?}");
    }
}

#[test]
fn corrupted_hops_or_states_end_politely() {
    let w = kenya();
    let m = w.menu();
    let cases: Vec<(State, Vec<&str>)> = vec![
        (State::ChangePinNew { current_at: 9 }, vec!["5", "1", PIN, NEW_PIN]),
        (State::ChangePinNew { current_at: 3 }, vec!["5", "1", PIN, NEW_PIN]),
        (State::ChangePinConfirm { current_at: 2, new_at: 9 }, vec!["5", "1", PIN, NEW_PIN, NEW_PIN]),
        (State::ChangePinConfirm { current_at: 3, new_at: 2 }, vec!["5", "1", PIN, NEW_PIN, NEW_PIN]),
        (State::ChangePinConfirm { current_at: 2, new_at: 4 }, vec!["5", "1", PIN, NEW_PIN, NEW_PIN]),
        (State::SendPin { to: "not a number".into(), name: None, amount: 100, fee: 0 }, vec!["1", "x", "1", PIN]),
    ];
    for (state, hops) in cases {
        let step = m.input(&state, &hops);
        check(&step);
        assert_eq!(end_text(&step), WENT_WRONG, "{state:?} {hops:?}");
    }
    // PinOk with no PIN hop, or a recipient outcome whose hop is not a number.
    for hops in [vec![], vec!["5", "1", "x"]] {
        let step = m.resume(&State::ChangePinCurrent, &hops, Outcome::PinOk);
        assert_eq!(end_text(&step), WENT_WRONG, "{hops:?}");
    }
    let step = m.resume(&State::SendTo, &["1", "hello"], Outcome::Recipient { name: None });
    assert_eq!(end_text(&step), WENT_WRONG);
    let step = m.resume(&State::SendTo, &[], Outcome::Recipient { name: None });
    assert_eq!(end_text(&step), WENT_WRONG);
}

// ----- states, PINs and screens -----

/// One of every state, with the longest realistic data.
fn every_state() -> Vec<State> {
    let name24 = "Bartholomew Alexander Oc".to_owned();
    let huge = 999_999_999_999_999;
    let long_prompt = prompt("pr_01J8ZQ3W4X5Y6Z7A8B9C0D1E2F", PromptKind::CashOut, "Mwananchi Wholesale & Retail Distributor", huge, huge);
    vec![
        State::Main,
        State::SendTo,
        State::SendAmount { to: "254712345678901".into(), name: Some(name24.clone()) },
        State::SendPin { to: "254712345678901".into(), name: Some(name24), amount: huge, fee: huge },
        State::SendPin { to: "254712345678901".into(), name: None, amount: huge, fee: huge },
        State::PayCode,
        State::PayPin { code: "123456".into(), prompt: long_prompt.clone() },
        State::Approvals { prompts: vec![long_prompt.clone(), long_prompt.clone()] },
        State::ApprovalAction { prompt: long_prompt.clone() },
        State::ApprovalPin { prompt: long_prompt },
        State::BalancePin,
        State::Account,
        State::ChangePinCurrent,
        State::ChangePinNew { current_at: 2 },
        State::ChangePinConfirm { current_at: 2, new_at: 3 },
        State::Ended,
    ]
}

#[test]
fn states_round_trip_through_json() {
    for state in every_state() {
        let json = serde_json::to_string(&state).unwrap_or_else(|e| panic!("{state:?}: {e}"));
        let back: State = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{json}: {e}"));
        assert_eq!(back, state, "{json}");
    }
    let json = serde_json::to_string(&State::ChangePinConfirm { current_at: 2, new_at: 3 }).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(json, r#"{"at":"change_pin_confirm","current_at":2,"new_at":3}"#);
    assert_eq!(serde_json::to_string(&State::Main).unwrap_or_else(|e| panic!("{e}")), r#"{"at":"main"}"#);
    let json = serde_json::to_string(&State::ApprovalPin { prompt: three_prompts().remove(1) }).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        json,
        r#"{"at":"approval_pin","prompt":{"id":"co_2","kind":"cash_out","payee":"Mama Njeri Agency","amount":50000,"fee":2900}}"#
    );
    assert!(serde_json::from_str::<State>(r#"{"at":"nowhere"}"#).is_err());
}

#[test]
fn every_screen_fits_even_with_the_invalid_input_message() {
    let w = kenya();
    let m = w.menu();
    for state in every_state() {
        let text = m.prompt(&state);
        assert!(Screen::con(text.clone()).fits(), "{state:?}: {text:?}");
        let hops = ["5", "1", PIN, NEW_PIN, "x"];
        let step = m.input(&state, &hops);
        check(&step);
        if state != State::Ended {
            let again = con(&step);
            assert!(again.starts_with("Invalid") && again.ends_with(&text), "{again:?}");
            assert_eq!(step.state(), &state);
        }
    }
    for attempts_left in [0, 1, 2, 255] {
        let step = m.resume(&State::ChangePinCurrent, &["5", "1", PIN], Outcome::WrongPin { attempts_left });
        check(&step);
    }
    for text in
        [NO_WALLET, LOCKED, NO_PIN, LOCKED_NOW, WENT_WRONG, TOO_MUCH_INPUT, SESSION_ENDED, NO_APPROVALS, WEAK_PIN, SAME_PIN, MISMATCH]
    {
        assert!(Screen::end(text).fits(), "{text}");
    }
    let step = m.resume(&State::BalancePin, &["4", PIN], Outcome::Balance { available: MinorUnit::new(i64::MAX) });
    check(&step);
    // A service message longer than promised is cut, not refused.
    let long = "x".repeat(300);
    let step = m.resume(&State::BalancePin, &["4", PIN], Outcome::Refused(long));
    assert_eq!(step.screen().map(|s| s.render().chars().count()), Some(MAX_SCREEN_CHARS));
}

#[test]
fn no_state_reached_holds_a_pin() {
    // Every session in these tests is checked step by step (see `check`); this one walks the
    // PIN screens once more and looks at every stored state for the PINs typed.
    let w = kenya();
    let mut s = w.session();
    s.hops_con(&["5", "1"]);
    s.hop(PIN);
    s.outcome(Outcome::PinOk);
    s.hop(NEW_PIN);
    let json = serde_json::to_string(&s.state).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(json, r#"{"at":"change_pin_confirm","current_at":2,"new_at":3}"#);
    s.hop(NEW_PIN);
    let json = serde_json::to_string(&s.state).unwrap_or_else(|e| panic!("{e}"));
    for pin in PINS {
        assert!(!json.contains(pin), "{json}");
    }
}

#[test]
fn effects_never_show_a_pin_in_debug_output() {
    let to = msisdn(RECIPIENT);
    let effects = [
        Effect::SendMoney { to, amount: kes(100), pin: PIN.into() },
        Effect::PayCode { code: "123456".into(), prompt: java_house(), pin: PIN.into() },
        Effect::Approve { prompt: three_prompts().remove(0), pin: PIN.into() },
        Effect::Balance { pin: PIN.into() },
        Effect::VerifyPin { pin: PIN.into() },
        Effect::ChangePin { current: PIN.into(), new: NEW_PIN.into() },
    ];
    for effect in effects {
        let debug = format!("{effect:?} {:?}", Step::Run { state: State::BalancePin, effect: effect.clone() });
        assert!(!debug.contains(PIN) && !debug.contains(NEW_PIN), "{debug}");
        assert!(debug.contains("****"), "{debug}");
    }
    assert_eq!(format!("{:?}", Effect::LoadApprovals), "LoadApprovals");
    assert!(format!("{:?}", Effect::LookupRecipient { to: msisdn(RECIPIENT) }).contains(RECIPIENT));
}

#[test]
fn display_amount_is_exported_for_the_service() {
    assert_eq!(display_amount(malipo_core::Currency::KES, kes(123_450)), "KES 1,234.50");
}
