//! The notification outbox and the inbox: writing events in the caller's transaction, the
//! worker's queue, and what each user has received.

use crate::backend::entity::{notification_event, notification_inbox, team_member};
use crate::domain::notify::{Audience, EventKind, InboxItem, NewEvent};
use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Expr, LockBehavior, LockType, OnConflict};
use sea_orm::{
    ActiveValue::Set, ColumnTrait, ConnectionTrait, DatabaseTransaction, DbBackend, DbErr,
    EntityTrait, PaginatorTrait, QueryFilter, QueryOrder, QuerySelect,
};

/// Writes `event` in the caller's transaction; an event with the same key is kept as it is.
pub async fn enqueue(txn: &DatabaseTransaction, event: &NewEvent) -> Result<(), DbErr> {
    let (user_id, team_id) = match event.audience {
        Audience::User(id) => (Some(id), None),
        Audience::TeamAdmins(id) => (None, Some(id)),
    };
    let notice = serde_json::to_string(&event.notice)
        .map_err(|err| DbErr::Custom(format!("notice: {err}")))?;
    // ON CONFLICT rather than a unique violation: on PostgreSQL a violation would abort the
    // caller's whole transaction.
    notification_event::Entity::insert(notification_event::ActiveModel {
        kind: Set(event.kind),
        event_key: Set(event.key.clone()),
        user_id: Set(user_id),
        team_id: Set(team_id),
        reservation_id: Set(event.reservation_id),
        notice: Set(notice),
        occurred_at: Set(event.occurred_at),
        due_at: Set(event.due_at),
        fanned_out_at: Set(None),
        ..Default::default()
    })
    .on_conflict(
        OnConflict::column(notification_event::Column::EventKey)
            .do_nothing()
            .to_owned(),
    )
    .exec_without_returning(txn)
    .await?;
    Ok(())
}

/// Drops the reminders of reservation `id` not handed out yet (it no longer holds its GPUs).
pub async fn drop_reminders(txn: &DatabaseTransaction, id: i64) -> Result<u64, DbErr> {
    let deleted = notification_event::Entity::delete_many()
        .filter(notification_event::Column::ReservationId.eq(id))
        .filter(
            notification_event::Column::Kind
                .is_in([EventKind::StartingSoon, EventKind::EndingSoon]),
        )
        .filter(notification_event::Column::FannedOutAt.is_null())
        .exec(txn)
        .await?;
    Ok(deleted.rows_affected)
}

/// Events due at `now` and not handed out yet, the earliest first (at most `limit`).
pub async fn due_ids(
    db: &impl ConnectionTrait,
    now: DateTime<Utc>,
    limit: u64,
) -> Result<Vec<i64>, DbErr> {
    notification_event::Entity::find()
        .select_only()
        .column(notification_event::Column::Id)
        .filter(notification_event::Column::FannedOutAt.is_null())
        .filter(notification_event::Column::DueAt.lte(now))
        .order_by_asc(notification_event::Column::DueAt)
        .order_by_asc(notification_event::Column::Id)
        .limit(limit)
        .into_tuple()
        .all(db)
        .await
}

/// Claims event `id` if nobody has handed it out yet: on PostgreSQL its row stays locked until
/// `txn` ends and a row another replica holds is skipped (on SQLite the write transaction already
/// excludes every other writer).
pub async fn claim(
    txn: &DatabaseTransaction,
    id: i64,
) -> Result<Option<notification_event::Model>, DbErr> {
    let mut query = notification_event::Entity::find_by_id(id)
        .filter(notification_event::Column::FannedOutAt.is_null());
    if txn.get_database_backend() == DbBackend::Postgres {
        query = query.lock_with_behavior(LockType::Update, LockBehavior::SkipLocked);
    }
    query.one(txn).await
}

/// The admins of team `team_id`.
pub async fn team_admins(db: &impl ConnectionTrait, team_id: i64) -> Result<Vec<i64>, DbErr> {
    team_member::Entity::find()
        .select_only()
        .column(team_member::Column::UserId)
        .filter(team_member::Column::TeamId.eq(team_id))
        .filter(team_member::Column::Role.eq("admin"))
        .order_by_asc(team_member::Column::UserId)
        .into_tuple()
        .all(db)
        .await
}

/// Puts event `event_id` in the inboxes of `users` (once each) and marks it handed out.
pub async fn hand_out(
    txn: &DatabaseTransaction,
    event_id: i64,
    users: &[i64],
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    if !users.is_empty() {
        notification_inbox::Entity::insert_many(users.iter().map(|user| {
            notification_inbox::ActiveModel {
                user_id: Set(*user),
                event_id: Set(event_id),
                created_at: Set(now),
                read_at: Set(None),
                ..Default::default()
            }
        }))
        .on_conflict(
            OnConflict::columns([
                notification_inbox::Column::UserId,
                notification_inbox::Column::EventId,
            ])
            .do_nothing()
            .to_owned(),
        )
        .exec_without_returning(txn)
        .await?;
    }
    notification_event::Entity::update_many()
        .col_expr(notification_event::Column::FannedOutAt, Expr::value(now))
        .filter(notification_event::Column::Id.eq(event_id))
        .exec(txn)
        .await?;
    Ok(())
}

/// How many notices the user has not read.
pub async fn unread(db: &impl ConnectionTrait, user_id: i64) -> Result<u32, DbErr> {
    let count = notification_inbox::Entity::find()
        .filter(notification_inbox::Column::UserId.eq(user_id))
        .filter(notification_inbox::Column::ReadAt.is_null())
        .count(db)
        .await?;
    Ok(u32::try_from(count).unwrap_or(u32::MAX))
}

/// The user's latest `limit` notices, newest first.
pub async fn inbox(
    db: &impl ConnectionTrait,
    user_id: i64,
    limit: u64,
) -> Result<Vec<InboxItem>, DbErr> {
    let rows = notification_inbox::Entity::find()
        .find_also_related(notification_event::Entity)
        .filter(notification_inbox::Column::UserId.eq(user_id))
        .order_by_desc(notification_inbox::Column::CreatedAt)
        .order_by_desc(notification_inbox::Column::Id)
        .limit(limit)
        .all(db)
        .await?;
    rows.into_iter()
        .filter_map(|(row, event)| event.map(|event| (row, event)))
        .map(|(row, event)| {
            let notice = serde_json::from_str(&event.notice).map_err(|err| {
                DbErr::Custom(format!("notification_events.id={}: {err}", event.id))
            })?;
            Ok(InboxItem {
                id: row.id,
                kind: event.kind,
                notice,
                occurred_at: event.occurred_at,
                read: row.read_at.is_some(),
            })
        })
        .collect()
}

/// Marks the user's notice `id` (`None`: all of them) read; answers how many changed.
pub async fn mark_read(
    db: &impl ConnectionTrait,
    user_id: i64,
    id: Option<i64>,
    now: DateTime<Utc>,
) -> Result<u64, DbErr> {
    let mut update = notification_inbox::Entity::update_many()
        .col_expr(notification_inbox::Column::ReadAt, Expr::value(now))
        .filter(notification_inbox::Column::UserId.eq(user_id))
        .filter(notification_inbox::Column::ReadAt.is_null());
    if let Some(id) = id {
        update = update.filter(notification_inbox::Column::Id.eq(id));
    }
    Ok(update.exec(db).await?.rows_affected)
}

/// Whether the user has notice `id` (read or not).
pub async fn owns(db: &impl ConnectionTrait, user_id: i64, id: i64) -> Result<bool, DbErr> {
    Ok(notification_inbox::Entity::find_by_id(id)
        .filter(notification_inbox::Column::UserId.eq(user_id))
        .count(db)
        .await?
        > 0)
}
