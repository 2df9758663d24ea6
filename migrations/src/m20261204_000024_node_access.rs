//! Reservations take effect on their nodes: `users.login` (the name Berth uses on every node),
//! `ssh_keys` (a user's public keys, in canonical `algorithm base64` form), the intruder policy of
//! each node (`nodes.intruder_policy`, `nodes.protect_idle`), a holder's choice to keep running
//! past the end when nothing follows (`reservations.keep_running`), and `gpu_access_events`: what
//! node agents did and saw on a GPU (access granted and revoked, processes terminated, use by
//! someone who holds no lease, memory over a fractional share), with the lease it concerns.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Users {
    Table,
    Id,
    Login,
}

#[derive(DeriveIden)]
enum SshKeys {
    Table,
    Id,
    UserId,
    Name,
    PublicKey,
    Fingerprint,
    CreatedAt,
}

#[derive(DeriveIden)]
enum Nodes {
    Table,
    IntruderPolicy,
    ProtectIdle,
}

#[derive(DeriveIden)]
enum Reservations {
    Table,
    Id,
    KeepRunning,
}

#[derive(DeriveIden)]
enum Gpus {
    Table,
    Id,
}

#[derive(DeriveIden)]
enum GpuAccessEvents {
    Table,
    Id,
    GpuId,
    ReservationId,
    At,
    Kind,
    Pid,
    Uid,
    UserName,
    MemoryMib,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(Users::Table)
                    .add_column(string_len_null(Users::Login, 32))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("uq_users_login")
                    .table(Users::Table)
                    .col(Users::Login)
                    .unique()
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(Nodes::Table)
                    .add_column(string_len(Nodes::IntruderPolicy, 16).default("report"))
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(Nodes::Table)
                    .add_column(boolean(Nodes::ProtectIdle).default(false))
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(Reservations::Table)
                    .add_column(boolean(Reservations::KeepRunning).default(false))
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(SshKeys::Table)
                    .col(big_pk_auto(SshKeys::Id))
                    .col(big_integer(SshKeys::UserId))
                    .col(string_len(SshKeys::Name, 64))
                    .col(text(SshKeys::PublicKey))
                    .col(string_len(SshKeys::Fingerprint, 128))
                    .col(timestamp_with_time_zone(SshKeys::CreatedAt))
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_ssh_keys_user")
                            .from(SshKeys::Table, SshKeys::UserId)
                            .to(Users::Table, Users::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .index(
                        Index::create()
                            .name("uq_ssh_keys_user_fingerprint")
                            .col(SshKeys::UserId)
                            .col(SshKeys::Fingerprint)
                            .unique(),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(GpuAccessEvents::Table)
                    .col(big_pk_auto(GpuAccessEvents::Id))
                    .col(big_integer(GpuAccessEvents::GpuId))
                    .col(big_integer_null(GpuAccessEvents::ReservationId))
                    .col(timestamp_with_time_zone(GpuAccessEvents::At))
                    .col(string_len(GpuAccessEvents::Kind, 16))
                    .col(big_integer_null(GpuAccessEvents::Pid))
                    .col(big_integer_null(GpuAccessEvents::Uid))
                    .col(string_len_null(GpuAccessEvents::UserName, 64))
                    .col(big_integer_null(GpuAccessEvents::MemoryMib))
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_gpu_access_events_gpu")
                            .from(GpuAccessEvents::Table, GpuAccessEvents::GpuId)
                            .to(Gpus::Table, Gpus::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_gpu_access_events_reservation")
                            .from(GpuAccessEvents::Table, GpuAccessEvents::ReservationId)
                            .to(Reservations::Table, Reservations::Id)
                            .on_delete(ForeignKeyAction::SetNull),
                    )
                    .check(Check::named(
                        "ck_gpu_access_events_kind",
                        Expr::col(GpuAccessEvents::Kind).is_in([
                            "granted",
                            "revoked",
                            "terminated",
                            "killed",
                            "unauthorized",
                            "over_share",
                        ]),
                    ))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("ix_gpu_access_events_gpu_at")
                    .table(GpuAccessEvents::Table)
                    .col(GpuAccessEvents::GpuId)
                    .col(GpuAccessEvents::At)
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("ix_gpu_access_events_reservation")
                    .table(GpuAccessEvents::Table)
                    .col(GpuAccessEvents::ReservationId)
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(GpuAccessEvents::Table).to_owned())
            .await?;
        manager
            .drop_table(Table::drop().table(SshKeys::Table).to_owned())
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(Reservations::Table)
                    .drop_column(Reservations::KeepRunning)
                    .to_owned(),
            )
            .await?;
        for column in [Nodes::ProtectIdle, Nodes::IntruderPolicy] {
            manager
                .alter_table(
                    Table::alter()
                        .table(Nodes::Table)
                        .drop_column(column)
                        .to_owned(),
                )
                .await?;
        }
        manager
            .drop_index(
                Index::drop()
                    .name("uq_users_login")
                    .table(Users::Table)
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(Users::Table)
                    .drop_column(Users::Login)
                    .to_owned(),
            )
            .await
    }
}
