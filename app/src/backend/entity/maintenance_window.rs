//! `maintenance_windows`: times a GPU cannot be booked.

use sea_orm::entity::prelude::*;

/// A row of `maintenance_windows`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "maintenance_windows")]
pub struct Model {
    /// Primary key.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// The GPU.
    pub gpu_id: i64,
    /// Start (UTC).
    pub start_at: DateTimeUtc,
    /// End (UTC, exclusive).
    pub end_at: DateTimeUtc,
    /// Why (English words where Berth set it).
    pub reason: String,
    /// Why Berth set it, as data (JSON of `domain::maintenance::BerthMaintenance`); NULL for an
    /// admin's.
    pub reason_code: Option<String>,
    /// The platform admin who set it.
    pub created_by: Option<i64>,
    /// When it was set (UTC).
    pub created_at: DateTimeUtc,
}

/// `maintenance_windows` has no navigable relations.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
