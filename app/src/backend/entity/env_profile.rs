//! `env_profiles`: environment profiles, a user's own, optionally shared with a team.

use sea_orm::entity::prelude::*;

/// A row of `env_profiles`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "env_profiles")]
pub struct Model {
    /// Primary key.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// Who made it (and alone edits it).
    pub owner_id: i64,
    /// Its members may book with it.
    pub team_id: Option<i64>,
    /// Its name.
    pub name: String,
    /// Deleted by its owner: no longer offered; bookings keep their version.
    pub archived: bool,
    /// When it was made (UTC).
    pub created_at: DateTimeUtc,
}

/// Relations of `env_profiles`.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
