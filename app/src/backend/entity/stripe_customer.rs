//! `stripe_customers`: each user's customer at Stripe.

use sea_orm::entity::prelude::*;

/// A row of `stripe_customers`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "stripe_customers")]
pub struct Model {
    /// The user.
    #[sea_orm(primary_key, auto_increment = false)]
    pub user_id: i64,
    /// Stripe's id (`cus_…`).
    pub customer_id: String,
    /// Created.
    pub created_at: DateTimeUtc,
}

/// Relations of `stripe_customers`.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
