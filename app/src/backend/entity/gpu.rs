//! `gpus`: the GPUs of each node.

use crate::domain::gpu::GpuStatus;
use sea_orm::entity::prelude::*;

/// A row of `gpus`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "gpus")]
pub struct Model {
    /// Primary key.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// The node it sits in.
    pub node_id: i64,
    /// NVML device index on the node.
    pub device_index: i32,
    /// NVML UUID.
    pub uuid: String,
    /// Model name.
    pub model: String,
    /// Total memory in MiB.
    pub memory_mib: i64,
    /// Active, in maintenance or retired (checked by `ck_gpus_status`).
    pub status: GpuStatus,
    /// Bookable in fractions.
    pub shareable: bool,
    /// Price per whole-GPU hour in minor units.
    pub hourly_price_minor: i64,
    /// Creation time (UTC).
    pub created_at: DateTimeUtc,
    /// Last change (UTC).
    pub updated_at: DateTimeUtc,
    /// PCI bus id its agent reported.
    pub pci_bus_id: Option<String>,
    /// When its node's agent stopped reporting it (UTC); flagged, never deleted.
    pub vanished_at: Option<DateTimeUtc>,
    /// Reported by an agent and not yet accepted by a platform admin: not bookable, not in the
    /// inventory.
    pub pending: bool,
}

/// Relations of `gpus`.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    /// Each GPU belongs to a node.
    #[sea_orm(
        belongs_to = "super::node::Entity",
        from = "Column::NodeId",
        to = "super::node::Column::Id"
    )]
    Node,
}

impl Related<super::node::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Node.def()
    }
}

impl ActiveModelBehavior for ActiveModel {}
