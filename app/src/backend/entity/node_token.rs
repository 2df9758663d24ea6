//! `node_tokens`: the tokens node agents report with, stored as SHA-256 hashes.

use sea_orm::entity::prelude::*;

/// A row of `node_tokens`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "node_tokens")]
pub struct Model {
    /// Primary key.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// The node the token reports for.
    pub node_id: i64,
    /// Hex SHA-256 of the token (unique).
    pub token_hash: String,
    /// Creation time (UTC).
    pub created_at: DateTimeUtc,
    /// Last successful use (UTC).
    pub last_used_at: Option<DateTimeUtc>,
    /// When it was revoked (UTC).
    pub revoked_at: Option<DateTimeUtc>,
}

/// Relations of `node_tokens`.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
