//! `card_payments`: every payment Berth asked Stripe for, its state, and the ledger transaction
//! that booked it once Stripe confirmed it.

use sea_orm::entity::prelude::*;

/// A row of `card_payments`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "card_payments")]
pub struct Model {
    /// Id (Berth's record: `cp_{id}` at Stripe).
    #[sea_orm(primary_key)]
    pub id: i64,
    /// Who pays.
    pub user_id: i64,
    /// `top_up` or `booking`.
    pub purpose: String,
    /// The booking it pays, if any.
    pub reservation_id: Option<i64>,
    /// The card charged.
    pub card_id: i64,
    /// Minor units.
    pub amount_minor: i64,
    /// ISO code.
    pub currency: String,
    /// Stripe's PaymentIntent (`pi_…`), once Stripe answered.
    pub intent_id: Option<String>,
    /// `pending`, `requires_action`, `succeeded`, `failed`.
    pub status: String,
    /// Why it failed.
    pub failure: Option<String>,
    /// The ledger transaction that booked it.
    pub ledger_transaction_id: Option<i64>,
    /// Asked.
    pub created_at: DateTimeUtc,
    /// Confirmed or failed.
    pub settled_at: Option<DateTimeUtc>,
    /// Where its refunds go: `card` or `credits` (the setting when it was paid).
    pub refund_to: String,
    /// Stripe's charge (`ch_…`), once it succeeded: what Stripe's balance transactions name.
    pub charge_id: Option<String>,
}

/// Relations of `card_payments`.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
