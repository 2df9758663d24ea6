//! Watches: "tell me when N × <model> (share) is free for H hours between <from> and <to>"
//! (`watches`), and the windows Berth found for them (`watch_offers`): each offer holds its window
//! for watchers until `hold_until` (bookings by anyone else are refused meanwhile), and records how
//! it ended: booked (with the reservation), lost to another watcher, or lapsed unused.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Watches {
    Table,
    Id,
    UserId,
    TeamId,
    Model,
    GpuCount,
    Quarters,
    LengthMinutes,
    FromAt,
    ToAt,
    State,
    CreatedAt,
    EndedAt,
    ReservationId,
}

#[derive(DeriveIden)]
enum WatchOffers {
    Table,
    Id,
    WatchId,
    NodeId,
    GpuIds,
    Quarters,
    StartAt,
    EndAt,
    PriceMinor,
    CreatedAt,
    HoldUntil,
    Outcome,
    ReservationId,
}

#[derive(DeriveIden)]
enum Users {
    Table,
    Id,
}

#[derive(DeriveIden)]
enum Teams {
    Table,
    Id,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(Watches::Table)
                    .col(big_pk_auto(Watches::Id))
                    .col(big_integer(Watches::UserId))
                    .col(big_integer_null(Watches::TeamId))
                    .col(string_len(Watches::Model, 128))
                    .col(integer(Watches::GpuCount))
                    .col(small_integer(Watches::Quarters))
                    .col(integer(Watches::LengthMinutes))
                    .col(timestamp_with_time_zone(Watches::FromAt))
                    .col(timestamp_with_time_zone(Watches::ToAt))
                    // `watching`, `served`, `expired`, `cancelled`.
                    .col(string_len(Watches::State, 16))
                    .col(timestamp_with_time_zone(Watches::CreatedAt))
                    .col(timestamp_with_time_zone_null(Watches::EndedAt))
                    .col(big_integer_null(Watches::ReservationId))
                    .foreign_key(
                        ForeignKey::create()
                            .from(Watches::Table, Watches::UserId)
                            .to(Users::Table, Users::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .foreign_key(
                        ForeignKey::create()
                            .from(Watches::Table, Watches::TeamId)
                            .to(Teams::Table, Teams::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("ix_watches_state")
                    .table(Watches::Table)
                    .col(Watches::State)
                    .col(Watches::CreatedAt)
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("ix_watches_user")
                    .table(Watches::Table)
                    .col(Watches::UserId)
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(WatchOffers::Table)
                    .col(big_pk_auto(WatchOffers::Id))
                    .col(big_integer(WatchOffers::WatchId))
                    .col(big_integer(WatchOffers::NodeId))
                    // Comma-separated GPU ids, in id order.
                    .col(string_len(WatchOffers::GpuIds, 512))
                    .col(small_integer(WatchOffers::Quarters))
                    .col(timestamp_with_time_zone(WatchOffers::StartAt))
                    .col(timestamp_with_time_zone(WatchOffers::EndAt))
                    .col(big_integer(WatchOffers::PriceMinor))
                    .col(timestamp_with_time_zone(WatchOffers::CreatedAt))
                    .col(timestamp_with_time_zone(WatchOffers::HoldUntil))
                    // NULL while it holds; then `booked`, `lost` or `lapsed`.
                    .col(string_len_null(WatchOffers::Outcome, 16))
                    .col(big_integer_null(WatchOffers::ReservationId))
                    .foreign_key(
                        ForeignKey::create()
                            .from(WatchOffers::Table, WatchOffers::WatchId)
                            .to(Watches::Table, Watches::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("ix_watch_offers_open")
                    .table(WatchOffers::Table)
                    .col(WatchOffers::Outcome)
                    .col(WatchOffers::HoldUntil)
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("ix_watch_offers_watch")
                    .table(WatchOffers::Table)
                    .col(WatchOffers::WatchId)
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(WatchOffers::Table).to_owned())
            .await?;
        manager
            .drop_table(Table::drop().table(Watches::Table).to_owned())
            .await
    }
}
