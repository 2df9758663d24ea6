//! Teams and their members.

use crate::domain::team::{TeamMembership, TeamName, TeamRole};
use crate::server::entity::{team, team_member};
use chrono::{DateTime, Utc};
use sea_orm::sea_query::OnConflict;
use sea_orm::{
    ActiveValue::Set, ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, QueryOrder,
};

/// The id of the team with this name, creating the team if there is none.
#[tracing::instrument(skip_all, fields(team.name = %name.as_str()))]
pub async fn ensure_team(
    db: &impl ConnectionTrait,
    name: &TeamName,
    now: DateTime<Utc>,
) -> Result<i64, DbErr> {
    team::Entity::insert(team::ActiveModel {
        name: Set(name.as_str().to_owned()),
        created_at: Set(now),
        ..Default::default()
    })
    .on_conflict(
        OnConflict::column(team::Column::Name)
            .do_nothing()
            .to_owned(),
    )
    .exec_without_returning(db)
    .await?;
    team::Entity::find()
        .filter(team::Column::Name.eq(name.as_str()))
        .one(db)
        .await?
        .map(|row| row.id)
        .ok_or_else(|| DbErr::RecordNotFound(format!("team {}", name.as_str())))
}

/// Makes the user a member of the team with `role` (changing the role if already a member).
#[tracing::instrument(skip_all, fields(team.id = team_id, user.id = user_id))]
pub async fn set_member(
    db: &impl ConnectionTrait,
    team_id: i64,
    user_id: i64,
    role: TeamRole,
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    team_member::Entity::insert(team_member::ActiveModel {
        team_id: Set(team_id),
        user_id: Set(user_id),
        role: Set(role.as_str().to_owned()),
        created_at: Set(now),
    })
    .on_conflict(
        OnConflict::columns([team_member::Column::TeamId, team_member::Column::UserId])
            .update_column(team_member::Column::Role)
            .to_owned(),
    )
    .exec_without_returning(db)
    .await?;
    Ok(())
}

/// The teams the user belongs to, by name.
pub async fn memberships_of(
    db: &impl ConnectionTrait,
    user_id: i64,
) -> Result<Vec<TeamMembership>, DbErr> {
    team_member::Entity::find()
        .filter(team_member::Column::UserId.eq(user_id))
        .find_also_related(team::Entity)
        .order_by_asc(team::Column::Name)
        .all(db)
        .await?
        .into_iter()
        .filter_map(|(member, team)| team.map(|team| (member, team)))
        .map(|(member, team)| {
            let role = TeamRole::parse(&member.role).ok_or_else(|| {
                DbErr::Custom(format!(
                    "team_members({}, {}): unknown role {}",
                    member.team_id, member.user_id, member.role
                ))
            })?;
            Ok(TeamMembership {
                team_id: team.id,
                team_name: team.name,
                role,
            })
        })
        .collect()
}
