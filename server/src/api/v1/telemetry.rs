//! GPU history in the JSON API: `GET /api/v1/gpus/{id}/telemetry?from=&to=` and
//! `GET /api/v1/gpus/{id}/events?from=&to=&limit=&cursor=` (RFC 3339 times; default: the last
//! hour of samples, the last 30 days of events, paged).

use axum::Json;
use axum::extract::{Path, Query, State};
use berth_app::backend::auth::actor::Actor;
use berth_app::backend::state::AppState;
use berth_app::backend::telemetry;
use berth_app::domain::date_range;
use berth_app::domain::problem::Problem;
use berth_app::domain::telemetry::{GpuEvent, GpuHistory};
use berth_app::error::AppError;
use chrono::{DateTime, Duration, Utc};
use serde::Deserialize;

/// `?from=&to=&limit=&cursor=`
#[derive(Debug, Deserialize)]
pub struct RangeQuery {
    from: Option<String>,
    to: Option<String>,
    limit: Option<i64>,
    cursor: Option<String>,
}

fn parse_time(field: &str, raw: Option<&str>) -> Result<Option<DateTime<Utc>>, AppError> {
    raw.map(|raw| {
        let at = DateTime::parse_from_rfc3339(raw.trim())
            .map(|t| t.with_timezone(&Utc))
            .map_err(|_| {
                AppError::invalid(
                    field,
                    Problem::NotADateTime {
                        raw: raw.to_owned(),
                    },
                )
            })?;
        date_range::check_instant(at).map_err(|err| AppError::invalid(field, err.into()))
    })
    .transpose()
}

fn range(
    query: &RangeQuery,
    default_span: Duration,
    now: DateTime<Utc>,
) -> Result<(DateTime<Utc>, DateTime<Utc>), AppError> {
    let to = parse_time("to", query.to.as_deref())?.unwrap_or(now);
    let from = parse_time("from", query.from.as_deref())?.unwrap_or(to - default_span);
    Ok((from, to))
}

/// `GET /api/v1/gpus/{id}/telemetry`: raw samples for ranges up to 6 h within the raw window,
/// one-minute rollups (min / avg / max) otherwise; at most 31 days.
pub async fn history(
    State(state): State<AppState>,
    _actor: Actor,
    Path(id): Path<i64>,
    Query(query): Query<RangeQuery>,
) -> Result<Json<GpuHistory>, AppError> {
    let now = state.now();
    let (from, to) = range(&query, Duration::hours(1), now)?;
    Ok(Json(telemetry::history(&state, id, from, to, now).await?))
}

/// `GET /api/v1/gpus/{id}/events`: newest first, a page of `limit` (default 100, up to 1000)
/// after `cursor`; the next page is in the `Link` header.
pub async fn events(
    State(state): State<AppState>,
    _actor: Actor,
    Path(id): Path<i64>,
    axum::extract::OriginalUri(uri): axum::extract::OriginalUri,
    query: Result<Query<RangeQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<(axum::http::HeaderMap, Json<Vec<GpuEvent>>), AppError> {
    let Query(query) = query.map_err(super::query_error)?;
    let (from, to) = range(&query, Duration::days(30), state.now())?;
    let page = berth_app::backend::input::page(
        berth_app::domain::paging::ListKind::GpuEvents,
        query.limit,
        query.cursor.as_deref(),
    )?;
    Ok(super::paged(
        &uri,
        telemetry::events(&state, id, from, to, &page).await?,
    ))
}
