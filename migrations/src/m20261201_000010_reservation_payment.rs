//! `reservations.payment_status`: `paid` (charged from the owner's wallet when booked), `free`
//! (a price of zero), or `unpaid` (booked before Berth took payments).

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Reservations {
    Table,
    PaymentStatus,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(Reservations::Table)
                    .add_column(string_len(Reservations::PaymentStatus, 16).default("unpaid"))
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(Reservations::Table)
                    .drop_column(Reservations::PaymentStatus)
                    .to_owned(),
            )
            .await
    }
}
