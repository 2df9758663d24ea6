//! `gpu_rollups`: one row per GPU and minute (min / avg / max), kept for 30 days by default.

use sea_orm::entity::prelude::*;

/// A row of `gpu_rollups`.
#[derive(Clone, Debug, PartialEq, DeriveEntityModel)]
#[sea_orm(table_name = "gpu_rollups")]
pub struct Model {
    /// The GPU.
    #[sea_orm(primary_key, auto_increment = false)]
    pub gpu_id: i64,
    /// Start of the minute: UTC milliseconds since the epoch.
    #[sea_orm(primary_key, auto_increment = false)]
    pub minute_ms: i64,
    /// Samples in the minute.
    pub samples: i32,
    /// GPU utilisation, percent.
    pub util_min: Option<f64>,
    /// GPU utilisation, percent.
    pub util_avg: Option<f64>,
    /// GPU utilisation, percent.
    pub util_max: Option<f64>,
    /// Memory used, MiB.
    pub mem_min: Option<f64>,
    /// Memory used, MiB.
    pub mem_avg: Option<f64>,
    /// Memory used, MiB.
    pub mem_max: Option<f64>,
    /// Temperature, °C.
    pub temp_min: Option<f64>,
    /// Temperature, °C.
    pub temp_avg: Option<f64>,
    /// Temperature, °C.
    pub temp_max: Option<f64>,
    /// Power draw, W.
    pub power_min: Option<f64>,
    /// Power draw, W.
    pub power_avg: Option<f64>,
    /// Power draw, W.
    pub power_max: Option<f64>,
}

/// Relations of `gpu_rollups`.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
