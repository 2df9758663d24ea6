//! `gpu_live`: the latest reading of each GPU, for the live list, the GPU page and `/metrics`.

use sea_orm::entity::prelude::*;

/// A row of `gpu_live`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "gpu_live")]
pub struct Model {
    /// The GPU.
    #[sea_orm(primary_key, auto_increment = false)]
    pub gpu_id: i64,
    /// When the values were read (UTC).
    pub at: DateTimeUtc,
    /// The values (JSON of `domain::telemetry::Readings`).
    pub readings: String,
    /// Compute processes (JSON list of `domain::telemetry::GpuProcess`).
    pub processes: String,
}

/// Relations of `gpu_live`.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
