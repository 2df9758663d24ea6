//! Who may see and change a team: the one check every team operation (teams, quotas, rules,
//! approvals, team bookings and reports) starts from, and the locked transaction in which a
//! change checks it again.

use crate::backend::auth::actor::Actor;
use crate::backend::db;
use crate::domain::team::TeamAccess;
use crate::domain::user::PlatformRole;
use crate::error::AppError;
use sea_orm::{ConnectionTrait, DatabaseConnection};

/// What the actor may do with `team_id`: `NotFound` when they may not even see it (a team's
/// existence is not revealed to outsiders).
pub async fn access(
    db: &impl ConnectionTrait,
    actor: &Actor,
    team_id: i64,
) -> Result<TeamAccess, AppError> {
    let memberships = db::teams::memberships_of(db, actor.user.id).await?;
    let access = TeamAccess::of(actor.user.role, &memberships, team_id)
        .ok_or_else(|| AppError::NotFound(format!("team {team_id}")))?;
    if actor.user.role == PlatformRole::PlatformAdmin
        && db::teams::team_name(db, team_id).await?.is_none()
    {
        return Err(AppError::NotFound(format!("team {team_id}")));
    }
    Ok(access)
}

/// Succeeds when the actor manages `team_id`; `Forbidden` for its plain members.
pub async fn require_manage(
    db: &impl ConnectionTrait,
    actor: &Actor,
    team_id: i64,
) -> Result<(), AppError> {
    match access(db, actor, team_id).await? {
        TeamAccess::Manage => Ok(()),
        TeamAccess::View => Err(AppError::Forbidden),
    }
}

/// A write transaction holding the team's lock, in which the actor's right to change the team
/// is checked again: a request that passed the first check while another one removed its
/// sender changes nothing.
pub(crate) async fn locked(
    db: &DatabaseConnection,
    actor: &Actor,
    team_id: i64,
    manage: bool,
) -> Result<sea_orm::DatabaseTransaction, AppError> {
    let txn = db::begin_write(db).await?;
    db::teams::lock_team(&txn, team_id)
        .await?
        .ok_or_else(|| AppError::NotFound(format!("team {team_id}")))?;
    if manage {
        require_manage(&txn, actor, team_id).await?;
    } else {
        access(&txn, actor, team_id).await?;
    }
    Ok(txn)
}
