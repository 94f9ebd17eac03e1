//! Organisations, credentials and bearer tokens.

use malipo_auth::{
    generate_client_id, generate_secret, generate_token, token_digest, AccessToken, Credential, OrgKind, Organisation, Principal, Scopes,
    SecretHasher, TOKEN_LIFETIME_SECONDS,
};
use malipo_core::{Mode, OrgId};
use malipo_ledger::{Account, AccountKind};

use crate::core::Core;
use crate::error::StoreError;
use crate::error::{OAuthProblem, ServiceError, TokenProblem};
use crate::ports::{AccountKey, AuditEntry};
use crate::validate::check_text;
use crate::views::{OnAuth, OnLedger, Onboarding, Staffing, View};

/// A credential as printed once at issue: the secret is never shown again.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IssuedCredential {
    /// The organisation.
    pub org_id: OrgId,
    /// `ck_…`.
    pub client_id: String,
    /// `cs_…` (plain text, this once).
    pub client_secret: String,
    /// The mode.
    pub mode: Mode,
    /// Granted scopes.
    pub scopes: Scopes,
}

/// An issued bearer token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IssuedToken {
    /// The opaque token (plain text, this once).
    pub access_token: String,
    /// Seconds until it expires.
    pub expires_in: i64,
    /// Granted scopes.
    pub scopes: Scopes,
    /// The mode.
    pub mode: Mode,
}

/// Organisations, credentials and bearer tokens.
pub struct Access<'a> {
    core: &'a Core,
}

impl<'a> Access<'a> {
    pub(crate) fn new(core: &'a Core) -> Self {
        Access { core }
    }

    /// Creates the platform's own accounts (revenue, issuance, sandbox funding) for every
    /// configured currency in both modes. Safe to run at every start and from several instances.
    ///
    /// # Errors
    /// Storage failures.
    pub fn ensure_system_accounts(&self) -> Result<(), ServiceError> {
        let now = self.core.now();
        for currency in self.core.countries.currencies() {
            for mode in Mode::ALL {
                for kind in [AccountKind::Revenue, AccountKind::Issuance, AccountKind::SandboxFunding] {
                    let key = AccountKey::System { mode, currency, kind };
                    if OnLedger::read(self.core.store(), |tx| Ok(tx.find_account(&key)?))?.is_some() {
                        continue;
                    }
                    let account = Account::open(None, mode, kind, currency, None, now);
                    match OnLedger::write(self.core.store(), |tx| Ok(tx.insert_account(&account)?)) {
                        Ok(()) | Err(ServiceError::Store(StoreError::Duplicate)) => {}
                        Err(e) => return Err(e),
                    }
                }
            }
        }
        Ok(())
    }

    /// Creates an organisation with its accounts in both modes and a test credential with the
    /// kind's default scopes.
    ///
    /// # Errors
    /// [`ServiceError::Validation`] for an empty name or unknown country; storage failures.
    pub fn create_org(&self, name: &str, kind: OrgKind, country: &str) -> Result<IssuedCredential, ServiceError> {
        self.create_org_by(name, kind, country, None)
    }

    /// [`Access::create_org`], recorded in the audit log in its own transaction when `by` (the
    /// back office's person) is given.
    ///
    /// # Errors
    /// As [`Access::create_org`].
    pub(crate) fn create_org_by(
        &self,
        name: &str,
        kind: OrgKind,
        country: &str,
        by: Option<&dyn Fn(&Organisation) -> AuditEntry>,
    ) -> Result<IssuedCredential, ServiceError> {
        let name = name.trim();
        if name.is_empty() || name.chars().count() > 200 {
            return Err(ServiceError::field("name", "invalid_value", "must be 1 to 200 characters"));
        }
        let mut errors = Vec::new();
        check_text("name", name, 200, false, &mut errors);
        if !errors.is_empty() {
            return Err(ServiceError::Validation(errors));
        }
        let currency = self
            .core
            .countries
            .get(country)
            .ok_or_else(|| ServiceError::field("country", "invalid_value", format!("{country} is not a configured country")))?
            .currency;
        let now = self.core.now();
        let org = Organisation { id: OrgId::new(), name: name.to_owned(), kind, country: country.to_owned(), created_at: now };
        let kinds: &[AccountKind] = match kind {
            OrgKind::Merchant | OrgKind::Corporate => &[AccountKind::Collection, AccountKind::Payout],
            OrgKind::Agent => &[AccountKind::AgentFloat],
            OrgKind::Operator | OrgKind::Gateway => &[],
        };
        let accounts: Vec<Account> = Mode::ALL
            .iter()
            .flat_map(|&mode| kinds.iter().map(move |&k| (mode, k)))
            .map(|(mode, k)| Account::open(Some(org.id.clone()), mode, k, currency, None, now))
            .collect();
        let (credential, issued) = self.new_credential(&org.id, Mode::Test, kind.default_scopes())?;
        Onboarding::write(self.core.store(), |tx| {
            tx.insert_org(&org)?;
            for a in &accounts {
                tx.insert_account(a)?;
            }
            tx.insert_credential(&credential)?;
            if let Some(by) = by {
                tx.append_audit(&by(&org))?;
            }
            Ok(())
        })?;
        Ok(issued)
    }

    /// Issues another credential for an organisation (live ones after review).
    ///
    /// # Errors
    /// [`ServiceError::NotFound`] for an unknown organisation; [`ServiceError::Validation`] for
    /// scopes the kind may not have.
    pub fn issue_credential(&self, org_id: &OrgId, mode: Mode, scopes: Option<Scopes>) -> Result<IssuedCredential, ServiceError> {
        self.issue_credential_by(org_id, mode, scopes, None)
    }

    /// [`Access::issue_credential`], recorded in the audit log in its own transaction when `by`
    /// (the back office's person) is given.
    ///
    /// # Errors
    /// As [`Access::issue_credential`].
    pub(crate) fn issue_credential_by(
        &self,
        org_id: &OrgId,
        mode: Mode,
        scopes: Option<Scopes>,
        by: Option<&dyn Fn(&Credential) -> AuditEntry>,
    ) -> Result<IssuedCredential, ServiceError> {
        let org = OnAuth::read(self.core.store(), |tx| Ok(tx.org(org_id)?))?.ok_or(ServiceError::NotFound)?;
        let scopes = scopes.unwrap_or_else(|| org.kind.default_scopes());
        if scopes.is_empty() {
            return Err(ServiceError::field("scopes", "invalid_value", "at least one scope is required"));
        }
        let (credential, issued) = self.new_credential(&org.id, mode, scopes)?;
        Staffing::write(self.core.store(), |tx| {
            tx.insert_credential(&credential)?;
            if let Some(by) = by {
                tx.append_audit(&by(&credential))?;
            }
            Ok(())
        })?;
        Ok(issued)
    }

    pub(crate) fn new_credential(
        &self,
        org_id: &OrgId,
        mode: Mode,
        scopes: Scopes,
    ) -> Result<(Credential, IssuedCredential), ServiceError> {
        let client_id = generate_client_id(mode);
        let secret = generate_secret(mode);
        let secret_hash = self.core.hasher.hash(&secret).map_err(|e| ServiceError::Internal(e.to_string()))?;
        let credential = Credential {
            client_id: client_id.clone(),
            org_id: org_id.clone(),
            mode,
            secret_hash,
            scopes: scopes.clone(),
            created_at: self.core.now(),
            revoked_at: None,
            created_by: None,
            last_used_at: None,
        };
        Ok((credential, IssuedCredential { org_id: org_id.clone(), client_id, client_secret: secret, mode, scopes }))
    }

    /// Revokes a credential and every token issued to it.
    ///
    /// # Errors
    /// [`ServiceError::NotFound`] when there is no such active credential.
    pub fn revoke_credential(&self, client_id: &str) -> Result<(), ServiceError> {
        let now = self.core.now();
        if OnAuth::write(self.core.store(), |tx| Ok(tx.revoke_credential(client_id, now)?))? {
            Ok(())
        } else {
            Err(ServiceError::NotFound)
        }
    }

    /// Checks a client's secret. Unknown clients and wrong secrets fail alike, in comparable time.
    ///
    /// # Errors
    /// [`OAuthProblem::InvalidClient`].
    pub fn authenticate_client(&self, client_id: &str, client_secret: &str) -> Result<Credential, ServiceError> {
        let credential = OnAuth::read(self.core.store(), |tx| Ok(tx.credential(client_id)?))?.filter(|c| c.revoked_at.is_none());
        let ok = self.core.hasher.verify(client_secret, credential.as_ref().map(|c| c.secret_hash.as_str()));
        match credential {
            Some(c) if ok => {
                if SecretHasher::needs_rehash(&c.secret_hash) {
                    self.upgrade_secret_hash(&c, client_secret);
                }
                Ok(c)
            }
            _ => Err(ServiceError::OAuth(OAuthProblem::InvalidClient)),
        }
    }

    /// Replaces an older (Argon2id) secret hash by a keyed one after a successful use. A failure
    /// only leaves the old hash in place (it still verifies), so it is logged, not returned.
    fn upgrade_secret_hash(&self, credential: &Credential, client_secret: &str) {
        let upgraded = self.core.hasher.hash(client_secret).map_err(|e| ServiceError::Internal(e.to_string())).and_then(|new| {
            OnAuth::write(self.core.store(), |tx| Ok(tx.replace_secret_hash(&credential.client_id, &credential.secret_hash, &new)?))
        });
        if let Err(e) = upgraded {
            tracing::warn!(client_id = %credential.client_id, error = %e, "could not replace an older secret hash");
        }
    }

    /// OAuth 2.0 client credentials: a one-hour bearer token for the credential's scopes, or the
    /// requested subset of them.
    ///
    /// # Errors
    /// [`OAuthProblem::InvalidClient`], [`OAuthProblem::InvalidScope`].
    pub fn issue_token(&self, client_id: &str, client_secret: &str, scope: Option<&str>) -> Result<IssuedToken, ServiceError> {
        let credential = self.authenticate_client(client_id, client_secret)?;
        let scopes = match scope.map(str::trim).filter(|s| !s.is_empty()) {
            None => credential.scopes.clone(),
            Some(text) => {
                let asked = Scopes::parse(text).map_err(|e| ServiceError::OAuth(OAuthProblem::InvalidScope(e.to_string())))?;
                if !credential.scopes.covers(&asked) {
                    return Err(ServiceError::OAuth(OAuthProblem::InvalidScope(
                        "the requested scope exceeds the credential's scopes".into(),
                    )));
                }
                asked
            }
        };
        let token = generate_token();
        let now = self.core.now();
        let record = AccessToken {
            digest: token_digest(&token),
            client_id: credential.client_id.clone(),
            org_id: credential.org_id.clone(),
            mode: credential.mode,
            scopes: scopes.clone(),
            created_at: now,
            expires_at: now.plus_seconds(TOKEN_LIFETIME_SECONDS),
            revoked_at: None,
        };
        // "Last used" is kept to the minute: a credential that gets tokens often writes it once.
        let touch = credential.last_used_at.is_none_or(|t| now >= t.plus_seconds(60));
        OnAuth::write(self.core.store(), |tx| {
            tx.insert_token(&record)?;
            if touch {
                tx.touch_credential(&credential.client_id, now)?;
            }
            Ok(())
        })?;
        Ok(IssuedToken { access_token: token, expires_in: TOKEN_LIFETIME_SECONDS, scopes, mode: credential.mode })
    }

    /// RFC 7009: revokes `token` if it belongs to the authenticated client; unknown tokens are
    /// not an error.
    ///
    /// # Errors
    /// [`OAuthProblem::InvalidClient`].
    pub fn revoke_token(&self, client_id: &str, client_secret: &str, token: &str) -> Result<(), ServiceError> {
        let credential = self.authenticate_client(client_id, client_secret)?;
        let now = self.core.now();
        OnAuth::write(self.core.store(), |tx| Ok(tx.revoke_token(&token_digest(token), &credential.client_id, now)?))?;
        Ok(())
    }

    /// Resolves a bearer token to its principal.
    ///
    /// # Errors
    /// [`ServiceError::Token`] with the reason.
    pub fn authenticate(&self, token: &str) -> Result<Principal, ServiceError> {
        let digest = token_digest(token);
        let record = OnAuth::query(self.core.store(), |tx| Ok(tx.token(&digest)?))?.ok_or(ServiceError::Token(TokenProblem::Invalid))?;
        if record.token.revoked_at.is_some() || record.credential_revoked {
            return Err(ServiceError::Token(TokenProblem::Revoked));
        }
        if record.token.expires_at <= self.core.now() {
            return Err(ServiceError::Token(TokenProblem::Expired));
        }
        Ok(Principal {
            client_id: record.token.client_id,
            org_id: record.org.id,
            org_kind: record.org.kind,
            country: record.org.country,
            mode: record.token.mode,
            scopes: record.token.scopes,
            // A key pair a person created in the console acts as that person for maker/checker.
            person: record.credential_person,
            role: None,
        })
    }
}
