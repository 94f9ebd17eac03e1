//! Wallets (operator back office): opening, KYC, PINs, locks and statements.

use malipo_auth::Principal;
use malipo_charges::{ChargeEvent, FailureReason};
use malipo_core::{Mode, Msisdn, Timestamp};
use malipo_countries::PinError;
use malipo_ledger::{Account, AccountKind};

use crate::commands::{check_id, OpenWallet, RaiseKyc, ResetPinAttempts, SetPin, WalletLock};
use crate::core::Core;
use crate::error::{FieldError, ServiceError, StoreError};
use crate::idempotency::{Done, Idem};
use crate::lifecycle::{Entered, Lifecycle};
use crate::limits::{Limits, WalletDetails};
use crate::needs::{self, require};
use crate::page::{bad_cursor, Page};
use crate::ports::{PostingQuery, StatementLine, Wallet, WalletState};
use crate::views::{Charging, OnWallets, Reporting, View};

mod pin;

pub use pin::PinCheck;
pub(crate) use pin::Pins;

/// The operator back office: wallets, KYC, PINs, locks and statements.
pub struct Wallets<'a> {
    core: &'a Core,
}

impl<'a> Wallets<'a> {
    pub(crate) fn new(core: &'a Core) -> Self {
        Wallets { core }
    }

    /// Opens a wallet in the number's country, in the principal's mode, with a zero balance.
    /// The KYC tier follows from the ID given (tier 0 without one).
    ///
    /// # Errors
    /// [`ServiceError::InvalidState`] when the number already has a wallet in this mode;
    /// [`ServiceError::Validation`] when the identity document already holds one; idempotency
    /// errors.
    pub fn open(&self, principal: &Principal, command: &OpenWallet, idem: &Idem) -> Result<Done<WalletDetails>, ServiceError> {
        require(principal, &needs::WALLETS)?;
        let now = self.core.now();
        let msisdn = &command.msisdn;
        let country = self.core.country_of(msisdn)?;
        let tier = country.tier_for_id(command.id_type.as_deref());
        self.core.idempotent(idem, Charging, |tx| {
            if tx.wallet(principal.mode, msisdn)?.is_some() {
                return Err(ServiceError::InvalidState(format!("{msisdn} already has a {} wallet", principal.mode)));
            }
            let account = Account::open(None, principal.mode, AccountKind::Wallet, country.currency, Some(msisdn.to_string()), now);
            let wallet = Wallet {
                msisdn: msisdn.clone(),
                mode: principal.mode,
                account_id: account.id.clone(),
                country: country.code.clone(),
                currency: country.currency,
                state: WalletState::Active,
                kyc_tier: tier,
                pin_hash: None,
                pin_attempts: 0,
                first_name: Some(command.first_name.clone()),
                last_name: Some(command.last_name.clone()),
                id_type: command.id_type.clone(),
                id_number: command.id_number.clone(),
                date_of_birth: command.date_of_birth.clone(),
                lock_reason: None,
                created_at: now,
                updated_at: now,
            };
            tx.insert_account(&account)?;
            match tx.insert_wallet(&wallet) {
                Ok(()) => {}
                // The number is free (checked above in this transaction), so the document is taken
                // (or a concurrent request opened the number: the retry then finds it).
                Err(StoreError::Duplicate) if tx.wallet(principal.mode, msisdn)?.is_none() => {
                    return Err(ServiceError::field("id_number", "already_registered", "this identity document already holds a wallet"));
                }
                Err(StoreError::Duplicate) => return Err(StoreError::Retry.into()),
                Err(e) => return Err(e.into()),
            }
            Limits(self.core).details(tx, &wallet, now)
        })
    }

    /// A wallet of the principal's mode.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`].
    pub fn details(&self, principal: &Principal, msisdn: &str) -> Result<WalletDetails, ServiceError> {
        require(principal, &needs::WALLETS)?;
        self.details_of(principal.mode, &wallet_number(msisdn)?)
    }

    /// A wallet with its account, limits and today's use, read in one transaction.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`].
    pub(crate) fn details_of(&self, mode: Mode, msisdn: &Msisdn) -> Result<WalletDetails, ServiceError> {
        let now = self.core.now();
        Reporting::read(self.core.store(), |tx| {
            let wallet = tx.wallet(mode, msisdn)?.ok_or(ServiceError::NotFound)?;
            Limits(self.core).details(tx, &wallet, now)
        })
    }

    /// Sets a wallet's first PIN, or changes it given the current one (a wrong current PIN
    /// counts as a failed attempt, committed even though the request is refused).
    ///
    /// The PINs are checked here, against the wallet found: its country's PIN rules, and the
    /// current PIN against its hash.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`], [`ServiceError::Validation`] (`new_pin` weak or malformed,
    /// `current_pin` missing or wrong), [`ServiceError::WalletLocked`], idempotency errors.
    pub fn set_pin(&self, principal: &Principal, command: &SetPin, idem: &Idem) -> Result<Done<WalletDetails>, ServiceError> {
        require(principal, &needs::WALLETS)?;
        let SetPin { wallet: msisdn, new_pin, current_pin } = command;
        let (new_pin, current_pin) = (new_pin.as_str(), current_pin.as_deref());
        let mode = principal.mode;
        let wallet = OnWallets::read(self.core.store(), |tx| Ok(tx.wallet(mode, msisdn)?))?.ok_or(ServiceError::NotFound)?;
        let country = Limits(self.core).country(&wallet)?;
        country.check_new_pin(new_pin).map_err(|e| {
            let code = if matches!(e, PinError::Weak) { "weak_pin" } else { "invalid_pin" };
            ServiceError::field("new_pin", code, format!("new_pin: {e}"))
        })?;
        // A retry of a request that already succeeded replays its answer without re-checking
        // the old PIN (which has changed since) or the wallet's state (it may have been locked
        // since: the retry changes nothing).
        if let Some(outcome) = self.core.stored_outcome(idem)? {
            return Ok(outcome);
        }
        if wallet.state == WalletState::Locked {
            return Err(ServiceError::WalletLocked);
        }
        let expected_hash = match (&wallet.pin_hash, current_pin) {
            (None, _) => None,
            (Some(_), None) => {
                return Err(ServiceError::field("current_pin", "missing_field", "current_pin is required to change the PIN"))
            }
            (Some(hash), Some(current)) => {
                if current == new_pin {
                    return Err(ServiceError::field("new_pin", "invalid_pin", "new_pin must differ from the current PIN"));
                }
                match Pins(self.core).check_pin(mode, msisdn, current)? {
                    PinCheck::Right => Some(hash.clone()),
                    PinCheck::Wrong { attempts_left } => {
                        return Err(ServiceError::field(
                            "current_pin",
                            "wrong_pin",
                            format!("current_pin is wrong; {attempts_left} attempt(s) left before the wallet locks"),
                        ))
                    }
                    PinCheck::LockedNow | PinCheck::Locked => return Err(ServiceError::WalletLocked),
                    PinCheck::NoWallet => return Err(ServiceError::NotFound),
                    PinCheck::NoPin => None,
                }
            }
        };
        let new_hash = self.core.hasher.hash(new_pin).map_err(|e| ServiceError::Internal(e.to_string()))?;
        self.core.idempotent(idem, Charging, |tx| {
            let now = self.core.now();
            let mut wallet = tx.lock_wallet(mode, msisdn)?.ok_or(ServiceError::NotFound)?;
            if wallet.state == WalletState::Locked {
                return Err(ServiceError::WalletLocked);
            }
            if wallet.pin_hash != expected_hash {
                return Err(ServiceError::InvalidState("the PIN changed while this request was checked; send it again".into()));
            }
            wallet.pin_hash = Some(new_hash.clone());
            wallet.pin_attempts = 0;
            wallet.updated_at = now;
            tx.update_wallet(&wallet)?;
            Limits(self.core).details(tx, &wallet, now)
        })
    }

    /// Locks a wallet (operator): it can no longer pay or be paid, and its pending prompts fail
    /// with `wallet_locked`.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`], [`ServiceError::InvalidState`] when already locked,
    /// idempotency errors.
    pub fn lock(&self, principal: &Principal, command: &WalletLock, idem: &Idem) -> Result<Done<WalletDetails>, ServiceError> {
        require(principal, &needs::WALLETS)?;
        let WalletLock { wallet: msisdn, reason } = command;
        let mut entered = Entered::new();
        let outcome = self.core.idempotent(idem, Charging, |tx| {
            entered.clear();
            let now = self.core.now();
            let mut wallet = tx.lock_wallet(principal.mode, msisdn)?.ok_or(ServiceError::NotFound)?;
            if wallet.state == WalletState::Locked {
                return Err(ServiceError::InvalidState("the wallet is already locked".into()));
            }
            wallet.state = WalletState::Locked;
            wallet.lock_reason = Some(reason.clone());
            wallet.updated_at = now;
            tx.update_wallet(&wallet)?;
            Lifecycle(self.core).end_pending_prompts(
                tx,
                &wallet,
                ChargeEvent::PayerFailure(FailureReason::WalletLocked),
                None,
                now,
                &mut entered,
            )?;
            Limits(self.core).details(tx, &wallet, now)
        })?;
        self.core.report(&entered);
        Ok(outcome)
    }

    /// Unlocks a wallet (operator) and resets its PIN attempt count.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`], [`ServiceError::InvalidState`] when not locked, idempotency
    /// errors.
    pub fn unlock(&self, principal: &Principal, command: &WalletLock, idem: &Idem) -> Result<Done<WalletDetails>, ServiceError> {
        require(principal, &needs::WALLETS)?;
        let msisdn = &command.wallet;
        self.core.idempotent(idem, Charging, |tx| {
            let now = self.core.now();
            let mut wallet = tx.lock_wallet(principal.mode, msisdn)?.ok_or(ServiceError::NotFound)?;
            if wallet.state != WalletState::Locked {
                return Err(ServiceError::InvalidState("the wallet is not locked".into()));
            }
            wallet.state = WalletState::Active;
            wallet.lock_reason = None;
            wallet.pin_attempts = 0;
            wallet.updated_at = now;
            tx.update_wallet(&wallet)?;
            Limits(self.core).details(tx, &wallet, now)
        })
    }

    /// Forgets an active wallet's failed PIN attempts (operator back office: a customer who
    /// mistyped, confirmed by other means). A locked wallet is unlocked instead, which resets them
    /// too.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`], [`ServiceError::WalletLocked`], idempotency errors.
    pub fn reset_pin_attempts(
        &self,
        principal: &Principal,
        command: &ResetPinAttempts,
        idem: &Idem,
    ) -> Result<Done<WalletDetails>, ServiceError> {
        require(principal, &needs::WALLETS)?;
        let msisdn = &command.wallet;
        self.core.idempotent(idem, Charging, |tx| {
            let now = self.core.now();
            let mut wallet = tx.lock_wallet(principal.mode, msisdn)?.ok_or(ServiceError::NotFound)?;
            if wallet.state == WalletState::Locked {
                return Err(ServiceError::WalletLocked);
            }
            if wallet.pin_attempts != 0 {
                wallet.pin_attempts = 0;
                wallet.updated_at = now;
                tx.update_wallet(&wallet)?;
            }
            Limits(self.core).details(tx, &wallet, now)
        })
    }

    /// Raises a wallet's KYC tier on an identity document that grants at least that tier. The
    /// tier and the document are checked here, against the found wallet's country.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`], [`ServiceError::Validation`] (tier, ID),
    /// [`ServiceError::InvalidState`] when the tier is not above the current one, idempotency errors.
    pub fn raise_kyc(&self, principal: &Principal, command: &RaiseKyc, idem: &Idem) -> Result<Done<WalletDetails>, ServiceError> {
        require(principal, &needs::WALLETS)?;
        let RaiseKyc { wallet: msisdn, tier, id_type, id_number } = command;
        let (tier, id_type, id_number) = (*tier, id_type.as_str(), id_number.as_str());
        let current = OnWallets::read(self.core.store(), |tx| Ok(tx.wallet(principal.mode, msisdn)?))?.ok_or(ServiceError::NotFound)?;
        let country = Limits(self.core).country(&current)?;
        let mut errors = Vec::new();
        if country.tier(tier).is_none() {
            errors.push(FieldError::new("tier", "invalid_value", format!("{} has no KYC tier {tier}", country.code)));
        }
        check_id(country, id_type, id_number, &mut errors);
        if errors.is_empty() {
            let grants = country.tier_for_id(Some(id_type));
            if grants < tier {
                errors.push(FieldError::new("tier", "invalid_value", format!("a {id_type} grants at most tier {grants}")));
            }
        }
        if !errors.is_empty() {
            return Err(ServiceError::Validation(errors));
        }
        self.core.idempotent(idem, Charging, |tx| {
            let now = self.core.now();
            let mut wallet = tx.lock_wallet(principal.mode, msisdn)?.ok_or(ServiceError::NotFound)?;
            if tier <= wallet.kyc_tier {
                return Err(ServiceError::InvalidState(format!("the wallet is already at tier {}", wallet.kyc_tier)));
            }
            // Checked first: on PostgreSQL a refused statement would abort the transaction.
            // A concurrent registration of the same document still meets the unique index.
            if tx.wallet_by_document(wallet.mode, &wallet.country, id_type, id_number)?.is_some_and(|w| w.msisdn != wallet.msisdn) {
                return Err(document_taken());
            }
            wallet.kyc_tier = tier;
            wallet.id_type = Some(id_type.to_owned());
            wallet.id_number = Some(id_number.to_owned());
            wallet.updated_at = now;
            tx.update_wallet(&wallet)?;
            Limits(self.core).details(tx, &wallet, now)
        })
    }

    /// The name of the holder of the wallet of `msisdn` in the principal's mode, for a caller
    /// about to pay them (a payout, a cash-in) or the operator: the name confirms the number
    /// before money goes to it. A merchant collecting money may not ask.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`] (no such wallet, or a number that is none).
    pub fn holder_name(&self, principal: &Principal, msisdn: &str) -> Result<HolderName, ServiceError> {
        require(principal, &needs::NAME_PAYEE)?;
        let msisdn = wallet_number(msisdn)?;
        let wallet = OnWallets::read(self.core.store(), |tx| Ok(tx.wallet(principal.mode, &msisdn)?))?.ok_or(ServiceError::NotFound)?;
        Ok(HolderName { first_name: wallet.first_name, last_name: wallet.last_name })
    }

    /// A wallet's statement, oldest first.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`], [`ServiceError::Validation`] for a bad cursor.
    pub fn statement(
        &self,
        principal: &Principal,
        msisdn: &str,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<(Wallet, Page<StatementLine>), ServiceError> {
        self.postings(principal, msisdn, (None, None), false, cursor, limit)
    }

    /// A page of a wallet's postings in `[from, to)`, newest first (the GSMA door's
    /// transactions and statement entries of a wallet). The cursor is the last posting's place
    /// in ledger order, so pages are stable under new postings.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`], [`ServiceError::Validation`] for a bad cursor.
    pub fn history(
        &self,
        principal: &Principal,
        msisdn: &str,
        window: (Option<Timestamp>, Option<Timestamp>),
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<(Wallet, Page<StatementLine>), ServiceError> {
        self.postings(principal, msisdn, window, true, cursor, limit)
    }

    /// A page of a wallet's postings in `window`, in ledger order or newest first, after (or
    /// before) the cursor's place: [`Wallets::statement`] and [`Wallets::history`].
    fn postings(
        &self,
        principal: &Principal,
        msisdn: &str,
        (from, to): (Option<Timestamp>, Option<Timestamp>),
        newest_first: bool,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<(Wallet, Page<StatementLine>), ServiceError> {
        require(principal, &needs::WALLETS)?;
        let msisdn = wallet_number(msisdn)?;
        let cursor = cursor.map(|c| c.parse::<i64>().ok().filter(|v| *v > 0).ok_or_else(|| bad_cursor("cursor"))).transpose()?;
        Reporting::report(self.core.store(), |tx| {
            let wallet = tx.wallet(principal.mode, &msisdn)?.ok_or(ServiceError::NotFound)?;
            let oldest_first = PostingQuery::oldest_first(wallet.account_id.clone(), limit.saturating_add(1));
            let query = PostingQuery { cursor, newest_first, from, to, ..oldest_first };
            let data = tx.account_postings(&query)?;
            Ok((wallet, Page::from_fetched(data, limit, |l| l.seq.to_string())))
        })
    }

    /// A wallet's last `limit` postings, newest first (the back office's "recent transactions").
    ///
    /// # Errors
    /// [`ServiceError::NotFound`].
    pub fn recent(&self, principal: &Principal, msisdn: &str, limit: usize) -> Result<Vec<StatementLine>, ServiceError> {
        require(principal, &needs::WALLETS)?;
        let msisdn = wallet_number(msisdn)?;
        Reporting::report(self.core.store(), |tx| {
            let wallet = tx.wallet(principal.mode, &msisdn)?.ok_or(ServiceError::NotFound)?;
            let query = PostingQuery { newest_first: true, ..PostingQuery::oldest_first(wallet.account_id.clone(), limit) };
            Ok(tx.account_postings(&query)?)
        })
    }
}

/// A wallet holder's name as the wallet was opened with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HolderName {
    /// Given name.
    pub first_name: Option<String>,
    /// Family name.
    pub last_name: Option<String>,
}

/// Parses a wallet number of a path (of a read): an invalid number is simply not found.
fn wallet_number(msisdn: &str) -> Result<Msisdn, ServiceError> {
    Msisdn::parse(msisdn).map_err(|_| ServiceError::NotFound)
}

fn document_taken() -> ServiceError {
    ServiceError::field("id_number", "already_registered", "this identity document already holds a wallet")
}
