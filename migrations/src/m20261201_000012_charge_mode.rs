//! When a reservation is paid: `charge_mode` (`at_booking`, or `before_start`: charged by the
//! payment job at `charge_at`), and why one was released by Berth rather than cancelled by a
//! person (`released_reason`: `unpaid`, `maintenance` or `retired`). `payment_status` gains `pending` (not
//! charged yet) and `due` (the job found the wallet short).

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Reservations {
    Table,
    ChargeMode,
    ChargeAt,
    ReleasedReason,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        // One column per statement: SQLite adds one at a time.
        manager
            .alter_table(
                Table::alter()
                    .table(Reservations::Table)
                    .add_column(string_len(Reservations::ChargeMode, 16).default("at_booking"))
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(Reservations::Table)
                    .add_column(timestamp_with_time_zone_null(Reservations::ChargeAt))
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(Reservations::Table)
                    .add_column(string_len_null(Reservations::ReleasedReason, 16))
                    .to_owned(),
            )
            .await?;
        // The payment job's work list: reservations still to charge, by when.
        manager
            .create_index(
                Index::create()
                    .name("ix_reservations_charge_at")
                    .table(Reservations::Table)
                    .col(Reservations::ChargeAt)
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_index(
                Index::drop()
                    .name("ix_reservations_charge_at")
                    .table(Reservations::Table)
                    .to_owned(),
            )
            .await?;
        for column in [
            Reservations::ReleasedReason,
            Reservations::ChargeAt,
            Reservations::ChargeMode,
        ] {
            manager
                .alter_table(
                    Table::alter()
                        .table(Reservations::Table)
                        .drop_column(column)
                        .to_owned(),
                )
                .await?;
        }
        Ok(())
    }
}
