//! `idle_policies`: the platform's idle policy (`scope` = `platform`) and teams' overrides
//! (`team:<id>`).

use sea_orm::entity::prelude::*;

/// A row of `idle_policies`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "idle_policies")]
pub struct Model {
    /// `platform` or `team:<id>`.
    #[sea_orm(primary_key, auto_increment = false)]
    pub scope: String,
    /// The team it applies to (none: the platform's default).
    pub team_id: Option<i64>,
    /// Idle below this utilisation, percent.
    pub threshold_percent: i16,
    /// Minutes idle before the action.
    pub window_minutes: i32,
    /// Warning minutes, comma-separated (`60,105`).
    pub warnings: String,
    /// `off`, `warn` or `release`.
    pub action: String,
    /// Exempt: bookings of at most this many GPUs …
    pub exempt_max_gpus: i32,
    /// … and at most this many hours.
    pub exempt_max_hours: i32,
    /// Exempt priority classes, comma-separated.
    pub exempt_priorities: String,
    /// Share of the unused remainder refunded on release, percent.
    pub refund_percent: i16,
    /// Last change (UTC).
    pub updated_at: DateTimeUtc,
    /// Who changed it last.
    pub updated_by: Option<i64>,
}

/// Relations of `idle_policies`.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
