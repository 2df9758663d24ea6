//! The reservations part of the JSON API: GPUs, availability, find a slot, book, list, cancel.
//! Authenticated like the rest of `/api/v1` (bearer token or session cookie); errors are
//! `{"error", "message", "code"?, "field"?, "clash"?}` with 401/403/404/409/422.

use super::{body_error, idempotency_key, query_error};
use axum::Json;
use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use berth_app::backend::auth::actor::Actor;
use berth_app::backend::reservations::{self, BookingForm, SlotForm};
use berth_app::backend::state::AppState;
use berth_app::domain::inventory::GpuListing;
use berth_app::domain::problem::Problem;
use berth_app::domain::reservation::{GpuAvailability, Reservation, SlotOffer};
use berth_app::error::AppError;
use serde::{Deserialize, Serialize};

/// One GPU in `GET /api/v1/gpus`.
#[derive(Debug, Serialize)]
pub struct ApiGpu {
    id: i64,
    uuid: String,
    node: String,
    model: String,
    memory_mib: u64,
    status: String,
    shareable: bool,
    price_per_hour_minor: i64,
}

impl ApiGpu {
    fn new(node: &str, gpu: GpuListing) -> Self {
        Self {
            id: gpu.id,
            uuid: gpu.uuid,
            node: node.to_owned(),
            model: gpu.model,
            memory_mib: gpu.memory.mib(),
            status: gpu.status.as_str().to_owned(),
            shareable: gpu.shareable,
            price_per_hour_minor: gpu.hourly_price.minor(),
        }
    }
}

/// `GET /api/v1/gpus`: every GPU.
pub async fn list_gpus(
    State(state): State<AppState>,
    _actor: Actor,
) -> Result<Json<Vec<ApiGpu>>, AppError> {
    let nodes = berth_app::backend::inventory::nodes(&state).await?;
    Ok(Json(
        nodes
            .into_iter()
            .flat_map(|node| {
                let name = node.name;
                node.gpus
                    .into_iter()
                    .map(move |gpu| ApiGpu::new(&name, gpu))
            })
            .collect(),
    ))
}

/// `?from=&to=&model=`
#[derive(Debug, Deserialize)]
pub struct AvailabilityQuery {
    from: String,
    to: String,
    model: Option<String>,
}

/// `GET /api/v1/availability`: busy intervals per GPU.
pub async fn availability(
    State(state): State<AppState>,
    actor: Actor,
    query: Result<Query<AvailabilityQuery>, QueryRejection>,
) -> Result<Json<Vec<GpuAvailability>>, AppError> {
    let Query(query) = query.map_err(query_error)?;
    let from = reservations::parse_time("from", &query.from)?;
    let to = reservations::parse_time("to", &query.to)?;
    Ok(Json(
        reservations::availability(&state, &actor, from, to, query.model.as_deref()).await?,
    ))
}

/// `GET /api/v1/slots?model=&count=&share=&hours=&after=`: the earliest windows that fit.
pub async fn slots(
    State(state): State<AppState>,
    _actor: Actor,
    query: Result<Query<SlotForm>, QueryRejection>,
) -> Result<Json<Vec<SlotOffer>>, AppError> {
    let Query(form) = query.map_err(query_error)?;
    Ok(Json(
        reservations::find_slots(&state, &form, state.now()).await?,
    ))
}

/// `POST /api/v1/reservations`: 201 with the reservation; 409 with the clash and a suggestion.
/// With an `Idempotency-Key` header, a retry of the same request answers the first booking.
pub async fn create(
    State(state): State<AppState>,
    actor: Actor,
    headers: axum::http::HeaderMap,
    body: Result<Json<BookingForm>, JsonRejection>,
) -> Result<(StatusCode, Json<Reservation>), AppError> {
    let Json(form) = body.map_err(body_error)?;
    let key = idempotency_key(&headers)?;
    let reservation = reservations::create(&state, &actor, &form, state.now(), key).await?;
    Ok((StatusCode::CREATED, Json(reservation)))
}

/// `?mine=true` (default): your own; `?mine=false`: everyone's (platform admins). Paged
/// (`limit`, `cursor`) and filtered by `from` / `to` (RFC 3339: those overlapping), `gpu` (an id)
/// and `status` (`confirmed`, `active`, `completed`, `cancelled`).
#[derive(Debug, Deserialize)]
pub struct ListQuery {
    #[serde(default)]
    mine: Option<bool>,
    #[serde(default)]
    limit: Option<i64>,
    #[serde(default)]
    cursor: Option<String>,
    #[serde(default)]
    from: Option<String>,
    #[serde(default)]
    to: Option<String>,
    #[serde(default)]
    gpu: Option<i64>,
    #[serde(default)]
    status: Option<String>,
}

/// `GET /api/v1/reservations`: a page of the caller's reservations (or everyone's with
/// `mine=false`), latest start first; the next page is in the `Link` header.
pub async fn list(
    State(state): State<AppState>,
    actor: Actor,
    axum::extract::OriginalUri(uri): axum::extract::OriginalUri,
    query: Result<Query<ListQuery>, QueryRejection>,
) -> Result<impl axum::response::IntoResponse, AppError> {
    use berth_app::backend::db::reservations::ListFilter;
    use berth_app::domain::paging::ListKind;
    let Query(query) = query.map_err(query_error)?;
    let everyone = query.mine == Some(false);
    let page = berth_app::backend::input::page(
        ListKind::Reservations,
        query.limit,
        query.cursor.as_deref(),
    )?;
    let time = |field: &'static str, text: Option<&String>| {
        text.map(|text| {
            chrono::DateTime::parse_from_rfc3339(text)
                .map(|at| at.with_timezone(&chrono::Utc))
                .map_err(|_| AppError::invalid(field, Problem::NotADateTime { raw: text.clone() }))
        })
        .transpose()
    };
    let status = query
        .status
        .as_deref()
        .map(|text| {
            serde_json::from_value(serde_json::Value::String(text.to_owned())).map_err(|_| {
                AppError::invalid(
                    "status",
                    Problem::Unreadable {
                        detail: format!(
                            "unknown status `{text}`: use confirmed, active, completed or cancelled"
                        ),
                    },
                )
            })
        })
        .transpose()?;
    let filter = ListFilter {
        owner_id: None,
        from: time("from", query.from.as_ref())?,
        to: time("to", query.to.as_ref())?,
        gpu_id: query.gpu,
        status,
    };
    if let (Some(from), Some(to)) = (filter.from, filter.to)
        && to <= from
    {
        return Err(AppError::invalid("to", Problem::ToNotAfterFrom));
    }
    let listed = reservations::list(&state, &actor, everyone, filter, &page, state.now()).await?;
    Ok(super::paged(&uri, listed))
}

/// `GET /api/v1/reservations/{id}`: one reservation (its owner or a platform admin), with
/// `moved_from` / `moved_to` when a failed GPU moved it.
pub async fn one(
    State(state): State<AppState>,
    actor: Actor,
    Path(id): Path<i64>,
) -> Result<Json<Reservation>, AppError> {
    Ok(Json(
        reservations::one(&state, &actor, id, state.now()).await?,
    ))
}

/// `DELETE /api/v1/reservations/{id}`: cancels (owner or platform admin, before start).
pub async fn cancel(
    State(state): State<AppState>,
    actor: Actor,
    Path(id): Path<i64>,
) -> Result<Json<Reservation>, AppError> {
    Ok(Json(
        reservations::cancel(&state, &actor, id, state.now()).await?,
    ))
}
