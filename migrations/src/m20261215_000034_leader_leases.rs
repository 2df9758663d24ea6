//! Leader leases (`leader_leases`): the work only one portal replica may do at a time, such as
//! simulating the demo fleet or reading a host's GPUs, is held through a row here, so every
//! replica runs with the same settings.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum LeaderLeases {
    Table,
    Name,
    Holder,
    ExpiresAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(LeaderLeases::Table)
                    .if_not_exists()
                    .col(string_len(LeaderLeases::Name, 200).primary_key())
                    .col(string_len(LeaderLeases::Holder, 64))
                    .col(timestamp_with_time_zone(LeaderLeases::ExpiresAt))
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(LeaderLeases::Table).to_owned())
            .await
    }
}
