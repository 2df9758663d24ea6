//! `notification_deliveries`: a notice on its way out of the portal (an e-mail, a webhook call),
//! once per event, channel and target, with its tries.

use crate::domain::notify::{Channel, DeliveryStatus};
use sea_orm::entity::prelude::*;

/// A row of `notification_deliveries`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "notification_deliveries")]
pub struct Model {
    /// Primary key.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// The event it delivers.
    pub event_id: i64,
    /// How.
    pub channel: Channel,
    /// Where: the recipient (e-mail) or the webhook.
    pub target_id: i64,
    /// Whose: the recipient, or the webhook's owner.
    pub user_id: i64,
    /// Queued, sent or failed.
    pub status: DeliveryStatus,
    /// Tries so far.
    pub attempts: i32,
    /// When it is tried next (while queued).
    pub next_at: DateTimeUtc,
    /// A sender is trying it until then (None: nobody).
    pub lease_until: Option<DateTimeUtc>,
    /// Why the last try failed.
    pub last_error: Option<String>,
    /// When the recipient's server accepted it.
    pub sent_at: Option<DateTimeUtc>,
    /// When it was queued.
    pub created_at: DateTimeUtc,
}

/// Relations of `notification_deliveries`.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    /// The event it delivers.
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
