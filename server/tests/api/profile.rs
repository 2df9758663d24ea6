//! Personal API tokens from the profile page's server functions: created (shown once), used as
//! bearer tokens, listed with their last use, revoked; only by their owner.

use crate::helpers::{Backend, TestApp, spawn_app};

async fn post_form(app: &TestApp, path: &str, body: &str) -> reqwest::Response {
    app.client
        .post(app.url(path))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(body.to_owned())
        .send()
        .await
        .unwrap()
}

async fn bearer_me(app: &TestApp, token: &str) -> u16 {
    crate::helpers::client()
        .get(app.url("/api/v1/me"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

async fn tokens_are_created_once_used_listed_and_revoked(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    app.sign_in("user").await;

    let created = post_form(&app, "/api/create_api_token", "name=CI%20pipeline").await;
    assert_eq!(created.status().as_u16(), 200);
    let created: serde_json::Value = created.json().await.unwrap();
    let token = created["token"].as_str().unwrap().to_owned();
    assert!(token.starts_with("berth_"));
    assert_eq!(created["info"]["name"], "CI pipeline");
    let id = created["info"]["id"].as_i64().unwrap();

    assert_eq!(bearer_me(&app, &token).await, 200);
    let list: serde_json::Value = post_form(&app, "/api/list_api_tokens", "")
        .await
        .json()
        .await
        .unwrap();
    let list = list.as_array().unwrap();
    assert_eq!(list.len(), 1);
    assert_eq!(list[0]["name"], "CI pipeline");
    assert!(list[0]["last_used_at"].is_string(), "the use is recorded");
    assert!(list[0].get("token").is_none(), "the secret is never listed");

    let revoked = post_form(&app, "/api/revoke_api_token", &format!("id={id}")).await;
    assert_eq!(revoked.status().as_u16(), 200);
    assert_eq!(
        bearer_me(&app, &token).await,
        401,
        "a revoked token is dead"
    );
    let again = post_form(&app, "/api/revoke_api_token", &format!("id={id}")).await;
    assert_eq!(again.status().as_u16(), 404);
    let list: serde_json::Value = post_form(&app, "/api/list_api_tokens", "")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(list.as_array().unwrap().len(), 0);
    app.stop().await;
}

async fn tokens_need_a_name_a_session_and_their_owner(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    let anonymous = post_form(&app, "/api/create_api_token", "name=x").await;
    assert_eq!(anonymous.status().as_u16(), 401);

    app.sign_in("user").await;
    let blank = post_form(&app, "/api/create_api_token", "name=%20%20").await;
    assert_eq!(blank.status().as_u16(), 422);
    let body: serde_json::Value = blank.json().await.unwrap();
    assert_eq!(body["Explained"]["field"], "name");

    let created: serde_json::Value = post_form(&app, "/api/create_api_token", "name=mine")
        .await
        .json()
        .await
        .unwrap();
    let id = created["info"]["id"].as_i64().unwrap();
    let token = created["token"].as_str().unwrap().to_owned();

    // Someone else cannot revoke it, nor see it.
    app.sign_in("platform_admin").await;
    let foreign = post_form(&app, "/api/revoke_api_token", &format!("id={id}")).await;
    assert_eq!(foreign.status().as_u16(), 404);
    let list: serde_json::Value = post_form(&app, "/api/list_api_tokens", "")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(list.as_array().unwrap().len(), 0);
    assert_eq!(bearer_me(&app, &token).await, 200, "still alive");

    // A cross-site form cannot create one with the victim's cookie.
    let cross = app
        .client
        .post(app.url("/api/create_api_token"))
        .header("content-type", "application/x-www-form-urlencoded")
        .header("origin", "https://evil.example")
        .header("sec-fetch-site", "cross-site")
        .body("name=stolen")
        .send()
        .await
        .unwrap();
    assert_eq!(cross.status().as_u16(), 403);
    app.stop().await;
}

async fn tokens_get_a_scope_and_a_lifetime_and_never_make_tokens(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    app.sign_in("user").await;
    for (body, field) in [
        ("name=a&expires_days=0", "expires_days"),
        ("name=a&expires_days=3651", "expires_days"),
        ("name=a&expires_days=soon", "expires_days"),
        ("name=a&scope=admin", "scope"),
    ] {
        let refused = post_form(&app, "/api/create_api_token", body).await;
        assert_eq!(refused.status().as_u16(), 422, "{body}");
        let answer: serde_json::Value = refused.json().await.unwrap();
        assert_eq!(answer["Explained"]["field"], field, "{answer}");
    }

    let before = chrono::Utc::now();
    let created: serde_json::Value = post_form(
        &app,
        "/api/create_api_token",
        "name=dashboards&scope=read&expires_days=30",
    )
    .await
    .json()
    .await
    .unwrap();
    assert_eq!(created["info"]["scope"], "read");
    let expires: chrono::DateTime<chrono::Utc> = created["info"]["expires_at"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let days = (expires - before).num_days();
    assert!((29..=30).contains(&days), "{expires}");
    let read = created["token"].as_str().unwrap().to_owned();
    let created: serde_json::Value = post_form(&app, "/api/create_api_token", "name=ci")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(created["info"]["scope"], "write", "write by default");
    assert!(
        created["info"]["expires_at"].is_null(),
        "no expiry by default"
    );
    let write = created["token"].as_str().unwrap().to_owned();
    assert_eq!(bearer_me(&app, &read).await, 200);

    // Neither token can make another one.
    for token in [&read, &write] {
        let made = crate::helpers::client()
            .post(app.url("/api/create_api_token"))
            .bearer_auth(token)
            .header("content-type", "application/x-www-form-urlencoded")
            .body("name=offspring")
            .send()
            .await
            .unwrap();
        assert_eq!(made.status().as_u16(), 403);
    }

    // The profile lists both with their scope and expiry.
    let list: serde_json::Value = post_form(&app, "/api/list_api_tokens", "")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(list.as_array().unwrap().len(), 2, "{list}");
    let (_, html) = app.get_text("/profile").await;
    assert!(html.contains("Read only"), "the read token's scope");
    assert!(html.contains("Read and change"), "the write token's scope");
    assert!(html.contains("name=\"expires_days\""), "a lifetime field");
    app.stop().await;
}

crate::on_both_backends!(
    tokens_get_a_scope_and_a_lifetime_and_never_make_tokens,
    tokens_are_created_once_used_listed_and_revoked,
    tokens_need_a_name_a_session_and_their_owner,
);
