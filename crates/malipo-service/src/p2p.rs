//! Wallet-to-wallet transfers (sent from the USSD menu): the sender pays amount + the P2P fee,
//! within both wallets' limits, both wallets locked first.

use malipo_core::{MinorUnit, Mode, Msisdn, TransactionId};
use malipo_countries::FeeOperation;
use malipo_ledger::{AccountKind, Journal, JournalKind, JournalLine};

use crate::agents::insufficient;
use crate::core::{system_account, Core};
use crate::customers::Customers;
use crate::error::{Earlier, ServiceError};
use crate::idempotency::Idem;
use crate::limits::{limit_error, Limits};
use crate::ports::{EndpointRepo, LedgerRepo, OutboxRepo, WalletRepo};
use crate::views::{Charging, View};

/// A completed wallet-to-wallet transfer.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
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

/// Wallet-to-wallet transfers.
pub(crate) struct P2p<'a>(pub(crate) &'a Core);

impl P2p<'_> {
    /// Sends money from one wallet to another (the sender's PIN already checked): the sender
    /// pays amount + the P2P fee, within both wallets' limits. With `once`, the transfer and the
    /// key are committed together, so a repeat with the same key answers the first transfer
    /// instead of sending again (the USSD channel keys each send by its session and hop).
    ///
    /// # Errors
    /// [`ServiceError::Validation`] (recipient without a wallet, another currency),
    /// [`ServiceError::WalletLocked`], [`ServiceError::LimitExceeded`],
    /// [`ServiceError::InsufficientFunds`]; idempotency errors with `once`.
    pub(crate) fn send_money(
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
            return Charging::write(self.0.store(), |tx| self.transfer(tx, mode, from, to, amount, source_ref));
        };
        match self.0.idempotent(idem, Charging, |tx| self.transfer(tx, mode, from, to, amount, source_ref)) {
            Ok(done) => Ok(done.value),
            // Kept by a version before snapshots, in this channel's own record.
            Err(ServiceError::AnsweredEarlier(Earlier(kept))) => std::str::from_utf8(&kept)
                .ok()
                .and_then(P2pTransfer::from_record)
                .ok_or_else(|| ServiceError::Internal("a stored transfer does not parse".into())),
            Err(e) => Err(e),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn transfer(
        &self,
        tx: &mut (impl LedgerRepo + WalletRepo + OutboxRepo + EndpointRepo + ?Sized),
        mode: Mode,
        from: &Msisdn,
        to: &Msisdn,
        amount: MinorUnit,
        source_ref: &str,
    ) -> Result<P2pTransfer, ServiceError> {
        let now = self.0.now();
        let limits = Limits(self.0);
        // Lock both wallets in number order, so two opposite transfers cannot deadlock.
        let (first, second) = if from < to { (from, to) } else { (to, from) };
        let a = Customers(self.0).movement_wallet(tx, mode, first, if first == from { "from" } else { "to" }, now)?;
        let b = Customers(self.0).movement_wallet(tx, mode, second, if second == from { "from" } else { "to" }, now)?;
        let (sender, recipient) = if first == from { (a, b) } else { (b, a) };
        if sender.currency != recipient.currency {
            return Err(ServiceError::CurrencyMismatch("the recipient's wallet is in another currency".into()));
        }
        let country = limits.country(&sender)?;
        let fee = country.fee(FeeOperation::P2p, amount);
        let debit = amount.checked_add(fee)?;
        limits.check_debit(tx, &sender, amount, debit, now)?.map_err(|b| limit_error(b, country))?;
        limits.check_credit(tx, &recipient, amount)?.map_err(|b| limit_error(b, limits.country(&recipient).unwrap_or(country)))?;
        let revenue = system_account(tx, mode, sender.currency, AccountKind::Revenue)?;
        let journal = Journal::new_skipping_zero(
            mode,
            sender.currency,
            JournalKind::P2p,
            source_ref,
            vec![
                JournalLine { account: sender.account_id.clone(), amount: debit.checked_neg()? },
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
    /// A keyed transfer as versions before snapshots kept it: `tx_id amount fee sender_balance`.
    fn from_record(text: &str) -> Option<Self> {
        let mut parts = text.split(' ');
        let transaction_id = TransactionId::parse(parts.next()?).ok()?;
        let mut number = || parts.next()?.parse::<i64>().ok().map(MinorUnit::new);
        let (amount, fee, sender_balance) = (number()?, number()?, number()?);
        Some(P2pTransfer { transaction_id, amount, fee, sender_balance })
    }
}

impl crate::idempotency::Subject for P2pTransfer {
    fn subject(&self) -> (String, String) {
        (self.transaction_id.to_string(), String::new())
    }
}
