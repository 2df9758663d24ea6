//! `/healthz` and `/readyz`.

use crate::helpers::Backend;
use crate::helpers::spawn_app;

async fn healthz_answers_ok(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    let response = app.client.get(app.url("/healthz")).send().await.unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(body["status"], "ok");
    app.stop().await;
}

async fn readyz_reports_a_migrated_reachable_database(backend: Backend) {
    let (app, _db) = spawn_app(backend).await;
    let response = app.client.get(app.url("/readyz")).send().await.unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(body["status"], "ready");
    app.stop().await;
}

async fn readyz_fails_once_the_database_is_gone(backend: Backend) {
    let (app, db) = spawn_app(backend).await;
    // Closing the pool under the running app makes every query fail like a lost database.
    app.db.clone().close().await.unwrap();
    let response = app.client.get(app.url("/readyz")).send().await.unwrap();
    assert_eq!(response.status().as_u16(), 503);
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(body["status"], "unavailable");
    // The process itself is still up.
    let health = app.client.get(app.url("/healthz")).send().await.unwrap();
    assert_eq!(health.status().as_u16(), 200);
    app.stop().await;
    drop(db);
}

async fn readyz_reports_pending_migrations(backend: Backend) {
    use sea_orm::ConnectionTrait;
    let (app, _db) = spawn_app(backend).await;
    // As if this binary were newer than the schema: forget that the last migration ran.
    app.db
        .execute_unprepared(
            "DELETE FROM seaql_migrations WHERE version = \
             (SELECT MAX(version) FROM seaql_migrations)",
        )
        .await
        .unwrap();
    let response = app.client.get(app.url("/readyz")).send().await.unwrap();
    assert_eq!(response.status().as_u16(), 503);
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(body["reason"], "1 migration(s) pending");
    app.stop().await;
}

crate::on_both_backends!(
    readyz_reports_pending_migrations,
    healthz_answers_ok,
    readyz_reports_a_migrated_reachable_database,
    readyz_fails_once_the_database_is_gone,
);
