//! Cross-site requests are refused; same-site forms, API clients and reads are not.

use crate::helpers::{Backend, spawn_app};

async fn cross_site_posts_to_server_functions_and_forms_get_403(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    let evil = app
        .client
        .post(app.url("/api/list_gpus"))
        .header("origin", "https://evil.example")
        .header("content-type", "application/x-www-form-urlencoded")
        .body("")
        .send()
        .await
        .unwrap();
    assert_eq!(evil.status().as_u16(), 403);
    let body: serde_json::Value = evil.json().await.unwrap();
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("cross-site request refused")
    );

    let form = app
        .client
        .post(app.url("/locale"))
        .header("sec-fetch-site", "cross-site")
        .form(&[("locale", "pt-BR"), ("return_to", "/")])
        .send()
        .await
        .unwrap();
    assert_eq!(form.status().as_u16(), 403);
    assert!(
        form.headers().get("set-cookie").is_none(),
        "nothing was changed"
    );
    app.stop().await;
}

async fn same_origin_posts_and_bearer_clients_pass(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    let same = app
        .client
        .post(app.url("/api/list_gpus"))
        .header("origin", format!("http://{}", app.addr))
        .header("sec-fetch-site", "same-origin")
        .header("content-type", "application/x-www-form-urlencoded")
        .body("")
        .send()
        .await
        .unwrap();
    assert_eq!(same.status().as_u16(), 200);

    let bearer = app
        .client
        .post(app.url("/api/list_gpus"))
        .header("origin", "https://elsewhere.example")
        .header("authorization", "Bearer berth_anything")
        .header("content-type", "application/x-www-form-urlencoded")
        .body("")
        .send()
        .await
        .unwrap();
    assert_eq!(
        bearer.status().as_u16(),
        200,
        "token clients are not subject to the origin check"
    );
    app.stop().await;
}

crate::on_both_backends!(
    cross_site_posts_to_server_functions_and_forms_get_403,
    same_origin_posts_and_bearer_clients_pass,
);
