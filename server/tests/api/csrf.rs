//! Cross-site requests are refused; same-site forms, API clients and reads are not.

use crate::helpers::{Backend, spawn_app};

async fn cross_site_posts_to_server_functions_and_forms_get_403(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    let evil = app
        .call_server_fn("/api/list_gpus", &[("origin", "https://evil.example")])
        .await;
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
    app.sign_in("user").await;
    let same = app
        .call_server_fn(
            "/api/list_gpus",
            &[
                ("origin", &format!("http://{}", app.addr)),
                ("sec-fetch-site", "same-origin"),
            ],
        )
        .await;
    assert_eq!(same.status().as_u16(), 200);

    let bearer = app
        .call_server_fn(
            "/api/list_gpus",
            &[
                ("origin", "https://elsewhere.example"),
                ("authorization", "Bearer berth_anything"),
            ],
        )
        .await;
    assert_eq!(
        bearer.status().as_u16(),
        401,
        "token clients are not subject to the origin check: the function itself checks the token"
    );
    app.stop().await;
}

/// A browser attaches cached `Basic` or `Negotiate` credentials to a cross-site form too: only
/// `Bearer` exempts a request from the check.
async fn other_authorization_schemes_do_not_exempt_cross_site_posts(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    app.sign_in("user").await;
    for scheme in [
        "Basic dXNlcjpwYXNz",
        "Negotiate YIIBhgYGKwYBBQUCoIIBejCCAXY=",
    ] {
        let response = app
            .client
            .post(app.url("/locale"))
            .header("origin", "https://evil.example")
            .header("authorization", scheme)
            .form(&[("locale", "pt-BR"), ("return_to", "/")])
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 403, "{scheme}");
        assert!(response.headers().get("set-cookie").is_none());
        let evil = app
            .call_server_fn(
                "/api/list_gpus",
                &[("sec-fetch-site", "cross-site"), ("authorization", scheme)],
            )
            .await;
        assert_eq!(evil.status().as_u16(), 403, "{scheme}");
    }
    app.stop().await;
}

crate::on_both_backends!(
    other_authorization_schemes_do_not_exempt_cross_site_posts,
    cross_site_posts_to_server_functions_and_forms_get_403,
    same_origin_posts_and_bearer_clients_pass,
);
