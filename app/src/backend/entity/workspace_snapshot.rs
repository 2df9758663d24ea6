//! `workspace_snapshots`: a saved workspace, per user.

use sea_orm::entity::prelude::*;

/// A row of `workspace_snapshots`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "workspace_snapshots")]
pub struct Model {
    /// Id (increasing: the latest snapshot has the largest).
    #[sea_orm(primary_key)]
    pub id: i64,
    /// Whose workspace.
    pub user_id: i64,
    /// The lease it was saved at the end of (none: saved by hand).
    pub reservation_id: Option<i64>,
    /// The node it was saved from.
    pub node_id: Option<i64>,
    /// Files in it.
    pub files: i64,
    /// Bytes of all files.
    pub bytes: i64,
    /// Distinct chunks.
    pub chunks: i64,
    /// Chunks this save uploaded (the others were stored already).
    pub new_chunks: i64,
    /// Bytes this save uploaded.
    pub new_bytes: i64,
    /// The manifest, JSON.
    #[sea_orm(column_type = "Text")]
    pub manifest: String,
    /// When it was saved (UTC).
    pub created_at: DateTimeUtc,
}

/// Relations of `workspace_snapshots`.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
