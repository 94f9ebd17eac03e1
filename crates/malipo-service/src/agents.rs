//! Agents: cash-in (float → wallet, at once) and cash-out (a prompt the customer approves, like a
//! charge).

use malipo_auth::Principal;
use malipo_charges::{Charge, ChargeKind, ChargeState};
use malipo_core::{ChargeRef, Currency, MinorUnit, Mode, Msisdn, Timestamp, TransactionId, WithdrawalRef};
use malipo_countries::{Country, FeeOperation};
use malipo_ledger::{AccountKind, Journal, JournalKind, JournalLine};

use crate::accounts::{Accounts, Balance};
use crate::backlog::{Backlog, Intake};
use crate::commands::AgentCash;
use crate::core::{system_account, Core};
use crate::customers::Customers;
use crate::error::ServiceError;
use crate::idempotency::{Done, Idem};
use crate::lifecycle::Lifecycle;
use crate::limits::{limit_error, Limits};
use crate::needs::{self, require};
use crate::ports::{AccountKey, LedgerRepo, WalletRepo, WalletState};
use crate::views::{Charging, OnCharges, Reporting, View};

/// A completed cash-in.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
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

/// A cash-in as it would be made now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CashInQuote {
    /// The customer.
    pub customer_msisdn: Msisdn,
    /// Their registered name (`None`: no name registered, or a test wallet opened on first use).
    pub customer_name: Option<String>,
    /// What the customer would receive.
    pub amount: MinorUnit,
    /// What the agent would pay on top.
    pub fee: MinorUnit,
    /// The currency.
    pub currency: Currency,
    /// What the cash-in would be refused for now (`wallet_locked`, `limit_exceeded`,
    /// `insufficient_funds`), if anything.
    pub refusal: Option<ServiceError>,
}

/// The country of an agent's customer, whose number must be of the agent's currency.
fn customer_country<'c>(core: &'c Core, float_currency: Currency, customer: &Msisdn) -> Result<&'c Country, ServiceError> {
    let country = core.country_of(customer)?;
    if country.currency != float_currency {
        return Err(ServiceError::CurrencyMismatch(format!(
            "customer_msisdn is a {} number; this agent's float is in {float_currency}",
            country.code
        )));
    }
    Ok(country)
}

/// Agents: cash-in, cash-out and the float.
pub struct Agents<'a> {
    core: &'a Core,
}

impl<'a> Agents<'a> {
    pub(crate) fn new(core: &'a Core) -> Self {
        Agents { core }
    }

    /// The principal's agent float.
    fn float_of(
        &self,
        tx: &mut (impl LedgerRepo + WalletRepo + ?Sized),
        principal: &Principal,
    ) -> Result<malipo_ledger::Account, ServiceError> {
        tx.find_account(&AccountKey::Org { org_id: principal.org_id.clone(), mode: principal.mode, kind: AccountKind::AgentFloat })?
            .ok_or_else(|| ServiceError::InvalidState("this organisation has no agent float".into()))
    }

    /// Cash-in: the agent's float pays the customer's wallet at once, within the customer's
    /// limits (the per-transaction limit and, in live mode, the maximum balance).
    ///
    /// # Errors
    /// [`ServiceError::CurrencyMismatch`], [`ServiceError::Validation`] (`customer_msisdn`
    /// without a wallet), [`ServiceError::LimitExceeded`], [`ServiceError::WalletLocked`],
    /// [`ServiceError::InsufficientFunds`] (the float), idempotency errors.
    pub fn cash_in(&self, principal: &Principal, command: &AgentCash, idem: &Idem) -> Result<Done<CashIn>, ServiceError> {
        require(principal, &needs::AGENT_CASH)?;
        let currency = self.core.country(&principal.country)?.currency;
        let AgentCash { customer, amount } = command;
        let (country, amount) = (customer_country(self.core, currency, customer)?, *amount);
        let fee = country.fee(FeeOperation::CashIn, amount);
        self.core.idempotent(idem, Charging, |tx| {
            let now = self.core.now();
            let float = self.float_of(tx, principal)?;
            let wallet = Customers(self.core).movement_wallet(tx, principal.mode, customer, "customer_msisdn", now)?;
            Limits(self.core).check_credit(tx, &wallet, amount)?.map_err(|b| limit_error(b, country))?;
            let revenue = system_account(tx, principal.mode, currency, AccountKind::Revenue)?;
            let journal = Journal::new_skipping_zero(
                principal.mode,
                currency,
                JournalKind::CashIn,
                customer.as_str(),
                vec![
                    JournalLine { account: float.id.clone(), amount: amount.checked_add(fee)?.checked_neg()? },
                    JournalLine { account: wallet.account_id.clone(), amount },
                    JournalLine { account: revenue, amount: fee },
                ],
                now,
            )?
            .with_fee(&float.id, fee);
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
        })
    }

    /// What [`Agents::cash_in`] of `command` would do now, in one read.
    ///
    /// # Errors
    /// [`ServiceError::CurrencyMismatch`], [`ServiceError::Validation`] (`customer_msisdn`
    /// without a wallet, in live mode), [`ServiceError::InvalidState`] (no float).
    pub fn quote_cash_in(&self, principal: &Principal, command: &AgentCash) -> Result<CashInQuote, ServiceError> {
        require(principal, &needs::AGENT_CASH)?;
        let currency = self.core.country(&principal.country)?.currency;
        let AgentCash { customer, amount } = command;
        let (country, amount) = (customer_country(self.core, currency, customer)?, *amount);
        let fee = country.fee(FeeOperation::CashIn, amount);
        Reporting::read(self.core.store(), |tx| {
            let float = self.float_of(tx, principal)?;
            let mut quote = CashInQuote { customer_msisdn: customer.clone(), customer_name: None, amount, fee, currency, refusal: None };
            match tx.wallet(principal.mode, customer)? {
                // A test wallet is opened on first use, with the top tier and no name.
                None if principal.mode == Mode::Test => {}
                None => {
                    return Err(ServiceError::field("customer_msisdn", "wallet_not_found", "customer_msisdn has no Malipo wallet"));
                }
                Some(wallet) => {
                    let name = [wallet.first_name.as_deref(), wallet.last_name.as_deref()]
                        .into_iter()
                        .flatten()
                        .map(str::trim)
                        .filter(|n| !n.is_empty())
                        .collect::<Vec<_>>()
                        .join(" ");
                    quote.customer_name = Some(name).filter(|n| !n.is_empty());
                    if wallet.state == WalletState::Locked {
                        quote.refusal = Some(ServiceError::WalletLocked);
                    } else if let Err(breach) = Limits(self.core).check_credit(tx, &wallet, amount)? {
                        quote.refusal = Some(limit_error(breach, country));
                    }
                }
            }
            if quote.refusal.is_none() && float.available() < amount.checked_add(fee)? {
                quote.refusal = Some(ServiceError::InsufficientFunds);
            }
            Ok(quote)
        })
    }

    /// Cash-out: a prompt to the customer like a charge (`wd_…`). On approval the customer pays
    /// amount + fee; the float receives the amount and the agent's commission.
    ///
    /// # Errors
    /// [`ServiceError::CurrencyMismatch`], [`ServiceError::Validation`] (an amount below the
    /// fee is refused), [`ServiceError::Busy`], [`ServiceError::InvalidState`] (no float),
    /// idempotency errors.
    pub fn cash_out(&self, principal: &Principal, command: &AgentCash, idem: &Idem) -> Result<Done<Charge>, ServiceError> {
        require(principal, &needs::AGENT_CASH)?;
        let currency = self.core.country(&principal.country)?.currency;
        let AgentCash { customer, amount } = command;
        let (country, amount) = (customer_country(self.core, currency, customer)?, *amount);
        let fee = country.fee(FeeOperation::CashOut, amount);
        let commission = country.agent_commission(FeeOperation::CashOut, amount).min(fee);
        if amount < fee {
            return Err(ServiceError::field(
                "amount",
                "invalid_amount",
                format!("amount is below the cash-out fee of {} {currency}", currency.format_amount(fee)),
            ));
        }
        if let Some(replayed) = Backlog::new(self.core).take(Intake::Charge, idem)? {
            return Ok(replayed);
        }
        let now = self.core.now();
        let next_action_at = Lifecycle(self.core).first_step_at(principal.mode, now);
        let outcome = self.core.idempotent(idem, Charging, |tx| {
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
                expires_at: now.plus_seconds(self.core.config.charge_ttl_seconds),
                completed_at: None,
                next_action_at: Some(next_action_at),
            };
            tx.insert_charge(&prompt)?;
            Ok(prompt)
        })?;
        if !outcome.replayed {
            self.core.observer.charge_entered(ChargeState::Pending);
        }
        Ok(outcome)
    }

    /// One of the agent's cash-outs.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`].
    pub fn get_cash_out(&self, principal: &Principal, withdrawal_ref: &str) -> Result<Charge, ServiceError> {
        require(principal, &needs::AGENT_CASH)?;
        let id = WithdrawalRef::parse(withdrawal_ref).map_err(|_| ServiceError::NotFound)?;
        let id = ChargeRef::from_trusted(id.into_string());
        OnCharges::read(self.core.store(), |tx| Ok(tx.charge(&principal.org_id, principal.mode, &id)?))?
            .filter(|c| c.kind == ChargeKind::CashOut)
            .ok_or(ServiceError::NotFound)
    }

    /// The agent's float.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`] when the organisation has no float.
    pub fn float(&self, principal: &Principal) -> Result<Balance, ServiceError> {
        require(principal, &needs::AGENT_CASH)?;
        Accounts::new(self.core).of_kind(principal, AccountKind::AgentFloat)
    }
}

/// Any insufficient-funds report of the store as the one business error.
pub(crate) fn insufficient(e: ServiceError) -> ServiceError {
    if e.is_insufficient_funds() {
        ServiceError::InsufficientFunds
    } else {
        e
    }
}

impl crate::idempotency::Subject for CashIn {
    fn subject(&self) -> (String, String) {
        (
            self.transaction_id.to_string(),
            format!("{} {} to {}", self.currency, self.currency.format_amount(self.amount), self.customer_msisdn),
        )
    }
}
