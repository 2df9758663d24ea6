//! `payment_cards`: the cards users saved at Stripe (brand, last four, expiry; never the number).

use sea_orm::entity::prelude::*;

/// A row of `payment_cards`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "payment_cards")]
pub struct Model {
    /// Id.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// Whose card.
    pub user_id: i64,
    /// Stripe's PaymentMethod (`pm_…`).
    pub payment_method_id: String,
    /// `visa`, `mastercard`, …
    pub brand: String,
    /// The last four digits.
    pub last4: String,
    /// Expiry month.
    pub exp_month: i32,
    /// Expiry year.
    pub exp_year: i32,
    /// Saved.
    pub created_at: DateTimeUtc,
    /// Removed by its holder (detached at Stripe).
    pub removed_at: Option<DateTimeUtc>,
}

/// Relations of `payment_cards`.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
