//! Incidents: a problem on a reservation (or a GPU) reported by its holder, a platform admin or
//! Berth itself (the node agent's events), with its workflow (`state`, the first response, the
//! stated cause, one reopening), its messages, and the SLA credit it paid. Also each node's
//! driver versions over time (the node row keeps only the latest), and on reservations the SLA
//! credits they received (for the reports).
//!
//! The ledger gets a transaction kind, `sla_credit`. PostgreSQL replaces the CHECK constraint;
//! SQLite cannot alter one, and a constraint that only accepts more needs no rebuild: its
//! documented procedure for loosening a constraint edits the table's stored SQL under
//! `writable_schema` and bumps `schema_version`, inside the migration's transaction.

use sea_orm_migration::sea_orm::{ConnectionTrait, DbBackend, Statement};
use sea_orm_migration::{prelude::*, schema::*};

const KINDS_BEFORE: &str = "'grant', 'deduct', 'charge', 'refund'";
const KINDS_AFTER: &str = "'grant', 'deduct', 'charge', 'refund', 'sla_credit'";

/// Sets the kinds the ledger's transactions may have.
async fn ledger_kinds(manager: &SchemaManager<'_>, from: &str, to: &str) -> Result<(), DbErr> {
    let db = manager.get_connection();
    match manager.get_database_backend() {
        DbBackend::Postgres => {
            db.execute_unprepared(
                "ALTER TABLE ledger_transactions DROP CONSTRAINT ck_ledger_transactions_kind",
            )
            .await?;
            db.execute_unprepared(&format!(
                "ALTER TABLE ledger_transactions ADD CONSTRAINT ck_ledger_transactions_kind \
                 CHECK (kind IN ({to}))"
            ))
            .await?;
        }
        _ => {
            let version = db
                .query_one_raw(Statement::from_string(
                    DbBackend::Sqlite,
                    "PRAGMA schema_version".to_owned(),
                ))
                .await?
                .map(|row| row.try_get_by_index::<i64>(0))
                .transpose()?
                .ok_or_else(|| DbErr::Migration("no schema_version".to_owned()))?;
            db.execute_unprepared("PRAGMA writable_schema = ON").await?;
            let changed = db
                .execute_raw(Statement::from_sql_and_values(
                    DbBackend::Sqlite,
                    "UPDATE sqlite_master SET sql = replace(sql, $1, $2) \
                     WHERE type = 'table' AND name = 'ledger_transactions' AND instr(sql, $1) > 0",
                    [
                        format!("kind IN ({from})").into(),
                        format!("kind IN ({to})").into(),
                    ],
                ))
                .await?;
            db.execute_unprepared(&format!("PRAGMA schema_version = {}", version + 1))
                .await?;
            db.execute_unprepared("PRAGMA writable_schema = OFF")
                .await?;
            if changed.rows_affected() != 1 {
                return Err(DbErr::Migration(
                    "ledger_transactions: the kinds' CHECK constraint was not found".to_owned(),
                ));
            }
        }
    }
    Ok(())
}

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Incidents {
    Table,
    Id,
    ReservationId,
    GpuId,
    GpuIds,
    NodeId,
    OpenedBy,
    Source,
    Trigger,
    AutoKey,
    Report,
    FromAt,
    ToAt,
    State,
    FirstResponseDueAt,
    FirstResponseAt,
    Cause,
    CauseText,
    ReopenedAt,
    BookingPriceMinor,
    BookingGpuMinutes,
    CreditMinor,
    CreditGpuMinutes,
    CreditedAt,
    CreditFrom,
    CreditTo,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum IncidentMessages {
    Table,
    Id,
    IncidentId,
    At,
    AuthorId,
    Kind,
    State,
    Body,
}

#[derive(DeriveIden)]
enum NodeDriverVersions {
    Table,
    Id,
    NodeId,
    DriverVersion,
    Source,
    FromAt,
}

#[derive(DeriveIden)]
enum Reservations {
    Table,
    SlaCreditMinor,
}

#[derive(DeriveIden)]
enum Nodes {
    Table,
    Id,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    /// The constraint's change and the tables land together or not at all.
    fn use_transaction(&self) -> Option<bool> {
        Some(true)
    }

    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        ledger_kinds(manager, KINDS_BEFORE, KINDS_AFTER).await?;
        manager
            .create_table(
                Table::create()
                    .table(Incidents::Table)
                    .col(big_pk_auto(Incidents::Id))
                    .col(big_integer_null(Incidents::ReservationId))
                    .col(big_integer_null(Incidents::GpuId))
                    // The GPUs the evidence covers (the booking's when it was opened), comma-separated.
                    .col(text(Incidents::GpuIds))
                    .col(big_integer_null(Incidents::NodeId))
                    .col(big_integer_null(Incidents::OpenedBy))
                    // `user`, `admin` or `agent`.
                    .col(string_len(Incidents::Source, 16))
                    // What opened it by itself: `xid_79`, `gpu_gone`, `node_silent`.
                    .col(string_len_null(Incidents::Trigger, 32))
                    // One incident per failure the agent reports, however often it repeats it.
                    .col(string_len_null(Incidents::AutoKey, 128).unique_key())
                    .col(text(Incidents::Report))
                    .col(timestamp_with_time_zone(Incidents::FromAt))
                    .col(timestamp_with_time_zone_null(Incidents::ToAt))
                    .col(string_len(Incidents::State, 16))
                    .col(timestamp_with_time_zone(Incidents::FirstResponseDueAt))
                    .col(timestamp_with_time_zone_null(Incidents::FirstResponseAt))
                    .col(string_len_null(Incidents::Cause, 32))
                    .col(text_null(Incidents::CauseText))
                    .col(timestamp_with_time_zone_null(Incidents::ReopenedAt))
                    .col(big_integer(Incidents::BookingPriceMinor).default(0))
                    .col(big_integer(Incidents::BookingGpuMinutes).default(0))
                    .col(big_integer(Incidents::CreditMinor).default(0))
                    .col(big_integer(Incidents::CreditGpuMinutes).default(0))
                    .col(timestamp_with_time_zone_null(Incidents::CreditedAt))
                    .col(timestamp_with_time_zone_null(Incidents::CreditFrom))
                    .col(timestamp_with_time_zone_null(Incidents::CreditTo))
                    .col(timestamp_with_time_zone(Incidents::CreatedAt))
                    .col(timestamp_with_time_zone(Incidents::UpdatedAt))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("idx_incidents_reservation")
                    .table(Incidents::Table)
                    .col(Incidents::ReservationId)
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("idx_incidents_state")
                    .table(Incidents::Table)
                    .col(Incidents::State)
                    .col(Incidents::Id)
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(IncidentMessages::Table)
                    .col(big_pk_auto(IncidentMessages::Id))
                    .col(big_integer(IncidentMessages::IncidentId))
                    .col(timestamp_with_time_zone(IncidentMessages::At))
                    .col(big_integer_null(IncidentMessages::AuthorId))
                    // `reply` or `state` (a change of state, with its note).
                    .col(string_len(IncidentMessages::Kind, 16))
                    .col(string_len_null(IncidentMessages::State, 16))
                    .col(text(IncidentMessages::Body))
                    .foreign_key(
                        ForeignKey::create()
                            .from(IncidentMessages::Table, IncidentMessages::IncidentId)
                            .to(Incidents::Table, Incidents::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("idx_incident_messages_incident")
                    .table(IncidentMessages::Table)
                    .col(IncidentMessages::IncidentId)
                    .col(IncidentMessages::Id)
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(NodeDriverVersions::Table)
                    .col(big_pk_auto(NodeDriverVersions::Id))
                    .col(big_integer(NodeDriverVersions::NodeId))
                    .col(string_len_null(NodeDriverVersions::DriverVersion, 64))
                    .col(string_len(NodeDriverVersions::Source, 16))
                    .col(timestamp_with_time_zone(NodeDriverVersions::FromAt))
                    .foreign_key(
                        ForeignKey::create()
                            .from(NodeDriverVersions::Table, NodeDriverVersions::NodeId)
                            .to(Nodes::Table, Nodes::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("idx_node_driver_versions_node")
                    .table(NodeDriverVersions::Table)
                    .col(NodeDriverVersions::NodeId)
                    .col(NodeDriverVersions::FromAt)
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(Reservations::Table)
                    .add_column(
                        ColumnDef::new(Reservations::SlaCreditMinor)
                            .big_integer()
                            .not_null()
                            .default(0),
                    )
                    .to_owned(),
            )
            .await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        ledger_kinds(manager, KINDS_AFTER, KINDS_BEFORE).await?;
        manager
            .alter_table(
                Table::alter()
                    .table(Reservations::Table)
                    .drop_column(Reservations::SlaCreditMinor)
                    .to_owned(),
            )
            .await?;
        for table in [
            NodeDriverVersions::Table.into_iden(),
            IncidentMessages::Table.into_iden(),
            Incidents::Table.into_iden(),
        ] {
            manager
                .drop_table(Table::drop().table(table).to_owned())
                .await?;
        }
        Ok(())
    }
}
