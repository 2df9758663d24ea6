//! Environment profiles, their versions, users' defaults, and what agents said about preparing
//! bookings' environments.

use crate::backend::entity::{
    env_preparation, env_profile, env_profile_version, reservation, team, team_member, user,
};
use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Expr, OnConflict};
use sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ColumnTrait, Condition, ConnectionTrait, DbBackend, DbErr,
    EntityTrait, QueryFilter, QueryOrder, QuerySelect,
};

/// Profiles not archived that `user_id` owns or that are shared with one of `teams`, by name.
pub async fn visible_to(
    db: &impl ConnectionTrait,
    user_id: i64,
    teams: &[i64],
) -> Result<Vec<env_profile::Model>, DbErr> {
    let mut who = Condition::any().add(env_profile::Column::OwnerId.eq(user_id));
    if !teams.is_empty() {
        who = who.add(env_profile::Column::TeamId.is_in(teams.iter().copied()));
    }
    env_profile::Entity::find()
        .filter(who)
        .filter(env_profile::Column::Archived.eq(false))
        .order_by_asc(env_profile::Column::Name)
        .order_by_asc(env_profile::Column::Id)
        .all(db)
        .await
}

/// Profile `id` (archived or not).
pub async fn profile(
    db: &impl ConnectionTrait,
    id: i64,
) -> Result<Option<env_profile::Model>, DbErr> {
    env_profile::Entity::find_by_id(id).one(db).await
}

/// Locks profile `id`'s row until `txn` ends (PostgreSQL; SQLite's write transaction already
/// holds the lock), so two edits number their versions one after the other.
pub async fn lock_profile(
    txn: &impl ConnectionTrait,
    id: i64,
) -> Result<Option<env_profile::Model>, DbErr> {
    let mut query = env_profile::Entity::find_by_id(id);
    if txn.get_database_backend() == DbBackend::Postgres {
        query = query.lock(sea_orm::sea_query::LockType::NoKeyUpdate);
    }
    query.one(txn).await
}

/// The latest version of each of `profiles`.
pub async fn latest_versions(
    db: &impl ConnectionTrait,
    profiles: &[i64],
) -> Result<Vec<env_profile_version::Model>, DbErr> {
    if profiles.is_empty() {
        return Ok(Vec::new());
    }
    let rows = env_profile_version::Entity::find()
        .filter(env_profile_version::Column::ProfileId.is_in(profiles.iter().copied()))
        .order_by_asc(env_profile_version::Column::ProfileId)
        .order_by_desc(env_profile_version::Column::Number)
        .all(db)
        .await?;
    let mut latest: Vec<env_profile_version::Model> = Vec::new();
    for row in rows {
        if latest.last().map(|l| l.profile_id) != Some(row.profile_id) {
            latest.push(row);
        }
    }
    Ok(latest)
}

/// Profile `profile_id`'s versions, newest first.
pub async fn versions(
    db: &impl ConnectionTrait,
    profile_id: i64,
) -> Result<Vec<env_profile_version::Model>, DbErr> {
    env_profile_version::Entity::find()
        .filter(env_profile_version::Column::ProfileId.eq(profile_id))
        .order_by_desc(env_profile_version::Column::Number)
        .all(db)
        .await
}

/// Versions `ids` with their profiles.
pub async fn versions_with_profiles(
    db: &impl ConnectionTrait,
    ids: &[i64],
) -> Result<Vec<(env_profile_version::Model, env_profile::Model)>, DbErr> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let versions = env_profile_version::Entity::find()
        .filter(env_profile_version::Column::Id.is_in(ids.iter().copied()))
        .all(db)
        .await?;
    let profile_ids: Vec<i64> = versions.iter().map(|v| v.profile_id).collect();
    let profiles = env_profile::Entity::find()
        .filter(env_profile::Column::Id.is_in(profile_ids))
        .all(db)
        .await?;
    Ok(versions
        .into_iter()
        .filter_map(|v| {
            let p = profiles.iter().find(|p| p.id == v.profile_id)?.clone();
            Some((v, p))
        })
        .collect())
}

/// A new profile.
pub async fn insert_profile(
    db: &impl ConnectionTrait,
    owner_id: i64,
    team_id: Option<i64>,
    name: &str,
    now: DateTime<Utc>,
) -> Result<env_profile::Model, DbErr> {
    env_profile::ActiveModel {
        owner_id: Set(owner_id),
        team_id: Set(team_id),
        name: Set(name.to_owned()),
        archived: Set(false),
        created_at: Set(now),
        ..Default::default()
    }
    .insert(db)
    .await
}

/// Version `number` of `profile_id`.
pub async fn insert_version(
    db: &impl ConnectionTrait,
    profile_id: i64,
    number: i32,
    spec: &str,
    hash: &str,
    now: DateTime<Utc>,
) -> Result<env_profile_version::Model, DbErr> {
    env_profile_version::ActiveModel {
        profile_id: Set(profile_id),
        number: Set(number),
        spec: Set(spec.to_owned()),
        content_hash: Set(hash.to_owned()),
        created_at: Set(now),
        ..Default::default()
    }
    .insert(db)
    .await
}

/// Moves the bookings that use a version of `profile_id` and start after `now` to version
/// `version_id` (a fixed profile applies to what has not started), when their holder is the
/// profile's `owner_id` or a member of `team_id`, the team it is shared with now: a holder the
/// profile is no longer shared with keeps the version they booked (its script runs as them).
/// Answers how many moved.
pub async fn move_upcoming(
    db: &impl ConnectionTrait,
    profile_id: i64,
    version_id: i64,
    (owner_id, team_id): (i64, Option<i64>),
    now: DateTime<Utc>,
) -> Result<u64, DbErr> {
    use sea_orm::sea_query::Query;
    let versions = Query::select()
        .column(env_profile_version::Column::Id)
        .from(env_profile_version::Entity)
        .and_where(env_profile_version::Column::ProfileId.eq(profile_id))
        .to_owned();
    let mut holders = Condition::any().add(reservation::Column::OwnerId.eq(owner_id));
    if let Some(team_id) = team_id {
        holders = holders.add(
            reservation::Column::OwnerId.in_subquery(
                Query::select()
                    .column(team_member::Column::UserId)
                    .from(team_member::Entity)
                    .and_where(team_member::Column::TeamId.eq(team_id))
                    .to_owned(),
            ),
        );
    }
    let result = reservation::Entity::update_many()
        .col_expr(
            reservation::Column::ProfileVersionId,
            Expr::value(version_id),
        )
        .filter(reservation::Column::ProfileVersionId.in_subquery(versions))
        .filter(holders)
        .filter(reservation::Column::StartAt.gt(now))
        .filter(reservation::Column::Status.eq(reservation::Status::Confirmed))
        .exec(db)
        .await?;
    Ok(result.rows_affected)
}

/// Renames profile `id` and sets the team it is shared with.
pub async fn update_profile(
    db: &impl ConnectionTrait,
    id: i64,
    name: &str,
    team_id: Option<i64>,
) -> Result<(), DbErr> {
    env_profile::Entity::update_many()
        .col_expr(env_profile::Column::Name, Expr::value(name))
        .col_expr(env_profile::Column::TeamId, Expr::value(team_id))
        .filter(env_profile::Column::Id.eq(id))
        .exec(db)
        .await?;
    Ok(())
}

/// Archives profile `id` and clears it as anyone's default.
pub async fn archive(db: &impl ConnectionTrait, id: i64) -> Result<(), DbErr> {
    env_profile::Entity::update_many()
        .col_expr(env_profile::Column::Archived, Expr::value(true))
        .filter(env_profile::Column::Id.eq(id))
        .exec(db)
        .await?;
    user::Entity::update_many()
        .col_expr(
            user::Column::DefaultProfileId,
            Expr::value(Option::<i64>::None),
        )
        .filter(user::Column::DefaultProfileId.eq(id))
        .exec(db)
        .await?;
    Ok(())
}

/// `user_id`'s default profile.
pub async fn default_of(db: &impl ConnectionTrait, user_id: i64) -> Result<Option<i64>, DbErr> {
    Ok(user::Entity::find()
        .select_only()
        .column(user::Column::DefaultProfileId)
        .filter(user::Column::Id.eq(user_id))
        .into_tuple::<Option<i64>>()
        .one(db)
        .await?
        .flatten())
}

/// Sets (or clears) `user_id`'s default profile.
pub async fn set_default(
    db: &impl ConnectionTrait,
    user_id: i64,
    profile_id: Option<i64>,
) -> Result<(), DbErr> {
    user::Entity::update_many()
        .col_expr(user::Column::DefaultProfileId, Expr::value(profile_id))
        .filter(user::Column::Id.eq(user_id))
        .exec(db)
        .await?;
    Ok(())
}

/// The names of `ids` (users).
pub async fn user_names(
    db: &impl ConnectionTrait,
    ids: &[i64],
) -> Result<Vec<(i64, String)>, DbErr> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    user::Entity::find()
        .select_only()
        .column(user::Column::Id)
        .column(user::Column::Name)
        .filter(user::Column::Id.is_in(ids.iter().copied()))
        .into_tuple()
        .all(db)
        .await
}

/// The names of `ids` (teams).
pub async fn team_names(
    db: &impl ConnectionTrait,
    ids: &[i64],
) -> Result<Vec<(i64, String)>, DbErr> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    team::Entity::find()
        .select_only()
        .column(team::Column::Id)
        .column(team::Column::Name)
        .filter(team::Column::Id.is_in(ids.iter().copied()))
        .into_tuple()
        .all(db)
        .await
}

/// Reservation `id`'s node and profile version, if it is on `node_id`.
pub async fn reservation_on_node(
    db: &impl ConnectionTrait,
    id: i64,
    node_id: i64,
) -> Result<Option<Option<i64>>, DbErr> {
    reservation::Entity::find()
        .select_only()
        .column(reservation::Column::ProfileVersionId)
        .filter(reservation::Column::Id.eq(id))
        .filter(reservation::Column::NodeId.eq(node_id))
        .into_tuple::<Option<i64>>()
        .one(db)
        .await
}

/// Keeps what an agent said about a booking's environment (the later report wins).
pub async fn upsert_preparation(
    db: &impl ConnectionTrait,
    row: env_preparation::Model,
) -> Result<(), DbErr> {
    env_preparation::Entity::insert(env_preparation::ActiveModel {
        reservation_id: Set(row.reservation_id),
        node_id: Set(row.node_id),
        content_hash: Set(row.content_hash),
        state: Set(row.state),
        cached: Set(row.cached),
        log: Set(row.log),
        at: Set(row.at),
    })
    .on_conflict(
        OnConflict::column(env_preparation::Column::ReservationId)
            .update_columns([
                env_preparation::Column::NodeId,
                env_preparation::Column::ContentHash,
                env_preparation::Column::State,
                env_preparation::Column::Cached,
                env_preparation::Column::Log,
                env_preparation::Column::At,
            ])
            .to_owned(),
    )
    .exec_without_returning(db)
    .await?;
    Ok(())
}

/// What the node last said about reservation `id`'s environment.
pub async fn preparation(
    db: &impl ConnectionTrait,
    id: i64,
) -> Result<Option<env_preparation::Model>, DbErr> {
    env_preparation::Entity::find_by_id(id).one(db).await
}

/// The nodes whose agent reported the environment with content hash `hash` ready (cached there).
pub async fn nodes_ready_for(db: &impl ConnectionTrait, hash: &str) -> Result<Vec<i64>, DbErr> {
    let mut nodes: Vec<i64> = env_preparation::Entity::find()
        .select_only()
        .column(env_preparation::Column::NodeId)
        .filter(env_preparation::Column::ContentHash.eq(hash))
        .filter(env_preparation::Column::State.eq("ready"))
        .into_tuple()
        .all(db)
        .await?;
    nodes.sort_unstable();
    nodes.dedup();
    Ok(nodes)
}
