//! The reservations part of the JSON API: GPUs, availability, find a slot, book, list, cancel.
//! Authenticated like the rest of `/api/v1` (bearer token or session cookie); errors are
//! `{"error", "message", "code"?, "field"?, "clash"?}` with 401/403/404/409/422.

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
    let nodes = berth_app::backend::inventory::nodes(&state.db).await?;
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

fn query_error(rejection: QueryRejection) -> AppError {
    AppError::invalid(
        "query",
        Problem::Unreadable {
            detail: rejection.body_text(),
        },
    )
}

/// A JSON body that could not be read, as a 422 on `body`.
pub fn body_error(rejection: JsonRejection) -> AppError {
    AppError::invalid(
        "body",
        Problem::Unreadable {
            detail: rejection.body_text(),
        },
    )
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

/// The `Idempotency-Key` header, if sent (422 when it is not text).
pub fn idempotency_key(headers: &axum::http::HeaderMap) -> Result<Option<&str>, AppError> {
    headers
        .get("idempotency-key")
        .map(|value| {
            value.to_str().map_err(|_| {
                AppError::invalid(
                    "Idempotency-Key",
                    Problem::BadIdempotencyKey {
                        max: reservations::MAX_IDEMPOTENCY_KEY_CHARS,
                    },
                )
            })
        })
        .transpose()
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

/// `?mine=true` (default): your own; `?mine=false`: everyone's (platform admins).
#[derive(Debug, Deserialize)]
pub struct ListQuery {
    #[serde(default)]
    mine: Option<bool>,
}

/// `GET /api/v1/reservations?mine=true`: the caller's reservations, latest first.
pub async fn list(
    State(state): State<AppState>,
    actor: Actor,
    query: Result<Query<ListQuery>, QueryRejection>,
) -> Result<Json<Vec<Reservation>>, AppError> {
    let Query(query) = query.map_err(query_error)?;
    let everyone = query.mine == Some(false);
    Ok(Json(
        reservations::list(&state, &actor, everyone, state.now()).await?,
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

/// The calendar's booking form without JavaScript: local times in the viewer's zone (profile
/// setting, else the browser's cookie).
#[derive(Debug, Deserialize)]
pub struct BookFormPost {
    gpu_id: i64,
    #[serde(default)]
    share: Option<String>,
    start: String,
    end: String,
    #[serde(default)]
    return_to: Option<String>,
    #[serde(default)]
    charge: Option<String>,
    #[serde(default)]
    idempotency_key: Option<String>,
    /// A team's id, or empty for a personal booking.
    #[serde(default)]
    team_id: Option<String>,
    /// A priority class, or empty for the default.
    #[serde(default)]
    priority: Option<String>,
}

/// `POST /calendar/book`: books, then back to the calendar with `booked=ID` or `error=message`.
pub async fn book_form(
    State(state): State<AppState>,
    actor: Actor,
    headers: axum::http::HeaderMap,
    axum::Form(form): axum::Form<BookFormPost>,
) -> axum::response::Redirect {
    let zone = berth_app::backend::viewer::viewer_zone(&actor, &headers);
    let back = form
        .return_to
        .clone()
        .filter(|path| {
            berth_app::domain::return_to::local_path(path).is_some()
                && path.starts_with("/calendar")
        })
        .unwrap_or_else(|| "/calendar".into());
    let separator = if back.contains('?') { '&' } else { '?' };
    let result = async {
        let start = reservations::local_to_rfc3339(zone.as_deref(), "start", &form.start)?;
        let end = reservations::local_to_rfc3339(zone.as_deref(), "end", &form.end)?;
        let booking_form = BookingForm {
            gpu_ids: Some(vec![form.gpu_id]),
            model: None,
            count: None,
            share: form.share.clone().map(reservations::ShareInput::Text),
            start,
            end,
            charge: form.charge.clone(),
            priority: form.priority.clone(),
            team_id: match form.team_id.as_deref().map(str::trim) {
                None | Some("") => None,
                Some(raw) => Some(raw.parse::<i64>().map_err(|_| {
                    berth_app::error::AppError::invalid(
                        "team_id",
                        berth_app::domain::problem::Problem::Unreadable {
                            detail: format!("`{raw}` is not a team id"),
                        },
                    )
                })?),
            },
        };
        let key = form
            .idempotency_key
            .as_deref()
            .filter(|key| !key.is_empty());
        reservations::create(&state, &actor, &booking_form, state.now(), key).await
    }
    .await;
    let target = match result {
        Ok(reservation) => format!("{back}{separator}booked={}", reservation.id),
        Err(error) => {
            // The error as data, already in the reader's language.
            let error = berth_app::text::language::explained_for(error, &headers, &state);
            let data = serde_json::to_string(&error).unwrap_or_else(|_| error.to_string());
            let message: String = url::form_urlencoded::byte_serialize(data.as_bytes()).collect();
            format!("{back}{separator}error={message}")
        }
    };
    axum::response::Redirect::to(&target)
}
