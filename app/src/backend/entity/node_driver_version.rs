//! `node_driver_versions`: the driver versions a node's agent reported, from when.

use sea_orm::entity::prelude::*;

/// A row of `node_driver_versions`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "node_driver_versions")]
pub struct Model {
    /// Id.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// The node.
    pub node_id: i64,
    /// The driver version (none: the agent reported none).
    pub driver_version: Option<String>,
    /// The agent's source (`nvml`, `simulated`).
    pub source: String,
    /// Reported from.
    pub from_at: DateTimeUtc,
}

/// Relations of `node_driver_versions`.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
