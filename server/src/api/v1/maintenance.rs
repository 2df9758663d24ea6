//! Maintenance windows in the JSON API: list (everyone signed in), set and end early (platform
//! admins). Errors as in the rest of `/api/v1`.

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use berth_app::backend::auth::actor::Actor;
use berth_app::backend::maintenance::{self, MaintenanceForm};
use berth_app::backend::state::AppState;
use berth_app::domain::maintenance::MaintenanceWindow;
use berth_app::error::AppError;

/// `GET /api/v1/maintenance`: current and upcoming windows, soonest first.
pub async fn list(
    State(state): State<AppState>,
    actor: Actor,
) -> Result<Json<Vec<MaintenanceWindow>>, AppError> {
    Ok(Json(maintenance::list(&state, &actor, state.now()).await?))
}

/// `POST /api/v1/maintenance` with `{"gpu_ids": [..], "start", "end", "reason"}`: 201 with one
/// window per GPU; 409 when reservations are in the way; 422 on invalid input.
pub async fn create(
    State(state): State<AppState>,
    actor: Actor,
    body: Result<Json<MaintenanceForm>, JsonRejection>,
) -> Result<(StatusCode, Json<Vec<MaintenanceWindow>>), AppError> {
    // The role first: a user without it learns nothing from validation messages.
    actor.require_platform_admin()?;
    let Json(form) = body.map_err(crate::api::v1::body_error)?;
    let created = maintenance::create(&state, &actor, &form, state.now()).await?;
    Ok((StatusCode::CREATED, Json(created)))
}

/// `DELETE /api/v1/maintenance/{id}`: ends a window early (an upcoming one is removed, an
/// ongoing one ends at the next quarter hour).
pub async fn end(
    State(state): State<AppState>,
    actor: Actor,
    Path(id): Path<i64>,
) -> Result<Json<MaintenanceWindow>, AppError> {
    Ok(Json(
        maintenance::end(&state, &actor, id, state.now()).await?,
    ))
}

/// What retiring a GPU did.
#[derive(Debug, serde::Serialize)]
pub struct Retired {
    gpu_id: i64,
    /// Reservations moved to an equivalent GPU: `{"id", "to"}` (`to`: the reservation that
    /// continues a booking that had begun; the same id when it moved whole).
    moved: Vec<MovedBooking>,
    /// Reservations released (no equivalent GPU free), their rest refunded in full.
    released: Vec<i64>,
}

/// A booking moved off the retired GPU.
#[derive(Debug, serde::Serialize)]
pub struct MovedBooking {
    id: i64,
    to: i64,
}

/// `POST /api/v1/admin/gpus/{id}/retire` (platform admins): the GPU can no longer be booked, and
/// the reservations holding it from now on move to an equivalent free GPU, or are released with
/// their rest refunded when none is free.
pub async fn retire(
    State(state): State<AppState>,
    actor: Actor,
    Path(id): Path<i64>,
) -> Result<Json<Retired>, AppError> {
    use berth_app::backend::reservations::failover::Outcome;
    let outcomes =
        berth_app::backend::reservations::retire_gpu(&state, &actor, id, state.now()).await?;
    let mut retired = Retired {
        gpu_id: id,
        moved: Vec::new(),
        released: Vec::new(),
    };
    for outcome in outcomes {
        match outcome {
            Outcome::Moved { id } => retired.moved.push(MovedBooking { id, to: id }),
            Outcome::Continued { id, to } => retired.moved.push(MovedBooking { id, to }),
            Outcome::Released { id } => retired.released.push(id),
        }
    }
    Ok(Json(retired))
}
