//! Roles enforced for pages and form posts (issue 31, item 4): every section's page opened, and
//! every console form posted, as every role
//! (a merchant's admin, finance and viewer; a corporate's admin, maker and checker; an agent; an
//! operator). Who may gets past the role check (200 or 303, or, for a form about an object this
//! test does not make, the object's own answer: 404, 409 or 422); who may not gets 403, and
//! nothing is done (no entry in the audit log, which every action writes).
//!
//! The table is data: a new application's forms (the corporate's, the agent's) are rows
//! appended to [`forms`]. A row's path and fields may name `{n}` (the operator's wallet),
//! `{merchant}` (the merchant organisation), `{unique}` (fresh for each post) and `{code}` (one
//! of the poster's unused recovery codes: a step-up form's fresh code).
//!
//! Forms every signed-in person has about their own account (sign out, password, sign out
//! everywhere, enrolment) are not rows: no role is refused them. "Test mode" is, as a check.

use malipo_core::Mode;
use malipo_service::{AuditFilter, Store};

use super::operator::open_wallet;
use super::{join, Browser, Someone};
use crate::harness::{msisdn, national_id, Db, TestApp};
use crate::on_both;

on_both!(every_form_as_every_role);

/// The roles of the table, as `kind role`.
const ROLES: [&str; 8] = [
    "merchant admin",
    "merchant finance",
    "merchant viewer",
    "corporate admin",
    "corporate maker",
    "corporate checker",
    "agent agent",
    "operator operator",
];

/// A form of the table.
struct Form {
    /// What it is, for messages.
    name: &'static str,
    /// Where it posts (placeholders allowed).
    path: &'static str,
    /// Its fields besides the CSRF token (placeholders allowed); an `idempotency_key` is added
    /// fresh to every post.
    fields: &'static [(&'static str, &'static str)],
    /// The roles (`kind role`) that may post it.
    may: &'static [&'static str],
    /// What those may get (the role check passed).
    ok: &'static [u16],
}

const DONE: &[u16] = &[200, 303];
/// A form about an object the table names but does not make: the role check passed, then the
/// object's own answer.
const PASSED: &[u16] = &[200, 303, 404, 409, 422];
const MERCHANT_MONEY: &[&str] = &["merchant admin", "merchant finance"];
/// "Pay" on Payouts: a merchant's money roles, and a corporate maker (a batch of one).
const PAYERS: &[&str] = &["merchant admin", "merchant finance", "corporate maker"];
const ADMINS: &[&str] = &["merchant admin", "corporate admin"];
const OPERATOR: &[&str] = &["operator operator"];
const AGENT: &[&str] = &["agent agent"];
const MAKER: &[&str] = &["corporate maker"];
const CHECKER: &[&str] = &["corporate checker"];

/// Every console form, in the order posted.
fn forms() -> Vec<Form> {
    vec![
        // Merchant.
        Form {
            name: "Pay",
            path: "/console/payouts",
            fields: &[("payee_msisdn", "254700000000"), ("amount", "1.00"), ("reference", "{unique}")],
            may: PAYERS,
            ok: DONE,
        },
        Form {
            name: "Create request",
            path: "/console/payment-requests",
            fields: &[("amount", "10.00"), ("reference", "{unique}"), ("description", "")],
            may: MERCHANT_MONEY,
            ok: DONE,
        },
        Form {
            name: "Cancel (a request)",
            path: "/console/payment-requests/pr_00000000000000000000000000000000/cancel",
            fields: &[],
            may: MERCHANT_MONEY,
            ok: PASSED,
        },
        Form {
            name: "Confirm refund",
            path: "/console/charges/ch_00000000000000000000000000000000/refund",
            fields: &[("amount", "1.00"), ("reason", "table")],
            may: MERCHANT_MONEY,
            ok: PASSED,
        },
        Form {
            name: "Create key pair",
            path: "/console/developers/keys",
            fields: &[("mode", "test"), ("code", "{code}")],
            may: ADMINS,
            ok: DONE,
        },
        Form {
            name: "Revoke (a key pair)",
            path: "/console/developers/keys/ck_test_nobody/revoke",
            fields: &[("code", "{code}")],
            may: ADMINS,
            ok: PASSED,
        },
        Form {
            name: "Add endpoint",
            path: "/console/developers/endpoints",
            fields: &[("url", "http://127.0.0.1:9/hook"), ("events", "*"), ("description", "{unique}")],
            may: ADMINS,
            ok: DONE,
        },
        Form {
            name: "Rotate secret",
            path: "/console/developers/endpoints/we_00000000000000000000000000000000/rotate",
            fields: &[("code", "{code}")],
            may: ADMINS,
            ok: PASSED,
        },
        Form {
            name: "Disable (an endpoint)",
            path: "/console/developers/endpoints/we_00000000000000000000000000000000/disable",
            fields: &[],
            may: ADMINS,
            ok: PASSED,
        },
        Form {
            name: "Redeliver",
            path: "/console/developers/events/evt_00000000000000000000000000000000/redeliver",
            fields: &[],
            may: ADMINS,
            ok: PASSED,
        },
        Form {
            name: "Send invitation (team)",
            path: "/console/team/invite",
            fields: &[("email", "{unique}@example.com"), ("role", "admin")],
            may: ADMINS,
            ok: DONE,
        },
        Form {
            name: "Change role",
            path: "/console/team/usr_00000000000000000000000000000000/role",
            fields: &[("role", "admin"), ("code", "{code}")],
            may: ADMINS,
            ok: PASSED,
        },
        Form { name: "Remove", path: "/console/team/usr_00000000000000000000000000000000/remove", fields: &[], may: ADMINS, ok: PASSED },
        // Operator.
        Form {
            name: "Open wallet",
            path: "/console/wallets",
            fields: &[("msisdn", "{unique_msisdn}"), ("first_name", "Table"), ("last_name", "Test")],
            may: OPERATOR,
            ok: DONE,
        },
        Form {
            name: "Raise KYC tier",
            path: "/console/wallets/{n}/kyc",
            fields: &[("tier", "1"), ("id_type", "national_id"), ("id_number", "{national_id}")],
            may: OPERATOR,
            ok: DONE,
        },
        Form { name: "Reset PIN attempts", path: "/console/wallets/{n}/pin-attempts", fields: &[], may: OPERATOR, ok: DONE },
        Form { name: "Lock", path: "/console/wallets/{n}/lock", fields: &[("reason", "table")], may: OPERATOR, ok: DONE },
        Form { name: "Unlock", path: "/console/wallets/{n}/unlock", fields: &[("reason", "table")], may: OPERATOR, ok: DONE },
        Form {
            name: "Create organisation",
            path: "/console/organisations",
            fields: &[("name", "{unique}"), ("kind", "merchant"), ("country", "KE")],
            may: OPERATOR,
            ok: DONE,
        },
        Form {
            name: "Issue credentials",
            path: "/console/organisations/{merchant}/credentials",
            fields: &[("mode", "test"), ("code", "{code}")],
            may: OPERATOR,
            ok: DONE,
        },
        Form {
            name: "Fund",
            path: "/console/organisations/{merchant}/fund",
            fields: &[("mode", "test"), ("amount", "1")],
            may: OPERATOR,
            ok: DONE,
        },
        Form {
            name: "Send invitation (organisation)",
            path: "/console/organisations/{merchant}/invite",
            fields: &[("email", "{unique}@example.com"), ("role", "viewer")],
            may: OPERATOR,
            ok: DONE,
        },
        Form { name: "Verify now", path: "/console/ledger/verify", fields: &[], may: OPERATOR, ok: DONE },
        // Corporate.
        Form {
            name: "Transfer",
            path: "/console/transfer",
            fields: &[("from", "payout"), ("to", "collection"), ("amount", "1.00")],
            may: MAKER,
            ok: PASSED,
        },
        Form {
            name: "Approve (a batch)",
            path: "/console/bulk-payouts/bp_00000000000000000000000000000000/approve",
            fields: &[("code", "{code}")],
            may: CHECKER,
            ok: PASSED,
        },
        Form {
            name: "Reject (a batch)",
            path: "/console/bulk-payouts/bp_00000000000000000000000000000000/reject",
            fields: &[("reason", "table")],
            may: CHECKER,
            ok: PASSED,
        },
        // Agent (the customer is one no wallet has: the pages answer with the reason).
        Form {
            name: "Continue (cash in)",
            path: "/console/cash-in",
            fields: &[("customer_msisdn", "{unique_msisdn}"), ("amount", "10.00")],
            may: AGENT,
            ok: PASSED,
        },
        Form {
            name: "Confirm (cash in)",
            path: "/console/cash-in/confirm",
            fields: &[("customer_msisdn", "{unique_msisdn}"), ("amount", "10.00")],
            may: AGENT,
            ok: PASSED,
        },
        Form {
            name: "Request approval (cash out)",
            path: "/console/cash-out",
            fields: &[("customer_msisdn", "{unique_msisdn}"), ("amount", "10.00")],
            may: AGENT,
            ok: PASSED,
        },
        // Everyone's.
        Form { name: "Test mode", path: "/console/mode", fields: &[("test_mode", "on"), ("back", "/console/")], may: &ROLES, ok: DONE },
        // Last: it sends the merchant's viewer to enrolment.
        Form {
            name: "Require two-factor for everyone",
            path: "/console/team/two-factor",
            fields: &[("require_two_factor", "on")],
            may: ADMINS,
            ok: DONE,
        },
    ]
}

const READERS: &[&str] =
    &["merchant admin", "merchant finance", "merchant viewer", "corporate admin", "corporate maker", "corporate checker"];
const MERCHANT_READERS: &[&str] = &["merchant admin", "merchant finance", "merchant viewer"];
/// Every section's page (GET), with the roles that may open it (the others get 403).
fn pages() -> Vec<(&'static str, &'static [&'static str])> {
    vec![
        // A merchant's sections: refused to a corporate's people by the one gate
        // (`chrome::section_allows`), by address as in the navigation.
        ("/console/charges", MERCHANT_READERS),
        ("/console/payment-requests", MERCHANT_READERS),
        ("/console/payouts", READERS),
        ("/console/transactions", READERS),
        ("/console/reconciliation", READERS),
        ("/console/developers", ADMINS),
        ("/console/team", ADMINS),
        ("/console/audit", &["merchant admin", "corporate admin", "operator operator"]),
        ("/console/wallets", OPERATOR),
        ("/console/bulk-payouts", &["corporate admin", "corporate maker", "corporate checker"]),
        ("/console/approvals", CHECKER),
        ("/console/float", AGENT),
        ("/console/float/statement", AGENT),
        ("/console/cash-in", AGENT),
        ("/console/cash-out", AGENT),
        ("/console/organisations", OPERATOR),
        ("/console/organisations/{merchant}", OPERATOR),
        ("/console/ledger", OPERATOR),
    ]
}

/// A person of the table, signed in.
struct Poster {
    role: &'static str,
    browser: Browser,
    someone: Someone,
    /// Recovery codes used so far.
    used: usize,
}

/// Every entry of the audit log (this test's own server: nothing else writes to it).
async fn audit_count(app: &TestApp) -> usize {
    let p = app.platform.clone();
    tokio::task::spawn_blocking(move || {
        let store: &dyn Store = p.store();
        // "Verify now" records its result when the background verification ends, which may be
        // while a later row is posted: that entry is nobody's refused form.
        let entries = malipo_service::ports::read(store, |tx| Ok(tx.audit_entries(&AuditFilter::default(), None, 1_000_000)?)).unwrap();
        entries.iter().filter(|e| e.action != "ledger.verified").count()
    })
    .await
    .unwrap()
}

fn fill(text: &str, poster: &mut Poster, n: &str, merchant: &str) -> String {
    let mut out = text.replace("{n}", n).replace("{merchant}", merchant);
    if out.contains("{unique_msisdn}") {
        out = out.replace("{unique_msisdn}", &msisdn("0000"));
    }
    if out.contains("{national_id}") {
        out = out.replace("{national_id}", &national_id());
    }
    if out.contains("{unique}") {
        out = out.replace("{unique}", &uuid::Uuid::new_v4().simple().to_string());
    }
    if out.contains("{code}") {
        let code = poster.someone.recovery.get(poster.used).cloned().unwrap_or_default();
        poster.used += 1;
        out = out.replace("{code}", &code);
    }
    out
}

async fn every_form_as_every_role(db: Db) {
    let app = TestApp::spawn(db).await;
    let merchant = app.org("merchant", "KE").await;
    app.fund(&merchant.org_id, Mode::Test, "100000").await;
    let corporate = app.org("corporate", "KE").await;
    let agent = app.org("agent", "KE").await;
    let operator = app.org("operator", "KE").await;
    let mut posters = Vec::new();
    for role in ROLES {
        let (kind, name) = role.split_once(' ').unwrap();
        let org = match kind {
            "merchant" => &merchant,
            "corporate" => &corporate,
            "agent" => &agent,
            _ => &operator,
        };
        let (browser, someone) = join(&app, &org.org_id, name).await;
        posters.push(Poster { role, browser, someone, used: 0 });
    }
    // The operator's wallet, for the wallet forms.
    let n = msisdn("0000");
    let op = posters.iter_mut().find(|p| p.role == "operator operator").unwrap();
    open_wallet(&mut op.browser, &n, "Table").await;

    let mut failures = Vec::new();
    for (path, may) in pages() {
        for poster in &mut posters {
            let page = poster.browser.get(&path.replace("{merchant}", &merchant.org_id)).await;
            let expected = if may.contains(&poster.role) { 200 } else { 403 };
            if page.status != expected {
                failures.push(format!("GET {path} as {}: {}, {expected} expected", poster.role, page.status));
            }
        }
    }
    for form in forms() {
        // Those who may not first, so that an allowed action (a lock) comes after the refusals.
        let order: Vec<usize> = (0..posters.len())
            .filter(|i| !form.may.contains(&posters[*i].role))
            .chain((0..posters.len()).filter(|i| form.may.contains(&posters[*i].role)))
            .collect();
        for i in order {
            let poster = &mut posters[i];
            let may = form.may.contains(&poster.role);
            let path = fill(form.path, poster, &n, &merchant.org_id);
            let csrf = poster.browser.get("/console/account").await.csrf();
            let key = uuid::Uuid::new_v4().to_string();
            let mut fields: Vec<(String, String)> = vec![("csrf_token".into(), csrf), ("idempotency_key".into(), key)];
            for (k, v) in form.fields {
                fields.push(((*k).to_owned(), fill(v, poster, &n, &merchant.org_id)));
            }
            let borrowed: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            let before = audit_count(&app).await;
            let answer = poster.browser.post(&path, &borrowed).await;
            let after = audit_count(&app).await;
            let fine = if may { form.ok.contains(&answer.status) } else { answer.status == 403 && after == before };
            if !fine {
                let done = if after == before { "nothing done" } else { "something done" };
                failures.push(format!(
                    "{} as {}: {} ({done}), {} expected",
                    form.name,
                    poster.role,
                    answer.status,
                    if may { "allowed" } else { "403" }
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{} wrong:\n{}", failures.len(), failures.join("\n"));
}
