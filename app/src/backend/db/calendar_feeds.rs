//! Calendar feeds: their secret addresses (stored hashed) and the bookings each lists.

use crate::backend::entity::{calendar_feed, reservation};
use chrono::{DateTime, Utc};
use sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ColumnTrait, ConnectionTrait, DatabaseTransaction, DbErr,
    EntityTrait, QueryFilter, QueryOrder, QuerySelect,
};

/// `user_id`'s feed of `team_id` (None: their own bookings), if they made one.
fn of(user_id: i64, team_id: Option<i64>) -> sea_orm::Select<calendar_feed::Entity> {
    let query = calendar_feed::Entity::find().filter(calendar_feed::Column::UserId.eq(user_id));
    match team_id {
        Some(team) => query.filter(calendar_feed::Column::TeamId.eq(team)),
        None => query.filter(calendar_feed::Column::TeamId.is_null()),
    }
}

/// Replaces `user_id`'s feed of `team_id` with one whose token hashes to `hash`.
pub async fn replace(
    txn: &DatabaseTransaction,
    user_id: i64,
    team_id: Option<i64>,
    hash: &str,
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    remove(txn, user_id, team_id).await?;
    calendar_feed::ActiveModel {
        user_id: Set(user_id),
        team_id: Set(team_id),
        token_hash: Set(hash.to_owned()),
        created_at: Set(now),
        ..Default::default()
    }
    .insert(txn)
    .await?;
    Ok(())
}

/// Deletes `user_id`'s feed of `team_id`; answers how many went (0 or 1).
pub async fn remove(
    db: &impl ConnectionTrait,
    user_id: i64,
    team_id: Option<i64>,
) -> Result<u64, DbErr> {
    let ids: Vec<i64> = of(user_id, team_id)
        .select_only()
        .column(calendar_feed::Column::Id)
        .into_tuple()
        .all(db)
        .await?;
    if ids.is_empty() {
        return Ok(0);
    }
    let deleted = calendar_feed::Entity::delete_many()
        .filter(calendar_feed::Column::Id.is_in(ids))
        .exec(db)
        .await?;
    Ok(deleted.rows_affected)
}

/// The feed whose token hashes to `hash`.
pub async fn by_hash(
    db: &impl ConnectionTrait,
    hash: &str,
) -> Result<Option<calendar_feed::Model>, DbErr> {
    calendar_feed::Entity::find()
        .filter(calendar_feed::Column::TokenHash.eq(hash))
        .one(db)
        .await
}

/// Every feed `user_id` made, their own first.
pub async fn of_user(
    db: &impl ConnectionTrait,
    user_id: i64,
) -> Result<Vec<calendar_feed::Model>, DbErr> {
    calendar_feed::Entity::find()
        .filter(calendar_feed::Column::UserId.eq(user_id))
        .order_by_asc(calendar_feed::Column::TeamId)
        .order_by_asc(calendar_feed::Column::Id)
        .all(db)
        .await
}

/// The bookings a feed lists: `owner_id`'s (or team `team_id`'s) that end after `since`,
/// cancelled ones included (calendars strike them out), soonest first, at most `limit`.
pub async fn bookings(
    db: &impl ConnectionTrait,
    owner_id: Option<i64>,
    team_id: Option<i64>,
    since: DateTime<Utc>,
    limit: u64,
) -> Result<Vec<reservation::Model>, DbErr> {
    let mut query = reservation::Entity::find()
        .filter(reservation::Column::EndAt.gt(since))
        .order_by_asc(reservation::Column::StartAt)
        .order_by_asc(reservation::Column::Id)
        .limit(limit);
    if let Some(owner) = owner_id {
        query = query.filter(reservation::Column::OwnerId.eq(owner));
    }
    if let Some(team) = team_id {
        query = query.filter(reservation::Column::TeamId.eq(team));
    }
    query.all(db).await
}
