//! Bearer-token authentication of the JSON API, on both backends.

use crate::helpers::{Backend, TestApp, spawn_app};
use berth_app::backend::auth::tokens;
use berth_app::backend::db;
use berth_app::backend::db::api_tokens::TokenGrant;
use berth_app::domain::api_token::TokenScope;
use berth_app::domain::user::{Email, NewUser, PlatformRole, TokenName, UserName};
use chrono::Utc;

/// Adds a user and issues a token for them; returns (token id, token).
async fn user_with_token(app: &TestApp, email: &str, role: PlatformRole) -> (i64, String) {
    let user = db::users::upsert_user(
        &app.db,
        &NewUser {
            email: Email::parse(email).unwrap(),
            name: UserName::parse("Ana Souza").unwrap(),
            role,
        },
        Utc::now(),
    )
    .await
    .unwrap();
    let (token, hash) = tokens::generate();
    let id = db::api_tokens::insert_token(
        &app.db,
        user.id,
        &TokenName::parse("tests").unwrap(),
        &hash,
        Utc::now(),
    )
    .await
    .unwrap();
    (id, token)
}

/// Issues a token with `grant` for the user `email` (who exists); returns (token id, token).
async fn granted_token(app: &TestApp, email: &str, grant: TokenGrant) -> (i64, String) {
    let user = db::users::find_user_by_email(&app.db, &Email::parse(email).unwrap())
        .await
        .unwrap()
        .unwrap();
    let (token, hash) = tokens::generate();
    let id = db::api_tokens::insert_granted_token(
        &app.db,
        user.id,
        &TokenName::parse("granted").unwrap(),
        &hash,
        grant,
        Utc::now(),
    )
    .await
    .unwrap();
    (id, token)
}

async fn me(app: &TestApp, authorization: Option<&str>) -> reqwest::Response {
    let mut request = app.client.get(app.url("/api/v1/me"));
    if let Some(value) = authorization {
        request = request.header("authorization", value);
    }
    request.send().await.unwrap()
}

async fn a_valid_token_authenticates_as_its_owner(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    let (_, token) = user_with_token(&app, "Ana@Example.com", PlatformRole::PlatformAdmin).await;
    let response = me(&app, Some(&format!("Bearer {token}"))).await;
    assert_eq!(response.status().as_u16(), 200);
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(body["email"], "ana@example.com");
    assert_eq!(body["name"], "Ana Souza");
    assert_eq!(body["role"], "platform_admin");
    app.stop().await;
}

async fn missing_or_unknown_tokens_get_401_with_a_json_reason(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    let (_, token) = user_with_token(&app, "ana@example.com", PlatformRole::User).await;
    for authorization in [
        None,
        Some("Bearer"),
        Some("Basic YW5hOnNlY3JldA=="),
        Some("Bearer berth_not-a-real-token"),
        Some(&format!("Bearer {token}x")),
    ] {
        let response = me(&app, authorization).await;
        assert_eq!(response.status().as_u16(), 401, "{authorization:?}");
        assert_eq!(response.headers()["www-authenticate"], "Bearer");
        let body: serde_json::Value = response.json().await.unwrap();
        assert_eq!(body["error"], "unauthorized");
    }
    app.stop().await;
}

async fn a_revoked_token_no_longer_authenticates(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    let (id, token) = user_with_token(&app, "ana@example.com", PlatformRole::User).await;
    let bearer = format!("Bearer {token}");
    assert_eq!(me(&app, Some(&bearer)).await.status().as_u16(), 200);
    assert!(
        db::api_tokens::revoke_token(&app.db, id, Utc::now())
            .await
            .unwrap()
    );
    assert!(
        !db::api_tokens::revoke_token(&app.db, id, Utc::now())
            .await
            .unwrap(),
        "only once"
    );
    assert_eq!(me(&app, Some(&bearer)).await.status().as_u16(), 401);
    app.stop().await;
}

async fn tokens_are_stored_only_as_hashes(backend: Backend) {
    use sea_orm::{ConnectionTrait, Statement};
    let (app, _db) = spawn_app(backend).await;
    let (_, token) = user_with_token(&app, "ana@example.com", PlatformRole::User).await;
    let rows = app
        .db
        .query_all_raw(Statement::from_string(
            app.db.get_database_backend(),
            "SELECT token_hash FROM api_tokens".to_owned(),
        ))
        .await
        .unwrap();
    let stored: String = rows[0].try_get("", "token_hash").unwrap();
    assert_eq!(stored, tokens::hash(&token));
    assert!(!stored.contains(&token[tokens::TOKEN_PREFIX.len()..]));
    app.stop().await;
}

async fn an_expired_token_gets_401_saying_it_expired(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    user_with_token(&app, "ana@example.com", PlatformRole::User).await;
    let (_, expired) = granted_token(
        &app,
        "ana@example.com",
        TokenGrant {
            scope: TokenScope::Write,
            expires_at: Some(Utc::now() - chrono::TimeDelta::minutes(1)),
        },
    )
    .await;
    let (_, live) = granted_token(
        &app,
        "ana@example.com",
        TokenGrant {
            scope: TokenScope::Write,
            expires_at: Some(Utc::now() + chrono::TimeDelta::days(1)),
        },
    )
    .await;
    assert_eq!(
        me(&app, Some(&format!("Bearer {live}")))
            .await
            .status()
            .as_u16(),
        200
    );
    let response = me(&app, Some(&format!("Bearer {expired}"))).await;
    assert_eq!(response.status().as_u16(), 401);
    assert!(
        response.headers()["www-authenticate"]
            .to_str()
            .unwrap()
            .contains("invalid_token")
    );
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(body["error"], "unauthorized");
    assert_eq!(body["code"], "token_expired");
    assert!(
        body["message"].as_str().unwrap().contains("has expired"),
        "{body}"
    );
    app.stop().await;
}

async fn a_read_token_reads_but_changes_nothing(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    let (write_id, write) =
        user_with_token(&app, "ana@example.com", PlatformRole::PlatformAdmin).await;
    let (_, read) = granted_token(
        &app,
        "ana@example.com",
        TokenGrant {
            scope: TokenScope::Read,
            expires_at: None,
        },
    )
    .await;
    let client = crate::helpers::client();
    for path in ["/api/v1/me", "/api/v1/gpus", "/api/v1/wallet"] {
        let response = client
            .get(app.url(path))
            .bearer_auth(&read)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 200, "{path}");
    }
    // A JSON API change, a server function that changes something, and one that only reads
    // (server functions are POSTs): all refused.
    let grant = client
        .post(app.url("/api/v1/admin/credits"))
        .bearer_auth(&read)
        .json(
            &serde_json::json!({ "email": "ana@example.com", "amount_minor": 100, "reason": "x" }),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(grant.status().as_u16(), 403);
    let revoke = client
        .post(app.url("/api/revoke_api_token"))
        .bearer_auth(&read)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("id={write_id}"))
        .send()
        .await
        .unwrap();
    assert_eq!(revoke.status().as_u16(), 403);
    let cancel = client
        .delete(app.url("/api/v1/reservations/1"))
        .bearer_auth(&read)
        .send()
        .await
        .unwrap();
    assert_eq!(cancel.status().as_u16(), 403);
    // Nothing changed: no credits, and the write token still works.
    let wallet: serde_json::Value = client
        .get(app.url("/api/v1/wallet"))
        .bearer_auth(&write)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(wallet["balance_minor"], 0, "{wallet}");
    app.stop().await;
}

crate::on_both_backends!(
    an_expired_token_gets_401_saying_it_expired,
    a_read_token_reads_but_changes_nothing,
    a_valid_token_authenticates_as_its_owner,
    missing_or_unknown_tokens_get_401_with_a_json_reason,
    a_revoked_token_no_longer_authenticates,
    tokens_are_stored_only_as_hashes,
);
