//! `team_quotas`: a team's quota for one GPU model.

use sea_orm::entity::prelude::*;

/// A row of `team_quotas`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "team_quotas")]
pub struct Model {
    /// The team.
    #[sea_orm(primary_key, auto_increment = false)]
    pub team_id: i64,
    /// The GPU model.
    #[sea_orm(primary_key, auto_increment = false)]
    pub model: String,
    /// GPUs the team may hold at the same instant with non-preemptible bookings.
    pub guaranteed_gpus: i32,
    /// GPU-hours a week (None: no weekly limit).
    pub weekly_gpu_hours: Option<i32>,
    /// Last change (UTC).
    pub updated_at: DateTimeUtc,
}

/// Relations of `team_quotas`.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
