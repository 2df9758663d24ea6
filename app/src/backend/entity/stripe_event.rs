//! `stripe_events`: the webhook events already processed (a replay changes nothing).

use sea_orm::entity::prelude::*;

/// A row of `stripe_events`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "stripe_events")]
pub struct Model {
    /// Stripe's event id (`evt_…`).
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    /// Its type (`payment_intent.succeeded`).
    pub kind: String,
    /// Processed.
    pub received_at: DateTimeUtc,
}

/// Relations of `stripe_events`.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
