//! The notification outbox and the inbox: writing events in the caller's transaction, the
//! worker's queue, and what each user has received.

use crate::backend::entity::{
    notification_delivery, notification_event, notification_inbox, notification_preference,
    team_member, user, webhook,
};
use crate::domain::notify::{
    Audience, Channel, ChannelChoice, DeliveryCounts, DeliveryRow, DeliveryStatus, EventKind,
    InboxItem, NewEvent,
};
use crate::domain::paging::{Cursor, ListKind, Page, PageRequest};
use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Expr, ExprTrait, LockBehavior, LockType, OnConflict};
use sea_orm::{
    ActiveValue::Set, ColumnTrait, Condition, ConnectionTrait, DatabaseTransaction, DbBackend,
    DbErr, EntityTrait, PaginatorTrait, QueryFilter, QueryOrder, QuerySelect,
};

/// Rows per insert statement (events, inbox rows, deliveries: at most eleven parameters each),
/// well inside SQLite's and PostgreSQL's limits on a statement's parameters.
const ROWS_PER_STATEMENT: usize = 500;

/// Writes `events` in the caller's transaction, a statement per 500 (one for a booking's); an
/// event with the same key as one already written is kept as it is.
pub async fn enqueue(txn: &DatabaseTransaction, events: &[NewEvent]) -> Result<(), DbErr> {
    for chunk in events.chunks(ROWS_PER_STATEMENT) {
        enqueue_chunk(txn, chunk).await?;
    }
    Ok(())
}

async fn enqueue_chunk(txn: &DatabaseTransaction, events: &[NewEvent]) -> Result<(), DbErr> {
    let rows = events
        .iter()
        .map(|event| {
            let (user_id, team_id) = match event.audience {
                Audience::User(id) => (Some(id), None),
                Audience::TeamAdmins(id) => (None, Some(id)),
            };
            let notice = serde_json::to_string(&event.notice)
                .map_err(|err| DbErr::Custom(format!("notice: {err}")))?;
            Ok(notification_event::ActiveModel {
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
        })
        .collect::<Result<Vec<_>, DbErr>>()?;
    // ON CONFLICT rather than a unique violation: on PostgreSQL a violation would abort the
    // caller's whole transaction.
    notification_event::Entity::insert_many(rows)
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

/// Claims the events `ids` that nobody has handed out yet, the earliest due first: on PostgreSQL
/// their rows stay locked until `txn` ends and rows another replica holds are skipped (on SQLite
/// the write transaction already excludes every other writer).
pub async fn claim(
    txn: &DatabaseTransaction,
    ids: &[i64],
) -> Result<Vec<notification_event::Model>, DbErr> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let mut query = notification_event::Entity::find()
        .filter(notification_event::Column::Id.is_in(ids.iter().copied()))
        .filter(notification_event::Column::FannedOutAt.is_null())
        .order_by_asc(notification_event::Column::DueAt)
        .order_by_asc(notification_event::Column::Id);
    if txn.get_database_backend() == DbBackend::Postgres {
        query = query.lock_with_behavior(LockType::Update, LockBehavior::SkipLocked);
    }
    query.all(txn).await
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

/// Puts each `(event, user)` of `inbox` in that user's inbox (once each) and marks the events
/// `handed_out` handed out.
pub async fn hand_out(
    txn: &DatabaseTransaction,
    handed_out: &[i64],
    inbox: &[(i64, i64)],
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    for chunk in inbox.chunks(ROWS_PER_STATEMENT) {
        notification_inbox::Entity::insert_many(chunk.iter().map(|(event, user)| {
            notification_inbox::ActiveModel {
                user_id: Set(*user),
                event_id: Set(*event),
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
    if !handed_out.is_empty() {
        notification_event::Entity::update_many()
            .col_expr(notification_event::Column::FannedOutAt, Expr::value(now))
            .filter(notification_event::Column::Id.is_in(handed_out.iter().copied()))
            .exec(txn)
            .await?;
    }
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

/// The user's latest `limit` notices, the most recent event first.
pub async fn latest_notices(
    db: &impl ConnectionTrait,
    user_id: i64,
    limit: u64,
) -> Result<Vec<InboxItem>, DbErr> {
    let page = PageRequest { limit, after: None };
    Ok(inbox(db, user_id, &page).await?.items)
}

/// A page of the user's notices, the most recent event first.
pub async fn inbox(
    db: &impl ConnectionTrait,
    user_id: i64,
    page: &PageRequest,
) -> Result<Page<InboxItem>, DbErr> {
    let mut query = notification_inbox::Entity::find()
        .find_also_related(notification_event::Entity)
        .filter(notification_inbox::Column::UserId.eq(user_id));
    if let Some(after) = page.after {
        query = query.filter(super::before_key(
            notification_event::Column::OccurredAt,
            notification_inbox::Column::Id,
            after,
        ));
    }
    let rows = query
        // By when it happened, not when the worker handed it out: two workers may hand out
        // one user's events in either order.
        .order_by_desc(notification_event::Column::OccurredAt)
        .order_by_desc(notification_inbox::Column::Id)
        .limit(page.fetch())
        .all(db)
        .await?;
    let items = rows
        .into_iter()
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
        .collect::<Result<Vec<_>, DbErr>>()?;
    Ok(Page::from_rows(items, page, ListKind::Inbox, |item| {
        Cursor::at(item.occurred_at, item.id)
    }))
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

/// Queues on `channel` each `(event, target, user)` of `deliveries` (the event to the recipient,
/// or to a webhook and its owner), due at `now`, once each: a delivery already queued is kept.
pub async fn queue_deliveries(
    txn: &DatabaseTransaction,
    channel: Channel,
    deliveries: &[(i64, i64, i64)],
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    for chunk in deliveries.chunks(ROWS_PER_STATEMENT) {
        notification_delivery::Entity::insert_many(chunk.iter().map(|(event, target, user)| {
            notification_delivery::ActiveModel {
                event_id: Set(*event),
                channel: Set(channel),
                target_id: Set(*target),
                user_id: Set(*user),
                status: Set(DeliveryStatus::Queued),
                attempts: Set(0),
                next_at: Set(now),
                lease_until: Set(None),
                last_error: Set(None),
                sent_at: Set(None),
                created_at: Set(now),
                ..Default::default()
            }
        }))
        .on_conflict(
            OnConflict::columns([
                notification_delivery::Column::EventId,
                notification_delivery::Column::Channel,
                notification_delivery::Column::TargetId,
            ])
            .do_nothing()
            .to_owned(),
        )
        .exec_without_returning(txn)
        .await?;
    }
    Ok(())
}

/// Deliveries queued, due at `now` and held by no sender, the earliest first (at most `limit`).
pub async fn due_deliveries(
    db: &impl ConnectionTrait,
    now: DateTime<Utc>,
    limit: u64,
) -> Result<Vec<i64>, DbErr> {
    notification_delivery::Entity::find()
        .select_only()
        .column(notification_delivery::Column::Id)
        .filter(notification_delivery::Column::Status.eq(DeliveryStatus::Queued))
        .filter(notification_delivery::Column::NextAt.lte(now))
        .filter(
            Condition::any()
                .add(notification_delivery::Column::LeaseUntil.is_null())
                .add(notification_delivery::Column::LeaseUntil.lt(now)),
        )
        .order_by_asc(notification_delivery::Column::NextAt)
        .order_by_asc(notification_delivery::Column::Id)
        .limit(limit)
        .into_tuple()
        .all(db)
        .await
}

/// Takes delivery `id` for one try until `until`, counting the try; `None` when it is not due
/// or another sender holds it. One conditional update, committed at once: no lock is held while
/// the message goes out.
pub async fn take_delivery(
    db: &impl ConnectionTrait,
    id: i64,
    now: DateTime<Utc>,
    until: DateTime<Utc>,
) -> Result<Option<notification_delivery::Model>, DbErr> {
    let taken = notification_delivery::Entity::update_many()
        .col_expr(
            notification_delivery::Column::LeaseUntil,
            Expr::value(until),
        )
        .col_expr(
            notification_delivery::Column::Attempts,
            Expr::col(notification_delivery::Column::Attempts).add(1),
        )
        .filter(notification_delivery::Column::Id.eq(id))
        .filter(notification_delivery::Column::Status.eq(DeliveryStatus::Queued))
        .filter(notification_delivery::Column::NextAt.lte(now))
        .filter(
            Condition::any()
                .add(notification_delivery::Column::LeaseUntil.is_null())
                .add(notification_delivery::Column::LeaseUntil.lt(now)),
        )
        .exec(db)
        .await?;
    if taken.rows_affected == 0 {
        return Ok(None);
    }
    notification_delivery::Entity::find_by_id(id).one(db).await
}

/// How a try of a delivery ended in the store ([`finish_delivery`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TryEnd {
    /// Its outcome is the delivery's.
    Recorded,
    /// The delivery was given up while it was tried (its webhook turned off), and this try did
    /// not get it through: it stays given up.
    GivenUp,
    /// Its lease ran out and another sender took the delivery over, counting a new try.
    Lost,
}

/// Records the outcome of try number `attempt` of delivery `id`: sent at `now`, queued again for
/// `next_at`, or failed; `error` says why a try failed. A delivery given up during the try stays
/// given up unless this try sent it.
pub async fn finish_delivery(
    db: &impl ConnectionTrait,
    id: i64,
    attempt: i32,
    status: DeliveryStatus,
    next_at: Option<DateTime<Utc>>,
    error: Option<String>,
    now: DateTime<Utc>,
) -> Result<TryEnd, DbErr> {
    let mut update = notification_delivery::Entity::update_many()
        .col_expr(notification_delivery::Column::Status, Expr::value(status))
        .col_expr(
            notification_delivery::Column::LeaseUntil,
            Expr::value(Option::<DateTime<Utc>>::None),
        )
        .col_expr(notification_delivery::Column::LastError, Expr::value(error));
    if status == DeliveryStatus::Sent {
        update = update.col_expr(notification_delivery::Column::SentAt, Expr::value(now));
    }
    if let Some(next_at) = next_at {
        update = update.col_expr(notification_delivery::Column::NextAt, Expr::value(next_at));
    }
    update = update
        .filter(notification_delivery::Column::Id.eq(id))
        .filter(notification_delivery::Column::Attempts.eq(attempt));
    if status != DeliveryStatus::Sent {
        update = update.filter(notification_delivery::Column::Status.eq(DeliveryStatus::Queued));
    }
    let finished = update.exec(db).await?;
    if finished.rows_affected == 1 {
        return Ok(TryEnd::Recorded);
    }
    // Given up meanwhile and not sent by this try: it stays given up, and the try's lease ends.
    let given_up = notification_delivery::Entity::update_many()
        .col_expr(
            notification_delivery::Column::LeaseUntil,
            Expr::value(Option::<DateTime<Utc>>::None),
        )
        .filter(notification_delivery::Column::Id.eq(id))
        .filter(notification_delivery::Column::Attempts.eq(attempt))
        .filter(notification_delivery::Column::Status.eq(DeliveryStatus::Failed))
        .exec(db)
        .await?;
    Ok(if given_up.rows_affected == 1 {
        TryEnd::GivenUp
    } else {
        TryEnd::Lost
    })
}

/// The event a delivery carries.
pub async fn event(
    db: &impl ConnectionTrait,
    id: i64,
) -> Result<Option<notification_event::Model>, DbErr> {
    notification_event::Entity::find_by_id(id).one(db).await
}

/// The latest event of `kind` about each of reservations `ids`: its key and notice.
pub async fn latest_about(
    db: &impl ConnectionTrait,
    ids: &[i64],
    kind: EventKind,
) -> Result<std::collections::HashMap<i64, (String, crate::domain::notify::Notice)>, DbErr> {
    let mut latest = std::collections::HashMap::new();
    if ids.is_empty() {
        return Ok(latest);
    }
    let rows = notification_event::Entity::find()
        .filter(notification_event::Column::ReservationId.is_in(ids.to_vec()))
        .filter(notification_event::Column::Kind.eq(kind))
        .order_by_asc(notification_event::Column::OccurredAt)
        .order_by_asc(notification_event::Column::Id)
        .all(db)
        .await?;
    for row in rows {
        let (Some(id), Ok(notice)) = (row.reservation_id, serde_json::from_str(&row.notice)) else {
            continue;
        };
        latest.insert(id, (row.event_key, notice));
    }
    Ok(latest)
}

/// The latest `limit` deliveries with `status` (any when `None`), newest first, as the admins'
/// view shows them.
pub async fn delivery_rows(
    db: &impl ConnectionTrait,
    status: Option<DeliveryStatus>,
    page: &PageRequest,
) -> Result<Page<DeliveryRow>, DbErr> {
    let mut query = notification_delivery::Entity::find()
        .find_also_related(notification_event::Entity)
        .order_by_desc(notification_delivery::Column::CreatedAt)
        .order_by_desc(notification_delivery::Column::Id)
        .limit(page.fetch());
    if let Some(status) = status {
        query = query.filter(notification_delivery::Column::Status.eq(status));
    }
    if let Some(after) = page.after {
        query = query.filter(super::before_key(
            notification_delivery::Column::CreatedAt,
            notification_delivery::Column::Id,
            after,
        ));
    }
    let rows = query.all(db).await?;
    let mut ids: Vec<i64> = rows.iter().map(|(row, _)| row.user_id).collect();
    ids.sort_unstable();
    ids.dedup();
    let mut hooks: Vec<i64> = rows
        .iter()
        .filter(|(row, _)| row.channel == Channel::Webhook)
        .map(|(row, _)| row.target_id)
        .collect();
    hooks.sort_unstable();
    hooks.dedup();
    let urls: Vec<(i64, String)> = if hooks.is_empty() {
        Vec::new()
    } else {
        webhook::Entity::find()
            .select_only()
            .column(webhook::Column::Id)
            .column(webhook::Column::Url)
            .filter(webhook::Column::Id.is_in(hooks))
            .into_tuple()
            .all(db)
            .await?
    };
    let emails: Vec<(i64, String)> = user::Entity::find()
        .select_only()
        .column(user::Column::Id)
        .column(user::Column::Email)
        .filter(user::Column::Id.is_in(ids))
        .into_tuple()
        .all(db)
        .await?;
    let rows = rows
        .into_iter()
        .filter_map(|(row, event)| event.map(|event| (row, event)))
        .map(|(row, event)| DeliveryRow {
            id: row.id,
            kind: event.kind,
            channel: row.channel,
            recipient: match row.channel {
                Channel::Email => &emails,
                Channel::Webhook => &urls,
            }
            .iter()
            .find(|(id, _)| *id == row.target_id)
            .map(|(_, name)| name.clone())
            .unwrap_or_default(),
            status: row.status,
            attempts: u32::try_from(row.attempts).unwrap_or(0),
            created_at: row.created_at,
            next_at: row.next_at,
            sent_at: row.sent_at,
            last_error: row.last_error,
        })
        .collect();
    Ok(Page::from_rows(rows, page, ListKind::Deliveries, |row| {
        Cursor::at(row.created_at, row.id)
    }))
}

/// How many deliveries are queued, sent and failed.
pub async fn delivery_counts(db: &impl ConnectionTrait) -> Result<DeliveryCounts, DbErr> {
    let counts: Vec<(DeliveryStatus, i64)> = notification_delivery::Entity::find()
        .select_only()
        .column(notification_delivery::Column::Status)
        .column_as(notification_delivery::Column::Id.count(), "n")
        .group_by(notification_delivery::Column::Status)
        .into_tuple()
        .all(db)
        .await?;
    let count = |wanted: DeliveryStatus| {
        counts
            .iter()
            .find(|(status, _)| *status == wanted)
            .map_or(0, |(_, n)| u64::try_from(*n).unwrap_or(0))
    };
    Ok(DeliveryCounts {
        queued: count(DeliveryStatus::Queued),
        sent: count(DeliveryStatus::Sent),
        failed: count(DeliveryStatus::Failed),
    })
}

/// The choices `user_id` made (kinds without a row take the defaults).
pub async fn preferences(
    db: &impl ConnectionTrait,
    user_id: i64,
) -> Result<Vec<notification_preference::Model>, DbErr> {
    notification_preference::Entity::find()
        .filter(notification_preference::Column::UserId.eq(user_id))
        .all(db)
        .await
}

/// The choices `users` made for notices of `kinds` (users without a row for a kind take its
/// default).
pub async fn preferences_for(
    db: &impl ConnectionTrait,
    users: &[i64],
    kinds: &[EventKind],
) -> Result<Vec<notification_preference::Model>, DbErr> {
    if users.is_empty() || kinds.is_empty() {
        return Ok(Vec::new());
    }
    notification_preference::Entity::find()
        .filter(notification_preference::Column::UserId.is_in(users.iter().copied()))
        .filter(notification_preference::Column::Kind.is_in(kinds.iter().copied()))
        .all(db)
        .await
}

/// Stores `user_id`'s choice for every kind in `choices`, replacing what was there.
pub async fn save_preferences(
    txn: &DatabaseTransaction,
    user_id: i64,
    choices: &[(EventKind, ChannelChoice)],
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    if choices.is_empty() {
        return Ok(());
    }
    notification_preference::Entity::insert_many(choices.iter().map(|(kind, choice)| {
        notification_preference::ActiveModel {
            user_id: Set(user_id),
            kind: Set(*kind),
            inbox: Set(choice.inbox),
            email: Set(choice.email),
            webhook: Set(choice.webhook),
            updated_at: Set(now),
        }
    }))
    .on_conflict(
        OnConflict::columns([
            notification_preference::Column::UserId,
            notification_preference::Column::Kind,
        ])
        .update_columns([
            notification_preference::Column::Inbox,
            notification_preference::Column::Email,
            notification_preference::Column::Webhook,
            notification_preference::Column::UpdatedAt,
        ])
        .to_owned(),
    )
    .exec_without_returning(txn)
    .await?;
    Ok(())
}

/// When the oldest delivery still queued was written, if any.
pub async fn oldest_queued(db: &impl ConnectionTrait) -> Result<Option<DateTime<Utc>>, DbErr> {
    notification_delivery::Entity::find()
        .select_only()
        .column(notification_delivery::Column::CreatedAt)
        .filter(notification_delivery::Column::Status.eq(DeliveryStatus::Queued))
        .order_by_asc(notification_delivery::Column::CreatedAt)
        .limit(1)
        .into_tuple()
        .one(db)
        .await
}
