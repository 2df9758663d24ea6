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
    /// Monthly budget in minor units (None: no budget).
    pub budget_minor: Option<i64>,
    /// `refuse` (bookings over the budget are refused) or `warn` (only warned).
    pub budget_mode: String,
    /// Share of the budget (percent) from which bookings carry a warning.
    pub budget_warn_percent: i16,
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
