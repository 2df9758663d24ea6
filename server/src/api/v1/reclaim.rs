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

/// A policy as sent: fields left out take the default's values.
#[derive(Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PolicyBody {
    threshold_percent: u8,
    window_minutes: u32,
    warnings: Vec<u32>,
    action: berth_app::domain::reclaim::IdleAction,
    exempt_max_gpus: u32,
    exempt_max_hours: u32,
    exempt_priorities: Vec<berth_app::domain::quota::Priority>,
    refund_percent: u8,
}

impl Default for PolicyBody {
    fn default() -> Self {
        let p = IdlePolicy::default();
        Self {
            threshold_percent: p.threshold_percent,
            window_minutes: p.window_minutes,
            warnings: p.warnings,
            action: p.action,
            exempt_max_gpus: p.exempt_max_gpus,
            exempt_max_hours: p.exempt_max_hours,
            exempt_priorities: p.exempt_priorities,
            refund_percent: p.refund_percent,
        }
    }
}

/// `PUT /api/v1/admin/idle-policy[?team=ID]`: sets the platform's policy or a team's override
/// (platform admins; 422 naming the field for a bad value).
pub async fn set(
    State(state): State<AppState>,
    actor: Actor,
    query: Result<Query<TeamQuery>, QueryRejection>,
    body: Result<Json<PolicyBody>, JsonRejection>,
) -> Result<Json<PolicyAnswer>, AppError> {
    let Query(query) = query.map_err(query_error)?;
    let Json(body) = body.map_err(body_error)?;
    let policy = IdlePolicy {
        threshold_percent: body.threshold_percent,
        window_minutes: body.window_minutes,
        warnings: body.warnings,
        action: body.action,
        exempt_max_gpus: body.exempt_max_gpus,
        exempt_max_hours: body.exempt_max_hours,
        exempt_priorities: body.exempt_priorities,
        refund_percent: body.refund_percent,
    };
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
