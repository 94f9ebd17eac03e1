//! Agents: cash-in (float → wallet, at once), cash-out (a prompt the customer approves, like a
//! charge), and wallet-to-wallet transfers (sent from the USSD menu).

use malipo_auth::Principal;
use malipo_charges::{Charge, ChargeKind, ChargeState};
use malipo_core::{ChargeRef, Currency, MinorUnit, Mode, Msisdn, Timestamp, TransactionId, WithdrawalRef};
use malipo_countries::{Country, FeeOperation};
use malipo_idempotency::StoredResponse;
use malipo_ledger::{AccountKind, Journal, JournalKind, JournalLine};

use crate::balances::Balance;
use crate::charges::check_amount;
use crate::error::{FieldError, ServiceError};
use crate::idempotency::{Idem, IdemOutcome};
use crate::platform::Platform;
use crate::ports::{read, write, AccountKey, Tx};
use crate::wallet::{Wallet, WalletState};
use crate::wallets::limit_error;

/// A completed cash-in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CashIn {
    /// The ledger transaction.
    pub transaction_id: TransactionId,
    /// The customer credited.
    pub customer_msisdn: Msisdn,
    /// What the customer received.
    pub amount: MinorUnit,
    /// What the agent paid on top (from configuration; usually zero).
    pub fee: MinorUnit,
    /// The currency.
    pub currency: Currency,
    /// The mode.
    pub mode: Mode,
    /// The agent's float balance after it.
    pub float_balance: MinorUnit,
    /// When posted.
    pub created_at: Timestamp,
}

/// A completed wallet-to-wallet transfer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct P2pTransfer {
    /// The ledger transaction.
    pub transaction_id: TransactionId,
    /// What the recipient received.
    pub amount: MinorUnit,
    /// What the sender paid on top.
    pub fee: MinorUnit,
    /// The sender's balance after it.
    pub sender_balance: MinorUnit,
}

/// Parses the customer number and amount of an agent request in the agent's currency.
fn customer_and_amount<'c>(
    platform: &'c Platform,
    float_currency: Currency,
    msisdn: &str,
    amount: &str,
) -> Result<(Msisdn, &'c Country, MinorUnit), ServiceError> {
    let mut errors = Vec::new();
    let customer = match platform.countries.parse_msisdn(msisdn) {
        Ok(p) => Some(p),
        Err(e) => {
            errors.push(FieldError::new("customer_msisdn", "invalid_msisdn", format!("customer_msisdn {e}")));
            None
        }
    };
    let amount = check_amount("amount", amount, float_currency, &mut errors);
    match (customer, amount) {
        (Some((m, c)), Some(a)) if errors.is_empty() => {
            if c.currency != float_currency {
                return Err(ServiceError::CurrencyMismatch(format!(
                    "customer_msisdn is a {} number; this agent's float is in {float_currency}",
                    c.code
                )));
            }
            Ok((m, c, a))
        }
        _ => Err(ServiceError::Validation(errors)),
    }
}

impl Platform {
    /// The principal's agent float.
    fn float_of(&self, tx: &mut dyn Tx, principal: &Principal) -> Result<malipo_ledger::Account, ServiceError> {
        tx.find_account(&AccountKey::Org { org_id: principal.org_id.clone(), mode: principal.mode, kind: AccountKind::AgentFloat })?
            .ok_or_else(|| ServiceError::InvalidState("this organisation has no agent float".into()))
    }

    /// The customer's wallet for a movement: opened on first use in test mode; in live mode it
    /// must exist and be active.
    fn movement_wallet(&self, tx: &mut dyn Tx, mode: Mode, msisdn: &Msisdn, field: &str, now: Timestamp) -> Result<Wallet, ServiceError> {
        let wallet = match mode {
            Mode::Test => {
                self.ensure_test_wallet(tx, msisdn, now)?;
                tx.lock_wallet(mode, msisdn)?
            }
            Mode::Live => tx.lock_wallet(mode, msisdn)?,
        };
        let wallet = wallet.ok_or_else(|| ServiceError::field(field, "wallet_not_found", format!("{field} has no Malipo wallet")))?;
        if wallet.state == WalletState::Locked {
            return Err(ServiceError::WalletLocked);
        }
        Ok(wallet)
    }

    /// Cash-in: the agent's float pays the customer's wallet at once, within the customer's
    /// limits (the per-transaction limit and, in live mode, the maximum balance).
    ///
    /// # Errors
    /// [`ServiceError::Validation`], [`ServiceError::CurrencyMismatch`],
    /// [`ServiceError::LimitExceeded`], [`ServiceError::WalletLocked`],
    /// [`ServiceError::InsufficientFunds`] (the float), idempotency errors.
    pub fn cash_in(
        &self,
        principal: &Principal,
        customer_msisdn: &str,
        amount: &str,
        idem: &Idem,
        render: &dyn Fn(&CashIn) -> StoredResponse,
    ) -> Result<IdemOutcome, ServiceError> {
        let currency = self.country(&principal.country)?.currency;
        let (customer, country, amount) = customer_and_amount(self, currency, customer_msisdn, amount)?;
        let fee = country.fee(FeeOperation::CashIn, amount);
        self.idempotent(
            idem,
            |tx| {
                let now = self.clock.now();
                let float = self.float_of(tx, principal)?;
                let wallet = self.movement_wallet(tx, principal.mode, &customer, "customer_msisdn", now)?;
                self.check_credit(tx, &wallet, amount)?.map_err(|b| limit_error(b, country))?;
                let revenue = self.system_account(tx, principal.mode, currency, AccountKind::Revenue)?;
                let journal = Journal::new_skipping_zero(
                    principal.mode,
                    currency,
                    JournalKind::CashIn,
                    customer.as_str(),
                    vec![
                        JournalLine { account: float.id.clone(), amount: MinorUnit::new(-(amount.get() + fee.get())) },
                        JournalLine { account: wallet.account_id.clone(), amount },
                        JournalLine { account: revenue, amount: fee },
                    ],
                    now,
                )?;
                tx.post_journal(&journal).map_err(ServiceError::from).map_err(insufficient)?;
                let float_balance = tx.account(&float.id)?.map_or(MinorUnit::ZERO, |a| a.balance);
                Ok(CashIn {
                    transaction_id: journal.id,
                    customer_msisdn: customer.clone(),
                    amount,
                    fee,
                    currency,
                    mode: principal.mode,
                    float_balance,
                    created_at: now,
                })
            },
            render,
        )
    }

    /// Cash-out: a prompt to the customer like a charge (`wd_…`). On approval the customer pays
    /// amount + fee; the float receives the amount and the agent's commission.
    ///
    /// # Errors
    /// [`ServiceError::Validation`] (an amount below the fee is refused), [`ServiceError::CurrencyMismatch`],
    /// [`ServiceError::InvalidState`] (no float), idempotency errors.
    pub fn cash_out(
        &self,
        principal: &Principal,
        customer_msisdn: &str,
        amount: &str,
        idem: &Idem,
        render: &dyn Fn(&Charge) -> StoredResponse,
    ) -> Result<IdemOutcome, ServiceError> {
        let currency = self.country(&principal.country)?.currency;
        let (customer, country, amount) = customer_and_amount(self, currency, customer_msisdn, amount)?;
        let fee = country.fee(FeeOperation::CashOut, amount);
        let commission = country.agent_commission(FeeOperation::CashOut, amount).min(fee);
        if amount < fee {
            return Err(ServiceError::field(
                "amount",
                "invalid_amount",
                format!("amount is below the cash-out fee of {} {currency}", currency.format_amount(fee)),
            ));
        }
        let now = self.clock.now();
        let next_action_at = self.first_step_at(principal.mode, now);
        let outcome = self.idempotent(
            idem,
            |tx| {
                let float = self.float_of(tx, principal)?;
                let id = WithdrawalRef::new();
                let prompt = Charge {
                    id: ChargeRef::from_trusted(id.as_str().to_owned()),
                    kind: ChargeKind::CashOut,
                    org_id: principal.org_id.clone(),
                    mode: principal.mode,
                    payer_msisdn: customer.clone(),
                    amount,
                    fee,
                    commission,
                    currency,
                    amount_reversed: MinorUnit::ZERO,
                    reference: id.into_string(),
                    description: None,
                    state: ChargeState::Pending,
                    failure_reason: None,
                    transaction_id: None,
                    merchant_account: float.id,
                    payer_account: None,
                    created_at: now,
                    updated_at: now,
                    expires_at: now.plus_seconds(self.config.charge_ttl_seconds),
                    completed_at: None,
                    next_action_at: Some(next_action_at),
                };
                tx.insert_charge(&prompt)?;
                Ok(prompt)
            },
            render,
        )?;
        if !outcome.replayed {
            self.observer.charge_entered(ChargeState::Pending);
        }
        Ok(outcome)
    }

    /// One of the agent's cash-outs.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`].
    pub fn get_cash_out(&self, principal: &Principal, withdrawal_ref: &str) -> Result<Charge, ServiceError> {
        let id = WithdrawalRef::parse(withdrawal_ref).map_err(|_| ServiceError::NotFound)?;
        let id = ChargeRef::from_trusted(id.into_string());
        read(self.store(), |tx| Ok(tx.charge(&principal.org_id, principal.mode, &id)?))?
            .filter(|c| c.kind == ChargeKind::CashOut)
            .ok_or(ServiceError::NotFound)
    }

    /// The agent's float.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`] when the organisation has no float.
    pub fn agent_float(&self, principal: &Principal) -> Result<Balance, ServiceError> {
        self.balance(principal, AccountKind::AgentFloat)
    }

    /// Sends money from one wallet to another (the sender's PIN already checked): the sender
    /// pays amount + the P2P fee, within both wallets' limits. With `once`, the transfer and the
    /// key are committed together, so a repeat with the same key answers the first transfer
    /// instead of sending again (the USSD channel keys each send by its session and hop).
    ///
    /// # Errors
    /// [`ServiceError::Validation`] (recipient without a wallet, another currency),
    /// [`ServiceError::WalletLocked`], [`ServiceError::LimitExceeded`],
    /// [`ServiceError::InsufficientFunds`]; idempotency errors with `once`.
    pub fn send_money(
        &self,
        mode: Mode,
        from: &Msisdn,
        to: &Msisdn,
        amount: MinorUnit,
        source_ref: &str,
        once: Option<&Idem>,
    ) -> Result<P2pTransfer, ServiceError> {
        if from == to {
            return Err(ServiceError::field("to", "invalid_msisdn", "cannot send money to the same wallet"));
        }
        let Some(idem) = once else {
            return write(self.store(), |tx| self.transfer(tx, mode, from, to, amount, source_ref));
        };
        let outcome = self.idempotent(idem, |tx| self.transfer(tx, mode, from, to, amount, source_ref), &|t: &P2pTransfer| {
            StoredResponse { status: 200, body: t.to_record().into_bytes() }
        })?;
        std::str::from_utf8(&outcome.response.body)
            .ok()
            .and_then(P2pTransfer::from_record)
            .ok_or_else(|| ServiceError::Internal("a stored transfer does not parse".into()))
    }

    #[allow(clippy::too_many_arguments)]
    fn transfer(
        &self,
        tx: &mut dyn Tx,
        mode: Mode,
        from: &Msisdn,
        to: &Msisdn,
        amount: MinorUnit,
        source_ref: &str,
    ) -> Result<P2pTransfer, ServiceError> {
        let now = self.clock.now();
        // Lock both wallets in number order, so two opposite transfers cannot deadlock.
        let (first, second) = if from < to { (from, to) } else { (to, from) };
        let a = self.movement_wallet(tx, mode, first, if first == from { "from" } else { "to" }, now)?;
        let b = self.movement_wallet(tx, mode, second, if second == from { "from" } else { "to" }, now)?;
        let (sender, recipient) = if first == from { (a, b) } else { (b, a) };
        if sender.currency != recipient.currency {
            return Err(ServiceError::CurrencyMismatch("the recipient's wallet is in another currency".into()));
        }
        let country = self.wallet_country(&sender)?;
        let fee = country.fee(FeeOperation::P2p, amount);
        let debit = MinorUnit::new(amount.get() + fee.get());
        self.check_debit(tx, &sender, amount, debit, now)?.map_err(|b| limit_error(b, country))?;
        self.check_credit(tx, &recipient, amount)?.map_err(|b| limit_error(b, self.wallet_country(&recipient).unwrap_or(country)))?;
        let revenue = self.system_account(tx, mode, sender.currency, AccountKind::Revenue)?;
        let journal = Journal::new_skipping_zero(
            mode,
            sender.currency,
            JournalKind::P2p,
            source_ref,
            vec![
                JournalLine { account: sender.account_id.clone(), amount: MinorUnit::new(-debit.get()) },
                JournalLine { account: recipient.account_id.clone(), amount },
                JournalLine { account: revenue, amount: fee },
            ],
            now,
        )?;
        tx.post_journal(&journal).map_err(ServiceError::from).map_err(insufficient)?;
        let sender_balance = tx.account(&sender.account_id)?.map_or(MinorUnit::ZERO, |a| a.balance);
        Ok(P2pTransfer { transaction_id: journal.id, amount, fee, sender_balance })
    }
}

impl P2pTransfer {
    /// The stored form of a keyed transfer: `tx_id amount fee sender_balance`.
    fn to_record(&self) -> String {
        format!("{} {} {} {}", self.transaction_id, self.amount.get(), self.fee.get(), self.sender_balance.get())
    }

    fn from_record(text: &str) -> Option<Self> {
        let mut parts = text.split(' ');
        let transaction_id = TransactionId::parse(parts.next()?).ok()?;
        let mut number = || parts.next()?.parse::<i64>().ok().map(MinorUnit::new);
        let (amount, fee, sender_balance) = (number()?, number()?, number()?);
        Some(P2pTransfer { transaction_id, amount, fee, sender_balance })
    }
}

/// Any insufficient-funds report of the store as the one business error.
fn insufficient(e: ServiceError) -> ServiceError {
    if e.is_insufficient_funds() {
        ServiceError::InsufficientFunds
    } else {
        e
    }
}
