//! The bearer token: one per client, shared by every clone and task, fetched through the `oauth2`
//! crate's client credentials grant, refreshed before it expires (and once on a 401) by one task
//! while the others wait.

use std::time::{Duration, Instant};

use oauth2::basic::BasicClient;
use oauth2::{ClientId, ClientSecret, EndpointNotSet, EndpointSet, TokenResponse, TokenUrl};
use tokio::sync::Mutex;

use crate::operations as ops;
use crate::{ApiError, Error};

/// A token this close to its expiry is refreshed before use.
const EARLY: Duration = Duration::from_secs(60);

type Oauth = BasicClient<EndpointNotSet, EndpointNotSet, EndpointNotSet, EndpointNotSet, EndpointSet>;

pub(crate) struct Tokens {
    oauth: Oauth,
    http: reqwest::Client,
    /// `{api}/oauth/revoke`, and the key pair that authenticates there.
    revoke_url: String,
    client_id: String,
    client_secret: String,
    current: Mutex<Option<Current>>,
}

/// A token that could not be had, and whether trying again may help.
#[derive(Debug)]
pub(crate) struct TokenFailure {
    pub(crate) error: Error,
    /// The token endpoint could not be reached (a network error), rather than refused.
    pub(crate) retry: bool,
}

#[derive(Clone)]
struct Current {
    secret: String,
    expires: Instant,
}

impl Tokens {
    /// Tokens from `{api}/oauth/token`, revoked at `{api}/oauth/revoke`.
    pub(crate) fn new(api: &str, client_id: &str, client_secret: &str, http: reqwest::Client) -> Result<Self, Error> {
        let token_url = format!("{api}/oauth/token");
        let url = TokenUrl::new(token_url.clone()).map_err(|e| Error::config(format!("token URL {token_url}: {e}")))?;
        let oauth = BasicClient::new(ClientId::new(client_id.to_owned()))
            .set_client_secret(ClientSecret::new(client_secret.to_owned()))
            .set_token_uri(url);
        Ok(Tokens {
            oauth,
            http,
            revoke_url: format!("{api}{}", ops::REVOKE_TOKEN.path),
            client_id: client_id.to_owned(),
            client_secret: client_secret.to_owned(),
            current: Mutex::new(None),
        })
    }

    /// A token valid for at least a minute more: the cached one, or a new one fetched by this
    /// task while every other task waits for it.
    ///
    /// # Errors
    /// [`Error::Token`], with whether it is worth trying again: the token endpoint could not be
    /// reached (a network error: yes), or it refused or answered something unreadable (no).
    pub(crate) async fn get(&self) -> Result<String, TokenFailure> {
        let mut current = self.current.lock().await;
        if let Some(c) = current.as_ref().filter(|c| c.expires > Instant::now() + EARLY) {
            return Ok(c.secret.clone());
        }
        let answer =
            self.oauth.exchange_client_credentials().request_async(&self.http).await.map_err(|e| TokenFailure {
                retry: matches!(e, oauth2::RequestTokenError::Request(_)),
                error: Error::token(describe(&e)),
            })?;
        let lifetime = answer.expires_in().unwrap_or(Duration::from_secs(3600));
        let fresh = Current { secret: answer.access_token().secret().clone(), expires: Instant::now() + lifetime };
        *current = Some(fresh.clone());
        Ok(fresh.secret)
    }

    /// `token` was refused (401): the next [`Tokens::get`] fetches a new one, unless another
    /// task already has.
    pub(crate) async fn refused(&self, token: &str) {
        let mut current = self.current.lock().await;
        if current.as_ref().is_some_and(|c| c.secret == token) {
            *current = None;
        }
    }
}

impl Tokens {
    /// Revokes the cached token, if there is one (RFC 7009: `token` and `token_type_hint` as a
    /// form, the key pair by HTTP Basic): it answers 401 everywhere at once, and the next
    /// [`Tokens::get`] fetches a new one. Sent directly rather than through the `oauth2` crate,
    /// which refuses a revocation URL that is not `https`, and the sandbox on one's own machine
    /// is `http://localhost`.
    pub(crate) async fn revoke(&self) -> Result<(), Error> {
        let mut current = self.current.lock().await;
        let Some(c) = current.as_ref() else { return Ok(()) };
        let form = [("token", c.secret.as_str()), ("token_type_hint", "access_token")];
        let request = self.http.post(&self.revoke_url).basic_auth(&self.client_id, Some(&self.client_secret)).form(&form);
        let answer = request.send().await.map_err(Error::transport)?;
        if answer.status().is_success() {
            *current = None;
            return Ok(());
        }
        let status = answer.status().as_u16();
        let body = answer.bytes().await.unwrap_or_default();
        Err(Error::Api(Box::new(ApiError::parse(status, &body, None))))
    }
}

fn describe<E: std::error::Error>(e: &E) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}
