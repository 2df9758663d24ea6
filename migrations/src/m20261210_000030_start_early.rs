//! Backfill: a preemptible booking may ask to start early when its GPUs free up
//! (`reservations.start_early`); once moved, the start it had before is kept (`early_from`).

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::DbBackend;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        let timestamp = match manager.get_database_backend() {
            DbBackend::Postgres => "TIMESTAMP WITH TIME ZONE",
            _ => "timestamp_with_timezone_text",
        };
        for statement in [
            "ALTER TABLE reservations ADD COLUMN start_early BOOLEAN NOT NULL DEFAULT FALSE".into(),
            format!("ALTER TABLE reservations ADD COLUMN early_from {timestamp} NULL"),
            // The backfill's work list: the few bookings that asked, by start.
            "CREATE INDEX ix_reservations_start_early ON reservations (start_at) \
             WHERE start_early"
                .to_owned(),
        ] {
            db.execute_unprepared(&statement).await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        for statement in [
            "DROP INDEX ix_reservations_start_early",
            "ALTER TABLE reservations DROP COLUMN early_from",
            "ALTER TABLE reservations DROP COLUMN start_early",
        ] {
            db.execute_unprepared(statement).await?;
        }
        Ok(())
    }
}
