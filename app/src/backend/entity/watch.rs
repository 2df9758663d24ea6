//! `watches`: someone waiting for a window of a model to come free.

use sea_orm::entity::prelude::*;

/// A row of `watches`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "watches")]
pub struct Model {
    /// Id.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// The watcher.
    pub user_id: i64,
    /// The team a booking from it is for (none: personal).
    pub team_id: Option<i64>,
    /// The GPU model.
    pub model: String,
    /// GPUs on one node.
    pub gpu_count: i32,
    /// Share of each, in quarters.
    pub quarters: i16,
    /// Length of the window wanted, minutes.
    pub length_minutes: i32,
    /// The window may start at this time at the earliest (UTC).
    pub from_at: DateTimeUtc,
    /// … and must end by this time (UTC).
    pub to_at: DateTimeUtc,
    /// `watching`, `served`, `expired` or `cancelled`.
    pub state: String,
    /// When it was made.
    pub created_at: DateTimeUtc,
    /// When it stopped watching.
    pub ended_at: Option<DateTimeUtc>,
    /// The booking that served it.
    pub reservation_id: Option<i64>,
}

/// Relations of `watches`.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
