//! `teams`.

use sea_orm::entity::prelude::*;

/// A row of `teams`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "teams")]
pub struct Model {
    /// Primary key.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// Unique display name.
    pub name: String,
    /// Creation time (UTC).
    pub created_at: DateTimeUtc,
}

/// Relations of `teams`.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    /// A team has members.
    #[sea_orm(has_many = "super::team_member::Entity")]
    Members,
}

impl Related<super::team_member::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Members.def()
    }
}

impl ActiveModelBehavior for ActiveModel {}
