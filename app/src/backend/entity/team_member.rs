//! `team_members`: who belongs to which team, as `member` or `admin`.

use sea_orm::entity::prelude::*;

/// A row of `team_members`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "team_members")]
pub struct Model {
    /// The team.
    #[sea_orm(primary_key, auto_increment = false)]
    pub team_id: i64,
    /// The member.
    #[sea_orm(primary_key, auto_increment = false)]
    pub user_id: i64,
    /// `member` or `admin`.
    pub role: String,
    /// When they joined (UTC).
    pub created_at: DateTimeUtc,
}

/// Relations of `team_members`.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    /// The team.
    #[sea_orm(
        belongs_to = "super::team::Entity",
        from = "Column::TeamId",
        to = "super::team::Column::Id"
    )]
    Team,
    /// The member.
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

impl Related<super::team::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Team.def()
    }
}

impl ActiveModelBehavior for ActiveModel {}
