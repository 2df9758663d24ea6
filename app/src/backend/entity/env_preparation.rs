//! `env_preparations`: what the node's agent last said about preparing a booking's environment.

use sea_orm::entity::prelude::*;

/// A row of `env_preparations`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "env_preparations")]
pub struct Model {
    /// The reservation.
    #[sea_orm(primary_key, auto_increment = false)]
    pub reservation_id: i64,
    /// The node that reported.
    pub node_id: i64,
    /// The content hash it prepared.
    pub content_hash: String,
    /// `waiting`, `preparing`, `ready` or `failed`.
    pub state: String,
    /// Found in the node's cache.
    pub cached: bool,
    /// The end of a failed build's log.
    pub log: String,
    /// When the agent said so (UTC).
    pub at: DateTimeUtc,
}

/// Relations of `env_preparations`.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
