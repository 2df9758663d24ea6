//! `ledger_transactions` by reservation: the cost reports sum each booking's charges and
//! refunds, and cancelling or settling a booking looks up its charge; without this index both
//! read every transaction in the ledger.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum LedgerTransactions {
    Table,
    ReservationId,
    Kind,
}

const NAME: &str = "ix_ledger_transactions_reservation";

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_index(
                Index::create()
                    .name(NAME)
                    .table(LedgerTransactions::Table)
                    .col(LedgerTransactions::ReservationId)
                    .col(LedgerTransactions::Kind)
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_index(
                Index::drop()
                    .name(NAME)
                    .table(LedgerTransactions::Table)
                    .to_owned(),
            )
            .await
    }
}
