//! The first-run experience: a demo merchant with working sandbox credentials, printed at start.

use std::path::PathBuf;

use malipo_auth::OrgKind;
use malipo_service::{read, IssuedCredential, Platform};
use serde::{Deserialize, Serialize};

/// The demo merchant's name.
pub const DEMO_NAME: &str = "Demo Merchant";

#[derive(Serialize, Deserialize)]
struct Saved {
    organisation_id: String,
    client_id: String,
    client_secret: String,
}

/// Where a SQLite database's demo credentials are kept (beside the database file, mode 0600),
/// so a development restart can print them again. PostgreSQL deployments keep nothing on disk.
fn saved_path(database_url: &str) -> Option<PathBuf> {
    let path = database_url.strip_prefix("sqlite://")?;
    Some(PathBuf::from(path).parent().map(|p| p.join("demo-credentials.json")).unwrap_or_else(|| "demo-credentials.json".into()))
}

fn save(path: &PathBuf, c: &IssuedCredential) -> std::io::Result<()> {
    let saved = Saved { organisation_id: c.org_id.to_string(), client_id: c.client_id.clone(), client_secret: c.client_secret.clone() };
    let text = serde_json::to_string_pretty(&saved).map_err(std::io::Error::other)?;
    std::fs::write(path, text)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
    }
    Ok(())
}

/// Creates the demo merchant on an empty database and prints its test credential with a curl
/// example; on later starts prints what is known.
///
/// # Errors
/// Storage failures.
pub fn ensure_demo(platform: &Platform, database_url: &str, base: &str) -> anyhow::Result<()> {
    let existing = read(platform.store(), |tx| Ok(tx.org_by_name(DEMO_NAME)?)).map_err(|e| anyhow::anyhow!("{e}"))?;
    let saved_at = saved_path(database_url);
    let creds = match existing {
        None => {
            let issued = platform.access().create_org(DEMO_NAME, OrgKind::Merchant, "KE").map_err(|e| anyhow::anyhow!("{e}"))?;
            if let Some(path) = &saved_at {
                if let Err(e) = save(path, &issued) {
                    tracing::warn!(error = %e, "could not save the demo credentials");
                }
            }
            Some((issued.client_id, issued.client_secret))
        }
        Some(org) => {
            let saved = saved_at
                .as_ref()
                .and_then(|p| std::fs::read_to_string(p).ok())
                .and_then(|t| serde_json::from_str::<Saved>(&t).ok())
                .filter(|s| s.organisation_id == org.id.as_str());
            match saved {
                Some(s) => Some((s.client_id, s.client_secret)),
                None => {
                    println!(
                        "Demo merchant {} exists; its secret was printed at its first start.\n\
                         Issue another test credential with: malipo credentials issue --org {} --mode test",
                        org.id, org.id
                    );
                    None
                }
            }
        }
    };
    if let Some((id, secret)) = creds {
        println!("{}", banner(base, &id, &secret));
    }
    Ok(())
}

/// The text printed at start: the credential and a curl session that works as printed.
pub fn banner(base: &str, client_id: &str, client_secret: &str) -> String {
    format!(
        r#"
Malipo sandbox is ready at {base}/api/v1  (OpenAPI: {base}/api/v1/openapi.json)

Demo merchant, test mode:
  client_id:     {client_id}
  client_secret: {client_secret}

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
