//! `teams`.

use crate::domain::quota::Priority;
use sea_orm::entity::prelude::*;

/// A row of `teams`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "teams")]
pub struct Model {
    /// Primary key.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// Unique display name.
    pub name: String,
    /// Creation time (UTC).
    pub created_at: DateTimeUtc,
    /// Monthly budget in minor units (None: no budget).
    pub budget_minor: Option<i64>,
    /// `refuse` (bookings over the budget are refused) or `warn` (only warned).
    pub budget_mode: String,
    /// Share of the budget (percent) from which bookings carry a warning.
    pub budget_warn_percent: i16,
    /// Bookings beyond a quota go through as preemptible instead of being refused.
    pub allow_burst: bool,
    /// Priority class of the team's bookings unless one asks for a lower one.
    pub default_priority: Priority,
    /// Bookings by members of more GPU-hours than this wait for approval (None: never).
    pub approval_over_gpu_hours: Option<i32>,
    /// Hours a booking waits for approval before it is released.
    pub approval_expiry_hours: i32,
}

/// Relations of `teams`.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    /// A team has members.
    #[sea_orm(has_many = "super::team_member::Entity")]
    Members,
}

impl Related<super::team_member::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Members.def()
    }
}

impl ActiveModelBehavior for ActiveModel {}
