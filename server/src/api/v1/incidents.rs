//! Incidents: open one on a booking or a GPU, read it with its evidence and diagnosis (also as a
//! JSON export for machines and a single HTML file for people), move it through its workflow,
//! reply.

use crate::api::v1::{body_error, query_error};
use axum::Json;
use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use berth_app::backend::auth::actor::Actor;
use berth_app::backend::incidents::{self, OpenRequest, StepRequest};
use berth_app::backend::state::AppState;
use berth_app::domain::evidence::{EvidenceReport, IncidentView, MessageView};
use berth_app::error::AppError;
use chrono::{DateTime, Utc};
use serde::Deserialize;

/// `?reservation=` / `?gpu=` of the list, and its page (`limit`, `cursor`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListQuery {
    reservation: Option<i64>,
    gpu: Option<i64>,
    limit: Option<i64>,
    cursor: Option<String>,
}

/// `GET /api/v1/incidents[?reservation=ID|gpu=ID][&limit=N&cursor=C]`: a page of the incidents
/// the caller may see, newest first (platform admins: every one); the next page in `Link` and
/// `X-Next-Cursor`.
pub async fn list(
    State(state): State<AppState>,
    actor: Actor,
    axum::extract::OriginalUri(uri): axum::extract::OriginalUri,
    query: Result<Query<ListQuery>, QueryRejection>,
) -> Result<(axum::http::HeaderMap, Json<Vec<IncidentView>>), AppError> {
    let Query(query) = query.map_err(query_error)?;
    let page = berth_app::backend::input::page(
        berth_app::domain::paging::ListKind::Incidents,
        query.limit,
        query.cursor.as_deref(),
    )?;
    Ok(super::paged(
        &uri,
        incidents::list(&state, &actor, query.reservation, query.gpu, &page).await?,
    ))
}

/// What opening an incident takes.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpenBody {
    reservation_id: Option<i64>,
    gpu_id: Option<i64>,
    #[serde(default)]
    report: String,
    from: Option<DateTime<Utc>>,
    to: Option<DateTime<Utc>>,
}

/// `POST /api/v1/incidents`: 201 with the incident, its evidence and diagnosis; 404 for a
/// booking that is not the caller's; 422 naming the field for bad input.
pub async fn open(
    State(state): State<AppState>,
    actor: Actor,
    body: Result<Json<OpenBody>, JsonRejection>,
) -> Result<(StatusCode, Json<EvidenceReport>), AppError> {
    let Json(body) = body.map_err(body_error)?;
    let id = incidents::open(
        &state,
        &actor,
        OpenRequest {
            reservation_id: body.reservation_id,
            gpu_id: body.gpu_id,
            report: body.report,
            from: body.from,
            to: body.to,
        },
    )
    .await?;
    let report = incidents::report(&state, &actor, id).await?;
    Ok((StatusCode::CREATED, Json(report)))
}

/// `GET /api/v1/incidents/{id}`: the incident with its messages, evidence, diagnosis and SLA
/// reading (the JSON export; `docs/incident-evidence.schema.json` describes it). Anyone but
/// its holder, its opener and platform admins: 404.
pub async fn show(
    State(state): State<AppState>,
    actor: Actor,
    Path(id): Path<i64>,
) -> Result<Json<EvidenceReport>, AppError> {
    Ok(Json(incidents::report(&state, &actor, id).await?))
}

/// `GET /api/v1/incidents/{id}/export.json`: the same, as a file to download.
pub async fn export_json(
    State(state): State<AppState>,
    actor: Actor,
    Path(id): Path<i64>,
) -> Result<impl IntoResponse, AppError> {
    let report = incidents::report(&state, &actor, id).await?;
    let body = serde_json::to_vec_pretty(&report).map_err(AppError::internal)?;
    Ok((
        [
            (header::CONTENT_TYPE, "application/json".to_owned()),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"berth-incident-{id}.json\""),
            ),
        ],
        body,
    ))
}

/// `GET /incidents/{id}/export.html`: the incident as one self-contained HTML file (styles
/// inlined, charts as SVG, no script), in the reader's language and time zone, to download.
pub async fn export_html(
    State(state): State<AppState>,
    actor: Actor,
    Path(id): Path<i64>,
    request: axum::extract::Request,
) -> Result<impl IntoResponse, AppError> {
    let report = incidents::report(&state, &actor, id).await?;
    let (parts, _) = request.into_parts();
    let zone_name = actor
        .user
        .time_zone
        .clone()
        .or_else(|| berth_app::backend::viewer::zone_from_headers(&parts.headers));
    let from = report.incident.from - chrono::TimeDelta::hours(2);
    let to = report.incident.to.max(state.now()) + chrono::TimeDelta::hours(1);
    let zone = berth_app::backend::viewer::zone_named(zone_name.as_deref(), from, to);
    let page = berth_app::api::incidents::IncidentPage {
        admin: false,
        reporter: false,
        currency: state.portal.currency.clone(),
        zone,
        report,
    };
    let options = &state.leptos_options;
    let css_path = std::path::Path::new(options.site_root.as_ref())
        .join(options.site_pkg_dir.as_ref())
        .join(format!("{}.css", options.output_name));
    let css = tokio::fs::read_to_string(&css_path)
        .await
        .unwrap_or_default();
    let html = berth_app::pages::incident::export_html(page, &css, parts);
    Ok((
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8".to_owned()),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"berth-incident-{id}.html\""),
            ),
        ],
        html,
    ))
}

/// A step.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepBody {
    step: String,
    cause: Option<String>,
    #[serde(default)]
    note: String,
}

/// `POST /api/v1/incidents/{id}/steps`: `acknowledge`, `diagnose`, `resolve`, `reject`
/// (platform admins; the last three need a `cause` from the diagnosis or a `note` stating one)
/// or `reopen` (its reporter, once, with a `note` giving the new evidence). 403 for a step the
/// caller may not take, 409 for one its state does not allow.
pub async fn step(
    State(state): State<AppState>,
    actor: Actor,
    Path(id): Path<i64>,
    body: Result<Json<StepBody>, JsonRejection>,
) -> Result<Json<IncidentView>, AppError> {
    let Json(body) = body.map_err(body_error)?;
    let view = incidents::take_step(
        &state,
        &actor,
        id,
        StepRequest {
            step: body.step,
            cause: body.cause,
            note: body.note,
        },
    )
    .await?;
    Ok(Json(view))
}

/// A reply.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplyBody {
    body: String,
}

/// `POST /api/v1/incidents/{id}/replies`: 201 with the reply.
pub async fn reply(
    State(state): State<AppState>,
    actor: Actor,
    Path(id): Path<i64>,
    body: Result<Json<ReplyBody>, JsonRejection>,
) -> Result<(StatusCode, Json<MessageView>), AppError> {
    let Json(body) = body.map_err(body_error)?;
    let message = incidents::reply(&state, &actor, id, &body.body).await?;
    Ok((StatusCode::CREATED, Json(message)))
}
