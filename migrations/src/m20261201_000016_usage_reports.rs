//! What cost reports read instead of a month of one-minute rollups: per reservation and GPU the
//! minutes measured during the booking, the sum of their average utilizations and how many were
//! idle (`reservation_usage`), and per UTC hour the fleet's measured, idle and utilization-summed
//! GPU-minutes (`fleet_usage_hours`). The telemetry job adds each minute it rolls up to both (and
//! takes a recomputed minute's old values out), so they stay equal to the rollups and outlive
//! their pruning.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        for statement in [
            "CREATE TABLE reservation_usage (\
             reservation_id BIGINT NOT NULL REFERENCES reservations (id) ON DELETE CASCADE, \
             gpu_id BIGINT NOT NULL, \
             measured_minutes BIGINT NOT NULL DEFAULT 0, \
             idle_minutes BIGINT NOT NULL DEFAULT 0, \
             util_sum DOUBLE PRECISION NOT NULL DEFAULT 0, \
             PRIMARY KEY (reservation_id, gpu_id))",
            "CREATE TABLE fleet_usage_hours (\
             hour_ms BIGINT NOT NULL PRIMARY KEY, \
             measured_minutes BIGINT NOT NULL DEFAULT 0, \
             idle_minutes BIGINT NOT NULL DEFAULT 0, \
             util_sum DOUBLE PRECISION NOT NULL DEFAULT 0)",
        ] {
            db.execute_unprepared(statement).await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        for statement in [
            "DROP TABLE fleet_usage_hours",
            "DROP TABLE reservation_usage",
        ] {
            db.execute_unprepared(statement).await?;
        }
        Ok(())
    }
}
