//! The operator commands of contract section 13.

use clap::{Parser, Subcommand};
use malipo_auth::{OrgKind, Scopes};
use malipo_core::{Mode, OrgId};
use serde_json::json;

use crate::config::{CommonArgs, ServeArgs, Settings};

/// Malipo: collect money from customers' phones and pay money out.
///
/// With no command it serves (migrations, the API and the background workers), so `cargo run`
/// starts the service. Every option is also an environment variable (`MALIPO_…`, a `.env` file
/// is read if present).
#[derive(Debug, Parser)]
#[command(name = "malipo", version, about, args_conflicts_with_subcommands = true)]
pub struct Cli {
    /// The database, configuration and logging (when serving without a command).
    #[command(flatten)]
    pub common: CommonArgs,
    /// The server's options (when serving without a command).
    #[command(flatten)]
    pub serve: ServeArgs,
    /// What to do (default: serve).
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// What `malipo` was asked to do, with the settings it runs with.
#[derive(Debug)]
pub enum Action {
    /// Serve the API and run the workers.
    Serve(Settings),
    /// An operator command.
    Operator(Settings, Box<Command>),
}

impl Cli {
    /// The action and its settings. Operator commands take no server options: those come from
    /// the environment or the defaults.
    ///
    /// # Errors
    /// An invalid server variable in the environment.
    pub fn into_action(self) -> Result<Action, clap::Error> {
        Ok(match self.command {
            None => Action::Serve(Settings::new(self.common, self.serve)),
            Some(Command::Serve { common, serve }) => Action::Serve(Settings::new(common, serve)),
            Some(command) => {
                let common = command.common().clone();
                Action::Operator(Settings::new(common, ServeArgs::from_env()?), Box::new(command))
            }
        })
    }
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run migrations, then serve the API and run the background workers (the default).
    Serve {
        /// The database, configuration and logging.
        #[command(flatten)]
        common: CommonArgs,
        /// The server's options.
        #[command(flatten)]
        serve: ServeArgs,
    },
    /// Apply the pending database migrations and exit.
    Migrate {
        /// The database, configuration and logging.
        #[command(flatten)]
        common: CommonArgs,
    },
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
    /// People who use the console.
    #[command(subcommand)]
    User(UserCommand),
    /// Print the daily reconciliation report of an organisation's account: the same object as
    /// `GET /api/v1/reconciliation/daily`.
    Recon {
        /// The local calendar day in the organisation's country, YYYY-MM-DD.
        #[arg(long)]
        date: String,
        /// The organisation (`org_…`).
        #[arg(long)]
        org: String,
        /// test or live.
        #[arg(long, default_value = "live")]
        mode: String,
        /// An account kind (collection, payout, agent_float) or an acc_ id; default collection
        /// (an organisation with one account: that one).
        #[arg(long)]
        account: Option<String>,
        /// Print one JSON object.
        #[arg(long)]
        json: bool,
        /// The database, configuration and logging.
        #[command(flatten)]
        common: CommonArgs,
    },
}

impl Command {
    /// The database and configuration options of the command.
    fn common(&self) -> &CommonArgs {
        match self {
            Command::Serve { common, .. } | Command::Migrate { common } => common,
            Command::Org(OrgCommand::Create { common, .. } | OrgCommand::List { common, .. }) => common,
            Command::Credentials(CredentialsCommand::Issue { common, .. } | CredentialsCommand::Revoke { common, .. }) => common,
            Command::Account(AccountCommand::Fund { common, .. }) => common,
            Command::Ledger(LedgerCommand::Verify { common, .. }) => common,
            Command::Recon { common, .. } => common,
            Command::User(UserCommand::Invite { common, .. }) => common,
        }
    }
}

/// `malipo org ...`
#[derive(Debug, Subcommand)]
pub enum OrgCommand {
    /// Create an organisation with its accounts in both modes and print its test credential.
    Create {
        /// Display name.
        #[arg(long)]
        name: String,
        /// merchant, corporate, agent, operator or gateway.
        #[arg(long)]
        kind: String,
        /// ISO 3166 alpha-2 country (decides the currency).
        #[arg(long, default_value = "KE")]
        country: String,
        /// Print one JSON object.
        #[arg(long)]
        json: bool,
        /// The database, configuration and logging.
        #[command(flatten)]
        common: CommonArgs,
    },
    /// List the organisations, newest first: their ids, for `credentials issue --org`.
    List {
        /// Print one JSON object per line.
        #[arg(long)]
        json: bool,
        /// The database, configuration and logging.
        #[command(flatten)]
        common: CommonArgs,
    },
}

/// `malipo credentials ...`
#[derive(Debug, Subcommand)]
pub enum CredentialsCommand {
    /// Issue another credential for an organisation (live ones after review) and print it.
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
        /// The database, configuration and logging.
        #[command(flatten)]
        common: CommonArgs,
    },
    /// Revoke a credential and every token issued to it.
    Revoke {
        /// The credential.
        #[arg(long)]
        client_id: String,
        /// The database, configuration and logging.
        #[command(flatten)]
        common: CommonArgs,
    },
}

/// `malipo account ...`
#[derive(Debug, Subcommand)]
pub enum AccountCommand {
    /// Fund an agent's float or a merchant's payout account from the operator's e-money
    /// issuance account (one balanced ledger entry); prints its transaction id.
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
        /// The database, configuration and logging.
        #[command(flatten)]
        common: CommonArgs,
    },
}

/// `malipo user ...`
#[derive(Debug, Subcommand)]
pub enum UserCommand {
    /// Invite a person into an organisation (its first, usually its admin): prints a one-time
    /// link to the console, valid 72 hours, where they set their name and password (and turn on
    /// two-factor authentication where their role requires it).
    Invite {
        /// The organisation (`org_…`).
        #[arg(long)]
        org: String,
        /// Their email.
        #[arg(long)]
        email: String,
        /// Their role: merchant admin, finance or viewer; corporate admin, maker or checker;
        /// agent; operator.
        #[arg(long)]
        role: String,
        /// Their name (they may change it when they accept).
        #[arg(long)]
        name: Option<String>,
        /// Print one JSON object: `{"user_id", "invite_url", "expires_at"}`.
        #[arg(long)]
        json: bool,
        /// The database, configuration and logging.
        #[command(flatten)]
        common: CommonArgs,
    },
}

/// `malipo ledger ...`
#[derive(Debug, Subcommand)]
pub enum LedgerCommand {
    /// Check the ledger: every journal balances, every stored balance equals the sum of its
    /// postings, no account is below its reservations, and the audit chain of each ledger is
    /// unbroken. Seals every committed journal not yet sealed first (as the servers' sealers
    /// do), then checks; says how many journals were checked and how many are still unsealed
    /// (committed since: checked but for their chain entry). Prints each violation and exits 1
    /// if there is any. With --org, only that organisation's part: its accounts and the wallets
    /// that paid or were paid by them, every journal touching them, and each journal's own
    /// audit-chain entry.
    Verify {
        /// Only this mode (test or live; default both).
        #[arg(long, conflicts_with = "org")]
        mode: Option<String>,
        /// Only this organisation's part of the ledger.
        #[arg(long)]
        org: Option<String>,
        /// Print one JSON object.
        #[arg(long)]
        json: bool,
        /// The database, configuration and logging.
        #[command(flatten)]
        common: CommonArgs,
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
    if let Command::Migrate { .. } = command {
        // Migrate before assembling the platform (which migrates too), so that the count is
        // what this command applied.
        let store =
            malipo_store_diesel::DieselStore::connect_with_deadline(&settings.database_url, settings.db_pool_size, settings.deadline())
                .map_err(|e| anyhow::anyhow!("cannot open the database: {e}"))?;
        let n = store.migrate().map_err(|e| anyhow::anyhow!("migrations failed: {e}"))?;
        crate::operator_platform(settings)?;
        println!("migrations applied; {n} pending were run");
        return Ok(0);
    }
    let (platform, _store) = crate::operator_platform(settings)?;
    match command {
        Command::Serve { .. } | Command::Migrate { .. } => unreachable_serve(),
        Command::Org(OrgCommand::Create { name, kind, country, json, .. }) => {
            let kind: OrgKind = kind.parse().map_err(|e| anyhow::anyhow!("{e}"))?;
            let issued = platform.access().create_org(&name, kind, &country).map_err(|e| failure(e, "organisation"))?;
            print_credential(&issued, json);
            Ok(0)
        }
        Command::Org(OrgCommand::List { json, .. }) => {
            for org in platform.back_office().all_organisations().map_err(|e| failure(e, "organisations"))? {
                let created_at = org.created_at.to_rfc3339();
                if json {
                    let line = json!({"id": org.id.as_str(), "kind": org.kind.as_str(), "country": org.country, "name": org.name, "created_at": created_at});
                    println!("{line}");
                } else {
                    println!("{}\t{}\t{}\t{}\t{created_at}", org.id, org.kind.as_str(), org.country, org.name);
                }
            }
            Ok(0)
        }
        Command::Credentials(CredentialsCommand::Issue { org, mode: m, scopes, json, .. }) => {
            let scopes = scopes.map(|s| Scopes::parse(&s)).transpose().map_err(|e| anyhow::anyhow!("{e}"))?;
            let issued = platform
                .access()
                .issue_credential(&org_id(&org)?, mode(&m)?, scopes)
                .map_err(|e| failure(e, &format!("organisation {org}")))?;
            print_credential(&issued, json);
            Ok(0)
        }
        Command::Credentials(CredentialsCommand::Revoke { client_id, .. }) => {
            platform.access().revoke_credential(&client_id).map_err(|e| match e {
                malipo_service::ServiceError::NotFound => {
                    anyhow::anyhow!("no active credential {client_id} (unknown, or already revoked)")
                }
                other => failure(other, "credential"),
            })?;
            println!("revoked {client_id} and its tokens");
            Ok(0)
        }
        Command::Account(AccountCommand::Fund { org, mode: m, amount, .. }) => {
            let tx =
                platform.accounts().fund(&org_id(&org)?, mode(&m)?, &amount).map_err(|e| failure(e, &format!("organisation {org}")))?;
            println!("{}", json!({"transaction_id": tx.as_str()}));
            Ok(0)
        }
        Command::Ledger(LedgerCommand::Verify { mode: m, org, json, .. }) => {
            // Seal what is committed and apply the lines waiting on hot accounts first, then
            // check (`Accounts::seal_and_check`, which the console's "Verify now" runs too): only
            // journals committed since remain unsealed.
            let (sealed, check) = match org {
                Some(org) => {
                    platform.accounts().seal_and_check_orgs(&[org_id(&org)?]).map_err(|e| failure(e, &format!("organisation {org}")))?
                }
                None => {
                    let m = m.as_deref().map(mode).transpose()?;
                    platform.accounts().seal_and_check(m).map_err(|e| failure(e, "ledger"))?
                }
            };
            let violations = &check.violations;
            if json {
                let list: Vec<String> = violations.iter().map(ToString::to_string).collect();
                println!(
                    "{}",
                    json!({"ok": violations.is_empty(), "violations": list, "journals": check.journals, "sealed_now": sealed, "unsealed": check.unsealed})
                );
            } else if violations.is_empty() {
                println!("ledger ok: every journal balances, every balance equals its postings, the audit chain is unbroken");
            } else {
                for v in violations {
                    println!("VIOLATION: {v}");
                }
            }
            if !json {
                println!(
                    "{} journals checked; {sealed} sealed just now; {} not yet sealed (checked but for their chain entry)",
                    check.journals, check.unsealed
                );
            }
            Ok(if violations.is_empty() { 0 } else { 1 })
        }
        Command::User(UserCommand::Invite { org, email, role, name, json, .. }) => {
            let invitee = malipo_service::Invitee { email, role, name };
            let invited = platform
                .people()
                .invite(malipo_service::Inviter::Operator, &org_id(&org)?, &invitee)
                .map_err(|e| failure(e, &format!("organisation {org}")))?;
            let url = format!("{}/invite/{}", settings.console_url(), invited.token);
            let expires_at = invited.expires_at.to_rfc3339();
            if json {
                println!("{}", json!({"user_id": invited.user_id.as_str(), "invite_url": url, "expires_at": expires_at}));
            } else {
                println!("user_id:    {}\ninvite_url: {url}\nexpires_at: {expires_at}\n(the link works once)", invited.user_id);
            }
            Ok(0)
        }
        Command::Recon { date, org, mode: m, account, json, .. } => recon(&platform, &date, &org, &m, account.as_deref(), json),
    }
}

/// `malipo recon`: the report as JSON, or as lines for people.
fn recon(platform: &malipo_service::Platform, date: &str, org: &str, m: &str, account: Option<&str>, as_json: bool) -> anyhow::Result<i32> {
    let report = platform
        .transactions()
        .daily_of(&org_id(org)?, mode(m)?, date, account)
        .map_err(|e| failure(e, &format!("organisation {org} or its account")))?;
    let dto = malipo_http::routes::transactions::dto::ReconciliationDto::from(&report);
    if as_json {
        println!("{}", serde_json::to_string(&dto)?);
        return Ok(0);
    }
    println!("{} {} account of {org} ({}), {} to {}", dto.date, dto.account, dto.time_zone, dto.from, dto.to);
    println!("opening  {} {}", dto.currency, dto.opening_balance);
    println!("credits  {} {}", dto.currency, dto.credits);
    println!("debits   {} {}", dto.currency, dto.debits);
    println!("fees     {} {}", dto.currency, dto.fees);
    println!("closing  {} {}", dto.currency, dto.closing_balance);
    println!("transactions {}", dto.transaction_count);
    for (kind, t) in dto.by_type.iter().filter(|(_, t)| t.count > 0) {
        println!("  {kind:<16} {:>6}  amount {}  fee {}  net {}", t.count, t.amount, t.fee, t.net);
    }
    println!("checksum {}", dto.checksum);
    Ok(0)
}

fn unreachable_serve() -> anyhow::Result<i32> {
    Err(anyhow::anyhow!("serve is handled by main, migrate above"))
}
