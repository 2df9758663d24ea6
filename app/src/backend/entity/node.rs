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
    /// `nvml` or `simulated`: where its agent's values come from (none before the first report).
    pub agent_source: Option<String>,
    /// NVIDIA driver version its agent reported.
    pub driver_version: Option<String>,
    /// Last time its agent reported (UTC).
    pub last_seen_at: Option<DateTimeUtc>,
    /// Seconds between its agent's samples.
    pub report_interval_s: Option<i32>,
    /// GPUs its agent reports for the first time are accepted at once (not pending).
    pub accept_new_gpus: bool,
    /// When platform admins were told its agent went silent (None: reporting, or not told).
    pub silence_told_at: Option<DateTimeUtc>,
    /// What its agent does about processes of people holding no lease on a GPU: `off`,
    /// `report` or `terminate`.
    pub intruder_policy: String,
    /// Whether GPUs with no lease at all are protected too.
    pub protect_idle: bool,
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
