//! `notification_events`: the outbox, one row per event worth a message, written in the
//! transaction of the change that causes it.

use crate::domain::notify::EventKind;
use sea_orm::entity::prelude::*;

/// A row of `notification_events`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "notification_events")]
pub struct Model {
    /// Primary key.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// What happened.
    pub kind: EventKind,
    /// Unique per event (`booking_confirmed:42`): the same key again writes nothing.
    pub event_key: String,
    /// The user it is for (or `team_id`).
    pub user_id: Option<i64>,
    /// The team whose admins it is for (or `user_id`).
    pub team_id: Option<i64>,
    /// The reservation it is about.
    pub reservation_id: Option<i64>,
    /// What it says (`domain::notify::Notice` as JSON).
    pub notice: String,
    /// When it happened (UTC).
    pub occurred_at: DateTimeUtc,
    /// When it is handed to its recipients (UTC).
    pub due_at: DateTimeUtc,
    /// When the worker handed it out (None: still queued).
    pub fanned_out_at: Option<DateTimeUtc>,
}

/// Relations of `notification_events` (none: the log outlives what it describes).
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
