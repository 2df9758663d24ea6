//! The workspace that follows a user: `workspace_snapshots` (a saved workspace's manifest and
//! counts, per user), `workspace_chunks` (which content-addressed chunks the store holds for a
//! user, and their sizes) and `portal_keys` (secrets the portal replicas share, such as the key
//! that signs the workspace tokens handed to node agents).

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Users {
    Table,
    Id,
}

#[derive(DeriveIden)]
enum WorkspaceSnapshots {
    Table,
    Id,
    UserId,
    ReservationId,
    NodeId,
    Files,
    Bytes,
    Chunks,
    NewChunks,
    NewBytes,
    Manifest,
    CreatedAt,
}

#[derive(DeriveIden)]
enum WorkspaceChunks {
    Table,
    UserId,
    Hash,
    Size,
    CreatedAt,
}

#[derive(DeriveIden)]
enum PortalKeys {
    Table,
    Name,
    Value,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(WorkspaceSnapshots::Table)
                    .col(big_pk_auto(WorkspaceSnapshots::Id))
                    .col(big_integer(WorkspaceSnapshots::UserId))
                    .col(big_integer_null(WorkspaceSnapshots::ReservationId))
                    .col(big_integer_null(WorkspaceSnapshots::NodeId))
                    .col(big_integer(WorkspaceSnapshots::Files))
                    .col(big_integer(WorkspaceSnapshots::Bytes))
                    .col(big_integer(WorkspaceSnapshots::Chunks))
                    .col(big_integer(WorkspaceSnapshots::NewChunks))
                    .col(big_integer(WorkspaceSnapshots::NewBytes))
                    .col(text(WorkspaceSnapshots::Manifest))
                    .col(timestamp_with_time_zone(WorkspaceSnapshots::CreatedAt))
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_workspace_snapshots_user")
                            .from(WorkspaceSnapshots::Table, WorkspaceSnapshots::UserId)
                            .to(Users::Table, Users::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("ix_workspace_snapshots_user")
                    .table(WorkspaceSnapshots::Table)
                    .col(WorkspaceSnapshots::UserId)
                    .col(WorkspaceSnapshots::Id)
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(WorkspaceChunks::Table)
                    .col(big_integer(WorkspaceChunks::UserId))
                    .col(string_len(WorkspaceChunks::Hash, 64))
                    .col(big_integer(WorkspaceChunks::Size))
                    .col(timestamp_with_time_zone(WorkspaceChunks::CreatedAt))
                    .primary_key(
                        Index::create()
                            .name("pk_workspace_chunks")
                            .col(WorkspaceChunks::UserId)
                            .col(WorkspaceChunks::Hash),
                    )
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_workspace_chunks_user")
                            .from(WorkspaceChunks::Table, WorkspaceChunks::UserId)
                            .to(Users::Table, Users::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(PortalKeys::Table)
                    .col(string_len(PortalKeys::Name, 32).primary_key())
                    .col(string_len(PortalKeys::Value, 128))
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(PortalKeys::Table).to_owned())
            .await?;
        manager
            .drop_table(Table::drop().table(WorkspaceChunks::Table).to_owned())
            .await?;
        manager
            .drop_table(Table::drop().table(WorkspaceSnapshots::Table).to_owned())
            .await
    }
}
