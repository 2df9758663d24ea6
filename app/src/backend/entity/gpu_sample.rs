//! `gpu_samples`: raw samples, kept for the raw window (default 24 h).

use sea_orm::entity::prelude::*;

/// A row of `gpu_samples`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "gpu_samples")]
pub struct Model {
    /// The GPU.
    #[sea_orm(primary_key, auto_increment = false)]
    pub gpu_id: i64,
    /// When it was read: UTC milliseconds since the epoch.
    #[sea_orm(primary_key, auto_increment = false)]
    pub at_ms: i64,
    /// GPU utilisation, percent.
    pub gpu_util: Option<i16>,
    /// Memory-controller utilisation, percent.
    pub mem_util: Option<i16>,
    /// Memory used, MiB.
    pub memory_used_mib: Option<i64>,
    /// Temperature, °C.
    pub temperature_c: Option<i16>,
    /// Power draw, mW.
    pub power_mw: Option<i32>,
    /// Enforced power limit, mW.
    pub power_limit_mw: Option<i32>,
    /// SM clock, MHz.
    pub sm_clock_mhz: Option<i32>,
    /// Clock throttle reasons (NVML bit mask).
    pub throttle_reasons: Option<i64>,
    /// Volatile corrected ECC errors.
    pub ecc_corrected: Option<i64>,
    /// Volatile uncorrected ECC errors.
    pub ecc_uncorrected: Option<i64>,
}

/// Relations of `gpu_samples`.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
