//! `notification_preferences`: where a user wants notices of one kind (no row: the defaults).

use crate::domain::notify::EventKind;
use sea_orm::entity::prelude::*;

/// A row of `notification_preferences`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "notification_preferences")]
pub struct Model {
    /// Whose choice.
    #[sea_orm(primary_key, auto_increment = false)]
    pub user_id: i64,
    /// For which kind.
    #[sea_orm(primary_key, auto_increment = false)]
    pub kind: EventKind,
    /// In the portal's inbox.
    pub inbox: bool,
    /// By e-mail.
    pub email: bool,
    /// To the user's webhooks.
    pub webhook: bool,
    /// Last change (UTC).
    pub updated_at: DateTimeUtc,
}

/// Relations of `notification_preferences` (none followed).
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}

impl Model {
    /// The choice this row stores.
    pub fn choice(&self) -> crate::domain::notify::ChannelChoice {
        crate::domain::notify::ChannelChoice {
            inbox: self.inbox,
            email: self.email,
            webhook: self.webhook,
        }
    }
}
