//! Watches: "tell me when N × <model> is free for H hours between <from> and <to>", and the
//! one-click booking of the window held for one.

use crate::api::v1::body_error;
use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use berth_app::backend::auth::actor::Actor;
use berth_app::backend::state::AppState;
use berth_app::backend::watches::{self, WatchForm};
use berth_app::domain::reservation::Reservation;
use berth_app::domain::watch::Watch;
use berth_app::error::AppError;

/// `GET /api/v1/watches`: the caller's watches, newest first, each with its last held window.
pub async fn list(
    State(state): State<AppState>,
    actor: Actor,
) -> Result<Json<Vec<Watch>>, AppError> {
    Ok(Json(watches::mine(&state, &actor).await?))
}

/// `POST /api/v1/watches`: 201 with the watch (already holding a window when one is free now);
/// 422 naming the field for bad input; 409 `too_many_watches`.
pub async fn create(
    State(state): State<AppState>,
    actor: Actor,
    body: Result<Json<WatchForm>, JsonRejection>,
) -> Result<(StatusCode, Json<Watch>), AppError> {
    let Json(form) = body.map_err(body_error)?;
    let watch = watches::create(&state, &actor, &form).await?;
    Ok((StatusCode::CREATED, Json(watch)))
}

/// `GET /api/v1/watches/{id}`: one of the caller's watches (anyone else's: 404).
pub async fn show(
    State(state): State<AppState>,
    actor: Actor,
    Path(id): Path<i64>,
) -> Result<Json<Watch>, AppError> {
    Ok(Json(watches::one(&state, &actor, id).await?))
}

/// `DELETE /api/v1/watches/{id}`: stops watching (409 `watch_closed` when it already stopped).
pub async fn cancel(
    State(state): State<AppState>,
    actor: Actor,
    Path(id): Path<i64>,
) -> Result<Json<Watch>, AppError> {
    Ok(Json(watches::cancel(&state, &actor, id).await?))
}

/// `POST /api/v1/watches/{id}/book`: books the window held for the watch: 201 with the
/// reservation; 409 `window_taken` when another watcher booked it first, `no_window_held` when
/// the hold ended.
pub async fn book(
    State(state): State<AppState>,
    actor: Actor,
    Path(id): Path<i64>,
) -> Result<(StatusCode, Json<Reservation>), AppError> {
    let reservation = watches::book(&state, &actor, id).await?;
    Ok((StatusCode::CREATED, Json(reservation)))
}
