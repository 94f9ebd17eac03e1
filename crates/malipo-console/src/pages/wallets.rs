//! Wallets (console contract section 4, Operator): look a wallet up by "Phone number" ("Find"):
//! holder, KYC tier, state, balance, today's use against the daily limit, recent transactions;
//! "Open wallet" for a number without one, "Raise KYC tier" (the country's ID types), "Lock" and
//! "Unlock" (each with its "Reason"), "Reset PIN attempts". Each action is the API's wallet use
//! case (`POST /wallets`, `…/kyc`, `…/lock`, `…/unlock`) under the form's one-time key, recorded
//! in the audit log as the operator's. Needs `Permission::Wallets`.

use actix_web::{web, HttpRequest, HttpResponse, ResponseError};
use askama::Template;
use malipo_auth::Permission;
use malipo_countries::Country;
use malipo_service::{
    Done, NewKyc, NewPinReset, NewWallet, NewWalletLock, OpenWallet, RaiseKyc, ResetPinAttempts, ServiceError, StatementLine,
    WalletDetails, WalletLock, WalletState,
};
use serde::Deserialize;

use super::form::FieldErrors;
use super::money_common::{form_errors, given, href, refusal_text};
use crate::chrome::{page, page_response, see_other, Chrome, Notice};
use crate::csrf::Posted;
use crate::session::{console_of, Person};
use crate::{csrf_forms, format, idem, run, Console, ConsoleError};

/// `/console/wallets` (find, open), `/console/wallets/{msisdn}/{kyc,lock,unlock,pin-attempts}`.
pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/wallets", web::get().to(wallets_page))
        .route("/wallets", web::post().to(open))
        .route("/wallets/{msisdn}/kyc", web::post().to(raise_kyc))
        .route("/wallets/{msisdn}/lock", web::post().to(lock))
        .route("/wallets/{msisdn}/unlock", web::post().to(unlock))
        .route("/wallets/{msisdn}/pin-attempts", web::post().to(reset_pin_attempts));
}

const SECTION: &str = "Wallets";
const PATH: &str = "/console/wallets";
const RECENT: usize = 10;

/// The use case's field names, the form's, and their labels.
const FIELDS: [(&str, &str, &str); 8] = [
    ("msisdn", "msisdn", "Phone number"),
    ("first_name", "first_name", "First name"),
    ("last_name", "last_name", "Last name"),
    ("id_type", "id_type", "ID type"),
    ("id_number", "id_number", "ID number"),
    ("date_of_birth", "date_of_birth", "Date of birth"),
    ("tier", "tier", "Tier"),
    ("reason", "reason", "Reason"),
];

/// Every form of the page: one struct, the fields each form does not post left empty.
#[derive(Clone, Debug, Default, Deserialize)]
struct WalletForm {
    #[serde(default)]
    csrf_token: String,
    #[serde(default)]
    idempotency_key: String,
    #[serde(default)]
    msisdn: String,
    #[serde(default)]
    first_name: String,
    #[serde(default)]
    last_name: String,
    #[serde(default)]
    id_type: String,
    #[serde(default)]
    id_number: String,
    #[serde(default)]
    date_of_birth: String,
    #[serde(default)]
    tier: String,
    #[serde(default)]
    reason: String,
}
csrf_forms!(WalletForm);

#[derive(Debug, Default, Deserialize)]
struct FindQuery {
    phone: Option<String>,
    done: Option<String>,
}

/// A wallet's facts as shown.
struct Facts {
    msisdn: String,
    holder: String,
    tier: u8,
    id: Option<String>,
    state: &'static str,
    locked: bool,
    lock_reason: Option<String>,
    balance: String,
    available: String,
    daily_used: String,
    daily_limit: String,
    per_transaction: String,
    max_balance: String,
    pin: String,
    pin_attempts: u8,
    opened: String,
}

/// A posting as a row of "Recent transactions".
struct Line {
    time: String,
    kind: &'static str,
    amount: String,
    fee: String,
    balance_after: String,
    reference: String,
}

/// A choice of a `<select>` built at run time.
struct Option_ {
    value: String,
    label: String,
    selected: bool,
}

#[derive(Template)]
#[template(path = "wallets/index.html")]
struct WalletsPage {
    chrome: Chrome,
    phone: String,
    wallet: Option<Facts>,
    recent: Vec<Line>,
    /// A number looked up without a wallet: the "Open wallet" form.
    missing: bool,
    /// The tiers above the current one, for "Raise KYC tier".
    tiers: Vec<Option_>,
    /// The country's ID types (for opening: with "None" first).
    id_types: Vec<Option_>,
    form: WalletForm,
    errors: FieldErrors,
    /// Which form was refused (`open`, `kyc`, `lock`, `unlock`, `pin`), to show its errors.
    refused: &'static str,
}

fn wallet_facts(d: &WalletDetails, country: Option<&Country>) -> Facts {
    let w = &d.wallet;
    let c = w.currency;
    let holder = [w.first_name.as_deref(), w.last_name.as_deref()].into_iter().flatten().collect::<Vec<_>>().join(" ");
    let available = d.account.balance.checked_sub(d.account.held).unwrap_or(d.account.balance);
    let max_attempts = country.map_or(0, |c| c.max_pin_attempts);
    Facts {
        msisdn: w.msisdn.to_string(),
        holder,
        tier: w.kyc_tier,
        id: w.id_type.as_ref().map(|t| format!("{t} {}", w.id_number.as_deref().unwrap_or(""))),
        state: if w.state == WalletState::Locked { "locked" } else { "active" },
        locked: w.state == WalletState::Locked,
        lock_reason: w.lock_reason.clone(),
        balance: format::money(d.account.balance, c),
        available: format::money(available, c),
        daily_used: format::money(d.daily_used, c),
        daily_limit: format::money(d.tier.daily, c),
        per_transaction: format::money(d.tier.per_transaction, c),
        max_balance: format::money(d.tier.max_balance, c),
        pin: if w.pin_hash.is_some() { "Set".into() } else { "Not set".into() },
        pin_attempts: w.pin_attempts,
        opened: country.map_or_else(|| w.created_at.to_rfc3339(), |k| format::time(w.created_at, k)),
    }
    .with_attempts(max_attempts)
}

impl Facts {
    fn with_attempts(mut self, max: u8) -> Self {
        if max > 0 {
            self.pin = format!("{}; {} of {max} failed attempts", self.pin, self.pin_attempts);
        }
        self
    }
}

fn line(l: &StatementLine, country: Option<&Country>, currency: malipo_core::Currency) -> Line {
    let p = &l.posting;
    Line {
        time: country.map_or_else(|| p.created_at.to_rfc3339(), |k| format::time(p.created_at, k)),
        kind: p.kind.as_str(),
        amount: format::amount(p.amount, currency),
        fee: format::amount(p.fee, currency),
        balance_after: format::amount(p.balance_after, currency),
        reference: p.source_ref.clone(),
    }
}

/// The page for `phone` (empty: the search alone), with the form as given.
async fn render(
    console: &Console,
    who: &Person,
    phone: &str,
    form: WalletForm,
    errors: FieldErrors,
    refused: &'static str,
    notice: Option<Notice>,
) -> Result<WalletsPage, ConsoleError> {
    let chrome = Chrome::new(who, SECTION, "Wallets", PATH).with_notice(notice);
    let mut shown = WalletsPage {
        chrome,
        phone: phone.to_owned(),
        wallet: None,
        recent: Vec::new(),
        missing: false,
        tiers: Vec::new(),
        id_types: Vec::new(),
        form,
        errors,
        refused,
    };
    if phone.is_empty() {
        return Ok(shown);
    }
    let (principal, number) = (who.principal(), phone.to_owned());
    let found = run(console, move |p| {
        let details = p.wallets().details(&principal, &number)?;
        let recent = p.wallets().recent(&principal, &number, RECENT)?;
        Ok((details, recent))
    })
    .await;
    let countries = console.platform.countries();
    match found {
        Ok((d, recent)) => {
            let country = countries.get(&d.wallet.country);
            shown.recent = recent.iter().map(|l| line(l, country, d.wallet.currency)).collect();
            if let Some(c) = country {
                let chosen = shown.form.tier.clone();
                shown.tiers = c
                    .kyc_tiers
                    .iter()
                    .filter(|t| t.tier > d.wallet.kyc_tier)
                    .map(|t| Option_ {
                        value: t.tier.to_string(),
                        label: format!("Tier {}", t.tier),
                        selected: chosen == t.tier.to_string(),
                    })
                    .collect();
                shown.id_types = id_types(c, &shown.form.id_type, false);
            }
            shown.wallet = Some(wallet_facts(&d, country));
        }
        Err(ConsoleError::NotFound) => {
            shown.missing = true;
            let country = countries.parse_msisdn(phone).ok().map(|(_, c)| c);
            shown.id_types = country.map(|c| id_types(c, &shown.form.id_type, true)).unwrap_or_default();
            if shown.form.msisdn.is_empty() {
                shown.form.msisdn = phone.to_owned();
            }
        }
        Err(e) => return Err(e),
    }
    Ok(shown)
}

/// The country's ID types as choices (with "None" first where a document is optional).
fn id_types(country: &Country, chosen: &str, optional: bool) -> Vec<Option_> {
    let none = optional.then(|| Option_ { value: String::new(), label: "None".into(), selected: chosen.is_empty() });
    none.into_iter()
        .chain(country.id_types.iter().map(|t| Option_ {
            value: t.name.clone(),
            label: format!("{} (tier {})", t.name, t.grants_tier),
            selected: chosen == t.name,
        }))
        .collect()
}

async fn wallets_page(req: HttpRequest, who: Person, query: web::Query<FindQuery>) -> Result<HttpResponse, ConsoleError> {
    who.require(Permission::Wallets)?;
    let console = console_of(&req)?;
    let phone = given(query.phone.as_deref()).unwrap_or("").to_owned();
    let notice = match query.done.as_deref() {
        Some("opened") => Notice::done("Wallet opened."),
        Some("kyc") => Notice::done("KYC tier raised."),
        Some("locked") => Notice::done("Wallet locked: it can no longer pay or be paid, and its pending prompts failed."),
        Some("unlocked") => Notice::done("Wallet unlocked; its PIN attempts start again from zero."),
        Some("pin") => Notice::done("PIN attempts reset."),
        _ => None,
    };
    let form = WalletForm { idempotency_key: idem::new_key(), ..WalletForm::default() };
    Ok(page(&render(&console, &who, &phone, form, FieldErrors::none(), "", notice).await?))
}

/// Where an action's answer sends the operator: the wallet's page with what was done.
fn back_to(msisdn: &str, done: &str) -> String {
    href(PATH, &[("phone", Some(msisdn)), ("done", Some(done))])
}

/// Runs one wallet action (its use case under the form's key, audited as `action`), then shows
/// the wallet, or the page again with the form's values and errors.
async fn act(
    req: &HttpRequest,
    posted: Posted<WalletForm>,
    msisdn: String,
    which: &'static str,
    action: &'static str,
    call: impl FnOnce(
            &malipo_service::Platform,
            &malipo_auth::Principal,
            &WalletForm,
            &malipo_service::Idem,
            &str,
        ) -> Result<Done<String>, ServiceError>
        + Send
        + 'static,
) -> Result<HttpResponse, ConsoleError> {
    let Posted { person: who, mut form, ip } = posted;
    who.require(Permission::Wallets)?;
    let console = console_of(req)?;
    let fields = [
        ("msisdn", msisdn.as_str()),
        ("first_name", form.first_name.as_str()),
        ("last_name", form.last_name.as_str()),
        ("id_type", form.id_type.as_str()),
        ("id_number", form.id_number.as_str()),
        ("date_of_birth", form.date_of_birth.as_str()),
        ("tier", form.tier.as_str()),
        ("reason", form.reason.as_str()),
    ];
    let idem = idem::by(idem::idem(&who, &format!("wallet {which}"), &form.idempotency_key, &fields)?, &who, ip, action);
    let (principal, f, n) = (who.principal(), form.clone(), msisdn.clone());
    match run(&console, move |p| call(p, &principal, &f, &idem, &n)).await {
        Ok(outcome) => Ok(see_other(&idem::location(&outcome))),
        Err(ConsoleError::Service(e)) => {
            let (errors, notice) = match form_errors(&e, &FIELDS) {
                Some(errors) => (errors, Notice::alert("Nothing was done: some fields need attention.")),
                None => (FieldErrors::none(), Notice::alert(format!("Nothing was done. {}", refusal_text(&e)))),
            };
            form.idempotency_key = idem::new_key();
            let status = ConsoleError::Service(e).status_code();
            let shown = render(&console, &who, &msisdn, form, errors, which, notice).await?;
            Ok(page_response(status, &shown))
        }
        Err(e) => Err(e),
    }
}

fn optional(text: &str) -> Option<String> {
    given(Some(text)).map(str::to_owned)
}

async fn open(req: HttpRequest, posted: Posted<WalletForm>) -> Result<HttpResponse, ConsoleError> {
    let msisdn = posted.form.msisdn.trim().to_owned();
    act(&req, posted, msisdn, "open", "wallet.opened", |p, principal, f, idem, n| {
        let new = NewWallet {
            msisdn: n.to_owned(),
            first_name: f.first_name.clone(),
            last_name: f.last_name.clone(),
            id_type: optional(&f.id_type),
            id_number: optional(&f.id_number),
            date_of_birth: optional(&f.date_of_birth),
        };
        let command = p.parse::<OpenWallet>(principal, &new)?;
        idem::page(p.wallets().open(principal, &command, idem), |d| back_to(&d.wallet.msisdn.to_string(), "opened"))
    })
    .await
}

async fn raise_kyc(req: HttpRequest, path: web::Path<String>, posted: Posted<WalletForm>) -> Result<HttpResponse, ConsoleError> {
    act(&req, posted, path.into_inner(), "kyc", "wallet.kyc_raised", |p, principal, f, idem, n| {
        let tier =
            f.tier.trim().parse::<u8>().map_err(|_| {
                ServiceError::Validation(vec![malipo_service::FieldError::new("tier", "invalid_value", "tier must be chosen")])
            })?;
        let new = NewKyc { msisdn: n.to_owned(), tier, id_type: f.id_type.trim().to_owned(), id_number: f.id_number.trim().to_owned() };
        let command = p.parse::<RaiseKyc>(principal, &new)?;
        idem::page(p.wallets().raise_kyc(principal, &command, idem), |d| back_to(&d.wallet.msisdn.to_string(), "kyc"))
    })
    .await
}

async fn lock(req: HttpRequest, path: web::Path<String>, posted: Posted<WalletForm>) -> Result<HttpResponse, ConsoleError> {
    act(&req, posted, path.into_inner(), "lock", "wallet.locked", |p, principal, f, idem, n| {
        let command = p.parse::<WalletLock>(principal, &NewWalletLock { msisdn: n.to_owned(), reason: f.reason.clone() })?;
        idem::page(p.wallets().lock(principal, &command, idem), |d| back_to(&d.wallet.msisdn.to_string(), "locked"))
    })
    .await
}

async fn unlock(req: HttpRequest, path: web::Path<String>, posted: Posted<WalletForm>) -> Result<HttpResponse, ConsoleError> {
    act(&req, posted, path.into_inner(), "unlock", "wallet.unlocked", |p, principal, f, idem, n| {
        let command = p.parse::<WalletLock>(principal, &NewWalletLock { msisdn: n.to_owned(), reason: f.reason.clone() })?;
        idem::page(p.wallets().unlock(principal, &command, idem), |d| back_to(&d.wallet.msisdn.to_string(), "unlocked"))
    })
    .await
}

async fn reset_pin_attempts(req: HttpRequest, path: web::Path<String>, posted: Posted<WalletForm>) -> Result<HttpResponse, ConsoleError> {
    act(&req, posted, path.into_inner(), "pin", "wallet.pin_attempts_reset", |p, principal, _, idem, n| {
        let command = p.parse::<ResetPinAttempts>(principal, &NewPinReset { msisdn: n.to_owned() })?;
        idem::page(p.wallets().reset_pin_attempts(principal, &command, idem), |d| back_to(&d.wallet.msisdn.to_string(), "pin"))
    })
    .await
}
