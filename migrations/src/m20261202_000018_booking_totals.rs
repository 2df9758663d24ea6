//! Each booking's GPU count and the money its charges took and its refunds gave back (the paying
//! wallet's side), kept on `reservations`: a month's cost report over tens of thousands of
//! bookings read them by joining `reservation_gpus` and three ledger tables, most of its time.
//! Booking writes the count; every charge or refund posted for a booking adds to its totals in
//! the same transaction. Existing bookings get theirs from the tables when migrating.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

const COLUMNS: [&str; 3] = ["gpu_count", "charged_minor", "refunded_minor"];

/// The wallet side of a booking's ledger transactions of `kind`, summed.
fn wallet_side(kind: &str) -> String {
    format!(
        "(SELECT CAST(COALESCE(SUM(e.amount_minor), 0) AS BIGINT) \
         FROM ledger_transactions t \
         JOIN ledger_entries e ON e.transaction_id = t.id \
         JOIN ledger_accounts a ON a.id = e.account_id \
         WHERE t.reservation_id = reservations.id AND t.kind = '{kind}' \
         AND a.kind IN ('wallet', 'team_wallet'))"
    )
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        for statement in [
            "ALTER TABLE reservations ADD COLUMN gpu_count INTEGER NOT NULL DEFAULT 0".to_owned(),
            "ALTER TABLE reservations ADD COLUMN charged_minor BIGINT NOT NULL DEFAULT 0"
                .to_owned(),
            "ALTER TABLE reservations ADD COLUMN refunded_minor BIGINT NOT NULL DEFAULT 0"
                .to_owned(),
            "UPDATE reservations SET gpu_count = \
             (SELECT COUNT(*) FROM reservation_gpus rg WHERE rg.reservation_id = reservations.id)"
                .to_owned(),
            format!(
                "UPDATE reservations SET charged_minor = -{charges}, refunded_minor = {refunds}",
                charges = wallet_side("charge"),
                refunds = wallet_side("refund"),
            ),
        ] {
            db.execute_unprepared(&statement).await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        for column in COLUMNS {
            db.execute_unprepared(&format!("ALTER TABLE reservations DROP COLUMN {column}"))
                .await?;
        }
        Ok(())
    }
}
