//! What cost reports read instead of a month of one-minute rollups: per reservation and GPU the
//! minutes measured during the booking, the sum of their average utilizations and how many were
//! idle (`reservation_usage`), and per UTC hour the fleet's measured, idle and utilization-summed
//! GPU-minutes (`fleet_usage_hours`). The telemetry job adds each minute it rolls up to both (and
//! takes a recomputed minute's old values out), so they stay equal to the rollups and outlive
//! their pruning. Both start from the rollups kept when migrating.

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::DbBackend;

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
        // What the one-minute rollups still hold (the last `rollup_days`) is added at once, with
        // the default idle threshold (10 %), so reports of the weeks before the upgrade have
        // their telemetry too.
        let ms = |column: &str| match manager.get_database_backend() {
            DbBackend::Postgres => format!("CAST(EXTRACT(EPOCH FROM {column}) * 1000 AS BIGINT)"),
            _ => format!("(CAST(strftime('%s', {column}) AS INTEGER) * 1000)"),
        };
        let held_until = format!(
            "CASE WHEN r.cancelled_at IS NOT NULL AND {cancelled} < {end} THEN {cancelled} \
             ELSE {end} END",
            cancelled = ms("r.cancelled_at"),
            end = ms("rg.end_at"),
        );
        for statement in [
            format!(
                "INSERT INTO reservation_usage \
                 (reservation_id, gpu_id, measured_minutes, idle_minutes, util_sum) \
                 SELECT rg.reservation_id, rg.gpu_id, COUNT(g.util_avg), \
                 SUM(CASE WHEN g.util_avg < 10 THEN 1 ELSE 0 END), SUM(g.util_avg) \
                 FROM reservation_gpus rg \
                 JOIN reservations r ON r.id = rg.reservation_id \
                 JOIN gpu_rollups g ON g.gpu_id = rg.gpu_id \
                 AND g.minute_ms >= {start} AND g.minute_ms < {held_until} \
                 WHERE g.util_avg IS NOT NULL \
                 GROUP BY rg.reservation_id, rg.gpu_id",
                start = ms("rg.start_at"),
            ),
            "INSERT INTO fleet_usage_hours (hour_ms, measured_minutes, idle_minutes, util_sum) \
             SELECT g.minute_ms - g.minute_ms % 3600000, COUNT(g.util_avg), \
             SUM(CASE WHEN g.util_avg < 10 THEN 1 ELSE 0 END), SUM(g.util_avg) \
             FROM gpu_rollups g WHERE g.util_avg IS NOT NULL \
             GROUP BY g.minute_ms - g.minute_ms % 3600000"
                .to_owned(),
        ] {
            db.execute_unprepared(&statement).await?;
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
