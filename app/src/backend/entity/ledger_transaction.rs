//! `ledger_transactions`.

use sea_orm::entity::prelude::*;

/// A row of `ledger_transactions`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "ledger_transactions")]
pub struct Model {
    /// Primary key.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// `grant`, `deduct`, `charge` or `refund`.
    pub kind: String,
    /// Whose wallet it moves.
    pub user_id: Option<i64>,
    /// The reservation paid or refunded.
    pub reservation_id: Option<i64>,
    /// The transaction this one corrects or refunds.
    pub reverses_id: Option<i64>,
    /// Why (shown to the wallet's owner): as typed, or the English words of Berth's own reason.
    pub reason: String,
    /// Berth's own reason as data (JSON of `domain::ledger::BerthReason`), shown in the
    /// viewer's language; NULL for reasons people typed.
    pub reason_code: Option<String>,
    /// Who did it (NULL: the command line or a background job).
    pub actor_id: Option<i64>,
    /// The payment provider that handled a top-up (`manual`).
    pub provider: Option<String>,
    /// When (UTC).
    pub created_at: DateTimeUtc,
}

/// Relations of `ledger_transactions` (none navigated).
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
