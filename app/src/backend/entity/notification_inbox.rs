//! `notification_inbox`: the notices each user sees in the portal, read or not.

use sea_orm::entity::prelude::*;

/// A row of `notification_inbox`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "notification_inbox")]
pub struct Model {
    /// Primary key.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// Whose inbox.
    pub user_id: i64,
    /// The event.
    pub event_id: i64,
    /// When it arrived (UTC).
    pub created_at: DateTimeUtc,
    /// When its reader marked it read (None: unread).
    pub read_at: Option<DateTimeUtc>,
}

/// Relations of `notification_inbox`.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    /// The event it shows.
    #[sea_orm(
        belongs_to = "super::notification_event::Entity",
        from = "Column::EventId",
        to = "super::notification_event::Column::Id"
    )]
    Event,
}

impl Related<super::notification_event::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Event.def()
    }
}

impl ActiveModelBehavior for ActiveModel {}
