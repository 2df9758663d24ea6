//! The JSON API under `/api/v1`, authenticated with `Authorization: Bearer <token>`.

use axum::Json;
use berth_app::domain::user::UserSummary;
use berth_app::server::auth::actor::Actor;

/// `GET /api/v1/me`: the user the token belongs to.
#[tracing::instrument(skip_all, fields(user.id))]
pub async fn me(actor: Actor) -> Json<UserSummary> {
    Json(actor.user)
}
