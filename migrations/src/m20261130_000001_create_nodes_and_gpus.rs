//! GPU hosts (`nodes`) and their GPUs (`gpus`): the inventory everything else refers to.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Nodes {
    Table,
    Id,
    Name,
    Hostname,
    IsDemo,
    CreatedAt,
}

#[derive(DeriveIden)]
enum Gpus {
    Table,
    Id,
    NodeId,
    DeviceIndex,
    Uuid,
    Model,
    MemoryMib,
    Status,
    Shareable,
    HourlyPriceMinor,
    CreatedAt,
    UpdatedAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(Nodes::Table)
                    .col(big_pk_auto(Nodes::Id))
                    .col(string_len(Nodes::Name, 128))
                    .col(string_len(Nodes::Hostname, 255))
                    .col(boolean(Nodes::IsDemo).default(false))
                    .col(timestamp_with_time_zone(Nodes::CreatedAt))
                    .index(
                        Index::create()
                            .name("uq_nodes_name")
                            .col(Nodes::Name)
                            .unique(),
                    )
                    .check(Check::named(
                        "ck_nodes_name_not_blank",
                        Expr::cust("length(trim(name)) > 0"),
                    ))
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(Gpus::Table)
                    .col(big_pk_auto(Gpus::Id))
                    .col(big_integer(Gpus::NodeId))
                    .col(integer(Gpus::DeviceIndex))
                    .col(string_len(Gpus::Uuid, 96))
                    .col(string_len(Gpus::Model, 128))
                    .col(big_integer(Gpus::MemoryMib))
                    .col(string_len(Gpus::Status, 16).default("active"))
                    .col(boolean(Gpus::Shareable).default(false))
                    .col(big_integer(Gpus::HourlyPriceMinor))
                    .col(timestamp_with_time_zone(Gpus::CreatedAt))
                    .col(timestamp_with_time_zone(Gpus::UpdatedAt))
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_gpus_node")
                            .from(Gpus::Table, Gpus::NodeId)
                            .to(Nodes::Table, Nodes::Id)
                            .on_delete(ForeignKeyAction::Restrict),
                    )
                    .index(
                        Index::create()
                            .name("uq_gpus_node_device_index")
                            .col(Gpus::NodeId)
                            .col(Gpus::DeviceIndex)
                            .unique(),
                    )
                    .index(
                        Index::create()
                            .name("uq_gpus_uuid")
                            .col(Gpus::Uuid)
                            .unique(),
                    )
                    .check(Check::named(
                        "ck_gpus_status",
                        Expr::col(Gpus::Status).is_in(["active", "maintenance", "retired"]),
                    ))
                    .check(Check::named(
                        "ck_gpus_device_index_nonnegative",
                        Expr::col(Gpus::DeviceIndex).gte(0),
                    ))
                    .check(Check::named(
                        "ck_gpus_memory_positive",
                        Expr::col(Gpus::MemoryMib).gt(0),
                    ))
                    .check(Check::named(
                        "ck_gpus_price_nonnegative",
                        Expr::col(Gpus::HourlyPriceMinor).gte(0),
                    ))
                    .to_owned(),
            )
            .await?;

        manager
            .create_index(
                Index::create()
                    .name("ix_gpus_model")
                    .table(Gpus::Table)
                    .col(Gpus::Model)
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(Gpus::Table).to_owned())
            .await?;
        manager
            .drop_table(Table::drop().table(Nodes::Table).to_owned())
            .await
    }
}
