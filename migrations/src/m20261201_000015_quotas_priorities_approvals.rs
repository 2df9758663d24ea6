//! Team quotas per GPU model (`team_quotas`: GPUs guaranteed at the same instant, GPU-hours a
//! week), team booking rules (`teams.allow_burst`, `default_priority`,
//! `approval_over_gpu_hours`, `approval_expiry_hours`), and on each reservation its priority
//! class, whether it may be displaced (`preemptible`), until when it waits for approval
//! (`approval_expires_at`, with `payment_status = 'awaiting_approval'`) and, once displaced, the
//! nearest free window offered to its owner (`displaced_offer`, JSON). `payment_status` gains
//! `awaiting_approval`, `released_reason` gains `preempted`, `rejected` and `approval_expired`.

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::DbBackend;

#[derive(DeriveMigrationName)]
pub struct Migration;

const PRIORITIES: &str = "('production', 'training', 'development', 'batch')";

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        let (timestamp, text) = match manager.get_database_backend() {
            DbBackend::Postgres => ("TIMESTAMP WITH TIME ZONE", "TEXT"),
            _ => ("timestamp_with_timezone_text", "TEXT"),
        };
        let statements = [
            format!(
                "CREATE TABLE team_quotas (\
                 team_id BIGINT NOT NULL REFERENCES teams (id) ON DELETE CASCADE, \
                 model VARCHAR(128) NOT NULL, \
                 guaranteed_gpus INTEGER NOT NULL CHECK (guaranteed_gpus >= 0), \
                 weekly_gpu_hours INTEGER NULL CHECK (weekly_gpu_hours IS NULL OR weekly_gpu_hours >= 0), \
                 updated_at {timestamp} NOT NULL, \
                 PRIMARY KEY (team_id, model))"
            ),
            "ALTER TABLE teams ADD COLUMN allow_burst BOOLEAN NOT NULL DEFAULT FALSE".into(),
            format!(
                "ALTER TABLE teams ADD COLUMN default_priority VARCHAR(16) NOT NULL \
                 DEFAULT 'development' CHECK (default_priority IN {PRIORITIES})"
            ),
            "ALTER TABLE teams ADD COLUMN approval_over_gpu_hours INTEGER NULL \
             CHECK (approval_over_gpu_hours IS NULL OR approval_over_gpu_hours > 0)"
                .into(),
            "ALTER TABLE teams ADD COLUMN approval_expiry_hours INTEGER NOT NULL DEFAULT 24 \
             CHECK (approval_expiry_hours BETWEEN 1 AND 720)"
                .into(),
            format!(
                "ALTER TABLE reservations ADD COLUMN priority VARCHAR(16) NOT NULL \
                 DEFAULT 'development' CHECK (priority IN {PRIORITIES})"
            ),
            "ALTER TABLE reservations ADD COLUMN preemptible BOOLEAN NOT NULL DEFAULT FALSE".into(),
            format!("ALTER TABLE reservations ADD COLUMN approval_expires_at {timestamp} NULL"),
            format!("ALTER TABLE reservations ADD COLUMN displaced_offer {text} NULL"),
            // The payment job's other work list: approvals to expire.
            "CREATE INDEX ix_reservations_approval_expires ON reservations (approval_expires_at)"
                .into(),
        ];
        for statement in statements {
            db.execute_unprepared(&statement).await?;
        }
        // `awaiting_approval` is longer than the 16 characters PostgreSQL kept (SQLite keeps any
        // length).
        if manager.get_database_backend() == DbBackend::Postgres {
            for statement in [
                "ALTER TABLE reservations ALTER COLUMN payment_status TYPE VARCHAR(32)",
                "ALTER TABLE reservations ALTER COLUMN released_reason TYPE VARCHAR(32)",
            ] {
                db.execute_unprepared(statement).await?;
            }
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        for statement in [
            "DROP INDEX ix_reservations_approval_expires",
            "ALTER TABLE reservations DROP COLUMN displaced_offer",
            "ALTER TABLE reservations DROP COLUMN approval_expires_at",
            "ALTER TABLE reservations DROP COLUMN preemptible",
            "ALTER TABLE reservations DROP COLUMN priority",
            "ALTER TABLE teams DROP COLUMN approval_expiry_hours",
            "ALTER TABLE teams DROP COLUMN approval_over_gpu_hours",
            "ALTER TABLE teams DROP COLUMN default_priority",
            "ALTER TABLE teams DROP COLUMN allow_burst",
            "DROP TABLE team_quotas",
        ] {
            db.execute_unprepared(statement).await?;
        }
        Ok(())
    }
}
