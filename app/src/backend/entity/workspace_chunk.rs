//! `workspace_chunks`: the chunks the workspace store holds for a user.

use sea_orm::entity::prelude::*;

/// A row of `workspace_chunks`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "workspace_chunks")]
pub struct Model {
    /// Whose.
    #[sea_orm(primary_key, auto_increment = false)]
    pub user_id: i64,
    /// SHA-256 of its bytes, hex.
    #[sea_orm(primary_key, auto_increment = false)]
    pub hash: String,
    /// Its length.
    pub size: i64,
    /// When it was stored (UTC).
    pub created_at: DateTimeUtc,
}

/// Relations of `workspace_chunks`.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
