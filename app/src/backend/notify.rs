//! Telling people: services record events in the transaction of the change that causes them
//! ([`record`]); the worker ([`run`]) hands each due event to its recipients' inboxes, once,
//! whichever replica gets to it first; a user reads and marks their inbox.
//!
//! The worker runs every few seconds on every replica and is woken at once after a change that
//! recorded events ([`Wake`]). Each event is claimed in its own short write transaction (a row
//! lock that other replicas skip on PostgreSQL, the write lock on SQLite), so a crash between two
//! events loses nothing and a replica never hands out an event another one already has.

use crate::backend::auth::actor::Actor;
use crate::backend::db;
use crate::backend::entity::reservation;
use crate::backend::state::AppState;
use crate::domain::notify::{EventKind, INBOX_PAGE, InboxItem, NewEvent};
use crate::domain::reservation::PaymentStatus;
use crate::error::AppError;
use chrono::{DateTime, Utc};
use sea_orm::{DatabaseConnection, DatabaseTransaction, DbErr};

/// Most events one run hands out.
const BATCH: u64 = 500;

/// Wakes the worker when a change recorded events, so a new notice reaches the inbox at once
/// rather than at the next tick (one per application).
#[derive(Debug, Default)]
pub struct Wake(tokio::sync::Notify);

impl Wake {
    /// After a commit that recorded events.
    pub fn poke(&self) {
        self.0.notify_one();
    }

    /// Waits for the next poke (or returns at once when one came since the last wait).
    pub async fn poked(&self) {
        self.0.notified().await;
    }
}

/// Records `events` in `txn`, the transaction of the change that causes them: they exist if and
/// only if the change commits. An event whose key is already recorded is left as it is.
pub async fn record(txn: &DatabaseTransaction, events: &[NewEvent]) -> Result<(), DbErr> {
    for event in events {
        db::notify::enqueue(txn, event).await?;
    }
    Ok(())
}

/// Reservation `id` no longer holds its GPUs: its reminders not sent yet are dropped and
/// `events` (what its owner is told) recorded, in the transaction that withdrew it.
pub async fn withdrawn(
    txn: &DatabaseTransaction,
    id: i64,
    events: &[NewEvent],
) -> Result<(), DbErr> {
    db::notify::drop_reminders(txn, id).await?;
    record(txn, events).await
}

/// What one run of the worker did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Outcome {
    /// Events handed to their recipients.
    pub handed_out: u32,
    /// Reminders dropped because their reservation no longer holds its GPUs.
    pub dropped: u32,
}

/// Hands every event due at `now` to its recipients' inboxes.
pub async fn run(db: &DatabaseConnection, now: DateTime<Utc>) -> Result<Outcome, DbErr> {
    let mut outcome = Outcome::default();
    for id in db::notify::due_ids(db, now, BATCH).await? {
        let txn = db::begin_write(db).await?;
        let Some(event) = db::notify::claim(&txn, id).await? else {
            // Another replica has it.
            txn.rollback().await?;
            continue;
        };
        let reminder = matches!(event.kind, EventKind::StartingSoon | EventKind::EndingSoon);
        let holds = match (reminder, event.reservation_id) {
            (true, Some(id)) => db::reservations::row(&txn, id).await?.is_some_and(|row| {
                row.status == reservation::Status::Confirmed
                    && row.payment_status != PaymentStatus::AwaitingApproval
            }),
            _ => true,
        };
        let users = match (holds, event.user_id, event.team_id) {
            (false, _, _) => Vec::new(),
            (true, Some(user), _) => vec![user],
            (true, None, Some(team)) => db::notify::team_admins(&txn, team).await?,
            (true, None, None) => Vec::new(),
        };
        db::notify::hand_out(&txn, event.id, &users, now).await?;
        txn.commit().await?;
        if holds {
            outcome.handed_out += 1;
        } else {
            outcome.dropped += 1;
        }
    }
    Ok(outcome)
}

/// The actor's latest notices, newest first.
pub async fn inbox(state: &AppState, actor: &Actor) -> Result<Vec<InboxItem>, AppError> {
    Ok(db::notify::inbox(&state.db, actor.user.id, INBOX_PAGE).await?)
}

/// How many notices the actor has not read (the bell's count).
pub async fn unread(state: &AppState, actor: &Actor) -> Result<u32, AppError> {
    Ok(db::notify::unread(&state.db, actor.user.id).await?)
}

/// Marks the actor's notice `id` read (`None`: every one); another user's notice is not found.
pub async fn mark_read(
    state: &AppState,
    actor: &Actor,
    id: Option<i64>,
    now: DateTime<Utc>,
) -> Result<u64, AppError> {
    let marked = db::notify::mark_read(&state.db, actor.user.id, id, now).await?;
    // Nothing marked: already read, or not the actor's (told apart only then).
    if marked == 0
        && let Some(id) = id
        && !db::notify::owns(&state.db, actor.user.id, id).await?
    {
        return Err(AppError::NotFound(format!("notice {id}")));
    }
    Ok(marked)
}
