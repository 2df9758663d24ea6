//! `telemetry_state`: one row (id 1) recording how far samples have been rolled up.

use sea_orm::entity::prelude::*;

/// The row of `telemetry_state`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "telemetry_state")]
pub struct Model {
    /// Always 1.
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: i32,
    /// Minutes before this (UTC ms) are rolled up.
    pub rolled_up_to_ms: i64,
    /// The earliest minute (UTC ms) that received samples after it was rolled up, if any.
    pub dirty_from_ms: Option<i64>,
}

/// Relations of `telemetry_state`.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
