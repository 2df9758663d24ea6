//! `sessions`: server-side session records.

use sea_orm::entity::prelude::*;

/// A row of `sessions`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "sessions")]
pub struct Model {
    /// The session id (the cookie value).
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    /// The session's data as a JSON object.
    pub data: String,
    /// When the session ends unless it is used again (UTC).
    pub expires_at: DateTimeUtc,
}

/// `sessions` has no relations.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
