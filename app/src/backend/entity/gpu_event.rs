//! `gpu_events`: XID errors, throttle changes, GPUs appearing and vanishing.

use sea_orm::entity::prelude::*;

/// A row of `gpu_events`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "gpu_events")]
pub struct Model {
    /// Primary key.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// The GPU.
    pub gpu_id: i64,
    /// When it happened (UTC).
    pub at: DateTimeUtc,
    /// `xid`, `throttle`, `added`, `vanished` or `returned` (checked by `ck_gpu_events_kind`).
    pub kind: String,
    /// The XID or the throttle mask.
    pub code: Option<i64>,
}

/// Relations of `gpu_events`.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
