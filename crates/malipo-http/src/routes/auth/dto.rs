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
    #[schema(pattern = "^client_credentials$")]
    pub grant_type: Option<String>,
    /// `ck_test_…` / `ck_live_…` (or the client authenticates by HTTP Basic instead).
    #[schema(value_type = String, required = true)]
    pub client_id: Option<String>,
    /// `cs_test_…` / `cs_live_…` (or the client authenticates by HTTP Basic instead).
    #[schema(value_type = String, required = true)]
    pub client_secret: Option<String>,
    /// A subset of the credential's scopes, space-separated.
    pub scope: Option<String>,
}

/// `POST /oauth/revoke` JSON body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RevokeRequest {
    /// The token to revoke.
    #[schema(value_type = String, required = true)]
    pub token: Option<String>,
    /// Ignored hint (RFC 7009).
    pub token_type_hint: Option<String>,
    /// Client id (or the client authenticates by HTTP Basic instead).
    #[schema(value_type = String, required = true)]
    pub client_id: Option<String>,
    /// Client secret (or the client authenticates by HTTP Basic instead).
    #[schema(value_type = String, required = true)]
    pub client_secret: Option<String>,
}

/// `POST /oauth/token` form body (RFC 6749 §4.4); other parameters are ignored, none may repeat.
#[derive(Debug, ToSchema)]
pub struct TokenForm {
    /// `client_credentials`.
    #[schema(pattern = "^client_credentials$")]
    pub grant_type: String,
    /// `ck_test_…` / `ck_live_…` (or the client authenticates by HTTP Basic instead).
    pub client_id: String,
    /// `cs_test_…` / `cs_live_…` (or the client authenticates by HTTP Basic instead).
    pub client_secret: String,
    /// A subset of the credential's scopes, space-separated.
    pub scope: Option<String>,
}

/// `POST /oauth/revoke` form body (RFC 7009); other parameters are ignored, none may repeat.
#[derive(Debug, ToSchema)]
pub struct RevokeForm {
    /// The token to revoke.
    pub token: String,
    /// Ignored hint (RFC 7009).
    pub token_type_hint: Option<String>,
    /// Client id (or the client authenticates by HTTP Basic instead).
    pub client_id: String,
    /// Client secret (or the client authenticates by HTTP Basic instead).
    pub client_secret: String,
}
