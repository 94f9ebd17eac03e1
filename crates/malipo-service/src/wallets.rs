//! Wallets (operator back office) and the rules every channel shares: KYC tier limits on every
//! movement touching a wallet, and one PIN attempt counter for every channel.

use malipo_auth::Principal;
use malipo_charges::{ChargeEvent, FailureReason};
use malipo_core::{MinorUnit, Mode, Msisdn, Timestamp};
use malipo_countries::{Country, KycTier, LimitBreach, PinError};
use malipo_idempotency::StoredResponse;
use malipo_ledger::{Account, AccountKind};

use crate::charges::{check_text, Page};
use crate::error::{FieldError, ServiceError};
use crate::idempotency::{Idem, IdemOutcome};
use crate::platform::Platform;
use crate::ports::{read, write, StatementLine, StoreError, Tx};
use crate::processing::Entered;
use crate::wallet::{Wallet, WalletState};

/// The fields of `POST /wallets` as received.
#[derive(Clone, Debug, Default)]
pub struct NewWallet {
    /// The customer's number; its country is the wallet's.
    pub msisdn: String,
    /// Given name.
    pub first_name: String,
    /// Family name.
    pub last_name: String,
    /// One of the country's ID types.
    pub id_type: Option<String>,
    /// Must match the ID type's pattern.
    pub id_number: Option<String>,
    /// `YYYY-MM-DD`.
    pub date_of_birth: Option<String>,
}

/// A wallet with its account, its tier's limits and what it has used of today's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WalletDetails {
    /// The wallet.
    pub wallet: Wallet,
    /// Its ledger account.
    pub account: Account,
    /// Its KYC tier.
    pub tier: KycTier,
    /// Debits (and reservations) on the country's current local day.
    pub daily_used: MinorUnit,
}

/// The result of checking a PIN (every check counts towards the lock).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PinCheck {
    /// Right: the count is reset.
    Right,
    /// Wrong, with the attempts left before the wallet locks.
    Wrong {
        /// Attempts left.
        attempts_left: u8,
    },
    /// Wrong, and the wallet is now locked (its pending prompts declined).
    LockedNow,
    /// The wallet was already locked: nothing was checked.
    Locked,
    /// The wallet has no PIN yet.
    NoPin,
    /// The number has no wallet in this mode.
    NoWallet,
}

/// Checks an ID type and number against the country's configuration.
fn check_id(country: &Country, id_type: &str, id_number: &str, errors: &mut Vec<FieldError>) {
    match country.id_type(id_type) {
        None => {
            let names: Vec<&str> = country.id_types.iter().map(|t| t.name.as_str()).collect();
            errors.push(FieldError::new(
                "id_type",
                "invalid_value",
                format!("id_type must be one of {} for {}", names.join(", "), country.code),
            ));
        }
        Some(t) if !t.matches(id_number) => {
            errors.push(FieldError::new(
                "id_number",
                "invalid_value",
                format!("id_number does not match the {} pattern {}", t.name, t.pattern),
            ));
        }
        Some(_) => {}
    }
}

/// A date of birth: `YYYY-MM-DD`, a real date, not in the future.
fn check_date_of_birth(text: &str, now: Timestamp, errors: &mut Vec<FieldError>) {
    let format = time::macros::format_description!("[year]-[month]-[day]");
    match time::Date::parse(text, format) {
        Ok(d) if d > now.to_offset_datetime().date() => {
            errors.push(FieldError::new("date_of_birth", "invalid_value", "date_of_birth is in the future"));
        }
        Ok(d) if d.year() < 1900 => errors.push(FieldError::new("date_of_birth", "invalid_value", "date_of_birth is before 1900")),
        Ok(_) => {}
        Err(_) => errors.push(FieldError::new("date_of_birth", "invalid_value", "date_of_birth must be a date written YYYY-MM-DD")),
    }
}

/// The `limit_exceeded` error for a breach, worded for people.
pub(crate) fn limit_error(breach: LimitBreach, country: &Country) -> ServiceError {
    let money = |m: MinorUnit| format!("{} {}", country.currency, country.currency.format_amount(m));
    ServiceError::LimitExceeded(match breach {
        LimitBreach::PerTransaction { limit } => format!("the amount is above the wallet's per-transaction limit of {}", money(limit)),
        LimitBreach::Daily { limit, used } => {
            format!("the wallet's daily limit of {} would be exceeded ({} used today)", money(limit), money(used))
        }
        LimitBreach::MaxBalance { limit } => format!("the wallet's balance would exceed its maximum of {}", money(limit)),
    })
}

impl Platform {
    /// The country of a wallet.
    ///
    /// # Errors
    /// [`ServiceError::Internal`] when the wallet's country is no longer configured.
    pub(crate) fn wallet_country(&self, wallet: &Wallet) -> Result<&Country, ServiceError> {
        self.country(&wallet.country)
    }

    /// The KYC tier of a wallet.
    fn wallet_tier(&self, wallet: &Wallet) -> Result<&KycTier, ServiceError> {
        let country = self.wallet_country(wallet)?;
        country.tier(wallet.kyc_tier).ok_or_else(|| ServiceError::Internal(format!("{} has no KYC tier {}", country.code, wallet.kyc_tier)))
    }

    /// What left the wallet on the country's current local day: posted debits plus reservations.
    pub(crate) fn daily_used(
        &self,
        tx: &mut dyn Tx,
        wallet: &Wallet,
        account: &Account,
        now: Timestamp,
    ) -> Result<MinorUnit, ServiceError> {
        let (day_start, _) = self.wallet_country(wallet)?.local_day(now);
        let posted = tx.debits_since(&wallet.account_id, day_start)?;
        Ok(MinorUnit::new(posted.get().saturating_add(account.held.get())))
    }

    /// Whether the wallet may send `amount` with `debit` leaving it in all (amount plus any fee
    /// it pays). `Ok(Err(..))` is a refusal; `Err` a storage failure.
    ///
    /// # Errors
    /// Storage failures.
    pub(crate) fn check_debit(
        &self,
        tx: &mut dyn Tx,
        wallet: &Wallet,
        amount: MinorUnit,
        debit: MinorUnit,
        now: Timestamp,
    ) -> Result<Result<(), LimitBreach>, ServiceError> {
        let account = tx.account(&wallet.account_id)?.ok_or_else(|| ServiceError::Internal("wallet without account".into()))?;
        let used = self.daily_used(tx, wallet, &account, now)?;
        Ok(self.wallet_tier(wallet)?.check_debit(amount, debit, used))
    }

    /// [`Platform::check_debit`] for a wallet opened in the current transaction: nothing used yet.
    ///
    /// # Errors
    /// [`ServiceError::Internal`] when its tier is not configured.
    pub(crate) fn fresh_wallet_debit(
        &self,
        wallet: &Wallet,
        amount: MinorUnit,
        debit: MinorUnit,
    ) -> Result<Result<(), LimitBreach>, ServiceError> {
        Ok(self.wallet_tier(wallet)?.check_debit(amount, debit, MinorUnit::ZERO))
    }

    /// Whether the wallet may receive `amount`. The maximum balance is not applied to test
    /// wallets: the sandbox opens them with 1,000,000.00, above most tiers' maximum.
    ///
    /// # Errors
    /// Storage failures.
    pub(crate) fn check_credit(
        &self,
        tx: &mut dyn Tx,
        wallet: &Wallet,
        amount: MinorUnit,
    ) -> Result<Result<(), LimitBreach>, ServiceError> {
        let account = tx.account(&wallet.account_id)?.ok_or_else(|| ServiceError::Internal("wallet without account".into()))?;
        let after = MinorUnit::new(account.balance.get().saturating_add(amount.get()));
        Ok(self.wallet_tier(wallet)?.check_credit(amount, after, wallet.mode == Mode::Live))
    }

    /// Checks a PIN entered on any channel, counting it: a right PIN resets the count; a wrong
    /// one adds one, and the country's maximum locks the wallet and declines every pending
    /// prompt of it with `pin_attempts_exceeded`. The slow hash runs outside any transaction.
    ///
    /// # Errors
    /// Storage failures.
    pub fn check_pin(&self, mode: Mode, msisdn: &Msisdn, pin: &str) -> Result<PinCheck, ServiceError> {
        for _ in 0..3 {
            let Some(seen) = read(self.store(), |tx| Ok(tx.wallet(mode, msisdn)?))? else {
                return Ok(PinCheck::NoWallet);
            };
            if seen.state == WalletState::Locked {
                return Ok(PinCheck::Locked);
            }
            let Some(hash) = seen.pin_hash.clone() else {
                return Ok(PinCheck::NoPin);
            };
            let right = self.hasher.verify(pin, Some(&hash));
            let mut entered = Entered::new();
            let result = write(self.store(), |tx| {
                entered.clear();
                let now = self.clock.now();
                let Some(mut wallet) = tx.lock_wallet(mode, msisdn)? else {
                    return Ok(Some(PinCheck::NoWallet));
                };
                if wallet.state == WalletState::Locked {
                    return Ok(Some(PinCheck::Locked));
                }
                if wallet.pin_hash.as_deref() != Some(hash.as_str()) {
                    // The PIN changed while it was being checked: check again against the new one.
                    return Ok(None);
                }
                if right {
                    if wallet.pin_attempts != 0 {
                        wallet.pin_attempts = 0;
                        wallet.updated_at = now;
                        tx.update_wallet(&wallet)?;
                    }
                    return Ok(Some(PinCheck::Right));
                }
                let max = self.wallet_country(&wallet)?.max_pin_attempts;
                wallet.pin_attempts = wallet.pin_attempts.saturating_add(1);
                if wallet.pin_attempts >= max {
                    self.lock_out(tx, &mut wallet, None, now, &mut entered)?;
                    return Ok(Some(PinCheck::LockedNow));
                }
                wallet.updated_at = now;
                tx.update_wallet(&wallet)?;
                Ok(Some(PinCheck::Wrong { attempts_left: max - wallet.pin_attempts }))
            })?;
            self.report(&entered);
            if let Some(result) = result {
                return Ok(result);
            }
        }
        Err(StoreError::Retry.into())
    }

    /// Opens a wallet in the number's country, in the principal's mode, with a zero balance.
    /// The KYC tier follows from the ID given (tier 0 without one).
    ///
    /// # Errors
    /// [`ServiceError::Validation`]; [`ServiceError::InvalidState`] when the number already has
    /// a wallet in this mode; idempotency errors.
    pub fn open_wallet(
        &self,
        principal: &Principal,
        new: &NewWallet,
        idem: &Idem,
        render: &dyn Fn(&WalletDetails) -> StoredResponse,
    ) -> Result<IdemOutcome, ServiceError> {
        let now = self.clock.now();
        let mut errors = Vec::new();
        let parsed = match self.countries.parse_msisdn(&new.msisdn) {
            Ok(p) => Some(p),
            Err(e) => {
                errors.push(FieldError::new("msisdn", "invalid_msisdn", format!("msisdn {e}")));
                None
            }
        };
        check_text("first_name", &new.first_name, 64, false, &mut errors);
        check_text("last_name", &new.last_name, 64, false, &mut errors);
        match (&new.id_type, &new.id_number, &parsed) {
            (Some(t), Some(n), Some((_, country))) => check_id(country, t, n, &mut errors),
            (Some(_), None, _) => errors.push(FieldError::new("id_number", "missing_field", "id_number is required with id_type")),
            (None, Some(_), _) => errors.push(FieldError::new("id_type", "missing_field", "id_type is required with id_number")),
            _ => {}
        }
        if let Some(d) = &new.date_of_birth {
            check_date_of_birth(d, now, &mut errors);
        }
        if !errors.is_empty() {
            return Err(ServiceError::Validation(errors));
        }
        let Some((msisdn, country)) = parsed else {
            return Err(ServiceError::Internal("validated msisdn missing".into()));
        };
        let tier = country.tier_for_id(new.id_type.as_deref());
        self.idempotent(
            idem,
            |tx| {
                if tx.wallet(principal.mode, &msisdn)?.is_some() {
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
                    first_name: Some(new.first_name.trim().to_owned()),
                    last_name: Some(new.last_name.trim().to_owned()),
                    id_type: new.id_type.clone(),
                    id_number: new.id_number.clone(),
                    date_of_birth: new.date_of_birth.clone(),
                    lock_reason: None,
                    created_at: now,
                    updated_at: now,
                };
                tx.insert_account(&account)?;
                match tx.insert_wallet(&wallet) {
                    Ok(()) => {}
                    // The number is free (checked above in this transaction), so the document is taken
                    // (or a concurrent request opened the number: the retry then finds it).
                    Err(StoreError::Duplicate) if tx.wallet(principal.mode, &msisdn)?.is_none() => {
                        return Err(ServiceError::field(
                            "id_number",
                            "already_registered",
                            "this identity document already holds a wallet",
                        ));
                    }
                    Err(StoreError::Duplicate) => return Err(StoreError::Retry.into()),
                    Err(e) => return Err(e.into()),
                }
                self.wallet_view(tx, &wallet, now)
            },
            render,
        )
    }

    pub(crate) fn wallet_view(&self, tx: &mut dyn Tx, wallet: &Wallet, now: Timestamp) -> Result<WalletDetails, ServiceError> {
        let account = tx.account(&wallet.account_id)?.ok_or_else(|| ServiceError::Internal("wallet without account".into()))?;
        let tier = self.wallet_tier(wallet)?.clone();
        let daily_used = self.daily_used(tx, wallet, &account, now)?;
        Ok(WalletDetails { wallet: wallet.clone(), account, tier, daily_used })
    }

    /// Parses a wallet number of a path: an invalid number is simply not found.
    fn wallet_number(msisdn: &str) -> Result<Msisdn, ServiceError> {
        Msisdn::parse(msisdn).map_err(|_| ServiceError::NotFound)
    }

    /// A wallet of the principal's mode.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`].
    pub fn wallet_details(&self, principal: &Principal, msisdn: &str) -> Result<WalletDetails, ServiceError> {
        self.details_of(principal.mode, &Self::wallet_number(msisdn)?)
    }

    /// A wallet with its account, limits and today's use, read in one transaction.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`].
    pub(crate) fn details_of(&self, mode: Mode, msisdn: &Msisdn) -> Result<WalletDetails, ServiceError> {
        let now = self.clock.now();
        read(self.store(), |tx| {
            let wallet = tx.wallet(mode, msisdn)?.ok_or(ServiceError::NotFound)?;
            self.wallet_view(tx, &wallet, now)
        })
    }

    /// Sets a wallet's first PIN, or changes it given the current one (a wrong current PIN
    /// counts as a failed attempt, committed even though the request is refused).
    ///
    /// # Errors
    /// [`ServiceError::NotFound`], [`ServiceError::Validation`] (`new_pin` weak or malformed,
    /// `current_pin` missing or wrong), [`ServiceError::WalletLocked`], idempotency errors.
    pub fn set_pin(
        &self,
        principal: &Principal,
        msisdn: &str,
        new_pin: &str,
        current_pin: Option<&str>,
        idem: &Idem,
        render: &dyn Fn(&WalletDetails) -> StoredResponse,
    ) -> Result<IdemOutcome, ServiceError> {
        let msisdn = Self::wallet_number(msisdn)?;
        let mode = principal.mode;
        let wallet = read(self.store(), |tx| Ok(tx.wallet(mode, &msisdn)?))?.ok_or(ServiceError::NotFound)?;
        let country = self.wallet_country(&wallet)?;
        country.check_new_pin(new_pin).map_err(|e| {
            let code = if matches!(e, PinError::Weak) { "weak_pin" } else { "invalid_pin" };
            ServiceError::field("new_pin", code, format!("new_pin: {e}"))
        })?;
        if wallet.state == WalletState::Locked {
            return Err(ServiceError::WalletLocked);
        }
        // A retry of a request that already succeeded replays its answer without re-checking
        // the old PIN (which has changed since).
        if let Some(outcome) = self.stored_outcome(idem)? {
            return Ok(outcome);
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
                match self.check_pin(mode, &msisdn, current)? {
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
        let new_hash = self.hasher.hash(new_pin).map_err(|e| ServiceError::Internal(e.to_string()))?;
        self.idempotent(
            idem,
            |tx| {
                let now = self.clock.now();
                let mut wallet = tx.lock_wallet(mode, &msisdn)?.ok_or(ServiceError::NotFound)?;
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
                self.wallet_view(tx, &wallet, now)
            },
            render,
        )
    }

    /// Replaces a wallet's PIN (the caller has just proved the current one) and resets the count.
    ///
    /// # Errors
    /// [`ServiceError::Validation`] for a weak or malformed PIN; [`ServiceError::WalletLocked`];
    /// [`ServiceError::NotFound`].
    pub(crate) fn replace_pin(&self, mode: Mode, msisdn: &Msisdn, new_pin: &str) -> Result<(), ServiceError> {
        let wallet = read(self.store(), |tx| Ok(tx.wallet(mode, msisdn)?))?.ok_or(ServiceError::NotFound)?;
        self.wallet_country(&wallet)?.check_new_pin(new_pin).map_err(|e| ServiceError::field("new_pin", "invalid_pin", e.to_string()))?;
        let hash = self.hasher.hash(new_pin).map_err(|e| ServiceError::Internal(e.to_string()))?;
        write(self.store(), |tx| {
            let now = self.clock.now();
            let mut wallet = tx.lock_wallet(mode, msisdn)?.ok_or(ServiceError::NotFound)?;
            if wallet.state == WalletState::Locked {
                return Err(ServiceError::WalletLocked);
            }
            wallet.pin_hash = Some(hash.clone());
            wallet.pin_attempts = 0;
            wallet.updated_at = now;
            tx.update_wallet(&wallet)?;
            Ok(())
        })
    }

    /// Locks a wallet (operator): it can no longer pay or be paid, and its pending prompts fail
    /// with `wallet_locked`.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`], [`ServiceError::Validation`] (reason),
    /// [`ServiceError::InvalidState`] when already locked, idempotency errors.
    pub fn lock_wallet(
        &self,
        principal: &Principal,
        msisdn: &str,
        reason: &str,
        idem: &Idem,
        render: &dyn Fn(&WalletDetails) -> StoredResponse,
    ) -> Result<IdemOutcome, ServiceError> {
        let msisdn = Self::wallet_number(msisdn)?;
        check_reason(reason)?;
        let mut entered = Entered::new();
        let outcome = self.idempotent(
            idem,
            |tx| {
                entered.clear();
                let now = self.clock.now();
                let mut wallet = tx.lock_wallet(principal.mode, &msisdn)?.ok_or(ServiceError::NotFound)?;
                if wallet.state == WalletState::Locked {
                    return Err(ServiceError::InvalidState("the wallet is already locked".into()));
                }
                wallet.state = WalletState::Locked;
                wallet.lock_reason = Some(reason.trim().to_owned());
                wallet.updated_at = now;
                tx.update_wallet(&wallet)?;
                self.end_pending_prompts(tx, &wallet, ChargeEvent::PayerFailure(FailureReason::WalletLocked), None, now, &mut entered)?;
                self.wallet_view(tx, &wallet, now)
            },
            render,
        )?;
        self.report(&entered);
        Ok(outcome)
    }

    /// Unlocks a wallet (operator) and resets its PIN attempt count.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`], [`ServiceError::Validation`] (reason),
    /// [`ServiceError::InvalidState`] when not locked, idempotency errors.
    pub fn unlock_wallet(
        &self,
        principal: &Principal,
        msisdn: &str,
        reason: &str,
        idem: &Idem,
        render: &dyn Fn(&WalletDetails) -> StoredResponse,
    ) -> Result<IdemOutcome, ServiceError> {
        let msisdn = Self::wallet_number(msisdn)?;
        check_reason(reason)?;
        self.idempotent(
            idem,
            |tx| {
                let now = self.clock.now();
                let mut wallet = tx.lock_wallet(principal.mode, &msisdn)?.ok_or(ServiceError::NotFound)?;
                if wallet.state != WalletState::Locked {
                    return Err(ServiceError::InvalidState("the wallet is not locked".into()));
                }
                wallet.state = WalletState::Active;
                wallet.lock_reason = None;
                wallet.pin_attempts = 0;
                wallet.updated_at = now;
                tx.update_wallet(&wallet)?;
                self.wallet_view(tx, &wallet, now)
            },
            render,
        )
    }

    /// Raises a wallet's KYC tier on an identity document that grants at least that tier.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`], [`ServiceError::Validation`] (tier, ID),
    /// [`ServiceError::InvalidState`] when the tier is not above the current one, idempotency errors.
    #[allow(clippy::too_many_arguments)]
    pub fn raise_kyc(
        &self,
        principal: &Principal,
        msisdn: &str,
        tier: u8,
        id_type: &str,
        id_number: &str,
        idem: &Idem,
        render: &dyn Fn(&WalletDetails) -> StoredResponse,
    ) -> Result<IdemOutcome, ServiceError> {
        let msisdn = Self::wallet_number(msisdn)?;
        let current = read(self.store(), |tx| Ok(tx.wallet(principal.mode, &msisdn)?))?.ok_or(ServiceError::NotFound)?;
        let country = self.wallet_country(&current)?;
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
        self.idempotent(
            idem,
            |tx| {
                let now = self.clock.now();
                let mut wallet = tx.lock_wallet(principal.mode, &msisdn)?.ok_or(ServiceError::NotFound)?;
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
                self.wallet_view(tx, &wallet, now)
            },
            render,
        )
    }

    /// A wallet's statement, oldest first.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`], [`ServiceError::Validation`] for a bad cursor.
    pub fn wallet_statement(
        &self,
        principal: &Principal,
        msisdn: &str,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<(Wallet, Page<StatementLine>), ServiceError> {
        let msisdn = Self::wallet_number(msisdn)?;
        let after = cursor
            .map(|c| {
                c.parse::<i64>()
                    .ok()
                    .filter(|v| *v > 0)
                    .ok_or_else(|| ServiceError::field("cursor", "invalid_cursor", "cursor is not valid"))
            })
            .transpose()?;
        read(self.store(), |tx| {
            let wallet = tx.wallet(principal.mode, &msisdn)?.ok_or(ServiceError::NotFound)?;
            let mut data = tx.account_postings(&wallet.account_id, after, limit + 1)?;
            let has_more = data.len() > limit;
            data.truncate(limit);
            let next_cursor = if has_more { data.last().map(|l| l.seq.to_string()) } else { None };
            Ok((wallet, Page { data, has_more, next_cursor }))
        })
    }
}

fn document_taken() -> ServiceError {
    ServiceError::field("id_number", "already_registered", "this identity document already holds a wallet")
}

/// A lock or unlock reason: 1 to 200 printable characters, not only spaces.
fn check_reason(reason: &str) -> Result<(), ServiceError> {
    let mut errors = Vec::new();
    check_text("reason", reason, 200, false, &mut errors);
    if errors.is_empty() {
        Ok(())
    } else {
        Err(ServiceError::Validation(errors))
    }
}
