//! Running the fleet in the JSON API and the fleet page's plain forms (platform admins). The
//! rules live in `berth_app::backend::fleet`; these handlers only read requests and write answers.

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use berth_app::backend::auth::actor::Actor;
use berth_app::backend::fleet::{self, GpuChange};
use berth_app::backend::state::AppState;
use berth_app::domain::problem::Problem;
use berth_app::error::AppError;
use serde::Deserialize;

use crate::api::v1::body_error;

/// `{"hourly_price_minor": 349}`.
#[derive(Debug, Deserialize)]
pub struct PriceBody {
    hourly_price_minor: serde_json::Value,
}

/// `PUT /api/v1/admin/models/{model}/price`: the hourly price of every GPU of the model (not
/// retired); 200 with how many changed. Bookings keep the price they locked.
pub async fn set_model_price(
    State(state): State<AppState>,
    actor: Actor,
    Path(model): Path<String>,
    body: Result<Json<PriceBody>, JsonRejection>,
) -> Result<Json<serde_json::Value>, AppError> {
    actor.require_platform_admin()?;
    let Json(body) = body.map_err(body_error)?;
    let price = body.hourly_price_minor.as_i64().ok_or_else(|| {
        AppError::invalid(
            "hourly_price_minor",
            Problem::NotMinorUnits {
                raw: body.hourly_price_minor.to_string(),
            },
        )
    })?;
    let changed = fleet::set_model_price(&state, &actor, &model, price, state.now()).await?;
    Ok(Json(
        serde_json::json!({ "model": model, "gpus": changed, "hourly_price_minor": price }),
    ))
}

/// `PATCH /api/v1/admin/gpus/{id}`: `{"hourly_price_minor"?, "shareable"?}`; 204.
pub async fn update_gpu(
    State(state): State<AppState>,
    actor: Actor,
    Path(id): Path<i64>,
    body: Result<Json<GpuChange>, JsonRejection>,
) -> Result<StatusCode, AppError> {
    actor.require_platform_admin()?;
    let Json(change) = body.map_err(body_error)?;
    fleet::update_gpu(&state, &actor, id, &change, state.now()).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `GET /api/v1/admin/gpus/pending` (platform admins): the GPUs agents reported that wait for
/// acceptance, oldest first.
pub async fn pending_gpus(
    State(state): State<AppState>,
    actor: Actor,
) -> Result<Json<Vec<berth_app::domain::inventory::PendingGpu>>, AppError> {
    Ok(Json(
        berth_app::backend::inventory::pending(&state, &actor).await?,
    ))
}

/// `POST /api/v1/admin/gpus/{id}/accept` (platform admins): accepts a GPU an agent reported into
/// the inventory, bookable from then on; 204 (also when it was accepted already).
pub async fn accept_gpu(
    State(state): State<AppState>,
    actor: Actor,
    Path(id): Path<i64>,
) -> Result<StatusCode, AppError> {
    berth_app::backend::telemetry::accept_gpu(&state, &actor, id, state.now()).await?;
    Ok(StatusCode::NO_CONTENT)
}
