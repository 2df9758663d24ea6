//! Teams in the JSON API and the team pages' plain forms: members and invitations (team
//! admins), teams (platform admins), and the audit log. The rules live in
//! `berth_app::backend::teams`; these handlers only read requests and write answers.

use axum::Json;
use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use berth_app::backend::auth::actor::Actor;
use berth_app::backend::state::AppState;
use berth_app::backend::teams;
use berth_app::domain::audit::{AuditEntry, AuditFilter};
use berth_app::domain::paging::{Cursor, ListKind, Page, PageRequest};
use berth_app::domain::problem::Problem;
use berth_app::domain::team::{Invitation, TeamAccess, TeamRoster, TeamSummary};
use berth_app::error::AppError;
use serde::{Deserialize, Serialize};

use crate::api::v1::{body_error, query_error};

/// `GET /api/v1/teams`: a page of the caller's teams (platform admins: every team), oldest
/// first; the next page is in the `Link` header.
pub async fn list(
    State(state): State<AppState>,
    actor: Actor,
    axum::extract::OriginalUri(uri): axum::extract::OriginalUri,
    query: Result<Query<super::PageQuery>, QueryRejection>,
) -> Result<(axum::http::HeaderMap, Json<Vec<TeamSummary>>), AppError> {
    let Query(query) = query.map_err(query_error)?;
    let page = query.page(ListKind::Teams)?;
    Ok(super::paged(
        &uri,
        teams::list(&state, &actor, &page).await?,
    ))
}

/// A team with what the caller may do with it.
#[derive(Debug, Serialize)]
pub struct ApiTeam {
    #[serde(flatten)]
    roster: TeamRoster,
    /// The team wallet, its budget and this month's bookings.
    money: ApiTeamMoney,
    /// `view` (a member) or `manage` (a team admin or a platform admin).
    access: TeamAccess,
}

/// `GET /api/v1/teams/{id}`: members (and, for those who manage it, open invitations). 404 for
/// teams the caller does not belong to.
pub async fn show(
    State(state): State<AppState>,
    actor: Actor,
    Path(team_id): Path<i64>,
) -> Result<Json<ApiTeam>, AppError> {
    let (roster, access) = teams::roster(&state, &actor, team_id).await?;
    let money = teams::money(&state, team_id, state.now()).await?;
    Ok(Json(ApiTeam {
        roster,
        money: ApiTeamMoney {
            balance_minor: money.balance.minor(),
            on_hold_minor: money.on_hold.minor(),
            held_minor: money.on_hold.minor(),
            available_minor: money.balance.minor() - money.on_hold.minor(),
            budget_minor: money.budget.limit.map(|limit| limit.minor()),
            budget_mode: money.budget.mode.as_str(),
            budget_warn_percent: money.budget.warn_percent,
            month_start: money
                .month
                .to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            month_spent_minor: money.month_spent.minor(),
            payments_due: money.payments_due,
        },
        access,
    }))
}

/// A team's money in the API.
#[derive(Debug, Serialize)]
pub struct ApiTeamMoney {
    balance_minor: i64,
    on_hold_minor: i64,
    /// The same as `on_hold_minor`: what the team's unpaid bookings hold of its wallet.
    held_minor: i64,
    /// What a team booking may spend: `balance_minor - held_minor`.
    available_minor: i64,
    /// None: no budget.
    budget_minor: Option<i64>,
    budget_mode: &'static str,
    budget_warn_percent: u8,
    /// The current month (UTC) that `month_spent_minor` covers.
    month_start: String,
    /// What the team's bookings starting this month cost.
    month_spent_minor: i64,
    /// Team bookings waiting for credits (released shortly before their start if none arrive).
    payments_due: u32,
}

/// `{"budget_minor": 100000 | null, "mode": "refuse" | "warn", "warn_percent": 80}`.
#[derive(Debug, Deserialize)]
pub struct BudgetBody {
    budget_minor: Option<serde_json::Value>,
    #[serde(default = "default_mode")]
    mode: String,
    /// Absent: the default ([`berth_app::domain::team::DEFAULT_WARN_PERCENT`]).
    #[serde(default)]
    warn_percent: Option<i64>,
}

fn default_mode() -> String {
    "refuse".into()
}

/// `PUT /api/v1/teams/{id}/budget` (team admins): sets the monthly budget; 200 with it.
pub async fn set_budget(
    State(state): State<AppState>,
    actor: Actor,
    Path(team_id): Path<i64>,
    body: Result<Json<BudgetBody>, JsonRejection>,
) -> Result<Json<berth_app::domain::team::Budget>, AppError> {
    teams::require_manage(&state.db, &actor, team_id).await?;
    let Json(body) = body.map_err(body_error)?;
    let limit = match body.budget_minor {
        None | Some(serde_json::Value::Null) => None,
        Some(raw) => Some(raw.as_i64().ok_or_else(|| {
            AppError::invalid(
                "budget_minor",
                Problem::NotMinorUnits {
                    raw: raw.to_string(),
                },
            )
        })?),
    };
    Ok(Json(
        teams::set_budget(
            &state,
            &actor,
            team_id,
            limit,
            &body.mode,
            body.warn_percent,
            state.now(),
        )
        .await?,
    ))
}

/// `{"email", "role"}` (`role` defaults to `member`).
#[derive(Debug, Deserialize)]
pub struct InviteBody {
    email: String,
    #[serde(default)]
    role: Option<String>,
}

/// `POST /api/v1/teams/{id}/invitations` (team admins): 201 with the invitation; 409 when the
/// address is a member or invited already.
pub async fn invite(
    State(state): State<AppState>,
    actor: Actor,
    Path(team_id): Path<i64>,
    body: Result<Json<InviteBody>, JsonRejection>,
) -> Result<(StatusCode, Json<Invitation>), AppError> {
    teams::require_manage(&state.db, &actor, team_id).await?;
    let Json(body) = body.map_err(body_error)?;
    let invitation = teams::invite(
        &state,
        &actor,
        team_id,
        &body.email,
        body.role.as_deref().unwrap_or("member"),
        state.now(),
    )
    .await?;
    Ok((StatusCode::CREATED, Json(invitation)))
}

/// `DELETE /api/v1/teams/{id}/invitations/{invitation}` (team admins): 204.
pub async fn revoke(
    State(state): State<AppState>,
    actor: Actor,
    Path((team_id, invitation_id)): Path<(i64, i64)>,
) -> Result<StatusCode, AppError> {
    teams::revoke_invitation(&state, &actor, team_id, invitation_id, state.now()).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `{"role"}`.
#[derive(Debug, Deserialize)]
pub struct RoleBody {
    role: String,
}

/// `PATCH /api/v1/teams/{id}/members/{user}` with `{"role": "member" | "admin"}` (team
/// admins): 204; 409 when it would leave the team without an admin.
pub async fn set_role(
    State(state): State<AppState>,
    actor: Actor,
    Path((team_id, user_id)): Path<(i64, i64)>,
    body: Result<Json<RoleBody>, JsonRejection>,
) -> Result<StatusCode, AppError> {
    teams::require_manage(&state.db, &actor, team_id).await?;
    let Json(body) = body.map_err(body_error)?;
    let role = teams::parse_role(&body.role)?;
    teams::change_member(&state, &actor, team_id, user_id, Some(role), state.now()).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `DELETE /api/v1/teams/{id}/members/{user}` (team admins; members may remove themselves):
/// 204; 409 for the last admin.
pub async fn remove(
    State(state): State<AppState>,
    actor: Actor,
    Path((team_id, user_id)): Path<(i64, i64)>,
) -> Result<StatusCode, AppError> {
    teams::change_member(&state, &actor, team_id, user_id, None, state.now()).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `{"name", "admin_email"}`.
#[derive(Debug, Deserialize)]
pub struct CreateBody {
    name: String,
    admin_email: String,
}

/// A team just created.
#[derive(Debug, Serialize)]
pub struct Created {
    id: i64,
    invitation: Invitation,
}

/// `POST /api/v1/admin/teams` (platform admins): creates a team and invites its first admin.
/// 201; 409 when the name is taken.
pub async fn create(
    State(state): State<AppState>,
    actor: Actor,
    body: Result<Json<CreateBody>, JsonRejection>,
) -> Result<(StatusCode, Json<Created>), AppError> {
    actor.require_platform_admin()?;
    let Json(body) = body.map_err(body_error)?;
    let (id, invitation) =
        teams::create(&state, &actor, &body.name, &body.admin_email, state.now()).await?;
    Ok((StatusCode::CREATED, Json(Created { id, invitation })))
}

/// `?action=&team_id=&limit=&cursor=` (`before_id=` still pages back by id).
#[derive(Debug, Deserialize)]
pub struct AuditQuery {
    #[serde(default)]
    action: Option<String>,
    #[serde(default)]
    team_id: Option<i64>,
    #[serde(default)]
    before_id: Option<i64>,
    #[serde(default)]
    limit: Option<i64>,
    #[serde(default)]
    cursor: Option<String>,
}

/// The filter a query asks for, reading one more entry than the page to know if more follow.
fn audit_filter(query: AuditQuery) -> Result<(AuditFilter, PageRequest), AppError> {
    let action = teams::parse_audit_action(query.action.as_deref())?;
    let page =
        berth_app::backend::input::page(ListKind::Audit, query.limit, query.cursor.as_deref())?;
    Ok((
        AuditFilter {
            action,
            team_id: query.team_id,
            before_id: page.after.map(|cursor| cursor.id).or(query.before_id),
            limit: Some(page.fetch()),
        },
        page,
    ))
}

/// A page of the log (all of it, or team `team_id`'s) as the API answers it. A problem with the
/// query is answered only once the actor is known to be allowed.
async fn audit_answer(
    state: &AppState,
    actor: &Actor,
    team_id: Option<i64>,
    uri: &axum::http::Uri,
    query: Result<Query<AuditQuery>, QueryRejection>,
) -> Result<(axum::http::HeaderMap, Json<Vec<AuditEntry>>), AppError> {
    let parsed = query
        .map_err(query_error)
        .and_then(|Query(query)| audit_filter(query));
    let page = parsed
        .as_ref()
        .map_or_else(|_| PageRequest::first(), |(_, page)| *page);
    let entries = teams::audit_log(state, actor, team_id, parsed.map(|(filter, _)| filter)).await?;
    Ok(super::paged(
        uri,
        Page::from_rows(entries, &page, ListKind::Audit, |entry| {
            Cursor::id(entry.id)
        }),
    ))
}

/// `GET /api/v1/admin/audit` (platform admins): the audit log, newest first, a page of
/// `limit` (default 100) after `cursor`; the next page is in the `Link` header.
pub async fn audit(
    State(state): State<AppState>,
    actor: Actor,
    axum::extract::OriginalUri(uri): axum::extract::OriginalUri,
    query: Result<Query<AuditQuery>, QueryRejection>,
) -> Result<(axum::http::HeaderMap, Json<Vec<AuditEntry>>), AppError> {
    audit_answer(&state, &actor, None, &uri, query).await
}

/// `GET /api/v1/teams/{id}/audit` (team admins): the team's part of the audit log.
pub async fn team_audit(
    State(state): State<AppState>,
    actor: Actor,
    Path(team_id): Path<i64>,
    axum::extract::OriginalUri(uri): axum::extract::OriginalUri,
    query: Result<Query<AuditQuery>, QueryRejection>,
) -> Result<(axum::http::HeaderMap, Json<Vec<AuditEntry>>), AppError> {
    audit_answer(&state, &actor, Some(team_id), &uri, query).await
}
