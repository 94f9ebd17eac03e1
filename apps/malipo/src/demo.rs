//! The first-run experience: a demo merchant with working sandbox credentials, printed at start.

use std::path::PathBuf;

use malipo_auth::OrgKind;
use malipo_service::{read, IssuedCredential, Platform};
use serde::{Deserialize, Serialize};

/// The demo merchant's name.
pub const DEMO_NAME: &str = "Demo Merchant";
/// The demo user's email (a reserved domain: nothing is ever sent to it).
pub const DEMO_EMAIL: &str = "demo@example.com";

#[derive(Serialize, Deserialize)]
struct Saved {
    organisation_id: String,
    client_id: String,
    client_secret: String,
    /// The demo user's password (older files have none).
    #[serde(default)]
    console_password: Option<String>,
}

/// Where a SQLite database's demo credentials are kept (beside the database file, mode 0600),
/// so a development restart can print them again. PostgreSQL deployments keep nothing on disk.
fn saved_path(database_url: &str) -> Option<PathBuf> {
    let path = database_url.strip_prefix("sqlite://")?;
    Some(PathBuf::from(path).parent().map(|p| p.join("demo-credentials.json")).unwrap_or_else(|| "demo-credentials.json".into()))
}

fn save(path: &PathBuf, c: &IssuedCredential, console_password: Option<&str>) -> std::io::Result<()> {
    let saved = Saved {
        organisation_id: c.org_id.to_string(),
        client_id: c.client_id.clone(),
        client_secret: c.client_secret.clone(),
        console_password: console_password.map(str::to_owned),
    };
    let text = serde_json::to_string_pretty(&saved).map_err(std::io::Error::other)?;
    std::fs::write(path, text)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
    }
    Ok(())
}

/// A new password for the demo user: 20 random letters and digits.
fn demo_password() -> String {
    use rand::Rng;
    rand::rngs::OsRng.sample_iter(&rand::distributions::Alphanumeric).take(20).map(char::from).collect()
}

/// Creates the demo user (an admin of the demo merchant who needs no second factor) if it does
/// not exist yet; its password when created.
fn ensure_demo_user(platform: &Platform, org_id: &malipo_core::OrgId) -> anyhow::Result<Option<String>> {
    let password = demo_password();
    let created = platform.people().ensure_demo_user(org_id, DEMO_EMAIL, "Demo Admin", &password).map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(created.then_some(password))
}

/// Creates the demo merchant and its demo user on an empty database and prints its test
/// credential with a curl example, and the console's address with the user's email and
/// password; on later starts prints what is known.
///
/// # Errors
/// Storage failures.
pub fn ensure_demo(platform: &Platform, database_url: &str, base: &str) -> anyhow::Result<()> {
    let existing = read(platform.store(), |tx| Ok(tx.org_by_name(DEMO_NAME)?)).map_err(|e| anyhow::anyhow!("{e}"))?;
    let saved_at = saved_path(database_url);
    let creds = match existing {
        None => {
            let issued = platform.access().create_org(DEMO_NAME, OrgKind::Merchant, "KE").map_err(|e| anyhow::anyhow!("{e}"))?;
            let password = ensure_demo_user(platform, &issued.org_id)?;
            if let Some(path) = &saved_at {
                if let Err(e) = save(path, &issued, password.as_deref()) {
                    tracing::warn!(error = %e, "could not save the demo credentials");
                }
            }
            Some((issued.org_id, issued.client_id, issued.client_secret, password))
        }
        Some(org) => {
            let saved = saved_at
                .as_ref()
                .and_then(|p| std::fs::read_to_string(p).ok())
                .and_then(|t| serde_json::from_str::<Saved>(&t).ok())
                .filter(|s| s.organisation_id == org.id.as_str());
            // A database from before the console gets its demo user now.
            let created = ensure_demo_user(platform, &org.id)?;
            match saved {
                Some(s) => {
                    let password = created.or(s.console_password.clone());
                    if let (Some(path), Some(p)) = (&saved_at, &password) {
                        let issued = IssuedCredential {
                            org_id: org.id.clone(),
                            client_id: s.client_id.clone(),
                            client_secret: s.client_secret.clone(),
                            mode: malipo_core::Mode::Test,
                            scopes: OrgKind::Merchant.default_scopes(),
                        };
                        if let Err(e) = save(path, &issued, Some(p)) {
                            tracing::warn!(error = %e, "could not save the demo credentials");
                        }
                    }
                    Some((org.id, s.client_id, s.client_secret, password))
                }
                None => {
                    println!(
                        "Demo merchant {} exists; its secret was printed at its first start.\n\
                         Issue another test credential with: malipo credentials issue --org {} --mode test",
                        org.id, org.id
                    );
                    println!("{}", console_banner(base, created.as_deref()));
                    None
                }
            }
        }
    };
    if let Some((org_id, id, secret, password)) = creds {
        println!("{}", banner(base, org_id.as_str(), &id, &secret));
        println!("{}", console_banner(base, password.as_deref()));
    }
    Ok(())
}

/// The console's part of the text printed at start: its address and the demo user.
pub fn console_banner(base: &str, password: Option<&str>) -> String {
    let password = password.unwrap_or("(printed at its first start)");
    format!(
        "Console (for people) at {base}/console/\n  email:    {DEMO_EMAIL}\n  password: {password}\n  \
         (the demo user needs no second factor; invite real people from Team)\n"
    )
}

/// The text printed at start: the credential and a curl session that works as printed.
pub fn banner(base: &str, org_id: &str, client_id: &str, client_secret: &str) -> String {
    format!(
        r#"
Malipo sandbox is ready at {base}/api/v1  (OpenAPI: {base}/api/v1/openapi.json)

Demo merchant, test mode:
  organisation:  {org_id}
  client_id:     {client_id}
  client_secret: {client_secret}
  (another key pair, a checker's say: malipo credentials issue --org {org_id} --mode test)

Try it:
  TOKEN=$(curl -s -X POST {base}/api/v1/oauth/token -H 'Content-Type: application/json' \
    -d '{{"client_id":"{client_id}","client_secret":"{client_secret}"}}' \
    | sed -E 's/.*"access_token":"([^"]+)".*/\1/')
  REF=ORDER-$(date +%s)
  curl -s -X POST {base}/api/v1/partner/stk -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
    -d '{{"payer_msisdn":"254712345678","amount":"250.00","reference":"'$REF'","idem":"'$REF'"}}'
  sleep 3
  curl -s "{base}/api/v1/partner/status?reference=$REF" -H "Authorization: Bearer $TOKEN"
  curl -s {base}/api/v1/partner/balance -H "Authorization: Bearer $TOKEN"
"#
    )
}
