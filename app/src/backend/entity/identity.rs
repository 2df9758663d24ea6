//! `identities`: a user's accounts at identity providers, keyed by (provider, subject).

use sea_orm::entity::prelude::*;

/// A row of `identities`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "identities")]
pub struct Model {
    /// Primary key.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// The Berth user.
    pub user_id: i64,
    /// Provider id from the settings (`[oidc.<id>]`).
    pub provider: String,
    /// The provider's `sub` claim: stable and unique per provider.
    pub subject: String,
    /// When it was first used (UTC).
    pub created_at: DateTimeUtc,
}

/// Relations of `identities`.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
