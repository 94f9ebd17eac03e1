//! The wire shapes of the Auth group (contract section 2).

use malipo_service::IssuedToken;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// `POST /oauth/token` response.
#[derive(Debug, Serialize, ToSchema)]
pub struct TokenResponse {
    /// The bearer token.
    pub access_token: String,
    /// Always `Bearer`.
    pub token_type: &'static str,
    /// Seconds until expiry (3600).
    pub expires_in: i64,
    /// Granted scopes, space-separated.
    pub scope: String,
    /// `test` or `live`.
    pub mode: &'static str,
}

impl From<IssuedToken> for TokenResponse {
    fn from(t: IssuedToken) -> Self {
        TokenResponse {
            access_token: t.access_token,
            token_type: "Bearer",
            expires_in: t.expires_in,
            scope: t.scopes.to_string(),
            mode: t.mode.as_str(),
        }
    }
}

/// `POST /oauth/token` JSON body (the seed's form).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TokenRequest {
    /// Optional here; when present must be `client_credentials`.
    pub grant_type: Option<String>,
    /// `ck_test_…` / `ck_live_…`.
    pub client_id: Option<String>,
    /// `cs_test_…` / `cs_live_…`.
    pub client_secret: Option<String>,
    /// A subset of the credential's scopes, space-separated.
    pub scope: Option<String>,
}

/// `POST /oauth/revoke` JSON body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RevokeRequest {
    /// The token to revoke.
    pub token: Option<String>,
    /// Ignored hint (RFC 7009).
    pub token_type_hint: Option<String>,
    /// Client id (when not using HTTP Basic).
    pub client_id: Option<String>,
    /// Client secret (when not using HTTP Basic).
    pub client_secret: Option<String>,
}
