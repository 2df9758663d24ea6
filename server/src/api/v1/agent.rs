//! What node agents call, with `Authorization: Bearer <node token>`: register the host's GPUs
//! and report samples and events. A token reports only for its own node's GPUs (403 otherwise);
//! a report is stored whole or not at all.

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{FromRequestParts, State};
use axum::http::StatusCode;
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use berth_app::backend::auth::actor::bearer_token;
use berth_app::backend::state::AppState;
use berth_app::backend::telemetry::{self, ReportOutcome};
use berth_app::domain::telemetry::{Registration, Report};
use berth_app::error::AppError;
use serde::Serialize;

/// Largest request body an agent may send (a full report is about 1.5 MB).
pub const MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

/// An agent request's failure: the service's error, or a body over [`MAX_BODY_BYTES`] (413).
#[derive(Debug)]
pub enum AgentRejection {
    /// Refused by the service (401, 403, 422, …).
    App(AppError),
    /// The body is too large.
    TooLarge,
}

impl From<AppError> for AgentRejection {
    fn from(err: AppError) -> Self {
        Self::App(err)
    }
}

impl From<JsonRejection> for AgentRejection {
    fn from(rejection: JsonRejection) -> Self {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            Self::TooLarge
        } else {
            Self::App(crate::api::v1::body_error(rejection))
        }
    }
}

impl IntoResponse for AgentRejection {
    fn into_response(self) -> Response {
        match self {
            Self::App(err) => err.into_response(),
            Self::TooLarge => (
                StatusCode::PAYLOAD_TOO_LARGE,
                Json(serde_json::json!({
                    "error": "too_large",
                    "message": format!("the body may be at most {MAX_BODY_BYTES} bytes; send fewer samples per report"),
                })),
            )
                .into_response(),
        }
    }
}

/// The node whose token authenticated the request.
#[derive(Debug, Clone, Copy)]
pub struct NodeCaller(pub i64);

impl FromRequestParts<AppState> for NodeCaller {
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, AppError> {
        let node = telemetry::authenticate_node(state, bearer_token(parts)).await?;
        tracing::Span::current().record("node.id", node);
        Ok(Self(node))
    }
}

/// What a registration changed.
#[derive(Debug, Serialize)]
pub struct Registered {
    node_id: i64,
    added: usize,
    vanished: usize,
    returned: usize,
    /// Of those added, the GPUs waiting for a platform admin's acceptance.
    pending: usize,
}

/// `POST /api/v1/agent/register` with a [`Registration`].
#[tracing::instrument(skip_all, fields(node.id))]
pub async fn register(
    State(state): State<AppState>,
    NodeCaller(node_id): NodeCaller,
    body: Result<Json<Registration>, JsonRejection>,
) -> Result<Json<Registered>, AgentRejection> {
    let Json(registration) = body?;
    let outcome = telemetry::register(
        &state.db,
        &state.portal.telemetry,
        node_id,
        &registration,
        state.now(),
    )
    .await?;
    if outcome.added > 0 || outcome.returned > 0 {
        // New GPUs may answer someone's watch.
        state.freed.poke();
    }
    Ok(Json(Registered {
        node_id,
        added: outcome.added,
        vanished: outcome.vanished,
        returned: outcome.returned,
        pending: outcome.pending,
    }))
}

/// `POST /api/v1/agent/report` with a [`Report`].
#[tracing::instrument(skip_all, fields(node.id))]
pub async fn report(
    State(state): State<AppState>,
    NodeCaller(node_id): NodeCaller,
    body: Result<Json<Report>, JsonRejection>,
) -> Result<Json<ReportOutcome>, AgentRejection> {
    let Json(report) = body?;
    let outcome = telemetry::report(
        &state.db,
        &state.portal.telemetry,
        node_id,
        &report,
        state.now(),
    )
    .await?;
    state.metrics.samples_ingested(outcome.samples);
    Ok(Json(outcome))
}

/// `?after=<version>&wait=<seconds>` of `GET /api/v1/agent/leases`.
#[derive(Debug, serde::Deserialize)]
pub struct LeasesQuery {
    after: Option<String>,
    wait: Option<u64>,
}

/// `GET /api/v1/agent/leases?after=&wait=`: the node's schedule (leases of the next 24 hours,
/// admins' keys, intruder policy). With `after` (the version the agent holds) the answer waits
/// up to `wait` seconds (at most 30) for a change: a long poll.
#[tracing::instrument(skip_all, fields(node.id))]
pub async fn leases(
    State(state): State<AppState>,
    NodeCaller(node_id): NodeCaller,
    query: Result<axum::extract::Query<LeasesQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<berth_app::domain::lease::NodeSchedule>, AppError> {
    use berth_app::backend::node_access;
    use berth_app::domain::problem::Problem;
    let axum::extract::Query(query) = query.map_err(super::query_error)?;
    let max = node_access::MAX_WAIT.as_secs();
    let wait = query.wait.unwrap_or(0);
    if wait > max {
        return Err(AppError::invalid(
            "wait",
            Problem::OutOfRange {
                min: 0,
                max: i64::try_from(max).unwrap_or(30),
            },
        ));
    }
    let after = query.after.as_deref().filter(|a| a.len() <= 64);
    Ok(Json(
        node_access::wait_for_change(&state, node_id, after, std::time::Duration::from_secs(wait))
            .await?,
    ))
}
