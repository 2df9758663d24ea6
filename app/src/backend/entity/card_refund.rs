//! `card_refunds`: refunds sent back to the card that paid a booking, booked out of the wallet
//! when the booking was refunded, then sent to Stripe.

use sea_orm::entity::prelude::*;

/// A row of `card_refunds`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "card_refunds")]
pub struct Model {
    /// Id (Berth's record: `cr_{id}` at Stripe).
    #[sea_orm(primary_key)]
    pub id: i64,
    /// The card payment refunded.
    pub payment_id: i64,
    /// Whose card.
    pub user_id: i64,
    /// The booking refunded.
    pub reservation_id: Option<i64>,
    /// Minor units.
    pub amount_minor: i64,
    /// Stripe's Refund (`re_…`), once Stripe answered.
    pub refund_id: Option<String>,
    /// `pending`, `succeeded`, `failed`.
    pub status: String,
    /// Why Stripe refused it (the amount went back to credits).
    pub failure: Option<String>,
    /// The deduction that took it out of the wallet.
    pub ledger_transaction_id: i64,
    /// Booked.
    pub created_at: DateTimeUtc,
    /// Sent or given up.
    pub settled_at: Option<DateTimeUtc>,
}

/// Relations of `card_refunds`.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
