//! `env_profile_versions`: the versions of a profile; never changed once written.

use sea_orm::entity::prelude::*;

/// A row of `env_profile_versions`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "env_profile_versions")]
pub struct Model {
    /// Primary key (what a booking records).
    #[sea_orm(primary_key)]
    pub id: i64,
    /// The profile.
    pub profile_id: i64,
    /// 1, 2, … within the profile.
    pub number: i32,
    /// The spec as JSON.
    pub spec: String,
    /// SHA-256 of the spec, hex.
    pub content_hash: String,
    /// When it was made (UTC).
    pub created_at: DateTimeUtc,
}

/// Relations of `env_profile_versions`.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
