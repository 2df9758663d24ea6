//! `gpu_access_events`: what node agents did and saw on a GPU, with the lease it concerns.

use sea_orm::entity::prelude::*;

/// A row of `gpu_access_events`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "gpu_access_events")]
pub struct Model {
    /// Primary key.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// The GPU.
    pub gpu_id: i64,
    /// The lease (reservation) it concerns, if any.
    pub reservation_id: Option<i64>,
    /// When it happened (UTC).
    pub at: DateTimeUtc,
    /// `granted`, `revoked`, `terminated`, `killed`, `unauthorized` or `over_share`.
    pub kind: String,
    /// The process, for process events.
    pub pid: Option<i64>,
    /// Its owner's UID on the node.
    pub uid: Option<i64>,
    /// The owner's user name on the node, or the holder's login.
    pub user_name: Option<String>,
    /// GPU memory the process used, MiB (over-share events).
    pub memory_mib: Option<i64>,
}

/// Relations of `gpu_access_events`.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
