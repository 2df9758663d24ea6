//! `reservation_gpus.start_at` / `end_at`: each hold carries its reservation's window, with an
//! index by GPU and time, so that "what holds these GPUs during this range" reads only the holds
//! that touch the range (the calendar, find a slot, the booking check), not every hold the GPUs
//! ever had. Existing rows are filled from their reservations.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum ReservationGpus {
    Table,
    ReservationId,
    GpuId,
    StartAt,
    EndAt,
}

/// Placeholder for rows written before this migration, replaced at once below.
const EPOCH: &str = "1970-01-01T00:00:00+00:00";

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for column in [ReservationGpus::StartAt, ReservationGpus::EndAt] {
            manager
                .alter_table(
                    Table::alter()
                        .table(ReservationGpus::Table)
                        .add_column(timestamp_with_time_zone(column).default(EPOCH))
                        .to_owned(),
                )
                .await?;
        }
        manager
            .get_connection()
            .execute_unprepared(
                "UPDATE reservation_gpus SET \
                 start_at = (SELECT r.start_at FROM reservations r WHERE r.id = reservation_gpus.reservation_id), \
                 end_at = (SELECT r.end_at FROM reservations r WHERE r.id = reservation_gpus.reservation_id)",
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("ix_reservation_gpus_gpu_time")
                    .table(ReservationGpus::Table)
                    .col(ReservationGpus::GpuId)
                    .col(ReservationGpus::EndAt)
                    .col(ReservationGpus::StartAt)
                    .col(ReservationGpus::ReservationId)
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_index(
                Index::drop()
                    .name("ix_reservation_gpus_gpu_time")
                    .table(ReservationGpus::Table)
                    .to_owned(),
            )
            .await?;
        for column in [ReservationGpus::StartAt, ReservationGpus::EndAt] {
            manager
                .alter_table(
                    Table::alter()
                        .table(ReservationGpus::Table)
                        .drop_column(column)
                        .to_owned(),
                )
                .await?;
        }
        Ok(())
    }
}
