//! Workspace snapshots, the chunks the store holds per user, and the portal's shared keys.

use crate::backend::entity::{portal_key, workspace_chunk, workspace_snapshot};
use chrono::{DateTime, Utc};
use sea_orm::sea_query::OnConflict;
use sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ColumnTrait, ConnectionTrait, DbErr, EntityTrait,
    QueryFilter, QueryOrder, QuerySelect,
};

/// Key `name`, made from `fresh` the first time it is asked for (every replica gets the same).
pub async fn key_or_insert(
    db: &impl ConnectionTrait,
    name: &str,
    fresh: String,
) -> Result<String, DbErr> {
    if let Some(row) = portal_key::Entity::find_by_id(name.to_owned())
        .one(db)
        .await?
    {
        return Ok(row.value);
    }
    portal_key::Entity::insert(portal_key::ActiveModel {
        name: Set(name.to_owned()),
        value: Set(fresh),
    })
    .on_conflict(
        OnConflict::column(portal_key::Column::Name)
            .do_nothing()
            .to_owned(),
    )
    .exec_without_returning(db)
    .await?;
    let row = portal_key::Entity::find_by_id(name.to_owned())
        .one(db)
        .await?
        .ok_or_else(|| DbErr::RecordNotFound(format!("portal key {name}")))?;
    Ok(row.value)
}

/// Of `hashes`, those the store holds for `user_id`, with their sizes.
pub async fn known_chunks(
    db: &impl ConnectionTrait,
    user_id: i64,
    hashes: &[String],
) -> Result<Vec<(String, i64)>, DbErr> {
    let mut known = Vec::new();
    for batch in hashes.chunks(500) {
        let rows: Vec<(String, i64)> = workspace_chunk::Entity::find()
            .select_only()
            .column(workspace_chunk::Column::Hash)
            .column(workspace_chunk::Column::Size)
            .filter(workspace_chunk::Column::UserId.eq(user_id))
            .filter(workspace_chunk::Column::Hash.is_in(batch.iter().cloned()))
            .into_tuple()
            .all(db)
            .await?;
        known.extend(rows);
    }
    Ok(known)
}

/// Records that the store holds chunk `hash` for `user_id` (once).
pub async fn record_chunk(
    db: &impl ConnectionTrait,
    user_id: i64,
    hash: &str,
    size: i64,
    at: DateTime<Utc>,
) -> Result<(), DbErr> {
    workspace_chunk::Entity::insert(workspace_chunk::ActiveModel {
        user_id: Set(user_id),
        hash: Set(hash.to_owned()),
        size: Set(size),
        created_at: Set(at),
    })
    .on_conflict(
        OnConflict::columns([
            workspace_chunk::Column::UserId,
            workspace_chunk::Column::Hash,
        ])
        .do_nothing()
        .to_owned(),
    )
    .exec_without_returning(db)
    .await?;
    Ok(())
}

/// `user_id`'s chunks stored at or after `since`.
pub async fn chunks_created_since(
    db: &impl ConnectionTrait,
    user_id: i64,
    since: DateTime<Utc>,
) -> Result<Vec<String>, DbErr> {
    workspace_chunk::Entity::find()
        .select_only()
        .column(workspace_chunk::Column::Hash)
        .filter(workspace_chunk::Column::UserId.eq(user_id))
        .filter(workspace_chunk::Column::CreatedAt.gte(since))
        .into_tuple()
        .all(db)
        .await
}

/// Adds a snapshot.
pub async fn insert_snapshot(
    db: &impl ConnectionTrait,
    row: workspace_snapshot::ActiveModel,
) -> Result<workspace_snapshot::Model, DbErr> {
    row.insert(db).await
}

/// `user_id`'s latest snapshot.
pub async fn latest(
    db: &impl ConnectionTrait,
    user_id: i64,
) -> Result<Option<workspace_snapshot::Model>, DbErr> {
    workspace_snapshot::Entity::find()
        .filter(workspace_snapshot::Column::UserId.eq(user_id))
        .order_by_desc(workspace_snapshot::Column::Id)
        .one(db)
        .await
}

/// `user_id`'s snapshots, newest first.
pub async fn snapshots(
    db: &impl ConnectionTrait,
    user_id: i64,
) -> Result<Vec<workspace_snapshot::Model>, DbErr> {
    workspace_snapshot::Entity::find()
        .filter(workspace_snapshot::Column::UserId.eq(user_id))
        .order_by_desc(workspace_snapshot::Column::Id)
        .all(db)
        .await
}

/// Deletes snapshots `ids`.
pub async fn delete_snapshots(db: &impl ConnectionTrait, ids: &[i64]) -> Result<(), DbErr> {
    if ids.is_empty() {
        return Ok(());
    }
    workspace_snapshot::Entity::delete_many()
        .filter(workspace_snapshot::Column::Id.is_in(ids.iter().copied()))
        .exec(db)
        .await?;
    Ok(())
}

/// All of `user_id`'s chunk hashes.
pub async fn all_chunks(db: &impl ConnectionTrait, user_id: i64) -> Result<Vec<String>, DbErr> {
    workspace_chunk::Entity::find()
        .select_only()
        .column(workspace_chunk::Column::Hash)
        .filter(workspace_chunk::Column::UserId.eq(user_id))
        .into_tuple()
        .all(db)
        .await
}

/// Forgets `user_id`'s chunks `hashes`.
pub async fn delete_chunks(
    db: &impl ConnectionTrait,
    user_id: i64,
    hashes: &[String],
) -> Result<(), DbErr> {
    for batch in hashes.chunks(500) {
        workspace_chunk::Entity::delete_many()
            .filter(workspace_chunk::Column::UserId.eq(user_id))
            .filter(workspace_chunk::Column::Hash.is_in(batch.iter().cloned()))
            .exec(db)
            .await?;
    }
    Ok(())
}

/// Bytes the store holds for `user_id` (summed by the database).
pub async fn stored_bytes(db: &impl ConnectionTrait, user_id: i64) -> Result<i64, DbErr> {
    use sea_orm::sea_query::Expr;
    let total: Option<i64> = workspace_chunk::Entity::find()
        .select_only()
        .column_as(
            Expr::cust("CAST(COALESCE(SUM(size), 0) AS BIGINT)"),
            "total",
        )
        .filter(workspace_chunk::Column::UserId.eq(user_id))
        .into_tuple()
        .one(db)
        .await?;
    Ok(total.unwrap_or(0))
}

/// `user_id`'s reservations other than `except` that ended in `[from, to]` (by their end or a
/// cancellation after their start) with no snapshot saved since: saves still to come.
pub async fn unsaved_ended(
    db: &impl ConnectionTrait,
    user_id: i64,
    except: i64,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> Result<Vec<i64>, DbErr> {
    use crate::backend::entity::reservation;
    /// Id, start, cancellation, end.
    type Window = (i64, DateTime<Utc>, Option<DateTime<Utc>>, DateTime<Utc>);
    let ended: Vec<Window> = reservation::Entity::find()
        .select_only()
        .column(reservation::Column::Id)
        .column(reservation::Column::StartAt)
        .column(reservation::Column::CancelledAt)
        .column(reservation::Column::EndAt)
        .filter(reservation::Column::OwnerId.eq(user_id))
        .filter(reservation::Column::Id.ne(except))
        .filter(reservation::Column::StartAt.lt(to))
        .filter(reservation::Column::EndAt.gte(from))
        .into_tuple()
        .all(db)
        .await?;
    let ended: Vec<i64> = ended
        .into_iter()
        .filter(|(_, start, cancelled, end)| {
            let closed = cancelled.map_or(*end, |c| c.min(*end));
            closed > *start && from <= closed && closed <= to
        })
        .map(|(id, ..)| id)
        .collect();
    if ended.is_empty() {
        return Ok(ended);
    }
    // Only leases a node opened are saved at their end.
    let opened: Vec<Option<i64>> = crate::backend::entity::gpu_access_event::Entity::find()
        .select_only()
        .column(crate::backend::entity::gpu_access_event::Column::ReservationId)
        .filter(
            crate::backend::entity::gpu_access_event::Column::ReservationId
                .is_in(ended.iter().copied()),
        )
        .filter(crate::backend::entity::gpu_access_event::Column::Kind.eq("granted"))
        .into_tuple()
        .all(db)
        .await?;
    let ended: Vec<i64> = ended
        .into_iter()
        .filter(|id| opened.contains(&Some(*id)))
        .collect();
    if ended.is_empty() {
        return Ok(ended);
    }
    let saved: Vec<Option<i64>> = workspace_snapshot::Entity::find()
        .select_only()
        .column(workspace_snapshot::Column::ReservationId)
        .filter(workspace_snapshot::Column::UserId.eq(user_id))
        .filter(workspace_snapshot::Column::ReservationId.is_in(ended.iter().copied()))
        .into_tuple()
        .all(db)
        .await?;
    // A save that failed was told to the holder: nothing more will come.
    let failed: Vec<Option<i64>> = crate::backend::entity::notification_event::Entity::find()
        .select_only()
        .column(crate::backend::entity::notification_event::Column::ReservationId)
        .filter(
            crate::backend::entity::notification_event::Column::ReservationId
                .is_in(ended.iter().copied()),
        )
        .filter(
            crate::backend::entity::notification_event::Column::Kind
                .eq(crate::domain::notify::EventKind::WorkspaceNotSaved),
        )
        .into_tuple()
        .all(db)
        .await?;
    Ok(ended
        .into_iter()
        .filter(|id| !saved.contains(&Some(*id)) && !failed.contains(&Some(*id)))
        .collect())
}

/// Whether reservation `id` moved whole to another node after `since` while its lease was open
/// on the old one, and that node has not saved its workspace since (nor failed to).
pub async fn moved_unsaved(
    db: &impl ConnectionTrait,
    id: i64,
    since: DateTime<Utc>,
) -> Result<bool, DbErr> {
    use crate::backend::entity::{gpu_access_event, notification_event, reservation};
    let Some(moved_at) = reservation::Entity::find_by_id(id)
        .one(db)
        .await?
        .and_then(|row| row.moved_at)
        .filter(|at| *at >= since)
    else {
        return Ok(false);
    };
    let opened = gpu_access_event::Entity::find()
        .filter(gpu_access_event::Column::ReservationId.eq(id))
        .filter(gpu_access_event::Column::Kind.eq("granted"))
        .one(db)
        .await?
        .is_some();
    if !opened {
        return Ok(false);
    }
    let saved = workspace_snapshot::Entity::find()
        .filter(workspace_snapshot::Column::ReservationId.eq(id))
        .filter(workspace_snapshot::Column::CreatedAt.gte(moved_at))
        .one(db)
        .await?
        .is_some();
    let failed = notification_event::Entity::find()
        .filter(notification_event::Column::ReservationId.eq(id))
        .filter(
            notification_event::Column::Kind
                .eq(crate::domain::notify::EventKind::WorkspaceNotSaved),
        )
        .filter(notification_event::Column::OccurredAt.gte(moved_at))
        .one(db)
        .await?
        .is_some();
    Ok(!saved && !failed)
}
