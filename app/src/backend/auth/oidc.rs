//! Sign-in through OpenID Connect providers (Keycloak, Google, Entra ID, Auth0, Dex, …).
//!
//! The authorization-code flow with PKCE (S256), `state` and `nonce`, built on the `openidconnect`
//! crate (which uses the `oauth2` crate for the OAuth 2.0 parts). The provider's discovery
//! document and signing keys (JWKS) are fetched on first use and cached for a while; the ID token's
//! signature, issuer, audience, expiry and nonce are verified by the library. What the browser
//! must bring back (state, PKCE verifier, nonce) is kept in its server-side session, never in the
//! URL or a cookie.

use crate::domain::sign_in::ExternalIdentity;
use crate::domain::sign_in::{ProviderButton, SignInFailure};
use crate::domain::user::{Email, UserName};
use crate::error::error_chain;
use chrono::{DateTime, Utc};
use openidconnect::core::{
    CoreAuthenticationFlow, CoreClient, CoreGenderClaim, CoreIdTokenClaims, CoreProviderMetadata,
    CoreUserInfoClaims,
};
use openidconnect::{
    AccessToken, AuthorizationCode, ClaimsVerificationError, ClientId, ClientSecret, CsrfToken,
    EmptyAdditionalClaims, EndpointMaybeSet, EndpointNotSet, EndpointSet, IssuerUrl, Nonce,
    OAuth2TokenResponse, PkceCodeChallenge, PkceCodeVerifier, RedirectUrl, RequestTokenError,
    Scope, TokenResponse,
};
use openidconnect::{
    EndUserEmail, EndUserFamilyName, EndUserGivenName, EndUserName, EndUserUsername, LocalizedClaim,
};
use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

/// How long a fetched discovery document (with its keys) is used before it is fetched again.
const METADATA_TTL: Duration = Duration::from_secs(600);
/// How long a user may take at the provider before the sign-in must start again.
const PENDING_MAX_AGE: chrono::TimeDelta = chrono::TimeDelta::minutes(15);
/// Timeout of each request to a provider.
const PROVIDER_TIMEOUT: Duration = Duration::from_secs(10);

/// The session key under which a sign-in in progress is kept.
pub const SESSION_PENDING_SIGN_IN: &str = "oidc_pending";

/// One configured provider, validated by the server's settings.
#[derive(Debug, Clone)]
pub struct OidcProviderSettings {
    /// Short id, used in URLs and to bind identities: `[a-z0-9-]+`.
    pub id: String,
    /// Text of the sign-in button.
    pub label: String,
    /// Issuer URL; the discovery document is at `<issuer>/.well-known/openid-configuration`.
    pub issuer: IssuerUrl,
    /// Client id registered at the provider.
    pub client_id: String,
    /// Client secret registered at the provider (`None` for a public client, which relies on
    /// PKCE alone).
    pub client_secret: Option<SecretString>,
    /// Where the provider sends the browser back: `<public url>/auth/oidc/<id>/callback`.
    pub redirect_url: RedirectUrl,
    /// Scopes asked for besides `openid` (default `email`, `profile`).
    pub scopes: Vec<String>,
    /// Every address this provider gives counts as verified, with or without `email_verified`
    /// (for providers that issue only verified addresses, such as an Entra ID tenant's).
    pub trust_email: bool,
}

/// A sign-in started in this browser, kept in its session until the provider sends it back.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PendingSignIn {
    /// Provider id.
    pub provider: String,
    /// The `state` sent to the provider.
    pub state: String,
    /// The PKCE code verifier whose S256 challenge was sent.
    pub pkce_verifier: String,
    /// The `nonce` sent, to be found in the ID token.
    pub nonce: String,
    /// Local path to return to after sign-in.
    pub return_to: String,
    /// When it started (UTC).
    pub started_at: DateTime<Utc>,
}

/// What the provider put in the callback URL.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct CallbackParams {
    /// Authorization code.
    pub code: Option<String>,
    /// The state sent.
    pub state: Option<String>,
    /// OAuth error code (`access_denied`, …).
    pub error: Option<String>,
    /// Human-readable error text from the provider.
    pub error_description: Option<String>,
}

type DiscoveredClient = CoreClient<
    EndpointSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointMaybeSet,
    EndpointMaybeSet,
>;

struct Provider {
    settings: OidcProviderSettings,
    metadata: RwLock<Option<(Instant, Arc<CoreProviderMetadata>)>>,
}

/// The configured OpenID Connect providers.
pub struct OidcProviders {
    providers: Vec<Provider>,
    http: openidconnect::reqwest::Client,
}

impl std::fmt::Debug for OidcProviders {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.providers.iter().map(|p| &p.settings.id))
            .finish()
    }
}

impl OidcProviders {
    /// Providers from validated settings (possibly none).
    pub fn new(settings: Vec<OidcProviderSettings>) -> Result<Self, String> {
        let http = openidconnect::reqwest::Client::builder()
            // Following redirects would let a provider's answer point Berth at other hosts.
            .redirect(openidconnect::reqwest::redirect::Policy::none())
            .timeout(PROVIDER_TIMEOUT)
            .build()
            .map_err(|err| format!("cannot build the HTTP client for sign-in: {err}"))?;
        Ok(Self {
            providers: settings
                .into_iter()
                .map(|settings| Provider {
                    settings,
                    metadata: RwLock::new(None),
                })
                .collect(),
            http,
        })
    }

    /// Whether no provider is configured.
    pub fn is_empty(&self) -> bool {
        self.providers.is_empty()
    }

    /// The sign-in buttons, in settings order.
    pub fn buttons(&self) -> Vec<ProviderButton> {
        self.providers
            .iter()
            .map(|provider| ProviderButton {
                id: provider.settings.id.clone(),
                label: provider.settings.label.clone(),
            })
            .collect()
    }

    fn provider(&self, id: &str) -> Result<&Provider, SignInFailure> {
        self.providers
            .iter()
            .find(|provider| provider.settings.id == id)
            .ok_or(SignInFailure::UnknownProvider)
    }

    /// The provider's discovery document (with its keys), fetched or cached.
    async fn metadata(
        &self,
        provider: &Provider,
    ) -> Result<Arc<CoreProviderMetadata>, SignInFailure> {
        if let Ok(cached) = provider.metadata.read()
            && let Some((fetched, metadata)) = cached.as_ref()
            && fetched.elapsed() < METADATA_TTL
        {
            return Ok(Arc::clone(metadata));
        }
        let metadata =
            CoreProviderMetadata::discover_async(provider.settings.issuer.clone(), &self.http)
                .await
                .map_err(|err| {
                    tracing::warn!(
                        oidc.provider = %provider.settings.id,
                        error = %error_chain(&err),
                        "cannot read the identity provider's discovery document or keys"
                    );
                    SignInFailure::ProviderUnavailable
                })?;
        let metadata = Arc::new(metadata);
        if let Ok(mut cache) = provider.metadata.write() {
            *cache = Some((Instant::now(), Arc::clone(&metadata)));
        }
        Ok(metadata)
    }

    /// Forgets the cached discovery document, so that rotated keys are fetched next time.
    fn forget_metadata(provider: &Provider) {
        if let Ok(mut cache) = provider.metadata.write() {
            *cache = None;
        }
    }

    fn client(provider: &Provider, metadata: &CoreProviderMetadata) -> DiscoveredClient {
        CoreClient::from_provider_metadata(
            metadata.clone(),
            ClientId::new(provider.settings.client_id.clone()),
            provider
                .settings
                .client_secret
                .as_ref()
                .map(|secret| ClientSecret::new(secret.expose_secret().to_owned())),
        )
        .set_redirect_uri(provider.settings.redirect_url.clone())
    }

    /// Starts a sign-in: the URL to send the browser to, and what to keep in its session.
    pub async fn start(
        &self,
        provider_id: &str,
        return_to: String,
        now: DateTime<Utc>,
    ) -> Result<(String, PendingSignIn), SignInFailure> {
        let provider = self.provider(provider_id)?;
        let metadata = self.metadata(provider).await?;
        let client = Self::client(provider, &metadata);
        let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
        let mut request = client
            .authorize_url(
                CoreAuthenticationFlow::AuthorizationCode,
                CsrfToken::new_random,
                Nonce::new_random,
            )
            .set_pkce_challenge(challenge);
        for scope in &provider.settings.scopes {
            request = request.add_scope(Scope::new(scope.clone()));
        }
        let (url, state, nonce) = request.url();
        Ok((
            url.to_string(),
            PendingSignIn {
                provider: provider_id.to_owned(),
                state: state.secret().clone(),
                pkce_verifier: verifier.secret().clone(),
                nonce: nonce.secret().clone(),
                return_to,
                started_at: now,
            },
        ))
    }

    /// Completes a sign-in from the provider's callback: checks the state against the one kept in
    /// the session, exchanges the code with the PKCE verifier, verifies the ID token and reads
    /// who the user is. Returns the identity and where to go next.
    pub async fn finish(
        &self,
        provider_id: &str,
        pending: Option<PendingSignIn>,
        params: CallbackParams,
        now: DateTime<Utc>,
    ) -> Result<(ExternalIdentity, String), SignInFailure> {
        let provider = self.provider(provider_id)?;
        if let Some(error) = &params.error {
            tracing::info!(
                oidc.provider = provider_id,
                oidc.error = %error,
                oidc.error_description = params.error_description.as_deref().unwrap_or(""),
                "the identity provider refused the sign-in"
            );
            return Err(SignInFailure::ProviderDenied);
        }
        let state = params.state.ok_or(SignInFailure::StateMissing)?;
        let pending = pending.ok_or(SignInFailure::NoSignInInProgress)?;
        if now - pending.started_at > PENDING_MAX_AGE {
            return Err(SignInFailure::NoSignInInProgress);
        }
        if pending.provider != provider_id || !same_secret(&pending.state, &state) {
            return Err(SignInFailure::StateMismatch);
        }
        let code = params.code.ok_or(SignInFailure::CodeMissing)?;

        let metadata = self.metadata(provider).await?;
        let client = Self::client(provider, &metadata);
        let response = client
            .exchange_code(AuthorizationCode::new(code))
            .map_err(|err| {
                tracing::warn!(oidc.provider = provider_id, error = %err, "provider has no token endpoint");
                SignInFailure::ProviderUnavailable
            })?
            .set_pkce_verifier(PkceCodeVerifier::new(pending.pkce_verifier))
            .request_async(&self.http)
            .await
            .map_err(|err| {
                let failure = match &err {
                    RequestTokenError::ServerResponse(_) => SignInFailure::CodeRejected,
                    _ => SignInFailure::ProviderUnavailable,
                };
                tracing::warn!(oidc.provider = provider_id, error = %error_chain(&err), "code exchange failed");
                failure
            })?;
        let id_token = response.id_token().ok_or(SignInFailure::IdTokenMissing)?;
        let verifier = client.id_token_verifier();
        let claims = id_token
            .claims(&verifier, &Nonce::new(pending.nonce))
            .map_err(|err| {
                tracing::warn!(oidc.provider = provider_id, error = %err, "ID token refused");
                let failure = id_token_failure(&err);
                if failure == SignInFailure::IdTokenSignature {
                    Self::forget_metadata(provider);
                }
                failure
            })?;

        let mut person = Person::from_id_token(claims);
        if person.email.is_none()
            && let Ok(request) = client.user_info(
                AccessToken::new(response.access_token().secret().clone()),
                Some(claims.subject().clone()),
            )
        {
            match request
                .request_async::<EmptyAdditionalClaims, _, CoreGenderClaim>(&self.http)
                .await
            {
                Ok(info) => person.fill_from_user_info(&info),
                Err(err) => {
                    tracing::warn!(oidc.provider = provider_id, error = %error_chain(&err), "user-info request failed");
                }
            }
        }
        let email = person
            .email
            .as_deref()
            .and_then(|raw| Email::parse(raw).ok())
            .ok_or(SignInFailure::EmailMissing)?;
        let name = person
            .name
            .as_deref()
            .and_then(|raw| UserName::parse(raw).ok())
            .or_else(|| UserName::parse(email.as_str().split('@').next().unwrap_or("")).ok())
            .ok_or(SignInFailure::EmailMissing)?;
        Ok((
            ExternalIdentity {
                provider: provider_id.to_owned(),
                subject: claims.subject().as_str().to_owned(),
                email,
                // Only a provider that says so vouches for the address: a missing claim is not
                // a yes.
                email_verified: person.email_verified == Some(true)
                    || provider.settings.trust_email,
                name,
            },
            pending.return_to,
        ))
    }
}

/// Who the provider says the user is.
struct Person {
    email: Option<String>,
    email_verified: Option<bool>,
    name: Option<String>,
}

impl Person {
    fn from_id_token(claims: &CoreIdTokenClaims) -> Self {
        Self::from_claims(
            claims.email(),
            claims.email_verified(),
            claims.name(),
            claims.given_name(),
            claims.family_name(),
            claims.preferred_username(),
        )
    }

    fn fill_from_user_info(&mut self, info: &CoreUserInfoClaims) {
        let claims = info.standard_claims();
        let other = Self::from_claims(
            claims.email(),
            claims.email_verified(),
            claims.name(),
            claims.given_name(),
            claims.family_name(),
            claims.preferred_username(),
        );
        if self.email.is_none() {
            self.email = other.email;
            self.email_verified = other.email_verified;
        }
        if self.name.is_none() {
            self.name = other.name;
        }
    }

    /// The name is `name`, else given and family name, else the preferred user name.
    fn from_claims(
        email: Option<&EndUserEmail>,
        email_verified: Option<bool>,
        name: Option<&LocalizedClaim<EndUserName>>,
        given: Option<&LocalizedClaim<EndUserGivenName>>,
        family: Option<&LocalizedClaim<EndUserFamilyName>>,
        preferred: Option<&EndUserUsername>,
    ) -> Self {
        let name = name
            .and_then(|name| name.get(None))
            .map(|name| name.as_str().to_owned())
            .or_else(|| {
                let given = given.and_then(|n| n.get(None))?;
                Some(match family.and_then(|n| n.get(None)) {
                    Some(family) => format!("{} {}", given.as_str(), family.as_str()),
                    None => given.as_str().to_owned(),
                })
            })
            .or_else(|| preferred.map(|n| n.as_str().to_owned()));
        Self {
            email: email.map(|email| email.as_str().to_owned()),
            email_verified,
            name,
        }
    }
}

/// The failure to report for an ID token the verifier refused.
fn id_token_failure(err: &ClaimsVerificationError) -> SignInFailure {
    match err {
        ClaimsVerificationError::Expired(_) => SignInFailure::IdTokenExpired,
        ClaimsVerificationError::InvalidAudience(_) => SignInFailure::IdTokenAudience,
        ClaimsVerificationError::InvalidIssuer(_) => SignInFailure::IdTokenIssuer,
        ClaimsVerificationError::InvalidNonce(_) => SignInFailure::IdTokenNonce,
        ClaimsVerificationError::SignatureVerification(_) => SignInFailure::IdTokenSignature,
        _ => SignInFailure::IdTokenInvalid,
    }
}

/// Compares two secrets in time that does not depend on where they differ.
fn same_secret(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_compare_by_content() {
        assert!(same_secret("abc", "abc"));
        assert!(!same_secret("abc", "abd"));
        assert!(!same_secret("abc", "abcd"));
    }
}
