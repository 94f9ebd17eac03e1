//! The few pieces of the HTTP contract (`/work/shared/spec/api.md`) the load generator uses.

use std::path::Path;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use reqwest::Client;
use serde::Deserialize;
use serde_json::json;
use uuid::Uuid;

/// One client credential, as printed by `malipo org create --json` (extra fields are ignored).
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct Credentials {
    pub(crate) client_id: String,
    pub(crate) client_secret: String,
}

/// Reads a JSON-lines file of credentials (blank lines are skipped).
pub(crate) fn read_credentials(path: &Path) -> Result<Vec<Credentials>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let creds = text
        .lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(i, line)| serde_json::from_str(line).with_context(|| format!("{} line {}: not a credential", path.display(), i + 1)))
        .collect::<Result<Vec<Credentials>>>()?;
    if creds.is_empty() {
        bail!("{}: no credentials", path.display());
    }
    Ok(creds)
}

/// One HTTP client with a keep-alive pool large enough for `concurrency` connections.
pub(crate) fn client(concurrency: usize) -> Result<Client> {
    Ok(Client::builder().pool_max_idle_per_host(concurrency.max(1)).tcp_nodelay(true).timeout(Duration::from_secs(30)).build()?)
}

/// `{base_url}` without a trailing slash (it includes `/api/v1`).
pub(crate) fn base(url: &str) -> String {
    url.trim_end_matches('/').to_owned()
}

#[derive(Deserialize)]
struct TokenResponse {
    access_token: String,
}

/// `POST {base}/oauth/token` with the JSON form; returns the bearer token.
pub(crate) async fn token(client: &Client, base: &str, creds: &Credentials) -> Result<String> {
    let resp = client
        .post(format!("{base}/oauth/token"))
        .json(&json!({"client_id": creds.client_id, "client_secret": creds.client_secret}))
        .send()
        .await
        .context("POST /oauth/token")?;
    let status = resp.status();
    let body = resp.text().await?;
    if !status.is_success() {
        bail!("POST /oauth/token for {}: {status}: {body}", creds.client_id);
    }
    let parsed: TokenResponse = serde_json::from_str(&body).context("POST /oauth/token: no access_token")?;
    Ok(parsed.access_token)
}

/// A random valid Kenyan MSISDN `2547XXXXXXXX` whose last four digits avoid the sandbox's magic
/// outcomes (`1001`..`1009`), so the charge is approved and completed.
pub(crate) fn random_msisdn() -> String {
    loop {
        let subscriber = Uuid::new_v4().as_u128() % 100_000_000;
        if !(1001..=1009).contains(&(subscriber % 10_000)) {
            return format!("2547{subscriber:08}");
        }
    }
}

/// The payer of request `n`: with `payers` > 0 one of that many customers in turn (each a
/// wallet from its first payment on, as returning customers are), else a new random one.
pub(crate) fn payer_msisdn(n: u64, payers: u64) -> String {
    match n.checked_rem(payers) {
        // Ends in 0: never one of the sandbox's outcome numbers (…1001 to …1009).
        Some(i) => format!("2547{:08}", 20_000_000 + i.min(7_999_999) * 10),
        None => random_msisdn(),
    }
}

/// The body of one `POST /partner/stk`, its payer as [`payer_msisdn`] says.
pub(crate) fn charge_body(n: u64, payers: u64) -> serde_json::Value {
    json!({
        "payer_msisdn": payer_msisdn(n, payers),
        "amount": "100.00",
        "reference": format!("bench-{n}"),
        "idem": Uuid::new_v4().to_string(),
    })
}

/// One page of `GET /partner/charges` (the `ussd` subcommand counts the charges, nothing more).
#[derive(Debug, Deserialize)]
pub(crate) struct Page {
    pub(crate) data: Vec<serde::de::IgnoredAny>,
    #[serde(default)]
    pub(crate) has_more: bool,
    #[serde(default)]
    pub(crate) next_cursor: Option<String>,
}

/// `GET {base}/partner/charges?limit=..[&state=..][&cursor=..]`.
pub(crate) async fn list_charges(
    client: &Client,
    base: &str,
    token: &str,
    state: Option<&str>,
    limit: u32,
    cursor: Option<&str>,
) -> Result<Page> {
    let mut query = vec![("limit", limit.to_string())];
    if let Some(state) = state {
        query.push(("state", state.to_owned()));
    }
    if let Some(cursor) = cursor {
        query.push(("cursor", cursor.to_owned()));
    }
    let resp =
        client.get(format!("{base}/partner/charges")).bearer_auth(token).query(&query).send().await.context("GET /partner/charges")?;
    let status = resp.status();
    let body = resp.bytes().await?;
    if !status.is_success() {
        bail!("GET /partner/charges: {status}: {}", String::from_utf8_lossy(&body));
    }
    serde_json::from_slice(&body).context("GET /partner/charges: unexpected body")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn msisdns_are_kenyan_and_never_magic() {
        for _ in 0..10_000 {
            let m = random_msisdn();
            assert_eq!(m.len(), 12);
            assert!(m.starts_with("2547"));
            assert!(m.bytes().all(|b| b.is_ascii_digit()));
            let last4: u32 = m[8..].parse().unwrap();
            assert!(!(1001..=1009).contains(&last4));
        }
    }

    #[test]
    fn base_drops_trailing_slash() {
        assert_eq!(base("http://127.0.0.1:1/api/v1/"), "http://127.0.0.1:1/api/v1");
    }
}
