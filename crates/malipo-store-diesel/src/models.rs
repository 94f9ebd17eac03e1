//! Storage rows and their conversion to and from the domain types. Rows hold only plain column
//! values; everything is parsed back into domain types here, at the edge, and a value that does
//! not parse is reported as [`StoreError::Other`] (the database holds something no release wrote).

use std::str::FromStr;

use diesel::prelude::*;
use malipo_auth::{AccessToken, Credential, OrgKind, Organisation, Scopes};
use malipo_charges::{Charge, ChargeKind, ChargeState, FailureReason};
use malipo_core::{AccountId, ChargeRef, Currency, EndpointId, EventId, MinorUnit, Mode, Msisdn, OrgId, Timestamp, TransactionId};
use malipo_idempotency::{Fingerprint, IdempotencyRecord, StoredResponse};
use malipo_ledger::{Account, AccountKind, JournalKind};
use malipo_service::{StoreError, UssdSession, Wallet, WalletState};
use malipo_webhooks::{Attempt, Delivery, DeliveryState, Endpoint, Event, EventFilter, Summary};

use crate::schema::{
    access_tokens, accounts, charges, credentials, deliveries, delivery_attempts, events, idempotency_keys, journals, organisations,
    postings, ussd_sessions, wallets, webhook_endpoints,
};

fn corrupt(what: &str, value: &str) -> StoreError {
    StoreError::Other(format!("stored {what} `{value}` does not parse"))
}

fn parse<T: FromStr>(what: &str, value: &str) -> Result<T, StoreError> {
    value.parse().map_err(|_| corrupt(what, value))
}

pub(crate) fn mode(value: &str) -> Result<Mode, StoreError> {
    parse("mode", value)
}

pub(crate) fn currency(value: &str) -> Result<Currency, StoreError> {
    parse("currency", value)
}

fn ts(micros: i64) -> Timestamp {
    Timestamp::from_micros(micros)
}

// ----- organisations, credentials, tokens -----

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = organisations, check_for_backend(diesel::pg::Pg, diesel::sqlite::Sqlite))]
pub(crate) struct OrgRow {
    pub(crate) id: String,
    pub(crate) name: String,
    pub(crate) kind: String,
    pub(crate) country: String,
    pub(crate) created_at: i64,
}

impl From<&Organisation> for OrgRow {
    fn from(o: &Organisation) -> Self {
        OrgRow {
            id: o.id.as_str().to_owned(),
            name: o.name.clone(),
            kind: o.kind.as_str().to_owned(),
            country: o.country.clone(),
            created_at: o.created_at.as_micros(),
        }
    }
}

impl TryFrom<OrgRow> for Organisation {
    type Error = StoreError;
    fn try_from(r: OrgRow) -> Result<Self, StoreError> {
        Ok(Organisation {
            kind: OrgKind::from_str(&r.kind).map_err(|_| corrupt("organisation kind", &r.kind))?,
            id: OrgId::from_trusted(r.id),
            name: r.name,
            country: r.country,
            created_at: ts(r.created_at),
        })
    }
}

fn scopes(value: &str) -> Result<Scopes, StoreError> {
    Scopes::parse(value).map_err(|_| corrupt("scopes", value))
}

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = credentials, check_for_backend(diesel::pg::Pg, diesel::sqlite::Sqlite))]
pub(crate) struct CredentialRow {
    pub(crate) client_id: String,
    pub(crate) org_id: String,
    pub(crate) mode: String,
    pub(crate) secret_hash: String,
    pub(crate) scopes: String,
    pub(crate) created_at: i64,
    pub(crate) revoked_at: Option<i64>,
}

impl From<&Credential> for CredentialRow {
    fn from(c: &Credential) -> Self {
        CredentialRow {
            client_id: c.client_id.clone(),
            org_id: c.org_id.as_str().to_owned(),
            mode: c.mode.as_str().to_owned(),
            secret_hash: c.secret_hash.clone(),
            scopes: c.scopes.to_string(),
            created_at: c.created_at.as_micros(),
            revoked_at: c.revoked_at.map(Timestamp::as_micros),
        }
    }
}

impl TryFrom<CredentialRow> for Credential {
    type Error = StoreError;
    fn try_from(r: CredentialRow) -> Result<Self, StoreError> {
        Ok(Credential {
            mode: mode(&r.mode)?,
            scopes: scopes(&r.scopes)?,
            client_id: r.client_id,
            org_id: OrgId::from_trusted(r.org_id),
            secret_hash: r.secret_hash,
            created_at: ts(r.created_at),
            revoked_at: r.revoked_at.map(ts),
        })
    }
}

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = access_tokens, check_for_backend(diesel::pg::Pg, diesel::sqlite::Sqlite))]
pub(crate) struct TokenRow {
    pub(crate) digest: String,
    pub(crate) client_id: String,
    pub(crate) org_id: String,
    pub(crate) mode: String,
    pub(crate) scopes: String,
    pub(crate) created_at: i64,
    pub(crate) expires_at: i64,
    pub(crate) revoked_at: Option<i64>,
}

impl From<&AccessToken> for TokenRow {
    fn from(t: &AccessToken) -> Self {
        TokenRow {
            digest: t.digest.clone(),
            client_id: t.client_id.clone(),
            org_id: t.org_id.as_str().to_owned(),
            mode: t.mode.as_str().to_owned(),
            scopes: t.scopes.to_string(),
            created_at: t.created_at.as_micros(),
            expires_at: t.expires_at.as_micros(),
            revoked_at: t.revoked_at.map(Timestamp::as_micros),
        }
    }
}

impl TryFrom<TokenRow> for AccessToken {
    type Error = StoreError;
    fn try_from(r: TokenRow) -> Result<Self, StoreError> {
        Ok(AccessToken {
            mode: mode(&r.mode)?,
            scopes: scopes(&r.scopes)?,
            digest: r.digest,
            client_id: r.client_id,
            org_id: OrgId::from_trusted(r.org_id),
            created_at: ts(r.created_at),
            expires_at: ts(r.expires_at),
            revoked_at: r.revoked_at.map(ts),
        })
    }
}

// ----- accounts and the ledger -----

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = accounts, check_for_backend(diesel::pg::Pg, diesel::sqlite::Sqlite))]
pub(crate) struct AccountRow {
    pub(crate) id: String,
    pub(crate) org_id: Option<String>,
    pub(crate) mode: String,
    pub(crate) kind: String,
    pub(crate) currency: String,
    pub(crate) balance: i64,
    pub(crate) held: i64,
    pub(crate) allow_negative: bool,
    pub(crate) owner_msisdn: Option<String>,
    pub(crate) created_at: i64,
}

impl From<&Account> for AccountRow {
    fn from(a: &Account) -> Self {
        AccountRow {
            id: a.id.as_str().to_owned(),
            org_id: a.org_id.as_ref().map(|o| o.as_str().to_owned()),
            mode: a.mode.as_str().to_owned(),
            kind: a.kind.as_str().to_owned(),
            currency: a.currency.as_str().to_owned(),
            balance: a.balance.get(),
            held: a.held.get(),
            allow_negative: a.kind.allows_negative(),
            owner_msisdn: a.owner_msisdn.clone(),
            created_at: a.created_at.as_micros(),
        }
    }
}

impl TryFrom<AccountRow> for Account {
    type Error = StoreError;
    fn try_from(r: AccountRow) -> Result<Self, StoreError> {
        Ok(Account {
            mode: mode(&r.mode)?,
            kind: AccountKind::from_str(&r.kind).map_err(|_| corrupt("account kind", &r.kind))?,
            currency: currency(&r.currency)?,
            id: AccountId::from_trusted(r.id),
            org_id: r.org_id.map(OrgId::from_trusted),
            balance: MinorUnit::new(r.balance),
            held: MinorUnit::new(r.held),
            owner_msisdn: r.owner_msisdn,
            created_at: ts(r.created_at),
        })
    }
}

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = journals, check_for_backend(diesel::pg::Pg, diesel::sqlite::Sqlite))]
pub(crate) struct JournalRow {
    pub(crate) id: String,
    pub(crate) mode: String,
    pub(crate) currency: String,
    pub(crate) kind: String,
    pub(crate) source_ref: String,
    pub(crate) created_at: i64,
    pub(crate) seq: i64,
    pub(crate) prev_hash: String,
    pub(crate) hash: String,
}

impl JournalRow {
    pub(crate) fn journal_kind(&self) -> Result<JournalKind, StoreError> {
        JournalKind::from_str(&self.kind).map_err(|_| corrupt("journal kind", &self.kind))
    }

    pub(crate) fn transaction_id(&self) -> TransactionId {
        TransactionId::from_trusted(self.id.clone())
    }
}

/// A posting to insert (the id is assigned by the database).
#[derive(Insertable)]
#[diesel(table_name = postings, check_for_backend(diesel::pg::Pg, diesel::sqlite::Sqlite))]
pub(crate) struct NewPosting<'a> {
    pub(crate) journal_id: &'a str,
    pub(crate) line_no: i32,
    pub(crate) account_id: &'a str,
    pub(crate) amount: i64,
    pub(crate) balance_after: i64,
    pub(crate) created_at: i64,
}

// ----- wallets -----

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = wallets, check_for_backend(diesel::pg::Pg, diesel::sqlite::Sqlite))]
pub(crate) struct WalletRow {
    pub(crate) mode: String,
    pub(crate) msisdn: String,
    pub(crate) account_id: String,
    pub(crate) country: String,
    pub(crate) currency: String,
    pub(crate) state: String,
    pub(crate) kyc_tier: i32,
    pub(crate) pin_hash: Option<String>,
    pub(crate) pin_attempts: i32,
    pub(crate) first_name: Option<String>,
    pub(crate) last_name: Option<String>,
    pub(crate) created_at: i64,
    pub(crate) updated_at: i64,
    pub(crate) id_type: Option<String>,
    pub(crate) id_number: Option<String>,
    pub(crate) date_of_birth: Option<String>,
    pub(crate) lock_reason: Option<String>,
}

impl From<&Wallet> for WalletRow {
    fn from(w: &Wallet) -> Self {
        WalletRow {
            mode: w.mode.as_str().to_owned(),
            msisdn: w.msisdn.as_str().to_owned(),
            account_id: w.account_id.as_str().to_owned(),
            country: w.country.clone(),
            currency: w.currency.as_str().to_owned(),
            state: w.state.as_str().to_owned(),
            kyc_tier: i32::from(w.kyc_tier),
            pin_hash: w.pin_hash.clone(),
            pin_attempts: i32::from(w.pin_attempts),
            first_name: w.first_name.clone(),
            last_name: w.last_name.clone(),
            created_at: w.created_at.as_micros(),
            updated_at: w.updated_at.as_micros(),
            id_type: w.id_type.clone(),
            id_number: w.id_number.clone(),
            date_of_birth: w.date_of_birth.clone(),
            lock_reason: w.lock_reason.clone(),
        }
    }
}

impl TryFrom<WalletRow> for Wallet {
    type Error = StoreError;
    fn try_from(r: WalletRow) -> Result<Self, StoreError> {
        Ok(Wallet {
            msisdn: Msisdn::parse(&r.msisdn).map_err(|_| corrupt("msisdn", &r.msisdn))?,
            mode: mode(&r.mode)?,
            currency: currency(&r.currency)?,
            state: WalletState::from_str(&r.state).map_err(|_| corrupt("wallet state", &r.state))?,
            kyc_tier: u8::try_from(r.kyc_tier).map_err(|_| corrupt("KYC tier", &r.kyc_tier.to_string()))?,
            pin_attempts: u8::try_from(r.pin_attempts).map_err(|_| corrupt("PIN attempts", &r.pin_attempts.to_string()))?,
            account_id: AccountId::from_trusted(r.account_id),
            country: r.country,
            pin_hash: r.pin_hash,
            first_name: r.first_name,
            last_name: r.last_name,
            id_type: r.id_type,
            id_number: r.id_number,
            date_of_birth: r.date_of_birth,
            lock_reason: r.lock_reason,
            created_at: ts(r.created_at),
            updated_at: ts(r.updated_at),
        })
    }
}

// ----- charges -----

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = charges, check_for_backend(diesel::pg::Pg, diesel::sqlite::Sqlite))]
pub(crate) struct ChargeRow {
    pub(crate) id: String,
    pub(crate) org_id: String,
    pub(crate) mode: String,
    pub(crate) payer_msisdn: String,
    pub(crate) amount: i64,
    pub(crate) fee: i64,
    pub(crate) currency: String,
    pub(crate) amount_reversed: i64,
    pub(crate) reference: String,
    pub(crate) description: Option<String>,
    pub(crate) state: String,
    pub(crate) failure_reason: Option<String>,
    pub(crate) transaction_id: Option<String>,
    pub(crate) merchant_account: String,
    pub(crate) payer_account: Option<String>,
    pub(crate) created_at: i64,
    pub(crate) updated_at: i64,
    pub(crate) expires_at: i64,
    pub(crate) completed_at: Option<i64>,
    pub(crate) next_action_at: Option<i64>,
    pub(crate) kind: String,
    pub(crate) commission: i64,
}

impl From<&Charge> for ChargeRow {
    fn from(c: &Charge) -> Self {
        ChargeRow {
            id: c.id.as_str().to_owned(),
            org_id: c.org_id.as_str().to_owned(),
            mode: c.mode.as_str().to_owned(),
            payer_msisdn: c.payer_msisdn.as_str().to_owned(),
            amount: c.amount.get(),
            fee: c.fee.get(),
            currency: c.currency.as_str().to_owned(),
            amount_reversed: c.amount_reversed.get(),
            reference: c.reference.clone(),
            description: c.description.clone(),
            state: c.state.as_str().to_owned(),
            failure_reason: c.failure_reason.map(|r| r.as_str().to_owned()),
            transaction_id: c.transaction_id.as_ref().map(|t| t.as_str().to_owned()),
            merchant_account: c.merchant_account.as_str().to_owned(),
            payer_account: c.payer_account.as_ref().map(|a| a.as_str().to_owned()),
            created_at: c.created_at.as_micros(),
            updated_at: c.updated_at.as_micros(),
            expires_at: c.expires_at.as_micros(),
            completed_at: c.completed_at.map(Timestamp::as_micros),
            next_action_at: c.next_action_at.map(Timestamp::as_micros),
            kind: c.kind.as_str().to_owned(),
            commission: c.commission.get(),
        }
    }
}

impl TryFrom<ChargeRow> for Charge {
    type Error = StoreError;
    fn try_from(r: ChargeRow) -> Result<Self, StoreError> {
        let failure_reason = match &r.failure_reason {
            Some(f) => Some(FailureReason::from_str(f).map_err(|_| corrupt("failure reason", f))?),
            None => None,
        };
        Ok(Charge {
            mode: mode(&r.mode)?,
            payer_msisdn: Msisdn::parse(&r.payer_msisdn).map_err(|_| corrupt("msisdn", &r.payer_msisdn))?,
            currency: currency(&r.currency)?,
            state: ChargeState::from_str(&r.state).map_err(|_| corrupt("charge state", &r.state))?,
            failure_reason,
            kind: ChargeKind::from_str(&r.kind).map_err(|_| corrupt("charge kind", &r.kind))?,
            commission: MinorUnit::new(r.commission),
            id: ChargeRef::from_trusted(r.id),
            org_id: OrgId::from_trusted(r.org_id),
            amount: MinorUnit::new(r.amount),
            fee: MinorUnit::new(r.fee),
            amount_reversed: MinorUnit::new(r.amount_reversed),
            reference: r.reference,
            description: r.description,
            transaction_id: r.transaction_id.map(TransactionId::from_trusted),
            merchant_account: AccountId::from_trusted(r.merchant_account),
            payer_account: r.payer_account.map(AccountId::from_trusted),
            created_at: ts(r.created_at),
            updated_at: ts(r.updated_at),
            expires_at: ts(r.expires_at),
            completed_at: r.completed_at.map(ts),
            next_action_at: r.next_action_at.map(ts),
        })
    }
}

// ----- USSD sessions -----

#[derive(Queryable, Selectable, Insertable, AsChangeset)]
#[diesel(table_name = ussd_sessions, check_for_backend(diesel::pg::Pg, diesel::sqlite::Sqlite))]
pub(crate) struct UssdSessionRow {
    pub(crate) org_id: String,
    pub(crate) mode: String,
    pub(crate) session_id: String,
    pub(crate) msisdn: String,
    pub(crate) state: String,
    pub(crate) hops: i32,
    pub(crate) last_screen: String,
    pub(crate) created_at: i64,
    pub(crate) updated_at: i64,
}

impl From<&UssdSession> for UssdSessionRow {
    fn from(s: &UssdSession) -> Self {
        UssdSessionRow {
            org_id: s.org_id.as_str().to_owned(),
            mode: s.mode.as_str().to_owned(),
            session_id: s.session_id.clone(),
            msisdn: s.msisdn.as_str().to_owned(),
            state: s.state.clone(),
            hops: i32::try_from(s.hops).unwrap_or(i32::MAX),
            last_screen: s.last_screen.clone(),
            created_at: s.created_at.as_micros(),
            updated_at: s.updated_at.as_micros(),
        }
    }
}

impl TryFrom<UssdSessionRow> for UssdSession {
    type Error = StoreError;
    fn try_from(r: UssdSessionRow) -> Result<Self, StoreError> {
        Ok(UssdSession {
            mode: mode(&r.mode)?,
            msisdn: Msisdn::parse(&r.msisdn).map_err(|_| corrupt("msisdn", &r.msisdn))?,
            hops: u32::try_from(r.hops).map_err(|_| corrupt("USSD hop count", &r.hops.to_string()))?,
            org_id: OrgId::from_trusted(r.org_id),
            session_id: r.session_id,
            state: r.state,
            last_screen: r.last_screen,
            created_at: ts(r.created_at),
            updated_at: ts(r.updated_at),
        })
    }
}

// ----- idempotency -----

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = idempotency_keys, check_for_backend(diesel::pg::Pg, diesel::sqlite::Sqlite))]
pub(crate) struct KeyRow {
    pub(crate) org_id: String,
    pub(crate) mode: String,
    pub(crate) operation: String,
    pub(crate) key: String,
    pub(crate) fingerprint: String,
    pub(crate) status: Option<i32>,
    pub(crate) response_body: Option<Vec<u8>>,
    pub(crate) created_at: i64,
}

impl TryFrom<KeyRow> for IdempotencyRecord {
    type Error = StoreError;
    fn try_from(r: KeyRow) -> Result<Self, StoreError> {
        let response = match (r.status, r.response_body) {
            (Some(status), Some(body)) => {
                Some(StoredResponse { status: u16::try_from(status).map_err(|_| corrupt("HTTP status", &status.to_string()))?, body })
            }
            (None, None) => None,
            _ => return Err(StoreError::Other("stored idempotency response is half written".into())),
        };
        Ok(IdempotencyRecord { fingerprint: Fingerprint::from_stored(r.fingerprint), response, created_at: ts(r.created_at) })
    }
}

// ----- webhooks -----

/// A count or duration that must fit the column's `INTEGER`.
fn integer(what: &str, value: u32) -> Result<i32, StoreError> {
    i32::try_from(value).map_err(|_| StoreError::Other(format!("{what} {value} does not fit the database's INTEGER")))
}

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = webhook_endpoints, check_for_backend(diesel::pg::Pg, diesel::sqlite::Sqlite))]
pub(crate) struct EndpointRow {
    pub(crate) id: String,
    pub(crate) org_id: String,
    pub(crate) mode: String,
    pub(crate) url: String,
    pub(crate) description: Option<String>,
    pub(crate) events: String,
    pub(crate) enabled: bool,
    pub(crate) secret: Vec<u8>,
    pub(crate) previous_secret: Option<Vec<u8>>,
    pub(crate) previous_secret_expires_at: Option<i64>,
    pub(crate) disabled_reason: Option<String>,
    pub(crate) failing_since: Option<i64>,
    pub(crate) deleted_at: Option<i64>,
    pub(crate) created_at: i64,
    pub(crate) updated_at: i64,
}

impl From<&Endpoint> for EndpointRow {
    fn from(e: &Endpoint) -> Self {
        EndpointRow {
            id: e.id.as_str().to_owned(),
            org_id: e.org_id.as_str().to_owned(),
            mode: e.mode.as_str().to_owned(),
            url: e.url.clone(),
            description: e.description.clone(),
            events: e.events.to_stored(),
            enabled: e.enabled,
            secret: e.secret.clone(),
            previous_secret: e.previous_secret.as_ref().map(|(s, _)| s.clone()),
            previous_secret_expires_at: e.previous_secret.as_ref().map(|(_, t)| t.as_micros()),
            disabled_reason: e.disabled_reason.clone(),
            failing_since: e.failing_since.map(Timestamp::as_micros),
            deleted_at: e.deleted_at.map(Timestamp::as_micros),
            created_at: e.created_at.as_micros(),
            updated_at: e.updated_at.as_micros(),
        }
    }
}

impl TryFrom<EndpointRow> for Endpoint {
    type Error = StoreError;
    fn try_from(r: EndpointRow) -> Result<Self, StoreError> {
        let previous_secret = match (r.previous_secret, r.previous_secret_expires_at) {
            (Some(secret), Some(expires_at)) => Some((secret, ts(expires_at))),
            (None, None) => None,
            _ => return Err(StoreError::Other("stored previous webhook secret is half written".into())),
        };
        Ok(Endpoint {
            mode: mode(&r.mode)?,
            events: EventFilter::from_stored(&r.events).map_err(|_| corrupt("event filter", &r.events))?,
            id: EndpointId::from_trusted(r.id),
            org_id: OrgId::from_trusted(r.org_id),
            url: r.url,
            description: r.description,
            enabled: r.enabled,
            secret: r.secret,
            previous_secret,
            disabled_reason: r.disabled_reason,
            failing_since: r.failing_since.map(ts),
            deleted_at: r.deleted_at.map(ts),
            created_at: ts(r.created_at),
            updated_at: ts(r.updated_at),
        })
    }
}

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = events, check_for_backend(diesel::pg::Pg, diesel::sqlite::Sqlite))]
pub(crate) struct EventRow {
    pub(crate) id: String,
    pub(crate) org_id: String,
    pub(crate) mode: String,
    pub(crate) kind: String,
    pub(crate) object_id: String,
    pub(crate) data: Vec<u8>,
    pub(crate) amount: Option<String>,
    pub(crate) currency: Option<String>,
    pub(crate) state: Option<String>,
    pub(crate) reference: Option<String>,
    pub(crate) created_at: i64,
}

impl From<&Event> for EventRow {
    fn from(e: &Event) -> Self {
        EventRow {
            id: e.id.as_str().to_owned(),
            org_id: e.org_id.as_str().to_owned(),
            mode: e.mode.as_str().to_owned(),
            kind: e.kind.clone(),
            object_id: e.object_id.clone(),
            data: e.data.clone(),
            amount: e.summary.amount.clone(),
            currency: e.summary.currency.clone(),
            state: e.summary.state.clone(),
            reference: e.summary.reference.clone(),
            created_at: e.created_at.as_micros(),
        }
    }
}

impl TryFrom<EventRow> for Event {
    type Error = StoreError;
    fn try_from(r: EventRow) -> Result<Self, StoreError> {
        Ok(Event {
            mode: mode(&r.mode)?,
            id: EventId::from_trusted(r.id),
            org_id: OrgId::from_trusted(r.org_id),
            kind: r.kind,
            object_id: r.object_id,
            data: r.data,
            summary: Summary { amount: r.amount, currency: r.currency, state: r.state, reference: r.reference },
            created_at: ts(r.created_at),
        })
    }
}

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = deliveries, check_for_backend(diesel::pg::Pg, diesel::sqlite::Sqlite))]
pub(crate) struct DeliveryRow {
    pub(crate) id: String,
    pub(crate) event_id: String,
    pub(crate) endpoint_id: String,
    pub(crate) state: String,
    pub(crate) attempts: i32,
    pub(crate) next_attempt_at: Option<i64>,
    pub(crate) created_at: i64,
    pub(crate) updated_at: i64,
}

impl TryFrom<&Delivery> for DeliveryRow {
    type Error = StoreError;
    fn try_from(d: &Delivery) -> Result<Self, StoreError> {
        Ok(DeliveryRow {
            id: d.id.clone(),
            event_id: d.event_id.as_str().to_owned(),
            endpoint_id: d.endpoint_id.as_str().to_owned(),
            state: d.state.as_str().to_owned(),
            attempts: integer("delivery attempts", d.attempts)?,
            next_attempt_at: d.next_attempt_at.map(Timestamp::as_micros),
            created_at: d.created_at.as_micros(),
            updated_at: d.updated_at.as_micros(),
        })
    }
}

impl TryFrom<DeliveryRow> for Delivery {
    type Error = StoreError;
    fn try_from(r: DeliveryRow) -> Result<Self, StoreError> {
        Ok(Delivery {
            state: DeliveryState::from_str(&r.state).map_err(|_| corrupt("delivery state", &r.state))?,
            attempts: u32::try_from(r.attempts).map_err(|_| corrupt("delivery attempts", &r.attempts.to_string()))?,
            id: r.id,
            event_id: EventId::from_trusted(r.event_id),
            endpoint_id: EndpointId::from_trusted(r.endpoint_id),
            next_attempt_at: r.next_attempt_at.map(ts),
            created_at: ts(r.created_at),
            updated_at: ts(r.updated_at),
        })
    }
}

/// An attempt as stored (the id, assigned by the database, orders a delivery's attempts and is
/// not part of the domain type).
#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = delivery_attempts, check_for_backend(diesel::pg::Pg, diesel::sqlite::Sqlite))]
pub(crate) struct AttemptRow {
    pub(crate) delivery_id: String,
    pub(crate) event_id: String,
    pub(crate) endpoint_id: String,
    pub(crate) attempted_at: i64,
    pub(crate) status: Option<i32>,
    pub(crate) latency_ms: i32,
    pub(crate) error: Option<String>,
}

impl TryFrom<&Attempt> for AttemptRow {
    type Error = StoreError;
    fn try_from(a: &Attempt) -> Result<Self, StoreError> {
        Ok(AttemptRow {
            delivery_id: a.delivery_id.clone(),
            event_id: a.event_id.as_str().to_owned(),
            endpoint_id: a.endpoint_id.as_str().to_owned(),
            attempted_at: a.attempted_at.as_micros(),
            status: a.status.map(i32::from),
            latency_ms: integer("attempt latency (ms)", a.latency_ms)?,
            error: a.error.clone(),
        })
    }
}

impl TryFrom<AttemptRow> for Attempt {
    type Error = StoreError;
    fn try_from(r: AttemptRow) -> Result<Self, StoreError> {
        let status = match r.status {
            Some(s) => Some(u16::try_from(s).map_err(|_| corrupt("HTTP status", &s.to_string()))?),
            None => None,
        };
        Ok(Attempt {
            status,
            latency_ms: u32::try_from(r.latency_ms).map_err(|_| corrupt("attempt latency", &r.latency_ms.to_string()))?,
            delivery_id: r.delivery_id,
            event_id: EventId::from_trusted(r.event_id),
            endpoint_id: EndpointId::from_trusted(r.endpoint_id),
            attempted_at: ts(r.attempted_at),
            error: r.error,
        })
    }
}
