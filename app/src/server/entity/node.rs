//! `nodes`: GPU hosts.

use sea_orm::entity::prelude::*;

/// A row of `nodes`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "nodes")]
pub struct Model {
    /// Primary key.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// Unique display name.
    pub name: String,
    /// Host name.
    pub hostname: String,
    /// Demo data, not real hardware.
    pub is_demo: bool,
    /// Creation time (UTC).
    pub created_at: DateTimeUtc,
}

/// Relations of `nodes`.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    /// A node has GPUs.
    #[sea_orm(has_many = "super::gpu::Entity")]
    Gpus,
}

impl Related<super::gpu::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Gpus.def()
    }
}

impl ActiveModelBehavior for ActiveModel {}
