//! The JSON API under `/api/v1`, authenticated with `Authorization: Bearer <token>` (or the
//! session cookie). Errors are `{"error": …, "message": …}` with 401 / 403 / 4xx statuses.

use axum::Json;
use axum::extract::State;
use berth_app::domain::user::UserSummary;
use berth_app::error::AppError;
use berth_app::server::auth::actor::Actor;
use berth_app::server::db;
use berth_app::server::state::AppState;

/// `GET /api/v1/me`: the caller.
#[tracing::instrument(skip_all, fields(user.id))]
pub async fn me(actor: Actor) -> Json<UserSummary> {
    Json(actor.user)
}

/// `GET /api/v1/users`: every user (platform admins only).
#[tracing::instrument(skip_all, fields(user.id))]
pub async fn list_users(
    State(state): State<AppState>,
    actor: Actor,
) -> Result<Json<Vec<UserSummary>>, AppError> {
    actor.require_platform_admin()?;
    Ok(Json(db::users::list_users(&state.db).await?))
}
