//! `api_tokens`: personal tokens, stored as SHA-256 hashes.

use sea_orm::entity::prelude::*;

/// A row of `api_tokens`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "api_tokens")]
pub struct Model {
    /// Primary key.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// Owner.
    pub user_id: i64,
    /// The owner's label for it.
    pub name: String,
    /// Hex SHA-256 of the token (unique).
    pub token_hash: String,
    /// Creation time (UTC).
    pub created_at: DateTimeUtc,
    /// Last successful use (UTC).
    pub last_used_at: Option<DateTimeUtc>,
    /// When it was revoked (UTC); revoked tokens never authenticate.
    pub revoked_at: Option<DateTimeUtc>,
    /// `read` or `write` (`ck_api_tokens_scope`).
    pub scope: String,
    /// When it stops working (UTC); `None`: never.
    pub expires_at: Option<DateTimeUtc>,
}

/// Relations of `api_tokens`.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    /// Each token belongs to a user.
    #[sea_orm(
        belongs_to = "super::user::Entity",
        from = "Column::UserId",
        to = "super::user::Column::Id"
    )]
    User,
}

impl Related<super::user::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::User.def()
    }
}

impl ActiveModelBehavior for ActiveModel {}
