//! `ledger_accounts`.

use sea_orm::entity::prelude::*;

/// A row of `ledger_accounts`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "ledger_accounts")]
pub struct Model {
    /// Primary key.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// `wallet`, `team_wallet`, `revenue` or `funding`.
    pub kind: String,
    /// The wallet's owner (NULL for the platform's accounts).
    pub user_id: Option<i64>,
    /// A wallet's balance (the sum of its entries, kept with each posting); 0 for the platform's
    /// accounts, whose balance is summed from their entries.
    pub balance_minor: i64,
    /// Creation time (UTC).
    pub created_at: DateTimeUtc,
    /// The owning team of a `team_wallet`.
    pub team_id: Option<i64>,
}

/// Relations of `ledger_accounts` (none navigated).
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
