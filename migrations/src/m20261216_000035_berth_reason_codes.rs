//! Berth's own reasons as data, so each reader sees them in their language: on ledger
//! transactions (`ledger_transactions.reason_code`, JSON of `domain::ledger::BerthReason`) and
//! on the maintenance Berth sets (`maintenance_windows.reason_code`, JSON of
//! `domain::maintenance::BerthMaintenance`). The English words stay in `reason` for the JSON API
//! and exports. Existing demo credits, SLA credits and XID 79 maintenance are backfilled; older
//! card payments and refunds keep their English words.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        for statement in [
            "ALTER TABLE ledger_transactions ADD COLUMN reason_code TEXT NULL",
            // Berth's demo grant has no actor (a grant from the command line in these words
            // means the same).
            "UPDATE ledger_transactions SET reason_code = '{\"what\":\"demo_credits\"}' \
             WHERE kind = 'grant' AND reason = 'Demo credits' AND actor_id IS NULL \
             AND provider = 'manual'",
            // `SLA credit, incident #<id>`: only Berth writes this kind.
            "UPDATE ledger_transactions SET reason_code = \
             '{\"what\":\"sla_credit\",\"incident\":' || SUBSTR(reason, 23) || '}' \
             WHERE kind = 'sla_credit' AND reason LIKE 'SLA credit, incident #%' \
             AND LENGTH(reason) BETWEEN 23 AND 40",
            "ALTER TABLE maintenance_windows ADD COLUMN reason_code TEXT NULL",
            "UPDATE maintenance_windows SET reason_code = '{\"what\":\"fell_off_bus\",\"xid\":79}' \
             WHERE created_by IS NULL \
             AND reason = 'XID 79: the GPU fell off the bus (set by Berth)'",
        ] {
            db.execute_unprepared(statement).await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        for statement in [
            "ALTER TABLE maintenance_windows DROP COLUMN reason_code",
            "ALTER TABLE ledger_transactions DROP COLUMN reason_code",
        ] {
            db.execute_unprepared(statement).await?;
        }
        Ok(())
    }
}
