//! Idle reclaim: the idle policies (the platform's default, and per-team overrides set by
//! platform admins) and, on each reservation, what the policy told its holder about the current
//! idle streak (`idle_since`, `idle_warnings`), the holder's one "I'm still using it"
//! (`idle_snoozed_at`), and the end a reclaimed booking had before its rest came back to the
//! fleet (`reclaimed_until`; its `end_at` is the new end) with what that refunded
//! (`reclaim_refund_minor`, for the reports).

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum IdlePolicies {
    Table,
    Scope,
    TeamId,
    ThresholdPercent,
    WindowMinutes,
    Warnings,
    Action,
    ExemptMaxGpus,
    ExemptMaxHours,
    ExemptPriorities,
    RefundPercent,
    UpdatedAt,
    UpdatedBy,
}

#[derive(DeriveIden)]
enum Reservations {
    Table,
    IdleSince,
    IdleWarnings,
    IdleSnoozedAt,
    ReclaimedUntil,
    ReclaimRefundMinor,
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
                    .table(IdlePolicies::Table)
                    // `platform`, or `team:<id>`.
                    .col(string_len(IdlePolicies::Scope, 32).primary_key())
                    .col(big_integer_null(IdlePolicies::TeamId))
                    .col(small_integer(IdlePolicies::ThresholdPercent))
                    .col(integer(IdlePolicies::WindowMinutes))
                    .col(string_len(IdlePolicies::Warnings, 64))
                    .col(string_len(IdlePolicies::Action, 16))
                    .col(integer(IdlePolicies::ExemptMaxGpus))
                    .col(integer(IdlePolicies::ExemptMaxHours))
                    .col(string_len(IdlePolicies::ExemptPriorities, 64))
                    .col(small_integer(IdlePolicies::RefundPercent))
                    .col(timestamp_with_time_zone(IdlePolicies::UpdatedAt))
                    .col(big_integer_null(IdlePolicies::UpdatedBy))
                    .foreign_key(
                        ForeignKey::create()
                            .from(IdlePolicies::Table, IdlePolicies::TeamId)
                            .to(Teams::Table, Teams::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;
        for column in [
            ColumnDef::new(Reservations::IdleSince)
                .timestamp_with_time_zone()
                .null()
                .to_owned(),
            ColumnDef::new(Reservations::IdleWarnings)
                .integer()
                .not_null()
                .default(0)
                .to_owned(),
            ColumnDef::new(Reservations::IdleSnoozedAt)
                .timestamp_with_time_zone()
                .null()
                .to_owned(),
            ColumnDef::new(Reservations::ReclaimedUntil)
                .timestamp_with_time_zone()
                .null()
                .to_owned(),
            ColumnDef::new(Reservations::ReclaimRefundMinor)
                .big_integer()
                .not_null()
                .default(0)
                .to_owned(),
        ] {
            manager
                .alter_table(
                    Table::alter()
                        .table(Reservations::Table)
                        .add_column(column)
                        .to_owned(),
                )
                .await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for column in [
            Reservations::ReclaimRefundMinor,
            Reservations::ReclaimedUntil,
            Reservations::IdleSnoozedAt,
            Reservations::IdleWarnings,
            Reservations::IdleSince,
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
        manager
            .drop_table(Table::drop().table(IdlePolicies::Table).to_owned())
            .await
    }
}
