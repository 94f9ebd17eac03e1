//! Transactions and the daily reconciliation over random sequences of movements (charges,
//! payouts, reversals, transfers, funding, cash-in, cash-out, payment requests paid over USSD,
//! days going by): every day of every account chains (`closing = opening + credits - debits`,
//! closing is the day's last `balance_after`, the next day opens where it closed), the checksum
//! is the one recomputed from the export, the list is the export newest first, and the ledger
//! stays sound.

use malipo_auth::{OrgKind, Principal};
use malipo_charges::{Charge, ChargeState};
use malipo_core::{MinorUnit, Mode};
use malipo_ledger::{Transaction, TRANSACTION_TYPES};
use malipo_payouts::{Payout, PayoutState};
use malipo_service::{NewAgentCash, NewPaymentRequest, NewPayout, NewReversal, NewTransfer, NewWallet, TransactionFilter};
use proptest::prelude::*;
use sha2::{Digest, Sha256};

use crate::support::{idem, number, World};

/// One step of a random day's business.
#[derive(Clone, Debug)]
enum Step {
    Charge(u32),
    Payout(u32),
    ReverseCharge(usize, bool),
    ReversePayout(usize, bool),
    Transfer(bool, u32),
    Fund(u32),
    CashIn(u32),
    PayRequest(u32),
    CashOut(u32),
    Wait(u32),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => (1..50_000_u32).prop_map(Step::Charge),
        2 => (1..20_000_u32).prop_map(Step::Payout),
        1 => (0..8_usize, any::<bool>()).prop_map(|(i, full)| Step::ReverseCharge(i, full)),
        1 => (0..8_usize, any::<bool>()).prop_map(|(i, full)| Step::ReversePayout(i, full)),
        1 => (any::<bool>(), 1..30_000_u32).prop_map(|(to_payout, a)| Step::Transfer(to_payout, a)),
        1 => (1..100_000_u32).prop_map(Step::Fund),
        1 => (1..30_000_u32).prop_map(Step::CashIn),
        1 => (1..30_000_u32).prop_map(Step::PayRequest),
        1 => (5_000..30_000_u32).prop_map(Step::CashOut),
        // Up to 30 hours: sequences cross Nairobi's midnight (21:00 UTC) often.
        2 => (0..30 * 3600_u32).prop_map(Step::Wait),
    ]
}

const PIN: &str = "4826";

struct Business {
    world: World,
    shop: Principal,
    agent: Principal,
    gateway: Principal,
    /// A customer with a PIN, who pays requests over USSD.
    customer: String,
    charges: Vec<Charge>,
    payouts: Vec<Payout>,
}

fn major(minor: u32) -> String {
    format!("{}.{:02}", minor / 100, minor % 100)
}

impl Business {
    fn new() -> Self {
        let world = World::new();
        let shop = world.org(OrgKind::Merchant, Mode::Test);
        let agent = world.org(OrgKind::Agent, Mode::Test);
        let operator = world.org(OrgKind::Operator, Mode::Test);
        let gateway = world.org(OrgKind::Gateway, Mode::Test);
        world.platform.accounts().fund(&agent.org_id, Mode::Test, "100000").unwrap();
        let customer = number("5600");
        let new = NewWallet { msisdn: customer.clone(), first_name: "Achieng".into(), last_name: "Otieno".into(), ..NewWallet::default() };
        world.open_wallet(&operator, &new).unwrap();
        world.set_pin(&operator, &customer, PIN).unwrap();
        Business { world, shop, agent, gateway, customer, charges: Vec::new(), payouts: Vec::new() }
    }

    fn settle(&self) {
        self.world.advance(3);
        while self.world.platform.processing().process_due(100).unwrap() + self.world.platform.payout_processing().process_due(100).unwrap()
            > 0
        {}
    }

    /// Runs a step; refusals (insufficient funds, nothing to reverse) are part of the game.
    fn run(&mut self, step: &Step) {
        let p = &self.world.platform;
        let shop = &self.shop;
        match *step {
            Step::Charge(a) => {
                let charge = self.world.charge(shop, &number("0000"), &major(a)).unwrap();
                self.settle();
                self.charges.push(self.world.reload(shop, &charge));
            }
            Step::Payout(a) => {
                let new = NewPayout { payee_msisdn: number("0000"), amount: major(a), reference: "PAY".into(), ..NewPayout::default() };
                let payout = p.parse(shop, &new).unwrap();
                if let Ok(out) = p.payouts().create(shop, &payout, &idem(shop, "POST /payouts")) {
                    self.settle();
                    self.payouts.push(p.payouts().get(shop, &out.value.id.to_string()).unwrap());
                }
            }
            Step::ReverseCharge(i, full) => {
                if let Some(c) = self.charges.get(i).filter(|c| c.state == ChargeState::Completed) {
                    let amount = (!full).then(|| major(u32::try_from(c.amount.get() / 3).unwrap().max(1)));
                    let new = NewReversal { charge_ref: Some(c.id.to_string()), amount, reason: "refund".into(), ..NewReversal::default() };
                    let reversal = p.parse(shop, &new).unwrap();
                    let _ = p.reversals().create(shop, &reversal, &idem(shop, "POST /reversals"));
                }
            }
            Step::ReversePayout(i, full) => {
                if let Some(po) = self.payouts.get(i).filter(|po| po.state == PayoutState::Completed) {
                    let amount = (!full).then(|| major(u32::try_from(po.amount.get() / 2).unwrap().max(1)));
                    let new =
                        NewReversal { payout_ref: Some(po.id.to_string()), amount, reason: "wrong payee".into(), ..NewReversal::default() };
                    let reversal = p.parse(shop, &new).unwrap();
                    let _ = p.reversals().create(shop, &reversal, &idem(shop, "POST /reversals"));
                }
            }
            Step::Transfer(to_payout, a) => {
                let (from, to) = if to_payout { ("collection", "payout") } else { ("payout", "collection") };
                let transfer = p.parse(shop, &NewTransfer { from: from.into(), to: to.into(), amount: major(a) }).unwrap();
                let _ = p.transfers().transfer(shop, &transfer, &idem(shop, "POST /accounts/transfers"));
            }
            Step::Fund(a) => {
                p.accounts().fund(&shop.org_id, Mode::Test, &major(a)).unwrap();
            }
            Step::CashIn(a) => {
                let agent = &self.agent;
                let _ = self.world.cash_in(agent, &number("0000"), &major(a));
            }
            Step::PayRequest(a) => {
                let new = NewPaymentRequest { amount: major(a), reference: "INV".into(), ..NewPaymentRequest::default() };
                let requests = p.payment_requests();
                let request = p.parse(shop, &new).unwrap();
                let out = requests.create(shop, &request, &idem(shop, "POST /biz/request")).unwrap();
                let r = requests.get(shop, &out.value.id.to_string()).unwrap();
                let agent = &self.agent;
                let _ = self.world.cash_in(agent, &self.customer, &major(a));
                let session = format!("s-{}", r.id);
                for text in [String::new(), "2".into(), format!("2*{}", r.pay_code), format!("2*{}*{PIN}", r.pay_code)] {
                    if self.world.dial(&self.gateway, &session, &self.customer, &text).starts_with("END ") {
                        break;
                    }
                }
            }
            Step::CashOut(a) => {
                // The agent asks, the customer (cashed in first) approves with the PIN over USSD.
                let agent = &self.agent;
                let _ = self.world.cash_in(agent, &self.customer, &major(a * 2));
                let cash = p.parse(agent, &NewAgentCash { customer_msisdn: self.customer.clone(), amount: major(a) }).unwrap();
                let asked = p.agents().cash_out(agent, &cash, &idem(agent, "POST /agents/cash-out"));
                if let Ok(out) = asked {
                    let session = format!("s-{}", out.value.id);
                    for text in ["", "3", "3*1", "3*1*1", &format!("3*1*1*{PIN}")] {
                        self.world.dial(&self.gateway, &session, &self.customer, text);
                    }
                    self.settle();
                }
            }
            Step::Wait(seconds) => self.world.advance(i64::from(seconds)),
        }
    }

    /// Every transaction of one account, by the export, in ledger order.
    fn export(&self, org: &Principal, account: Option<&str>) -> Vec<Transaction> {
        self.export_of(org, &TransactionFilter { account: account.map(Into::into), ..TransactionFilter::default() })
    }

    fn export_of(&self, org: &Principal, filter: &TransactionFilter) -> Vec<Transaction> {
        let t = self.world.platform.transactions();
        let mut run = t.export(org, filter).unwrap();
        let mut all = Vec::new();
        loop {
            // A small batch, so that the export's paging is exercised too.
            let batch = t.export_batch(&mut run, 3).unwrap();
            if batch.is_empty() {
                return all;
            }
            all.extend(batch);
        }
    }

    /// Every transaction of the organisation, by the list, newest first.
    fn list(&self, org: &Principal) -> Vec<Transaction> {
        self.list_of(org, &TransactionFilter::default())
    }

    fn list_of(&self, org: &Principal, filter: &TransactionFilter) -> Vec<Transaction> {
        let mut all = Vec::new();
        let mut cursor = None;
        loop {
            let page = self.world.platform.transactions().list(org, filter, cursor.as_deref(), 4).unwrap();
            all.extend(page.data);
            match page.next_cursor {
                Some(c) => cursor = Some(c),
                None => return all,
            }
        }
    }

    /// Checks every day of one account from its first transaction's day to the day after its last.
    fn check_days(&self, org: &Principal, account: &str) {
        let export = self.export(org, Some(account));
        for t in &export {
            assert_eq!(t.amount, t.net.checked_add(t.fee).unwrap(), "amount = net + fee");
        }
        let Some(first) = export.first() else { return };
        let transactions = self.world.platform.transactions();
        let day_of = |t: &Transaction| {
            let local = t.created_at.plus_seconds(3 * 3600).to_offset_datetime();
            local.date()
        };
        let (mut date, last) = (day_of(first), day_of(export.last().unwrap()).next_day().unwrap());
        let mut previous_close: Option<MinorUnit> = None;
        while date <= last {
            let text = format!("{:04}-{:02}-{:02}", date.year(), u8::from(date.month()), date.day());
            let r = transactions.daily(org, &text, Some(account)).unwrap();
            let d = &r.report;
            let day: Vec<&Transaction> = export.iter().filter(|t| t.created_at >= r.from && t.created_at < r.to).collect();
            assert_eq!(d.closing, d.opening.checked_add(d.credits).unwrap().checked_sub(d.debits).unwrap(), "{account} {text}");
            assert_eq!(d.closing, day.last().map_or(d.opening, |t| t.balance_after), "closing is the day's last balance_after");
            if let Some(close) = previous_close {
                assert_eq!(d.opening, close, "{account} {text} opens where the day before closed");
            }
            previous_close = Some(d.closing);
            assert_eq!(d.count, u64::try_from(day.len()).unwrap());
            let window =
                TransactionFilter { from: Some(r.from), to: Some(r.to), account: Some(account.into()), ..TransactionFilter::default() };
            let exported = self.export_of(org, &window);
            assert_eq!(exported.iter().collect::<Vec<_>>(), day, "the export of the day's window is the day");
            let mut listed = self.list_of(org, &window);
            listed.reverse();
            assert_eq!(listed.iter().collect::<Vec<_>>(), day, "the list of the day's window is the day, newest first");
            let lines: String = day.iter().map(|t| format!("{},{}\n", t.id, t.currency.format_amount(t.net))).collect();
            assert_eq!(d.checksum, hex::encode(Sha256::digest(lines.as_bytes())), "the checksum is the export's");
            let fees = day.iter().try_fold(MinorUnit::ZERO, |s, t| s.checked_add(t.fee)).unwrap();
            assert_eq!(d.fees, fees);
            let counted: u64 = TRANSACTION_TYPES.iter().map(|k| d.by_type[k].count).sum();
            assert_eq!(counted, d.count);
            date = date.next_day().unwrap();
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn every_day_of_every_account_chains_and_its_checksum_is_the_exports(steps in proptest::collection::vec(step(), 1..30)) {
        let mut b = Business::new();
        for s in &steps {
            b.run(s);
        }
        for account in ["collection", "payout"] {
            b.check_days(&b.shop, account);
        }
        b.check_days(&b.agent, "agent_float");
        // The agent's cash-outs show the commission it earned as a negative fee.
        for t in b.export(&b.agent, None).iter().filter(|t| t.type_name() == "cash_out") {
            prop_assert!(t.fee.get() <= 0 && t.net.get() > 0, "{t:?}");
        }
        // The list is the export, newest first, over both of the shop's accounts.
        let mut exported: Vec<Transaction> = b.export(&b.shop, Some("collection"));
        exported.extend(b.export(&b.shop, Some("payout")));
        exported.sort_by_key(|t| t.seq);
        // The export of every account merges them in ledger order.
        prop_assert_eq!(&b.export(&b.shop, None), &exported);
        exported.reverse();
        prop_assert_eq!(b.list(&b.shop), exported);
        // Charges' and payouts' transactions carry their fees.
        for c in b.charges.iter().filter(|c| c.state == ChargeState::Completed) {
            let t = b.world.platform.transactions().get(&b.shop, c.transaction_id.as_ref().unwrap().as_str(), None).unwrap();
            prop_assert_eq!((t.amount, t.fee, t.type_name()), (c.amount, c.fee, "charge"));
        }
        for po in b.payouts.iter().filter(|p| p.state == PayoutState::Completed) {
            let t = b.world.platform.transactions().get(&b.shop, po.transaction_id.as_ref().unwrap().as_str(), None).unwrap();
            prop_assert_eq!((t.amount, t.fee), (po.amount.checked_neg().unwrap(), po.fee));
        }
        // Paid requests' transactions carry their fees.
        let paid = b.world.platform.payment_requests().list(&b.shop, &Default::default(), None, 100).unwrap();
        for r in paid.data.iter().filter(|r| r.transaction_id.is_some()) {
            let t = b.world.platform.transactions().get(&b.shop, r.transaction_id.as_ref().unwrap().as_str(), None).unwrap();
            prop_assert_eq!((t.amount, t.fee, t.type_name()), (r.amount, r.fee, "payment_request"));
        }
        prop_assert_eq!(b.world.verified_ledger(None), vec![]);
    }
}
