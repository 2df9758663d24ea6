//! Choosing the language: Accept-Language, the switch, and the remembered preference.

use crate::helpers::{Backend, spawn_app};

async fn accept_language_picks_brazilian_portuguese(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    app.sign_in("user").await;
    let html = app.get_in_language("/", "pt-BR,pt;q=0.9,en;q=0.5").await;
    assert!(html.contains("Inventário de GPUs"));
    assert!(html.contains("lang=\"pt-BR\""));
    assert!(html.contains("Em manutenção"));
    // Numbers and money are formatted the Brazilian way, the symbol kept with its amount
    // (a no-break space: a narrow column never wraps between them).
    assert!(html.contains("$\u{a0}3,49"), "decimal comma in prices");
    app.stop().await;
}

async fn english_is_the_default(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    app.sign_in("user").await;
    let (_, html) = app.get_text("/").await;
    assert!(html.contains("GPU inventory"));
    assert!(html.contains("lang=\"en\""));
    app.stop().await;
}

async fn the_language_switch_is_remembered_over_accept_language(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    app.sign_in("user").await;
    let response = app
        .client
        .post(app.url("/locale"))
        .form(&[("locale", "pt-BR"), ("return_to", "/?model=NVIDIA%20L40S")])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 303);
    assert_eq!(response.headers()["location"], "/?model=NVIDIA%20L40S");

    let html = app.get_in_language("/", "en-US,en;q=0.9").await;
    assert!(
        html.contains("Inventário de GPUs"),
        "the cookie wins over Accept-Language"
    );
    app.stop().await;
}

async fn the_language_switch_refuses_unknown_languages_and_foreign_redirects(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    app.sign_in("user").await;
    let response = app
        .client
        .post(app.url("/locale"))
        .form(&[("locale", "xx"), ("return_to", "/")])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 400);
    assert!(response.text().await.unwrap().contains("unknown language"));

    let response = app
        .client
        .post(app.url("/locale"))
        .form(&[("locale", "en"), ("return_to", "//evil.example/")])
        .send()
        .await
        .unwrap();
    assert_eq!(response.headers()["location"], "/");
    app.stop().await;
}

crate::on_both_backends!(
    accept_language_picks_brazilian_portuguese,
    english_is_the_default,
    the_language_switch_is_remembered_over_accept_language,
    the_language_switch_refuses_unknown_languages_and_foreign_redirects,
);
