//! Reservations: `reservations` (owner, window, share, price, status), the GPUs each holds
//! (`reservation_gpus`), `maintenance_windows` that block booking, and `gpu_slot_load`: one row per
//! GPU and 15-minute slot with the quarters booked, whose CHECK (at most a whole GPU) is the
//! database's own guard on capacity, whatever the application does.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Reservations {
    Table,
    Id,
    OwnerId,
    NodeId,
    Model,
    Quarters,
    StartAt,
    EndAt,
    Status,
    PriceMinor,
    CreatedAt,
    CancelledAt,
    CancelledBy,
}

#[derive(DeriveIden)]
enum ReservationGpus {
    Table,
    ReservationId,
    GpuId,
}

#[derive(DeriveIden)]
enum MaintenanceWindows {
    Table,
    Id,
    GpuId,
    StartAt,
    EndAt,
    Reason,
    CreatedBy,
    CreatedAt,
}

#[derive(DeriveIden)]
enum GpuSlotLoad {
    Table,
    GpuId,
    SlotStart,
    Quarters,
}

#[derive(DeriveIden)]
enum Users {
    Table,
    Id,
}

#[derive(DeriveIden)]
enum Gpus {
    Table,
    Id,
}

#[derive(DeriveIden)]
enum Nodes {
    Table,
    Id,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(Reservations::Table)
                    .col(big_pk_auto(Reservations::Id))
                    .col(big_integer(Reservations::OwnerId))
                    .col(big_integer(Reservations::NodeId))
                    .col(string_len(Reservations::Model, 128))
                    .col(small_integer(Reservations::Quarters))
                    .col(timestamp_with_time_zone(Reservations::StartAt))
                    .col(timestamp_with_time_zone(Reservations::EndAt))
                    .col(string_len(Reservations::Status, 16))
                    .col(big_integer(Reservations::PriceMinor))
                    .col(timestamp_with_time_zone(Reservations::CreatedAt))
                    .col(timestamp_with_time_zone_null(Reservations::CancelledAt))
                    .col(big_integer_null(Reservations::CancelledBy))
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_reservations_owner")
                            .from(Reservations::Table, Reservations::OwnerId)
                            .to(Users::Table, Users::Id),
                    )
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_reservations_node")
                            .from(Reservations::Table, Reservations::NodeId)
                            .to(Nodes::Table, Nodes::Id),
                    )
                    .check(Check::named(
                        "ck_reservations_window",
                        Expr::cust("end_at > start_at"),
                    ))
                    .check(Check::named(
                        "ck_reservations_quarters",
                        Expr::cust("quarters IN (1, 2, 4)"),
                    ))
                    .check(Check::named(
                        "ck_reservations_status",
                        Expr::cust("status IN ('confirmed', 'cancelled')"),
                    ))
                    .check(Check::named(
                        "ck_reservations_price",
                        Expr::cust("price_minor >= 0"),
                    ))
                    .to_owned(),
            )
            .await?;
        for (name, columns) in [
            (
                "ix_reservations_window",
                vec![Reservations::StartAt, Reservations::EndAt],
            ),
            (
                "ix_reservations_owner",
                vec![Reservations::OwnerId, Reservations::StartAt],
            ),
        ] {
            let mut index = Index::create();
            index.name(name).table(Reservations::Table);
            for column in columns {
                index.col(column);
            }
            manager.create_index(index.to_owned()).await?;
        }

        manager
            .create_table(
                Table::create()
                    .table(ReservationGpus::Table)
                    .col(big_integer(ReservationGpus::ReservationId))
                    .col(big_integer(ReservationGpus::GpuId))
                    .primary_key(
                        Index::create()
                            .name("pk_reservation_gpus")
                            .col(ReservationGpus::ReservationId)
                            .col(ReservationGpus::GpuId),
                    )
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_reservation_gpus_reservation")
                            .from(ReservationGpus::Table, ReservationGpus::ReservationId)
                            .to(Reservations::Table, Reservations::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_reservation_gpus_gpu")
                            .from(ReservationGpus::Table, ReservationGpus::GpuId)
                            .to(Gpus::Table, Gpus::Id),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("ix_reservation_gpus_gpu")
                    .table(ReservationGpus::Table)
                    .col(ReservationGpus::GpuId)
                    .col(ReservationGpus::ReservationId)
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(MaintenanceWindows::Table)
                    .col(big_pk_auto(MaintenanceWindows::Id))
                    .col(big_integer(MaintenanceWindows::GpuId))
                    .col(timestamp_with_time_zone(MaintenanceWindows::StartAt))
                    .col(timestamp_with_time_zone(MaintenanceWindows::EndAt))
                    .col(string_len(MaintenanceWindows::Reason, 200))
                    .col(big_integer_null(MaintenanceWindows::CreatedBy))
                    .col(timestamp_with_time_zone(MaintenanceWindows::CreatedAt))
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_maintenance_windows_gpu")
                            .from(MaintenanceWindows::Table, MaintenanceWindows::GpuId)
                            .to(Gpus::Table, Gpus::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .check(Check::named(
                        "ck_maintenance_windows_window",
                        Expr::cust("end_at > start_at"),
                    ))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("ix_maintenance_windows_gpu")
                    .table(MaintenanceWindows::Table)
                    .col(MaintenanceWindows::GpuId)
                    .col(MaintenanceWindows::StartAt)
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(GpuSlotLoad::Table)
                    .col(big_integer(GpuSlotLoad::GpuId))
                    .col(timestamp_with_time_zone(GpuSlotLoad::SlotStart))
                    .col(small_integer(GpuSlotLoad::Quarters))
                    .primary_key(
                        Index::create()
                            .name("pk_gpu_slot_load")
                            .col(GpuSlotLoad::GpuId)
                            .col(GpuSlotLoad::SlotStart),
                    )
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_gpu_slot_load_gpu")
                            .from(GpuSlotLoad::Table, GpuSlotLoad::GpuId)
                            .to(Gpus::Table, Gpus::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .check(Check::named(
                        "ck_gpu_slot_load_capacity",
                        Expr::cust("quarters BETWEEN 0 AND 4"),
                    ))
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for table in [
            GpuSlotLoad::Table.into_iden(),
            MaintenanceWindows::Table.into_iden(),
            ReservationGpus::Table.into_iden(),
            Reservations::Table.into_iden(),
        ] {
            manager
                .drop_table(Table::drop().table(table).to_owned())
                .await?;
        }
        Ok(())
    }
}
