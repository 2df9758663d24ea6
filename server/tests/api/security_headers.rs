//! Security headers on every response, the page's script nonce, HSTS behind HTTPS only, no
//! caching of what a signed-in user sees, and a panicking handler answering 500.

use crate::helpers::{Backend, TestDatabase, spawn_app, spawn_with_routes, test_settings};

/// The nonce in a Content-Security-Policy header's `script-src`.
fn header_nonce(policy: &str) -> String {
    let start = policy.find("'nonce-").expect("a nonce in the policy") + "'nonce-".len();
    let end = policy[start..].find('\'').expect("the nonce ends") + start;
    policy[start..end].to_owned()
}

/// The start tag of every `<script>` of `html` that runs something: one with a `src` or with
/// content. (leptos_i18n leaves an empty `<script></script>` behind, which browsers skip before
/// any policy check.)
fn script_tags(html: &str) -> Vec<&str> {
    html.match_indices("<script")
        .filter_map(|(at, _)| {
            let tag_end = at + html[at..].find('>').expect("tag ends");
            let tag = &html[at..tag_end];
            let body_end = tag_end + html[tag_end..].find("</script>").expect("script ends");
            let body = &html[tag_end + 1..body_end];
            (tag.contains(" src=") || !body.trim().is_empty()).then_some(tag)
        })
        .collect()
}

async fn every_response_carries_the_security_headers(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    app.sign_in("user").await;
    // A page, the JSON API, a health check, a server function, a 404 and a refused request.
    let mut responses = Vec::new();
    for path in ["/", "/calendar", "/api/v1/me", "/healthz", "/no-such-page"] {
        responses.push((path, app.client.get(app.url(path)).send().await.unwrap()));
    }
    responses.push((
        "/api/current_user",
        app.call_server_fn("/api/current_user", &[]).await,
    ));
    responses.push((
        "cross-site POST",
        app.client
            .post(app.url("/auth/signout"))
            .header("origin", "https://evil.example")
            .header("sec-fetch-site", "cross-site")
            .send()
            .await
            .unwrap(),
    ));
    for (what, response) in responses {
        let headers = response.headers();
        let policy = headers
            .get("content-security-policy")
            .unwrap_or_else(|| panic!("{what}: no Content-Security-Policy"))
            .to_str()
            .unwrap();
        for directive in [
            "default-src 'self'",
            "script-src 'self' 'nonce-",
            "'wasm-unsafe-eval'",
            "frame-ancestors 'none'",
            "object-src 'none'",
            "base-uri 'self'",
            "connect-src 'self'",
            "img-src 'self' data:",
        ] {
            assert!(
                policy.contains(directive),
                "{what}: {directive} in {policy}"
            );
        }
        let script_src = policy
            .split(';')
            .map(str::trim)
            .find(|directive| directive.starts_with("script-src"))
            .unwrap();
        assert!(
            !script_src.contains("'unsafe-inline'") && !script_src.contains(" 'unsafe-eval'"),
            "{what}: {policy}"
        );
        assert_eq!(headers["x-content-type-options"], "nosniff", "{what}");
        assert_eq!(headers["referrer-policy"], "same-origin", "{what}");
        assert!(
            headers.get("strict-transport-security").is_none(),
            "{what}: no HSTS over plain HTTP"
        );
    }
    app.stop().await;
}

async fn each_page_gets_a_fresh_nonce_that_its_scripts_carry(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    app.sign_in("user").await;
    let mut seen = Vec::new();
    for path in ["/", "/", "/calendar", "/signin", "/no-such-page"] {
        let response = app.client.get(app.url(path)).send().await.unwrap();
        let policy = response.headers()["content-security-policy"]
            .to_str()
            .unwrap()
            .to_owned();
        let nonce = header_nonce(&policy);
        assert!(
            nonce.len() >= 16,
            "{path}: a nonce of 128 bits, got {nonce}"
        );
        let html = response.text().await.unwrap();
        let scripts = script_tags(&html);
        assert!(
            scripts.iter().any(|tag| tag.contains("type=\"module\"")),
            "{path}: the hydration script is there: {scripts:?}"
        );
        for tag in &scripts {
            assert!(
                tag.contains(&format!("nonce=\"{nonce}\"")),
                "{path}: every script carries this response's nonce {nonce}: {tag}"
            );
        }
        assert!(!seen.contains(&nonce), "{path}: nonce {nonce} used twice");
        seen.push(nonce);
    }
    app.stop().await;
}

/// The `on…=` attributes (inline event handlers) in `html`, which the policy blocks.
fn inline_handlers(html: &str) -> Vec<String> {
    html.match_indices(" on")
        .filter_map(|(at, _)| {
            let rest = &html[at + 1..];
            let name_len = rest.find(|c: char| !c.is_ascii_alphabetic())?;
            (name_len > 2 && rest[name_len..].starts_with('='))
                .then(|| rest.chars().take(name_len + 30).collect())
        })
        .collect()
}

async fn no_page_has_an_inline_event_handler(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    app.sign_in("platform_admin").await;
    for path in [
        "/",
        "/gpus/1",
        "/calendar",
        "/reservations",
        "/wallet",
        "/profile",
        "/admin/maintenance",
        "/admin/credits",
        "/admin/payments",
        "/admin/nodes",
        "/admin/fleet",
        "/admin/audit",
        "/reports",
        "/reports/fleet",
        "/teams",
    ] {
        let (status, html) = app.get_text(path).await;
        assert_eq!(status, 200, "{path}");
        let handlers = inline_handlers(&html);
        assert!(handlers.is_empty(), "{path}: {handlers:?}");
    }
    app.stop().await;
}

async fn hsts_is_sent_when_the_public_url_is_https(backend: Backend) {
    let db = TestDatabase::create(backend).await;
    let mut settings = test_settings(&db);
    settings.public_url = Some("https://berth.example.com".to_owned());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let app = spawn_with_routes(settings, listener, axum::Router::new()).await;
    for path in ["/signin", "/healthz", "/api/v1/me"] {
        let response = app.client.get(app.url(path)).send().await.unwrap();
        let hsts = response.headers()["strict-transport-security"]
            .to_str()
            .unwrap();
        assert!(hsts.starts_with("max-age=31536000"), "{path}: {hsts}");
    }
    app.stop().await;
}

async fn nothing_a_signed_in_user_sees_is_stored(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    app.sign_in("user").await;
    let mut responses = Vec::new();
    for path in [
        "/",
        "/wallet",
        "/reservations",
        "/api/v1/me",
        "/api/v1/wallet",
    ] {
        responses.push((path, app.client.get(app.url(path)).send().await.unwrap()));
    }
    responses.push((
        "/api/current_user",
        app.call_server_fn("/api/current_user", &[]).await,
    ));
    for (path, response) in responses {
        assert_eq!(response.status(), 200, "{path}");
        assert_eq!(
            response
                .headers()
                .get("cache-control")
                .map(|v| v.to_str().unwrap()),
            Some("no-store"),
            "{path}"
        );
    }
    app.stop().await;
}

async fn a_panicking_handler_answers_500_and_the_server_goes_on(backend: Backend) {
    let db = TestDatabase::create(backend).await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    async fn panics() -> &'static str {
        panic!("a test handler panicked on purpose")
    }
    let extra = axum::Router::new()
        .route("/api/v1/test/panic", axum::routing::get(panics))
        .route("/test/panic", axum::routing::get(panics));
    let app = spawn_with_routes(test_settings(&db), listener, extra).await;
    app.sign_in("user").await;

    // The API: the usual JSON error.
    let response = app
        .client
        .get(app.url("/api/v1/test/panic"))
        .send()
        .await
        .expect("an answer, not a closed connection");
    assert_eq!(response.status(), 500);
    assert!(response.headers().contains_key("content-security-policy"));
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(body["error"], "internal", "{body}");
    assert!(
        !body.to_string().contains("on purpose"),
        "the panic message stays in the log: {body}"
    );

    // A page: an HTML error page in the reader's language.
    let response = app
        .client
        .get(app.url("/test/panic"))
        .header("accept", "text/html")
        .header("accept-language", "pt-BR")
        .send()
        .await
        .expect("an answer, not a closed connection");
    assert_eq!(response.status(), 500);
    let html = response.text().await.unwrap();
    assert!(html.contains("Algo deu errado"), "{html}");
    assert!(html.contains("lang=\"pt-BR\""), "{html}");
    assert!(!html.contains("on purpose"), "{html}");
    // Without a language cookie or Accept-Language: English.
    let page = |language: &'static str| {
        let request = app
            .client
            .get(app.url("/test/panic"))
            .header("accept", "text/html");
        let request = match language {
            "" => request,
            language => request.header("accept-language", language),
        };
        async move { request.send().await.unwrap().text().await.unwrap() }
    };
    let html = page("").await;
    assert!(
        html.contains("Something went wrong") && html.contains("lang=\"en\""),
        "{html}"
    );
    // The language cookie (the switch in the header) wins over the browser's languages.
    let switched = app
        .client
        .post(app.url("/locale"))
        .form(&[("locale", "en"), ("return_to", "/")])
        .send()
        .await
        .unwrap();
    assert!(switched.status().is_success() || switched.status().is_redirection());
    let html = page("pt-BR").await;
    assert!(
        html.contains("Something went wrong") && html.contains("lang=\"en\""),
        "{html}"
    );

    // The server still answers.
    let response = app.client.get(app.url("/api/v1/me")).send().await.unwrap();
    assert_eq!(response.status(), 200);
    app.stop().await;
}

crate::on_both_backends!(
    every_response_carries_the_security_headers,
    each_page_gets_a_fresh_nonce_that_its_scripts_carry,
    no_page_has_an_inline_event_handler,
    hsts_is_sent_when_the_public_url_is_https,
    nothing_a_signed_in_user_sees_is_stored,
    a_panicking_handler_answers_500_and_the_server_goes_on,
);
