//! [`Tx`] on one connection inside a transaction begun by [`crate::DieselStore`].

use std::collections::HashMap;
use std::str::FromStr;

use diesel::dsl::sql;
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Bool, Text};
use malipo_auth::{AccessToken, Credential, Organisation};
use malipo_charges::{Charge, ChargeFilter, ChargeKind};
use malipo_core::{AccountId, ChargeRef, EndpointId, EventId, MinorUnit, Mode, Msisdn, OrgId, Timestamp, TransactionId};
use malipo_idempotency::{IdempotencyKey, IdempotencyRecord, KeyScope};
use malipo_ledger::{
    chain_hash, Account, ChainedJournal, Journal, JournalKind, JournalLine, LedgerError, LedgerSnapshot, Posting, GENESIS_HASH,
};
use malipo_service::{AccountKey, StatementLine, StoreError, TokenRecord, Tx, UssdSession, Wallet};
use malipo_webhooks::{Attempt, Delivery, Endpoint, Event};

use crate::error::{account_error, db_error, Fail};
use crate::models::{
    self, AccountRow, AttemptRow, ChargeRow, CredentialRow, DeliveryRow, EndpointRow, EventRow, JournalRow, KeyRow, NewPosting, OrgRow,
    TokenRow, UssdSessionRow, WalletRow,
};
use crate::schema::{
    access_tokens, accounts, charges, credentials, deliveries, delivery_attempts, events, idempotency_keys, journals, ledger_heads,
    organisations, postings, ussd_sessions, wallets, webhook_endpoints,
};
use crate::DbConnection;

/// Runs the same diesel expression on the concrete connection of either variant, for the few
/// statements (`ON CONFLICT`, `RETURNING`) that diesel cannot build for the multi-backend.
macro_rules! per_backend {
    ($conn:expr, |$c:ident| $body:expr) => {
        match $conn {
            DbConnection::Pg($c) => $body,
            DbConnection::Sqlite($c) => $body,
        }
    };
}

/// The row `query` finds, selected as `$row`, locked for update until the transaction ends, and
/// parsed into `$domain`. SQLite takes no row lock: its writers are serialised by BEGIN
/// IMMEDIATE, so the row cannot change under the transaction.
macro_rules! locked_row {
    ($conn:expr, $query:expr, $row:ty => $domain:ty) => {{
        let query = $query;
        let found = match $conn {
            DbConnection::Pg(c) => query.select(<$row>::as_select()).for_update().first(c).optional(),
            DbConnection::Sqlite(c) => query.select(<$row>::as_select()).first(c).optional(),
        };
        found.map_err(db_error)?.map(<$domain>::try_from).transpose()
    }};
}

/// A posting joined with its journal: id, journal id, account, amount, balance after, created at,
/// journal kind, source reference.
type StatementRow = (i64, String, String, i64, i64, i64, String, String);

/// How many ids go into one `IN (…)` list.
const IN_CHUNK: usize = 500;

/// One transaction's connection.
pub(crate) struct DieselTx<'c> {
    conn: &'c mut DbConnection,
}

impl<'c> DieselTx<'c> {
    pub(crate) fn new(conn: &'c mut DbConnection) -> Self {
        DieselTx { conn }
    }
}

/// `Ok(())` when one row was inserted, [`StoreError::Duplicate`] when a unique constraint kept
/// it out (`INSERT … ON CONFLICT DO NOTHING` inserted nothing). The statement never fails on a
/// conflict, so a PostgreSQL transaction stays usable after a duplicate.
fn inserted(rows: QueryResult<usize>) -> Result<(), StoreError> {
    match rows.map_err(db_error)? {
        0 => Err(StoreError::Duplicate),
        _ => Ok(()),
    }
}

fn limit_i64(limit: usize) -> i64 {
    i64::try_from(limit).unwrap_or(i64::MAX)
}

/// The `kind IN (…)` of `accounts_system_kind_key`, as a literal so that PostgreSQL can use that
/// partial index under a generic plan.
fn system_kind() -> diesel::expression::SqlLiteral<Bool> {
    sql::<Bool>("accounts.kind IN ('revenue', 'issuance', 'sandbox_funding')")
}

/// The condition of the partial indexes `deliveries_due_idx` and
/// `deliveries_pending_endpoint_idx`, as a literal so that both databases can use them.
fn pending_delivery() -> diesel::expression::SqlLiteral<Bool> {
    sql::<Bool>("deliveries.state = 'pending'")
}

impl Tx for DieselTx<'_> {
    // ----- organisations, credentials, tokens -----

    fn insert_org(&mut self, org: &Organisation) -> Result<(), StoreError> {
        let row = OrgRow::from(org);
        inserted(per_backend!(&mut *self.conn, |c| diesel::insert_into(organisations::table)
            .values(&row)
            .on_conflict_do_nothing()
            .execute(c)))
    }

    fn org(&mut self, id: &OrgId) -> Result<Option<Organisation>, StoreError> {
        organisations::table
            .find(id.as_str())
            .select(OrgRow::as_select())
            .first(self.conn)
            .optional()
            .map_err(db_error)?
            .map(Organisation::try_from)
            .transpose()
    }

    fn org_by_name(&mut self, name: &str) -> Result<Option<Organisation>, StoreError> {
        organisations::table
            .filter(organisations::name.eq(name))
            .order((organisations::created_at.asc(), organisations::id.asc()))
            .select(OrgRow::as_select())
            .first(self.conn)
            .optional()
            .map_err(db_error)?
            .map(Organisation::try_from)
            .transpose()
    }

    fn insert_credential(&mut self, credential: &Credential) -> Result<(), StoreError> {
        let row = CredentialRow::from(credential);
        inserted(per_backend!(&mut *self.conn, |c| diesel::insert_into(credentials::table)
            .values(&row)
            .on_conflict_do_nothing()
            .execute(c)))
    }

    fn credential(&mut self, client_id: &str) -> Result<Option<Credential>, StoreError> {
        credentials::table
            .find(client_id)
            .select(CredentialRow::as_select())
            .first(self.conn)
            .optional()
            .map_err(db_error)?
            .map(Credential::try_from)
            .transpose()
    }

    fn revoke_credential(&mut self, client_id: &str, now: Timestamp) -> Result<bool, StoreError> {
        let revoked =
            diesel::update(credentials::table.filter(credentials::client_id.eq(client_id)).filter(credentials::revoked_at.is_null()))
                .set(credentials::revoked_at.eq(now.as_micros()))
                .execute(self.conn)
                .map_err(db_error)?;
        if revoked == 0 {
            return Ok(false);
        }
        diesel::update(access_tokens::table.filter(access_tokens::client_id.eq(client_id)).filter(access_tokens::revoked_at.is_null()))
            .set(access_tokens::revoked_at.eq(now.as_micros()))
            .execute(self.conn)
            .map_err(db_error)?;
        Ok(true)
    }

    fn insert_token(&mut self, token: &AccessToken) -> Result<(), StoreError> {
        let row = TokenRow::from(token);
        inserted(per_backend!(&mut *self.conn, |c| diesel::insert_into(access_tokens::table)
            .values(&row)
            .on_conflict_do_nothing()
            .execute(c)))
    }

    fn token(&mut self, digest: &str) -> Result<Option<TokenRecord>, StoreError> {
        let found: Option<(TokenRow, OrgRow, Option<i64>)> = access_tokens::table
            .inner_join(credentials::table)
            .inner_join(organisations::table.on(organisations::id.eq(access_tokens::org_id)))
            .filter(access_tokens::digest.eq(digest))
            .select((TokenRow::as_select(), OrgRow::as_select(), credentials::revoked_at))
            .first(self.conn)
            .optional()
            .map_err(db_error)?;
        found
            .map(|(token, org, credential_revoked_at)| {
                Ok(TokenRecord {
                    token: AccessToken::try_from(token)?,
                    org: Organisation::try_from(org)?,
                    credential_revoked: credential_revoked_at.is_some(),
                })
            })
            .transpose()
    }

    fn revoke_token(&mut self, digest: &str, client_id: &str, now: Timestamp) -> Result<bool, StoreError> {
        let mine = access_tokens::table.filter(access_tokens::digest.eq(digest)).filter(access_tokens::client_id.eq(client_id));
        let revoked = diesel::update(mine.filter(access_tokens::revoked_at.is_null()))
            .set(access_tokens::revoked_at.eq(now.as_micros()))
            .execute(self.conn)
            .map_err(db_error)?;
        if revoked > 0 {
            return Ok(true);
        }
        // Already revoked: still this client's token (revocation is idempotent).
        diesel::select(diesel::dsl::exists(mine)).get_result(self.conn).map_err(db_error)
    }

    // ----- accounts and the ledger -----

    fn insert_account(&mut self, account: &Account) -> Result<(), StoreError> {
        let row = AccountRow::from(account);
        inserted(per_backend!(&mut *self.conn, |c| diesel::insert_into(accounts::table).values(&row).on_conflict_do_nothing().execute(c)))
    }

    fn account(&mut self, id: &AccountId) -> Result<Option<Account>, StoreError> {
        accounts::table
            .find(id.as_str())
            .select(AccountRow::as_select())
            .first(self.conn)
            .optional()
            .map_err(db_error)?
            .map(Account::try_from)
            .transpose()
    }

    fn find_account(&mut self, key: &AccountKey) -> Result<Option<Account>, StoreError> {
        let found = match key {
            AccountKey::Org { org_id, mode, kind } => accounts::table
                .filter(accounts::org_id.eq(org_id.as_str()))
                .filter(accounts::mode.eq(mode.as_str()))
                .filter(accounts::kind.eq(kind.as_str()))
                .select(AccountRow::as_select())
                .first(self.conn)
                .optional(),
            AccountKey::System { mode, currency, kind } => accounts::table
                .filter(accounts::mode.eq(mode.as_str()))
                .filter(accounts::currency.eq(currency.as_str()))
                .filter(accounts::kind.eq(kind.as_str()))
                .filter(system_kind())
                .select(AccountRow::as_select())
                .first(self.conn)
                .optional(),
        };
        found.map_err(db_error)?.map(Account::try_from).transpose()
    }

    fn org_accounts(&mut self, org_id: &OrgId, mode: Mode) -> Result<Vec<Account>, StoreError> {
        accounts::table
            .filter(accounts::org_id.eq(org_id.as_str()))
            .filter(accounts::mode.eq(mode.as_str()))
            .order((accounts::created_at.asc(), accounts::id.asc()))
            .select(AccountRow::as_select())
            .load(self.conn)
            .map_err(db_error)?
            .into_iter()
            .map(Account::try_from)
            .collect()
    }

    fn hold(&mut self, account: &AccountId, amount: MinorUnit) -> Result<(), StoreError> {
        let amt = amount.get();
        let updated = diesel::update(
            accounts::table
                .filter(accounts::id.eq(account.as_str()))
                .filter(accounts::allow_negative.or((accounts::balance - accounts::held).ge(amt))),
        )
        .set(accounts::held.eq(accounts::held + amt))
        .execute(self.conn)
        .map_err(|e| account_error(e, account))?;
        if updated > 0 {
            return Ok(());
        }
        if account_exists(self.conn, account)? {
            Err(LedgerError::InsufficientFunds(account.clone()).into())
        } else {
            Err(LedgerError::UnknownAccount(account.clone()).into())
        }
    }

    fn release(&mut self, account: &AccountId, amount: MinorUnit) -> Result<(), StoreError> {
        let amt = amount.get();
        let updated = diesel::update(accounts::table.filter(accounts::id.eq(account.as_str())).filter(accounts::held.ge(amt)))
            .set(accounts::held.eq(accounts::held - amt))
            .execute(self.conn)
            .map_err(|e| account_error(e, account))?;
        if updated > 0 {
            return Ok(());
        }
        if account_exists(self.conn, account)? {
            Err(LedgerError::ReleaseExceedsHold(account.clone()).into())
        } else {
            Err(LedgerError::UnknownAccount(account.clone()).into())
        }
    }

    fn post_journal(&mut self, journal: &Journal) -> Result<(), StoreError> {
        journal.check_balanced()?;
        // In a savepoint: a refused line undoes the lines before it, and the caller's
        // transaction stays usable (e.g. to record the failure).
        self.conn.transaction::<_, Fail, _>(|conn| post_journal(conn, journal)).map_err(StoreError::from)
    }

    fn pending_credits(&mut self, account: &AccountId) -> Result<MinorUnit, StoreError> {
        let rows: Vec<(i64, i64)> = charges::table
            .filter(charges::merchant_account.eq(account.as_str()))
            .filter(sql::<Bool>("charges.state = 'authorised'"))
            .filter(charges::kind.eq(ChargeKind::Charge.as_str()))
            .select((charges::amount, charges::fee))
            .load(self.conn)
            .map_err(db_error)?;
        let mut total = MinorUnit::ZERO;
        for (amount, fee) in rows {
            total = total.checked_add(MinorUnit::new(amount - fee)).map_err(|_| StoreError::Ledger(LedgerError::Overflow))?;
        }
        Ok(total)
    }

    fn debits_since(&mut self, account: &AccountId, since: Timestamp) -> Result<MinorUnit, StoreError> {
        let amounts: Vec<i64> = postings::table
            .inner_join(journals::table)
            .filter(postings::account_id.eq(account.as_str()))
            .filter(postings::amount.lt(0))
            .filter(postings::created_at.ge(since.as_micros()))
            .filter(journals::kind.ne(JournalKind::SandboxFunding.as_str()))
            .select(postings::amount)
            .load(self.conn)
            .map_err(db_error)?;
        let mut total = MinorUnit::ZERO;
        for a in amounts {
            total = total.checked_sub(MinorUnit::new(a)).map_err(|_| StoreError::Ledger(LedgerError::Overflow))?;
        }
        Ok(total)
    }

    fn account_postings(&mut self, account: &AccountId, after: Option<i64>, limit: usize) -> Result<Vec<StatementLine>, StoreError> {
        let rows: Vec<StatementRow> = postings::table
            .inner_join(journals::table)
            .filter(postings::account_id.eq(account.as_str()))
            .filter(postings::id.gt(after.unwrap_or(0)))
            .order(postings::id.asc())
            .limit(limit_i64(limit))
            .select((
                postings::id,
                postings::journal_id,
                postings::account_id,
                postings::amount,
                postings::balance_after,
                postings::created_at,
                journals::kind,
                journals::source_ref,
            ))
            .load(self.conn)
            .map_err(db_error)?;
        rows.into_iter()
            .map(|(seq, journal_id, account, amount, balance_after, created_at, kind, source_ref)| {
                Ok(StatementLine {
                    seq,
                    posting: Posting {
                        journal_id: TransactionId::from_trusted(journal_id),
                        account: AccountId::from_trusted(account),
                        amount: MinorUnit::new(amount),
                        balance_after: MinorUnit::new(balance_after),
                        kind: JournalKind::from_str(&kind)
                            .map_err(|_| StoreError::Other(format!("stored journal kind `{kind}` does not parse")))?,
                        source_ref,
                        created_at: Timestamp::from_micros(created_at),
                    },
                })
            })
            .collect()
    }

    fn ledger_snapshot(&mut self, mode: Option<Mode>) -> Result<LedgerSnapshot, StoreError> {
        ledger_snapshot(self.conn, mode).map_err(StoreError::from)
    }

    // ----- wallets -----

    fn insert_wallet(&mut self, wallet: &Wallet) -> Result<(), StoreError> {
        let row = WalletRow::from(wallet);
        inserted(per_backend!(&mut *self.conn, |c| diesel::insert_into(wallets::table).values(&row).on_conflict_do_nothing().execute(c)))
    }

    fn wallet(&mut self, mode: Mode, msisdn: &Msisdn) -> Result<Option<Wallet>, StoreError> {
        wallets::table
            .find((mode.as_str(), msisdn.as_str()))
            .select(WalletRow::as_select())
            .first(self.conn)
            .optional()
            .map_err(db_error)?
            .map(Wallet::try_from)
            .transpose()
    }

    fn wallet_by_document(&mut self, mode: Mode, country: &str, id_type: &str, id_number: &str) -> Result<Option<Wallet>, StoreError> {
        wallets::table
            .filter(wallets::mode.eq(mode.as_str()))
            .filter(wallets::country.eq(country))
            .filter(wallets::id_type.eq(id_type))
            .filter(wallets::id_number.eq(id_number))
            .select(WalletRow::as_select())
            .first(self.conn)
            .optional()
            .map_err(db_error)?
            .map(Wallet::try_from)
            .transpose()
    }

    fn lock_wallet(&mut self, mode: Mode, msisdn: &Msisdn) -> Result<Option<Wallet>, StoreError> {
        locked_row!(&mut *self.conn, wallets::table.find((mode.as_str(), msisdn.as_str())), WalletRow => Wallet)
    }

    fn update_wallet(&mut self, wallet: &Wallet) -> Result<(), StoreError> {
        let row = WalletRow::from(wallet);
        let updated = diesel::update(wallets::table.find((row.mode.as_str(), row.msisdn.as_str())))
            .set((
                wallets::state.eq(&row.state),
                wallets::kyc_tier.eq(row.kyc_tier),
                wallets::pin_hash.eq(&row.pin_hash),
                wallets::pin_attempts.eq(row.pin_attempts),
                wallets::first_name.eq(&row.first_name),
                wallets::last_name.eq(&row.last_name),
                wallets::id_type.eq(&row.id_type),
                wallets::id_number.eq(&row.id_number),
                wallets::date_of_birth.eq(&row.date_of_birth),
                wallets::lock_reason.eq(&row.lock_reason),
                wallets::updated_at.eq(row.updated_at),
            ))
            .execute(self.conn)
            .map_err(db_error)?;
        if updated == 0 {
            return Err(StoreError::Other(format!("no {} wallet {} to update", row.mode, row.msisdn)));
        }
        Ok(())
    }

    // ----- charges -----

    fn insert_charge(&mut self, charge: &Charge) -> Result<(), StoreError> {
        let row = ChargeRow::from(charge);
        inserted(per_backend!(&mut *self.conn, |c| diesel::insert_into(charges::table).values(&row).on_conflict_do_nothing().execute(c)))
    }

    fn charge(&mut self, org_id: &OrgId, mode: Mode, id: &ChargeRef) -> Result<Option<Charge>, StoreError> {
        charges::table
            .filter(charges::id.eq(id.as_str()))
            .filter(charges::org_id.eq(org_id.as_str()))
            .filter(charges::mode.eq(mode.as_str()))
            .select(ChargeRow::as_select())
            .first(self.conn)
            .optional()
            .map_err(db_error)?
            .map(Charge::try_from)
            .transpose()
    }

    fn latest_charge_by_reference(&mut self, org_id: &OrgId, mode: Mode, reference: &str) -> Result<Option<Charge>, StoreError> {
        charges::table
            .filter(charges::org_id.eq(org_id.as_str()))
            .filter(charges::mode.eq(mode.as_str()))
            .filter(charges::reference.eq(reference))
            .filter(charges::kind.eq(ChargeKind::Charge.as_str()))
            .order((charges::created_at.desc(), charges::id.desc()))
            .select(ChargeRow::as_select())
            .first(self.conn)
            .optional()
            .map_err(db_error)?
            .map(Charge::try_from)
            .transpose()
    }

    fn lock_charge(&mut self, id: &ChargeRef) -> Result<Option<Charge>, StoreError> {
        locked_row!(&mut *self.conn, charges::table.find(id.as_str()), ChargeRow => Charge)
    }

    fn update_charge(&mut self, charge: &Charge) -> Result<(), StoreError> {
        let row = ChargeRow::from(charge);
        let updated = diesel::update(charges::table.find(row.id.as_str()))
            .set((
                charges::state.eq(&row.state),
                charges::failure_reason.eq(&row.failure_reason),
                charges::transaction_id.eq(&row.transaction_id),
                charges::payer_account.eq(&row.payer_account),
                charges::amount_reversed.eq(row.amount_reversed),
                charges::updated_at.eq(row.updated_at),
                charges::completed_at.eq(row.completed_at),
                charges::next_action_at.eq(row.next_action_at),
            ))
            .execute(self.conn)
            .map_err(db_error)?;
        if updated == 0 {
            return Err(StoreError::Other(format!("no charge {} to update", row.id)));
        }
        Ok(())
    }

    fn list_charges(
        &mut self,
        org_id: &OrgId,
        mode: Mode,
        filter: &ChargeFilter,
        before: Option<&ChargeRef>,
        limit: usize,
    ) -> Result<Vec<Charge>, StoreError> {
        let mut query = charges::table
            .filter(charges::org_id.eq(org_id.as_str()))
            .filter(charges::mode.eq(mode.as_str()))
            .filter(charges::kind.eq(ChargeKind::Charge.as_str()))
            .into_boxed();
        if let Some(state) = filter.state {
            query = query.filter(charges::state.eq(state.as_str()));
        }
        if let Some(from) = filter.from {
            query = query.filter(charges::created_at.ge(from.as_micros()));
        }
        if let Some(to) = filter.to {
            query = query.filter(charges::created_at.lt(to.as_micros()));
        }
        if let Some(reference) = &filter.reference {
            query = query.filter(charges::reference.eq(reference.as_str()));
        }
        if let Some(before) = before {
            query = query.filter(charges::id.lt(before.as_str()));
        }
        query
            .order(charges::id.desc())
            .limit(limit_i64(limit))
            .select(ChargeRow::as_select())
            .load(self.conn)
            .map_err(db_error)?
            .into_iter()
            .map(Charge::try_from)
            .collect()
    }

    fn claim_due_charges(&mut self, now: Timestamp, lease_until: Timestamp, limit: usize) -> Result<Vec<ChargeRef>, StoreError> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let mut claimed: Vec<(i64, String)> = match &mut *self.conn {
            DbConnection::Pg(c) => {
                // Rows another claimer has locked are skipped, not waited for; a row another
                // claimer has just leased fails `next_action_at <= now` when re-checked.
                let rows: Vec<ClaimedRow> = diesel::sql_query(
                    "WITH due AS ( \
                         SELECT id, next_action_at FROM charges \
                          WHERE next_action_at <= $1 \
                          ORDER BY next_action_at, id \
                          LIMIT $3 \
                            FOR UPDATE SKIP LOCKED) \
                     UPDATE charges SET next_action_at = $2 \
                       FROM due \
                      WHERE charges.id = due.id \
                     RETURNING charges.id AS id, due.next_action_at AS due_at",
                )
                .bind::<BigInt, _>(now.as_micros())
                .bind::<BigInt, _>(lease_until.as_micros())
                .bind::<BigInt, _>(limit_i64(limit))
                .load(c)
                .map_err(db_error)?;
                rows.into_iter().map(|r| (r.due_at, r.id)).collect()
            }
            DbConnection::Sqlite(c) => {
                // Writers are serialised by BEGIN IMMEDIATE: select, then lease.
                let due: Vec<(String, Option<i64>)> = charges::table
                    .filter(charges::next_action_at.le(now.as_micros()))
                    .order((charges::next_action_at.asc(), charges::id.asc()))
                    .limit(limit_i64(limit))
                    .select((charges::id, charges::next_action_at))
                    .load(c)
                    .map_err(db_error)?;
                let ids: Vec<&str> = due.iter().map(|(id, _)| id.as_str()).collect();
                for chunk in ids.chunks(IN_CHUNK) {
                    diesel::update(charges::table.filter(charges::id.eq_any(chunk)))
                        .set(charges::next_action_at.eq(lease_until.as_micros()))
                        .execute(c)
                        .map_err(db_error)?;
                }
                due.into_iter().map(|(id, at)| (at.unwrap_or_default(), id)).collect()
            }
        };
        claimed.sort();
        Ok(claimed.into_iter().map(|(_, id)| ChargeRef::from_trusted(id)).collect())
    }

    fn pending_charges_of_payer(&mut self, mode: Mode, msisdn: &Msisdn) -> Result<Vec<Charge>, StoreError> {
        let rows: Vec<ChargeRow> = charges::table
            .filter(charges::mode.eq(mode.as_str()))
            .filter(charges::payer_msisdn.eq(msisdn.as_str()))
            .filter(sql::<Bool>("charges.state = 'pending'"))
            .order((charges::created_at.asc(), charges::id.asc()))
            .select(ChargeRow::as_select())
            .load(self.conn)
            .map_err(db_error)?;
        rows.into_iter().map(Charge::try_from).collect()
    }

    // ----- USSD sessions -----

    fn ussd_session(&mut self, org_id: &OrgId, mode: Mode, session_id: &str) -> Result<Option<UssdSession>, StoreError> {
        locked_row!(&mut *self.conn, ussd_sessions::table.find((org_id.as_str(), mode.as_str(), session_id)), UssdSessionRow => UssdSession)
    }

    fn put_ussd_session(&mut self, session: &UssdSession) -> Result<(), StoreError> {
        let row = UssdSessionRow::from(session);
        per_backend!(&mut *self.conn, |c| diesel::insert_into(ussd_sessions::table)
            .values(&row)
            .on_conflict((ussd_sessions::org_id, ussd_sessions::mode, ussd_sessions::session_id))
            .do_update()
            .set(&row)
            .execute(c))
        .map_err(db_error)?;
        Ok(())
    }

    fn purge_ussd_sessions(&mut self, before: Timestamp) -> Result<u64, StoreError> {
        let deleted = diesel::delete(ussd_sessions::table.filter(ussd_sessions::updated_at.lt(before.as_micros())))
            .execute(self.conn)
            .map_err(db_error)?;
        Ok(u64::try_from(deleted).unwrap_or(u64::MAX))
    }

    // ----- idempotency -----

    fn idempotency_record(&mut self, scope: &KeyScope, key: &IdempotencyKey) -> Result<Option<IdempotencyRecord>, StoreError> {
        idempotency_keys::table
            .find((scope.org_id.as_str(), scope.mode.as_str(), scope.operation.as_str(), key.as_str()))
            .select(KeyRow::as_select())
            .first(self.conn)
            .optional()
            .map_err(db_error)?
            .map(IdempotencyRecord::try_from)
            .transpose()
    }

    fn insert_key(&mut self, scope: &KeyScope, key: &IdempotencyKey, record: &IdempotencyRecord) -> Result<bool, StoreError> {
        let row = KeyRow {
            org_id: scope.org_id.as_str().to_owned(),
            mode: scope.mode.as_str().to_owned(),
            operation: scope.operation.clone(),
            key: key.as_str().to_owned(),
            fingerprint: record.fingerprint.as_str().to_owned(),
            status: record.response.as_ref().map(|r| i32::from(r.status)),
            response_body: record.response.as_ref().map(|r| r.body.clone()),
            created_at: record.created_at.as_micros(),
        };
        // On PostgreSQL this waits for a concurrent uncommitted insert of the same key.
        let inserted = per_backend!(&mut *self.conn, |c| diesel::insert_into(idempotency_keys::table)
            .values(&row)
            .on_conflict_do_nothing()
            .execute(c))
        .map_err(db_error)?;
        Ok(inserted > 0)
    }

    fn purge_keys(&mut self, before: Timestamp) -> Result<u64, StoreError> {
        let deleted = diesel::delete(idempotency_keys::table.filter(idempotency_keys::created_at.lt(before.as_micros())))
            .execute(self.conn)
            .map_err(db_error)?;
        Ok(u64::try_from(deleted).unwrap_or(u64::MAX))
    }

    // ----- webhooks: endpoints, the event outbox, deliveries -----

    fn insert_endpoint(&mut self, endpoint: &Endpoint) -> Result<(), StoreError> {
        let row = EndpointRow::from(endpoint);
        inserted(per_backend!(&mut *self.conn, |c| diesel::insert_into(webhook_endpoints::table)
            .values(&row)
            .on_conflict_do_nothing()
            .execute(c)))
    }

    fn endpoint(&mut self, id: &EndpointId) -> Result<Option<Endpoint>, StoreError> {
        webhook_endpoints::table
            .find(id.as_str())
            .select(EndpointRow::as_select())
            .first(self.conn)
            .optional()
            .map_err(db_error)?
            .map(Endpoint::try_from)
            .transpose()
    }

    fn list_endpoints(&mut self, org_id: &OrgId, mode: Mode) -> Result<Vec<Endpoint>, StoreError> {
        webhook_endpoints::table
            .filter(webhook_endpoints::org_id.eq(org_id.as_str()))
            .filter(webhook_endpoints::mode.eq(mode.as_str()))
            .filter(webhook_endpoints::deleted_at.is_null())
            .order((webhook_endpoints::created_at.asc(), webhook_endpoints::id.asc()))
            .select(EndpointRow::as_select())
            .load(self.conn)
            .map_err(db_error)?
            .into_iter()
            .map(Endpoint::try_from)
            .collect()
    }

    fn update_endpoint(&mut self, endpoint: &Endpoint) -> Result<(), StoreError> {
        let row = EndpointRow::from(endpoint);
        let updated = diesel::update(webhook_endpoints::table.find(row.id.as_str()))
            .set((
                webhook_endpoints::url.eq(&row.url),
                webhook_endpoints::description.eq(&row.description),
                webhook_endpoints::events.eq(&row.events),
                webhook_endpoints::enabled.eq(row.enabled),
                webhook_endpoints::secret.eq(&row.secret),
                webhook_endpoints::previous_secret.eq(&row.previous_secret),
                webhook_endpoints::previous_secret_expires_at.eq(row.previous_secret_expires_at),
                webhook_endpoints::disabled_reason.eq(&row.disabled_reason),
                webhook_endpoints::failing_since.eq(row.failing_since),
                webhook_endpoints::deleted_at.eq(row.deleted_at),
                webhook_endpoints::updated_at.eq(row.updated_at),
            ))
            .execute(self.conn)
            .map_err(db_error)?;
        if updated == 0 {
            return Err(StoreError::Other(format!("no webhook endpoint {} to update", row.id)));
        }
        Ok(())
    }

    fn insert_event(&mut self, event: &Event) -> Result<(), StoreError> {
        let row = EventRow::from(event);
        inserted(per_backend!(&mut *self.conn, |c| diesel::insert_into(events::table).values(&row).on_conflict_do_nothing().execute(c)))
    }

    fn event(&mut self, org_id: &OrgId, mode: Mode, id: &EventId) -> Result<Option<Event>, StoreError> {
        events::table
            .filter(events::id.eq(id.as_str()))
            .filter(events::org_id.eq(org_id.as_str()))
            .filter(events::mode.eq(mode.as_str()))
            .select(EventRow::as_select())
            .first(self.conn)
            .optional()
            .map_err(db_error)?
            .map(Event::try_from)
            .transpose()
    }

    fn list_events(
        &mut self,
        org_id: &OrgId,
        mode: Mode,
        kind: Option<&str>,
        after: Option<&EventId>,
        limit: usize,
    ) -> Result<Vec<Event>, StoreError> {
        let mut query = events::table.filter(events::org_id.eq(org_id.as_str())).filter(events::mode.eq(mode.as_str())).into_boxed();
        if let Some(kind) = kind {
            query = query.filter(events::kind.eq(kind));
        }
        if let Some(after) = after {
            query = query.filter(events::id.gt(after.as_str()));
        }
        query
            .order(events::id.asc())
            .limit(limit_i64(limit))
            .select(EventRow::as_select())
            .load(self.conn)
            .map_err(db_error)?
            .into_iter()
            .map(Event::try_from)
            .collect()
    }

    fn insert_delivery(&mut self, delivery: &Delivery) -> Result<(), StoreError> {
        let row = DeliveryRow::try_from(delivery)?;
        inserted(per_backend!(&mut *self.conn, |c| diesel::insert_into(deliveries::table).values(&row).on_conflict_do_nothing().execute(c)))
    }

    fn lock_delivery(&mut self, id: &str) -> Result<Option<Delivery>, StoreError> {
        locked_row!(&mut *self.conn, deliveries::table.find(id), DeliveryRow => Delivery)
    }

    fn update_delivery(&mut self, delivery: &Delivery) -> Result<(), StoreError> {
        let row = DeliveryRow::try_from(delivery)?;
        let updated = diesel::update(deliveries::table.find(row.id.as_str()))
            .set((
                deliveries::state.eq(&row.state),
                deliveries::attempts.eq(row.attempts),
                deliveries::next_attempt_at.eq(row.next_attempt_at),
                deliveries::updated_at.eq(row.updated_at),
            ))
            .execute(self.conn)
            .map_err(db_error)?;
        if updated == 0 {
            return Err(StoreError::Other(format!("no delivery {} to update", row.id)));
        }
        Ok(())
    }

    fn claim_due_deliveries(&mut self, now: Timestamp, lease_until: Timestamp, limit: usize) -> Result<Vec<String>, StoreError> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let mut claimed: Vec<(i64, String)> = match &mut *self.conn {
            DbConnection::Pg(c) => {
                // As `claim_due_charges`: rows another claimer has locked are skipped, and a row
                // another claimer has just leased fails `next_attempt_at <= now` when re-checked.
                let rows: Vec<ClaimedRow> = diesel::sql_query(
                    "WITH due AS ( \
                         SELECT id, next_attempt_at FROM deliveries \
                          WHERE state = 'pending' AND next_attempt_at <= $1 \
                          ORDER BY next_attempt_at, id \
                          LIMIT $3 \
                            FOR UPDATE SKIP LOCKED) \
                     UPDATE deliveries SET next_attempt_at = $2 \
                       FROM due \
                      WHERE deliveries.id = due.id \
                     RETURNING deliveries.id AS id, due.next_attempt_at AS due_at",
                )
                .bind::<BigInt, _>(now.as_micros())
                .bind::<BigInt, _>(lease_until.as_micros())
                .bind::<BigInt, _>(limit_i64(limit))
                .load(c)
                .map_err(db_error)?;
                rows.into_iter().map(|r| (r.due_at, r.id)).collect()
            }
            DbConnection::Sqlite(c) => {
                // Writers are serialised by BEGIN IMMEDIATE: select, then lease.
                let due: Vec<(String, Option<i64>)> = deliveries::table
                    .filter(pending_delivery())
                    .filter(deliveries::next_attempt_at.le(now.as_micros()))
                    .order((deliveries::next_attempt_at.asc(), deliveries::id.asc()))
                    .limit(limit_i64(limit))
                    .select((deliveries::id, deliveries::next_attempt_at))
                    .load(c)
                    .map_err(db_error)?;
                let ids: Vec<&str> = due.iter().map(|(id, _)| id.as_str()).collect();
                for chunk in ids.chunks(IN_CHUNK) {
                    diesel::update(deliveries::table.filter(deliveries::id.eq_any(chunk)))
                        .set(deliveries::next_attempt_at.eq(lease_until.as_micros()))
                        .execute(c)
                        .map_err(db_error)?;
                }
                due.into_iter().map(|(id, at)| (at.unwrap_or_default(), id)).collect()
            }
        };
        claimed.sort();
        Ok(claimed.into_iter().map(|(_, id)| id).collect())
    }

    fn deliveries_of_event(&mut self, event_id: &EventId) -> Result<Vec<Delivery>, StoreError> {
        deliveries::table
            .filter(deliveries::event_id.eq(event_id.as_str()))
            .order((deliveries::created_at.asc(), deliveries::id.asc()))
            .select(DeliveryRow::as_select())
            .load(self.conn)
            .map_err(db_error)?
            .into_iter()
            .map(Delivery::try_from)
            .collect()
    }

    fn pending_deliveries_of_endpoint(&mut self, endpoint_id: &EndpointId) -> Result<Vec<Delivery>, StoreError> {
        deliveries::table
            .filter(deliveries::endpoint_id.eq(endpoint_id.as_str()))
            .filter(pending_delivery())
            .order((deliveries::created_at.asc(), deliveries::id.asc()))
            .select(DeliveryRow::as_select())
            .load(self.conn)
            .map_err(db_error)?
            .into_iter()
            .map(Delivery::try_from)
            .collect()
    }

    fn insert_attempt(&mut self, attempt: &Attempt) -> Result<(), StoreError> {
        let row = AttemptRow::try_from(attempt)?;
        diesel::insert_into(delivery_attempts::table).values(&row).execute(self.conn).map_err(db_error)?;
        Ok(())
    }

    fn attempts_of_event(&mut self, event_id: &EventId) -> Result<Vec<Attempt>, StoreError> {
        delivery_attempts::table
            .filter(delivery_attempts::event_id.eq(event_id.as_str()))
            .order(delivery_attempts::id.asc())
            .select(AttemptRow::as_select())
            .load(self.conn)
            .map_err(db_error)?
            .into_iter()
            .map(Attempt::try_from)
            .collect()
    }

    fn purge_events(&mut self, before: Timestamp) -> Result<u64, StoreError> {
        // A chunk of events at a time: their attempts, then their deliveries, then the events
        // (the foreign keys allow no other order).
        let mut purged: u64 = 0;
        loop {
            let ids: Vec<String> = events::table
                .filter(events::created_at.lt(before.as_micros()))
                .select(events::id)
                .limit(limit_i64(IN_CHUNK))
                .load(self.conn)
                .map_err(db_error)?;
            if ids.is_empty() {
                return Ok(purged);
            }
            let delivery_ids: Vec<String> =
                deliveries::table.filter(deliveries::event_id.eq_any(&ids)).select(deliveries::id).load(self.conn).map_err(db_error)?;
            diesel::delete(delivery_attempts::table.filter(delivery_attempts::event_id.eq_any(&ids)))
                .execute(self.conn)
                .map_err(db_error)?;
            for chunk in delivery_ids.chunks(IN_CHUNK) {
                // Attempts naming another event than their delivery's would still block the delete.
                diesel::delete(delivery_attempts::table.filter(delivery_attempts::delivery_id.eq_any(chunk)))
                    .execute(self.conn)
                    .map_err(db_error)?;
                diesel::delete(deliveries::table.filter(deliveries::id.eq_any(chunk))).execute(self.conn).map_err(db_error)?;
            }
            let deleted = diesel::delete(events::table.filter(events::id.eq_any(&ids))).execute(self.conn).map_err(db_error)?;
            purged = purged.saturating_add(u64::try_from(deleted).unwrap_or(u64::MAX));
        }
    }
}

/// A row of the PostgreSQL claim query.
#[derive(QueryableByName)]
struct ClaimedRow {
    #[diesel(sql_type = Text)]
    id: String,
    #[diesel(sql_type = BigInt)]
    due_at: i64,
}

fn account_exists(conn: &mut DbConnection, id: &AccountId) -> Result<bool, StoreError> {
    diesel::select(diesel::dsl::exists(accounts::table.find(id.as_str()))).get_result(conn).map_err(db_error)
}

/// Posts a checked journal (inside a savepoint).
fn post_journal(conn: &mut DbConnection, journal: &Journal) -> Result<(), Fail> {
    let mode = journal.mode.as_str();
    let currency = journal.currency.as_str();

    // Lines in descending account order, so that concurrent postings lock accounts in one order
    // (a stable sort keeps each account's own lines in journal order). Ids are time-ordered, so
    // the platform's shared accounts (revenue, issuance, sandbox funding), opened first and
    // touched by many journals, are locked last and held the shortest time.
    let mut order: Vec<usize> = (0..journal.lines.len()).collect();
    order.sort_by(|&a, &b| journal.lines[b].account.cmp(&journal.lines[a].account));
    let mut balance_after = vec![0_i64; journal.lines.len()];
    for i in order {
        let line = &journal.lines[i];
        let amount = line.amount.get();
        // The rule of `Journal::apply_line`: same ledger, and an account that may not go
        // negative never ends below what it holds.
        let target = accounts::table
            .filter(accounts::id.eq(line.account.as_str()))
            .filter(accounts::mode.eq(mode))
            .filter(accounts::currency.eq(currency))
            .filter(accounts::allow_negative.or((accounts::balance + amount).ge(accounts::held)));
        let set = accounts::balance.eq(accounts::balance + amount);
        let balance: Option<i64> = match &mut *conn {
            DbConnection::Pg(c) => diesel::update(target).set(set).returning(accounts::balance).get_result(c).optional(),
            DbConnection::Sqlite(c) => match diesel::update(target).set(set).execute(c) {
                Ok(0) => Ok(None),
                Ok(_) => accounts::table.find(line.account.as_str()).select(accounts::balance).first(c).map(Some),
                Err(e) => Err(e),
            },
        }
        .map_err(|e| account_error(e, &line.account))?;
        match balance {
            Some(b) => balance_after[i] = b,
            None => return Err(refused_line(conn, journal, &line.account)?.into()),
        }
    }

    // Postings before their journal (the foreign key is checked at commit): the ledger head,
    // which every journal of this ledger locks, is taken by the last statements, so it is held
    // for as short a time as possible.
    let postings = journal
        .lines
        .iter()
        .enumerate()
        .map(|(i, line)| {
            Ok(NewPosting {
                journal_id: journal.id.as_str(),
                line_no: i32::try_from(i).map_err(|_| StoreError::Other("too many journal lines".into()))?,
                account_id: line.account.as_str(),
                amount: line.amount.get(),
                balance_after: balance_after[i],
                created_at: journal.created_at.as_micros(),
            })
        })
        .collect::<Result<Vec<_>, StoreError>>()?;
    per_backend!(&mut *conn, |c| diesel::insert_into(postings::table).values(&postings).execute(c))?;

    let (prev_seq, prev_hash) = lock_ledger_head(conn, mode, currency)?;
    let seq = prev_seq + 1;
    let hash = chain_hash(&prev_hash, seq, journal);
    diesel::update(ledger_heads::table.find((mode, currency)))
        .set((ledger_heads::seq.eq(seq), ledger_heads::hash.eq(&hash)))
        .execute(conn)?;
    let row = JournalRow {
        id: journal.id.as_str().to_owned(),
        mode: mode.to_owned(),
        currency: currency.to_owned(),
        kind: journal.kind.as_str().to_owned(),
        source_ref: journal.source_ref.clone(),
        created_at: journal.created_at.as_micros(),
        seq,
        prev_hash,
        hash,
    };
    diesel::insert_into(journals::table).values(&row).execute(conn)?;
    Ok(())
}

/// Why the conditional update of a line changed nothing.
fn refused_line(conn: &mut DbConnection, journal: &Journal, account: &AccountId) -> Result<LedgerError, Fail> {
    let found: Option<(String, String)> =
        accounts::table.find(account.as_str()).select((accounts::mode, accounts::currency)).first(conn).optional()?;
    Ok(match found {
        None => LedgerError::UnknownAccount(account.clone()),
        Some((mode, currency)) if mode != journal.mode.as_str() || currency != journal.currency.as_str() => {
            LedgerError::Mismatch(account.clone())
        }
        Some(_) => LedgerError::InsufficientFunds(account.clone()),
    })
}

/// Reads a ledger's chain head, locked until the transaction ends (PostgreSQL `FOR UPDATE`;
/// SQLite writers are serialised anyway), creating it at the genesis if absent.
fn lock_ledger_head(conn: &mut DbConnection, mode: &str, currency: &str) -> Result<(i64, String), Fail> {
    for _ in 0..2 {
        let query = ledger_heads::table.find((mode, currency)).select((ledger_heads::seq, ledger_heads::hash));
        let head: Option<(i64, String)> = match &mut *conn {
            DbConnection::Pg(c) => query.for_update().first(c).optional()?,
            DbConnection::Sqlite(c) => query.first(c).optional()?,
        };
        if let Some(head) = head {
            return Ok(head);
        }
        // The ledger's first journal. Two first journals can race here: the loser's insert does
        // nothing (waiting for the winner on PostgreSQL) and its next read locks the winner's row.
        per_backend!(&mut *conn, |c| diesel::insert_into(ledger_heads::table)
            .values((
                ledger_heads::mode.eq(mode),
                ledger_heads::currency.eq(currency),
                ledger_heads::seq.eq(0_i64),
                ledger_heads::hash.eq(GENESIS_HASH),
            ))
            .on_conflict_do_nothing()
            .execute(c))?;
    }
    Err(StoreError::Other(format!("ledger head {mode}/{currency} could not be created")).into())
}

/// Every account and journal of one mode or all.
fn ledger_snapshot(conn: &mut DbConnection, mode: Option<Mode>) -> Result<LedgerSnapshot, Fail> {
    let mut accounts_query = accounts::table.select(AccountRow::as_select()).order(accounts::id.asc()).into_boxed();
    let mut journals_query = journals::table
        .select(JournalRow::as_select())
        .order((journals::mode.asc(), journals::currency.asc(), journals::seq.asc()))
        .into_boxed();
    let mut lines_query = postings::table
        .inner_join(journals::table)
        .select((postings::journal_id, postings::account_id, postings::amount))
        .order((postings::journal_id.asc(), postings::line_no.asc()))
        .into_boxed();
    if let Some(mode) = mode {
        accounts_query = accounts_query.filter(accounts::mode.eq(mode.as_str()));
        journals_query = journals_query.filter(journals::mode.eq(mode.as_str()));
        lines_query = lines_query.filter(journals::mode.eq(mode.as_str()));
    }
    let accounts = accounts_query.load::<AccountRow>(conn)?.into_iter().map(Account::try_from).collect::<Result<Vec<_>, _>>()?;
    let journal_rows: Vec<JournalRow> = journals_query.load(conn)?;
    let line_rows: Vec<(String, String, i64)> = lines_query.load(conn)?;

    let mut lines: HashMap<String, Vec<JournalLine>> = HashMap::new();
    for (journal_id, account, amount) in line_rows {
        lines
            .entry(journal_id)
            .or_default()
            .push(JournalLine { account: AccountId::from_trusted(account), amount: MinorUnit::new(amount) });
    }
    let mut journals = Vec::with_capacity(journal_rows.len());
    for row in journal_rows {
        let journal = Journal {
            id: row.transaction_id(),
            mode: models::mode(&row.mode)?,
            currency: models::currency(&row.currency)?,
            kind: row.journal_kind()?,
            lines: lines.remove(&row.id).unwrap_or_default(),
            source_ref: row.source_ref,
            created_at: Timestamp::from_micros(row.created_at),
        };
        journals.push(ChainedJournal { seq: row.seq, prev_hash: row.prev_hash, hash: row.hash, journal });
    }
    Ok(LedgerSnapshot { accounts, journals })
}
