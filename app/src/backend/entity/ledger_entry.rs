//! `ledger_entries`.

use sea_orm::entity::prelude::*;

/// A row of `ledger_entries`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "ledger_entries")]
pub struct Model {
    /// Primary key.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// The transaction.
    pub transaction_id: i64,
    /// The account.
    pub account_id: i64,
    /// Into the account (positive) or out of it (negative), never zero.
    pub amount_minor: i64,
}

/// Relations of `ledger_entries`.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    /// The transaction the entry belongs to.
    #[sea_orm(
        belongs_to = "super::ledger_transaction::Entity",
        from = "Column::TransactionId",
        to = "super::ledger_transaction::Column::Id"
    )]
    Transaction,
}

impl ActiveModelBehavior for ActiveModel {}
