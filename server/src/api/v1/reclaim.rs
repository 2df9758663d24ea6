//! Idle reclaim: the holder's "I'm still using it" and the idle policies (platform admins).

use crate::api::v1::{body_error, query_error};
use axum::Json;
use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use berth_app::backend::auth::actor::Actor;
use berth_app::backend::reclaim;
use berth_app::backend::state::AppState;
use berth_app::domain::problem::Problem;
use berth_app::domain::reclaim::IdlePolicy;
use berth_app::error::AppError;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// The answer to "I'm still using it".
#[derive(Debug, Serialize)]
pub struct StillUsing {
    id: i64,
    still_using_at: DateTime<Utc>,
}

/// `POST /api/v1/reservations/{id}/still-using`: the holder of a running booking says its idle
/// GPUs are still in use; the idle policy counts from now (once per booking: 409 after).
pub async fn still_using(
    State(state): State<AppState>,
    actor: Actor,
    Path(id): Path<i64>,
) -> Result<Json<StillUsing>, AppError> {
    let at = reclaim::still_using(&state, &actor, id).await?;
    Ok(Json(StillUsing {
        id,
        still_using_at: at,
    }))
}

/// `?team=` of the policy endpoints (none: the platform's default).
#[derive(Debug, Deserialize)]
pub struct TeamQuery {
    team: Option<i64>,
}

/// A policy and whom it applies to.
#[derive(Debug, Serialize)]
pub struct PolicyAnswer {
    /// The team (none: the platform's default).
    team: Option<i64>,
    /// The team has its own policy (false: the platform's applies to it).
    own: bool,
    policy: IdlePolicy,
}

/// `GET /api/v1/admin/idle-policy[?team=ID]`: the policy that applies (platform admins).
pub async fn show(
    State(state): State<AppState>,
    actor: Actor,
    query: Result<Query<TeamQuery>, QueryRejection>,
) -> Result<Json<PolicyAnswer>, AppError> {
    let Query(query) = query.map_err(query_error)?;
    let (policy, own) = reclaim::policy(&state, &actor, query.team).await?;
    Ok(Json(PolicyAnswer {
        team: query.team,
        own: own || query.team.is_none(),
        policy,
    }))
}

/// `PUT /api/v1/admin/idle-policy[?team=ID]`: sets the platform's policy or a team's override
/// (platform admins; 422 naming the field for a bad value).
pub async fn set(
    State(state): State<AppState>,
    actor: Actor,
    query: Result<Query<TeamQuery>, QueryRejection>,
    body: Result<Json<IdlePolicy>, JsonRejection>,
) -> Result<Json<PolicyAnswer>, AppError> {
    let Query(query) = query.map_err(query_error)?;
    let Json(policy) = body.map_err(body_error)?;
    let policy = reclaim::set_policy(&state, &actor, query.team, policy).await?;
    Ok(Json(PolicyAnswer {
        team: query.team,
        own: true,
        policy,
    }))
}

/// `DELETE /api/v1/admin/idle-policy?team=ID`: removes a team's override (platform admins).
pub async fn clear(
    State(state): State<AppState>,
    actor: Actor,
    query: Result<Query<TeamQuery>, QueryRejection>,
) -> Result<StatusCode, AppError> {
    let Query(query) = query.map_err(query_error)?;
    let team = query.team.ok_or_else(|| {
        AppError::invalid(
            "team",
            Problem::Unreadable {
                detail: "the platform's policy cannot be removed; name a team (?team=ID)".into(),
            },
        )
    })?;
    reclaim::clear_team_policy(&state, &actor, team).await?;
    Ok(StatusCode::NO_CONTENT)
}
