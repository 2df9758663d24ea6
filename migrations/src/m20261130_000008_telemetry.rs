//! GPU telemetry (issue 6): node tokens for agents, what each node's agent last said, the
//! latest reading per GPU, raw samples (kept for a window), one-minute rollups (kept longer)
//! and GPU events (XID errors, throttle changes, GPUs appearing and vanishing).
//!
//! Sample and rollup times are UTC milliseconds since the epoch (`*_ms`, BIGINT): these tables
//! are written about once per GPU per second, and an integer is a quarter of the size of a
//! timestamp stored as text in SQLite.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Nodes {
    Table,
    Id,
    AgentSource,
    DriverVersion,
    LastSeenAt,
    ReportIntervalS,
}

#[derive(DeriveIden)]
enum Gpus {
    Table,
    Id,
    PciBusId,
    VanishedAt,
}

#[derive(DeriveIden)]
enum NodeTokens {
    Table,
    Id,
    NodeId,
    TokenHash,
    CreatedAt,
    LastUsedAt,
    RevokedAt,
}

#[derive(DeriveIden)]
enum GpuLive {
    Table,
    GpuId,
    At,
    Readings,
    Processes,
}

#[derive(DeriveIden)]
enum GpuSamples {
    Table,
    GpuId,
    AtMs,
    GpuUtil,
    MemUtil,
    MemoryUsedMib,
    TemperatureC,
    PowerMw,
    PowerLimitMw,
    SmClockMhz,
    ThrottleReasons,
    EccCorrected,
    EccUncorrected,
}

#[derive(DeriveIden)]
enum GpuRollups {
    Table,
    GpuId,
    MinuteMs,
    Samples,
    UtilMin,
    UtilAvg,
    UtilMax,
    MemMin,
    MemAvg,
    MemMax,
    TempMin,
    TempAvg,
    TempMax,
    PowerMin,
    PowerAvg,
    PowerMax,
}

#[derive(DeriveIden)]
enum GpuEvents {
    Table,
    Id,
    GpuId,
    At,
    Kind,
    Code,
}

#[derive(DeriveIden)]
enum TelemetryState {
    Table,
    Id,
    RolledUpToMs,
    DirtyFromMs,
}

fn gpu_fk<T: IntoIden + 'static>(table: T, column: T, name: &str) -> ForeignKeyCreateStatement {
    ForeignKey::create()
        .name(name)
        .from(table, column)
        .to(Gpus::Table, Gpus::Id)
        .on_delete(ForeignKeyAction::Cascade)
        .to_owned()
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        // SQLite adds one column per ALTER TABLE.
        for column in [
            string_len_null(Nodes::AgentSource, 16),
            string_len_null(Nodes::DriverVersion, 64),
            timestamp_with_time_zone_null(Nodes::LastSeenAt),
            integer_null(Nodes::ReportIntervalS),
        ] {
            let mut column = column;
            manager
                .alter_table(
                    Table::alter()
                        .table(Nodes::Table)
                        .add_column(&mut column)
                        .to_owned(),
                )
                .await?;
        }
        for column in [
            string_len_null(Gpus::PciBusId, 32),
            timestamp_with_time_zone_null(Gpus::VanishedAt),
        ] {
            let mut column = column;
            manager
                .alter_table(
                    Table::alter()
                        .table(Gpus::Table)
                        .add_column(&mut column)
                        .to_owned(),
                )
                .await?;
        }

        manager
            .create_table(
                Table::create()
                    .table(NodeTokens::Table)
                    .col(big_pk_auto(NodeTokens::Id))
                    .col(big_integer(NodeTokens::NodeId))
                    .col(string_len(NodeTokens::TokenHash, 64))
                    .col(timestamp_with_time_zone(NodeTokens::CreatedAt))
                    .col(timestamp_with_time_zone_null(NodeTokens::LastUsedAt))
                    .col(timestamp_with_time_zone_null(NodeTokens::RevokedAt))
                    .foreign_key(
                        ForeignKey::create()
                            .name("fk_node_tokens_node")
                            .from(NodeTokens::Table, NodeTokens::NodeId)
                            .to(Nodes::Table, Nodes::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .index(
                        Index::create()
                            .name("uq_node_tokens_hash")
                            .col(NodeTokens::TokenHash)
                            .unique(),
                    )
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(GpuLive::Table)
                    .col(big_integer(GpuLive::GpuId).primary_key())
                    .col(timestamp_with_time_zone(GpuLive::At))
                    .col(text(GpuLive::Readings))
                    .col(text(GpuLive::Processes))
                    .foreign_key(&mut gpu_fk(
                        GpuLive::Table,
                        GpuLive::GpuId,
                        "fk_gpu_live_gpu",
                    ))
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(GpuSamples::Table)
                    .col(big_integer(GpuSamples::GpuId))
                    .col(big_integer(GpuSamples::AtMs))
                    .col(small_integer_null(GpuSamples::GpuUtil))
                    .col(small_integer_null(GpuSamples::MemUtil))
                    .col(big_integer_null(GpuSamples::MemoryUsedMib))
                    .col(small_integer_null(GpuSamples::TemperatureC))
                    .col(integer_null(GpuSamples::PowerMw))
                    .col(integer_null(GpuSamples::PowerLimitMw))
                    .col(integer_null(GpuSamples::SmClockMhz))
                    .col(big_integer_null(GpuSamples::ThrottleReasons))
                    .col(big_integer_null(GpuSamples::EccCorrected))
                    .col(big_integer_null(GpuSamples::EccUncorrected))
                    .primary_key(
                        Index::create()
                            .name("pk_gpu_samples")
                            .col(GpuSamples::GpuId)
                            .col(GpuSamples::AtMs),
                    )
                    .foreign_key(&mut gpu_fk(
                        GpuSamples::Table,
                        GpuSamples::GpuId,
                        "fk_gpu_samples_gpu",
                    ))
                    .to_owned(),
            )
            .await?;
        // Pruning deletes by time across all GPUs.
        manager
            .create_index(
                Index::create()
                    .name("ix_gpu_samples_at")
                    .table(GpuSamples::Table)
                    .col(GpuSamples::AtMs)
                    .to_owned(),
            )
            .await?;

        let mut rollups = Table::create();
        rollups
            .table(GpuRollups::Table)
            .col(big_integer(GpuRollups::GpuId))
            .col(big_integer(GpuRollups::MinuteMs))
            .col(integer(GpuRollups::Samples));
        for column in [
            GpuRollups::UtilMin,
            GpuRollups::UtilAvg,
            GpuRollups::UtilMax,
            GpuRollups::MemMin,
            GpuRollups::MemAvg,
            GpuRollups::MemMax,
            GpuRollups::TempMin,
            GpuRollups::TempAvg,
            GpuRollups::TempMax,
            GpuRollups::PowerMin,
            GpuRollups::PowerAvg,
            GpuRollups::PowerMax,
        ] {
            rollups.col(double_null(column));
        }
        manager
            .create_table(
                rollups
                    .primary_key(
                        Index::create()
                            .name("pk_gpu_rollups")
                            .col(GpuRollups::GpuId)
                            .col(GpuRollups::MinuteMs),
                    )
                    .foreign_key(&mut gpu_fk(
                        GpuRollups::Table,
                        GpuRollups::GpuId,
                        "fk_gpu_rollups_gpu",
                    ))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("ix_gpu_rollups_minute")
                    .table(GpuRollups::Table)
                    .col(GpuRollups::MinuteMs)
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(GpuEvents::Table)
                    .col(big_pk_auto(GpuEvents::Id))
                    .col(big_integer(GpuEvents::GpuId))
                    .col(timestamp_with_time_zone(GpuEvents::At))
                    .col(string_len(GpuEvents::Kind, 16))
                    .col(big_integer_null(GpuEvents::Code))
                    .foreign_key(&mut gpu_fk(
                        GpuEvents::Table,
                        GpuEvents::GpuId,
                        "fk_gpu_events_gpu",
                    ))
                    .check(Check::named(
                        "ck_gpu_events_kind",
                        Expr::col(GpuEvents::Kind)
                            .is_in(["xid", "throttle", "added", "vanished", "returned"]),
                    ))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("ix_gpu_events_gpu_at")
                    .table(GpuEvents::Table)
                    .col(GpuEvents::GpuId)
                    .col(GpuEvents::At)
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(TelemetryState::Table)
                    .col(integer(TelemetryState::Id).primary_key())
                    .col(big_integer(TelemetryState::RolledUpToMs))
                    .col(big_integer_null(TelemetryState::DirtyFromMs))
                    .to_owned(),
            )
            .await?;
        manager
            .exec_stmt(
                Query::insert()
                    .into_table(TelemetryState::Table)
                    .columns([TelemetryState::Id, TelemetryState::RolledUpToMs])
                    .values_panic([1.into(), 0i64.into()])
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for table in [
            TelemetryState::Table.into_iden(),
            GpuEvents::Table.into_iden(),
            GpuRollups::Table.into_iden(),
            GpuSamples::Table.into_iden(),
            GpuLive::Table.into_iden(),
            NodeTokens::Table.into_iden(),
        ] {
            manager
                .drop_table(Table::drop().table(table).to_owned())
                .await?;
        }
        for column in [Gpus::VanishedAt, Gpus::PciBusId] {
            manager
                .alter_table(
                    Table::alter()
                        .table(Gpus::Table)
                        .drop_column(column)
                        .to_owned(),
                )
                .await?;
        }
        for column in [
            Nodes::ReportIntervalS,
            Nodes::LastSeenAt,
            Nodes::DriverVersion,
            Nodes::AgentSource,
        ] {
            manager
                .alter_table(
                    Table::alter()
                        .table(Nodes::Table)
                        .drop_column(column)
                        .to_owned(),
                )
                .await?;
        }
        Ok(())
    }
}
