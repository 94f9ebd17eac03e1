//! The operator commands of contract section 13.

use clap::{Parser, Subcommand};
use malipo_auth::{OrgKind, Scopes};
use malipo_core::{Mode, OrgId};
use serde_json::json;

use crate::config::Settings;

/// Malipo: collect money from customers' phones and pay money out.
#[derive(Debug, Parser)]
#[command(name = "malipo", version, about)]
pub struct Cli {
    /// Configuration (environment variables or flags).
    #[command(flatten)]
    pub settings: Settings,
    /// What to do (default: serve).
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run migrations, then serve the API and run the background workers.
    Serve,
    /// Apply pending migrations and exit.
    Migrate,
    /// Organisations.
    #[command(subcommand)]
    Org(OrgCommand),
    /// Credentials (key pairs).
    #[command(subcommand)]
    Credentials(CredentialsCommand),
    /// Accounts.
    #[command(subcommand)]
    Account(AccountCommand),
    /// The ledger.
    #[command(subcommand)]
    Ledger(LedgerCommand),
}

/// `malipo org ...`
#[derive(Debug, Subcommand)]
pub enum OrgCommand {
    /// Create an organisation with its accounts and print its test credential.
    Create {
        /// Display name.
        #[arg(long)]
        name: String,
        /// merchant, agent, operator or gateway.
        #[arg(long)]
        kind: String,
        /// ISO 3166 alpha-2 country (decides the currency).
        #[arg(long, default_value = "KE")]
        country: String,
        /// Print one JSON object.
        #[arg(long)]
        json: bool,
    },
}

/// `malipo credentials ...`
#[derive(Debug, Subcommand)]
pub enum CredentialsCommand {
    /// Issue another credential (live ones after review).
    Issue {
        /// The organisation.
        #[arg(long)]
        org: String,
        /// test or live.
        #[arg(long)]
        mode: String,
        /// Space-separated scopes (default: the kind's).
        #[arg(long)]
        scopes: Option<String>,
        /// Print one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Revoke a credential and all its tokens.
    Revoke {
        /// The credential.
        #[arg(long)]
        client_id: String,
    },
}

/// `malipo account ...`
#[derive(Debug, Subcommand)]
pub enum AccountCommand {
    /// Fund an agent's float or a merchant's payout account from e-money issuance.
    Fund {
        /// The organisation.
        #[arg(long)]
        org: String,
        /// test or live.
        #[arg(long)]
        mode: String,
        /// Amount in major units.
        #[arg(long)]
        amount: String,
    },
}

/// `malipo ledger ...`
#[derive(Debug, Subcommand)]
pub enum LedgerCommand {
    /// Check every invariant; exit non-zero on any violation.
    Verify {
        /// Only this mode.
        #[arg(long)]
        mode: Option<String>,
        /// Print one JSON object.
        #[arg(long)]
        json: bool,
    },
}

fn mode(s: &str) -> anyhow::Result<Mode> {
    s.parse::<Mode>().map_err(|e| anyhow::anyhow!("{e}"))
}

fn org_id(s: &str) -> anyhow::Result<OrgId> {
    OrgId::parse(s).map_err(|e| anyhow::anyhow!("{e}"))
}

/// A use case's failure as a message for the operator (`subject` names what was looked for).
fn failure(e: malipo_service::ServiceError, subject: &str) -> anyhow::Error {
    use malipo_service::ServiceError;
    match e {
        ServiceError::NotFound => anyhow::anyhow!("{subject} not found"),
        ServiceError::Validation(errors) => {
            let messages: Vec<String> = errors
                .iter()
                .map(|f| if f.message.starts_with(&f.field) { f.message.clone() } else { format!("{}: {}", f.field, f.message) })
                .collect();
            anyhow::anyhow!("{}", messages.join("; "))
        }
        other => anyhow::anyhow!("{other}"),
    }
}

fn print_credential(c: &malipo_service::IssuedCredential, as_json: bool) {
    if as_json {
        println!(
            "{}",
            json!({
                "organisation_id": c.org_id.as_str(),
                "client_id": c.client_id,
                "client_secret": c.client_secret,
                "mode": c.mode.as_str(),
                "scopes": c.scopes.to_string(),
            })
        );
    } else {
        println!("organisation_id: {}\nclient_id:       {}\nclient_secret:   {}\nmode:            {}\nscopes:          {}\n(the secret is shown only now)", c.org_id, c.client_id, c.client_secret, c.mode, c.scopes);
    }
}

/// Runs an operator command (everything but `serve`). Returns the process exit code.
///
/// # Errors
/// Failures, with a message for the operator.
pub fn run(settings: &Settings, command: Command) -> anyhow::Result<i32> {
    if let Command::Migrate = command {
        // Migrate before assembling the platform (which migrates too), so that the count is
        // what this command applied.
        let store = malipo_store_diesel::DieselStore::connect(&settings.database_url, settings.db_pool_size)
            .map_err(|e| anyhow::anyhow!("cannot open the database: {e}"))?;
        let n = store.migrate().map_err(|e| anyhow::anyhow!("migrations failed: {e}"))?;
        crate::operator_platform(settings)?;
        println!("migrations applied; {n} pending were run");
        return Ok(0);
    }
    let (platform, _store) = crate::operator_platform(settings)?;
    match command {
        Command::Serve | Command::Migrate => unreachable_serve(),
        Command::Org(OrgCommand::Create { name, kind, country, json }) => {
            let kind: OrgKind = kind.parse().map_err(|e| anyhow::anyhow!("{e}"))?;
            let issued = platform.create_org(&name, kind, &country).map_err(|e| failure(e, "organisation"))?;
            print_credential(&issued, json);
            Ok(0)
        }
        Command::Credentials(CredentialsCommand::Issue { org, mode: m, scopes, json }) => {
            let scopes = scopes.map(|s| Scopes::parse(&s)).transpose().map_err(|e| anyhow::anyhow!("{e}"))?;
            let issued =
                platform.issue_credential(&org_id(&org)?, mode(&m)?, scopes).map_err(|e| failure(e, &format!("organisation {org}")))?;
            print_credential(&issued, json);
            Ok(0)
        }
        Command::Credentials(CredentialsCommand::Revoke { client_id }) => {
            platform.revoke_credential(&client_id).map_err(|e| match e {
                malipo_service::ServiceError::NotFound => {
                    anyhow::anyhow!("no active credential {client_id} (unknown, or already revoked)")
                }
                other => failure(other, "credential"),
            })?;
            println!("revoked {client_id} and its tokens");
            Ok(0)
        }
        Command::Account(AccountCommand::Fund { org, mode: m, amount }) => {
            let tx = platform.fund_account(&org_id(&org)?, mode(&m)?, &amount).map_err(|e| failure(e, &format!("organisation {org}")))?;
            println!("{}", json!({"transaction_id": tx.as_str()}));
            Ok(0)
        }
        Command::Ledger(LedgerCommand::Verify { mode: m, json }) => {
            let m = m.as_deref().map(mode).transpose()?;
            let violations = platform.verify_ledger(m).map_err(|e| failure(e, "ledger"))?;
            if json {
                let list: Vec<String> = violations.iter().map(ToString::to_string).collect();
                println!("{}", json!({"ok": violations.is_empty(), "violations": list}));
            } else if violations.is_empty() {
                println!("ledger ok: every journal balances, every balance equals its postings, the audit chain is unbroken");
            } else {
                for v in &violations {
                    println!("VIOLATION: {v}");
                }
            }
            Ok(if violations.is_empty() { 0 } else { 1 })
        }
    }
}

fn unreachable_serve() -> anyhow::Result<i32> {
    Err(anyhow::anyhow!("serve is handled by main, migrate above"))
}
