//! Customers' wallets as the parties of a movement: the sandbox's wallets opened on first use,
//! and the row lock every movement takes on a wallet before it reads the rules (state, limits,
//! balance) that decide it.
//!
//! The rule for every debit of a wallet (charge and cash-out approval, P2P, and every later
//! one): take the wallet through [`Customers::payer_wallet`] or [`Customers::movement_wallet`],
//! which lock its row first, then check, then move. Two movements of one wallet then run one
//! after the other, so they cannot both pass a limit that only one fits.

use malipo_core::{MinorUnit, Mode, Msisdn, Timestamp};
use malipo_ledger::{Account, AccountKind, Journal, JournalKind, JournalLine};

use crate::core::{system_account, Core};
use crate::error::{ServiceError, StoreError};
use crate::ports::{LedgerRepo, Wallet, WalletRepo, WalletState};

/// Test wallets start with 1,000,000.00 in their currency.
const TEST_WALLET_MAJOR_UNITS: i64 = 1_000_000;

/// Finds, opens and locks customers' wallets.
pub(crate) struct Customers<'a>(pub(crate) &'a Core);

impl Customers<'_> {
    /// The test wallet of a number, opened and funded with test money on first use.
    pub(crate) fn ensure_test_wallet(
        &self,
        tx: &mut (impl WalletRepo + LedgerRepo + ?Sized),
        msisdn: &Msisdn,
        now: Timestamp,
    ) -> Result<Wallet, ServiceError> {
        Ok(self.test_wallet(tx, msisdn, now)?.0)
    }

    /// As [`Customers::ensure_test_wallet`], and whether it was opened by this call.
    pub(crate) fn test_wallet(
        &self,
        tx: &mut (impl WalletRepo + LedgerRepo + ?Sized),
        msisdn: &Msisdn,
        now: Timestamp,
    ) -> Result<(Wallet, bool), ServiceError> {
        if let Some(w) = tx.wallet(Mode::Test, msisdn)? {
            return Ok((w, false));
        }
        Ok((self.open_test_wallet(tx, msisdn, now)?, true))
    }

    /// Opens and funds the test wallet of a number this transaction found without one (a
    /// concurrent first use makes the insert a duplicate, and the transaction is run again).
    fn open_test_wallet(
        &self,
        tx: &mut (impl WalletRepo + LedgerRepo + ?Sized),
        msisdn: &Msisdn,
        now: Timestamp,
    ) -> Result<Wallet, ServiceError> {
        let (wallet, funding) = self.open_unfunded_test_wallet(tx, msisdn, now)?;
        // Every caller fails its transaction with a failed opening: no savepoint of its own.
        tx.post_journal_whole(&funding)?;
        Ok(wallet)
    }

    /// [`Customers::open_test_wallet`] without posting its funding: the journal is returned, for
    /// the caller to post in this transaction before any debit of the wallet (with the debit's
    /// own journal, in one write of their rows).
    fn open_unfunded_test_wallet(
        &self,
        tx: &mut (impl WalletRepo + LedgerRepo + ?Sized),
        msisdn: &Msisdn,
        now: Timestamp,
    ) -> Result<(Wallet, Journal), ServiceError> {
        let country =
            self.0.countries.for_msisdn(msisdn).map_err(|e| ServiceError::field("msisdn", "invalid_msisdn", format!("msisdn {e}")))?;
        let account = Account::open(None, Mode::Test, AccountKind::Wallet, country.currency, Some(msisdn.to_string()), now);
        let wallet = Wallet {
            msisdn: msisdn.clone(),
            mode: Mode::Test,
            account_id: account.id.clone(),
            country: country.code.clone(),
            currency: country.currency,
            state: WalletState::Active,
            kyc_tier: country.top_tier().tier,
            pin_hash: None,
            pin_attempts: 0,
            first_name: None,
            last_name: None,
            id_type: None,
            id_number: None,
            date_of_birth: None,
            lock_reason: None,
            created_at: now,
            updated_at: now,
        };
        // A concurrent first use of the same number: retry, and find the other's wallet.
        let dup_is_retry = |e: StoreError| {
            if e == StoreError::Duplicate {
                StoreError::Retry
            } else {
                e
            }
        };
        tx.insert_account(&account).map_err(dup_is_retry)?;
        tx.insert_wallet(&wallet).map_err(dup_is_retry)?;
        let funding = system_account(tx, Mode::Test, country.currency, AccountKind::SandboxFunding)?;
        let amount = MinorUnit::from_major(TEST_WALLET_MAJOR_UNITS, country.currency)?;
        let journal = Journal::new(
            Mode::Test,
            country.currency,
            JournalKind::SandboxFunding,
            msisdn.as_str(),
            vec![JournalLine { account: funding, amount: amount.checked_neg()? }, JournalLine { account: account.id.clone(), amount }],
            now,
        )?;
        Ok((wallet, journal))
    }

    /// The payer's wallet for a debit, locked until the transaction ends, so that its state, its
    /// limits and its balance cannot change between the checks and the debit. In test mode a
    /// number without a wallet gets one (the `bool` says it was opened by this transaction, and
    /// so has used nothing yet); in live mode it is `None`.
    ///
    /// # Errors
    /// Storage failures.
    pub(crate) fn payer_wallet(
        &self,
        tx: &mut (impl WalletRepo + LedgerRepo + ?Sized),
        mode: Mode,
        msisdn: &Msisdn,
        now: Timestamp,
    ) -> Result<Option<(Wallet, bool)>, ServiceError> {
        let Some((wallet, funding)) = self.payer_wallet_unfunded(tx, mode, msisdn, now)? else {
            return Ok(None);
        };
        let opened = funding.is_some();
        if let Some(funding) = funding {
            // Every caller fails its transaction with a failed opening: no savepoint of its own.
            tx.post_journal_whole(&funding)?;
        }
        Ok(Some((wallet, opened)))
    }

    /// [`Customers::payer_wallet`], a test wallet opened now returned with its funding journal
    /// not yet posted (see [`Customers::open_unfunded_test_wallet`]): `Some` exactly when the
    /// wallet was opened by this transaction.
    ///
    /// # Errors
    /// Storage failures.
    pub(crate) fn payer_wallet_unfunded(
        &self,
        tx: &mut (impl WalletRepo + LedgerRepo + ?Sized),
        mode: Mode,
        msisdn: &Msisdn,
        now: Timestamp,
    ) -> Result<Option<(Wallet, Option<Journal>)>, ServiceError> {
        if let Some(wallet) = tx.lock_wallet(mode, msisdn)? {
            return Ok(Some((wallet, None)));
        }
        match mode {
            // None found under the lock: opened here (no second read). A wallet inserted by this
            // transaction is invisible to others until it commits.
            Mode::Test => {
                let (wallet, funding) = self.open_unfunded_test_wallet(tx, msisdn, now)?;
                Ok(Some((wallet, Some(funding))))
            }
            Mode::Live => Ok(None),
        }
    }

    /// The customer's wallet for a movement, locked until the transaction ends: opened on
    /// first use in test mode; in live mode it must exist. A locked wallet is refused.
    ///
    /// # Errors
    /// [`ServiceError::Validation`] (`wallet_not_found` under `field`), [`ServiceError::WalletLocked`].
    pub(crate) fn movement_wallet(
        &self,
        tx: &mut (impl WalletRepo + LedgerRepo + ?Sized),
        mode: Mode,
        msisdn: &Msisdn,
        field: &str,
        now: Timestamp,
    ) -> Result<Wallet, ServiceError> {
        if mode == Mode::Test {
            self.ensure_test_wallet(tx, msisdn, now)?;
        }
        let wallet = tx
            .lock_wallet(mode, msisdn)?
            .ok_or_else(|| ServiceError::field(field, "wallet_not_found", format!("{field} has no Malipo wallet")))?;
        if wallet.state == WalletState::Locked {
            return Err(ServiceError::WalletLocked);
        }
        Ok(wallet)
    }
}
