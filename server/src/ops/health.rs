//! `GET /healthz` (the process is up) and `GET /readyz` (the database answers and its schema is
//! current), for load balancers and orchestrators.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use berth_app::backend::db;
use sea_orm::DatabaseConnection;
use serde_json::json;

/// Always 200 while the process serves requests.
pub async fn healthz() -> impl IntoResponse {
    Json(json!({ "status": "ok" }))
}

/// 200 when the database is reachable and no migration is pending, 503 otherwise.
pub async fn readyz(State(db): State<DatabaseConnection>) -> impl IntoResponse {
    if let Err(err) = db.ping().await {
        tracing::warn!(error = %err, "readiness: database unreachable");
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({ "status": "unavailable", "reason": "database unreachable" })),
        );
    }
    match db::pending_migrations(&db).await {
        Ok(0) => (StatusCode::OK, Json(json!({ "status": "ready" }))),
        Ok(pending) => (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({
                "status": "unavailable",
                "reason": format!("{pending} migration(s) pending"),
            })),
        ),
        Err(err) => {
            tracing::warn!(error = %err, "readiness: cannot read migrations");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                Json(json!({ "status": "unavailable", "reason": "cannot read migration state" })),
            )
        }
    }
}
