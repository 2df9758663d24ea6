//! Team quotas, booking rules and approvals in the JSON API. The rules live in
//! `berth_app::backend::quotas`; these handlers only read requests and write answers.

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use berth_app::backend::auth::actor::Actor;
use berth_app::backend::quotas::{self, PolicyForm};
use berth_app::backend::state::AppState;
use berth_app::backend::teams;
use berth_app::domain::problem::Problem;
use berth_app::domain::quota::TeamRules;
use berth_app::domain::quota::{Quota, TeamPolicy};
use berth_app::domain::reservation::Reservation;
use berth_app::domain::team::TeamAccess;
use berth_app::error::AppError;
use serde::Deserialize;

use crate::api::v1::body_error;

/// `GET /api/v1/teams/{id}/rules`: booking rules, this week's use against the quotas per model
/// and, for those who manage the team, bookings waiting for approval and idle bookings.
pub async fn show(
    State(state): State<AppState>,
    actor: Actor,
    Path(team_id): Path<i64>,
) -> Result<Json<TeamRules>, AppError> {
    let access = teams::access(&state.db, &actor, team_id).await?;
    let mut rules = quotas::rules(&state, team_id, state.now()).await?;
    if access == TeamAccess::View {
        rules.pending.clear();
        rules.idle.clear();
    }
    Ok(Json(rules))
}

/// `{"guaranteed_gpus": 4, "weekly_gpu_hours": 200 | null}`.
#[derive(Debug, Deserialize)]
pub struct QuotaBody {
    guaranteed_gpus: serde_json::Value,
    #[serde(default)]
    weekly_gpu_hours: Option<serde_json::Value>,
}

fn whole_number(field: &str, raw: &serde_json::Value) -> Result<i64, AppError> {
    raw.as_i64().ok_or_else(|| {
        AppError::invalid(
            field,
            Problem::Unreadable {
                detail: format!("{field} must be a whole number, not {raw}"),
            },
        )
    })
}

/// `PUT /api/v1/teams/{id}/quotas/{model}` (platform admins; a team admin gets 403): sets the
/// team's quota for a GPU model; 200 with it.
pub async fn set_quota(
    State(state): State<AppState>,
    actor: Actor,
    Path((team_id, model)): Path<(i64, String)>,
    body: Result<Json<QuotaBody>, JsonRejection>,
) -> Result<Json<Option<Quota>>, AppError> {
    teams::require_manage(&state.db, &actor, team_id).await?;
    actor.require_platform_admin()?;
    let Json(body) = body.map_err(body_error)?;
    let guaranteed = whole_number("guaranteed_gpus", &body.guaranteed_gpus)?;
    let weekly = match &body.weekly_gpu_hours {
        None | Some(serde_json::Value::Null) => None,
        Some(raw) => Some(whole_number("weekly_gpu_hours", raw)?),
    };
    Ok(Json(
        quotas::set_quota(
            &state,
            &actor,
            team_id,
            &model,
            Some(guaranteed),
            weekly,
            state.now(),
        )
        .await?,
    ))
}

/// `DELETE /api/v1/teams/{id}/quotas/{model}` (platform admins; a team admin gets 403): no quota
/// for the model any more; 204.
pub async fn remove_quota(
    State(state): State<AppState>,
    actor: Actor,
    Path((team_id, model)): Path<(i64, String)>,
) -> Result<axum::http::StatusCode, AppError> {
    quotas::set_quota(&state, &actor, team_id, &model, None, None, state.now()).await?;
    Ok(axum::http::StatusCode::NO_CONTENT)
}

/// `PUT /api/v1/teams/{id}/rules` (team admins, platform admins): `{"allow_burst",
/// "default_priority", "approval_over_gpu_hours", "approval_expiry_hours"}`; 200 with them.
pub async fn set_rules(
    State(state): State<AppState>,
    actor: Actor,
    Path(team_id): Path<i64>,
    body: Result<Json<PolicyForm>, JsonRejection>,
) -> Result<Json<TeamPolicy>, AppError> {
    teams::require_manage(&state.db, &actor, team_id).await?;
    let Json(body) = body.map_err(body_error)?;
    Ok(Json(
        quotas::set_policy(&state, &actor, team_id, &body, state.now()).await?,
    ))
}

/// `{"decision": "approve" | "reject"}`.
#[derive(Debug, Deserialize)]
pub struct DecisionBody {
    decision: String,
}

/// Reads `approve` or `reject`.
pub fn parse_decision(raw: &str) -> Result<bool, AppError> {
    match raw.trim() {
        "approve" => Ok(true),
        "reject" => Ok(false),
        other => Err(AppError::invalid(
            "decision",
            Problem::Unreadable {
                detail: format!("`{other}`: use approve or reject"),
            },
        )),
    }
}

/// `POST /api/v1/teams/{id}/approvals/{reservation}` (team admins, platform admins): approves
/// (charged per the payment rules) or rejects (slots freed) a booking waiting for approval; 200
/// with the booking.
pub async fn decide(
    State(state): State<AppState>,
    actor: Actor,
    Path((team_id, id)): Path<(i64, i64)>,
    body: Result<Json<DecisionBody>, JsonRejection>,
) -> Result<Json<Reservation>, AppError> {
    teams::require_manage(&state.db, &actor, team_id).await?;
    let Json(body) = body.map_err(body_error)?;
    let approve = parse_decision(&body.decision)?;
    Ok(Json(
        quotas::decide(&state, &actor, team_id, id, approve, state.now()).await?,
    ))
}
