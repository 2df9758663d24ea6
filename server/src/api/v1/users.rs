//! The JSON API under `/api/v1`, authenticated with `Authorization: Bearer <token>` (or the
//! session cookie). Errors are `{"error": …, "message": …}` with 401 / 403 / 4xx statuses.

use axum::Json;
use axum::extract::State;
use berth_app::backend::auth::actor::Actor;
use berth_app::backend::state::AppState;
use berth_app::domain::user::UserSummary;
use berth_app::error::AppError;

/// `GET /api/v1/me`: the caller.
#[tracing::instrument(skip_all, fields(user.id))]
pub async fn me(actor: Actor) -> Json<UserSummary> {
    Json(actor.user)
}

/// `GET /api/v1/users`: a page of users, oldest account first (platform admins only); the next
/// page is in the `Link` header.
#[tracing::instrument(skip_all, fields(user.id))]
pub async fn list_users(
    State(state): State<AppState>,
    actor: Actor,
    axum::extract::OriginalUri(uri): axum::extract::OriginalUri,
    query: Result<axum::extract::Query<super::PageQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<(axum::http::HeaderMap, Json<Vec<UserSummary>>), AppError> {
    let axum::extract::Query(query) = query.map_err(super::query_error)?;
    let page = query.page(berth_app::domain::paging::ListKind::Users);
    Ok(super::paged(
        &uri,
        berth_app::backend::session::users(&state, &actor, page).await?,
    ))
}
