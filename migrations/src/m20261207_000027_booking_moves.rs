//! Bookings that move off a failed GPU: the rest of a booking that had begun continues as a new
//! reservation that names the one it continues (`reservations.moved_from_id`) and why
//! (`reservations.move_cause`: `fell_off_bus`, `missing`, `retired`, `maintenance`); one that
//! moved whole to another node while running keeps when (`reservations.moved_at`), so its new
//! node waits for the old one's save of its workspace.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Reservations {
    Table,
    MovedFromId,
    MoveCause,
    MovedAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(Reservations::Table)
                    .add_column(big_integer_null(Reservations::MovedFromId))
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(Reservations::Table)
                    .add_column(string_len_null(Reservations::MoveCause, 16))
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(Reservations::Table)
                    .add_column(timestamp_with_time_zone_null(Reservations::MovedAt))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("ix_reservations_moved_from")
                    .table(Reservations::Table)
                    .col(Reservations::MovedFromId)
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_index(
                Index::drop()
                    .name("ix_reservations_moved_from")
                    .table(Reservations::Table)
                    .to_owned(),
            )
            .await?;
        for column in [
            Reservations::MovedAt,
            Reservations::MoveCause,
            Reservations::MovedFromId,
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
