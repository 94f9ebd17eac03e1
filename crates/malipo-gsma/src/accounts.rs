//! Accounts by `{identifierType}/{identifier}`: `accountid` with an `acc_` id of the caller's own
//! accounts, `msisdn` for a customer's wallet (digits as the REST API takes them, `+` accepted).
//! The balance (and `GET /accounts/balance`, the caller's main account) and the account name.

use actix_web::{web, HttpResponse};
use malipo_auth::{OrgKind, Principal};
use malipo_ledger::{Account, AccountKind};
use malipo_service::{Platform, ServiceError, WalletState};
use serde::Serialize;

use crate::caller::Caller;
use crate::error::GsmaError;
use crate::objects::amount;
use crate::{run, Gsma};

/// How an account is named in the path.
pub(crate) enum Identifier {
    /// One of the caller's own accounts.
    Account(String),
    /// A customer's wallet.
    Msisdn(String),
}

/// The account a path's `{identifierType}/{identifier}` names.
///
/// # Errors
/// 400 `formatError` for an `identifierType` other than `accountid` and `msisdn`.
pub(crate) fn identifier(kind: &str, value: &str) -> Result<Identifier, GsmaError> {
    match kind.to_ascii_lowercase().as_str() {
        "accountid" => Ok(Identifier::Account(value.to_owned())),
        "msisdn" => Ok(Identifier::Msisdn(value.trim_start_matches('+').to_owned())),
        _ => Err(GsmaError::field("identifierType", "identifierType must be accountid or msisdn")),
    }
}

/// The document's `responseAccountBalance`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct AccountBalance {
    account_status: &'static str,
    current_balance: String,
    available_balance: String,
    reserved_balance: String,
    currency: String,
}

fn balance_of(account: &Account, available: bool) -> AccountBalance {
    let spendable = account.balance.saturating_sub(account.held);
    AccountBalance {
        account_status: if available { "available" } else { "unavailable" },
        current_balance: amount(account.balance, account.currency),
        available_balance: amount(spendable.max(malipo_core::MinorUnit::ZERO), account.currency),
        reserved_balance: amount(account.held, account.currency),
        currency: account.currency.as_str().to_owned(),
    }
}

/// The caller's main account: a merchant's collection account, a corporate's payout account,
/// an agent's float.
fn main_account(p: &Platform, principal: &Principal) -> Result<Account, ServiceError> {
    match principal.org_kind {
        OrgKind::Merchant => Ok(p.accounts().balance(principal, AccountKind::Collection)?.account),
        OrgKind::Corporate => Ok(p.accounts().balance(principal, AccountKind::Payout)?.account),
        OrgKind::Agent => Ok(p.agents().float(principal)?.account),
        _ => Err(ServiceError::NotFound),
    }
}

/// `GET /accounts/balance`: the caller's main account.
///
/// # Errors
/// 404 for a caller with no such account (an operator, a gateway).
pub async fn own_balance(caller: Caller, gsma: web::Data<Gsma>) -> Result<HttpResponse, GsmaError> {
    let principal = caller.0;
    let account = run(&gsma.platform, move |p| main_account(p, &principal)).await?;
    Ok(HttpResponse::Ok().json(balance_of(&account, true)))
}

/// `GET /accounts/{identifierType}/{identifier}/balance`: one of the caller's accounts, or (for
/// the operator's back office, scope `wallets`) a customer's wallet.
///
/// # Errors
/// 404 for an account the caller has none of.
pub async fn balance(caller: Caller, path: web::Path<(String, String)>, gsma: web::Data<Gsma>) -> Result<HttpResponse, GsmaError> {
    let principal = caller.0;
    let (kind, value) = path.into_inner();
    let answer = match identifier(&kind, &value)? {
        Identifier::Account(id) => {
            let account = run(&gsma.platform, move |p| {
                let own = p.accounts().list(&principal)?;
                own.into_iter().map(|b| b.account).find(|a| a.id.as_str() == id).ok_or(ServiceError::NotFound)
            })
            .await?;
            balance_of(&account, true)
        }
        Identifier::Msisdn(msisdn) => {
            let details = run(&gsma.platform, move |p| p.wallets().details(&principal, &msisdn)).await?;
            balance_of(&details.account, details.wallet.state == WalletState::Active)
        }
    };
    Ok(HttpResponse::Ok().json(answer))
}

/// The document's `responseAccountName`.
#[derive(Serialize)]
struct AccountName {
    name: SubjectName,
}

/// The document's `subjectName`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SubjectName {
    #[serde(skip_serializing_if = "Option::is_none")]
    first_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    last_name: Option<String>,
    full_name: String,
}

/// `GET /accounts/msisdn/{identifier}/accountname`: the wallet holder's name, for a caller
/// about to pay them (scopes `payouts`, `agent`, `wallets`); a payee's name confirms the number
/// before money goes to it.
///
/// # Errors
/// 404 for a number without a wallet; 401 for a caller who may not ask.
pub async fn account_name(caller: Caller, path: web::Path<(String, String)>, gsma: web::Data<Gsma>) -> Result<HttpResponse, GsmaError> {
    let principal = caller.0;
    let (kind, value) = path.into_inner();
    let Identifier::Msisdn(msisdn) = identifier(&kind, &value)? else {
        return Err(GsmaError::field("identifierType", "an account name is looked up by msisdn"));
    };
    let name = run(&gsma.platform, move |p| p.wallets().holder_name(&principal, &msisdn)).await?;
    let full_name = [name.first_name.as_deref(), name.last_name.as_deref()].into_iter().flatten().collect::<Vec<_>>().join(" ");
    Ok(HttpResponse::Ok().json(AccountName { name: SubjectName { first_name: name.first_name, last_name: name.last_name, full_name } }))
}
