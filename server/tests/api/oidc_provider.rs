//! A small OpenID Connect provider for the tests, started in the test process on port 0: discovery,
//! authorize (approves at once as the configured person), token (checks the client secret, the
//! redirect URI, single use of codes and the PKCE S256 verifier), JWKS with a real RSA key, and
//! user info. A [`Tamper`] setting makes it mint the bad ID tokens Berth must refuse.

use axum::extract::{Form, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use openidconnect::core::{
    CoreIdToken, CoreIdTokenClaims, CoreJsonWebKeySet, CoreJwsSigningAlgorithm,
    CoreRsaPrivateSigningKey,
};
use openidconnect::{
    Audience, EmptyAdditionalClaims, EndUserEmail, EndUserName, IssuerUrl, JsonWebKeyId, Nonce,
    PrivateSigningKey, StandardClaims, SubjectIdentifier,
};
use serde::Deserialize;
use serde_json::json;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

const SIGNING_KEY: &str = include_str!("fixtures/oidc-signing-key.pem");
const IMPOSTOR_KEY: &str = include_str!("fixtures/oidc-impostor-key.pem");
pub const CLIENT_ID: &str = "berth-test";
pub const CLIENT_SECRET: &str = "test-client-secret";

/// What the next ID token gets wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tamper {
    None,
    WrongAudience,
    WrongIssuer,
    Expired,
    BadSignature,
    WrongNonce,
    NoIdToken,
    /// The authorize endpoint answers `error=access_denied`.
    Deny,
}

/// The person the provider signs in.
#[derive(Debug, Clone)]
pub struct Person {
    pub subject: String,
    /// In the ID token; `None` leaves it to the user-info endpoint.
    pub email_in_id_token: Option<String>,
    pub email_in_user_info: Option<String>,
    pub email_verified: Option<bool>,
    pub name: String,
}

impl Person {
    pub fn new(subject: &str, email: &str, name: &str) -> Self {
        Self {
            subject: subject.to_owned(),
            email_in_id_token: Some(email.to_owned()),
            email_in_user_info: Some(email.to_owned()),
            email_verified: Some(true),
            name: name.to_owned(),
        }
    }
}

struct IssuedCode {
    redirect_uri: String,
    challenge: String,
    nonce: String,
    person: Person,
    used: bool,
}

struct ProviderState {
    issuer: String,
    person: Mutex<Person>,
    tamper: Mutex<Tamper>,
    codes: Mutex<HashMap<String, IssuedCode>>,
    access_tokens: Mutex<HashMap<String, Person>>,
    /// Token requests refused, with the reason, for assertions.
    refusals: Mutex<Vec<String>>,
}

/// A running test provider.
pub struct TestProvider {
    pub issuer: String,
    state: Arc<ProviderState>,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for TestProvider {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl TestProvider {
    pub async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let issuer = format!("http://{}", listener.local_addr().unwrap());
        let state = Arc::new(ProviderState {
            issuer: issuer.clone(),
            person: Mutex::new(Person::new(
                "subject-ana-1",
                "ana.souza@example.com",
                "Ana Souza",
            )),
            tamper: Mutex::new(Tamper::None),
            codes: Mutex::new(HashMap::new()),
            access_tokens: Mutex::new(HashMap::new()),
            refusals: Mutex::new(Vec::new()),
        });
        let router = Router::new()
            .route("/.well-known/openid-configuration", get(discovery))
            .route("/jwks", get(jwks))
            .route("/authorize", get(authorize))
            .route("/token", post(token))
            .route("/userinfo", get(user_info))
            .with_state(Arc::clone(&state));
        let server = tokio::spawn(async move {
            axum::serve(listener, router).await.unwrap();
        });
        Self {
            issuer,
            state,
            server,
        }
    }

    pub fn set_person(&self, person: Person) {
        *self.state.person.lock().unwrap() = person;
    }

    pub fn set_tamper(&self, tamper: Tamper) {
        *self.state.tamper.lock().unwrap() = tamper;
    }

    pub fn refusals(&self) -> Vec<String> {
        self.state.refusals.lock().unwrap().clone()
    }
}

fn signing_key(pem: &str) -> CoreRsaPrivateSigningKey {
    CoreRsaPrivateSigningKey::from_pem(pem, Some(JsonWebKeyId::new("test-key-1".into())))
        .expect("test RSA key")
}

async fn discovery(State(state): State<Arc<ProviderState>>) -> Json<serde_json::Value> {
    let issuer = &state.issuer;
    Json(json!({
        "issuer": issuer,
        "authorization_endpoint": format!("{issuer}/authorize"),
        "token_endpoint": format!("{issuer}/token"),
        "userinfo_endpoint": format!("{issuer}/userinfo"),
        "jwks_uri": format!("{issuer}/jwks"),
        "response_types_supported": ["code"],
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": ["RS256"],
        "scopes_supported": ["openid", "email", "profile"],
        "token_endpoint_auth_methods_supported": ["client_secret_basic"],
        "code_challenge_methods_supported": ["S256"],
        "claims_supported": ["sub", "iss", "aud", "exp", "iat", "nonce", "email", "email_verified", "name"]
    }))
}

async fn jwks() -> Json<CoreJsonWebKeySet> {
    Json(CoreJsonWebKeySet::new(vec![
        signing_key(SIGNING_KEY).as_verification_key(),
    ]))
}

#[derive(Deserialize)]
struct AuthorizeParams {
    response_type: String,
    client_id: String,
    redirect_uri: String,
    scope: String,
    state: Option<String>,
    nonce: Option<String>,
    code_challenge: Option<String>,
    code_challenge_method: Option<String>,
}

async fn authorize(
    State(state): State<Arc<ProviderState>>,
    Query(params): Query<AuthorizeParams>,
) -> Response {
    let bad = |message: &str| (StatusCode::BAD_REQUEST, message.to_owned()).into_response();
    if params.response_type != "code" {
        return bad("response_type must be code");
    }
    if params.client_id != CLIENT_ID {
        return bad("unknown client");
    }
    if !params.scope.split(' ').any(|scope| scope == "openid") {
        return bad("scope must include openid");
    }
    if params.code_challenge_method.as_deref() != Some("S256") {
        return bad("PKCE with S256 is required");
    }
    let (Some(challenge), Some(nonce), Some(csrf_state)) =
        (params.code_challenge, params.nonce, params.state)
    else {
        return bad("code_challenge, nonce and state are required");
    };
    let separator = if params.redirect_uri.contains('?') {
        '&'
    } else {
        '?'
    };
    let encode = |value: &str| -> String {
        url::form_urlencoded::byte_serialize(value.as_bytes()).collect()
    };
    if *state.tamper.lock().unwrap() == Tamper::Deny {
        return Redirect::to(&format!(
            "{}{separator}error=access_denied&error_description=The%20user%20cancelled&state={}",
            params.redirect_uri,
            encode(&csrf_state)
        ))
        .into_response();
    }
    let code = URL_SAFE_NO_PAD.encode(rand::random::<[u8; 24]>());
    let person = state.person.lock().unwrap().clone();
    state.codes.lock().unwrap().insert(
        code.clone(),
        IssuedCode {
            redirect_uri: params.redirect_uri.clone(),
            challenge,
            nonce,
            person,
            used: false,
        },
    );
    Redirect::to(&format!(
        "{}{separator}code={}&state={}",
        params.redirect_uri,
        encode(&code),
        encode(&csrf_state)
    ))
    .into_response()
}

#[derive(Deserialize)]
struct TokenForm {
    grant_type: String,
    code: String,
    redirect_uri: String,
    code_verifier: Option<String>,
}

fn token_error(state: &ProviderState, error: &str, description: &str) -> Response {
    state.refusals.lock().unwrap().push(description.to_owned());
    (
        StatusCode::BAD_REQUEST,
        Json(json!({ "error": error, "error_description": description })),
    )
        .into_response()
}

async fn token(
    State(state): State<Arc<ProviderState>>,
    headers: HeaderMap,
    Form(form): Form<TokenForm>,
) -> Response {
    let expected = format!(
        "Basic {}",
        STANDARD.encode(format!("{CLIENT_ID}:{CLIENT_SECRET}"))
    );
    if headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        != Some(expected.as_str())
    {
        return token_error(&state, "invalid_client", "client authentication failed");
    }
    if form.grant_type != "authorization_code" {
        return token_error(&state, "unsupported_grant_type", "authorization_code only");
    }
    let (person, nonce) = {
        let mut codes = state.codes.lock().unwrap();
        let Some(issued) = codes.get_mut(&form.code) else {
            return token_error(&state, "invalid_grant", "unknown code");
        };
        if issued.used {
            return token_error(&state, "invalid_grant", "code already used");
        }
        issued.used = true;
        if issued.redirect_uri != form.redirect_uri {
            return token_error(&state, "invalid_grant", "redirect_uri differs");
        }
        let Some(verifier) = form.code_verifier.as_deref() else {
            return token_error(&state, "invalid_grant", "code_verifier missing");
        };
        if URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes())) != issued.challenge {
            return token_error(&state, "invalid_grant", "PKCE verification failed");
        }
        (issued.person.clone(), issued.nonce.clone())
    };
    let tamper = *state.tamper.lock().unwrap();
    let access_token = URL_SAFE_NO_PAD.encode(rand::random::<[u8; 24]>());
    state
        .access_tokens
        .lock()
        .unwrap()
        .insert(access_token.clone(), person.clone());
    let mut body = json!({
        "access_token": access_token,
        "token_type": "Bearer",
        "expires_in": 300,
    });
    if tamper != Tamper::NoIdToken {
        body["id_token"] = json!(mint_id_token(&state.issuer, &person, &nonce, tamper));
    }
    Json(body).into_response()
}

fn mint_id_token(issuer: &str, person: &Person, nonce: &str, tamper: Tamper) -> CoreIdToken {
    let now = chrono::Utc::now();
    let issuer = match tamper {
        Tamper::WrongIssuer => "https://impostor.example.com".to_owned(),
        _ => issuer.to_owned(),
    };
    let audience = match tamper {
        Tamper::WrongAudience => "some-other-app",
        _ => CLIENT_ID,
    };
    let (issued, expires) = match tamper {
        Tamper::Expired => (
            now - chrono::Duration::hours(2),
            now - chrono::Duration::hours(1),
        ),
        _ => (now, now + chrono::Duration::minutes(5)),
    };
    let nonce = match tamper {
        Tamper::WrongNonce => "a-nonce-from-another-sign-in".to_owned(),
        _ => nonce.to_owned(),
    };
    let mut standard = StandardClaims::new(SubjectIdentifier::new(person.subject.clone()))
        .set_name(Some(EndUserName::new(person.name.clone()).into()));
    if let Some(email) = &person.email_in_id_token {
        standard = standard
            .set_email(Some(EndUserEmail::new(email.clone())))
            .set_email_verified(person.email_verified);
    }
    let claims = CoreIdTokenClaims::new(
        IssuerUrl::new(issuer).unwrap(),
        vec![Audience::new(audience.to_owned())],
        expires,
        issued,
        standard,
        EmptyAdditionalClaims {},
    )
    .set_nonce(Some(Nonce::new(nonce)));
    let key = match tamper {
        Tamper::BadSignature => signing_key(IMPOSTOR_KEY),
        _ => signing_key(SIGNING_KEY),
    };
    CoreIdToken::new(
        claims,
        &key,
        CoreJwsSigningAlgorithm::RsaSsaPkcs1V15Sha256,
        None,
        None,
    )
    .expect("sign the ID token")
}

async fn user_info(State(state): State<Arc<ProviderState>>, headers: HeaderMap) -> Response {
    let token = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("");
    let Some(person) = state.access_tokens.lock().unwrap().get(token).cloned() else {
        return StatusCode::UNAUTHORIZED.into_response();
    };
    let mut body = json!({ "sub": person.subject, "name": person.name });
    if let Some(email) = person.email_in_user_info {
        body["email"] = json!(email);
        if let Some(verified) = person.email_verified {
            body["email_verified"] = json!(verified);
        }
    }
    Json(body).into_response()
}
