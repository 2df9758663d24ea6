//! `ssh_keys`: users' SSH public keys, which node agents accept during their leases.

use sea_orm::entity::prelude::*;

/// A row of `ssh_keys`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "ssh_keys")]
pub struct Model {
    /// Primary key.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// Whose key.
    pub user_id: i64,
    /// The name its owner gave it.
    pub name: String,
    /// `algorithm base64`, without options or comment.
    pub public_key: String,
    /// `SHA256:…` (unique per user).
    pub fingerprint: String,
    /// When it was added (UTC).
    pub created_at: DateTimeUtc,
}

/// Relations of `ssh_keys`.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
